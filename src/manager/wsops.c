/* wsops.c — stat, mkdir, move and remove beneath a workspace descriptor (see wsfiles.h), never following a link the sandbox planted. */
#include "manager/wsfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manager/wsint.h"
#include "policy/policy.h"
#include "util/cleanup.h"

#define WS_TREE_DEPTH  256 /* a tree removal descends this deep at most (one descriptor per level) */
#define WS_TREE_PASSES 64  /* a directory re-read while its entries keep changing, at most */
#define WS_NOBODY      65534u

/* The client's path as a relative name without trailing slashes (malloc'd; "" is the workspace). */
static char *clean_path(const char *path, struct al_error *err)
{
	if (!path || strlen(path) > 4096) {
		al_err(err, EINVAL, "bad path");
		return NULL;
	}
	char *rel = strdup(ws_relative(path));
	if (!rel) {
		al_err(err, ENOMEM, "out of memory");
		return NULL;
	}
	size_t n = strlen(rel);
	while (n && rel[n - 1] == '/')
		rel[--n] = 0;
	return rel;
}

/* The parent directory of rel (checked: a plain relative name, not the workspace itself) as an
 * O_PATH descriptor resolved beneath ws, nothing made; *leaf points into rel. Links on the way are
 * followed only while they stay beneath the workspace (RESOLVE_BENEATH: the kernel refuses others). */
static int open_parent(int ws, char *rel, const char *shown, const char **leaf, struct al_error *err)
{
	if (!*rel || strcmp(rel, ".") == 0)
		return al_err(err, EACCES, "%s is the workspace itself", shown);
	int r = ws_check_write_path(rel, err);
	if (r < 0)
		return r;
	char *slash = strrchr(rel, '/');
	*leaf = slash ? slash + 1 : rel;
	if (slash)
		*slash = 0;
	int fd = ws_beneath(ws, slash ? rel : ".", O_PATH | O_DIRECTORY, 0);
	if (slash)
		*slash = '/';
	if (fd == -ENOTDIR)
		return al_err(err, ENOTDIR, "not a directory on the way to %s", shown);
	return fd < 0 ? ws_path_error(err, -fd, shown) : fd;
}

static const char *kind_of(mode_t m, enum srv_file_type *t)
{
	*t = S_ISREG(m)	  ? SRV_FILE_REGULAR
	     : S_ISDIR(m) ? SRV_FILE_DIRECTORY
	     : S_ISLNK(m) ? SRV_FILE_SYMLINK
			  : SRV_FILE_OTHER;
	return S_ISREG(m)    ? "file"
	       : S_ISDIR(m)  ? "directory"
	       : S_ISLNK(m)  ? "symlink"
	       : S_ISFIFO(m) ? "fifo"
	       : S_ISSOCK(m) ? "socket"
	       : S_ISCHR(m)  ? "char-device"
	       : S_ISBLK(m)  ? "block-device"
			     : "other";
}

/* The stat as the sandbox sees it: its user's files are AL_SANDBOX_UID's, any other host id is the
 * overflow id (the sandbox's user namespace maps nothing else). */
static int fill_stat(int fd, const struct stat *st, uid_t uid, gid_t gid, struct srv_file_stat **out,
		     struct al_error *err)
{
	struct srv_file_stat *o = calloc(1, sizeof(*o));
	if (!o)
		return al_err(err, ENOMEM, "out of memory");
	snprintf(o->kind, sizeof(o->kind), "%s", kind_of(st->st_mode, &o->type));
	o->size = (uint64_t)st->st_size;
	o->mode = (uint32_t)(st->st_mode & 07777);
	o->uid = st->st_uid == uid ? AL_SANDBOX_UID : WS_NOBODY;
	o->gid = st->st_gid == gid ? AL_SANDBOX_UID : WS_NOBODY;
	o->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	if (S_ISLNK(st->st_mode)) {
		/* readlinkat on the link's own O_PATH descriptor: its text, never what it names. */
		char buf[PATH_MAX];
		ssize_t n = readlinkat(fd, "", buf, sizeof(buf) - 1);
		if (n < 0 || !(o->link_target = strndup(buf, (size_t)n))) {
			int e = n < 0 ? errno : ENOMEM;
			free(o);
			return al_err_sys(err, e, "reading the link");
		}
	}
	*out = o;
	return 0;
}

int ws_stat(int ws, const char *path, uid_t uid, gid_t gid, struct srv_file_stat **out, struct al_error *err)
{
	cleanup_free char *rel = clean_path(path, err);
	if (!rel)
		return -EINVAL;
	int r = *rel ? ws_check_write_path(rel, err) : 0;
	if (r < 0)
		return r;
	/* O_PATH | O_NOFOLLOW: a final symlink is opened as itself (lstat), never followed. */
	cleanup_close int fd = ws_beneath(ws, *rel ? rel : ".", O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOTDIR ? al_err(err, ENOENT, "no such file in the workspace: %s", path)
				      : ws_path_error(err, -fd, path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return al_err_sys(err, errno, "%s", path);
	return fill_stat(fd, &st, uid, gid, out, err);
}

int ws_mkdir(int ws, const char *path, uid_t uid, gid_t gid, bool *made, struct al_error *err)
{
	cleanup_free char *clean = clean_path(path, err);
	if (!clean)
		return -EINVAL;
	if (!*clean || strcmp(clean, ".") == 0) {
		*made = false; /* the workspace: there already */
		return 0;
	}
	cleanup_free char *rel = NULL;
	const char *leaf = "";
	cleanup_close int dir = ws_checked_parent(ws, clean, uid, gid, &rel, &leaf, err);
	if (dir < 0)
		return dir;
	struct stat st;
	bool existed = fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (existed && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		return al_err(err, EEXIST, "%s exists and is not a directory", path);
	/* ws_make_dir opens an existing entry beneath dir as a directory: a link to one that stays in
	 * the workspace is accepted, as mkdir -p does; one leading out is refused by the kernel. */
	int fd = ws_make_dir(dir, leaf, uid, gid, path, err);
	if (fd < 0)
		return fd == -ENOTDIR ? al_err(err, EEXIST, "%s exists and is not a directory", path) : fd;
	close(fd);
	*made = !existed;
	return 0;
}

int ws_move(int ws, const char *from, const char *to, bool no_replace, struct al_error *err)
{
	cleanup_free char *a = clean_path(from, err);
	cleanup_free char *b = a ? clean_path(to, err) : NULL;
	if (!b)
		return -EINVAL;
	const char *la = "", *lb = "";
	cleanup_close int da = open_parent(ws, a, from, &la, err);
	if (da < 0)
		return da;
	cleanup_close int db = open_parent(ws, b, to, &lb, err);
	if (db < 0)
		return db;
	/* renameat2 acts on the two names: a link at either is moved or replaced itself, never
	 * followed; both parents were resolved beneath the workspace. */
	if (renameat2(da, la, db, lb, no_replace ? RENAME_NOREPLACE : 0) == 0)
		return 0;
	switch (errno) {
	case ENOENT:
		return al_err(err, ENOENT, "no such file in the workspace: %s", from);
	case EEXIST:
		return al_err(err, EEXIST, "%s exists (overwrite is false)", to);
	case ENOTEMPTY:
		return al_err(err, EEXIST, "%s is a directory that is not empty", to);
	case EXDEV:
		return al_err(err, EXDEV, "moving %s to %s would cross a mount point", from, to);
	case EINVAL:
		return al_err(err, EINVAL, "cannot move %s into itself", from);
	case EISDIR:
	case ENOTDIR:
		return al_err(err, errno, "cannot replace %s: one is a directory and the other is not", to);
	default:
		return ws_path_error(err, errno, from);
	}
}

static int rm_tree(int parent, const char *name, dev_t dev, int depth, uint64_t *count, const char *shown,
		   struct al_error *err);

/* One pass over the open directory d: every entry removed (directories through rm_tree). */
/* NOLINTNEXTLINE(misc-no-recursion): with rm_tree, bounded by WS_TREE_DEPTH */
static int rm_entries(DIR *d, dev_t dev, int depth, uint64_t *count, bool *changed, const char *shown,
		      struct al_error *err)
{
	struct dirent *e;
	*changed = false;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		/* A name from readdir is one component (no '/', never "..") relative to our own
		 * descriptor of the directory: nothing on the way can be swapped. */
		int r = e->d_type == DT_DIR || e->d_type == DT_UNKNOWN
				? rm_tree(dirfd(d), e->d_name, dev, depth + 1, count, shown, err)
				: (unlinkat(dirfd(d), e->d_name, 0) == 0 ? 0 : -errno);
		if (r == -ENOENT)
			continue; /* gone meanwhile */
		if (r < 0)
			return err && !err->msg[0] ? ws_path_error(err, -r, shown) : r;
		if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
			++*count;
		*changed = true;
	}
	return 0;
}

/* Removes name beneath parent: a directory with all it holds, anything else unlinked. The
 * directory is opened with O_NOFOLLOW | O_DIRECTORY, so a link swapped in (to a host directory) is
 * unlinked as a link and never entered; one on another device (a mount point) is refused. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by WS_TREE_DEPTH, whatever the sandbox made */
static int rm_tree(int parent, const char *name, dev_t dev, int depth, uint64_t *count, const char *shown,
		   struct al_error *err)
{
	if (depth > WS_TREE_DEPTH)
		return al_err(err, ENAMETOOLONG, "%s: a tree deeper than %d levels", shown, WS_TREE_DEPTH);
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
		if (unlinkat(parent, name, 0) < 0)
			return -errno;
		++*count;
		return 0;
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_dev != dev) {
		close(fd);
		return al_err(err, EXDEV, "%s: holds a mount point, which is not removed", shown);
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return al_err(err, ENOMEM, "out of memory");
	}
	bool changed = true;
	int r = 0;
	for (int pass = 0; r == 0 && changed && pass < WS_TREE_PASSES; pass++) {
		r = rm_entries(d, dev, depth, count, &changed, shown, err);
		rewinddir(d);
	}
	closedir(d);
	if (r < 0)
		return r;
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0)
		return -errno;
	++*count;
	return 0;
}

int ws_rm_beneath(int dir, const char *name, uint64_t *count, struct al_error *err)
{
	struct stat st;
	*count = 0;
	if (fstat(dir, &st) < 0)
		return al_err_sys(err, errno, "%s", name);
	int r = rm_tree(dir, name, st.st_dev, 0, count, name, err);
	return r < 0 && err && !err->msg[0] ? ws_path_error(err, -r, name) : r;
}

int ws_remove(int ws, const char *path, bool recursive, uint64_t *count, struct al_error *err)
{
	*count = 0;
	cleanup_free char *rel = clean_path(path, err);
	if (!rel)
		return -EINVAL;
	const char *leaf = "";
	cleanup_close int dir = open_parent(ws, rel, path, &leaf, err);
	if (dir < 0)
		return dir;
	struct stat st, root;
	if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return ws_path_error(err, errno, path);
	if (!S_ISDIR(st.st_mode)) { /* a link is removed itself */
		if (unlinkat(dir, leaf, 0) < 0)
			return ws_path_error(err, errno, path);
		*count = 1;
		return 0;
	}
	if (fstat(ws, &root) < 0)
		return al_err_sys(err, errno, "the workspace");
	if (st.st_dev != root.st_dev)
		return al_err(err, EXDEV, "%s is a mount point, which is not removed", path);
	if (!recursive) {
		if (unlinkat(dir, leaf, AT_REMOVEDIR) == 0) {
			*count = 1;
			return 0;
		}
		return errno == ENOTEMPTY || errno == EEXIST
			       ? al_err(err, ENOTEMPTY, "directory not empty: %s (remove it with recursive=true)", path)
			       : ws_path_error(err, errno, path);
	}
	int r = rm_tree(dir, leaf, root.st_dev, 0, count, path, err);
	return r < 0 && err && !err->msg[0] ? ws_path_error(err, -r, path) : r;
}
