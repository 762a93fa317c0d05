/* mcp_http.c — the MCP streamable HTTP transport: sessions by Mcp-Session-Id, one POST per message,
 * answers as JSON or as an SSE stream, and the pump that carries the manager's events to them. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "http/hx.h"
#include "service/approval.h"
#include "mcp/jsonrpc.h"
#include "util/cleanup.h"

/*
 * Routing. A session writes every message it wants sent into one array, without saying which
 * HTTP request it belongs to. Each POSTed request that waits for its answer is a waiter; a
 * message goes to:
 *   a response            the waiter of the request with that id;
 *   notifications/progress the waiter whose tools/call carried that progressToken;
 *   anything else          (log messages, elicitation/create, notifications/cancelled) the oldest
 *                          waiter that streams SSE: the client reads every stream of the session.
 * A message with no such waiter is dropped: the spec sends nothing to a client outside a stream
 * it opened, and this server offers no GET stream. (An approval that needs elicitation therefore
 * needs an SSE-capable client, as every conforming one is. A client that declared no
 * elicitation gets its approvals through the approvals queue instead, like the JSON API.)
 *
 * Locks. The table's mutex guards the table and every session's refs; a session's mutex guards
 * its mcp_session (called by one thread at a time, as mcp.h requires) and its waiters. The table
 * lock is never taken while a session lock is held.
 */

struct waiter {
	struct waiter *next;
	json_t *req_id;
	json_t *token; /* the tools/call's progressToken, or NULL */
	bool sse;
	bool answered;
	json_t *mail; /* messages routed to this request, oldest first */
};

struct msession {
	struct hx_server *srv;
	char id[HX_SESSION_ID_LEN + 1];
	char owner[HX_PRINCIPAL_MAX]; /* the principal that initialized it: nobody else may use it */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct mcp_session *s;
	struct waiter *waiters; /* oldest first */
	bool closed;		/* DELETE, idle, or stop: no more requests, streams end */
	unsigned busy;		/* requests in progress */
	uint64_t last_used;
	int refs; /* under the table's lock: the table's, each request's, the pump's */
};

struct hx_sessions {
	pthread_mutex_t mu;
	struct msession **v;
	size_t n, cap;
	int wake_fd;		   /* tells the pump the set of sessions changed */
	struct srv_approver queue; /* the approvals queue, for sessions whose client cannot elicit */
};

/* ---- the table ------------------------------------------------------------------------------ */

int hx_sessions_new(struct hx_server *s)
{
	struct hx_sessions *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cap = s->o.max_sessions;
	t->v = calloc(t->cap, sizeof(struct msession *));
	t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!t->v || t->wake_fd < 0) {
		int e = t->wake_fd < 0 ? -errno : -ENOMEM;
		if (t->wake_fd >= 0)
			close(t->wake_fd);
		free(t->v);
		free(t);
		return e;
	}
	pthread_mutex_init(&t->mu, NULL);
	if (s->o.approvals)
		apq_approver(s->o.approvals, &t->queue);
	s->sessions = t;
	return 0;
}

static void wake_pump(struct hx_sessions *t)
{
	uint64_t one = 1;
	if (write(t->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, the pump wakes anyway */
	}
}

static void waiter_free(struct waiter *w)
{
	json_decref(w->req_id);
	json_decref(w->token);
	json_decref(w->mail);
	free(w);
}

static void session_destroy(struct msession *ms)
{
	/* No request holds it any more; mcp_session_free cancels and releases what still runs. */
	mcp_session_free(ms->s);
	while (ms->waiters) {
		struct waiter *w = ms->waiters;
		ms->waiters = w->next;
		waiter_free(w);
	}
	pthread_cond_destroy(&ms->cv);
	pthread_mutex_destroy(&ms->mu);
	free(ms);
}

static void session_put(struct hx_server *s, struct msession *ms)
{
	pthread_mutex_lock(&s->sessions->mu);
	bool last = --ms->refs == 0;
	pthread_mutex_unlock(&s->sessions->mu);
	if (last)
		session_destroy(ms);
}

/* The session with that id, with a reference; NULL when unknown or ended. The comparison runs
 * over every entry in constant time per entry: the timing tells nothing of other sessions' ids. */
/* The session id, if who owns it: another principal's session is as unknown as a made-up id (a
 * session id seen in a log or a shared proxy is not a credential). */
static struct msession *session_get(struct hx_server *s, const char *id, const struct hx_principal *who)
{
	struct hx_sessions *t = s->sessions;
	struct msession *found = NULL;
	if (strlen(id) != HX_SESSION_ID_LEN)
		return NULL;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++)
		if (CRYPTO_memcmp(t->v[i]->id, id, HX_SESSION_ID_LEN) == 0 && strcmp(t->v[i]->owner, who->name) == 0)
			found = t->v[i];
	if (found)
		found->refs++;
	pthread_mutex_unlock(&t->mu);
	return found;
}

/* Takes ms out of the table (new requests get 404) and ends its streams. */
static void session_close(struct hx_server *s, struct msession *ms)
{
	struct hx_sessions *t = s->sessions;
	bool was_in = false;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i] == ms) {
			t->v[i] = t->v[--t->n];
			was_in = true;
			break;
		}
	pthread_mutex_unlock(&t->mu);
	if (!was_in)
		return;
	pthread_mutex_lock(&ms->mu);
	ms->closed = true;
	mcp_session_cancel_all(ms->s);
	pthread_cond_broadcast(&ms->cv);
	pthread_mutex_unlock(&ms->mu);
	wake_pump(t);
	session_put(s, ms); /* the table's reference */
}

void hx_sessions_close_all(struct hx_server *s)
{
	for (;;) {
		struct hx_sessions *t = s->sessions;
		pthread_mutex_lock(&t->mu);
		struct msession *ms = t->n ? t->v[0] : NULL;
		if (ms)
			ms->refs++;
		pthread_mutex_unlock(&t->mu);
		if (!ms)
			return;
		session_close(s, ms);
		session_put(s, ms);
	}
}

void hx_sessions_free(struct hx_server *s)
{
	if (!s->sessions)
		return;
	hx_sessions_close_all(s);
	close(s->sessions->wake_fd);
	pthread_mutex_destroy(&s->sessions->mu);
	free(s->sessions->v);
	free(s->sessions);
	s->sessions = NULL;
}

size_t hx_sessions_count(struct hx_server *s)
{
	if (!s->sessions)
		return 0;
	pthread_mutex_lock(&s->sessions->mu);
	size_t n = s->sessions->n;
	pthread_mutex_unlock(&s->sessions->mu);
	return n;
}

static int session_new(struct hx_server *s, struct msession **out)
{
	struct msession *ms = calloc(1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	unsigned char raw[HX_SESSION_ID_LEN / 2];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		free(ms);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(ms->id + 2 * i, 3, "%02x", raw[i]);
	struct mcp_opts mo = {
		.size = sizeof(mo),
		.mgr = s->o.mgr,
		.gate = s->o.gate,
		.server_version = s->o.server_version,
		.max_message = s->o.max_message,
		.approval_timeout_ms = s->o.approval_timeout_ms,
		.log = s->o.log,
		.log_ctx = s->o.log_ctx,
		.approver = s->o.approvals && !s->o.mcp_no_queue ? &s->sessions->queue : NULL,
		.approver_first = s->o.mcp_queue_first,
		.no_elicitation = s->o.mcp_no_elicitation,
		.transport = "http",
		.observer = &s->observer,
	};
	struct al_error err = {0};
	int r = mcp_session_new(&mo, &ms->s, &err);
	if (r < 0) {
		free(ms);
		return r;
	}
	ms->srv = s;
	ms->refs = 1; /* the caller's */
	ms->last_used = hx_now_ms();
	pthread_mutex_init(&ms->mu, NULL);
	pthread_cond_init(&ms->cv, NULL);
	*out = ms;
	return 0;
}

/* Enters ms in the table (which takes a reference); -EBUSY when full. */
static int session_publish(struct hx_server *s, struct msession *ms)
{
	struct hx_sessions *t = s->sessions;
	int r = 0;
	unsigned mine = 0;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++)
		mine += strcmp(t->v[i]->owner, ms->owner) == 0;
	/* Per principal first: one client's flood of initialize calls must leave room for others. */
	if (s->o.max_sessions_per_principal && mine >= s->o.max_sessions_per_principal) {
		r = -EDQUOT;
	} else if (t->n >= t->cap || hx_stopping(s)) {
		r = -EBUSY;
	} else {
		t->v[t->n++] = ms;
		ms->refs++;
	}
	pthread_mutex_unlock(&t->mu);
	if (r == 0)
		wake_pump(t);
	return r;
}

/* ---- routing (session lock held) ------------------------------------------------------------ */

static struct waiter *route_target(struct msession *ms, const json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	const json_t *id = json_object_get(msg, "id");
	for (struct waiter *w = ms->waiters; w; w = w->next) {
		if (w->answered)
			continue;
		if (!method && id) {
			if (json_equal(w->req_id, id))
				return w;
		} else if (method && strcmp(method, "notifications/progress") == 0) {
			const json_t *tok = json_object_get(json_object_get(msg, "params"), "progressToken");
			if (w->token && json_equal(w->token, tok))
				return w;
		} else if (w->sse) {
			return w;
		}
	}
	return NULL;
}

static void route(struct msession *ms, json_t *out)
{
	size_t i;
	json_t *msg;
	json_array_foreach(out, i, msg) {
		struct waiter *w = route_target(ms, msg);
		if (!w)
			continue; /* no stream to carry it (see above) */
		if (json_array_append(w->mail, msg) < 0)
			continue;
		if (!json_object_get(msg, "method") && json_object_get(msg, "id"))
			w->answered = true;
	}
	json_array_clear(out);
	pthread_cond_broadcast(&ms->cv);
}

/* Runs the session's queued work and routes the output. */
static void pump_locked(struct msession *ms)
{
	json_t *out = json_array();
	if (!out)
		return;
	mcp_session_poll(ms->s, out);
	route(ms, out);
	json_decref(out);
}

static void feed_locked(struct msession *ms, const struct hx_request *rq, const struct jr_message *m)
{
	json_t *out = json_array();
	if (!out)
		return;
	/* The audit log names the connection each tools/call came on. */
	mcp_session_set_peer(ms->s, rq->peer);
	mcp_session_feed_message(ms->s, m, out);
	/* A manager that finished synchronously queued its on_done already: answer now. */
	mcp_session_poll(ms->s, out);
	route(ms, out);
	json_decref(out);
}

/* ---- the SSE stream of one request ---------------------------------------------------------- */

struct mstream {
	struct hx_server *srv;
	struct msession *ms;
	struct waiter *w;
	char *pending;
	size_t len, off;
	bool eof;
	uint64_t idle_since; /* hx_now_ms() when the stream last had something to send */
};

/* The client of w's request went away before its answer (session lock held): what still runs for
 * it is cancelled, and whatever that says goes to the session's other streams. */
static void client_left_locked(struct msession *ms, struct waiter *w)
{
	json_t *out = json_array();
	if (!out)
		return;
	(void)mcp_session_client_left(ms->s, w->req_id, out);
	route(ms, out);
	json_decref(out);
}

static void unlink_waiter(struct msession *ms, struct waiter *w)
{
	for (struct waiter **p = &ms->waiters; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	ms->busy--;
	ms->last_used = hx_now_ms();
}

/* Appends the waiter's mail as SSE events to pending; with the session lock held. */
static int take_mail(struct mstream *m)
{
	size_t i;
	json_t *msg;
	json_array_foreach(m->w->mail, i, msg) {
		char *line = NULL;
		ssize_t n = jr_encode(msg, &line);
		if (n < 0)
			return -ENOMEM;
		size_t need = (size_t)n + 32;
		char *grown = realloc(m->pending, m->len + need);
		if (!grown) {
			free(line);
			return -ENOMEM;
		}
		m->pending = grown;
		m->len += (size_t)snprintf(m->pending + m->len, need, "event: message\ndata: %s\n\n", line);
		free(line);
	}
	json_array_clear(m->w->mail);
	return 0;
}

static ssize_t mstream_read(void *ctx, char *buf, size_t max, bool block)
{
	struct mstream *m = ctx;
	struct msession *ms = m->ms;
	/* One wait at most (round 0), then one more look: the server sees a client that went away
	 * between slices (hx_stream_ops). */
	for (int round = 0; m->off == m->len; round++) {
		free(m->pending);
		m->pending = NULL;
		m->len = m->off = 0;
		if (m->eof)
			return HX_STREAM_END;
		pthread_mutex_lock(&ms->mu);
		pump_locked(ms);
		int r = take_mail(m);
		bool answered = m->w->answered, closed = ms->closed;
		bool waited =
			r == 0 && m->len == 0 && !answered && !closed && block && round == 0 && !hx_stopping(m->srv);
		if (waited)
			hx_cond_wait_ms(&ms->cv, &ms->mu, HX_WAIT_SLICE_MS);
		pthread_mutex_unlock(&ms->mu);
		if (r < 0 || (m->len == 0 && hx_stopping(m->srv)))
			return HX_STREAM_ERROR;
		if (answered || closed)
			m->eof = true; /* everything routed before the answer is in pending */
		if (m->len == 0 && !m->eof && hx_now_ms() - m->idle_since >= HX_KEEPALIVE_MS) {
			m->pending = strdup(": keepalive\n\n");
			if (!m->pending)
				return HX_STREAM_ERROR;
			m->len = strlen(m->pending);
		} else if (m->len == 0 && !m->eof && !waited) {
			return 0;
		}
	}
	m->idle_since = hx_now_ms();
	size_t n = m->len - m->off < max ? m->len - m->off : max;
	memcpy(buf, m->pending + m->off, n);
	m->off += n;
	return (ssize_t)n;
}

static void mstream_free(void *ctx)
{
	struct mstream *m = ctx;
	pthread_mutex_lock(&m->ms->mu);
	/* Freed before the answer went out: the connection ended under the stream. */
	if (!m->eof && !m->w->answered)
		client_left_locked(m->ms, m->w);
	unlink_waiter(m->ms, m->w);
	pthread_mutex_unlock(&m->ms->mu);
	waiter_free(m->w);
	session_put(m->srv, m->ms);
	free(m->pending);
	free(m);
}

static const struct hx_stream_ops mstream_ops = {.read = mstream_read, .free = mstream_free};

/* ---- requests ------------------------------------------------------------------------------- */

static const char *header(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, name) : NULL;
}

/* The answer in one application/json body: the last message of the mail (the response). */
static void json_answer(struct waiter *w, struct hx_response *rs)
{
	json_t *last = json_array_get(w->mail, json_array_size(w->mail) - 1);
	char *line = NULL;
	ssize_t n = last ? jr_encode(last, &line) : -ENOMEM;
	if (n < 0) {
		free(line);
		hx_error(rs, 500, "out of memory");
		return;
	}
	rs->status = 200;
	rs->type = "application/json";
	rs->body = line;
	rs->len = (size_t)n;
}

static struct waiter *waiter_new(const struct jr_message *m, bool sse)
{
	struct waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->mail = json_array();
	w->req_id = json_incref(m->id);
	w->sse = sse;
	const char *method = m->method ? m->method : "";
	json_t *tok = strcmp(method, "tools/call") == 0
			      ? json_object_get(json_object_get(m->params, "_meta"), "progressToken")
			      : NULL;
	w->token = jr_valid_id(tok) ? json_incref(tok) : NULL;
	if (!w->mail) {
		waiter_free(w);
		return NULL;
	}
	return w;
}

/* A request: its answer as JSON when ready at once (or when the client takes only JSON), else an
 * SSE stream of everything routed to it up to the answer. ms's reference passes to the stream. */
static void request(struct hx_server *s, struct msession *ms, const struct hx_request *rq, const struct jr_message *m,
		    struct hx_response *rs)
{
	const char *accept = header(rq, "Accept");
	bool sse = accept && strcasestr(accept, "text/event-stream");
	struct waiter *w = waiter_new(m, sse);
	if (!w) {
		hx_error(rs, 500, "out of memory");
		session_put(s, ms);
		return;
	}
	pthread_mutex_lock(&ms->mu);
	struct waiter **tail = &ms->waiters;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	ms->busy++;
	feed_locked(ms, rq, m);
	/* A client that reads only JSON waits here for the answer (nothing else can reach it), as
	 * long as it is there to get it. */
	bool left = false;
	while (!sse && !w->answered && !ms->closed && !hx_stopping(s)) {
		hx_cond_wait_ms(&ms->cv, &ms->mu, HX_WAIT_SLICE_MS);
		pump_locked(ms);
		if (!w->answered && rq->gone && rq->gone(rq->lookup_ctx)) {
			client_left_locked(ms, w);
			left = true;
			break;
		}
	}
	if (left) {
		hx_error(rs, 503, "the client went away: the call was cancelled");
		rs->close = true;
	} else if (w->answered && (!sse || json_array_size(w->mail) == 1)) {
		json_answer(w, rs);
	} else if (!sse) {
		bool stopping = hx_stopping(s);
		hx_error(rs, stopping ? 503 : 404, stopping ? "the server is stopping" : "the session ended");
	} else {
		struct mstream *st = calloc(1, sizeof(*st));
		if (st) {
			*st = (struct mstream){.srv = s, .ms = ms, .w = w, .idle_since = hx_now_ms()};
			pthread_mutex_unlock(&ms->mu);
			rs->status = 200;
			rs->type = "text/event-stream";
			rs->ops = &mstream_ops;
			rs->stream = st;
			snprintf(rs->session, sizeof(rs->session), "%s", ms->id);
			return;
		}
		hx_error(rs, 500, "out of memory");
	}
	unlink_waiter(ms, w);
	pthread_mutex_unlock(&ms->mu);
	waiter_free(w);
	snprintf(rs->session, sizeof(rs->session), "%s", ms->id);
	session_put(s, ms);
}

static void initialize(struct hx_server *s, const struct hx_request *rq, const struct jr_message *m,
		       struct hx_response *rs)
{
	struct msession *ms;
	int r = session_new(s, &ms);
	if (r < 0) {
		hx_error(rs, 500, "cannot create a session");
		return;
	}
	snprintf(ms->owner, sizeof(ms->owner), "%s", rq->who->name);
	mcp_session_set_principal(ms->s, rq->who->name);
	struct waiter *w = waiter_new(m, false);
	if (!w) {
		session_put(s, ms);
		hx_error(rs, 500, "out of memory");
		return;
	}
	pthread_mutex_lock(&ms->mu);
	ms->waiters = w;
	feed_locked(ms, rq, m);
	ms->waiters = NULL;
	pthread_mutex_unlock(&ms->mu);
	json_t *answer = json_array_get(w->mail, json_array_size(w->mail) - 1);
	bool ok = w->answered && json_object_get(answer, "result");
	if (!w->answered)
		hx_error(rs, 500, "initialize was not answered");
	else if (ok && (r = session_publish(s, ms)) == -EDQUOT)
		hx_error(rs, 429,
			 "quota reached: %s holds %u MCP sessions (server.quota.sessions): end one (DELETE /mcp)",
			 rq->who->name[0] ? rq->who->name : "this client", s->o.max_sessions_per_principal);
	else if (ok && r < 0)
		hx_error(rs, 503, "too many MCP sessions (at most %u)", s->o.max_sessions);
	else {
		json_answer(w, rs);
		/* The session id goes out only with a successful initialize: a failed one leaves
		 * nothing behind. */
		if (ok) {
			snprintf(rs->session, sizeof(rs->session), "%s", ms->id);
			__atomic_add_fetch(&s->metrics.sessions_opened, 1, __ATOMIC_RELAXED);
		}
	}
	waiter_free(w);
	session_put(s, ms);
}

static bool known_protocol(const char *v)
{
	return strcmp(v, MCP_PROTOCOL_LATEST) == 0 || strcmp(v, MCP_PROTOCOL_PREVIOUS) == 0 ||
	       strcmp(v, "2025-03-26") == 0;
}

static void post(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	const char *sid = header(rq, "Mcp-Session-Id");
	const char *proto = header(rq, "MCP-Protocol-Version");
	if (proto && !known_protocol(proto)) {
		hx_error(rs, 400, "unsupported MCP-Protocol-Version %.40s", proto);
		return;
	}
	struct jr_message m;
	struct jr_failure fail;
	int r = jr_parse(rq->body ? rq->body : "", rq->len, s->o.max_message, &m, &fail);
	if (r < 0) {
		if (r == -ENOMEM) {
			hx_error(rs, 500, "out of memory");
			return;
		}
		/* Not one JSON-RPC message: HTTP 400 with the JSON-RPC error as the body. */
		hx_json(rs, 400, jr_failure_response(&fail));
		jr_failure_clear(&fail);
		return;
	}
	if (!sid && m.kind == JR_REQUEST && strcmp(m.method, "initialize") == 0) {
		initialize(s, rq, &m, rs);
		jr_message_clear(&m);
		return;
	}
	struct msession *ms = sid ? session_get(s, sid, rq->who) : NULL;
	if (!sid)
		hx_error(rs, 400, "Mcp-Session-Id header required (send initialize first)");
	else if (!ms)
		hx_error(rs, 404, "no such MCP session (it ended or never existed): initialize again");
	if (!ms) {
		jr_message_clear(&m);
		return;
	}
	pthread_mutex_lock(&ms->mu);
	const char *negotiated = mcp_session_protocol(ms->s);
	bool mismatch = proto && negotiated && strcmp(proto, negotiated) != 0;
	pthread_mutex_unlock(&ms->mu);
	if (mismatch) {
		hx_error(rs, 400, "MCP-Protocol-Version %.40s is not this session's (%s)", proto, negotiated);
		session_put(s, ms);
	} else if (m.kind == JR_REQUEST) {
		request(s, ms, rq, &m, rs);
	} else {
		/* Notifications and responses (to our elicitation) are accepted without a body. */
		pthread_mutex_lock(&ms->mu);
		feed_locked(ms, rq, &m);
		ms->last_used = hx_now_ms();
		pthread_mutex_unlock(&ms->mu);
		rs->status = 202;
		session_put(s, ms);
	}
	jr_message_clear(&m);
}

void hx_mcp(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	if (strcmp(rq->method, "GET") == 0) {
		hx_error(rs, 405, "this server offers no GET stream: POST messages to /mcp");
		snprintf(rs->allow, sizeof(rs->allow), "POST, DELETE");
		return;
	}
	if (strcmp(rq->method, "DELETE") == 0) {
		const char *sid = header(rq, "Mcp-Session-Id");
		struct msession *ms = sid ? session_get(s, sid, rq->who) : NULL;
		if (!sid) {
			hx_error(rs, 400, "Mcp-Session-Id header required");
			return;
		}
		if (!ms) {
			hx_error(rs, 404, "no such MCP session");
			return;
		}
		session_close(s, ms);
		session_put(s, ms);
		rs->status = 204;
		return;
	}
	post(s, rq, rs);
}

/* ---- the pump ------------------------------------------------------------------------------- */

int hx_pump(struct hx_server *s, int stop_fd, int max_ms)
{
	struct hx_sessions *t = s->sessions;
	cleanup_free struct msession **snap = calloc(t->cap + 1, sizeof(struct msession *));
	cleanup_free struct pollfd *pfd = calloc(t->cap + 2, sizeof(*pfd));
	if (!snap || !pfd)
		return -ENOMEM;
	size_t n = 0;
	pthread_mutex_lock(&t->mu);
	for (; n < t->n; n++) {
		snap[n] = t->v[n];
		snap[n]->refs++;
	}
	pthread_mutex_unlock(&t->mu);
	int timeout = max_ms;
	pfd[0] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = t->wake_fd, .events = POLLIN};
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&snap[i]->mu);
		pfd[i + 2] = (struct pollfd){.fd = mcp_session_fd(snap[i]->s), .events = POLLIN};
		int to = mcp_session_timeout(snap[i]->s);
		pthread_mutex_unlock(&snap[i]->mu);
		if (to >= 0 && (timeout < 0 || to < timeout))
			timeout = to;
	}
	int rc = poll(pfd, n + 2, timeout), failed = 0;
	/* After the wait: a request may have used a session meanwhile (last_used later than a clock
	 * read before poll would be, and the difference would wrap). */
	uint64_t now = hx_now_ms();
	if (rc < 0) {
		failed = errno == EINTR ? 0 : -errno;
		rc = 0;
	}
	bool stop = rc > 0 && stop_fd >= 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR));
	if (rc > 0 && pfd[1].revents) {
		uint64_t v;
		if (read(t->wake_fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: another reader took it */
		}
	}
	for (size_t i = 0; i < n && !stop; i++) {
		struct msession *ms = snap[i];
		pthread_mutex_lock(&ms->mu);
		pump_locked(ms); /* cheap when idle: also expires approvals whose deadline passed */
		bool idle = ms->busy == 0 && mcp_session_inflight(ms->s) == 0 && now >= ms->last_used &&
			    now - ms->last_used >= s->o.session_idle_ms;
		pthread_mutex_unlock(&ms->mu);
		if (idle) {
			hx_log(s, MCP_LOG_INFO, "MCP session %.8s... ended after %u ms idle", ms->id,
			       s->o.session_idle_ms);
			session_close(s, ms);
		}
	}
	for (size_t i = 0; i < n; i++)
		session_put(s, snap[i]);
	return failed ? failed : stop ? 1 : 0;
}
