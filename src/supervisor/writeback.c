/* writeback.c — applies a --workdir overlay's upper layer (the job's changes) to the host directory.
 *
 * Runs in the supervisor, with the caller's credentials, after every process of the job is
 * gone: nothing can change either tree meanwhile. The upper layer holds what the job created or
 * modified (full copies: metacopy is off), character devices 0/0 for what it deleted
 * (whiteouts), and "opaque" directories that replaced a lower one wholesale. Both trees are
 * walked with *at() calls that never follow a symlink: a link in either tree (the job made
 * them) is copied as a link, never traversed, so nothing outside the directory can be reached.
 * Special files other than whiteouts (fifos, sockets, devices) are not copied.
 */
#include "writeback.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util/fdpass.h"

#define WB_MAX_DEPTH 256
#define WB_TMP	     ".airlock-writeback.tmp"

static int wb_fail(struct wb_stats *st, int err, const char *what, const char *name)
{
	if (!st->error[0])
		snprintf(st->error, sizeof(st->error), "%.40s %.120s: %.80s", what, name, strerror(err));
	return -err;
}

/* Removes name (a file, a link, or a whole directory) beneath dirfd, never following links. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by WB_MAX_DEPTH, whatever the job created */
static int remove_at(int parent, const char *name, int depth)
{
	struct stat sb;
	if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(sb.st_mode))
		return unlinkat(parent, name, 0) < 0 ? -errno : 0;
	if (depth > WB_MAX_DEPTH)
		return -ELOOP;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	int r = 0;
	for (struct dirent *e; r == 0 && (e = readdir(d));)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			r = remove_at(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	return r < 0 ? r : unlinkat(parent, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static bool is_opaque(int dirfd)
{
	char v[4];
	ssize_t n = fgetxattr(dirfd, "user.overlay.opaque", v, sizeof(v));
	if (n < 0)
		n = fgetxattr(dirfd, "trusted.overlay.opaque", v, sizeof(v));
	return n >= 1 && v[0] == 'y';
}

/* Copies in[off, off+len) to the same offsets of out: copy_file_range, read/write otherwise. */
static int copy_range(int in, int out, off_t off, off_t len)
{
	off_t o_in = off, o_out = off, end = off + len;
	while (o_in < end) {
		ssize_t n = copy_file_range(in, &o_in, out, &o_out, (size_t)(end - o_in), 0);
		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
			break;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	char buf[65536];
	while (o_in < end) {
		size_t want = (size_t)(end - o_in) < sizeof(buf) ? (size_t)(end - o_in) : sizeof(buf);
		ssize_t n = pread(in, buf, want, o_in);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (ssize_t w = 0; w < n;) {
			ssize_t k = pwrite(out, buf + w, (size_t)(n - w), o_in + w);
			if (k <= 0)
				return k < 0 ? -errno : -EIO;
			w += k;
		}
		o_in += n;
	}
	return 0;
}

int wb_copy_data(int in, int out, off_t size)
{
	/* Only the data segments: a hole stays a hole, so a sparse file costs the host what it cost
	 * the sandbox, not its apparent size (which --file-size alone would let reach 1 GiB). */
	off_t pos = 0;
	while (pos < size) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		if (data < 0)
			return copy_range(in, out, pos, size - pos); /* no SEEK_DATA: copy it all */
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0 || hole > size)
			hole = size;
		int r = copy_range(in, out, data, hole - data);
		if (r < 0)
			return r;
		pos = hole;
	}
	return ftruncate(out, size) < 0 ? -errno : 0;
}

/* What writing the changes back would put on the host: allocated bytes per name (a hard link
 * is copied once per name). Returns the total, stopping early past limit. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by WB_MAX_DEPTH */
static uint64_t wb_cost(int dir, uint64_t limit, int depth)
{
	/* A new open file description: a dup() would share (and move) the caller's offset. */
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	uint64_t total = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	for (struct dirent *e; total <= limit && (e = readdir(d));) {
		struct stat sb;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(dir, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(sb.st_mode))
			total += (uint64_t)sb.st_blocks * 512;
		if (S_ISDIR(sb.st_mode) && depth < WB_MAX_DEPTH) {
			int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				total += wb_cost(sub, limit - total, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
	return total;
}

/* Copies a regular file or a symlink into a temporary name, then renames it over name. */
static int copy_entry(int src, int dst, const char *name, const struct stat *sb, struct wb_stats *st)
{
	unlinkat(dst, WB_TMP, 0);
	if (S_ISLNK(sb->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
		if (n < 0 || (target[n] = 0, symlinkat(target, dst, WB_TMP) < 0))
			return wb_fail(st, errno, "copying the link", name);
	} else {
		int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		int out = openat(dst, WB_TMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		int r = in < 0 || out < 0 ? -errno : wb_copy_data(in, out, sb->st_size);
		/* No set-id bits come back from the sandbox; times are kept. */
		if (r == 0 && (fchmod(out, sb->st_mode & 0777) < 0 ||
			       futimens(out, (struct timespec[2]){sb->st_atim, sb->st_mtim}) < 0))
			r = -errno;
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
		if (r < 0) {
			unlinkat(dst, WB_TMP, 0);
			return wb_fail(st, -r, "copying", name);
		}
		st->bytes += (uint64_t)sb->st_size;
	}
	if (renameat(dst, WB_TMP, dst, name) < 0) {
		/* A directory stands where the file goes: the job replaced it. */
		if ((errno != EISDIR && errno != ENOTEMPTY && errno != EEXIST) || remove_at(dst, name, 0) < 0 ||
		    renameat(dst, WB_TMP, dst, name) < 0) {
			int e = errno;
			unlinkat(dst, WB_TMP, 0);
			return wb_fail(st, e, "replacing", name);
		}
	}
	st->files++;
	return 0;
}

static int wb_dir(int src, int dst, struct wb_stats *st, int depth);

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by WB_MAX_DEPTH, whatever the job created */
static int wb_subdir(int src, int dst, const char *name, const struct stat *sb, struct wb_stats *st, int depth)
{
	if (depth > WB_MAX_DEPTH)
		return wb_fail(st, ELOOP, "descending into", name);
	int s = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0)
		return wb_fail(st, errno, "opening the job's", name);
	struct stat db;
	bool exists = fstatat(dst, name, &db, AT_SYMLINK_NOFOLLOW) == 0;
	/* An opaque directory replaced the host's; a file or link there gives way to it. */
	if (exists && (is_opaque(s) || !S_ISDIR(db.st_mode))) {
		remove_at(dst, name, 0);
		exists = false;
	}
	if (!exists && mkdirat(dst, name, sb->st_mode & 0777) < 0) {
		close(s);
		return wb_fail(st, errno, "creating", name);
	}
	int d = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r = d < 0 ? wb_fail(st, errno, "opening", name) : wb_dir(s, d, st, depth + 1);
	if (d >= 0) {
		fchmod(d, sb->st_mode & 0777);
		close(d);
	}
	close(s);
	st->dirs++;
	return r;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by WB_MAX_DEPTH, whatever the job created */
static int wb_dir(int src, int dst, struct wb_stats *st, int depth)
{
	int fd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return wb_fail(st, errno, "reading", "the job's changes");
	}
	int r = 0;
	for (struct dirent *e; r == 0 && (e = readdir(d));) {
		const char *name = e->d_name;
		struct stat sb;
		if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, WB_TMP))
			continue;
		if (fstatat(src, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			r = wb_fail(st, errno, "reading", name);
		else if (S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(0, 0)) {
			if ((r = remove_at(dst, name, 0)) < 0)
				wb_fail(st, -r, "deleting", name);
			st->deleted++;
		} else if (S_ISDIR(sb.st_mode))
			r = wb_subdir(src, dst, name, &sb, st, depth);
		else if (S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode))
			r = copy_entry(src, dst, name, &sb, st);
		else
			st->skipped++;
	}
	closedir(d);
	return r;
}

int wb_receive_upper(int sock)
{
	char tag;
	return al_recv_fd(sock, &tag); /* -ENOENT: setup never got as far as the overlay */
}

int wb_apply(int upper, const char *workdir, uint64_t limit, struct wb_stats *st)
{
	memset(st, 0, sizeof(*st));
	/* All or nothing: hard links multiply what a name-by-name copy writes, and the host must
	 * never receive more than --disk of the job's data. */
	uint64_t cost = wb_cost(upper, limit, 0);
	if (cost > limit) {
		snprintf(st->error, sizeof(st->error),
			 "the changes would write more than --disk (%llu bytes; hard links count once per name): "
			 "nothing was written back",
			 (unsigned long long)limit);
		return -EFBIG;
	}
	int dst = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dst < 0)
		return wb_fail(st, errno, "opening", workdir);
	int r = wb_dir(upper, dst, st, 0);
	close(dst);
	return r;
}
