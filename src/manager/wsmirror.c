/* wsmirror.c — the workspace's mirror on disk (see wsmirror.h).
 *
 * wsm_sync walks the live workspace from our own descriptors (fstatat and openat with O_NOFOLLOW
 * on names from readdir: nothing the sandbox planted is followed) and compares each entry with the
 * index of what the mirror holds. A changed file or link is written into the staging directory;
 * once the walk is over, one syncfs makes every staged entry durable, each is renamed over its old
 * version (parents resolved beneath the mirror with no link followed), what the walk did not see
 * is removed, and a second syncfs makes the names durable. One flush per phase rather than one per
 * file: an install of thousands of files costs two flushes, not thousands. */
#include "manager/wsmirror.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "manager/wsfiles.h"
#include "manager/wsint.h"
#include "util/cleanup.h"
#include "util/openat2.h"

#define WSM_DEPTH 256	    /* levels kept at most (one descriptor pair per level) */
#define WSM_COPY  (1 << 17) /* the copy buffer, when copy_file_range cannot cross filesystems */

struct ent {
	struct ent *next;
	uint64_t hash, ino, size, blocks;
	struct timespec ctime;
	mode_t mode;
	unsigned gen;
	bool shared; /* its file is a layer's too (a freeze linked it): a rewrite takes new room */
	char path[];
};

struct pending {
	char *path;
	char tmp[24];
};

struct wsm {
	int files, stage;
	struct ent **tab;
	size_t nb, n;
	unsigned gen, seq;
	uint64_t stored;
	uint64_t shared; /* of stored, what layers hold too (the entries marked shared) */
	struct pending *pend;
	size_t npend, cpend;
	bool layered;	  /* the workspace is an overlay: wsm_sync reads its upper layer (wsm_set_layered) */
	uint64_t changes; /* syncs that changed the mirror (wsm_changes) */
};

/* One sync or restore under way. */
struct walk {
	struct wsm *w;
	struct wsm_stats *st;
	struct al_error *err;
	int fatal; /* the first error that leaves the mirror incomplete */
	bool changed;
	bool own; /* link_tree: entries given to uid:gid (a layer the sandbox's namespace reads) */
	dev_t dev;
	uid_t uid;
	gid_t gid;
	size_t len;
	char path[PATH_MAX];
};

static uint64_t hash_of(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static struct ent *find(const struct wsm *w, const char *path, uint64_t h)
{
	for (struct ent *e = w->nb ? w->tab[h & (w->nb - 1)] : NULL; e; e = e->next)
		if (e->hash == h && strcmp(e->path, path) == 0)
			return e;
	return NULL;
}

static int grow(struct wsm *w)
{
	size_t nb = w->nb ? w->nb * 2 : 256;
	struct ent **tab = calloc(nb, sizeof(struct ent *));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < w->nb; i++)
		for (struct ent *e = w->tab[i], *next; e; e = next) {
			next = e->next;
			e->next = tab[e->hash & (nb - 1)];
			tab[e->hash & (nb - 1)] = e;
		}
	free(w->tab);
	w->tab = tab;
	w->nb = nb;
	return 0;
}

/* Records path as the mirror now holds it (st: what was copied, as seen before the copy); shared:
 * its file is also a layer's (wsm_restore of a mirror a freeze linked from). */
static int record(struct wsm *w, const char *path, const struct stat *st, bool shared)
{
	uint64_t h = hash_of(path);
	struct ent *e = find(w, path, h);
	if (!e) {
		if (w->n >= w->nb && grow(w) < 0)
			return -ENOMEM;
		size_t len = strlen(path) + 1;
		if (!(e = calloc(1, sizeof(*e) + len)))
			return -ENOMEM;
		memcpy(e->path, path, len);
		e->hash = h;
		e->next = w->tab[h & (w->nb - 1)];
		w->tab[h & (w->nb - 1)] = e;
		w->n++;
	}
	w->stored -= e->blocks;
	w->shared -= e->shared ? e->blocks : 0;
	e->ino = st->st_ino;
	e->size = (uint64_t)st->st_size;
	e->blocks = S_ISREG(st->st_mode) ? (uint64_t)st->st_blocks * 512 : 0;
	e->ctime = st->st_ctim;
	e->mode = st->st_mode;
	e->gen = w->gen;
	e->shared = shared && e->blocks;
	w->stored += e->blocks;
	w->shared += e->shared ? e->blocks : 0;
	return 0;
}

/* Whether the workspace's entry is the one the mirror holds. A directory's ctime moves with its
 * entries, which are compared one by one: only its type, mode and inode count (a directory made
 * again in an overlay's upper layer is opaque: its new inode says so). */
static bool same(const struct ent *e, const struct stat *st)
{
	if (!e || e->mode != st->st_mode)
		return false;
	if (S_ISDIR(st->st_mode))
		return e->ino == st->st_ino;
	return e->ino == st->st_ino && e->size == (uint64_t)st->st_size && e->ctime.tv_sec == st->st_ctim.tv_sec &&
	       e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* A path of the mirror's parent directory, resolved beneath it with no link followed: the mirror
 * holds the sandbox's links, which are data here, never a way. */
static int mirror_parent(const struct wsm *w, char *path, const char **leaf)
{
	char *slash = strrchr(path, '/');
	if (!slash) {
		*leaf = path;
		int fd = fcntl(w->files, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	*slash = 0;
	*leaf = slash + 1;
	int fd = al_openat2(w->files, path, O_PATH | O_DIRECTORY, 0, AL_RESOLVE_NOLINKS);
	*slash = '/';
	return fd;
}

static bool is_fatal(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EIO || e == EROFS || e == ENOMEM;
}

static void failed(struct walk *k, int e, const char *what)
{
	if (!is_fatal(e)) {
		k->st->skipped++;
		return;
	}
	if (!k->fatal) {
		k->fatal = -e;
		al_err_sys(k->err, e, "the workspace's copy on disk: %s %s", what, k->path);
	}
}

/* Copies in's data [0, size) to out, holes kept as holes. */
static int copy_data(int in, int out, off_t size, uint64_t *bytes)
{
	cleanup_free char *buf = NULL;
	for (off_t off = 0; off < size;) {
		off_t data = lseek(in, off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		off_t hole = data < 0 ? -1 : lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if (hole > size)
			hole = size;
		for (off_t o = data; o < hole;) {
			off_t oo = o;
			ssize_t n = buf ? -1 : copy_file_range(in, &o, out, &oo, (size_t)(hole - o), 0);
			if (n < 0 &&
			    (buf || errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
				if (!buf && !(buf = malloc(WSM_COPY)))
					return -ENOMEM;
				size_t want = (size_t)(hole - o) < WSM_COPY ? (size_t)(hole - o) : WSM_COPY;
				n = pread(in, buf, want, o);
				if (n > 0 && pwrite(out, buf, (size_t)n, o) != n)
					return errno ? -errno : -EIO;
				if (n > 0)
					o += n;
			}
			if (n < 0)
				return -errno;
			if (n == 0)
				break; /* it shrank meanwhile: the next sync sees its new size */
			*bytes += (uint64_t)n;
		}
		off = hole;
	}
	return ftruncate(out, size) < 0 ? -errno : 0;
}

/* The file name of the workspace's dir, opened for reading. As an ordinary user, a file of its
 * own that it made unreadable (mode 0) is opened after giving the owner read back for a moment:
 * root reads it anyway, and the mode is put back at once. */
static int open_src(int dir, const char *name, int flags)
{
	int fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 || errno != EACCES || geteuid() == 0)
		return fd < 0 ? -errno : fd;
	cleanup_close int p = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (p < 0 || fstat(p, &st) < 0 || st.st_uid != geteuid() || S_ISLNK(st.st_mode))
		return -EACCES;
	char proc[40];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p);
	if (chmod(proc, (st.st_mode & 07777) | (S_ISDIR(st.st_mode) ? 0500 : 0400)) < 0)
		return -EACCES;
	fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	int e = errno;
	(void)chmod(proc, st.st_mode & 07777);
	return fd < 0 ? -e : fd;
}

static int push_pending(struct wsm *w, const char *path, const char *tmp)
{
	if (w->npend == w->cpend) {
		size_t c = w->cpend ? w->cpend * 2 : 64;
		struct pending *p = realloc(w->pend, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		w->pend = p;
		w->cpend = c;
	}
	struct pending *p = &w->pend[w->npend];
	if (!(p->path = strdup(path)))
		return -ENOMEM;
	snprintf(p->tmp, sizeof(p->tmp), "%s", tmp);
	w->npend++;
	return 0;
}

/* The permission bits an entry of the mirror keeps (set-id bits never). Root reads and writes
 * whatever the bits say; a server run as an ordinary user gives itself, the owner, read and write
 * (and search) back, or it could not keep the entry nor read it back. */
static mode_t kept_mode(mode_t mode, mode_t owner)
{
	mode &= 01777;
	return geteuid() == 0 ? mode : mode | owner;
}

/* The bits kept_mode added are taken back at a restore: the exact mode is noted beside them. */
#define WSM_MODE_XATTR "user.airlock.mode"
static int keep_mode(int fd, mode_t mode, mode_t owner)
{
	mode_t kept = kept_mode(mode, owner);
	if (fchmod(fd, kept) < 0)
		return -errno;
	if (kept == (mode & 01777))
		return fremovexattr(fd, WSM_MODE_XATTR) == 0 || errno == ENODATA || errno == EOPNOTSUPP ? 0 : -errno;
	char v[8];
	int n = snprintf(v, sizeof(v), "%o", (unsigned)(mode & 01777));
	/* A filesystem without user attributes (tmpfs before Linux 6.6) keeps the owner's bits added. */
	return fsetxattr(fd, WSM_MODE_XATTR, v, (size_t)n, 0) < 0 && errno != EOPNOTSUPP ? -errno : 0;
}

/* The mode a restored entry gets: the one noted, else the mirror's own. */
static mode_t restored_mode(int fd, mode_t mode)
{
	char v[8] = "";
	ssize_t n = fd < 0 ? -1 : fgetxattr(fd, WSM_MODE_XATTR, v, sizeof(v) - 1);
	unsigned long m = n > 0 ? strtoul(v, NULL, 8) : (unsigned long)mode;
	return (mode_t)m & 01777;
}

/* Stages the regular file name of src (st: as seen before): 0, 1 when it changed kind meanwhile
 * (left for the next sync), or -errno. */
static int stage_file(struct walk *k, int src, const char *name, const struct stat *st)
{
	struct wsm *w = k->w;
	cleanup_close int in = open_src(src, name, O_RDONLY);
	struct stat now;
	if (in < 0)
		return in;
	if (fstat(in, &now) < 0 || !S_ISREG(now.st_mode) || now.st_ino != st->st_ino)
		return 1;
	char tmp[24];
	snprintf(tmp, sizeof(tmp), "t%u", w->seq++);
	cleanup_close int out = openat(w->stage, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	int r = copy_data(in, out, st->st_size, &k->st->bytes);
	struct timespec t[2] = {st->st_atim, st->st_mtim};
	if (r == 0 && (r = keep_mode(out, st->st_mode & 0777, 0600)) == 0 && futimens(out, t) < 0)
		r = -errno;
	r = r ?: push_pending(w, k->path, tmp);
	if (r < 0)
		(void)unlinkat(w->stage, tmp, 0);
	return r;
}

static int stage_link(struct walk *k, int src, const char *name)
{
	struct wsm *w = k->w;
	char target[PATH_MAX], tmp[24];
	ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	snprintf(tmp, sizeof(tmp), "t%u", w->seq++);
	if (symlinkat(target, w->stage, tmp) < 0)
		return -errno;
	int r = push_pending(w, k->path, tmp);
	if (r < 0)
		(void)unlinkat(w->stage, tmp, 0);
	return r;
}

/* An overlay's whiteout (a character device 0:0: an entry of a lower layer deleted), kept as
 * overlayfs keeps it, so that the mirror is a layer itself (a fork's or a snapshot's). Making one
 * needs no privilege (Linux 5.8); the sandbox cannot plant one: it holds no CAP_MKNOD, and the
 * overlay makes whiteouts only of deletions. */
static bool is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == 0;
}

static int stage_whiteout(struct walk *k)
{
	struct wsm *w = k->w;
	char tmp[24];
	snprintf(tmp, sizeof(tmp), "t%u", w->seq++);
	if (mknodat(w->stage, tmp, S_IFCHR, 0) < 0)
		return -errno;
	int r = push_pending(w, k->path, tmp);
	if (r < 0)
		(void)unlinkat(w->stage, tmp, 0);
	return r;
}

/* An upper layer's directory made again over a lower one hides the lower's entries: overlayfs
 * marks it so (user.overlay.opaque, as the userxattr mount option names it), and the mirror keeps
 * the mark. Only the overlay sets it: it refuses the sandbox its own attributes. */
#define WSM_OPAQUE_XATTR "user.overlay.opaque"
static bool opaque(int dir)
{
	char v[4];
	ssize_t n = fgetxattr(dir, WSM_OPAQUE_XATTR, v, sizeof(v));
	return n > 0 && v[0] == 'y';
}

static int keep_opaque(int src, int dst)
{
	if (opaque(src))
		return fsetxattr(dst, WSM_OPAQUE_XATTR, "y", 1, 0) < 0 ? -errno : 0;
	return fremovexattr(dst, WSM_OPAQUE_XATTR) == 0 || errno == ENODATA || errno == EOPNOTSUPP ? 0 : -errno;
}

/* The mirror's directory name in dst, made as needed, its mode set unless it is unchanged (and
 * for an upper layer's, src, its opaque mark). */
static int mirror_dir(struct walk *k, int dst, const char *name, const struct stat *st, bool unchanged, int src)
{
	if (mkdirat(dst, name, kept_mode(st->st_mode, 0700)) == 0)
		k->changed = true, unchanged = false;
	else if (errno != EEXIST)
		return -errno;
	int fd = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = unchanged ? 0 : keep_mode(fd, st->st_mode, 0700);
	if (r == 0 && !unchanged && k->w->layered)
		r = keep_opaque(src, fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* What a walk does with one entry: 0 to go on, else the error that stops it. */
typedef int entry_fn(struct walk *k, int src, int dst, const char *name, int depth);

/* fn for each entry of directory src, from our own descriptor of it (a name from readdir is one
 * component: nothing on the way can be swapped), until one fails. */
static int each_entry(struct walk *k, int src, int dst, int depth, entry_fn *fn)
{
	int fd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			r = fn(k, src, dst, de->d_name, depth);
	closedir(d);
	return r;
}

static int sync_tree(struct walk *k, int src, int dst, int depth);

/* One entry of the workspace's directory src, against the mirror's dst: 0, or the walk's fatal error. */
/* NOLINTNEXTLINE(misc-no-recursion): with sync_tree, bounded by WSM_DEPTH */
static int sync_entry(struct walk *k, int src, int dst, const char *name, int depth)
{
	struct stat st;
	if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* gone meanwhile: the sweep removes it */
	size_t base = k->len, nl = strlen(name);
	bool wh = k->w->layered && is_whiteout(&st);
	if ((!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode) && !wh) || st.st_dev != k->dev ||
	    base + nl + 2 > sizeof(k->path) || (S_ISDIR(st.st_mode) && depth >= WSM_DEPTH)) {
		k->st->skipped++;
		return 0;
	}
	if (base)
		k->path[k->len++] = '/';
	memcpy(k->path + k->len, name, nl + 1);
	k->len += nl;
	struct ent *e = find(k->w, k->path, hash_of(k->path));
	bool unchanged = same(e, &st);
	int r = 0;
	if (!e || (e->mode & S_IFMT) != (st.st_mode & S_IFMT)) {
		uint64_t gone = 0;
		r = ws_rm_beneath(dst, name, &gone, NULL); /* what the mirror had there, of another kind */
		r = r == -ENOENT ? 0 : r;
	}
	if (r == 0 && S_ISDIR(st.st_mode)) {
		cleanup_close int s = open_src(src, name, O_RDONLY | O_DIRECTORY);
		cleanup_close int d = s < 0 ? s : mirror_dir(k, dst, name, &st, unchanged, s);
		r = d < 0 ? d : sync_tree(k, s, d, depth + 1);
	} else if (r == 0 && !unchanged) {
		r = S_ISREG(st.st_mode) ? stage_file(k, src, name, &st)
		    : wh		? stage_whiteout(k)
					: stage_link(k, src, name);
		k->st->copied += r == 0;
	}
	/* Unchanged, it is still the file a layer may share; copied, it is the mirror's own. */
	if (r == 0)
		r = record(k->w, k->path, &st, unchanged && e && e->shared);
	else if (e)
		e->gen = k->w->gen, e->ctime.tv_nsec = -1; /* kept as it was; copied again next time */
	if (r < 0)
		failed(k, -r, "cannot keep");
	k->len = base;
	k->path[base] = 0;
	return k->fatal;
}

/* NOLINTNEXTLINE(misc-no-recursion): with sync_entry, bounded by WSM_DEPTH */
static int sync_tree(struct walk *k, int src, int dst, int depth)
{
	return each_entry(k, src, dst, depth, sync_entry);
}

/* The staged entries renamed into place (after they were flushed). */
static void commit(struct walk *k)
{
	struct wsm *w = k->w;
	for (size_t i = 0; i < w->npend; i++) {
		struct pending *p = &w->pend[i];
		const char *leaf;
		int pfd = mirror_parent(w, p->path, &leaf);
		if (pfd < 0 || renameat(w->stage, p->tmp, pfd, leaf) < 0) {
			int e = pfd < 0 ? -pfd : errno;
			(void)unlinkat(w->stage, p->tmp, 0);
			snprintf(k->path, sizeof(k->path), "%s", p->path);
			failed(k, is_fatal(e) ? e : EIO, "cannot put in place");
		}
		if (pfd >= 0)
			close(pfd);
		k->changed = true;
		free(p->path);
	}
	w->npend = 0;
}

/* Removes from the mirror (and the index) what the walk did not see. */
static void sweep(struct walk *k)
{
	struct wsm *w = k->w;
	for (size_t i = 0; i < w->nb; i++)
		for (struct ent **pp = &w->tab[i]; *pp;) {
			struct ent *e = *pp;
			if (e->gen == w->gen) {
				pp = &e->next;
				continue;
			}
			const char *leaf;
			int pfd = mirror_parent(w, e->path, &leaf);
			uint64_t n = 0;
			if (pfd >= 0) {
				(void)ws_rm_beneath(pfd, leaf, &n, NULL); /* ENOENT: its directory went first */
				close(pfd);
			}
			k->st->removed++;
			k->changed = true;
			w->stored -= e->blocks;
			w->shared -= e->shared ? e->blocks : 0;
			*pp = e->next;
			w->n--;
			free(e);
		}
}

static int flush(struct walk *k)
{
	if (syncfs(k->w->files) < 0 && !k->fatal) {
		k->fatal = -errno;
		al_err_sys(k->err, errno, "the workspace's copy on disk: cannot flush it");
	}
	return k->fatal;
}

int wsm_sync(struct wsm *w, int ws, struct wsm_stats *st, struct al_error *err)
{
	struct wsm_stats none = {0};
	struct walk k = {.w = w, .st = st ? st : &none, .err = err};
	*k.st = (struct wsm_stats){0};
	struct stat root;
	if (fstat(ws, &root) < 0)
		return al_err_sys(err, errno, "the workspace");
	k.dev = root.st_dev;
	w->gen++;
	int r = sync_tree(&k, ws, w->files, 0);
	if (r < 0 && !k.fatal)
		failed(&k, -r, "cannot read");
	if (w->npend) {
		flush(&k);
		if (k.fatal) /* staged but not durable: nothing of it replaces what was kept */
			for (size_t i = 0; i < w->npend; i++)
				(void)unlinkat(w->stage, w->pend[i].tmp, 0), free(w->pend[i].path),
					w->pend[i].path = NULL;
		w->npend = k.fatal ? 0 : w->npend;
		commit(&k);
	}
	if (!k.fatal) /* a walk cut short saw only part: nothing is removed for not being seen */
		sweep(&k);
	if (k.changed) {
		flush(&k);
		w->changes++;
	}
	k.st->entries = w->n;
	k.st->stored = w->stored;
	k.st->shared = w->shared;
	return k.fatal;
}

/* ---- restore ------------------------------------------------------------------------------- */

static int restore_tree(struct walk *k, int src, int dst, int depth);

/* Makes name in the workspace's dst as the sandbox user (a new inode of ours would carry an id
 * the sandbox's user namespace does not map): fd, or -errno. */
static int make_in_ws(struct walk *k, int dst, const char *name, const struct stat *st, const char *target)
{
	struct ws_cred saved;
	ws_become(k->uid, k->gid, &saved);
	int fd;
	if (S_ISDIR(st->st_mode))
		fd = mkdirat(dst, name, 0700) < 0 ? -1
						  : openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	else if (S_ISLNK(st->st_mode))
		fd = symlinkat(target, dst, name) < 0 ? -1 : openat(dst, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	else
		fd = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int e = errno;
	ws_restore(&saved);
	return fd < 0 ? -e : fd;
}

/* Into an overlay's merged view (a layered sandbox brought back), name of the mirror's src over
 * what its layers show in dst: 1 when done (a whiteout: the layers' entry deleted), 2 to fill the
 * layers' directory in place, 0 to make the entry (what stood there removed first: through the
 * overlay, a deletion of a layer's entry is a whiteout in the upper layer), or -errno. */
static int restore_over(int src, int dst, const char *name, const struct stat *st)
{
	struct stat now;
	if (fstatat(dst, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? (is_whiteout(st) ? 1 : 0) : -errno;
	if (S_ISDIR(st->st_mode) && S_ISDIR(now.st_mode)) {
		cleanup_close int d = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d < 0)
			return -errno;
		if (!opaque(d))
			return 2;
	}
	uint64_t n = 0;
	int r = ws_rm_beneath(dst, name, &n, NULL);
	return r < 0 && r != -ENOENT ? r : is_whiteout(st) ? 1 : 0;
}

static int open_dir_in(int dst, const char *name)
{
	int fd = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* NOLINTNEXTLINE(misc-no-recursion): with restore_tree, bounded by WSM_DEPTH */
static int restore_entry(struct walk *k, int src, int dst, const char *name, int depth)
{
	struct stat st;
	char target[PATH_MAX] = "";
	if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	int pre = k->w->layered ? restore_over(src, dst, name, &st) : 0;
	if (pre != 0 && pre != 2)
		return pre < 0 ? pre : 0;
	size_t base = k->len, nl = strlen(name);
	if (base + nl + 2 > sizeof(k->path) || depth >= WSM_DEPTH)
		return -ENAMETOOLONG;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = 0;
	} else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		return 0;
	}
	if (base)
		k->path[k->len++] = '/';
	memcpy(k->path + k->len, name, nl + 1);
	k->len += nl;
	cleanup_close int out = pre == 2 ? open_dir_in(dst, name) : make_in_ws(k, dst, name, &st, target);
	int r = out < 0 ? out : 0;
	mode_t mode = st.st_mode & 01777;
	if (r == 0 && S_ISDIR(st.st_mode)) {
		cleanup_close int in = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		mode = restored_mode(in, mode);
		r = in < 0 ? -errno : restore_tree(k, in, out, depth + 1);
	} else if (r == 0 && S_ISREG(st.st_mode)) {
		cleanup_close int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		mode = restored_mode(in, mode);
		r = in < 0 ? -errno : copy_data(in, out, st.st_size, &k->st->bytes);
	}
	struct timespec t[2] = {st.st_atim, st.st_mtim};
	if (r == 0 && !S_ISLNK(st.st_mode) && (fchmod(out, mode) < 0 || futimens(out, t) < 0))
		r = -errno;
	struct stat now;
	if (r == 0 && fstatat(dst, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	r = r ?: record(k->w, k->path, &now, S_ISREG(st.st_mode) && st.st_nlink > 1);
	k->st->copied += r == 0;
	k->len = base;
	k->path[base] = 0;
	return r;
}

/* NOLINTNEXTLINE(misc-no-recursion): with restore_entry, bounded by WSM_DEPTH */
static int restore_tree(struct walk *k, int src, int dst, int depth)
{
	return each_entry(k, src, dst, depth, restore_entry);
}

int wsm_restore(struct wsm *w, int ws, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err)
{
	struct wsm_stats none = {0};
	struct walk k = {.w = w, .st = st ? st : &none, .err = err, .uid = uid, .gid = gid};
	*k.st = (struct wsm_stats){0};
	w->gen++;
	int r = restore_tree(&k, w->files, ws, 0);
	if (r < 0)
		return al_err_sys(err, -r, "cannot bring back the workspace's %s%s", k.path[0] ? "file " : "files",
				  k.path);
	k.st->entries = w->n;
	k.st->stored = w->stored;
	k.st->shared = w->shared;
	return 0;
}

/* ---- the mirror ---------------------------------------------------------------------------- */

int wsm_open(int files, int stage, struct wsm **out, struct al_error *err)
{
	struct wsm *w = calloc(1, sizeof(*w));
	if (!w)
		return al_err(err, ENOMEM, "out of memory");
	w->files = fcntl(files, F_DUPFD_CLOEXEC, 3);
	w->stage = fcntl(stage, F_DUPFD_CLOEXEC, 3);
	if (w->files < 0 || w->stage < 0 || grow(w) < 0) {
		wsm_free(w);
		return al_err(err, EMFILE, "the workspace's copy on disk: out of descriptors or memory");
	}
	*out = w;
	return 0;
}

void wsm_free(struct wsm *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nb; i++)
		for (struct ent *e = w->tab[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	for (size_t i = 0; i < w->npend; i++)
		free(w->pend[i].path);
	free(w->pend);
	free(w->tab);
	if (w->files >= 0)
		close(w->files);
	if (w->stage >= 0)
		close(w->stage);
	free(w);
}

/* ---- a mirror seeded from another (a fork) ---------------------------------------------------- */

static int link_tree(struct walk *k, int src, int dst, int depth);

/* NOLINTNEXTLINE(misc-no-recursion): with link_tree, bounded by WSM_DEPTH */
static int link_entry(struct walk *k, int src, int dst, const char *name, int depth)
{
	struct stat st;
	if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		/* A mirror's file is never written in place (a change is staged and renamed over it),
		 * so both mirrors may hold the same inode until either changes it. */
		if (linkat(src, name, dst, name, 0) < 0)
			return -errno;
		/* The inode is the other mirror's too: its owner only ever becomes the sandbox's. */
		if (k->own && (st.st_uid != k->uid || st.st_gid != k->gid) &&
		    fchownat(dst, name, k->uid, k->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		k->st->entries++;
		/* What the frozen copy holds (a snapshot's bytes, its quota): the data, not its links. */
		if (S_ISREG(st.st_mode))
			k->st->stored += (uint64_t)st.st_size;
		return 0;
	}
	if (depth >= WSM_DEPTH)
		return -ENAMETOOLONG;
	if (mkdirat(dst, name, 0700) < 0)
		return -errno;
	cleanup_close int in = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cleanup_close int out = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r = in < 0 || out < 0 ? -errno : link_tree(k, in, out, depth + 1);
	/* The directory as the other mirror keeps it: its bits, the exact mode noted, its times. */
	char v[8];
	ssize_t n = r == 0 ? fgetxattr(in, WSM_MODE_XATTR, v, sizeof(v)) : -1;
	if (r == 0 && n > 0 && fsetxattr(out, WSM_MODE_XATTR, v, (size_t)n, 0) < 0 && errno != EOPNOTSUPP)
		r = -errno;
	if (r == 0 && opaque(in) && fsetxattr(out, WSM_OPAQUE_XATTR, "y", 1, 0) < 0)
		r = -errno;
	if (r == 0 && k->own && fchown(out, k->uid, k->gid) < 0)
		r = -errno;
	struct timespec t[2] = {st.st_atim, st.st_mtim};
	if (r == 0 && (fchmod(out, st.st_mode & 01777) < 0 || futimens(out, t) < 0))
		r = -errno;
	k->st->entries += r == 0;
	return r;
}

static int link_tree(struct walk *k, int src, int dst, int depth)
{
	return each_entry(k, src, dst, depth, link_entry);
}

int wsm_link(const struct wsm *from, struct wsm *to, struct wsm_stats *st, struct al_error *err)
{
	struct wsm_stats none = {0};
	struct walk k = {.w = to, .st = st ? st : &none, .err = err};
	*k.st = (struct wsm_stats){0};
	int r = link_tree(&k, from->files, to->files, 0);
	return r < 0 ? al_err_sys(err, -r, "cannot seed a mirror from another") : 0;
}

int wsm_freeze(struct wsm *from, int to, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err)
{
	struct wsm_stats none = {0};
	/* As an ordinary user every entry is ours, as the sandbox's ids are. */
	struct walk k = {.w = NULL, .st = st ? st : &none, .err = err, .uid = uid, .gid = gid, .own = geteuid() == 0};
	*k.st = (struct wsm_stats){0};
	int r = link_tree(&k, from->files, to, 0);
	if (r == 0 && syncfs(to) < 0)
		r = -errno;
	if (r < 0)
		return al_err_sys(err, -r, "cannot freeze the workspace's files into a layer");
	/* Every file the mirror holds is the layer's now too: a later change of one is a new file
	 * beside the layer's, so the room it takes is new (persist.c's room check counts it). */
	for (size_t i = 0; i < from->nb; i++)
		for (struct ent *e = from->tab[i]; e; e = e->next)
			e->shared = e->blocks > 0;
	from->shared = from->stored;
	return 0;
}

uint64_t wsm_changes(const struct wsm *w)
{
	return w->changes;
}

void wsm_set_layered(struct wsm *w, bool layered)
{
	w->layered = layered;
}

int wsm_copy(int from, int to, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err)
{
	struct wsm *w = NULL;
	/* A mirror whose files are the live workspace: restore's walk, which never follows a link
	 * and makes each entry as the sandbox user, is the copy; its index is not needed. */
	int r = wsm_open(from, from, &w, err);
	if (r == 0 && w)
		r = wsm_restore(w, to, uid, gid, st, err);
	wsm_free(w);
	return r;
}
