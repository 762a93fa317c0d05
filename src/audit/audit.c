/* audit.c — the audit log's writer: one write(2) per record on an O_APPEND descriptor, fsync, size rotation, a torn tail repaired on open, and the writer's health (see audit.h for the guarantees). */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/error.h"

struct audit_log {
	pthread_mutex_t lock; /* one record, rotation included, at a time within this process */
	int fd;
	char *path;
	bool fsync;
	uint64_t rotate_bytes;
	unsigned keep;
	struct audit_health health; /* under lock */
};

void audit_options_from_cfg(const struct cfg_audit *a, const char *fallback, struct audit_options *o)
{
	*o = (struct audit_options){.path = a->path ? a->path : fallback,
				    .fsync = a->fsync,
				    .rotate_bytes = a->rotate_bytes,
				    .keep = a->keep};
}

int audit_default_path(bool privileged, char **out)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int n;
	*out = NULL;
	if (privileged)
		n = asprintf(out, "/var/log/airlock/audit.jsonl");
	else if (state && state[0] == '/') /* XDG: a relative value is invalid and ignored */
		n = asprintf(out, "%s/airlock/audit.jsonl", state);
	else if (home && home[0] == '/')
		n = asprintf(out, "%s/.local/state/airlock/audit.jsonl", home);
	else
		return -ENOENT;
	if (n < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- the file ------------------------------------------------------------------------------- */

/* Writers hold LOCK_SH on the file while they append, heal() LOCK_EX while it judges and repairs
 * the end: a reader's pread is not serialized with another process's write, and could otherwise
 * take a record being copied in for a torn one. rotate() takes LOCK_EX too. Callers unlock. */
static int lock_file(int fd, int op)
{
	while (flock(fd, op) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* One line appended whole, or -errno (a short write is -ENOSPC; its bytes are cut off again
 * when nobody appended after them, else the line is ended so the next record starts afresh). */
static int append_line(int fd, const char *line, size_t len)
{
	ssize_t n;
	do
		n = write(fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n == len)
		return 0;
	/* O_APPEND left the offset just past our bytes: they end the file unless another process
	 * appended since, and then they can only be ended, not removed. LOCK_EX (converted from the
	 * caller's LOCK_SH) keeps other writers out between that check and the truncation. */
	off_t end = lseek(fd, 0, SEEK_CUR);
	struct stat st;
	if (end >= n && lock_file(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_size == end &&
	    ftruncate(fd, end - n) == 0)
		return -ENOSPC;
	(void)!write(fd, "\n", 1);
	return -ENOSPC;
}

/* A crash mid-write leaves the last line unterminated: end it, so the next record is not glued
 * to it, and say so in a "repair" record; an invalid last line gets the record alone. The torn
 * bytes stay (readers skip them): cutting them off would destroy what a crash left behind. */
static int judge_and_repair(int fd, const char *path, struct al_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return al_err_sys(err, errno, "audit: %s", path);
	size_t want = (uint64_t)st.st_size > AUDIT_LINE_MAX + 1 ? AUDIT_LINE_MAX + 1 : (size_t)st.st_size;
	off_t from = st.st_size - (off_t)want;
	cleanup_free char *buf = malloc(want ? want : 1);
	if (!buf)
		return al_err(err, ENOMEM, "audit: out of memory");
	ssize_t got = want ? pread(fd, buf, want, from) : 0;
	if (got < 0)
		return al_err_sys(err, errno, "audit: %s", path);
	struct audit_tail t;
	audit_tail_check(buf, (size_t)got, from == 0, &t);
	if (t.kind == AUDIT_TAIL_OK)
		return 0;
	json_t *rec = audit_repair_json(&t, (uint64_t)from + t.offset);
	cleanup_free char *text = rec ? json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(rec);
	cleanup_free char *line = NULL;
	if (!text || asprintf(&line, "%s%s\n", t.kind == AUDIT_TAIL_UNTERMINATED ? "\n" : "", text) < 0)
		return al_err(err, ENOMEM, "audit: out of memory");
	int r = append_line(fd, line, strlen(line));
	return r < 0 ? al_err_sys(err, -r, "audit: %s: repairing a torn last line", path) : 0;
}

static int heal(int fd, const char *path, struct al_error *err)
{
	int r = lock_file(fd, LOCK_EX);
	if (r < 0)
		return al_err_sys(err, -r, "audit: locking %s", path);
	r = judge_and_repair(fd, path, err);
	flock(fd, LOCK_UN);
	return r;
}

static int open_file(const char *path, int *out, struct al_error *err)
{
	/* O_NOFOLLOW: a symlink planted at the path cannot redirect the log. O_NONBLOCK: a FIFO there
	 * cannot hang us (regular files ignore it). O_RDWR: heal() reads the last line. */
	cleanup_close int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
				    AUDIT_FILE_MODE);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return al_err_sys(err, errno, "audit: %s", path);
	if (!S_ISREG(st.st_mode))
		return al_err(err, EINVAL, "audit: %s: not a regular file", path);
	int r = heal(fd, path, err);
	if (r == 0)
		*out = steal_fd(fd);
	return r;
}

/* Creates the missing directories above path (absolute), mode 0700 whatever the umask: on a fresh
 * machine /var/log/airlock (or ~/.local/state/airlock) does not exist yet, and the log holds every
 * request's parameters, so only its owner may list it. Existing directories are left as they are
 * (the operator's choice); a component that is not a directory fails the open that follows. */
static int make_parents(const char *path, struct al_error *err)
{
	cleanup_free char *dir = strdup(path);
	if (!dir)
		return al_err(err, ENOMEM, "audit: out of memory");
	for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		if (mkdir(dir, 0700) == 0) {
			if (chmod(dir, 0700) < 0)
				return al_err_sys(err, errno, "audit: %s", dir);
		} else if (errno != EEXIST) {
			return al_err_sys(err, errno, "audit: creating the directory %s", dir);
		}
		*p = '/';
	}
	return 0;
}

/* Does path still name the file we hold? Not after another process rotated it. */
static bool still_ours(const struct audit_log *l)
{
	struct stat a, b;
	return stat(l->path, &a) == 0 && fstat(l->fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int reopen(struct audit_log *l, struct al_error *err)
{
	int fd = -1;
	int r = open_file(l->path, &fd, err);
	if (r < 0)
		return r;
	close(l->fd);
	l->fd = fd;
	return 0;
}

static int sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/'); /* the path is absolute (audit_open) */
	cleanup_free char *dir = strndup(path, slash == path ? 1 : (size_t)(slash - path)); /* "/a.jsonl": "/" */
	if (!dir)
		return -ENOMEM;
	cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 || fsync(fd) < 0 ? -errno : 0;
}

/* path.keep-1 -> path.keep, ..., path -> path.1 (path.keep, the oldest, is replaced). */
static int shift(const struct audit_log *l, struct al_error *err)
{
	for (unsigned i = l->keep; i >= 1; i--) {
		cleanup_free char *from = NULL, *to = NULL;
		int n = i == 1 ? asprintf(&from, "%s", l->path) : asprintf(&from, "%s.%u", l->path, i - 1);
		if (n < 0 || asprintf(&to, "%s.%u", l->path, i) < 0)
			return al_err(err, ENOMEM, "audit: out of memory");
		if (rename(from, to) < 0 && errno != ENOENT)
			return al_err_sys(err, errno, "audit: rotating %s to %s", from, to);
	}
	return 0;
}

/* Rotates unless another process did while we waited for the lock; then holds the new file. */
static int rotate(struct audit_log *l, struct al_error *err)
{
	int r = lock_file(l->fd, LOCK_EX);
	if (r < 0)
		return al_err_sys(err, -r, "audit: locking %s", l->path);
	if (still_ours(l)) {
		r = shift(l, err);
		if (r == 0 && l->fsync && sync_dir(l->path) < 0)
			r = al_err_sys(err, errno, "audit: syncing the directory of %s", l->path);
	}
	flock(l->fd, LOCK_UN);
	return r ?: reopen(l, err);
}

/* Before a record of len bytes: follow another process's rotation, or rotate ourselves. */
static int prepare(struct audit_log *l, size_t len, struct al_error *err)
{
	struct stat st;
	if (!still_ours(l)) {
		int r = reopen(l, err);
		if (r < 0)
			return r;
	}
	if (l->rotate_bytes == AL_UNLIMITED)
		return 0;
	if (fstat(l->fd, &st) < 0)
		return al_err_sys(err, errno, "audit: %s", l->path);
	if (st.st_size == 0 || (uint64_t)st.st_size + len <= l->rotate_bytes)
		return 0;
	return rotate(l, err);
}

/* One write(2): records stay whole (audit.h); sync: durable before we return. */
static int write_line(struct audit_log *l, const char *line, size_t len, bool sync, struct al_error *err)
{
	int r = lock_file(l->fd, LOCK_SH);
	if (r < 0)
		return al_err_sys(err, -r, "audit: locking %s", l->path);
	r = append_line(l->fd, line, len);
	flock(l->fd, LOCK_UN);
	if (r == -ENOSPC)
		return al_err(err, ENOSPC, "audit: %s: no space left for a record of %zu bytes", l->path, len);
	if (r < 0)
		return al_err_sys(err, -r, "audit: writing %s", l->path);
	if ((sync || l->fsync) && fdatasync(l->fd) < 0)
		return al_err_sys(err, errno, "audit: fdatasync %s", l->path);
	return 0;
}

/* ---- the API --------------------------------------------------------------------------------- */

int audit_open(const struct audit_options *o, struct audit_log **out, struct al_error *err)
{
	if (!o->path || o->path[0] != '/')
		return al_err(err, EINVAL, "audit: the log path must be absolute");
	if (o->keep < 1)
		return al_err(err, EINVAL, "audit: keep must be at least 1");
	struct audit_log *l = calloc(1, sizeof(*l));
	if (!l || !(l->path = strdup(o->path))) {
		free(l);
		return al_err(err, ENOMEM, "audit: out of memory");
	}
	l->fd = -1;
	l->fsync = o->fsync;
	l->rotate_bytes = o->rotate_bytes;
	l->keep = o->keep;
	int r = pthread_mutex_init(&l->lock, NULL);
	if (r != 0) {
		free(l->path);
		free(l);
		return al_err(err, r, "audit: mutex: %s", strerror(r));
	}
	if ((r = make_parents(l->path, err)) < 0 || (r = open_file(l->path, &l->fd, err)) < 0) {
		audit_close(l);
		return r;
	}
	/* A log created just now exists for good only once its directory is synced: the first start
	 * record's fdatasync covers the file's data, not its name. A directory we may not open, or
	 * a filesystem that cannot sync one, is no failure of the log; an I/O error is. */
	r = sync_dir(l->path);
	if (r == -EIO || r == -ENOSPC) {
		r = al_err_sys(err, -r, "audit: syncing the directory of %s", l->path);
		audit_close(l);
		return r;
	}
	*out = l;
	return 0;
}

void audit_close(struct audit_log *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	pthread_mutex_destroy(&l->lock);
	free(l->path);
	free(l);
}

/* The record as one line: compact JSON and its newline (malloc'd), shrunk to AUDIT_LINE_MAX
 * (readers skip longer lines: writing one would lose the record silently). */
static int encode(const struct audit_record *rec, char **line, size_t *len, struct al_error *err)
{
	json_t *j = NULL;
	int r = audit_record_json(rec, &j, err);
	if (r < 0)
		return r;
	r = audit_shrink(j, AUDIT_LINE_MAX);
	char *text = r == 0 ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(j);
	if (r == -E2BIG)
		return al_err(err, E2BIG, "audit: a record longer than %u bytes, even shrunk", AUDIT_LINE_MAX);
	size_t n = text ? strlen(text) : 0;
	char *grown = text ? realloc(text, n + 2) : NULL;
	if (!grown) {
		free(text);
		return al_err(err, ENOMEM, "audit: out of memory");
	}
	grown[n] = '\n';
	grown[n + 1] = 0;
	*line = grown;
	*len = n + 1;
	return 0;
}

/* Under l->lock: the outcome of one record, for audit_health. */
static void note(struct audit_log *l, int r, const struct al_error *err)
{
	if (r == 0) {
		l->health.degraded = false;
		l->health.error = 0;
		l->health.reason[0] = 0;
		return;
	}
	l->health.degraded = true;
	l->health.error = r;
	l->health.failures++;
	snprintf(l->health.reason, sizeof(l->health.reason), "%s", err && err->msg[0] ? err->msg : strerror(-r));
}

int audit_write(struct audit_log *l, const struct audit_record *rec, struct al_error *err)
{
	struct al_error local = {0};
	struct al_error *e = err ? err : &local;
	cleanup_free char *line = NULL;
	size_t len = 0;
	int r = encode(rec, &line, &len, e);
	pthread_mutex_lock(&l->lock);
	r = r ?: prepare(l, len, e);
	r = r ?: write_line(l, line, len, rec->event == AUDIT_EVENT_START, e);
	note(l, r, e);
	pthread_mutex_unlock(&l->lock);
	return r;
}

int audit_write_json(struct audit_log *l, const json_t *rec, struct al_error *err)
{
	struct al_error local = {0};
	struct al_error *e = err ? err : &local;
	cleanup_free char *text = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
	cleanup_free char *line = NULL;
	if (!text || asprintf(&line, "%s\n", text) < 0)
		return al_err(e, ENOMEM, "audit: out of memory");
	size_t len = strlen(line);
	if (len > AUDIT_LINE_MAX)
		return al_err(e, E2BIG, "audit: a record longer than %u bytes", AUDIT_LINE_MAX);
	pthread_mutex_lock(&l->lock);
	int r = prepare(l, len, e);
	r = r ?: write_line(l, line, len, true, e);
	note(l, r, e);
	pthread_mutex_unlock(&l->lock);
	return r;
}

void audit_health(struct audit_log *l, struct audit_health *out)
{
	pthread_mutex_lock(&l->lock);
	*out = l->health;
	pthread_mutex_unlock(&l->lock);
}
