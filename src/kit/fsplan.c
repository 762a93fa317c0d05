/* fsplan.c — builds the sandbox filesystem plan from a policy: pure data, testable without privileges. */
#include "fsplan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "image/image.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/openat2.h"

const char *const fs_toplevel_names[6] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

#define RO_ATTRS  (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
#define RW_ATTRS  (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
#define DEV_ATTRS (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC)

static const char *own(struct fs_plan *plan, char *s)
{
	if (!s)
		return NULL;
	if (plan->nowned == plan->capowned) {
		size_t cap = plan->capowned ? plan->capowned * 2 : 16;
		char **n = realloc(plan->owned, cap * sizeof(*n));
		if (!n) {
			free(s);
			return NULL;
		}
		plan->owned = n;
		plan->capowned = cap;
	}
	plan->owned[plan->nowned++] = s;
	return s;
}

static const char *ownf(struct fs_plan *plan, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *ownf(struct fs_plan *plan, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return own(plan, s);
}

static int add(struct fs_plan *plan, struct fs_op op)
{
	if (plan->n == plan->cap) {
		size_t cap = plan->cap ? plan->cap * 2 : 48;
		struct fs_op *n = realloc(plan->ops, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		plan->ops = n;
		plan->cap = cap;
	}
	op.src_fd = -1;
	plan->ops[plan->n++] = op;
	return 0;
}

void fs_plan_free(struct fs_plan *plan)
{
	for (size_t i = 0; i < plan->nowned; i++)
		free(plan->owned[i]);
	free(plan->owned);
	free(plan->ops);
	memset(plan, 0, sizeof(*plan));
}

/* A name of an image's top directory that may become a symlink's or mount point's name:
 * printable, not "." or "..", and not ours. The image is the store's (checked at import) but its
 * names are still its word. */
static bool plain_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > 200 || strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strncmp(n, ".airlock", 8) == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)n[i] < 0x20 || n[i] == 0x7f)
			return false;
	return true;
}

/* The kind of a regular file among an image's top-level entries (told apart by its address: a
 * link's target is always a plan-owned copy). */
static const char top_regular[] = "";

/* An entry's kind for fs_host: its symlink target, "" for a directory, top_regular for a regular
 * file, NULL for anything else. */
static const char *entry_kind(struct fs_plan *plan, int dfd, const char *name)
{
	struct stat st;
	char buf[PATH_MAX];
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	if (S_ISREG(st.st_mode))
		return top_regular;
	if (S_ISDIR(st.st_mode))
		return "";
	ssize_t n = S_ISLNK(st.st_mode) ? readlinkat(dfd, name, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return own(plan, strdup(buf));
}

/* The entries of directory root, at most FS_IMAGE_NAMES, into *out and their kinds into *links
 * (plan-owned). */
static size_t list_names(struct fs_plan *plan, const char *root, const char ***out, const char ***links)
{
	*out = *links = NULL;
	DIR *d = opendir(root);
	if (!d)
		return 0;
	const char **v = calloc(FS_IMAGE_NAMES, sizeof(*v)), **k = calloc(FS_IMAGE_NAMES, sizeof(*k));
	size_t n = 0;
	struct dirent *e;
	while (v && k && n < FS_IMAGE_NAMES && (e = readdir(d)))
		if (plain_name(e->d_name) && (v[n] = own(plan, strdup(e->d_name)))) {
			k[n] = entry_kind(plan, dirfd(d), e->d_name);
			n++;
		}
	closedir(d);
	if (!v || !k) {
		free(v);
		free(k);
		return 0;
	}
	/* own() frees what it cannot keep; k, not yet owned when v fails, is freed here. */
	if (!own(plan, (char *)v)) {
		free(k);
		return 0;
	}
	if (!own(plan, (char *)k))
		return 0;
	*out = v;
	*links = k;
	return n;
}

/* Opens rel beneath dirfd without following any symlink and without leaving it. */
static int open_beneath(int dirfd, const char *rel, int flags)
{
	return al_openat2(dirfd, rel, flags, 0, AL_RESOLVE_NOLINKS);
}

#define FS_RESOLV_MAX (64u << 10)

/* The image's own /etc/resolv.conf (read beneath its root, no link followed on the way): what a
 * sandbox shows there under every posture but host. */
static void probe_resolv(struct fs_host *h, struct fs_plan *plan)
{
	char buf[PATH_MAX];
	struct stat st;
	cleanup_close int rfd = open(h->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int efd = rfd < 0 ? -1 : open_beneath(rfd, "etc", O_PATH | O_DIRECTORY);
	if (efd < 0 || fstatat(efd, "resolv.conf", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(efd, "resolv.conf", buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = 0;
			h->resolv_link = own(plan, strdup(buf));
		}
		return;
	}
	cleanup_close int fd = S_ISREG(st.st_mode) ? open_beneath(efd, "resolv.conf", O_RDONLY) : -1;
	char *text = fd < 0 ? NULL : malloc(FS_RESOLV_MAX + 1);
	ssize_t n = text ? read(fd, text, FS_RESOLV_MAX + 1) : -1;
	if (n < 0) {
		free(text);
		return;
	}
	h->resolv_text = own(plan, text); /* more than FS_RESOLV_MAX: refused by fs_plan_build */
	h->resolv_len = (size_t)n;
	h->resolv_mode = st.st_mode & 0777;
}

/* A bind beneath an image's /etc goes over an entry of the prepared /etc (which is read-only):
 * the first destination that has none there, or a link on the way. */
static const char *probe_etc_missing(const struct al_policy *p, const char *etc)
{
	cleanup_close int efd = -1;
	for (size_t i = 0; i <= p->nbinds; i++) {
		const char *d = i < p->nbinds ? p->binds[i].dest : p->checkout ? p->checkout_dest : NULL;
		if (!d || strncmp(d, "/etc/", 5) != 0)
			continue;
		if (efd < 0 && (efd = open(etc, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			return d;
		int fd = open_beneath(efd, d + 5, O_PATH);
		if (fd < 0)
			return d;
		close(fd);
	}
	return NULL;
}

/* One path a policy's /etc pattern expanded to (path is root + the sandbox path): shown if it is a
 * directory or a regular file (a link could lead anywhere on the host, even from a rootfs), passes
 * pol_etc_check itself, and is not shown already. */
static void etc_found(struct fs_host *h, struct fs_plan *plan, const char *path)
{
	const char *inside = path + strlen(h->root);
	struct stat st;
	if (h->netc_paths >= FS_ETC_PATHS || lstat(path, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) ||
	    pol_etc_check(inside, NULL) < 0)
		return;
	for (size_t i = 0; i < h->netc_paths; i++)
		if (strcmp(h->etc_paths[i], inside) == 0)
			return;
	const char *own_path = own(plan, strdup(inside));
	if (own_path)
		h->etc_paths[h->netc_paths++] = own_path;
}

/* The policy's /etc patterns, expanded in the host's /etc or the rootfs's (glob(3): a pattern that
 * matches nothing shows nothing). */
static void probe_etc_paths(struct fs_host *h, struct fs_plan *plan, const struct al_policy *p)
{
	if (strpbrk(h->root, "*?[\\"))
		return; /* the root would be read as a pattern */
	for (size_t i = 0; i < p->netc; i++) {
		char pat[PATH_MAX];
		glob_t g = {0};
		if ((size_t)snprintf(pat, sizeof(pat), "%s%s", h->root, p->etc[i]) >= sizeof(pat))
			continue;
		if (glob(pat, GLOB_NOESCAPE, NULL, &g) == 0)
			for (size_t k = 0; k < g.gl_pathc; k++)
				etc_found(h, plan, g.gl_pathv[k]);
		globfree(&g);
	}
}

int fs_host_probe(struct fs_host *h, struct fs_plan *plan, const struct al_policy *p)
{
	memset(h, 0, sizeof(*h));
	h->root = p && p->rootfs ? p->rootfs : "";
	if (*h->root && p->image) {
		struct stat st;
		char usr[PATH_MAX];
		snprintf(usr, sizeof(usr), "%s/usr", h->root);
		h->no_usr = lstat(usr, &st) < 0 || !S_ISDIR(st.st_mode);
		h->ntop = list_names(plan, h->root, &h->top_names, &h->top_links);
		h->image_etc = p->image->etc;
		if (p->net != AL_NET_HOST)
			probe_resolv(h, plan);
		h->etc_missing = h->image_etc ? probe_etc_missing(p, h->image_etc) : NULL;
	}
	if (p && !p->image)
		probe_etc_paths(h, plan, p);
	char buf[PATH_MAX], path[PATH_MAX];
	for (size_t i = 0; i < AL_ARRAY_SIZE(fs_toplevel_names); i++) {
		snprintf(path, sizeof(path), "%s/%s", h->root, fs_toplevel_names[i]);
		struct stat st;
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(path, buf, sizeof(buf) - 1);
			if (n <= 0)
				continue;
			buf[n] = 0;
			h->toplinks[i] = own(plan, strdup(buf));
		} else if (S_ISDIR(st.st_mode)) {
			h->toplinks[i] = "";
		}
	}
	snprintf(path, sizeof(path), "%s/etc/localtime", h->root);
	ssize_t n = h->image_etc ? -1 : readlink(path, buf, sizeof(buf) - 1); /* an image's is its /etc's */
	if (n > 0) {
		buf[n] = 0;
		h->localtime_link = own(plan, strdup(buf));
	}
	return 0;
}

/* The bind helpers: dest given as an absolute sandbox path, stored relative to the new root. */
static int bind(struct fs_plan *plan, const char *src, const char *dest, uint64_t attrs, unsigned flags)
{
	return add(plan, (struct fs_op){.kind = FS_BIND,
					.src = src,
					.dest = dest + 1,
					.attr_set = attrs,
					.flags = flags | FS_RECURSIVE});
}

static int mkdir_op(struct fs_plan *plan, const char *dest, mode_t mode)
{
	return add(plan, (struct fs_op){.kind = FS_MKDIR, .dest = dest + 1, .mode = mode});
}

static int symlink_op(struct fs_plan *plan, const char *dest, const char *target)
{
	return add(plan, (struct fs_op){.kind = FS_SYMLINK, .dest = dest + 1, .text = target});
}

static int file_op(struct fs_plan *plan, const char *dest, const char *text)
{
	return text && dest ? add(plan, (struct fs_op){.kind = FS_FILE, .dest = dest + 1, .text = text, .mode = 0644})
			    : -ENOMEM;
}

/* A system path's source: the host's own, or the same path inside the profile's rootfs. */
static const char *sys_src(struct fs_plan *plan, const struct fs_host *host, const char *path)
{
	return *host->root ? ownf(plan, "%s%s", host->root, path) : path;
}

/* The system directories. An image may have no /usr (busybox with /bin alone, a static binary):
 * then there is none (the host's /usr never stands in for an image's). */
static int plan_system(struct fs_plan *plan, const struct fs_host *host)
{
	const char *usr = sys_src(plan, host, "/usr");
	int r = !usr ? -ENOMEM : host->no_usr ? 0 : bind(plan, usr, "/usr", RO_ATTRS, 0);
	for (size_t i = 0; r == 0 && i < AL_ARRAY_SIZE(fs_toplevel_names); i++) {
		const char *t = host->toplinks[i];
		const char *dest = ownf(plan, "/%s", fs_toplevel_names[i]);
		const char *src = dest ? sys_src(plan, host, dest) : NULL;
		if (!src)
			return -ENOMEM;
		if (!t)
			continue;
		r = *t ? symlink_op(plan, dest, t) : bind(plan, src, dest, RO_ATTRS, FS_OPTIONAL);
	}
	return r;
}

/* Whether the sandbox shows an image's whole root (not only its system directories). */
static bool image_view(const struct al_policy *p, const struct fs_host *host)
{
	return p->image && *host->root;
}

/* Where airlock's own /etc file name goes: /etc itself, or on an image IMG_ETC_OWN, which the
 * image's prepared /etc links that name to (image/etc.c, whose img_etc_own lists the names). */
static const char *own_etc(struct fs_plan *plan, bool image, const char *name)
{
	return ownf(plan, "%s/%s", image ? IMG_ETC_OWN : "/etc", name);
}

/* An image's /etc: its prepared copy in the store bound read-only, one mount however many entries
 * it has (what made a start on a Debian-sized /etc 1.3-1.5 ms slower was one symlink per entry).
 * Its own resolv.conf, but under --net host, is shown where airlock's files are (its name is
 * airlock's in the prepared /etc): its contents, or its link target, which resolves from
 * IMG_ETC_OWN as from /etc (both one level below the root); none when the image has none. */
static int plan_image_etc(struct fs_plan *plan, const struct al_policy *p, const struct fs_host *host)
{
	int r = bind(plan, host->image_etc, "/etc", RO_ATTRS, 0);
	r = r ?: mkdir_op(plan, IMG_ETC_OWN, 0755);
	if (r < 0 || p->net == AL_NET_HOST || p->net == AL_NET_ALLOW)
		return r; /* the host's, or airlock's resolver (plan_etc) */
	const char *dest = own_etc(plan, true, "resolv.conf");
	if (!dest)
		return -ENOMEM;
	if (host->resolv_link)
		return symlink_op(plan, dest, host->resolv_link);
	if (!host->resolv_text)
		return 0;
	/* An empty file is written as such (len 0 would mean "a string"). */
	return add(plan, (struct fs_op){.kind = FS_FILE,
					.dest = dest + 1,
					.text = host->resolv_len ? host->resolv_text : "",
					.len = host->resolv_len,
					.mode = host->resolv_mode});
}

/* Where airlock terminates the job's TLS (network/pxtls.c), the job's trust store: the system's
 * bundle plus the sandbox's own CA, and that CA alone, in a directory of their own (pol_ca_path:
 * under /etc, or beside airlock's other files on an image, whose /etc is its own); the job's
 * SSL_CERT_FILE and friends name them (netpolicy.c). Only the certificate is public: the CA's key
 * never leaves the supervisor. The system's bundle is the tree's the job runs on (the host's, or
 * its image's, links resolved inside it), read now, so what the job trusts besides this CA is
 * exactly what it trusted before. */
static int plan_ca_bundle(struct fs_plan *plan, const struct al_policy *p, const struct fs_host *host, bool image)
{
	static const char sys_bundle[] = "/etc/ssl/certs/ca-certificates.crt";
	const char *ca = p->net == AL_NET_ALLOW ? pol_tls_ca_pem(p) : NULL;
	if (!ca)
		return 0;
	cleanup_close int rfd = image ? open(host->root, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	int fd = !image	    ? open(sys_bundle, O_RDONLY | O_CLOEXEC)
		 : rfd >= 0 ? al_openat2(rfd, sys_bundle, O_RDONLY, 0, AL_RESOLVE_IN_ROOT)
			    : -1;
	FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	size_t cap = strlen(ca) + 1, n = 0;
	char *sys = NULL;
	if (f) {
		struct stat st;
		if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size < (16 << 20))
			cap += (size_t)st.st_size + 1;
		sys = malloc(cap);
		n = sys ? fread(sys, 1, cap - strlen(ca) - 1, f) : 0;
		fclose(f);
	} else {
		sys = malloc(cap);
	}
	if (!sys)
		return -ENOMEM;
	if (n > 0 && sys[n - 1] != '\n')
		sys[n++] = '\n';
	memcpy(sys + n, ca, strlen(ca) + 1);
	char path[64];
	const char *bundle = own(plan, sys);
	const char *bundle_at = ownf(plan, "%s", pol_ca_path(p, true, path, sizeof(path)));
	const char *ca_at = ownf(plan, "%s", pol_ca_path(p, false, path, sizeof(path)));
	int r = bundle && bundle_at && ca_at ? mkdir_op(plan, image ? AL_CA_DIR_IMAGE : AL_CA_DIR, 0755) : -ENOMEM;
	r = r ?: file_op(plan, bundle_at, bundle);
	return r ?: file_op(plan, ca_at, ownf(plan, "%s", ca));
}

static int plan_etc(struct fs_plan *plan, const struct al_policy *p, const struct fs_host *host)
{
	const char *hostname = p->hostname ? p->hostname : AL_DEFAULT_HOSTNAME;
	bool image = image_view(p, host);
	/* Binds of the few host files real programs need; everything else in /etc is ours. */
	static const char *const ro_files[] = {"/etc/ld.so.cache",  "/etc/ssl/certs", "/etc/ssl/openssl.cnf",
					       "/etc/alternatives", "/etc/services",  "/etc/protocols",
					       "/etc/mime.types"};
	int r = mkdir_op(plan, "/etc", 0755);
	r = r ?: image ? plan_image_etc(plan, p, host) : 0;
	/* AL_SANDBOX_ACCOUNT names the payload's ids, whatever they are (1000, or an image's User):
	 * the name USER and LOGNAME give, with HOME the workspace. A group 0 is root's line alone. */
	r = r
		    ?: file_op(plan, own_etc(plan, image, "passwd"),
			       ownf(plan,
				    "root:x:0:0:root:/root:/bin/sh\n" AL_SANDBOX_ACCOUNT
				    ":x:%u:%u:airlock sandbox:" AL_WORKSPACE ":/bin/sh\n"
				    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
				    p->run_uid, p->run_gid));
	r = r
		    ?: file_op(plan, own_etc(plan, image, "group"),
			       p->run_gid
				       ? ownf(plan,
					      "root:x:0:\ntty:x:5:\n" AL_SANDBOX_ACCOUNT ":x:%u:\nnogroup:x:65534:\n",
					      p->run_gid)
				       : "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n");
	r = r
		    ?: file_op(plan, own_etc(plan, image, "hosts"),
			       ownf(plan,
				    "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n",
				    hostname));
	r = r ?: file_op(plan, own_etc(plan, image, "hostname"), ownf(plan, "%s\n", hostname));
	r = r
		    ?: file_op(plan, own_etc(plan, image, "nsswitch.conf"),
			       "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
			       "networks: files\nprotocols: files\nservices: files\n");
	/* Only the host posture can resolve names: it gets the host's resolver configuration. */
	if (r == 0 && p->net == AL_NET_HOST) {
		const char *dest = own_etc(plan, image, "resolv.conf");
		r = dest ? bind(plan, "/etc/resolv.conf", dest, RO_ATTRS, FS_OPTIONAL) : -ENOMEM;
	}
	/* An allowlist's: airlock's resolver in the sandbox's own namespace (network/capture.h),
	 * which knows the allowed names only. One attempt of one second: it answers at once or
	 * not at all, and a client should never wait out glibc's default 5 s twice. */
	if (r == 0 && p->net == AL_NET_ALLOW)
		r = file_op(plan, own_etc(plan, image, "resolv.conf"),
			    "# airlock: the sandbox's resolver answers the allowlist's names only\n"
			    "nameserver " AL_DNS_ADDR "\noptions timeout:1 attempts:1\n");
	r = r ?: plan_ca_bundle(plan, p, host, image);
	if (r < 0 || image)
		return r; /* an image's own /etc fills the rest */
	/* The parent of two binds, with its mode stated: bwrap would make it 0700 by itself. */
	r = mkdir_op(plan, "/etc/ssl", 0755);
	r = r ?: symlink_op(plan, "/etc/os-release", "../usr/lib/os-release");
	for (size_t i = 0; r == 0 && i < AL_ARRAY_SIZE(ro_files); i++) {
		const char *src = sys_src(plan, host, ro_files[i]);
		r = src ? bind(plan, src, ro_files[i], RO_ATTRS, FS_OPTIONAL) : -ENOMEM;
	}
	/* The languages' configuration (policy/etcview.c says why it holds no secret). A nested one
	 * (/etc/perl/Net) gets its parents, 0755 as on the host's Debian. */
	for (size_t i = 0; r == 0 && i < host->netc_paths; i++) {
		const char *path = host->etc_paths[i], *slash = strrchr(path, '/');
		const char *parent = slash > path + 4 ? ownf(plan, "%.*s", (int)(slash - path), path) : "/etc";
		const char *src = sys_src(plan, host, path);
		r = parent && src ? 0 : -ENOMEM;
		r = r ?: strcmp(parent, "/etc") != 0 ? mkdir_op(plan, parent, 0755) : 0;
		r = r ?: bind(plan, src, path, RO_ATTRS, FS_OPTIONAL);
	}
	if (r == 0 && host->localtime_link)
		r = symlink_op(plan, "/etc/localtime", host->localtime_link);
	else if (r == 0)
		r = bind(plan, "/etc/localtime", "/etc/localtime", RO_ATTRS, FS_OPTIONAL);
	return r;
}

static int plan_proc_dev(struct fs_plan *plan)
{
	static const char *const devs[] = {"/dev/null",	  "/dev/zero",	  "/dev/full",
					   "/dev/random", "/dev/urandom", "/dev/tty"};
	static const char *const links[][2] = {
		{"/dev/ptmx", "pts/ptmx"},	    {"/dev/fd", "/proc/self/fd"},
		{"/dev/stdin", "/proc/self/fd/0"},  {"/dev/stdout", "/proc/self/fd/1"},
		{"/dev/stderr", "/proc/self/fd/2"}, {"/dev/shm", "/tmp"},
	};
	int r = mkdir_op(plan, "/proc", 0555);
	/* Read-only: /proc/PID/mem writes ignore page protection (FOLL_FORCE), so a writable /proc
	 * would let the payload patch its own read-only code and data. Every backend applies this
	 * one mount, Landlock or not; nothing an ordinary program does needs to write /proc. */
	r = r
		    ?: add(plan, (struct fs_op){.kind = FS_PROC,
						.dest = "proc",
						.mflags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC});
	r = r ?: mkdir_op(plan, "/dev", 0755);
	r = r
		    ?: add(plan, (struct fs_op){.kind = FS_TMPFS,
						.dest = "dev",
						.text = "mode=0755,size=64k",
						.mflags = MS_NOSUID | MS_NOEXEC});
	for (size_t i = 0; r == 0 && i < AL_ARRAY_SIZE(devs); i++)
		r = bind(plan, devs[i], devs[i], DEV_ATTRS, FS_OPTIONAL);
	r = r ?: mkdir_op(plan, "/dev/pts", 0755);
	r = r
		    ?: add(plan, (struct fs_op){.kind = FS_DEVPTS,
						.dest = "dev/pts",
						.text = "newinstance,ptmxmode=0666,mode=0620",
						.mflags = MS_NOSUID | MS_NOEXEC});
	for (size_t i = 0; r == 0 && i < AL_ARRAY_SIZE(links); i++)
		r = symlink_op(plan, links[i][0], links[i][1]);
	/* Nothing may be added to /dev once it is populated. */
	r = r
		    ?: add(plan, (struct fs_op){
					 .kind = FS_SETATTR, .dest = "dev", .attr_set = MOUNT_ATTR_RDONLY | DEV_ATTRS});
	return r;
}

/* An overlay at dest whose lower layers are the host directories srcs[0..n) (read-only, the top
 * first) and whose upper layer is a tmpfs of --disk bytes under the staging dir stage; the upper
 * layer is handed to the supervisor (FS_SENDFD with tag), then the staging mounts are detached.
 *  --workdir: /workspace; the supervisor writes the changes back to src when the job ends, so
 *  no more than --disk bytes can ever reach the host.
 *  --checkout-mode copy: a throwaway read-write copy of a checkout; the changes are exported
 *  only with --keep-changes, and src is never written.
 *  A held sandbox's layers (al_policy_add_ws_layer): a fork's or a snapshot's frozen files shared
 *  by every sandbox made from them; the manager keeps the upper layer (its changes). */
static int plan_overlay(struct fs_plan *plan, const struct al_policy *p, char *const *srcs, size_t n, const char *dest,
			const char *stage, char tag)
{
	const char *up = ownf(plan, "/%s/upper", stage), *data = ownf(plan, "/%s/upper/data", stage),
		   *work = ownf(plan, "/%s/upper/work", stage), *low = ownf(plan, "/%s/lower", stage);
	if (!up || !data || !work || !low || n == 0)
		return -ENOMEM;
	int r = mkdir_op(plan, ownf(plan, "/%s", stage), 0700);
	/* Each layer bound read-only at lower/I; lowerdir= names them so (no host path in it). */
	const char *lowers = "";
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *li = ownf(plan, "%s/%zu", low, i);
		lowers = li ? ownf(plan, "%s%s%s", lowers, i ? ":" : "", li + 1) : NULL;
		r = !li || !lowers ? -ENOMEM : bind(plan, srcs[i], li, RO_ATTRS, 0);
	}
	r = r
		    ?: add(plan, (struct fs_op){.kind = FS_TMPFS,
						.dest = up + 1,
						.text = ownf(plan, "size=%llu,mode=0700",
							     (unsigned long long)p->limits[AL_LIMIT_DISK]),
						.mflags = MS_NOSUID | MS_NODEV});
	r = r ?: mkdir_op(plan, data, 0755);
	r = r
		    ?: add(plan, (struct fs_op){
					 .kind = FS_CHOWN, .dest = data + 1, .owner = p->run_uid, .group = p->run_gid});
	r = r ?: mkdir_op(plan, work, 0700);
	r = r
		    ?: add(plan,
			   (struct fs_op){.kind = FS_OVERLAY,
					  .dest = dest + 1,
					  .text = ownf(plan, "lowerdir=%s,upperdir=%s,workdir=%s,userxattr,xino=on",
						       lowers, data + 1, work + 1),
					  .mflags = MS_NOSUID | MS_NODEV});
	if (tag)
		r = r ?: add(plan, (struct fs_op){.kind = FS_SENDFD, .dest = data + 1, .mode = (mode_t)tag});
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *li = ownf(plan, "%s/%zu", low, i);
		r = !li ? -ENOMEM : add(plan, (struct fs_op){.kind = FS_UMOUNT, .dest = li + 1});
		r = r ?: add(plan, (struct fs_op){.kind = FS_RMDIR, .dest = li + 1});
	}
	r = r ?: add(plan, (struct fs_op){.kind = FS_UMOUNT, .dest = up + 1});
	r = r ?: add(plan, (struct fs_op){.kind = FS_RMDIR, .dest = low + 1});
	r = r ?: add(plan, (struct fs_op){.kind = FS_RMDIR, .dest = up + 1});
	r = r ?: add(plan, (struct fs_op){.kind = FS_RMDIR, .dest = stage});
	return r;
}

/* --checkout: read-only, or a throwaway copy (see copytree.c for why not an overlay). */
static int plan_checkout(struct fs_plan *plan, const struct al_policy *p)
{
	if (!p->checkout)
		return 0;
	if (p->checkout_mode == AL_CHECKOUT_RO)
		return bind(plan, p->checkout, p->checkout_dest, RO_ATTRS, 0);
	/* A tmpfs of its own, so the copy and what the job adds stay within --disk. */
	int r = mkdir_op(plan, p->checkout_dest, 0755);
	r = r
		    ?: add(plan, (struct fs_op){.kind = FS_TMPFS,
						.dest = p->checkout_dest + 1,
						.text = ownf(plan, "size=%llu,mode=0755,uid=%d,gid=%d",
							     (unsigned long long)p->limits[AL_LIMIT_DISK], p->run_uid,
							     p->run_gid),
						.mflags = MS_NOSUID | MS_NODEV});
	r = r
		    ?: add(plan, (struct fs_op){.kind = FS_COPY,
						.src = p->checkout,
						.dest = p->checkout_dest + 1,
						.owner = p->run_uid,
						.group = p->run_gid});
	if (p->keep_changes)
		r = r
			    ?: add(plan, (struct fs_op){.kind = FS_SENDFD,
							.dest = p->checkout_dest + 1,
							.mode = FS_TAG_CHECKOUT});
	return r;
}

static int plan_scratch(struct fs_plan *plan, const struct al_policy *p)
{
	uint64_t disk = p->limits[AL_LIMIT_DISK];
	int r = mkdir_op(plan, "/tmp", 01777);
	r = r
		    ?: add(plan, (struct fs_op){.kind = FS_TMPFS,
						.dest = "tmp",
						.text = ownf(plan, "size=%llu,mode=1777", (unsigned long long)disk),
						.mflags = MS_NOSUID | MS_NODEV});
	r = r ?: mkdir_op(plan, AL_WORKSPACE, 0755);
	if (r)
		return r;
	if (p->workdir)
		return plan_overlay(plan, p, &p->workdir, 1, AL_WORKSPACE, ".airlock", FS_TAG_WORKDIR);
	if (p->nws_layers)
		return plan_overlay(plan, p, p->ws_layers, p->nws_layers, AL_WORKSPACE, ".airlock", FS_TAG_WORKDIR);
	return add(plan, (struct fs_op){.kind = FS_TMPFS,
					.dest = &AL_WORKSPACE[1],
					.text = ownf(plan, "size=%llu,mode=0755,uid=%d,gid=%d",
						     (unsigned long long)disk, p->run_uid, p->run_gid),
					.mflags = MS_NOSUID | MS_NODEV});
}

/* Whether an op of the plan (or a policy file) already uses path dir (sandbox-absolute) or
 * something beneath it: then the image's entry of that name is not linked there. */
static bool taken(const struct fs_plan *plan, const struct al_policy *p, const char *dir)
{
	size_t n = strlen(dir + 1), full = n + 1; /* dir without and with its leading '/' */
	for (size_t i = 0; i < plan->n; i++) {
		const char *d = plan->ops[i].dest;
		if (d && strnlen(d, n) == n && memcmp(d, dir + 1, n) == 0 && (d[n] == 0 || d[n] == '/'))
			return true;
	}
	for (size_t i = 0; i < p->nfiles; i++)
		if (strnlen(p->files[i].dest, full) == full && memcmp(p->files[i].dest, dir, full) == 0 &&
		    (p->files[i].dest[full] == 0 || p->files[i].dest[full] == '/'))
			return true;
	return false;
}

/* The image's other top-level entries: a directory or a regular file (a static binary FROM
 * scratch) bound read-only, a symlink made again (it resolves in the sandbox's root, as in the
 * image's), anything else left out. */
static int image_top(struct fs_plan *plan, const struct al_policy *p, const struct fs_host *host)
{
	static const char *const own_top[] = {"usr",	"bin", "sbin", "lib", "lib32", "lib64",
					      "libx32", "etc", "proc", "dev", "tmp",   "sys"};
	int r = 0;
	for (size_t i = 0; r == 0 && i < host->ntop; i++) {
		bool skip = !host->top_links[i];
		for (size_t k = 0; k < AL_ARRAY_SIZE(own_top); k++)
			skip = skip || strcmp(host->top_names[i], own_top[k]) == 0;
		const char *dest = ownf(plan, "/%s", host->top_names[i]);
		const char *src = ownf(plan, "%s/%s", host->root, host->top_names[i]);
		if (!dest || !src)
			return -ENOMEM;
		if (skip || taken(plan, p, dest))
			continue;
		const char *t = host->top_links[i];
		r = t != top_regular && *t ? symlink_op(plan, dest, t) : bind(plan, src, dest, RO_ATTRS, 0);
	}
	return r;
}

/* The mount point of the job's own cgroups (cgroup/view.c, mounted by the sandbox's init once it
 * is in its cgroup namespace; the plan only makes the directories, read-only with the root). A
 * policy that binds something at /sys or beneath keeps /sys as it asked: no view then. */
static int plan_sys(struct fs_plan *plan, const struct al_policy *p)
{
	if (taken(plan, p, "/sys"))
		return 0;
	int r = mkdir_op(plan, "/sys", 0555);
	r = r ?: mkdir_op(plan, "/sys/fs", 0555);
	r = r ?: mkdir_op(plan, FS_CGROUP_VIEW, 0555);
	plan->cgroup_view = r == 0;
	return r;
}

/* /home/user, a link to the workspace: the home directory E2B's SDKs (and programs written for
 * them) expect. Only a link in the sandbox's own root (nothing of the host's): where the policy or
 * an image has a /home, that one stays as it is. */
static int plan_home(struct fs_plan *plan, const struct al_policy *p)
{
	if (taken(plan, p, "/home"))
		return 0;
	int r = mkdir_op(plan, "/home", 0755);
	return r ?: symlink_op(plan, "/home/user", AL_WORKSPACE);
}

/* An image's whole root, read-only, but for what the sandbox owns itself (/proc, /dev, /tmp, the
 * workspace, and airlock's files in /etc: passwd, group, hosts, hostname, nsswitch.conf naming
 * the sandbox user; the host's resolv.conf under --net host). Its top-level directories (/opt,
 * /srv, /var, /home ...) are binds; its /etc is its prepared copy (plan_image_etc). Safe: the
 * trees are the store's read-only ones, bound nosuid, nodev, read-only; a symlink resolves in the
 * sandbox's own root. */
static int plan_image(struct fs_plan *plan, const struct al_policy *p, const struct fs_host *host)
{
	return image_view(p, host) ? image_top(plan, p, host) : 0;
}

int fs_plan_build(struct fs_plan *plan, const struct al_policy *p, const struct fs_host *host, struct al_error *err)
{
	if (image_view(p, host) && !host->image_etc)
		return al_err(err, EINVAL, "image %s: no prepared /etc (not opened from the store)", p->image->digest);
	/* The image's /etc is bound read-only: a bind inside it can only cover an entry it has. */
	if (image_view(p, host) && host->etc_missing)
		return al_err(err, EROFS,
			      "%s: on an image, /etc is the image's own, read-only: a bind there needs an entry of "
			      "it to cover (not a link, nor one of airlock's own files)",
			      host->etc_missing);
	if (image_view(p, host) && host->resolv_text && host->resolv_len > FS_RESOLV_MAX)
		return al_err(err, EFBIG, "the image's /etc/resolv.conf is larger than %u KiB", FS_RESOLV_MAX >> 10);
	int r = plan_system(plan, host);
	r = r ?: plan_etc(plan, p, host);
	r = r ?: plan_proc_dev(plan);
	r = r ?: plan_scratch(plan, p);
	for (size_t i = 0; r == 0 && i < p->nbinds; i++) {
		const struct al_bind *b = &p->binds[i];
		r = bind(plan, b->src, b->dest, b->writable ? RW_ATTRS : RO_ATTRS, 0);
	}
	r = r ?: plan_checkout(plan, p);
	r = r ?: plan_image(plan, p, host);
	r = r ?: plan_sys(plan, p);
	r = r ?: plan_home(plan, p);
	/* Files last: an empty one is written as such (len 0 would mean "a string"). */
	for (size_t i = 0; r == 0 && i < p->nfiles; i++) {
		const struct al_file *f = &p->files[i];
		r = add(plan, (struct fs_op){.kind = FS_FILE,
					     .dest = f->dest + 1,
					     .text = f->len ? f->data : "",
					     .len = f->len,
					     .mode = f->mode});
		r = r
			    ?: add(plan, (struct fs_op){.kind = FS_CHOWN,
							.dest = f->dest + 1,
							.owner = p->run_uid,
							.group = p->run_gid});
	}
	for (size_t i = 0; r == 0 && i < plan->n; i++)
		if (!plan->ops[i].dest || ((plan->ops[i].kind == FS_FILE || plan->ops[i].kind == FS_TMPFS ||
					    plan->ops[i].kind == FS_OVERLAY) &&
					   !plan->ops[i].text))
			r = -ENOMEM;
	if (r < 0)
		return al_err(err, -r, "building the filesystem plan: out of memory");
	return 0;
}

int fs_landlock_spec(const struct al_policy *p, struct ll_spec *spec, struct ll_path **paths, size_t *npaths)
{
	const char **ro = calloc(p->nbinds + 2, sizeof(*ro)), **rw = calloc(p->nbinds + 2, sizeof(*rw));
	size_t nro = 0, nrw = 0;
	for (size_t i = 0; ro && rw && i < p->nbinds; i++) {
		if (p->binds[i].writable)
			rw[nrw++] = p->binds[i].dest;
		else
			ro[nro++] = p->binds[i].dest;
	}
	/* A checkout under /workspace is covered by its rule; elsewhere it needs its own. */
	if (ro && rw && p->checkout && p->checkout_mode == AL_CHECKOUT_COPY)
		rw[nrw++] = p->checkout_dest;
	else if (ro && rw && p->checkout)
		ro[nro++] = p->checkout_dest;
	int r = ro && rw ? ll_default_paths(paths, npaths, ro, nro, rw, nrw) : -ENOMEM;
	free(ro);
	free(rw);
	if (r < 0)
		return r;
	/* TCP is the network namespace's business (under "none" it holds only the job's own lo,
	 * which a port rule could not tell from the host's); abstract sockets and signals stay
	 * inside the sandbox (also under "host": the host's abstract sockets, X11 or D-Bus, stay
	 * out of reach). */
	/* The mount namespace already decides what can be read (and / is readable anyway):
	 * Landlock guards writes, TCP and scope, and read-only opens skip its path walk. */
	*spec = (struct ll_spec){.paths = *paths,
				 .npaths = *npaths,
				 .deny_tcp = false,
				 .scope = true,
				 .writes_only = true,
				 .mqueue = true};
	return 0;
}
