/* etc.c — an image's /etc as its sandboxes show it, prepared once in the store instead of at every start. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/imgint.h"
#include "util/cleanup.h"
#include "util/error.h"

/*
 * A sandbox on an image shows the image's /etc, but airlock writes a few files there at every
 * start (the sandbox user in passwd and group, the hostname in hosts and hostname, its resolver
 * files). The image's /etc is read-only in the store, so the prepared copy made here (beside the
 * rootfs: sha256/<hex>/IMG_ETC_DIR) holds every entry of it, with each of airlock's names replaced
 * by a symlink into IMG_ETC_OWN, a directory of the sandbox's own root where a start writes them.
 * A start then binds this tree read-only at /etc: one mount, however many entries the image has.
 *
 * Nothing is copied: regular files (and any other non-directory) are hard links of the image's own
 * inodes, so the sandbox sees the same inode, contents and mode, and the store holds the bytes once
 * (inspect's sizes, which count the rootfs, stay right). Directories are made again with the
 * image's mode (and owner, as root); symlinks again with the same target, which resolves in the
 * sandbox's root as it would in the image's.
 *
 * Safe on a hostile image: nothing here follows a link. Every source is opened or linked
 * relative to its directory's descriptor with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW (linkat without
 * AT_SYMLINK_FOLLOW links a symlink itself), and every write goes beneath the directory made here.
 */

/* airlock's own files in a sandbox's /etc: the names fsplan.c writes into IMG_ETC_OWN. */
const char *const img_etc_own[] = {"passwd", "group", "hosts", "hostname", "nsswitch.conf", "resolv.conf", NULL};

/* Bounds: a Debian /etc holds ~1,500 entries 6 levels deep. */
#define ETC_MAX_ENTRIES 200000u
#define ETC_MAX_DEPTH	64u

struct prep {
	unsigned entries;
	bool too_deep;
	bool root;	  /* owners can be given (as root); otherwise every entry is the caller's already */
	const char *fail; /* the entry that failed, for the message (points into buf) */
	char buf[NAME_MAX + 1];
};

bool img_etc_is_own(const char *name)
{
	for (size_t i = 0; img_etc_own[i]; i++)
		if (strcmp(name, img_etc_own[i]) == 0)
			return true;
	return false;
}

static int note(struct prep *pr, const char *name, int e)
{
	snprintf(pr->buf, sizeof(pr->buf), "%s", name);
	pr->fail = pr->buf;
	return -e;
}

static int copy_dir(int src, int dst, unsigned depth, bool top, struct prep *pr); // NOLINT(misc-no-recursion): bounded

/* One entry of src, made again in dst. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by ETC_MAX_DEPTH, whatever the image holds */
static int copy_entry(int src, int dst, const char *name, unsigned depth, struct prep *pr)
{
	struct stat st;
	char target[PATH_MAX];
	if (++pr->entries > ETC_MAX_ENTRIES)
		return note(pr, name, EFBIG);
	if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return note(pr, name, errno);
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
		if (n < 0)
			return note(pr, name, errno);
		target[n] = 0;
		if (symlinkat(target, dst, name) < 0 ||
		    (pr->root && fchownat(dst, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0))
			return note(pr, name, errno);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return linkat(src, name, dst, name, 0) < 0 ? note(pr, name, errno) : 0;
	if (depth >= ETC_MAX_DEPTH) {
		pr->too_deep = true;
		return note(pr, name, ELOOP);
	}
	/* Writable by us while it fills; the image's mode (never set-id: the store has none) after. */
	if (mkdirat(dst, name, 0700) < 0)
		return note(pr, name, errno);
	cleanup_close int s = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cleanup_close int d = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0 || d < 0)
		return note(pr, name, errno);
	int r = copy_dir(s, d, depth + 1, false, pr);
	if (r < 0)
		return r;
	if ((pr->root && fchown(d, st.st_uid, st.st_gid) < 0) || fchmod(d, st.st_mode & 01555) < 0)
		return note(pr, name, errno);
	return 0;
}

/* Every entry of src into dst; at the top, airlock's own names are left for the caller. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by ETC_MAX_DEPTH */
static int copy_dir(int src, int dst, unsigned depth, bool top, struct prep *pr)
{
	int fd = dup(src);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	int r = 0;
	for (;;) {
		errno = 0; /* readdir's end and its failure differ only in errno */
		struct dirent *e = readdir(dir);
		if (!e) {
			r = -errno;
			break;
		}
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || (top && img_etc_is_own(e->d_name)))
			continue;
		if ((r = copy_entry(src, dst, e->d_name, depth, pr)) < 0)
			break;
	}
	closedir(dir);
	return r;
}

int store_etc_prepare(int rootfd, int parentfd, const char *name, struct al_error *err)
{
	struct prep pr = {.root = geteuid() == 0};
	/* The image's own /etc, when it is a directory; a link there is not followed (its sandboxes
	 * then see airlock's files alone in /etc, as before). */
	cleanup_close int src = openat(rootfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st = {.st_mode = S_IFDIR | 0555};
	if (src < 0 && errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
		return al_err_sys(err, errno, "the image's /etc");
	if (src >= 0 && fstat(src, &st) < 0)
		return al_err_sys(err, errno, "the image's /etc");
	if (mkdirat(parentfd, name, 0700) < 0)
		return al_err_sys(err, errno, "preparing the image's /etc");
	cleanup_close int dst = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dst < 0)
		return al_err_sys(err, errno, "preparing the image's /etc");
	int r = src >= 0 ? copy_dir(src, dst, 0, true, &pr) : 0;
	char link[64];
	for (size_t i = 0; r == 0 && img_etc_own[i]; i++) {
		snprintf(link, sizeof(link), IMG_ETC_OWN "/%s", img_etc_own[i]);
		if (symlinkat(link, dst, img_etc_own[i]) < 0)
			r = note(&pr, img_etc_own[i], errno);
	}
	if (r == 0 &&
	    ((src >= 0 && pr.root && fchown(dst, st.st_uid, st.st_gid) < 0) || fchmod(dst, st.st_mode & 01555) < 0))
		r = -errno;
	if (pr.entries > ETC_MAX_ENTRIES || pr.too_deep)
		return al_err(err, -r, "the image's /etc is refused: more than %u %s (at %s)",
			      pr.too_deep ? ETC_MAX_DEPTH : ETC_MAX_ENTRIES, pr.too_deep ? "levels deep" : "entries",
			      pr.fail ? pr.fail : "?");
	if (r < 0)
		return al_err_sys(err, -r, "preparing the image's /etc%s%s", pr.fail ? ": at " : "",
				  pr.fail ? pr.fail : "");
	return 0;
}
