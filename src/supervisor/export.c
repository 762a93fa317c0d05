/* export.c — --keep-changes: the files a job changed in its copy of a checkout, exported as a
 * tree. The copy (a directory fd from the sandbox) is compared with the source, entry by entry,
 * never following links on either side; only what differs is written, into a fresh directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writeback.h"

#define EX_MAX_DEPTH 128

struct ex_ctx {
	int out;	    /* the export root */
	uint64_t limit;	    /* --disk: the most data bytes the export may write */
	uint64_t spent;	    /* allocated bytes written so far */
	char rel[PATH_MAX]; /* current directory, relative, "" at the top */
	struct wb_stats *st;
};

static int ex_fail(struct ex_ctx *c, int err, const char *what, const char *name)
{
	if (!c->st->error[0])
		snprintf(c->st->error, sizeof(c->st->error), "%.30s %.120s/%.60s: %.30s", what, c->rel, name,
			 strerror(err));
	return -err;
}

/* The export directory for the current relative directory, created on first use. */
static int out_dir(struct ex_ctx *c)
{
	int fd = dup(c->out);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", c->rel);
	for (char *save = NULL, *part = strtok_r(path, "/", &save); fd >= 0 && part;
	     part = strtok_r(NULL, "/", &save)) {
		if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST) {
			close(fd);
			return -errno;
		}
		int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	return fd < 0 ? -errno : fd;
}

static bool same_bytes(int a, int b)
{
	char x[16384], y[16384];
	for (;;) {
		ssize_t n = read(a, x, sizeof(x));
		if (n <= 0)
			return n == 0 && read(b, y, 1) == 0;
		ssize_t m = 0;
		while (m < n) {
			ssize_t k = read(b, y + m, (size_t)(n - m));
			if (k <= 0)
				return false;
			m += k;
		}
		if (memcmp(x, y, (size_t)n) != 0)
			return false;
	}
}

/* Is entry name of the copy the same as in the source (type, mode, size, bytes or target)? */
static bool unchanged(int cp, int src, const char *name, const struct stat *cs)
{
	struct stat ss;
	if (src < 0 || fstatat(src, name, &ss, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (ss.st_mode & S_IFMT) != (cs->st_mode & S_IFMT))
		return false;
	if (S_ISLNK(cs->st_mode)) {
		char a[PATH_MAX], b[PATH_MAX];
		ssize_t n = readlinkat(cp, name, a, sizeof(a)), m = readlinkat(src, name, b, sizeof(b));
		return n >= 0 && n == m && memcmp(a, b, (size_t)n) == 0;
	}
	if ((ss.st_mode & 0777) != (cs->st_mode & 0777) || ss.st_size != cs->st_size)
		return false;
	int a = openat(cp, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC),
	    b = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	bool same = a >= 0 && b >= 0 && same_bytes(a, b);
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	return same;
}

static int export_entry(struct ex_ctx *c, int cp, const char *name, const struct stat *cs)
{
	int dir = out_dir(c);
	if (dir < 0)
		return ex_fail(c, -dir, "creating", "");
	int r = 0;
	if (S_ISLNK(cs->st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlinkat(cp, name, t, sizeof(t) - 1);
		if (n < 0 || (t[n] = 0, symlinkat(t, dir, name) < 0))
			r = ex_fail(c, errno, "exporting the link", name);
	} else {
		int in = openat(cp, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		int out = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, cs->st_mode & 0777);
		uint64_t cost = (uint64_t)cs->st_blocks * 512;
		if (c->spent + cost > c->limit)
			r = ex_fail(c, EFBIG, "exporting (the changes exceed --disk)", name);
		else if (in < 0 || out < 0 || (r = wb_copy_data(in, out, cs->st_size)) < 0)
			r = ex_fail(c, r < 0 ? -r : errno, "exporting", name);
		else {
			c->spent += cost;
			c->st->bytes += (uint64_t)cs->st_size;
		}
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	close(dir);
	if (r == 0)
		c->st->files++;
	return r;
}

/* Entries of the source that the copy no longer has. */
static void count_deleted(int cp, int src, struct wb_stats *st)
{
	int fd = src < 0 ? -1 : openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct stat sb;
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    fstatat(cp, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			st->deleted++;
	closedir(d);
}

static int ex_dir(struct ex_ctx *c, int cp, int src, int depth);

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by EX_MAX_DEPTH */
static int ex_subdir(struct ex_ctx *c, int cp, int src, const char *name, int depth)
{
	size_t len = strlen(c->rel);
	if (depth > EX_MAX_DEPTH || len + strlen(name) + 2 >= sizeof(c->rel))
		return ex_fail(c, ELOOP, "descending into", name);
	int s = openat(cp, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int o = src < 0 ? -1 : openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	snprintf(c->rel + len, sizeof(c->rel) - len, "%s%s", len ? "/" : "", name);
	int r = s < 0 ? ex_fail(c, errno, "reading", name) : 0;
	if (r == 0 && o < 0) {
		/* A new directory is part of the change even when empty. */
		int d = out_dir(c);
		r = d < 0 ? ex_fail(c, -d, "creating", name) : (close(d), 0);
		c->st->dirs++;
	}
	if (r == 0)
		r = ex_dir(c, s, o, depth + 1);
	c->rel[len] = 0;
	if (s >= 0)
		close(s);
	if (o >= 0)
		close(o);
	return r;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by EX_MAX_DEPTH */
static int ex_dir(struct ex_ctx *c, int cp, int src, int depth)
{
	int fd = openat(cp, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return ex_fail(c, errno, "reading", ".");
	}
	int r = 0;
	for (struct dirent *e; r == 0 && (e = readdir(d));) {
		struct stat sb;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(cp, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			r = ex_fail(c, errno, "reading", e->d_name);
		else if (S_ISDIR(sb.st_mode))
			r = ex_subdir(c, cp, src, e->d_name, depth);
		else if ((S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)) && !unchanged(cp, src, e->d_name, &sb))
			r = export_entry(c, cp, e->d_name, &sb);
	}
	closedir(d);
	count_deleted(cp, src, c->st);
	return r;
}

int wb_export(int copy, const char *src_dir, const char *dir, uint64_t limit, struct wb_stats *st)
{
	memset(st, 0, sizeof(*st));
	struct ex_ctx c = {.st = st, .limit = limit};
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return ex_fail(&c, errno, "creating", dir);
	c.out = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int src = open(src_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = c.out < 0 ? ex_fail(&c, errno, "opening", dir)
		: src < 0 ? ex_fail(&c, errno, "opening", src_dir)
			  : ex_dir(&c, copy, src, 0);
	if (c.out >= 0)
		close(c.out);
	if (src >= 0)
		close(src);
	return r;
}
