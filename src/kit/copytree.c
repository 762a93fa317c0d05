/* copytree.c — a recursive copy with fixed buffers, for init (which must not allocate).
 *
 * Why a copy and not an overlay: overlay layers keep the host's ownership, which the sandbox
 * user cannot write (as root, the checkout's owner is not even mapped), so a "read-write
 * copy" over an overlay would be read-only in practice. The copy is bounded by its tmpfs
 * (--disk): a checkout larger than that fails setup with ENOSPC, named.
 */
#include "copytree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CT_MAX_DEPTH 128

static char ct_what[NAME_MAX + 1];
static char ct_buf[1 << 16]; /* file data; init is single-threaded */

static int ct_fail(int err, const char *name, const char **what)
{
	size_t n = strnlen(name, sizeof(ct_what) - 1);
	memcpy(ct_what, name, n);
	ct_what[n] = 0;
	*what = ct_what;
	return -err;
}

static int copy_bytes(int in, int out)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	for (;;) {
		ssize_t n = read(in, ct_buf, sizeof(ct_buf));
		if (n <= 0)
			return n < 0 ? -errno : 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, ct_buf + off, (size_t)(n - off));
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			off += w;
		}
	}
}

static int copy_file(int src, int dst, const char *name, const struct stat *sb, uid_t owner, gid_t group)
{
	int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, sb->st_mode & 0777);
	int r = out < 0 ? -errno : copy_bytes(in, out);
	if (r == 0 && (fchown(out, owner, group) < 0 || fchmod(out, sb->st_mode & 0777) < 0 ||
		       futimens(out, (struct timespec[2]){sb->st_atim, sb->st_mtim}) < 0))
		r = -errno;
	close(in);
	if (out >= 0)
		close(out);
	return r;
}

static int copy_link(int src, int dst, const char *name, uid_t owner, gid_t group)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (symlinkat(target, dst, name) < 0 || fchownat(dst, name, owner, group, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static int copy_dir(int src, int dst, uid_t owner, gid_t group, int depth, const char **what);

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by CT_MAX_DEPTH */
static int copy_entry(int src, int dst, const char *name, uid_t owner, gid_t group, int depth, const char **what)
{
	struct stat sb;
	if (fstatat(src, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return ct_fail(errno, name, what);
	int r = 0;
	if (S_ISREG(sb.st_mode)) {
		r = copy_file(src, dst, name, &sb, owner, group);
	} else if (S_ISLNK(sb.st_mode)) {
		r = copy_link(src, dst, name, owner, group);
	} else if (S_ISDIR(sb.st_mode)) {
		if (mkdirat(dst, name, 0700) < 0)
			return ct_fail(errno, name, what);
		int s = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int d = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = s < 0 || d < 0 ? -errno : copy_dir(s, d, owner, group, depth + 1, what);
		if (r == 0 && (fchown(d, owner, group) < 0 || fchmod(d, sb.st_mode & 0777) < 0))
			r = -errno;
		if (s >= 0)
			close(s);
		if (d >= 0)
			close(d);
		if (r < 0 && *what)
			return r; /* a deeper entry already named itself */
	}
	return r < 0 ? ct_fail(-r, name, what) : 0;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by CT_MAX_DEPTH */
static int copy_dir(int src, int dst, uid_t owner, gid_t group, int depth, const char **what)
{
	if (depth > CT_MAX_DEPTH)
		return ct_fail(ELOOP, "(too deep)", what);
	char buf[4096] __attribute__((aligned(8)));
	for (;;) {
		long n = syscall(SYS_getdents64, src, buf, sizeof(buf));
		if (n <= 0)
			return n < 0 ? ct_fail(errno, ".", what) : 0;
		for (long off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			off += e->d_reclen;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			int r = copy_entry(src, dst, e->d_name, owner, group, depth, what);
			if (r < 0)
				return r;
		}
	}
}

int ct_copy(int src, int dst, uid_t owner, gid_t group, const char **what)
{
	*what = NULL;
	/* src may be an O_PATH descriptor: reading its entries needs a real open. */
	int s = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s < 0)
		return ct_fail(errno, ".", what);
	int r = copy_dir(s, dst, owner, group, 0, what);
	close(s);
	return r;
}
