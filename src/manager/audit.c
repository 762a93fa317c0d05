/* audit.c — the audit log's writer: one write(2) per record on an O_APPEND descriptor, fsync and size rotation (see audit.h for the guarantees). */
#include "manager/audit.h"

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
};

void audit_options_from_cfg(const struct cfg_audit *a, const char *fallback, struct audit_options *o)
{
	*o = (struct audit_options){.path = a->path ? a->path : fallback, .fsync = a->fsync,
				    .rotate_bytes = a->rotate_bytes, .keep = a->keep};
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

/* A crash mid-write leaves the last line unterminated: end it, so the next record is not glued
 * to it (readers then skip the torn line alone). */
static int heal(int fd, const char *path, struct al_error *err)
{
	struct stat st;
	char last = '\n';
	if (fstat(fd, &st) < 0)
		return al_err_sys(err, errno, "audit: %s", path);
	if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) < 0)
		return al_err_sys(err, errno, "audit: %s", path);
	if (last != '\n' && write(fd, "\n", 1) != 1)
		return al_err_sys(err, errno ? errno : EIO, "audit: %s: ending a torn line", path);
	return 0;
}

static int open_file(const char *path, int *out, struct al_error *err)
{
	/* O_NOFOLLOW: a symlink planted at the path cannot redirect the log. O_NONBLOCK: a FIFO there
	 * cannot hang us (regular files ignore it). O_RDWR: heal() reads the last byte. */
	cleanup_close int fd =
		open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, AUDIT_FILE_MODE);
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

static int lock_file(int fd)
{
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Rotates unless another process did while we waited for the lock; then holds the new file. */
static int rotate(struct audit_log *l, struct al_error *err)
{
	int r = lock_file(l->fd);
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

/* One write(2): records stay whole (audit.h). A partial one is ended with a newline so it
 * remains one torn line, never the start of the next record. */
static int write_line(struct audit_log *l, const char *line, size_t len, struct al_error *err)
{
	ssize_t n;
	do
		n = write(l->fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return al_err_sys(err, errno, "audit: writing %s", l->path);
	if ((size_t)n < len) {
		(void)!write(l->fd, "\n", 1);
		return al_err(err, EIO, "audit: %s: short write (%zd of %zu bytes; disk full or file too large?)", l->path,
			      n, len);
	}
	if (l->fsync && fdatasync(l->fd) < 0)
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

/* The record as one line: compact JSON and its newline (malloc'd). */
static int encode(const struct audit_record *rec, char **line, size_t *len, struct al_error *err)
{
	json_t *j = NULL;
	int r = audit_record_json(rec, &j, err);
	if (r < 0)
		return r;
	char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	size_t n = text ? strlen(text) : 0;
	char *grown = text ? realloc(text, n + 2) : NULL;
	if (!grown) {
		free(text);
		return al_err(err, ENOMEM, "audit: out of memory");
	}
	/* Readers skip longer lines: writing one would lose the record silently. */
	if (n + 1 > AUDIT_LINE_MAX) {
		free(grown);
		return al_err(err, E2BIG, "audit: a record of %zu bytes (at most %u)", n + 1, AUDIT_LINE_MAX);
	}
	grown[n] = '\n';
	grown[n + 1] = 0;
	*line = grown;
	*len = n + 1;
	return 0;
}

int audit_write(struct audit_log *l, const struct audit_record *rec, struct al_error *err)
{
	cleanup_free char *line = NULL;
	size_t len = 0;
	int r = encode(rec, &line, &len, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&l->lock);
	r = prepare(l, len, err);
	r = r ?: write_line(l, line, len, err);
	pthread_mutex_unlock(&l->lock);
	return r;
}
