/* persist.c — the state directory (see persist.h). */
#include "manager/persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "manager/wsint.h"
#include "util/fsutil.h"

#define PST_RECORD "sandbox.json"
#define PST_TRASH  ".gone-"	/* a removed sandbox's state, until it is emptied */
#define PST_LAYERS ".layers"	/* frozen workspaces (persist.h): a name no sandbox id can take */
#define PST_SNAPS  ".snapshots" /* snapshots' records (persist.h) */

/* A layer and how many kept sandboxes and snapshots stand on it. */
struct pst_layer {
	char id[PST_LAYER_ID];
	unsigned refs;
};

struct pst {
	char *path;
	int dir, lock;
	pthread_mutex_t mu;
	struct pst_box *boxes;	  /* for the room promised (under mu) */
	struct pst_layer *layers; /* under mu */
	size_t nlayers;
};

struct pst_box {
	struct pst_box *next;
	struct pst *p;
	char id[64];
	int dir;
	uint64_t disk; /* the room promised */
	/* What its mirror holds alone, as of its last sync: the bytes it shares with a layer are not
	 * counted, since a change of such a file is a new file beside the layer's (wsm_stats.shared). */
	uint64_t held;
	uint64_t stored; /* what its mirror holds (wsm_stats.stored), as of its last sync */
	pthread_mutex_t mu;
	struct wsm *w;
	json_t *layers; /* the ids its workspace stands on (pst_box_layers), or NULL */
	/* Its last freeze (a reference held on it): a fork of files unchanged since reuses it. */
	char frozen[PST_LAYER_ID];
	uint64_t frozen_at; /* wsm_changes then */
	struct wsm_stats frozen_st;
};

static void clear_trash(struct pst *p)
{
	int fd = openat(p->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, PST_TRASH, sizeof(PST_TRASH) - 1) == 0) {
			uint64_t n = 0;
			(void)ws_rm_beneath(dirfd(d), de->d_name, &n, NULL);
		}
	closedir(d);
}

int pst_open(const char *dir, struct pst **out, struct al_error *err)
{
	if (!dir || dir[0] != '/')
		return al_err(err, EINVAL, "the state directory must be an absolute path, not \"%s\"", dir ? dir : "");
	struct pst *p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(dir))) {
		free(p);
		return al_err(err, ENOMEM, "out of memory");
	}
	p->dir = p->lock = -1;
	pthread_mutex_init(&p->mu, NULL);
	int r = al_make_parents(dir, 0755);
	if (r == 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0 && (p->dir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	struct stat st;
	if (r == 0 && fstat(p->dir, &st) < 0)
		r = -errno;
	/* Sandboxes' files and records are read back from here as they are: nobody else may plant them. */
	if (r == 0 && (st.st_uid != geteuid() || (st.st_mode & 022))) {
		pst_close(p);
		return al_err(err, EPERM,
			      "the state directory %s must be %s's and writable by it alone (mode %04o, owner %u)", dir,
			      geteuid() == 0 ? "root" : "this user", (unsigned)(st.st_mode & 07777),
			      (unsigned)st.st_uid);
	}
	if (r == 0 && (p->lock = openat(p->dir, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		r = -errno;
	if (r < 0) {
		pst_close(p);
		return al_err_sys(err, -r, "the state directory %s", dir);
	}
	if (flock(p->lock, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		pst_close(p);
		return e == EWOULDBLOCK
			       ? al_err(err, EBUSY,
					"another airlock serve keeps its sandboxes in %s: give this one its own "
					"(--state-dir DIR)",
					dir)
			       : al_err_sys(err, e, "cannot lock the state directory %s", dir);
	}
	clear_trash(p);
	*out = p;
	return 0;
}

void pst_close(struct pst *p)
{
	if (!p)
		return;
	if (p->lock >= 0)
		close(p->lock);
	if (p->dir >= 0)
		close(p->dir);
	pthread_mutex_destroy(&p->mu);
	free(p->layers);
	free(p->path);
	free(p);
}

const char *pst_path(const struct pst *p)
{
	return p->path;
}

int pst_record_path(const struct pst *p, const char *id, bool snapshot, char *buf, size_t len)
{
	cleanup_free char *abs = realpath(p->path, NULL); /* --state-dir may be relative */
	if (!abs)
		return -errno;
	int n = snapshot ? snprintf(buf, len, "%s/" PST_SNAPS "/%s.json", abs, id)
			 : snprintf(buf, len, "%s/%s/" PST_RECORD, abs, id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* An id as the manager makes them: letters and digits only (a name of the directory, never a path). */
static bool id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n >= 64)
		return false;
	for (const char *c = id; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
		      *c == '_'))
			return false;
	return true;
}

int pst_list(struct pst *p, json_t **ids, struct al_error *err)
{
	int fd = openat(p->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	json_t *a = json_array();
	if (!d || !a) {
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
		json_decref(a);
		return al_err_sys(err, errno ? errno : ENOMEM, "cannot read the state directory %s", p->path);
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && id_ok(de->d_name) && faccessat(dirfd(d), de->d_name, F_OK, 0) == 0)
			json_array_append_new(a, json_string(de->d_name));
	closedir(d);
	*ids = a;
	return 0;
}

/* Room for disk more bytes (what needs them) beside what is promised: under p->mu. */
static int room_locked(struct pst *p, uint64_t disk, const char *what, struct al_error *err)
{
	struct statvfs v;
	if (fstatvfs(p->dir, &v) < 0)
		return al_err_sys(err, errno, "the state directory %s", p->path);
	if (v.f_flag & ST_RDONLY)
		return al_err(err, EROFS,
			      "the state directory %s is read-only: no sandbox can be kept, so none is made", p->path);
	uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize, promised = 0;
	for (const struct pst_box *b = p->boxes; b; b = b->next)
		promised += b->disk > b->held ? b->disk - b->held : 0;
	if (promised + disk > free_bytes)
		return al_err(err, ENOSPC,
			      "the state directory %s has %llu MiB free, and %s needs %llu MiB beside the %llu MiB "
			      "the kept sandboxes may still write: nothing is made; free space there, ask for a "
			      "smaller disk_mb, or run serve with --state-dir none",
			      p->path, (unsigned long long)(free_bytes >> 20), what,
			      (unsigned long long)((disk + (1 << 20) - 1) >> 20), (unsigned long long)(promised >> 20));
	return 0;
}

int pst_room(struct pst *p, uint64_t disk, const char *what, struct al_error *err)
{
	pthread_mutex_lock(&p->mu);
	int r = room_locked(p, disk, what, err);
	pthread_mutex_unlock(&p->mu);
	return r;
}

static int box_dirs(struct pst_box *b, bool make, struct al_error *err)
{
	struct pst *p = b->p;
	if (make && mkdirat(p->dir, b->id, 0700) < 0)
		return al_err_sys(err, errno, "cannot keep sandbox %s in %s", b->id, p->path);
	b->dir = openat(p->dir, b->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (b->dir < 0)
		return al_err_sys(err, errno, "cannot keep sandbox %s in %s", b->id, p->path);
	for (int i = 0; i < 2; i++) {
		const char *n = i ? "stage" : "files";
		if (mkdirat(b->dir, n, 0700) < 0 && errno != EEXIST)
			return al_err_sys(err, errno, "cannot keep sandbox %s in %s", b->id, p->path);
	}
	/* What a sync staged and never put in place (it was cut short) is nobody's. */
	uint64_t n = 0;
	(void)ws_rm_beneath(b->dir, "stage", &n, NULL);
	if (mkdirat(b->dir, "stage", 0700) < 0 && errno != EEXIST)
		return al_err_sys(err, errno, "cannot keep sandbox %s in %s", b->id, p->path);
	cleanup_close int files = openat(b->dir, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cleanup_close int stage = openat(b->dir, "stage", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (files < 0 || stage < 0)
		return al_err_sys(err, errno, "cannot keep sandbox %s in %s", b->id, p->path);
	return wsm_open(files, stage, &b->w, err);
}

static int box_new(struct pst *p, const char *id, uint64_t disk, bool make, struct pst_box **out, struct al_error *err)
{
	if (!id_ok(id))
		return al_err(err, EINVAL, "bad sandbox id \"%s\"", id);
	struct pst_box *b = calloc(1, sizeof(*b));
	if (!b)
		return al_err(err, ENOMEM, "out of memory");
	b->p = p;
	b->dir = -1;
	b->disk = disk;
	snprintf(b->id, sizeof(b->id), "%s", id);
	pthread_mutex_init(&b->mu, NULL);
	pthread_mutex_lock(&p->mu);
	int r = make ? room_locked(p, disk, "keeping this sandbox (its disk limit)", err) : 0;
	r = r ?: box_dirs(b, make, err);
	if (r == 0) {
		b->next = p->boxes;
		p->boxes = b;
	}
	pthread_mutex_unlock(&p->mu);
	if (r < 0) {
		b->p = make ? p : NULL; /* a new one goes; a kept one stays on disk */
		pst_box_close(b, make);
		return r;
	}
	*out = b;
	return 0;
}

int pst_box_make(struct pst *p, const char *id, uint64_t disk, struct pst_box **out, struct al_error *err)
{
	return box_new(p, id, disk, true, out, err);
}

int pst_box_open(struct pst *p, const char *id, uint64_t disk, struct pst_box **out, json_t **rec, struct al_error *err)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s/" PST_RECORD, p->path, id);
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return al_err(err, EINVAL, "sandbox %s's record %s: %s", id, path, je.text);
	}
	json_t *dl = json_object_get(j, "disk_limit"); /* the room it was promised */
	uint64_t promised = disk						? disk
			    : json_is_integer(dl) && json_integer_value(dl) > 0 ? (uint64_t)json_integer_value(dl)
										: 0;
	int r = box_new(p, id, promised, false, out, err);
	if (r < 0) {
		json_decref(j);
		return r;
	}
	*rec = j;
	return 0;
}

/* rec as dir/name, durably: a temporary file, flushed, renamed, the directory flushed (a crash
 * leaves the old record or the new one, never half of one). 0 or -errno. */
static int write_record(int dir, const char *name, const json_t *rec)
{
	cleanup_free char *text = json_dumps(rec, JSON_COMPACT);
	char tmp[96];
	if (!text)
		return -ENOMEM;
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : al_write_all(fd, text, strlen(text));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	if (r == 0 && renameat(dir, tmp, dir, name) < 0)
		r = -errno;
	/* A record that could not be written whole (no room) leaves nothing half-written behind. */
	if (r < 0 && fd >= 0)
		(void)unlinkat(dir, tmp, 0);
	if (r == 0 && fsync(dir) < 0)
		r = -errno;
	return r;
}

int pst_box_save(struct pst_box *b, const json_t *rec, struct al_error *err)
{
	pthread_mutex_lock(&b->mu);
	int r = write_record(b->dir, PST_RECORD, rec);
	pthread_mutex_unlock(&b->mu);
	return r < 0 ? al_err_sys(err, -r, "cannot keep sandbox %s's record in %s", b->id, b->p->path) : 0;
}

/* ---- snapshots' records ----------------------------------------------------------------------- */

/* DIR/.snapshots, made with the first snapshot (a server that never takes one leaves the state
 * directory as it was): its descriptor, or -errno. */
static int snaps_dir(struct pst *p, bool make)
{
	if (make && mkdirat(p->dir, PST_SNAPS, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(p->dir, PST_SNAPS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int pst_snap_save(struct pst *p, const char *id, const json_t *rec, struct al_error *err)
{
	char name[80];
	if (!id_ok(id))
		return al_err(err, EINVAL, "bad snapshot id \"%s\"", id);
	snprintf(name, sizeof(name), "%s.json", id);
	cleanup_close int d = snaps_dir(p, true);
	/* The directory itself flushed into the state directory once, with its first record. */
	int r = d < 0 ? d : write_record(d, name, rec);
	if (r == 0 && fsync(p->dir) < 0)
		r = -errno;
	return r < 0 ? al_err_sys(err, -r, "cannot keep snapshot %s's record in %s/" PST_SNAPS, id, p->path) : 0;
}

int pst_snap_remove(struct pst *p, const char *id, struct al_error *err)
{
	char name[80];
	if (!id_ok(id))
		return al_err(err, EINVAL, "bad snapshot id \"%s\"", id);
	snprintf(name, sizeof(name), "%s.json", id);
	cleanup_close int d = snaps_dir(p, false);
	int r = d < 0 ? d : unlinkat(d, name, 0) < 0 ? -errno : 0;
	if (r == 0 && fsync(d) < 0)
		r = -errno;
	return r < 0 ? al_err_sys(err, -r, "cannot remove snapshot %s's record from %s/" PST_SNAPS, id, p->path) : 0;
}

int pst_snap_list(struct pst *p, json_t **recs, struct al_error *err)
{
	json_t *a = json_array();
	if (!a)
		return al_err(err, ENOMEM, "out of memory");
	*recs = a;
	int d = snaps_dir(p, false);
	DIR *dir = d < 0 ? NULL : fdopendir(d);
	if (!dir) {
		if (d >= 0)
			close(d);
		return d == -ENOENT ? 0 : al_err_sys(err, d < 0 ? -d : errno, "cannot read %s/" PST_SNAPS, p->path);
	}
	struct dirent *de;
	while ((de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		if (n <= 5 || n >= 80 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue; /* ".", "..", and a record a crash left half-written (NAME.json.tmp) */
		char id[80];
		snprintf(id, sizeof(id), "%.*s", (int)(n - 5), de->d_name);
		int fd = id_ok(id) ? openat(dirfd(dir), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
		json_error_t je;
		json_t *rec = fd < 0 ? NULL : json_loadfd(fd, 0, &je);
		if (fd >= 0)
			close(fd);
		if (json_is_object(rec))
			json_array_append_new(a, rec);
		else
			json_decref(rec);
	}
	closedir(dir);
	return 0;
}

int pst_box_sync(struct pst_box *b, int ws, struct wsm_stats *st, struct al_error *err)
{
	struct wsm_stats s;
	pthread_mutex_lock(&b->mu);
	int r = wsm_sync(b->w, ws, &s, err);
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_lock(&b->p->mu);
	b->held = s.stored - s.shared;
	b->stored = s.stored;
	pthread_mutex_unlock(&b->p->mu);
	if (st)
		*st = s;
	return r;
}

uint64_t pst_box_stored(struct pst_box *b)
{
	pthread_mutex_lock(&b->p->mu);
	uint64_t n = b->stored;
	pthread_mutex_unlock(&b->p->mu);
	return n;
}

int pst_box_restore(struct pst_box *b, int ws, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err)
{
	struct wsm_stats s;
	pthread_mutex_lock(&b->mu);
	int r = wsm_restore(b->w, ws, uid, gid, &s, err);
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_lock(&b->p->mu);
	b->held = s.stored - s.shared;
	b->stored = s.stored;
	pthread_mutex_unlock(&b->p->mu);
	if (st)
		*st = s;
	return r;
}

int pst_box_seed(struct pst_box *b, struct pst_box *from, struct al_error *err)
{
	pthread_mutex_lock(&from->mu);
	pthread_mutex_lock(&b->mu);
	int r = wsm_link(from->w, b->w, NULL, err);
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_unlock(&from->mu);
	return r;
}

/* ---- layers -------------------------------------------------------------------------------- */

static struct pst_layer *layer_find_locked(struct pst *p, const char *id)
{
	for (size_t i = 0; i < p->nlayers; i++)
		if (strcmp(p->layers[i].id, id) == 0)
			return &p->layers[i];
	return NULL;
}

static int layer_ref_locked(struct pst *p, const char *id)
{
	struct pst_layer *l = layer_find_locked(p, id);
	if (l) {
		l->refs++;
		return 0;
	}
	struct pst_layer *n = realloc(p->layers, (p->nlayers + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->layers = n;
	snprintf(n[p->nlayers].id, sizeof(n[p->nlayers].id), "%s", id);
	n[p->nlayers++].refs = 1;
	return 0;
}

int pst_layers_ref(struct pst *p, const json_t *ids)
{
	size_t i;
	const json_t *v;
	int r = 0;
	pthread_mutex_lock(&p->mu);
	json_array_foreach(ids, i, v) {
		if (r == 0 && json_is_string(v) && id_ok(json_string_value(v)))
			r = layer_ref_locked(p, json_string_value(v));
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

static void discard_in(struct pst *p, const char *dir, const char *id);

void pst_layers_unref(struct pst *p, const json_t *ids)
{
	size_t i;
	const json_t *v;
	json_array_foreach(ids, i, v) {
		const char *id = json_string_value(v);
		pthread_mutex_lock(&p->mu);
		struct pst_layer *l = id ? layer_find_locked(p, id) : NULL;
		bool gone = l && --l->refs == 0;
		if (gone)
			*l = p->layers[--p->nlayers];
		pthread_mutex_unlock(&p->mu);
		if (gone) /* no sandbox nor snapshot stands on it any more */
			discard_in(p, PST_LAYERS, id);
	}
}

int pst_layers_gc(struct pst *p)
{
	int fd = openat(p->dir, PST_LAYERS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!id_ok(de->d_name))
			continue;
		pthread_mutex_lock(&p->mu);
		bool used = layer_find_locked(p, de->d_name) != NULL;
		pthread_mutex_unlock(&p->mu);
		if (!used) {
			discard_in(p, PST_LAYERS, de->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

int pst_layer_path(const struct pst *p, const char *id, char *buf, size_t len)
{
	if (!id_ok(id) || (size_t)snprintf(buf, len, "%s/" PST_LAYERS "/%s/files", p->path, id) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int pst_layer_freeze(struct pst_box *from, uid_t uid, gid_t gid, char id[PST_LAYER_ID], struct wsm_stats *st,
		     struct al_error *err)
{
	struct pst *p = from->p;
	pthread_mutex_lock(&from->mu);
	bool same = from->frozen[0] && wsm_changes(from->w) == from->frozen_at;
	pthread_mutex_unlock(&from->mu);
	if (same) {
		snprintf(id, PST_LAYER_ID, "%s", from->frozen);
		if (st)
			*st = from->frozen_st;
		return 0;
	}
	unsigned char rnd[8];
	if (getentropy(rnd, sizeof(rnd)) < 0)
		return al_err_sys(err, errno, "cannot name a layer");
	snprintf(id, PST_LAYER_ID, "l%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5],
		 rnd[6], rnd[7]);
	/* Made with the first layer: a server that never forks leaves its state directory as it was. */
	if (mkdirat(p->dir, PST_LAYERS, 0700) < 0 && errno != EEXIST)
		return al_err_sys(err, errno, "cannot make %s/" PST_LAYERS, p->path);
	cleanup_close int top = openat(p->dir, PST_LAYERS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r = top < 0 || mkdirat(top, id, 0700) < 0 ? -errno : 0;
	cleanup_close int ld = r < 0 ? -1 : openat(top, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r == 0 && (ld < 0 || mkdirat(ld, "files", 0755) < 0))
		r = -errno;
	cleanup_close int files = r < 0 ? -1 : openat(ld, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* The overlay's mounter, root of the sandbox's namespace, searches it as the sandbox's ids. */
	if (r == 0 && (files < 0 || (geteuid() == 0 && fchown(files, uid, gid) < 0)))
		r = -errno;
	if (r < 0)
		return al_err_sys(err, -r, "cannot make a layer in %s/" PST_LAYERS, p->path);
	pthread_mutex_lock(&from->mu);
	r = wsm_freeze(from->w, files, uid, gid, st, err);
	pthread_mutex_unlock(&from->mu);
	if (r == 0 && fsync(top) < 0)
		r = al_err_sys(err, errno, "cannot keep a layer in %s", p->path);
	if (r < 0) {
		discard_in(p, PST_LAYERS, id);
		return r;
	}
	/* Its files are the layer's too now: what it may still write is its whole disk limit. */
	pthread_mutex_lock(&p->mu);
	from->held = 0;
	pthread_mutex_unlock(&p->mu);
	/* The box holds its last freeze, so that forks of unchanged files share it. */
	json_t *old = from->frozen[0] ? json_pack("[s]", from->frozen) : NULL, *now = json_pack("[s]", id);
	if (now && pst_layers_ref(p, now) == 0) {
		pthread_mutex_lock(&from->mu);
		snprintf(from->frozen, sizeof(from->frozen), "%s", id);
		from->frozen_at = wsm_changes(from->w);
		from->frozen_st = st ? *st : (struct wsm_stats){0};
		pthread_mutex_unlock(&from->mu);
		if (old)
			pst_layers_unref(p, old);
	}
	json_decref(old);
	json_decref(now);
	return 0;
}

void pst_layer_forget(struct pst_box *b, const char *id)
{
	pthread_mutex_lock(&b->mu);
	bool mine = id && strcmp(b->frozen, id) == 0;
	if (mine)
		b->frozen[0] = 0;
	pthread_mutex_unlock(&b->mu);
	json_t *a = mine ? json_pack("[s]", id) : NULL;
	if (a)
		pst_layers_unref(b->p, a);
	json_decref(a);
}

int pst_box_layers(struct pst_box *b, const json_t *ids, struct al_error *err)
{
	if (!json_array_size(ids) || b->layers)
		return 0;
	if (!(b->layers = json_deep_copy(ids)) || pst_layers_ref(b->p, b->layers) < 0) {
		json_decref(b->layers);
		b->layers = NULL;
		return al_err(err, ENOMEM, "out of memory");
	}
	wsm_set_layered(b->w, true);
	return 0;
}

/* Removes what a trash name holds, on a thread of its own. */
struct trash {
	int dir;
	char name[80];
};

static void *empty_trash(void *arg)
{
	struct trash *t = arg;
	uint64_t n = 0;
	(void)ws_rm_beneath(t->dir, t->name, &n, NULL);
	close(t->dir);
	free(t);
	return NULL;
}

/* A sandbox's state leaves the directory at once (a rename, flushed: a restart never brings it
 * back) and is removed meanwhile: a destroyed sandbox's thousands of files must not hold up the
 * call that ended it. What a stop cuts short, the next start removes (pst_open). */
static void discard_in(struct pst *p, const char *dir, const char *id)
{
	struct trash *t = calloc(1, sizeof(*t));
	if (!t)
		return;
	snprintf(t->name, sizeof(t->name), PST_TRASH "%s%s", dir ? "L" : "", id);
	cleanup_close int from = dir ? openat(p->dir, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				     : fcntl(p->dir, F_DUPFD_CLOEXEC, 3);
	if (from < 0 || renameat(from, id, p->dir, t->name) < 0 || fsync(from) < 0 ||
	    (t->dir = fcntl(p->dir, F_DUPFD_CLOEXEC, 3)) < 0) {
		free(t);
		return;
	}
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, empty_trash, t) != 0)
		empty_trash(t);
	pthread_attr_destroy(&a);
}

static void discard(struct pst *p, const char *id)
{
	discard_in(p, NULL, id);
}

void pst_box_close(struct pst_box *b, bool remove)
{
	if (!b)
		return;
	struct pst *p = b->p;
	if (p) {
		pthread_mutex_lock(&p->mu);
		for (struct pst_box **pp = &p->boxes; *pp; pp = &(*pp)->next)
			if (*pp == b) {
				*pp = b->next;
				break;
			}
		pthread_mutex_unlock(&p->mu);
	}
	wsm_free(b->w);
	if (b->dir >= 0)
		close(b->dir);
	if (remove && p)
		discard(p, b->id);
	/* Kept, it still stands on its layers (a server that brings it back needs them). */
	if (remove && p && b->layers)
		pst_layers_unref(p, b->layers);
	json_t *frozen = remove && p && b->frozen[0] ? json_pack("[s]", b->frozen) : NULL;
	if (frozen)
		pst_layers_unref(p, frozen);
	json_decref(frozen);
	json_decref(b->layers);
	pthread_mutex_destroy(&b->mu);
	free(b);
}
