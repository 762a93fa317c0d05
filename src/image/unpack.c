/* unpack.c — applies untrusted layer archives onto a directory with libarchive, and defends in depth.
 *
 * Theory. libarchive reads the tar (and its gzip, zstd, xz or bzip2 filter) and writes with
 * ARCHIVE_EXTRACT_SECURE_NODOTDOT | SECURE_SYMLINKS | SECURE_NOABSOLUTEPATHS. We do not rely on
 * those alone: every member's name is checked here (relative, no ".."), its parent must resolve
 * beneath the root without meeting a symlink (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), a
 * hard link's target likewise and must be a regular file; device nodes, fifos and sockets are
 * refused; set-user-id, set-group-id and sticky bits are removed; extended attributes (so file
 * capabilities) are never restored; the sum of the members' sizes (as their headers claim, so a
 * sparse 10 GB claim counts as 10 GB) is bounded before a byte is written. Every archive (an
 * oci-archive or docker save, then each layer) is read by a forked child that, when airlock runs
 * as root, first confines itself to the directory it fills (a private mount namespace rooted
 * there) and becomes IMG_UNPACK_ID — an id no host process uses and no sandbox maps — so a
 * libarchive bug can neither write as root nor reach the host.
 *
 * Owners. The unprivileged child cannot chown, so it only records each member's tar uid/gid (in
 * a memfd the parent made). When the child has exited, the parent — root — gives each recorded
 * name its owner in the sandboxes' id range: IMG_OWNER_BASE + id, an id past the range becoming
 * the range's overflow id (nobody), so no stored file is ever owned by a host id outside the
 * range. The records are untrusted like the tree: each name is checked again and reached beneath
 * the root without following a symlink (openat2), and the link itself is changed, never its
 * target. As an ordinary user nothing is chowned: every file stays the store owner's. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/imgint.h"
#include "image/tar.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fsutil.h"

#define WHITEOUT ".wh."
#define OPAQUE	 ".wh..wh..opq"

/* A member's name normalised into out ("" for the root), or refused (tar_norm_name). The code is
 * returned itself (not al_err's), so the static analyzer can see that out is set whenever 0 is. */
static int norm_name(const char *in, char *out, size_t size, struct al_error *err)
{
	const char *why = tar_norm_name(in, out, size);
	return why ? (void)al_err(err, EPERM, "member '%.200s': %s: refused", in, why), -EPERM : 0;
}

int unpack_check_name(const char *name, struct al_error *err)
{
	char buf[PATH_MAX];
	int r = norm_name(name, buf, sizeof(buf), err);
	return r < 0 ? r : *buf ? 0 : al_err(err, EINVAL, "an empty member name");
}

/* ---- the outer archive (oci-archive, docker save): regular files only ---- */

/* mkdir -p beneath destfd; destfd's tree holds only what we made (dirs and files, no links). */
static int mkdirs(int destfd, char *rel)
{
	for (char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		int r = mkdirat(destfd, rel, 0700);
		*s = '/';
		if (r < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static int copy_member(struct archive *a, int fd, struct al_error *err)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;
	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (pwrite(fd, buf, len, off) != (ssize_t)len)
			return al_err_sys(err, errno ? errno : EIO, "write");
	}
	if (r != ARCHIVE_EOF)
		return al_err(err, EBADMSG, "a truncated or corrupt archive: %s", archive_error_string(a));
	return 0;
}

int unpack_outer(int fd, int destfd, const struct img_limits *lim, struct al_error *err)
{
	cleanup_archive struct archive *a = tar_open(fd, EBADMSG, "the archive", err);
	if (!a)
		return err ? err->code : -EBADMSG;
	struct archive_entry *e;
	uint64_t total = 0;
	char rel[PATH_MAX];
	int r = 0, h;
	while (r == 0 && (h = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		r = norm_name(archive_entry_pathname(e), rel, sizeof(rel), err);
		if (r < 0 || !*rel || archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e))
			continue; /* directories are made as needed; links are never needed here */
		uint64_t size = (uint64_t)archive_entry_size(e);
		if (size > lim->max_bytes - total)
			return al_err(err, EFBIG, "member '%s' (%llu bytes) goes past the %llu-byte limit: refused",
				      rel, (unsigned long long)size, (unsigned long long)lim->max_bytes);
		total += size;
		r = mkdirs(destfd, rel);
		/* O_EXCL | O_NOFOLLOW: a repeated name is refused, nothing is written through a link. */
		cleanup_close int out =
			r < 0 ? -1 : openat(destfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			return al_err_sys(err, r < 0 ? -r : errno, "member '%s'", rel);
		r = copy_member(a, out, err);
	}
	if (r == 0 && h != ARCHIVE_EOF)
		r = al_err(err, EBADMSG, "a truncated or corrupt archive: %s", archive_error_string(a));
	return r;
}

/* ---- removal (whiteouts, and the store's rm): never following a link nor crossing a mount ---- */

static int make_writable(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	/* Our own read-only trees have their write bits stripped: give them back to empty them.
	 * Only real directories (FTW_PHYS: a link is reported as one, never followed). */
	if (type == FTW_D && (st->st_mode & 0700) != 0700)
		(void)chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

int unpack_rm_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	(void)nftw(path, make_writable, 16, FTW_PHYS | FTW_MOUNT);
	return al_remove_tree(path);
}

/* Opens a directory beneath the root (".", the child's cwd) without meeting a symlink.
 * -ENOENT when it does not exist yet; -ELOOP/-EXDEV when a link is on the way. */
static int open_dir_beneath(const char *rel)
{
	return oci_open_beneath(AT_FDCWD, *rel ? rel : ".", O_PATH | O_DIRECTORY);
}

/* rel's parent as an O_PATH descriptor (or -ENOENT); *base points at rel's last part. */
static int open_parent(char *rel, const char **base)
{
	char *slash = strrchr(rel, '/');
	if (!slash) {
		*base = rel;
		return open_dir_beneath("");
	}
	*slash = 0;
	int fd = open_dir_beneath(rel);
	*slash = '/';
	*base = slash + 1;
	return fd;
}

/* Empties the directory dir (relative to the root, our cwd; "" is the root). */
static int clear_dir(const char *dir)
{
	DIR *d = opendir(*dir ? dir : ".");
	struct dirent *de;
	char path[PATH_MAX];
	int r = d ? 0 : -errno;
	while (d && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		int n = snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", de->d_name);
		int one = n < 0 || (size_t)n >= sizeof(path) ? -ENAMETOOLONG : unpack_rm_tree(path);
		if (one < 0)
			r = one; /* go on: remove what can be removed, report the last failure */
	}
	if (d)
		closedir(d);
	return r;
}

static int whiteout(char *rel, struct al_error *err)
{
	const char *base = rel;
	int pfd = open_parent(rel, &base);
	if (pfd == -ENOENT)
		return 0; /* nothing below to hide */
	if (pfd < 0)
		return al_err_sys(err, -pfd, "whiteout '%s': its parent is not a directory beneath the root", rel);
	close(pfd);
	/* The parent is a real directory beneath the root (no link on the way): paths from the
	 * root's cwd reach it, and only this child writes the tree. */
	size_t blen = strlen(base);
	if (blen < strlen(WHITEOUT) || strncmp(base, WHITEOUT, strlen(WHITEOUT)) != 0)
		return al_err(err, EINVAL, "'%s' is not a whiteout", rel);
	const char *victim = base + strlen(WHITEOUT);
	bool names_nothing = blen == strlen(WHITEOUT) || strcmp(victim, ".") == 0 || strcmp(victim, "..") == 0;
	size_t plen = (size_t)(base - rel);
	char path[PATH_MAX];
	if (strcmp(base, OPAQUE) == 0) {
		snprintf(path, sizeof(path), "%.*s", (int)(plen ? plen - 1 : 0), rel);
		int r = clear_dir(path);
		return r < 0 ? al_err_sys(err, -r, "opaque directory '%s'", rel) : 0;
	}
	if (names_nothing)
		return al_err(err, EPERM, "whiteout '%s' names no file: refused", rel);
	snprintf(path, sizeof(path), "%.*s%s", (int)plen, rel, victim);
	int r = unpack_rm_tree(path);
	return r < 0 ? al_err_sys(err, -r, "whiteout '%s'", rel) : 0;
}

/* ---- one layer ---- */

/* One owner record: the header, then len bytes of the member's normalised name (no NUL). */
struct own_rec {
	uint32_t uid, gid, len;
};

struct budget {
	uint64_t bytes, entries;
	const struct img_limits *lim;
	unsigned setid_dropped;
	int owners_fd; /* where each written member's tar owner is recorded (root only), or -1 */
};

/* Pass 1's verdict on one member, before anything of its layer is written. */
static int check_member(struct archive_entry *e, const char *rel, struct budget *b, struct al_error *err)
{
	mode_t type = archive_entry_filetype(e);
	const char *link = archive_entry_hardlink(e);
	if (++b->entries > b->lim->max_entries)
		return al_err(err, E2BIG, "more than %llu members: refused", (unsigned long long)b->lim->max_entries);
	/* Each member's owner record (as root) counts too: the records are one file of the unpack,
	 * under the same size limit (RLIMIT_FSIZE) as any other. */
	uint64_t rec = b->owners_fd >= 0 ? sizeof(struct own_rec) + strlen(rel) : 0;
	if (rec > b->lim->max_bytes - b->bytes)
		return al_err(err, EFBIG,
			      "member '%s': the members' owner records go past the image limit of %llu "
			      "bytes: refused",
			      rel, (unsigned long long)b->lim->max_bytes);
	b->bytes += rec;
	if (link)
		return unpack_check_name(link, err) < 0
			       ? al_err(err, EPERM, "hard link '%s' -> '%s': refused", rel, link)
			       : 0;
	if (type == AE_IFCHR || type == AE_IFBLK)
		return al_err(err, EPERM, "member '%s': a device node: refused", rel);
	if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
		return al_err(err, EPERM, "member '%s': a fifo, socket or unknown type (%o): refused", rel,
			      (unsigned)type);
	uint64_t size = type == AE_IFREG ? (uint64_t)archive_entry_size(e) : 0;
	if (size > b->lim->max_bytes - b->bytes)
		return al_err(err, EFBIG, "member '%s' claims %llu bytes: past the image limit of %llu bytes: refused",
			      rel, (unsigned long long)size, (unsigned long long)b->lim->max_bytes);
	b->bytes += size;
	return 0;
}

static bool is_whiteout(const char *rel)
{
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	return strncmp(base, WHITEOUT, strlen(WHITEOUT)) == 0;
}

/* Pass 1: check every member, then apply the whiteouts (they hide only lower layers). */
static int layer_pass1(int fd, struct budget *b, struct al_error *err)
{
	cleanup_archive struct archive *a = tar_open(fd, EBADMSG, "a layer", err);
	if (!a)
		return err ? err->code : -EBADMSG;
	struct archive_entry *e;
	char rel[PATH_MAX];
	int r = 0, h;
	while (r == 0 && (h = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		r = norm_name(archive_entry_pathname(e), rel, sizeof(rel), err);
		r = r ?: check_member(e, rel, b, err);
		if (r == 0 && is_whiteout(rel))
			r = whiteout(rel, err);
	}
	if (r == 0 && h != ARCHIVE_EOF)
		r = al_err(err, EBADMSG, "a truncated or corrupt layer: %s", archive_error_string(a));
	return r;
}

/* Our own checks of where a member lands, before libarchive writes it. */
static int check_place(struct archive_entry *e, char *rel, struct al_error *err)
{
	const char *base;
	int pfd = open_parent(rel, &base);
	if (pfd < 0 && pfd != -ENOENT)
		return al_err(err, EPERM, "member '%s': its parent is a symlink or leaves the root (%s): refused", rel,
			      strerror(-pfd));
	if (pfd >= 0)
		close(pfd);
	const char *link = archive_entry_hardlink(e);
	if (!link)
		return 0;
	char target[PATH_MAX];
	int r = norm_name(link, target, sizeof(target), err);
	cleanup_close int tfd = r < 0 ? -1 : oci_open_beneath(AT_FDCWD, target, O_PATH | O_NOFOLLOW);
	struct stat st;
	if (tfd < 0 || fstat(tfd, &st) < 0 || !S_ISREG(st.st_mode))
		return al_err(err, EPERM, "hard link '%s' -> '%s': not a regular file beneath the root: refused", rel,
			      link);
	archive_entry_set_hardlink(e, target);
	return 0;
}

/* Modes as stored: never set-id nor sticky on files; directories stay writable by us until the
 * end (a later layer may add to them); owners and xattrs are never restored (flags below). */
static void tame(struct archive_entry *e, struct budget *b)
{
	mode_t perm = archive_entry_perm(e);
	if (perm & (S_ISUID | S_ISGID))
		b->setid_dropped++;
	perm &= archive_entry_filetype(e) == AE_IFDIR ? (01777 | 0700) : 0777;
	if (archive_entry_filetype(e) == AE_IFDIR)
		perm |= 0700;
	archive_entry_set_perm(e, perm);
	archive_entry_xattr_clear(e);
	archive_entry_acl_clear(e);
	archive_entry_set_fflags(e, 0, 0);
}

static int write_member(struct archive *a, struct archive *w, struct archive_entry *e, struct al_error *err)
{
	if (archive_write_header(w, e) != ARCHIVE_OK)
		return al_err(err, EPERM, "member '%s': %s: refused", archive_entry_pathname(e),
			      archive_error_string(w));
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;
	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
		if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK)
			return al_err(err, EIO, "member '%s': %s", archive_entry_pathname(e), archive_error_string(w));
	if (r != ARCHIVE_EOF)
		return al_err(err, EBADMSG, "a truncated or corrupt layer: %s", archive_error_string(a));
	return archive_write_finish_entry(w) == ARCHIVE_OK
		       ? 0
		       : al_err(err, EIO, "member '%s': %s", archive_entry_pathname(e), archive_error_string(w));
}

/* An id of the image as its stored file's host owner (see IMG_OWNER_BASE). */
static uint32_t owner_id(la_int64_t id)
{
	return IMG_OWNER_BASE + (id >= 0 && id < (la_int64_t)IMG_OWNER_IDS ? (uint32_t)id : IMG_OWNER_OVERFLOW);
}

static int record_owner(const struct budget *b, const char *rel, struct archive_entry *e, struct al_error *err)
{
	if (b->owners_fd < 0)
		return 0;
	struct own_rec h = {owner_id(archive_entry_uid(e)), owner_id(archive_entry_gid(e)), (uint32_t)strlen(rel)};
	char buf[sizeof(h) + PATH_MAX]; /* rel is shorter than PATH_MAX (norm_name) */
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), rel, h.len);
	ssize_t n = write(b->owners_fd, buf, sizeof(h) + h.len);
	return n == (ssize_t)(sizeof(h) + h.len) ? 0 : al_err_sys(err, n < 0 ? errno : EIO, "record the owners");
}

static int layer_pass2(int fd, struct budget *b, struct al_error *err)
{
	cleanup_archive struct archive *a = tar_open(fd, EBADMSG, "a layer", err);
	struct archive *w = archive_write_disk_new();
	if (!a || !w) {
		if (w)
			archive_write_free(w);
		return a ? al_err(err, ENOMEM, "out of memory") : (err ? err->code : -EBADMSG);
	}
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
						  ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
						  ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	struct archive_entry *e;
	char rel[PATH_MAX];
	int r = 0, h;
	while (r == 0 && (h = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		r = norm_name(archive_entry_pathname(e), rel, sizeof(rel), err);
		if (r < 0)
			break;
		if (!*rel)
			r = record_owner(b, rel, e, err); /* the root's own owner; nothing to write */
		if (!*rel || is_whiteout(rel))
			continue;
		archive_entry_set_pathname(e, rel);
		r = check_place(e, rel, err);
		tame(e, b);
		r = r ?: write_member(a, w, e, err);
		r = r ?: record_owner(b, rel, e, err);
	}
	if (r == 0 && h != ARCHIVE_EOF)
		r = al_err(err, EBADMSG, "a truncated or corrupt layer: %s", archive_error_string(a));
	archive_write_free(w);
	return r;
}

static int strip_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	/* FTW_PHYS: links are reported as such and skipped, never followed. */
	if ((type == FTW_F || type == FTW_D) && chmod(path, st->st_mode & 01555) < 0)
		return -errno;
	return 0;
}

/* The end state: no write bit anywhere (the store is read-only; rm gives them back). */
static int strip_writes(void)
{
	int r = nftw(".", strip_one, 16, FTW_PHYS | FTW_MOUNT);
	return r < 0 ? -errno : r;
}

/* As root, the child first sees nothing but the tree it fills: a private mount namespace whose
 * root is the staging rootfs (pivot_root, the old root detached). So even a libarchive bug that
 * runs code as the unpack id cannot reach the store's other images (owned by that id too) nor
 * anything else on the host. */
static int confine(const char *rootfs)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(rootfs, rootfs, NULL, MS_BIND | MS_REC, NULL) < 0 || chdir(rootfs) < 0 ||
	    syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

/* What a confined child does in its directory (its cwd): fills it from fds. */
struct job {
	const int *fds;
	size_t n;
	const struct img_limits *lim;
	bool outer;    /* the outer archive (fds[0]) into regular files; else the layers */
	int owners_fd; /* the layers' owner records (root), or -1 */
};

static int run_job(const struct job *j, struct al_error *e)
{
	if (j->outer) {
		int dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int r = dfd < 0 ? al_err_sys(e, errno, "open the staging directory")
				: unpack_outer(j->fds[0], dfd, j->lim, e);
		if (dfd >= 0)
			close(dfd);
		return r;
	}
	struct budget b = {.lim = j->lim, .owners_fd = j->owners_fd};
	int r = 0;
	for (size_t i = 0; r == 0 && i < j->n; i++) {
		r = layer_pass1(j->fds[i], &b, e) ?: layer_pass2(j->fds[i], &b, e);
		if (r < 0)
			al_err_prefix(e, "layer %zu of %zu", i + 1, j->n);
	}
	if (r == 0 && (r = strip_writes()) < 0)
		al_err_sys(e, -r, "make the tree read-only");
	return r;
}

/* The child: confine itself to dir, drop to the unpack id, do the job. Never returns. */
static void child(const struct job *j, const char *dir, uid_t drop, int wfd)
{
	struct al_error e = {0};
	int r = 0;
	bool root = getuid() == 0;
	(void)al_utf8_names(); /* before the chroot: this process's, until it exits */
	if (root && (r = confine(dir)) < 0)
		al_err_sys(&e, -r, "confine the unpacking child to %s", dir);
	if (r == 0 && root &&
	    (setgroups(0, NULL) < 0 || setresgid(drop, drop, drop) < 0 || setresuid(drop, drop, drop) < 0))
		r = al_err_sys(&e, errno, "drop to the unpack id %u", (unsigned)drop);
	if (r == 0 && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || (!root && chdir(dir) < 0)))
		r = al_err_sys(&e, errno, "enter %s", dir);
	/* A backstop for the size budget: no single file can grow past the image limit. */
	struct rlimit fsz = {j->lim->max_bytes + 1, j->lim->max_bytes + 1};
	(void)setrlimit(RLIMIT_FSIZE, &fsz);
	umask(022);
	if (r == 0)
		r = run_job(j, &e);
	if (write(wfd, &e, sizeof(e)) != (ssize_t)sizeof(e))
		_exit(2);
	_exit(r < 0 ? 1 : 0);
}

static int in_child(const struct job *j, const char *dir, uid_t drop_uid, struct al_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		al_close_pair(p);
		return al_err_sys(err, errno, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		child(j, dir, drop_uid, p[1]);
	}
	close(p[1]);
	struct al_error ce = {0};
	ssize_t got = read(p[0], &ce, sizeof(ce));
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (got == (ssize_t)sizeof(ce) && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (got == (ssize_t)sizeof(ce) && ce.code < 0) {
		ce.msg[sizeof(ce.msg) - 1] = 0;
		return al_err(err, -ce.code, "%s", ce.msg);
	}
	return al_err(err, EIO, "the unpacking child failed (status %#x)", (unsigned)st);
}

/* ---- owners, given by the parent (root) once the child has exited ---- */

/* The last parent directory reached: a layer's members come directory by directory, so one
 * openat2 serves many. Safe to keep: nothing changes the tree while its owners are given (the
 * child has exited). fd holds the open's result, an error included, for path. */
struct own_dir {
	int fd;
	char path[PATH_MAX];
};

/* Gives rel (beneath rootfd, "" the root itself) its owner. A name a later layer removed, or
 * whose parent it replaced by a link or a file, is not there to own: skipped. */
static int own_one(int rootfd, struct own_dir *d, char *rel, uint32_t uid, uint32_t gid)
{
	if (!*rel)
		return fchown(rootfd, uid, gid) < 0 ? -errno : 0;
	char *slash = strrchr(rel, '/');
	int dirfd = rootfd;
	if (slash) {
		*slash = 0;
		if (strcmp(d->path, rel) != 0) {
			if (d->fd >= 0)
				close(d->fd);
			d->fd = oci_open_beneath(rootfd, rel, O_PATH | O_DIRECTORY);
			snprintf(d->path, sizeof(d->path), "%s", rel);
		}
		*slash = '/';
		if (d->fd < 0)
			return d->fd == -ENOENT || d->fd == -ENOTDIR || d->fd == -ELOOP || d->fd == -EXDEV ? 0 : d->fd;
		dirfd = d->fd;
	}
	/* AT_SYMLINK_NOFOLLOW: a link is itself owned, its target never touched. */
	if (fchownat(dirfd, slash ? slash + 1 : rel, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

/* Replays the records in buf (len bytes) in order (a later layer's owner wins). They are as
 * untrusted as the tree: lengths bounded, names checked again, ids clamped into the range again. */
static int replay_owners(const char *buf, size_t len, int rootfd, struct al_error *err)
{
	struct own_dir d = {.fd = -1, .path = "/"}; /* "/": no parent's name */
	char rel[PATH_MAX], raw[PATH_MAX];
	struct own_rec h;
	int r = 0;
	for (size_t off = 0; r == 0 && off < len; off += sizeof(h) + h.len) {
		if (len - off >= sizeof(h))
			memcpy(&h, buf + off, sizeof(h));
		if (len - off < sizeof(h) || h.len >= sizeof(raw) || len - off - sizeof(h) < h.len) {
			r = al_err(err, EBADMSG, "the owner records are corrupt");
			break;
		}
		memcpy(raw, buf + off + sizeof(h), h.len);
		raw[h.len] = 0;
		if (norm_name(raw, rel, sizeof(rel), err) < 0) {
			r = al_err(err, EBADMSG, "the owner records name '%.64s': refused", raw);
			break;
		}
		r = own_one(rootfd, &d, rel, owner_id((la_int64_t)h.uid - IMG_OWNER_BASE),
			    owner_id((la_int64_t)h.gid - IMG_OWNER_BASE));
		if (r < 0)
			r = al_err_sys(err, -r, "give '%s' its owner", rel);
	}
	if (d.fd >= 0)
		close(d.fd);
	return r;
}

static int apply_owners(int recfd, const char *rootfs, struct al_error *err)
{
	cleanup_close int rootfd = open(rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (rootfd < 0 || fstat(recfd, &st) < 0)
		return al_err_sys(err, errno, "%s", rootfs);
	if (st.st_size == 0)
		return 0;
	void *buf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, recfd, 0);
	if (buf == MAP_FAILED)
		return al_err_sys(err, errno, "read the owner records");
	int r = replay_owners(buf, (size_t)st.st_size, rootfd, err);
	munmap(buf, (size_t)st.st_size);
	return r;
}

int unpack_layers(const int *fds, size_t n, const char *rootfs, const struct img_limits *lim, uid_t drop_uid,
		  struct al_error *err)
{
	/* Only root can give files away; an ordinary user's store keeps every file its own. */
	cleanup_close int rec = geteuid() == 0 ? memfd_create("airlock-owners", MFD_CLOEXEC) : -1;
	if (geteuid() == 0 && rec < 0)
		return al_err_sys(err, errno, "memfd_create");
	struct job j = {.fds = fds, .n = n, .lim = lim, .owners_fd = rec};
	int r = in_child(&j, rootfs, drop_uid, err);
	return r < 0 || rec < 0 ? r : apply_owners(rec, rootfs, err);
}

int unpack_outer_confined(int fd, const char *dir, const struct img_limits *lim, uid_t drop_uid, struct al_error *err)
{
	struct job j = {.fds = &fd, .n = 1, .lim = lim, .outer = true, .owners_fd = -1};
	return in_child(&j, dir, drop_uid, err);
}
