/* wstar.c — a tar upload unpacked beneath a workspace directory, all or nothing (see ws_untar in wsfiles.h). */
#include "manager/wsfiles.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "manager/wsint.h"
#include "image/tar.h"
#include "util/cleanup.h"
#include "util/fsutil.h"
#include "util/openat2.h"

#define TAR_MAX_DEPTH 256 /* the merge descends this deep at most */

/*
 * Theory. The archive is a file already beneath the workspace (the upload's unnamed spool), read
 * three times, in bounded blocks:
 *   1. check: every member's name is a plain relative name (no absolute name, no "..", no empty
 *      part), its type a regular file, a directory or a symlink whose target is relative and has
 *      no ".." (it can only name something beneath its own directory); a hard link, a device, a
 *      FIFO is refused. Nothing is written before the whole archive passed.
 *   The hidden directory is the sandbox user's, so sandbox code could put things in it meanwhile:
 *   what it finds there is never followed (O_NOFOLLOW, RESOLVE_NO_SYMLINKS), only moved into
 *   the target, which that code can write anyway.
 *   2. unpack into a new hidden directory beneath the target, as the sandbox user, resolving every
 *      parent with RESOLVE_NO_SYMLINKS beneath it (a member never passes through a link another
 *      member made) and creating files with O_EXCL | O_NOFOLLOW.
 *   3. merge into the target: directories merge, files and links replace (as tar does), after a
 *      check pass that refuses a directory meeting a non-directory. On any failure the hidden
 *      directory is removed and the target is as it was.
 */

static int bad(struct al_error *err, const char *name, const char *why)
{
	return al_err(err, EINVAL, "archive member '%.200s': %s: refused", name, why);
}

/* A member's name as a plain relative name in out ("" for the root itself): tar_norm_name. */
static int norm_name(const char *in, char *out, size_t size, struct al_error *err)
{
	const char *why = tar_norm_name(in, out, size);
	return why ? bad(err, in, why) : 0;
}

/* A symlink is kept only when it cannot lead out: a relative target without any ".." part. */
static int check_link(const char *name, const char *target, struct al_error *err)
{
	if (!target || !*target || target[0] == '/')
		return bad(err, name, "a symlink to an absolute or empty target");
	for (const char *q = target; *q;) {
		size_t len = strcspn(q, "/");
		if (len == 2 && q[0] == '.' && q[1] == '.')
			return bad(err, name, "a symlink whose target has '..'");
		q += len + (q[len] == '/');
	}
	return 0;
}

static int check_member(struct archive_entry *e, char *rel, size_t size, struct al_error *err)
{
	const char *name = archive_entry_pathname(e);
	rel[0] = 0;
	if (!name)
		return al_err(err, EINVAL, "an archive member without a name: refused");
	int r = norm_name(name, rel, size, err);
	if (r < 0)
		return r;
	if (archive_entry_hardlink(e))
		return bad(err, name, "a hard link");
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
	case AE_IFDIR:
		break;
	case AE_IFLNK:
		r = check_link(name, archive_entry_symlink(e), err);
		break;
	default:
		return bad(err, name, "a device, FIFO or socket");
	}
	if (r == 0 && !*rel && archive_entry_filetype(e) != AE_IFDIR)
		return bad(err, name, "the directory itself as a file");
	return r;
}

static int corrupt(struct archive *a, struct al_error *err)
{
	return al_err(err, EINVAL, "not a tar archive, or a truncated one: %s", archive_error_string(a));
}

/* Pass 1: the whole archive checked before anything is written. */
static int check_all(int spool, uint64_t *members, struct al_error *err)
{
	cleanup_archive struct archive *a = tar_open(spool, EINVAL, "the upload", err);
	if (!a)
		return -EINVAL;
	struct archive_entry *e;
	char rel[PATH_MAX] = "";
	int h = ARCHIVE_OK, r = 0;
	*members = 0;
	while (r == 0 && (h = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		r = check_member(e, rel, sizeof(rel), err);
		++*members;
	}
	if (r == 0 && h != ARCHIVE_EOF)
		r = corrupt(a, err);
	return r;
}

static int no_links(int dir, const char *path, int flags, mode_t mode)
{
	return al_openat2(dir, path, flags, mode, AL_RESOLVE_NOLINKS);
}

/* The directory rel beneath top, made as needed (0755), every part resolved without links. */
static int make_dirs(int top, char *rel, struct al_error *err)
{
	int dir = fcntl(top, F_DUPFD_CLOEXEC, 0);
	for (char *part = rel, *slash; dir >= 0 && part && *part; part = slash ? slash + 1 : NULL) {
		slash = strchr(part, '/');
		if (slash)
			*slash = 0;
		if (mkdirat(dir, part, 0755) == 0) {
			cleanup_close int fd = no_links(dir, part, O_RDONLY | O_DIRECTORY, 0);
			if (fd >= 0)
				(void)fchmod(fd, 0755); /* whatever the server's umask */
		}
		int next = no_links(dir, part, O_PATH | O_DIRECTORY, 0);
		close(dir);
		dir = next;
		if (slash)
			*slash = '/';
	}
	return dir < 0 ? al_err(err, -dir, "archive member '%s': a part on its way is not a directory", rel) : dir;
}

static int write_data(struct archive *a, int fd, const char *name, struct al_error *err)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;
	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		for (size_t done = 0; done < len;) {
			ssize_t w = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + (la_int64_t)done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return errno == ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
						       : al_err_sys(err, errno, "writing %s", name);
			done += (size_t)w;
		}
	}
	return r == ARCHIVE_EOF ? 0 : corrupt(a, err);
}

/* One member beneath top (pass 2). A name the archive gives twice is replaced, as tar does. */
static int put_member(struct archive *a, struct archive_entry *e, int top, char *rel, uid_t uid, gid_t gid,
		      struct al_error *err)
{
	mode_t type = archive_entry_filetype(e);
	mode_t perm = archive_entry_perm(e) & 0777; /* never a set-id bit */
	char *slash = strrchr(rel, '/');
	char *leaf = slash ? slash + 1 : rel;
	if (slash)
		*slash = 0;
	cleanup_close int dir = slash ? make_dirs(top, rel, err) : fcntl(top, F_DUPFD_CLOEXEC, 0);
	if (slash)
		*slash = '/';
	if (dir < 0)
		return dir;
	if (type == AE_IFDIR) {
		cleanup_close int d = make_dirs(dir, leaf, err);
		cleanup_close int rd = d >= 0 ? no_links(dir, leaf, O_RDONLY | O_DIRECTORY, 0) : -1;
		return d < 0 ? d : rd >= 0 && fchmod(rd, perm | 0700) == 0 ? 0 : al_err_sys(err, errno, "%s", rel);
	}
	struct stat st;
	if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
		(void)unlinkat(dir, leaf, 0); /* an earlier member of the same name, in our own directory */
	if (type == AE_IFLNK)
		return symlinkat(archive_entry_symlink(e), dir, leaf) == 0 ? 0 : al_err_sys(err, errno, "%s", rel);
	cleanup_close int fd = no_links(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fd == -ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
				     : al_err_sys(err, -fd, "archive member '%s'", rel);
	int r = write_data(a, fd, rel, err);
	if (r == 0 && (fchown(fd, uid, gid) < 0 || fchmod(fd, perm) < 0))
		r = al_err_sys(err, errno, "giving %s to the sandbox user", rel);
	return r;
}

/* Pass 2: every member into top (a new, empty directory of ours). */
static int unpack_all(int spool, int top, uid_t uid, gid_t gid, struct al_error *err)
{
	cleanup_archive struct archive *a = tar_open(spool, EINVAL, "the upload", err);
	if (!a)
		return -EINVAL;
	struct archive_entry *e;
	char rel[PATH_MAX] = "";
	int h = ARCHIVE_OK, r = 0;
	while (r == 0 && (h = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		r = check_member(e, rel, sizeof(rel), err); /* the same file as pass 1, checked again anyway */
		if (r == 0 && *rel)
			r = put_member(a, e, top, rel, uid, gid, err);
	}
	if (r == 0 && h != ARCHIVE_EOF)
		r = corrupt(a, err);
	return r;
}

/* Pass 3 (check, then move): src's entries into dst. Every name is one component from readdir,
 * relative to our own descriptors; dst's directories are opened with O_NOFOLLOW, so a link the
 * sandbox put in the target is replaced as a link, never entered. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by TAR_MAX_DEPTH (the archive's own depth) */
static int merge(int src, int dst, bool move, int depth, struct al_error *err)
{
	if (depth > TAR_MAX_DEPTH)
		return al_err(err, EINVAL, "the archive is deeper than %d levels", TAR_MAX_DEPTH);
	int fd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return al_err_sys(err, errno, "reading the unpacked archive");
	}
	struct stat dst_st;
	int r = fstat(dst, &dst_st) < 0 ? al_err_sys(err, errno, "the target directory") : 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		struct stat s, t;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0) {
			r = al_err_sys(err, errno, "%s", e->d_name);
			break;
		}
		bool exists = fstatat(dst, e->d_name, &t, AT_SYMLINK_NOFOLLOW) == 0;
		if (exists && S_ISDIR(s.st_mode) && S_ISDIR(t.st_mode)) {
			cleanup_close int a =
				openat(dirfd(d), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			cleanup_close int b = openat(dst, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = a < 0 || b < 0 ? al_err_sys(err, errno, "%s", e->d_name)
			    : t.st_dev != dst_st.st_dev
				    ? al_err(err, EXDEV, "'%s' is a mount point: the archive is refused", e->d_name)
				    : merge(a, b, move, depth + 1, err);
		} else if (exists && (S_ISDIR(s.st_mode) || S_ISDIR(t.st_mode))) {
			r = al_err(err, EEXIST, "'%s': the archive has a %s where the workspace has a %s", e->d_name,
				   S_ISDIR(s.st_mode) ? "directory" : "file",
				   S_ISDIR(s.st_mode) ? "file" : "directory");
		} else if (move && renameat(dirfd(d), e->d_name, dst, e->d_name) < 0) {
			r = errno == ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
					    : al_err_sys(err, errno, "placing '%s'", e->d_name);
		}
	}
	closedir(d);
	return r;
}

/* The target directory (made as needed: *made says whether its last part is new). */
static int open_target(int ws, const char *path, uid_t uid, gid_t gid, bool *made, struct al_error *err)
{
	*made = false;
	const char *rel = ws_relative(path);
	if (!*rel || strcmp(rel, ".") == 0)
		return fcntl(ws, F_DUPFD_CLOEXEC, 0);
	int r = ws_mkdir(ws, path, uid, gid, made, err);
	if (r < 0)
		return r;
	int fd = ws_beneath(ws, rel, O_PATH | O_DIRECTORY, 0);
	return fd < 0 ? ws_path_error(err, -fd, path) : fd;
}

static int untar(int ws, const char *path, int spool, uid_t uid, gid_t gid, uint64_t *count, struct al_error *err)
{
	int r = check_all(spool, count, err);
	if (r < 0)
		return r;
	bool made;
	cleanup_close int target = open_target(ws, path, uid, gid, &made, err);
	if (target < 0)
		return target;
	char tmp[40];
	r = ws_temp_name(tmp, "untar", err);
	if (r == 0 && mkdirat(target, tmp, 0700) < 0)
		r = errno == ENOSPC ? al_err(err, ENOSPC, "the workspace is full (its --disk limit)")
				    : al_err_sys(err, errno, "a directory beside %s", path);
	if (r < 0)
		return r;
	cleanup_close int top = no_links(target, tmp, O_PATH | O_DIRECTORY, 0);
	r = top < 0 ? al_err_sys(err, -top, "opening the unpacked archive") : unpack_all(spool, top, uid, gid, err);
	if (r == 0)
		r = merge(top, target, false, 0, err);
	if (r == 0)
		r = merge(top, target, true, 0, err);
	uint64_t left = 0;
	struct al_error ignored = {0};
	(void)ws_rm_beneath(target, tmp, &left, &ignored); /* what is left of it: all of it on failure */
	if (r < 0 && made) /* the target we made, if it is still empty (rmdir, never a tree) */
		(void)ws_remove(ws, path, false, &left, &ignored);
	return r;
}

int ws_untar(int ws, const char *path, int spool, uid_t uid, gid_t gid, uint64_t *count, struct al_error *err)
{
	locale_t saved = al_utf8_names();
	int r = untar(ws, path, spool, uid, gid, count, err);
	al_utf8_names_end(saved);
	return r;
}
