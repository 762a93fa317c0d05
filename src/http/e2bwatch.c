/* e2bwatch.c — envd's polling watchers (filesystem.Filesystem CreateWatcher, GetWatcherEvents, RemoveWatcher): a code_watch call the server holds between polls, its events drained at each poll.
 *
 * CreateWatcher starts the same code_watch call as WatchDir (the one runner: rules, approvals,
 * audit; the manager opens the watch before the call returns, so nothing written after the answer
 * is missed), but its stream is read by nobody's connection: the server keeps it in a table under
 * a fresh id ("w" and 32 hex digits of random bits). The manager queues the watch's events in the
 * call, bounded by the stream's budget (HX_STREAM_BUDGET: past it, between two polls, events are
 * lost, as for a slow WatchDir client); each GetWatcherEvents reads that queue without waiting,
 * through a framing that turns each event into envd's FilesystemEvent, and answers what came since
 * the last poll. RemoveWatcher (or the server's end) frees the stream, which cancels the watch; a
 * watch that ended by itself (its directory removed, its sandbox gone) answers its last events,
 * then its end, and leaves the table. A watcher is its creator's: another principal, or a request
 * for another sandbox, finds no such id (not_found, as envd's unknown id).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "http/e2b.h"
#include "util/cleanup.h"

#define WATCHERS_MAX   1024 /* watchers of one server at once (the manager allows 16 watches a sandbox) */
#define WATCHER_ID_LEN 33   /* "w" and 32 hex digits */

/* What the framing gathers of one call (the call owns it: freed with it). */
struct wpoll {
	char dir[4096]; /* the watched directory, workspace-relative */
	json_t *events; /* FilesystemEvents since the last poll */
	bool asking;	/* a reviewer is asked, not answered yet */
	bool ended;	/* the stream's last event came */
	char code[24];	/* its Connect error code, "" for a regular end */
	char message[256];
};

struct e2b_watcher {
	struct e2b_watcher *next;
	char id[WATCHER_ID_LEN + 1];
	char owner[HX_PRINCIPAL_MAX];
	char sandbox[64];
	struct hx_response rs; /* the code_watch call's stream (rs.ops, rs.stream) */
	struct wpoll *poll;    /* borrowed from the call, valid while rs.stream is */
	bool stream_over;      /* read to its end: nothing more will come */
};

/* ---- the framing: events into wpoll, no bytes --------------------------------------------------- */

static int wp_event(void *ctx, const char *name, const json_t *ev, char **out, size_t *n)
{
	struct wpoll *w = ctx;
	*out = NULL;
	*n = 0;
	if (strcmp(name, "event") == 0) {
		json_t *fe = NULL;
		int r = e2b_fs_event(w->dir, ev, &fe);
		return r < 0 ? r : fe ? json_array_append_new(w->events, fe) == 0 ? 0 : -ENOMEM : 0;
	}
	if (strcmp(name, "approval") == 0) {
		const char *status = json_string_value(json_object_get(ev, "status"));
		w->asking = status && strcmp(status, "pending") == 0;
		return 0;
	}
	if (strcmp(name, "error") == 0) {
		int status = (int)json_integer_value(json_object_get(ev, "status"));
		const char *msg = json_string_value(json_object_get(ev, "error"));
		snprintf(w->code, sizeof(w->code), "%s", cx_code_of_status(status ? status : 500));
		snprintf(w->message, sizeof(w->message), "%s", msg ? msg : "the watch failed");
	}
	w->ended |= strcmp(name, "error") == 0 || strcmp(name, "result") == 0;
	return 0;
}

static void wp_free(void *ctx)
{
	struct wpoll *w = ctx;
	if (w)
		json_decref(w->events);
	free(w);
}

static const struct hx_framing wpoll_framing = {
	.type = "application/connect+json",
	.event = wp_event,
	.free = wp_free,
};

/* Reads what the call queued (into w->poll, through the framing), without waiting unless block
 * (then about HX_WAIT_SLICE_MS at most). */
static void drain(struct e2b_watcher *w, bool block)
{
	char buf[256];
	while (!w->stream_over) {
		ssize_t n = w->rs.ops->read(w->rs.stream, buf, sizeof(buf), block);
		if (n == HX_STREAM_END || n == HX_STREAM_ERROR) {
			w->stream_over = true;
			if (!w->poll->ended) { /* cut without a last event: only a stop or no memory does so */
				w->poll->ended = true;
				snprintf(w->poll->code, sizeof(w->poll->code), "unavailable");
				snprintf(w->poll->message, sizeof(w->poll->message), "the watch ended");
			}
		}
		if (n <= 0 || block)
			break;
	}
}

static void watcher_free(struct e2b_watcher *w)
{
	if (!w)
		return;
	if (w->rs.ops)
		w->rs.ops->free(w->rs.stream); /* cancels a watch still running */
	w->rs.ops = NULL;
	hx_response_clear(&w->rs);
	free(w);
}

/* ---- the table ------------------------------------------------------------------------------ */

/* Under watchers_mu: the watcher id of owner on sandbox, unlinked from the table when take. */
static struct e2b_watcher *find_locked(struct hx_server *s, const char *id, const char *owner, const char *sandbox,
				       bool take)
{
	for (struct e2b_watcher **p = &s->watchers; *p; p = &(*p)->next) {
		struct e2b_watcher *w = *p;
		if (strcmp(w->id, id) != 0 || strcmp(w->owner, owner) != 0 || strcmp(w->sandbox, sandbox) != 0)
			continue;
		if (take) {
			*p = w->next;
			s->nwatchers--;
		}
		return w;
	}
	return NULL;
}

/* Under watchers_mu: drops every watcher whose watch has ended (a full table makes room so). */
static void reap_locked(struct hx_server *s, struct e2b_watcher **dead)
{
	for (struct e2b_watcher **p = &s->watchers; *p;) {
		struct e2b_watcher *w = *p;
		drain(w, false);
		if (!w->poll->ended) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		s->nwatchers--;
		w->next = *dead;
		*dead = w;
	}
}

static void free_list(struct e2b_watcher *w)
{
	while (w) {
		struct e2b_watcher *next = w->next;
		watcher_free(w);
		w = next;
	}
}

void e2b_watchers_free(struct hx_server *s)
{
	pthread_mutex_lock(&s->watchers_mu);
	struct e2b_watcher *all = s->watchers;
	s->watchers = NULL;
	s->nwatchers = 0;
	pthread_mutex_unlock(&s->watchers_mu);
	free_list(all);
}

static const char *owner_of(const struct hx_request *rq)
{
	return rq->who->name[0] ? rq->who->name : "anonymous";
}

/* ---- the calls ------------------------------------------------------------------------------- */

/* The unary request's message; NULL with rs filled. */
static json_t *message(const struct hx_request *rq, struct hx_response *rs)
{
	char why[256];
	json_t *msg = NULL;
	if (cx_parse_request(false, rq->body, rq->len, &msg, why, sizeof(why)) < 0)
		cx_unary_error(rs, "invalid_argument", "%s", why);
	return msg;
}

/* The watcherId of the message (protobuf's JSON takes the field's own name too). */
static const char *watcher_id(const json_t *msg)
{
	const char *id = json_string_value(json_object_get(msg, "watcherId"));
	return id ? id : json_string_value(json_object_get(msg, "watcher_id"));
}

static int new_id(char out[WATCHER_ID_LEN + 1])
{
	unsigned char raw[16];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	out[0] = 'w';
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 1 + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* The code_watch call of w, started; 0, or 1 with rs holding envd's error. */
static int start_watch(struct hx_server *s, const struct hx_request *rq, struct e2b_watcher *w, const char *rel,
		       bool recursive, struct hx_response *rs)
{
	struct wpoll *p = calloc(1, sizeof(*p));
	if (p)
		p->events = json_array();
	json_t *args = p && p->events ? json_pack("{s:s,s:s,s:b,s:b}", "sandbox_id", w->sandbox, "path",
						  *rel ? rel : ".", "recursive", recursive, "follow", 1)
				      : NULL;
	/* The call outlives this request: it must never look at the request's connection again. */
	struct hx_request detached = *rq;
	detached.gone = NULL;
	struct hx_call *c = args ? hx_call_new(s, TL_WATCH, args, &detached) : NULL;
	if (!c) {
		wp_free(p);
		cx_unary_error(rs, "internal", "out of memory");
		return 1;
	}
	snprintf(p->dir, sizeof(p->dir), "%s", rel);
	hx_call_framing(c, &wpoll_framing, p);
	hx_call_stream(c, false, &w->rs);
	if (!w->rs.ops) { /* refused, or the manager's error (a bad path, a sandbox's watches all taken) */
		*rs = w->rs;
		w->rs = (struct hx_response){0};
		cx_from_api(rs, NULL);
		return 1;
	}
	w->poll = p;
	/* A reviewer's decision comes within the rule's timeout: CreateWatcher answers after it. */
	while (p->asking && !p->ended && !w->stream_over && !hx_stopping(s))
		drain(w, true);
	drain(w, false);
	if (p->ended && p->code[0]) {
		cx_unary_error(rs, p->code, "%s", p->message);
		return 1;
	}
	return 0;
}

void e2b_watcher_create(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, rs);
	if (!msg)
		return;
	char why[256];
	const char *path = json_string_value(json_object_get(msg, "path"));
	cleanup_free char *rel = path ? e2b_path_in(path, why, sizeof(why)) : NULL;
	bool recursive = json_is_true(json_object_get(msg, "recursive"));
	json_decref(msg);
	if (!rel) {
		cx_unary_error(rs, path ? "permission_denied" : "invalid_argument", "%s",
			       path ? why : "the path is required");
		return;
	}
	struct e2b_watcher *dead = NULL;
	pthread_mutex_lock(&s->watchers_mu);
	if (s->nwatchers >= WATCHERS_MAX)
		reap_locked(s, &dead);
	bool full = s->nwatchers >= WATCHERS_MAX;
	pthread_mutex_unlock(&s->watchers_mu);
	free_list(dead);
	if (full) {
		cx_unary_error(rs, "resource_exhausted", "this server holds %d watchers: remove one (RemoveWatcher)",
			       WATCHERS_MAX);
		return;
	}
	struct e2b_watcher *w = calloc(1, sizeof(*w));
	if (!w || new_id(w->id) < 0) {
		free(w);
		cx_unary_error(rs, "internal", "no memory or no random bytes for a watcher");
		return;
	}
	snprintf(w->owner, sizeof(w->owner), "%s", owner_of(rq));
	snprintf(w->sandbox, sizeof(w->sandbox), "%s", id);
	if (start_watch(s, rq, w, rel, recursive, rs)) {
		watcher_free(w);
		return;
	}
	pthread_mutex_lock(&s->watchers_mu);
	w->next = s->watchers;
	s->watchers = w;
	s->nwatchers++;
	pthread_mutex_unlock(&s->watchers_mu);
	cx_unary_ok(rs, json_pack("{s:s}", "watcherId", w->id));
}

void e2b_watcher_events(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, rs);
	if (!msg)
		return;
	char wid[WATCHER_ID_LEN + 1];
	snprintf(wid, sizeof(wid), "%s", watcher_id(msg) ? watcher_id(msg) : "");
	json_decref(msg);
	struct e2b_watcher *gone = NULL;
	pthread_mutex_lock(&s->watchers_mu);
	struct e2b_watcher *w = find_locked(s, wid, owner_of(rq), id, false);
	json_t *events = NULL;
	char code[24] = "", text[256] = "";
	if (w) {
		drain(w, false);
		events = w->poll->events;
		w->poll->events = json_array();
		/* An ended watch answers its last events, then its end once, and leaves the table. */
		if (w->poll->ended && !json_array_size(events)) {
			snprintf(code, sizeof(code), "%s", w->poll->code);
			snprintf(text, sizeof(text), "%s", w->poll->message);
			gone = find_locked(s, wid, owner_of(rq), id, true);
		}
	}
	pthread_mutex_unlock(&s->watchers_mu);
	watcher_free(gone);
	if (!w)
		cx_unary_error(rs, "not_found", "watcher with id %.40s not found", wid);
	else if (code[0])
		cx_unary_error(rs, code, "%s", text);
	else
		cx_unary_ok(rs, events ? json_pack("{s:o}", "events", events) : NULL);
	if (code[0] || !w)
		json_decref(events);
}

void e2b_watcher_remove(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, rs);
	if (!msg)
		return;
	char wid[WATCHER_ID_LEN + 1];
	snprintf(wid, sizeof(wid), "%s", watcher_id(msg) ? watcher_id(msg) : "");
	json_decref(msg);
	pthread_mutex_lock(&s->watchers_mu);
	struct e2b_watcher *w = find_locked(s, wid, owner_of(rq), id, true);
	pthread_mutex_unlock(&s->watchers_mu);
	if (!w) {
		cx_unary_error(rs, "not_found", "watcher with id %.40s not found", wid);
		return;
	}
	watcher_free(w);
	cx_unary_ok(rs, NULL);
}
