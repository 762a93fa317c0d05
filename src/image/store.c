/* store.c — the image store on disk: names, content by digest, locks, listing, removal and gc. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/imgint.h"
#include "util/cleanup.h"
#include "util/error.h"

int img_store_default(char *buf, size_t size)
{
	const char *env = getenv("AIRLOCK_IMAGES"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	int n;
	if (env && *env == '/')
		n = snprintf(buf, size, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, size, "/var/lib/airlock/images");
	else if (xdg && *xdg == '/')
		n = snprintf(buf, size, "%s/airlock/images", xdg);
	else if (home && *home == '/')
		n = snprintf(buf, size, "%s/.local/share/airlock/images", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *s = strchr(buf + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		if (!s)
			return 0;
		*s = '/';
	}
}

int img_store_open(struct img_store *s, const char *path, bool create, struct al_error *err)
{
	char def[PATH_MAX];
	memset(s, 0, sizeof(*s));
	s->dirfd = -1;
	if (!path) {
		int r = img_store_default(def, sizeof(def));
		if (r < 0)
			return al_err(err, -r, "no place for the image store (set AIRLOCK_IMAGES or HOME)");
		path = def;
	}
	/* 0755: sandboxes bind the trees from here, and their init is not the store's owner. */
	int r = create ? mkdir_p(path, 0755) : 0;
	if (r < 0)
		return al_err_sys(err, -r, "image store %s", path);
	s->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0)
		return al_err_sys(err, errno, "image store %s", path);
	if (create) {
		(void)mkdirat(s->dirfd, "sha256", 0755);
		(void)mkdirat(s->dirfd, "names", 0755);
		/* 0711: the unprivileged unpacking child must reach its own staging directory. */
		(void)mkdirat(s->dirfd, "tmp", 0711);
	}
	s->path = realpath(path, NULL);
	return s->path ? 0 : al_err(err, ENOMEM, "out of memory");
}

void img_store_close(struct img_store *s)
{
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->path);
	s->path = NULL;
	s->dirfd = -1;
}

bool img_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= IMG_NAME_MAX ||
	    !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= '0' && name[0] <= '9')))
		return false;
	/* "@sha256:" is left to references (NAME@sha256:<hex>, resolve): no name reads like one. */
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@+-") == n &&
	       !strstr(name, "@sha256:");
}

bool img_digest_valid(const char *s)
{
	return strncmp(s, "sha256:", 7) == 0 && strlen(s) == 71 && strspn(s + 7, "0123456789abcdef") == 64;
}

/* The digest part of a reference NAME@sha256:<hex> (NAME valid), else NULL. Pure. */
static const char *ref_digest(const char *ref)
{
	const char *at = strstr(ref, "@sha256:");
	if (!at || !img_digest_valid(at + 1) || (size_t)(at - ref) >= IMG_NAME_MAX)
		return NULL;
	char name[IMG_NAME_MAX];
	snprintf(name, sizeof(name), "%.*s", (int)(at - ref), ref);
	return img_name_valid(name) ? at + 1 : NULL;
}

size_t img_ref_name_len(const char *ref)
{
	const char *d = ref_digest(ref);
	return d ? (size_t)(d - 1 - ref) : strlen(ref);
}

/* name ("NAME", "sha256:<hex>", or the reference NAME@sha256:<hex>: that content, whatever NAME
 * names now) to the content's hex (65 bytes). */
static int resolve(struct img_store *s, const char *name, char hex[65], struct al_error *err)
{
	char rel[IMG_NAME_MAX + 8], link[128];
	const char *dig = ref_digest(name);
	if (img_digest_valid(name) || dig) {
		snprintf(hex, 65, "%s", (dig ? dig : name) + 7);
	} else {
		if (!img_name_valid(name))
			return al_err(err, EINVAL, "'%s' is not an image name", name);
		snprintf(rel, sizeof(rel), "names/%s", name);
		ssize_t n = readlinkat(s->dirfd, rel, link, sizeof(link) - 1);
		if (n < 0)
			return al_err(err, ENOENT, "no image named '%s' in %s", name, s->path);
		link[n] = 0;
		if (strncmp(link, "../sha256/", 10) != 0 || strlen(link + 10) != 64 ||
		    strspn(link + 10, "0123456789abcdef") != 64)
			return al_err(err, EBADMSG, "image name '%s': a damaged link", name);
		snprintf(hex, 65, "%s", link + 10);
	}
	char d[80];
	snprintf(d, sizeof(d), "sha256/%s", hex);
	struct stat st;
	if (fstatat(s->dirfd, d, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return al_err(err, ENOENT, "image '%s': its content sha256:%s is missing", name, hex);
	return 0;
}

/* Opens the content's lock and takes it (LOCK_SH or LOCK_EX), never waiting. */
static int lock_content(struct img_store *s, const char *hex, int how)
{
	char rel[96];
	snprintf(rel, sizeof(rel), "sha256/%s/lock", hex);
	int fd = openat(s->dirfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, how | LOCK_NB) < 0) {
		close(fd);
		return -EBUSY;
	}
	return fd;
}

static __thread uint64_t tree_bytes;

static int add_bytes(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)p;
	(void)f;
	if (type == FTW_F && S_ISREG(st->st_mode))
		tree_bytes += (uint64_t)st->st_size;
	return 0;
}

uint64_t store_tree_bytes(const char *path)
{
	tree_bytes = 0;
	(void)nftw(path, add_bytes, 16, FTW_PHYS | FTW_MOUNT);
	return tree_bytes;
}

/* ---- staging ---- */

int store_stage_begin(struct img_store *s, struct store_stage *st, struct al_error *err)
{
	st->fd = st->lock_fd = -1;
	if (snprintf(st->path, sizeof(st->path), "%s/tmp/new-XXXXXX", s->path) >= (int)sizeof(st->path))
		return al_err(err, ENAMETOOLONG, "image store path too long");
	if (!mkdtemp(st->path))
		return al_err_sys(err, errno, "staging directory in %s/tmp", s->path);
	st->fd = open(st->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* The lock says "in progress" to gc; it moves with the tree into sha256/<hex>/. */
	st->lock_fd = st->fd < 0 ? -1 : openat(st->fd, "lock", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (st->lock_fd < 0 || fchmod(st->fd, 0755) < 0 || flock(st->lock_fd, LOCK_EX) < 0) {
		int e = errno;
		store_stage_abort(st);
		return al_err_sys(err, e, "staging directory in %s/tmp", s->path);
	}
	return 0;
}

void store_stage_abort(struct store_stage *st)
{
	if (st->fd >= 0)
		close(st->fd);
	if (st->path[0])
		(void)unpack_rm_tree(st->path);
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	st->fd = st->lock_fd = -1;
	st->path[0] = 0;
}

static int write_file_at(int dfd, const char *name, const char *text)
{
	cleanup_close int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	size_t n = strlen(text);
	if (fd < 0)
		return -errno;
	return write(fd, text, n) == (ssize_t)n ? 0 : -EIO;
}

/* names/<name> -> ../sha256/<hex>, replaced atomically (rename over the old link). */
static int set_name(struct img_store *s, const char *name, const char *hex)
{
	char tmp[IMG_NAME_MAX + 32], dst[IMG_NAME_MAX + 8], target[96];
	snprintf(tmp, sizeof(tmp), "tmp/name-%d-%s", (int)getpid(), name);
	snprintf(dst, sizeof(dst), "names/%s", name);
	snprintf(target, sizeof(target), "../sha256/%s", hex);
	(void)unlinkat(s->dirfd, tmp, 0);
	if (symlinkat(target, s->dirfd, tmp) < 0)
		return -errno;
	if (renameat(s->dirfd, tmp, s->dirfd, dst) < 0) {
		int e = errno;
		(void)unlinkat(s->dirfd, tmp, 0);
		return -e;
	}
	return 0;
}

int store_stage_commit(struct img_store *s, struct store_stage *st, const char *digest, const char *name,
		       const char *meta, struct al_error *err)
{
	char dst[96];
	int r = write_file_at(st->fd, "image.json", meta);
	if (r < 0)
		return al_err_sys(err, -r, "image.json");
	cleanup_close int rootfd = openat(st->fd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return al_err_sys(err, errno, "the staged rootfs");
	if ((r = store_etc_prepare(rootfd, st->fd, IMG_ETC_DIR, err)) < 0)
		return r;
	if (fchmodat(st->fd, "rootfs", 0555, 0) < 0)
		return al_err_sys(err, errno, "make the root read-only");
	snprintf(dst, sizeof(dst), "sha256/%s", digest + 7);
	if (renameat(AT_FDCWD, st->path, s->dirfd, dst) < 0) {
		if (errno != EEXIST && errno != ENOTEMPTY)
			return al_err_sys(err, errno, "store %s", digest);
		store_stage_abort(st); /* the same digest is already stored: the same tree */
	} else {
		st->path[0] = 0;
	}
	r = set_name(s, name, digest + 7);
	return r < 0 ? al_err_sys(err, -r, "name '%s'", name) : 0;
}

/* ---- reading ---- */

static int read_meta(struct img_store *s, const char *hex, char **text)
{
	char rel[96];
	snprintf(rel, sizeof(rel), "sha256/%s/image.json", hex);
	cleanup_close int fd = openat(s->dirfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size > (1 << 22))
		return -EFBIG;
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	ssize_t n = read(fd, buf, (size_t)st.st_size);
	if (n < 0) {
		free(buf);
		return -EIO;
	}
	buf[n] = 0;
	*text = buf;
	return 0;
}

int img_inspect(struct img_store *s, const char *name, char **json, struct al_error *err)
{
	char hex[65];
	int r = resolve(s, name, hex, err);
	if (r < 0)
		return r;
	r = read_meta(s, hex, json);
	return r < 0 ? al_err_sys(err, -r, "image '%s': image.json", name) : 0;
}

static bool pinned(struct img_store *s, const char *hex, char *holder, size_t size);

static int fill_entry(struct img_store *s, const char *name, struct img_entry *e)
{
	char hex[65];
	if (strlen(name) >= sizeof(e->name) || resolve(s, name, hex, NULL) < 0)
		return -ENOENT;
	memcpy(e->name, name, strlen(name) + 1);
	snprintf(e->digest, sizeof(e->digest), "sha256:%s", hex);
	cleanup_free char *text = NULL;
	json_t *j = read_meta(s, hex, &text) == 0 ? json_loads(text, 0, NULL) : NULL;
	e->bytes = (uint64_t)json_integer_value(json_object_get(j, "bytes"));
	json_decref(j);
	int fd = lock_content(s, hex, LOCK_EX);
	char holder[PATH_MAX];
	e->in_use = fd == -EBUSY || pinned(s, hex, holder, sizeof(holder)); /* a kept sandbox's too */
	if (fd >= 0)
		close(fd);
	return 0;
}

int img_list(struct img_store *s, int (*fn)(void *ctx, const struct img_entry *e), void *ctx, struct al_error *err)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/names", s->path);
	struct dirent **list = NULL;
	int n = scandir(dir, &list, NULL, alphasort);
	if (n < 0)
		return al_err_sys(err, errno, "%s", dir);
	int r = 0;
	for (int i = 0; i < n; i++) {
		struct img_entry e = {0};
		if (r == 0 && list[i]->d_name[0] != '.' && fill_entry(s, list[i]->d_name, &e) == 0)
			r = fn(ctx, &e);
		free(list[i]);
	}
	free(list);
	return r;
}

/* ---- pins ---- */

/* pins/<hex>/<key>: the content is kept for a holder outside the store (a sandbox airlock serve
 * keeps on disk between servers, which holds no lock while no server runs). The file names the
 * holder's path; a pin whose holder is gone is stale, and removed where it is found. */
int img_pin(struct img_store *s, const char *digest, const char *key, const char *holder, struct al_error *err)
{
	if (!img_digest_valid(digest) || !*key ||
	    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789-._") != strlen(key) || key[0] == '.' || strlen(key) > 64)
		return al_err(err, EINVAL, "bad pin %s/%s", digest, key);
	char rel[160], tmp[176];
	snprintf(rel, sizeof(rel), "pins/%s", digest + 7);
	if ((mkdirat(s->dirfd, "pins", 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(s->dirfd, rel, 0755) < 0 && errno != EEXIST))
		return al_err_sys(err, errno, "image store %s: pins", s->path);
	snprintf(rel, sizeof(rel), "pins/%s/%s", digest + 7, key);
	snprintf(tmp, sizeof(tmp), "%s.tmp", rel);
	cleanup_close int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	size_t n = strlen(holder);
	if (fd < 0 || write(fd, holder, n) != (ssize_t)n || fsync(fd) < 0 ||
	    renameat(s->dirfd, tmp, s->dirfd, rel) < 0) {
		int e = errno;
		(void)unlinkat(s->dirfd, tmp, 0);
		return al_err_sys(err, e, "image store %s: pin %s", s->path, rel);
	}
	return 0;
}

/* Whether a live pin keeps hex: its holder's path in holder. A holder that cannot be looked at
 * (another user's state directory) counts as live; a missing one's pin is removed. */
static bool pinned(struct img_store *s, const char *hex, char *holder, size_t size)
{
	char rel[96];
	snprintf(rel, sizeof(rel), "pins/%s", hex);
	cleanup_close int pfd = openat(s->dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = pfd < 0 ? NULL : fdopendir(dup(pfd));
	struct dirent *de;
	bool live = false;
	while (d && !live && (de = readdir(d))) {
		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp"))
			continue;
		char path[PATH_MAX] = "";
		int fd = openat(pfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, path, sizeof(path) - 1);
		if (fd >= 0)
			close(fd);
		path[n > 0 ? n : 0] = 0;
		struct stat st;
		if (n > 0 && path[0] == '/' && (stat(path, &st) == 0 || errno != ENOENT)) {
			live = true;
			snprintf(holder, size, "%s", path);
		} else {
			(void)unlinkat(pfd, de->d_name, 0);
		}
	}
	if (d)
		closedir(d);
	if (!live && pfd >= 0)
		(void)unlinkat(s->dirfd, rel, AT_REMOVEDIR); /* fails while a pin is being written */
	return live;
}

/* ---- removal ---- */

/* Does any name point at hex (other than skip)? */
static bool named(struct img_store *s, const char *hex, const char *skip)
{
	cleanup_close int nfd = openat(s->dirfd, "names", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = nfd < 0 ? NULL : fdopendir(steal_fd(nfd));
	struct dirent *de;
	char link[128];
	bool found = false;
	while (d && !found && (de = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n <= 0 || (skip && strcmp(de->d_name, skip) == 0))
			continue;
		link[n] = 0;
		found = strncmp(link, "../sha256/", 10) == 0 && strcmp(link + 10, hex) == 0;
	}
	if (d)
		closedir(d);
	return found;
}

/* Moves sha256/<hex> to tmp/ (so no new sandbox finds it) and removes it. Lock held by caller. */
static int drop_content(struct img_store *s, const char *hex)
{
	char from[96], to[96], path[PATH_MAX];
	snprintf(from, sizeof(from), "sha256/%s", hex);
	snprintf(to, sizeof(to), "tmp/rm-%.16s-%d", hex, (int)getpid());
	if (renameat(s->dirfd, from, s->dirfd, to) < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", s->path, to);
	return unpack_rm_tree(path);
}

int img_remove(struct img_store *s, const char *name, struct al_error *err)
{
	char hex[65], rel[IMG_NAME_MAX + 8];
	int r = resolve(s, name, hex, err);
	if (r < 0)
		return r;
	cleanup_close int lock = lock_content(s, hex, LOCK_EX);
	if (lock == -EBUSY)
		return al_err(err, EBUSY, "image '%s' (sha256:%.12s) is in use by a sandbox: not removed", name, hex);
	bool by_digest = img_digest_valid(name);
	/* The last name of content a kept sandbox stands on stays, as Docker keeps an image a stopped
	 * container uses: the sandbox comes back on it (by digest) when its server starts again. */
	char holder[PATH_MAX];
	if (!named(s, hex, by_digest ? NULL : name) && pinned(s, hex, holder, sizeof(holder)))
		return al_err(err, EBUSY,
			      "image '%s' (sha256:%.12s) is kept for a sandbox that airlock serve keeps (%s): not "
			      "removed (destroy that sandbox first)",
			      name, hex, holder);
	if (!by_digest) {
		snprintf(rel, sizeof(rel), "names/%s", name);
		if (unlinkat(s->dirfd, rel, 0) < 0)
			return al_err_sys(err, errno, "remove the name '%s'", name);
	} else if (named(s, hex, NULL)) {
		return al_err(err, EBUSY, "image %s still has names: remove them first", name);
	}
	if (named(s, hex, NULL))
		return 0; /* another name keeps the content */
	r = drop_content(s, hex);
	return r < 0 ? al_err_sys(err, -r, "remove sha256:%s", hex) : 0;
}

/* tmp/<x>: an interrupted import (its lock free) or a removal that did not finish. */
static int gc_tmp(struct img_store *s, unsigned *freed)
{
	cleanup_close int tfd = openat(s->dirfd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = tfd < 0 ? NULL : fdopendir(dup(tfd));
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char rel[300];
		snprintf(rel, sizeof(rel), "%s/lock", de->d_name);
		int lfd = openat(tfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0) {
			close(lfd);
			continue; /* an import in progress */
		}
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/tmp/%s", s->path, de->d_name);
		if (unpack_rm_tree(path) == 0)
			(*freed)++;
		if (lfd >= 0)
			close(lfd);
	}
	if (d)
		closedir(d);
	return 0;
}

int img_gc(struct img_store *s, unsigned *freed, struct al_error *err)
{
	*freed = 0;
	gc_tmp(s, freed);
	cleanup_close int cfd = openat(s->dirfd, "sha256", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = cfd < 0 ? NULL : fdopendir(steal_fd(cfd));
	if (!d)
		return al_err_sys(err, errno, "%s/sha256", s->path);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 64 || named(s, de->d_name, NULL))
			continue;
		int lock = lock_content(s, de->d_name, LOCK_EX);
		if (lock == -EBUSY)
			continue; /* in use: never removed */
		char holder[PATH_MAX];
		if (pinned(s, de->d_name, holder, sizeof(holder))) {
			if (lock >= 0)
				close(lock);
			continue; /* kept for a sandbox airlock serve keeps */
		}
		if (drop_content(s, de->d_name) == 0)
			(*freed)++;
		if (lock >= 0)
			close(lock);
	}
	closedir(d);
	return 0;
}

/* ---- opening for a sandbox ---- */

/* The content's prepared /etc (etc.c), made now if content stored before it existed (or by an
 * older airlock) lacks it. Called with the content's lock held (LOCK_SH), so rm and gc leave the
 * content alone meanwhile. Built in a staging directory of its own (locked: gc leaves it alone)
 * and renamed into place in one step, so no sandbox ever sees a half-made tree; when two starts
 * race, the second rename fails (the directory is there) and its copy is dropped. */
static int ensure_etc(struct img_store *s, const char *hex, struct al_error *err)
{
	char rel[96];
	struct stat sb;
	snprintf(rel, sizeof(rel), "sha256/%s/" IMG_ETC_DIR, hex);
	if (fstatat(s->dirfd, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode))
		return 0;
	snprintf(rel, sizeof(rel), "sha256/%s/rootfs", hex);
	cleanup_close int rootfd = openat(s->dirfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return al_err_sys(err, errno, "sha256:%s: its rootfs", hex);
	struct store_stage st;
	int r = store_stage_begin(s, &st, err);
	r = r ?: store_etc_prepare(rootfd, st.fd, IMG_ETC_DIR, err);
	snprintf(rel, sizeof(rel), "sha256/%s/" IMG_ETC_DIR, hex);
	/* rename(2) moves a directory only if it may write the directory's ".." entry: without
	 * CAP_DAC_OVERRIDE the tree's top gets its owner's write bit for the move, and loses it after. */
	if (r == 0 && (fstatat(st.fd, IMG_ETC_DIR, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		       fchmodat(st.fd, IMG_ETC_DIR, (sb.st_mode & 07777) | 0200, 0) < 0))
		r = al_err_sys(err, errno, "sha256:%s: its prepared /etc", hex);
	if (r == 0 && renameat(st.fd, IMG_ETC_DIR, s->dirfd, rel) == 0) {
		if (fchmodat(s->dirfd, rel, sb.st_mode & 07777, 0) < 0)
			r = al_err_sys(err, errno, "sha256:%s: its prepared /etc", hex);
	} else if (r == 0 && errno != EEXIST && errno != ENOTEMPTY) {
		r = al_err_sys(err, errno, "sha256:%s: storing its prepared /etc", hex);
	}
	if (st.fd >= 0)
		store_stage_abort(&st);
	return r;
}

/* Appends the strings of a JSON array to a NULL-terminated vector (*n entries so far). */
static void add_strings(char **v, size_t *n, const json_t *arr)
{
	size_t i;
	const json_t *x;
	json_array_foreach(arr, i, x) {
		if (json_is_string(x))
			v[(*n)++] = strdup(json_string_value(x));
	}
}

static int ref_defaults(struct img_ref *ref, const char *meta, struct al_error *err)
{
	json_t *j = json_loads(meta, 0, NULL), *cfg = json_object_get(j, "config");
	json_t *env = json_object_get(cfg, "Env"), *ep = json_object_get(cfg, "Entrypoint"),
	       *cmd = json_object_get(cfg, "Cmd");
	size_t n = 0, k = 0;
	ref->env = calloc(json_array_size(env) + 1, sizeof(char *));
	ref->argv = calloc(json_array_size(ep) + json_array_size(cmd) + 1, sizeof(char *));
	if (ref->env && ref->argv) {
		add_strings(ref->env, &n, env);
		add_strings(ref->argv, &k, ep);
		add_strings(ref->argv, &k, cmd);
	}
	const char *wd = json_string_value(json_object_get(cfg, "WorkingDir"));
	ref->workdir = wd && *wd ? strdup(wd) : NULL;
	const char *user = json_string_value(json_object_get(cfg, "User"));
	ref->user = user && *user && strlen(user) < 256 ? strdup(user) : NULL;
	json_decref(j);
	return ref->env && ref->argv ? 0 : al_err(err, ENOMEM, "out of memory");
}

int img_open(struct img_store *s, const char *name, struct img_ref *ref, struct al_error *err)
{
	memset(ref, 0, sizeof(*ref));
	ref->lock_fd = -1;
	char hex[65];
	int r = resolve(s, name, hex, err);
	if (r < 0)
		return r;
	/* LOCK_SH for the sandbox's life: rm and gc (LOCK_EX, never waiting) leave it alone. If rm
	 * holds it now, the content is on its way out: refuse rather than wait. */
	ref->lock_fd = lock_content(s, hex, LOCK_SH);
	if (ref->lock_fd < 0)
		return al_err_sys(err, -ref->lock_fd, "image '%s': its lock", name);
	cleanup_free char *meta = NULL;
	r = resolve(s, name, hex, err) ?: read_meta(s, hex, &meta);
	r = r ?: ensure_etc(s, hex, err);
	if (r < 0) {
		img_ref_close(ref);
		return err && err->code ? r : al_err_sys(err, -r, "image '%s'", name);
	}
	snprintf(ref->digest, sizeof(ref->digest), "sha256:%s", hex);
	ref->name = strndup(name, img_ref_name_len(name));
	if (asprintf(&ref->rootfs, "%s/sha256/%s/rootfs", s->path, hex) < 0)
		ref->rootfs = NULL;
	if (asprintf(&ref->etc, "%s/sha256/%s/" IMG_ETC_DIR, s->path, hex) < 0)
		ref->etc = NULL;
	if (!ref->rootfs || !ref->etc || !ref->name) {
		img_ref_close(ref);
		return al_err(err, ENOMEM, "out of memory");
	}
	r = ref_defaults(ref, meta, err);
	if (r < 0)
		img_ref_close(ref);
	return r;
}

void img_ref_close(struct img_ref *ref)
{
	if (ref->lock_fd >= 0)
		close(ref->lock_fd);
	for (size_t i = 0; ref->env && ref->env[i]; i++)
		free(ref->env[i]);
	free(ref->env);
	for (size_t i = 0; ref->argv && ref->argv[i]; i++)
		free(ref->argv[i]);
	free(ref->argv);
	free(ref->name);
	free(ref->rootfs);
	free(ref->etc);
	free(ref->workdir);
	free(ref->user);
	memset(ref, 0, sizeof(*ref));
	ref->lock_fd = -1;
}
