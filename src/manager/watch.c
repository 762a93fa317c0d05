/* watch.c — directory watches of a held sandbox's workspace: inotify events as a bounded stream of create, write, remove, rename, chmod.
 *
 * Theory of operation
 *
 *   watch (start call) ─▶ the path checked and opened beneath the workspace, an inotify descriptor
 *                         with the directory's watch, a place among the sandbox's watches: a bad
 *                         path or a full sandbox fails here, before any stream begins
 *   watch_thread       ─▶ one worker per watch polls its inotify descriptor (slices of
 *                         WATCH_SLICE_MS), turns events into JSON objects (sink on_output with
 *                         SRV_EVENT, or collected for a bounded call), and ends at a cancel (the
 *                         client left), the wait's end, the directory's removal, or the sandbox's
 *                         end (life_ended: within a slice), with a summary saying why
 *
 * Safety: the sandbox controls every name in its workspace. Each directory is opened with openat2
 * beneath the workspace descriptor, RESOLVE_NO_SYMLINKS and O_NOFOLLOW, so no link it plants (to the
 * host's /etc, to another sandbox) is ever followed, and the watch is added through
 * /proc/self/fd/N of that descriptor: the kernel resolves that magic link to the very directory
 * opened, never to a name looked up again. Only directories are watched (IN_ONLYDIR), as the
 * sandbox's user (ws_become), never root. Memory is bounded: at most WATCH_MAX_DIRS directories
 * per watch (past it one overflow event), the kernel's own event queue (its overflow becomes a
 * counted overflow event), writes coalesced per path, and the stream's budget above (a slow client
 * loses events, counted there); a bounded call keeps at most WATCH_COLLECT_MAX events.
 */
#include "manager/sbmint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "manager/wsfiles.h"
#include "manager/wsint.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/openat2.h"

#define WATCH_PER_SANDBOX 16   /* watches of one sandbox at once: 429 past it */
#define WATCH_MAX_DIRS	  4096 /* directories one recursive watch follows */
#define WATCH_SLICE_MS	  250  /* a worker looks at its cancel and its sandbox this often */
#define WATCH_COALESCE_MS 50   /* writes of one path within this window are one "write" */
#define WATCH_COLLECT_MAX 1000 /* events a bounded call keeps in its answer */
#define WATCH_READ_ROUNDS 16   /* reads of the queue before the worker looks at its cancel again */
#define WATCH_PATH_MAX	  4096
#define WATCH_MASK                                                                                            \
	(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_MOVED_FROM | \
	 IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR | IN_EXCL_UNLINK)

struct wdir {
	int wd;
	char *rel; /* beneath the workspace; "" is the workspace itself */
};

/* An event held back: a write (coalesced with the next ones of its path), a move's first half
 * (paired with its second by the cookie). */
struct held {
	bool on;
	bool temp; /* a move: from one of the files API's own hidden names (is_temp) */
	char *path;
	int is_dir;
	uint32_t cookie;
	uint64_t at;
};

struct watch {
	struct srv_op *op;
	struct sbx *s;
	int ifd;
	int ws; /* the sandbox's workspace (borrowed: s is held) */
	uid_t uid;
	gid_t gid;
	char *root; /* the watched directory, normalised ("" : the workspace) */
	bool recursive, collect, dirs_full, root_gone;
	int root_wd;
	struct wdir *dirs; /* sorted by wd */
	size_t ndirs, cap;
	struct held write, move;
	uint64_t events, coalesced, overflows, left_out;
	json_t *collected;
};

static const char *shown(const char *rel)
{
	return *rel ? rel : ".";
}

static char *join(const char *dir, const char *name)
{
	char *p = NULL;
	if (asprintf(&p, "%s%s%s", dir, *dir ? "/" : "", name) < 0)
		return NULL;
	return p;
}

/* Whether name is one the files API gives a file while it writes it (ws_temp_name:
 * ".airlock-<what>-<16 hex>"), before renaming it into place: what the client sees is the write of
 * the final name, not the server's own steps. */
static bool is_temp(const char *name)
{
	size_t n = strlen(name);
	if (strncmp(name, ".airlock-", 9) != 0 || n < 9 + 2 + 16 || name[n - 17] != '-')
		return false;
	return strspn(name + n - 16, "0123456789abcdef") == 16;
}

/* ---- events out ----------------------------------------------------------------------------- */

static void send_event(struct watch *w, json_t *ev)
{
	if (!ev)
		return;
	w->events++;
	if (w->collect) {
		if (json_array_size(w->collected) < WATCH_COLLECT_MAX)
			json_array_append(w->collected, ev);
		else
			w->left_out++;
	} else if (w->op->sink.on_output) {
		cleanup_free char *text = json_dumps(ev, JSON_COMPACT);
		if (text)
			w->op->sink.on_output(w->op->sink.cookie, SRV_EVENT, text, strlen(text));
	}
	json_decref(ev);
}

/* One event: is_dir -1 when not known; from and to only for a rename. */
static void emit(struct watch *w, const char *type, const char *path, int is_dir, const char *from, const char *to)
{
	json_t *ev = json_pack("{s:s,s:s}", "type", type, "path", shown(path));
	if (ev && is_dir >= 0)
		json_object_set_new(ev, "is_dir", json_boolean(is_dir));
	if (ev && from)
		json_object_set_new(ev, "from", json_string(shown(from)));
	if (ev && to)
		json_object_set_new(ev, "to", json_string(shown(to)));
	send_event(w, ev);
}

static void emit_overflow(struct watch *w, const char *reason, const char *path)
{
	json_t *ev = json_pack("{s:s,s:s,s:s}", "type", "overflow", "path", shown(path), "reason", reason);
	if (ev && strcmp(reason, "queue") == 0)
		json_object_set_new(ev, "count", json_integer((json_int_t)w->overflows));
	if (ev && strcmp(reason, "dir_limit") == 0)
		json_object_set_new(ev, "limit", json_integer(WATCH_MAX_DIRS));
	send_event(w, ev);
}

static void held_clear(struct held *h)
{
	free(h->path);
	*h = (struct held){0};
}

static void flush_write(struct watch *w)
{
	if (w->write.on)
		emit(w, "write", w->write.path, w->write.is_dir, NULL, NULL);
	held_clear(&w->write);
}

/* ---- the directories followed --------------------------------------------------------------- */

static struct wdir *find_dir(struct watch *w, int wd)
{
	size_t lo = 0, hi = w->ndirs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->dirs[mid].wd == wd)
			return &w->dirs[mid];
		if (w->dirs[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void drop_dir(struct watch *w, struct wdir *d)
{
	free(d->rel);
	size_t i = (size_t)(d - w->dirs);
	memmove(d, d + 1, (w->ndirs - i - 1) * sizeof(*d));
	w->ndirs--;
}

/* Inserts (wd, rel) in wd order; false when wd is followed already (or no memory). */
static bool insert_dir(struct watch *w, int wd, const char *rel)
{
	if (find_dir(w, wd))
		return false;
	if (w->ndirs == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct wdir *grown = realloc(w->dirs, cap * sizeof(*grown));
		if (!grown)
			return false;
		w->dirs = grown;
		w->cap = cap;
	}
	char *copy = strdup(rel);
	if (!copy)
		return false;
	size_t i = w->ndirs;
	while (i > 0 && w->dirs[i - 1].wd > wd)
		i--;
	memmove(&w->dirs[i + 1], &w->dirs[i], (w->ndirs - i) * sizeof(*w->dirs));
	w->dirs[i] = (struct wdir){.wd = wd, .rel = copy};
	w->ndirs++;
	return true;
}

/* Opens directory rel beneath the workspace. Safe against the sandbox's links: RESOLVE_BENEATH
 * keeps the walk inside, RESOLVE_NO_SYMLINKS refuses a link in any component, O_NOFOLLOW and
 * O_DIRECTORY refuse anything but a directory as the last one. */
static int open_dir(int ws, const char *rel)
{
	return al_openat2(ws, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, AL_RESOLVE_NOLINKS);
}

/* Follows directory rel: its descriptor (for listing; the caller closes it), -errno when it cannot
 * be followed, 0 past WATCH_MAX_DIRS (one overflow event said so) or when it is followed already. */
static int add_dir(struct watch *w, const char *rel, int *wd_out)
{
	if (w->ndirs >= WATCH_MAX_DIRS) {
		if (!w->dirs_full)
			emit_overflow(w, "dir_limit", rel);
		w->dirs_full = true;
		return 0;
	}
	int fd = open_dir(w->ws, rel);
	if (fd < 0)
		return fd;
	char proc[40];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	/* The magic link is the descriptor's own directory: nothing the sandbox renames meanwhile
	 * changes what is watched. */
	int wd = inotify_add_watch(w->ifd, proc, WATCH_MASK);
	if (wd < 0 || !insert_dir(w, wd, rel)) {
		int e = wd < 0 ? -errno : 0;
		close(fd);
		return e;
	}
	if (wd_out)
		*wd_out = wd;
	return fd;
}

/* Whether the entry name of directory fd is a directory itself (never following a link). */
static bool is_subdir(int fd, const struct dirent *de)
{
	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	struct stat st;
	return fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Pushes the subdirectories of fd (directory rel; consumed) onto the queue, which never holds more
 * than WATCH_MAX_DIRS (past it one overflow event, as add_dir's). announce: rel is new, and what it
 * holds was made before its watch could see it (mkdir -p a/b; echo > a/b/f): each entry found is
 * reported as created (at worst twice, never missed). */
static void list_subdirs(struct watch *w, int fd, const char *rel, bool announce, char ***queue, size_t *n, size_t *cap)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		bool dir = is_subdir(dirfd(d), de);
		if (announce) {
			char *path = join(rel, de->d_name);
			if (path)
				emit(w, "create", path, dir, NULL, NULL);
			free(path);
		}
		if (!dir)
			continue;
		if (*n >= WATCH_MAX_DIRS) {
			if (!w->dirs_full)
				emit_overflow(w, "dir_limit", rel);
			w->dirs_full = true;
			break;
		}
		char *sub = join(rel, de->d_name);
		if (sub && *n == *cap) {
			size_t c = *cap ? *cap * 2 : 16;
			char **grown = realloc(*queue, c * sizeof(*grown));
			if (grown) {
				*queue = grown;
				*cap = c;
			}
		}
		if (!sub || *n == *cap || strlen(sub) > WATCH_PATH_MAX) {
			free(sub);
			continue;
		}
		(*queue)[(*n)++] = sub;
	}
	closedir(d);
}

/* Follows rel and (recursive) every directory beneath it, breadth first, within WATCH_MAX_DIRS:
 * add_dir's answer for rel (1 for a descriptor, which is closed here). announce: see list_subdirs. */
static int add_tree(struct watch *w, const char *rel, bool announce, int *wd_out)
{
	int fd = add_dir(w, rel, wd_out);
	if (fd <= 0)
		return fd;
	if (!w->recursive) {
		close(fd);
		return 1;
	}
	char **queue = NULL;
	size_t n = 0, cap = 0;
	list_subdirs(w, fd, rel, announce, &queue, &n, &cap);
	for (size_t i = 0; i < n; i++) {
		fd = w->dirs_full ? 0 : add_dir(w, queue[i], NULL);
		if (fd > 0)
			list_subdirs(w, fd, queue[i], announce, &queue, &n, &cap);
		free(queue[i]);
	}
	free(queue);
	return 1;
}

/* A directory moved within the tree: the paths of what is followed beneath it change with it. */
static void rename_prefix(struct watch *w, const char *from, const char *to)
{
	size_t fl = strlen(from);
	for (size_t i = 0; i < w->ndirs; i++) {
		const char *rel = w->dirs[i].rel;
		if (strncmp(rel, from, fl) != 0 || (rel[fl] != 0 && rel[fl] != '/'))
			continue;
		char *p = NULL;
		if (asprintf(&p, "%s%s", to, rel + fl) < 0)
			continue;
		free(w->dirs[i].rel);
		w->dirs[i].rel = p;
	}
}

/* A directory moved out of the tree: no longer followed (IN_IGNORED then drops each entry). */
static void forget_prefix(struct watch *w, const char *from)
{
	size_t fl = strlen(from);
	for (size_t i = 0; i < w->ndirs; i++) {
		const char *rel = w->dirs[i].rel;
		if (w->dirs[i].wd != w->root_wd && strncmp(rel, from, fl) == 0 && (rel[fl] == 0 || rel[fl] == '/'))
			inotify_rm_watch(w->ifd, w->dirs[i].wd);
	}
}

/* A move's first half that found no second: moved out of the watched tree. */
static void flush_move(struct watch *w)
{
	if (!w->move.on)
		return;
	if (!w->move.temp)
		emit(w, "rename", w->move.path, w->move.is_dir, w->move.path, NULL);
	if (w->move.is_dir == 1)
		forget_prefix(w, w->move.path);
	held_clear(&w->move);
}

/* ---- events in ------------------------------------------------------------------------------ */

static void on_write(struct watch *w, char *path, int is_dir)
{
	if (w->write.on && strcmp(w->write.path, path) == 0) {
		w->coalesced++;
		free(path);
		return;
	}
	flush_write(w);
	w->write = (struct held){.on = true, .path = path, .is_dir = is_dir, .at = sbm_now_ms()};
}

static void on_moved_to(struct watch *w, const struct inotify_event *e, const char *path, int is_dir)
{
	if (w->move.on && w->move.cookie == e->cookie && w->move.temp) {
		emit(w, "write", path, is_dir, NULL, NULL); /* the files API's write put in place */
		held_clear(&w->move);
		return;
	}
	if (w->move.on && w->move.cookie == e->cookie) {
		emit(w, "rename", path, is_dir, w->move.path, path);
		if (is_dir == 1)
			rename_prefix(w, w->move.path, path);
		held_clear(&w->move);
		return;
	}
	flush_move(w);
	emit(w, "rename", path, is_dir, NULL, path);
	if (is_dir == 1 && w->recursive)
		(void)add_tree(w, path, true, NULL);
}

/* An event about the directory itself (no name): the watched root's chmod, removal or move. */
static void on_self(struct watch *w, const struct inotify_event *e, const struct wdir *d)
{
	if (d->wd != w->root_wd)
		return; /* a subdirectory's own: its parent reported it by name */
	if (e->mask & IN_ATTRIB)
		emit(w, "chmod", d->rel, 1, NULL, NULL);
	if (e->mask & IN_DELETE_SELF)
		emit(w, "remove", d->rel, 1, NULL, NULL);
	if (e->mask & IN_MOVE_SELF)
		emit(w, "rename", d->rel, 1, d->rel, NULL);
	if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
		w->root_gone = true;
}

static void on_named(struct watch *w, const struct inotify_event *e, const struct wdir *d)
{
	bool temp = is_temp(e->name);
	if (temp && !(e->mask & IN_MOVED_FROM))
		return; /* the files API's own steps: its write is reported once in place */
	char *path = join(d->rel, e->name);
	int is_dir = (e->mask & IN_ISDIR) != 0;
	if (!path)
		return;
	if (e->mask & (IN_MODIFY | IN_CLOSE_WRITE)) {
		on_write(w, path, is_dir);
		return;
	}
	flush_write(w);
	if (e->mask & IN_MOVED_TO) {
		on_moved_to(w, e, path, is_dir);
		free(path);
		return;
	}
	flush_move(w);
	if (e->mask & IN_MOVED_FROM) {
		w->move = (struct held){.on = true, .temp = temp, .path = path, .is_dir = is_dir, .cookie = e->cookie};
		return;
	}
	if (e->mask & IN_CREATE) {
		emit(w, "create", path, is_dir, NULL, NULL);
		if (is_dir && w->recursive)
			(void)add_tree(w, path, true, NULL);
	} else if (e->mask & IN_DELETE) {
		emit(w, "remove", path, is_dir, NULL, NULL);
	} else if (e->mask & IN_ATTRIB) {
		emit(w, "chmod", path, is_dir, NULL, NULL);
	}
	free(path);
}

static void on_event(struct watch *w, const struct inotify_event *e)
{
	if (e->mask & IN_Q_OVERFLOW) {
		flush_write(w);
		flush_move(w);
		w->overflows++;
		emit_overflow(w, "queue", w->root);
		return;
	}
	struct wdir *d = find_dir(w, e->wd);
	if (!d)
		return; /* a watch given up meanwhile */
	if (e->mask & IN_IGNORED) {
		if (d->wd == w->root_wd)
			w->root_gone = true;
		drop_dir(w, d);
		return;
	}
	if (e->len && e->name[0])
		on_named(w, e, d);
	else
		on_self(w, e, d);
}

/* Reads what the kernel queued (WATCH_READ_ROUNDS buffers at most, then the caller looks around). */
static void read_events(struct watch *w)
{
	_Alignas(struct inotify_event) char buf[65536];
	for (int round = 0; round < WATCH_READ_ROUNDS && !w->root_gone; round++) {
		ssize_t n = read(w->ifd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *e = (const struct inotify_event *)(buf + off);
			on_event(w, e);
			off += (ssize_t)(sizeof(*e) + e->len);
		}
	}
}

/* ---- the watch ------------------------------------------------------------------------------ */

static void watch_free(struct watch *w)
{
	if (!w)
		return;
	held_clear(&w->write);
	held_clear(&w->move);
	for (size_t i = 0; i < w->ndirs; i++)
		free(w->dirs[i].rel);
	free(w->dirs);
	free(w->root);
	json_decref(w->collected);
	if (w->ifd >= 0)
		close(w->ifd);
	free(w);
}

static char *summary(struct watch *w, const char *reason, const char *words)
{
	json_t *o =
		json_pack("{s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:b,s:s,s:s}", "sandbox_id", w->s->id, "path", shown(w->root),
			  "recursive", w->recursive, "event_count", (json_int_t)w->events, "coalesced",
			  (json_int_t)w->coalesced, "overflows", (json_int_t)w->overflows, "watched_dirs",
			  (json_int_t)w->ndirs, "dir_limit_reached", w->dirs_full, "ended", reason, "message", words);
	if (o && w->collect) {
		json_object_set(o, "events", w->collected);
		json_object_set_new(o, "events_left_out", json_integer((json_int_t)w->left_out));
	}
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

static bool cancelled(struct srv_op *op)
{
	pthread_mutex_lock(&op->mu);
	bool c = op->cancelled;
	pthread_mutex_unlock(&op->mu);
	return c;
}

/* Why the watch ends now (its words in why), or NULL to go on. */
static const char *end_reason(struct watch *w, uint64_t until, char *why, size_t cap)
{
	const char *reason = NULL;
	if (w->root_gone) {
		snprintf(why, cap, "the watched directory %s was removed or moved", shown(w->root));
		return "removed";
	}
	if (cancelled(w->op)) {
		snprintf(why, cap, "the client ended the watch");
		return "cancelled";
	}
	if (life_ended(w->op->m, w->s, why, cap, &reason)) {
		size_t n = strlen(why);
		snprintf(why + n, cap - n, "; the watch ended with it");
		return reason;
	}
	if (sbm_now_ms() >= until) {
		snprintf(why, cap, "the watch's time was up");
		return "timeout";
	}
	return NULL;
}

static void give_place(struct sbm *m, struct sbx *s);

static void *watch_thread(void *arg)
{
	struct srv_op *op = arg;
	struct watch *w = op->watch;
	struct sbm *m = op->m;
	struct sbx *s = w->s;
	struct ws_cred saved;
	ws_become(w->uid, w->gid, &saved); /* this worker's own identity (setfsuid is per thread) */
	uint64_t until = op->timeout_ms ? sbm_now_ms() + op->timeout_ms : UINT64_MAX;
	char why[256];
	const char *reason;
	while (!(reason = end_reason(w, until, why, sizeof(why)))) {
		int ms = WATCH_SLICE_MS;
		if (w->write.on) {
			uint64_t age = sbm_now_ms() - w->write.at;
			ms = age >= WATCH_COALESCE_MS ? 0 : (int)(WATCH_COALESCE_MS - age);
		} else if (w->move.on) {
			ms = WATCH_COALESCE_MS;
		}
		struct pollfd p = {.fd = w->ifd, .events = POLLIN};
		int n = poll(&p, 1, ms);
		if (n > 0)
			read_events(w);
		else if (n == 0)
			flush_move(w); /* a quiet queue: a move's first half will find no second */
		if (w->write.on && sbm_now_ms() - w->write.at >= WATCH_COALESCE_MS)
			flush_write(w);
	}
	flush_write(w);
	flush_move(w);
	ws_restore(&saved);
	struct srv_result *res = srv_result_new();
	if (res) {
		res->sandbox_id = strdup(s->id);
		res->watch_json = summary(w, reason, why);
	}
	give_place(m, s);
	op->watch = NULL;
	watch_free(w);
	struct al_error err = {0};
	op_end(op, s, res ? 0 : al_err(&err, ENOMEM, "out of memory"), &err, res);
	return NULL;
}

/* The client's path as the watch names it: relative to the workspace, without "." or empty parts;
 * ".." refused (the watch's paths are words its client trusts: one spelling per directory). */
static int normalise(const char *path, char **out, struct al_error *err)
{
	const char *rel = ws_relative(path);
	if (strlen(rel) > WATCH_PATH_MAX)
		return al_err(err, ENAMETOOLONG, "path is longer than %d bytes", WATCH_PATH_MAX);
	char *norm = calloc(1, strlen(rel) + 1);
	if (!norm)
		return al_err(err, ENOMEM, "out of memory");
	size_t len = 0; /* never more than rel's: each part copied once, with at most one '/' */
	for (const char *p = rel; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			free(norm);
			return al_err(err, EXDEV, "path escapes the workspace: %s", path);
		}
		if (n && !(n == 1 && p[0] == '.')) {
			if (len)
				norm[len++] = '/';
			memcpy(norm + len, p, n);
			len += n;
		}
		p += n;
		p += *p == '/';
	}
	*out = norm;
	return 0;
}

static int open_error(int e, const char *path, struct al_error *err)
{
	switch (e) {
	case ENOENT:
		return al_err(err, ENOENT, "no such directory in the workspace: %s", path);
	case ENOTDIR:
		return al_err(err, ENOTDIR, "not a directory: %s", path);
	case ELOOP:
		return al_err(err, EINVAL, "%s goes through a symbolic link, which a watch never follows", path);
	case EXDEV:
		return al_err(err, EXDEV, "path escapes the workspace: %s", path);
	default:
		return al_err_sys(err, e, "watch %s", path);
	}
}

/* The watch's inotify descriptor and its root directory (with the tree beneath it, recursive:
 * the stream's first event may be of any depth), as the sandbox user. */
static int watch_open(struct watch *w, const char *path, struct al_error *err)
{
	int r = normalise(path ? path : "", &w->root, err);
	if (r < 0)
		return r;
	w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->ifd < 0)
		return al_err_sys(err, errno == EMFILE ? EAGAIN : errno, "a watch's inotify instance");
	struct ws_cred saved;
	ws_become(w->uid, w->gid, &saved);
	r = add_tree(w, w->root, false, &w->root_wd);
	ws_restore(&saved);
	if (r == 0)
		r = -ENOMEM;
	return r < 0 ? open_error(-r, path && *path ? path : ".", err) : 0;
}

/* Takes one of s's watch places: 0, or -EBUSY past WATCH_PER_SANDBOX, -ENOENT once it ended. */
static int take_place(struct sbm *m, struct sbx *s, struct al_error *err)
{
	pthread_mutex_lock(&m->mu);
	int r = !s->listed ? al_err(err, ENOENT, "no sandbox \"%s\"", s->id)
		: s->nwatches >= WATCH_PER_SANDBOX
			? al_err(err, EBUSY, "sandbox %s already has %d watches (the limit)", s->id, WATCH_PER_SANDBOX)
			: 0;
	if (r == 0)
		s->nwatches++;
	pthread_mutex_unlock(&m->mu);
	return r;
}

static void give_place(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	s->nwatches--;
	pthread_mutex_unlock(&m->mu);
}

static struct watch *watch_new(struct sbx *s, const struct srv_watch_req *req)
{
	struct watch *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->s = s;
	w->ifd = -1;
	w->root_wd = -1;
	w->ws = al_sandbox_workspace(s->sb);
	al_sandbox_owner(s->sb, &w->uid, &w->gid);
	w->recursive = req->recursive;
	w->collect = req->collect;
	if (w->collect && !(w->collected = json_array())) {
		free(w);
		return NULL;
	}
	return w;
}

int sbm_watch(void *ctx, const struct srv_watch_req *req, const struct srv_sink *sink, struct srv_op **out,
	      struct al_error *err)
{
	struct sbm *m = ctx;
	struct sbx *s = sbx_get(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	struct watch *w = watch_new(s, req);
	int r = w ? take_place(m, s, err) : al_err(err, ENOMEM, "out of memory");
	bool placed = r == 0;
	r = r ?: watch_open(w, req->path, err);
	struct srv_op *op = r == 0 ? op_new(m, OP_WATCH, sink) : NULL;
	if (op && !(op->sandbox_id = strdup(s->id))) {
		op_free(op);
		op = NULL;
	}
	if (r == 0 && !op)
		r = al_err(err, ENOMEM, "out of memory");
	if (op) {
		snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
		op->timeout_ms = req->wait_ms;
		op->watch = w;
		w->op = op;
		r = op_start_thread(m, op, watch_thread, out, err); /* op freed on failure */
	}
	if (r < 0) {
		if (placed)
			give_place(m, s);
		watch_free(w);
		sbx_put(m, s);
	}
	return r;
}
