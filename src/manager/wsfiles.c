/* wsfiles.c — reading, writing and listing beneath a workspace descriptor (see wsfiles.h). */
#include "wsfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "manager/wsint.h"
#include "util/cleanup.h"
#include "policy/policy.h"
#include "util/error.h"
#include "util/openat2.h"

#define WS_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)

void ws_become(uid_t uid, gid_t gid, struct ws_cred *saved)
{
	/* The raw calls: glibc's would do the same, per thread; they return the previous ids. */
	saved->gid = (gid_t)syscall(SYS_setfsgid, gid);
	saved->uid = (uid_t)syscall(SYS_setfsuid, uid);
}

void ws_restore(const struct ws_cred *saved)
{
	syscall(SYS_setfsuid, saved->uid);
	syscall(SYS_setfsgid, saved->gid);
}

static int beneath(int dir, const char *path, int flags, mode_t mode)
{
	return al_openat2(dir, path, flags, mode, WS_RESOLVE);
}

/* Client paths are relative to the workspace; "/workspace/x" and "/x" mean "x" too. */
static const char *relative(const char *path)
{
	if (!path)
		return "";
	if (strncmp(path, AL_WORKSPACE "/", sizeof(AL_WORKSPACE)) == 0)
		path += sizeof(AL_WORKSPACE);
	else if (strcmp(path, AL_WORKSPACE) == 0)
		path += sizeof(AL_WORKSPACE) - 1;
	while (*path == '/')
		path++;
	return path;
}

static int path_error(struct al_error *err, int e, const char *path)
{
	if (e == EXDEV || e == ELOOP)
		return al_err(err, EACCES, "path escapes the workspace: %s", path);
	if (e == ENOENT)
		return al_err(err, ENOENT, "no such file in the workspace: %s", path);
	return al_err_sys(err, e, "%s", path);
}

static int check_path(const char *path, struct al_error *err)
{
	if (!path || strlen(path) > 4096 || memchr(path, 0, strlen(path) + 1) != path + strlen(path))
		return al_err(err, EINVAL, "bad path");
	return 0;
}

/* Refuses, before anything is created, a path that is not a plain relative name: ".." anywhere
 * (a refused "d1/d2/../../../x" must not leave d1/d2 behind), an empty leaf, "." as the leaf. */
static int check_names(const char *rel, const char *shown, struct al_error *err)
{
	const char *leaf = strrchr(rel, '/');
	leaf = leaf ? leaf + 1 : rel;
	if (!*leaf || strcmp(leaf, ".") == 0)
		return al_err(err, EINVAL, "not a file name: %s", shown);
	for (const char *p = rel; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return al_err(err, EACCES, "path escapes the workspace: %s", shown);
		p += n;
		p += *p == '/';
	}
	return 0;
}

/* One directory beneath dir, made if missing with mode 0755 whatever the server's umask (the
 * sandbox user must be able to enter it; umask 077 would make it 0700), owned by the sandbox's
 * user. The mode and owner are set through the descriptor, never by name: code running in the
 * sandbox could swap the new directory for a symlink to a host file of the server's user. */
static int make_dir(int dir, const char *part, uid_t uid, gid_t gid, const char *shown, struct al_error *err)
{
	bool made = mkdirat(dir, part, 0755) == 0;
	if (!made && errno != EEXIST)
		return path_error(err, errno, shown);
	/* O_PATH for one that existed (it may deny reading); fchmod needs a real descriptor. */
	int next = beneath(dir, part, (made ? O_RDONLY : O_PATH) | O_DIRECTORY, 0);
	if (next < 0)
		return next == -ENOTDIR ? al_err(err, ENOTDIR, "not a directory on the way to %s", shown)
					: path_error(err, -next, shown);
	if (made && (fchmod(next, 0755) < 0 || fchown(next, uid, gid) < 0)) {
		int e = errno;
		close(next);
		return al_err_sys(err, e, "giving %s to the sandbox user", shown);
	}
	return next;
}

/* Opens (creating as needed) the parent directory of rel (checked by check_names), beneath ws. */
static int open_parent(int ws, char *rel, uid_t uid, gid_t gid, const char **leaf, const char *shown,
		       struct al_error *err)
{
	int dir = dup(ws);
	if (dir < 0)
		return al_err_sys(err, errno, "dup");
	char *part = rel, *slash;
	while ((slash = strchr(part, '/'))) {
		*slash = 0;
		if (*part && strcmp(part, ".") != 0) {
			int next = make_dir(dir, part, uid, gid, shown, err);
			close(dir);
			if (next < 0)
				return next;
			dir = next;
		}
		part = slash + 1;
	}
	*leaf = part;
	return dir;
}

static int not_regular(struct al_error *err, const char *shown)
{
	return al_err(err, EINVAL, "not a regular file: %s (a FIFO, socket, device, directory or symlink is refused)",
		      shown);
}

/* What is already at the leaf, checked with the rules a write has always had, and never changed:
 * *mode is its mode (kept by its replacement), or 0644 when there is none. It is opened for writing
 * (not truncated) so that the kernel applies them: O_NONBLOCK makes a FIFO without a reader fail with
 * ENXIO (and one with a reader open at once), O_NOFOLLOW refuses a symlink, a file the sandbox user
 * may not write is EACCES, and anything that is not a regular file is refused after fstat. */
static int check_leaf(int dir, const char *leaf, mode_t *mode, const char *shown, struct al_error *err)
{
	*mode = 0644;
	cleanup_close int fd = beneath(dir, leaf, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd == -ENXIO || fd == -ELOOP || fd == -EISDIR || fd == -EOPNOTSUPP || fd == -ENODEV)
		return not_regular(err, shown);
	if (fd < 0)
		return path_error(err, -fd, shown);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return not_regular(err, shown);
	*mode = st.st_mode & 0777; /* never a set-id bit the sandbox set */
	return 0;
}

/* A new temporary file beside the leaf, named in *name: unpredictable (the sandbox cannot plant
 * something there in advance), made with O_CREAT | O_EXCL | O_NOFOLLOW beneath dir, so it is always a
 * new regular file of ours, whatever the sandbox put in the directory; given to the sandbox user. */
int ws_temp_name(char name[static 40], const char *what, struct al_error *err)
{
	uint8_t rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_err_sys(err, errno, "getrandom");
	int n = snprintf(name, 40, ".airlock-%s-", what);
	for (size_t i = 0; i < sizeof(rnd) && n > 0 && n < 40; i++)
		n += snprintf(name + n, 40 - (size_t)n, "%02x", rnd[i]);
	return 0;
}

static int open_temp(int dir, char name[static 40], uid_t uid, gid_t gid, const char *shown, struct al_error *err)
{
	for (int tries = 0; tries < 16; tries++) {
		int r = ws_temp_name(name, "write", err);
		if (r < 0)
			return r;
		int fd = beneath(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0600);
		if (fd == -EEXIST)
			continue;
		if (fd < 0)
			return fd == -ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
					     : path_error(err, -fd, shown);
		if (fchown(fd, uid, gid) < 0) {
			int e = errno;
			close(fd);
			unlinkat(dir, name, 0);
			return al_err_sys(err, e, "giving %s to the sandbox user", shown);
		}
		return fd;
	}
	return al_err(err, EEXIST, "no free temporary name beside %s", shown);
}

static int write_all(int fd, const char *p, size_t len, mode_t mode, const char *shown, struct al_error *err)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
					       : al_err_sys(err, errno, "writing %s", shown);
		p += w;
		len -= (size_t)w;
	}
	if (fchmod(fd, mode) < 0)
		return al_err_sys(err, errno, "setting the mode of %s", shown);
	if (fsync(fd) < 0)
		return errno == ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
				       : al_err_sys(err, errno, "syncing %s", shown);
	return 0;
}

/* The directory entry made durable too, where it can be: a directory the sandbox made unreadable
 * cannot be opened to sync, and the file is complete and in place either way. */
static void sync_dir(int dir)
{
	cleanup_close int fd = beneath(dir, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd >= 0)
		(void)fsync(fd);
}

/* The checked path's parent directory, made as needed (open_parent); *rel (free it) holds *leaf. */
static int checked_parent(int ws, const char *path, uid_t uid, gid_t gid, char **rel, const char **leaf,
			  struct al_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	if (!(*rel = strdup(relative(path))))
		return al_err(err, ENOMEM, "out of memory");
	if ((r = check_names(*rel, path, err)) < 0)
		return r;
	*leaf = "";
	return open_parent(ws, *rel, uid, gid, leaf, path, err);
}

static int place(int dir, const char *tmp, const char *leaf, int r, const char *path, struct al_error *err);

/* All or nothing: the bytes go to a temporary file beside the leaf, synced, then renamed over it, so
 * a write refused half way (the --disk limit, EIO) leaves the old file as it was, or no file, and no
 * partial file filling the workspace. renameat never follows a link: a symlink or FIFO the sandbox
 * swaps in at the leaf after check_leaf is replaced, not written through; a directory is refused. */
int ws_write(int ws, const char *path, const void *data, size_t len, uid_t uid, gid_t gid, struct al_error *err)
{
	if (len > WS_MAX_FILE)
		return al_err(err, EFBIG, "file too big: %zu bytes (at most %u)", len, WS_MAX_FILE);
	cleanup_free char *rel = NULL;
	const char *leaf = "";
	cleanup_close int dir = checked_parent(ws, path, uid, gid, &rel, &leaf, err);
	if (dir < 0)
		return dir;
	mode_t mode;
	int r = check_leaf(dir, leaf, &mode, path, err);
	if (r < 0)
		return r;
	char tmp[40];
	cleanup_close int fd = open_temp(dir, tmp, uid, gid, path, err);
	if (fd < 0)
		return fd;
	r = write_all(fd, data, len, mode, path, err);
	return place(dir, tmp, leaf, r, path, err);
}

/* Renames the complete temporary file tmp over leaf (r: how writing it went), or removes it. */
static int place(int dir, const char *tmp, const char *leaf, int r, const char *path, struct al_error *err)
{
	if (r == 0 && renameat(dir, tmp, dir, leaf) < 0)
		r = errno == EISDIR || errno == ENOTDIR || errno == EEXIST || errno == ENOTEMPTY
			    ? not_regular(err, path)
			    : al_err_sys(err, errno, "replacing %s", path);
	if (r < 0) {
		(void)unlinkat(dir, tmp, 0); /* the entry, never what it may point to */
		return r;
	}
	sync_dir(dir);
	return 0;
}

int ws_spool(int ws, uid_t uid, gid_t gid, struct al_error *err)
{
	/* O_TMPFILE: a file without a name, so the sandbox cannot see or change it while it fills, and
	 * nothing is left of it if the upload fails or the server dies; its pages count against the
	 * workspace's size limit like any file's. */
	int fd = beneath(ws, ".", O_TMPFILE | O_RDWR, 0600);
	if (fd == -EOPNOTSUPP || fd == -EISDIR)
		return al_err(err, ENOTSUP, "this workspace's file system cannot hold a streamed upload");
	if (fd < 0)
		return fd == -ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
				     : path_error(err, -fd, "/");
	if (fchown(fd, uid, gid) < 0) {
		int e = errno;
		close(fd);
		return al_err_sys(err, e, "giving an upload to the sandbox user");
	}
	return fd;
}

/* Links the unnamed spool as a new temporary name beside the leaf (the kernel's linkat of an
 * O_TMPFILE through /proc/self/fd: our own descriptor, never a path the sandbox controls; the
 * target is one fresh component beneath dir, AT_SYMLINK_FOLLOW only dereferences that magic link). */
static int link_spool(int dir, int spool, char tmp[static 40], const char *shown, struct al_error *err)
{
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", spool);
	for (int tries = 0; tries < 16; tries++) {
		int r = ws_temp_name(tmp, "write", err);
		if (r < 0)
			return r;
		if (linkat(AT_FDCWD, self, dir, tmp, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno == EEXIST)
			continue;
		if (errno == EXDEV)
			return al_err(err, EXDEV, "%s: not on the workspace's file system (a mount point)", shown);
		return errno == ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
				       : path_error(err, errno, shown);
	}
	return al_err(err, EEXIST, "no free temporary name beside %s", shown);
}

int ws_commit(int ws, const char *path, int spool, uid_t uid, gid_t gid, struct al_error *err)
{
	cleanup_free char *rel = NULL;
	const char *leaf = "";
	cleanup_close int dir = checked_parent(ws, path, uid, gid, &rel, &leaf, err);
	if (dir < 0)
		return dir;
	mode_t mode;
	int r = check_leaf(dir, leaf, &mode, path, err);
	if (r < 0)
		return r;
	if (fchmod(spool, mode) < 0)
		return al_err_sys(err, errno, "setting the mode of %s", path);
	if (fsync(spool) < 0)
		return errno == ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
				       : al_err_sys(err, errno, "syncing %s", path);
	char tmp[40];
	r = link_spool(dir, spool, tmp, path, err);
	return r < 0 ? r : place(dir, tmp, leaf, 0, path, err);
}

int ws_check_write_path(const char *path, struct al_error *err)
{
	int r = check_path(path, err);
	return r < 0 ? r : check_names(relative(path), path, err);
}

int ws_beneath(int dir, const char *path, int flags, mode_t mode)
{
	return beneath(dir, path, flags, mode);
}

const char *ws_relative(const char *path)
{
	return relative(path);
}

int ws_path_error(struct al_error *err, int e, const char *path)
{
	return path_error(err, e, path);
}

int ws_checked_parent(int ws, const char *path, uid_t uid, gid_t gid, char **rel, const char **leaf,
		      struct al_error *err)
{
	return checked_parent(ws, path, uid, gid, rel, leaf, err);
}

int ws_make_dir(int dir, const char *part, uid_t uid, gid_t gid, const char *shown, struct al_error *err)
{
	return make_dir(dir, part, uid, gid, shown, err);
}

static int open_file(int ws, const char *path, int *fd_out, size_t *size, size_t max, struct al_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	const char *rel = relative(path);
	/* O_NONBLOCK: a FIFO opens at once (and is then refused), instead of waiting for a writer. */
	cleanup_close int fd = beneath(ws, *rel ? rel : ".", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd == -ELOOP)
		return al_err(err, EINVAL, "not a regular file: %s (a symlink)", path);
	/* A socket (and a device without a driver) cannot be opened at all: ENXIO, not a server fault. */
	if (fd == -ENXIO || fd == -ENODEV || fd == -EOPNOTSUPP)
		return al_err(err, EINVAL, "not a regular file: %s (a socket or device)", path);
	if (fd < 0)
		return path_error(err, -fd, path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return al_err(err, EISDIR, "not a regular file: %s", path);
	if ((uint64_t)st.st_size > max)
		return al_err(err, EFBIG, "file too big: %lld bytes (at most %zu)", (long long)st.st_size, max);
	*size = (size_t)st.st_size;
	*fd_out = steal_fd(fd);
	return 0;
}

/* Streamed from the descriptor in bounded pieces: any size (the workspace's limit bounds it). */
int ws_open(int ws, const char *path, int *fd_out, size_t *size, struct al_error *err)
{
	return open_file(ws, path, fd_out, size, SIZE_MAX, err);
}

int ws_read(int ws, const char *path, char **data, size_t *len, struct al_error *err)
{
	size_t size = 0;
	cleanup_close int fd = -1;
	int r = open_file(ws, path, &fd, &size, WS_MAX_FILE, err); /* in memory: capped */
	if (r < 0)
		return r;
	char *buf = malloc(size + 1);
	if (!buf)
		return al_err(err, ENOMEM, "out of memory");
	size_t got = 0;
	while (got <= size) { /* the file may change while we read: stop at the cap */
		ssize_t n = read(fd, buf + got, size + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return al_err_sys(err, errno, "reading %s", path);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got > size) {
		free(buf);
		return al_err(err, EFBIG, "file grew while being read: %s", path);
	}
	buf[got] = 0;
	*data = buf;
	*len = got;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct srv_file_entry *)a)->name, ((const struct srv_file_entry *)b)->name);
}

int ws_list(int ws, const char *path, struct srv_file_entry **entries, size_t *n, struct al_error *err)
{
	int r = path ? check_path(path, err) : 0;
	if (r < 0)
		return r;
	const char *rel = relative(path);
	int fd = beneath(ws, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOTDIR ? al_err(err, ENOTDIR, "not a directory: %s", path)
				      : path_error(err, -fd, path ? path : "/");
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return al_err_sys(err, errno, "listing %s", path ? path : "/");
	}
	struct srv_file_entry *v = NULL;
	size_t k = 0, cap = 0;
	struct dirent *de;
	r = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (k == 10000) /* enough for a model to read */
			break;
		if (k == cap) {
			cap = cap ? cap * 2 : 32;
			struct srv_file_entry *m = realloc(v, cap * sizeof(*v));
			if (!m) {
				r = al_err(err, ENOMEM, "out of memory");
				break;
			}
			v = m;
		}
		struct stat st;
		memset(&st, 0, sizeof(st));
		(void)fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW);
		v[k].name = strdup(de->d_name);
		v[k].type = S_ISREG(st.st_mode)	  ? SRV_FILE_REGULAR
			    : S_ISDIR(st.st_mode) ? SRV_FILE_DIRECTORY
			    : S_ISLNK(st.st_mode) ? SRV_FILE_SYMLINK
						  : SRV_FILE_OTHER;
		v[k].size = (uint64_t)st.st_size;
		if (!v[k].name) {
			r = al_err(err, ENOMEM, "out of memory");
			break;
		}
		k++;
	}
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < k; i++)
			free(v[i].name);
		free(v);
		return r;
	}
	if (k)
		qsort(v, k, sizeof(*v), cmp_entry);
	*entries = v;
	*n = k;
	return 0;
}

int ws_dir(int ws, const char *path, struct al_error *err)
{
	const char *rel = relative(path);
	if (!*rel)
		return 0;
	cleanup_close int fd = beneath(ws, rel, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return al_err(err, fd == -ENOENT || fd == -ENOTDIR ? EINVAL : -fd,
			      "cwd \"%s\": no such directory in the sandbox's workspace%s", path,
			      fd == -EXDEV || fd == -ELOOP ? " (it leaves the workspace)" : "");
	return 0;
}
