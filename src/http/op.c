/* op.c — one JSON API request on the call runner (service/runner.h), translated: a reviewer's wait, the
 * manager's output, and the result as one response or as a stream of NDJSON lines / SSE events. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/e2b.h"
#include "http/hx.h"
#include "service/approval.h"
#include "util/text.h"
#include "util/cleanup.h"
#include "util/error.h"

#define STOP_GRACE_MS 5000 /* after a stop, how long a request waits for a cancelled operation */

struct chunk {
	struct chunk *next;
	enum srv_stream stream;
	size_t len;
	char data[];
};

struct hx_call {
	struct hx_server *s;
	enum tl_id tool;
	json_t *args;
	char *peer;
	struct svc_call *sc; /* the runner's side: approval, the manager's operation, the audit record */
	bool want_output;
	uint64_t ask_id;	 /* the approval queue's entry, while a human is asked */
	uint64_t ask_deadline;	 /* hx_now_ms() when silence becomes a denial */
	bool (*gone)(void *ctx); /* the request's connection watch (hx_request.gone), while its handler waits */
	void *gone_ctx;
	bool left;    /* the client went away before its answer: the call was cancelled */
	int spool_fd; /* hx_call_spool: the upload's file (borrowed from the request), or -1 */
	bool asking;  /* a stream that started while a human is asked (its events say so) */

	/* Shared with the manager's threads and the approval queue's resolver: under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs; /* the request's, plus the manager's until its on_done */
	struct chunk *head, *tail;
	size_t queued;
	uint64_t dropped;
	uint64_t dropped_events; /* SRV_EVENT chunks (a watch's events) dropped past the budget */
	struct srv_result *result;
	bool done;
	bool answered; /* the approval queue called back */
	enum srv_gate_outcome answer;
	enum srv_gate_by answer_by;
	char approver[96]; /* who answered ("" : nobody named) */

	/* The stream (the connection's thread only). */
	bool sse, eof;
	uint64_t idle_since; /* hx_now_ms() when the stream last had something to send */
	char *pending;
	size_t pending_len, pending_off, pending_cap;
	struct txt_carry carry[2];	  /* per stream: a character cut by the chunk boundary */
	bool base64;			  /* output events carry bytes as base64 (hx_call_output_base64) */
	const struct hx_framing *framing; /* hx_call_framing: the front end frames the events itself */
	void *framing_ctx;
};

static void call_destroy(struct hx_call *c)
{
	for (struct chunk *k = c->head, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	srv_result_free(c->result);
	json_decref(c->args);
	free(c->peer);
	free(c->pending);
	if (c->framing && c->framing->free)
		c->framing->free(c->framing_ctx);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static void call_unref(struct hx_call *c)
{
	pthread_mutex_lock(&c->mu);
	bool last = --c->refs == 0;
	pthread_mutex_unlock(&c->mu);
	if (last)
		call_destroy(c);
}

struct hx_call *hx_call_new(struct hx_server *s, enum tl_id tool, json_t *steal_args, const struct hx_request *rq)
{
	const char *peer = rq->peer, *principal = rq->who ? rq->who->name : NULL;
	struct hx_call *c = steal_args ? calloc(1, sizeof(*c)) : NULL;
	/* The principal auth.c authenticated: a token's name or the socket peer's uid ("" only on a
	 * server that has no credential at all: the in-process tests). */
	bool token = principal && strncmp(principal, "token:", 6) == 0;
	const struct svc_principal who = {
		.kind = token			  ? SVC_PRINCIPAL_TOKEN
			: principal && *principal ? SVC_PRINCIPAL_PEER
						  : SVC_PRINCIPAL_ANONYMOUS,
		.name = principal && *principal ? principal : NULL,
		.uid = (uid_t)-1,
	};
	if (c) {
		c->sc = svc_call_new(&s->rn, tool, steal_args, &who, peer);
		c->peer = peer ? strdup(peer) : NULL;
	}
	if (!c || !c->sc || (peer && !c->peer)) {
		if (c)
			svc_call_free(c->sc);
		if (c)
			free(c->peer);
		free(c);
		json_decref(steal_args);
		return NULL;
	}
	/* The audit records of an E2B SDK's calls say they came through that front end. */
	if (e2b_claims(s, rq, NULL))
		svc_call_set_transport(c->sc, "e2b");
	c->s = s;
	c->tool = tool;
	c->args = steal_args;
	c->gone = rq->gone;
	c->gone_ctx = rq->lookup_ctx;
	c->refs = 1;
	c->spool_fd = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	return c;
}

int hx_call_act_for(struct hx_call *c, const char *owner)
{
	return svc_call_act_for(c->sc, owner);
}

const json_t *hx_call_args(const struct hx_call *c)
{
	return c->args;
}

void hx_call_spool(struct hx_call *c, int fd)
{
	c->spool_fd = fd;
}

enum tl_id hx_call_tool(const struct hx_call *c)
{
	return c->tool;
}

/* ---- the manager's callbacks (any thread) --------------------------------------------------- */

static void sink_output(void *cookie, enum srv_stream stream, const char *data, size_t len)
{
	struct hx_call *c = cookie;
	pthread_mutex_lock(&c->mu);
	struct chunk *k = NULL;
	/* Bounded: a client that reads slowly loses live output, never the result (the verdict
	 * keeps its capped copy). */
	if (c->want_output && len && c->queued + len <= HX_STREAM_BUDGET)
		k = malloc(sizeof(*k) + len);
	if (k) {
		*k = (struct chunk){.stream = stream, .len = len};
		memcpy(k->data, data, len);
		if (c->tail)
			c->tail->next = k;
		else
			c->head = k;
		c->tail = k;
		c->queued += len;
		pthread_cond_broadcast(&c->cv);
	} else if (c->want_output) {
		c->dropped += len;
		c->dropped_events += stream == SRV_EVENT;
	}
	pthread_mutex_unlock(&c->mu);
}

static void sink_done(void *cookie, struct srv_result *result)
{
	struct hx_call *c = cookie;
	pthread_mutex_lock(&c->mu);
	c->result = result;
	c->done = true;
	pthread_cond_broadcast(&c->cv);
	bool last = --c->refs == 0; /* the manager's reference */
	pthread_mutex_unlock(&c->mu);
	if (last)
		call_destroy(c); /* the request went away first: nobody wants the result */
}

static void approval_done(void *cookie, enum srv_gate_outcome outcome, enum srv_gate_by by, const char *approver)
{
	struct hx_call *c = cookie;
	pthread_mutex_lock(&c->mu);
	c->answered = true;
	c->answer = outcome;
	c->answer_by = by;
	snprintf(c->approver, sizeof(c->approver), "%s", approver ? approver : "");
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu); /* c may be gone from here on: the waiter owns it */
}

/* ---- the client ------------------------------------------------------------------------------ */

/* Whether the client went away while its handler waits (the request's thread only). Once seen, it
 * stays so, and the audit record will say the client left: its call is cancelled, since nobody is
 * there to get the answer (docs/openapi.yaml promises it). */
static bool client_gone(struct hx_call *c)
{
	if (!c->left && c->gone && c->gone(c->gone_ctx)) {
		c->left = true;
		svc_call_client_left(c->sc);
		hx_log(c->s, MCP_LOG_INFO, "%s from %s: the client went away; the call is cancelled", tl_name(c->tool),
		       c->peer ? c->peer : "?");
	}
	return c->left;
}

/* ---- the port: how the runner reaches this request's reviewer and sink ---------------------- */

/* The JSON API's words for a human's (or the clock's) no, with what the rules found. */
static void denial(const struct hx_call *c, enum srv_gate_outcome o, char *out, size_t cap)
{
	const char *reason = svc_call_reason(c->sc);
	const char *text = o == SRV_GATE_UNAVAILABLE
				   ? "denied: this call needs a human's approval, and this server has no approval queue"
				   : svc_denial_text(o);
	snprintf(out, cap, "%s%s%s%s", text, reason[0] ? " (" : "", reason, reason[0] ? ")" : "");
}

/* Registers the call in the approval queue; the request's thread then waits (wait_answer). */
static int port_ask(void *owner, const struct srv_gate_decision *d, char *why, size_t cap)
{
	struct hx_call *c = owner;
	struct apq *q = c->s->o.approvals;
	uint32_t timeout = d->timeout_ms ? d->timeout_ms : c->s->o.approval_timeout_ms;
	struct srv_question qn = {.tool = tl_name(c->tool),
				  .args = c->args,
				  .reason = d->reason,
				  .timeout_ms = timeout,
				  .principal = svc_call_principal(c->sc)->name,
				  .marks = d->marks,
				  .nmarks = d->nmarks};
	if (!q || apq_ask(q, &qn, approval_done, c, &c->ask_id) < 0) {
		denial(c, SRV_GATE_UNAVAILABLE, why, cap);
		return -EPERM;
	}
	hx_log(c->s, MCP_LOG_NOTICE, "%s from %s waits for approval %llu", tl_name(c->tool), c->peer ? c->peer : "?",
	       (unsigned long long)c->ask_id);
	c->ask_deadline = hx_now_ms() + timeout;
	return 0;
}

static int port_sink(void *owner, struct srv_sink *out)
{
	struct hx_call *c = owner;
	pthread_mutex_lock(&c->mu);
	c->refs++; /* the manager's, dropped by sink_done */
	pthread_mutex_unlock(&c->mu);
	*out = (struct srv_sink){.on_output = sink_output, .on_done = sink_done, .cookie = c};
	return 0;
}

static void port_unsink(void *owner)
{
	call_unref(owner); /* the manager will never call on_done */
}

static const struct svc_port request_port = {.ask = port_ask, .sink = port_sink, .unsink = port_unsink};

/* The reviewer's silence past the deadline, a stop, or a client gone: gives up on the question
 * (apq_cancel answers it, here or on a resolver that won the race). Called with mu held; drops
 * and retakes it. Whether it gave up. */
static bool give_up_asking(struct hx_call *c)
{
	uint64_t now = hx_now_ms();
	if (!(now >= c->ask_deadline || hx_stopping(c->s) || client_gone(c)))
		return false;
	/* Outside our lock: apq_cancel calls approval_done, which takes it. A resolver that won the
	 * race calls it instead; either way answered becomes true. */
	pthread_mutex_unlock(&c->mu);
	apq_cancel(c->s->o.approvals, c->ask_id, now >= c->ask_deadline ? SRV_GATE_TIMED_OUT : SRV_GATE_ABANDONED);
	pthread_mutex_lock(&c->mu);
	return true;
}

/* Waits for the queue's answer at most wait_ms (-1: until it comes, giving up at the deadline).
 * Called with mu held. Whether it was answered. */
static bool await_answer(struct hx_call *c, int wait_ms, bool *gave_up)
{
	uint64_t until = wait_ms < 0 ? UINT64_MAX : hx_now_ms() + (uint64_t)wait_ms;
	while (!c->answered) {
		if (!*gave_up && give_up_asking(c)) {
			*gave_up = true;
			continue;
		}
		uint64_t now = hx_now_ms();
		if (now >= until)
			break;
		uint64_t left = c->ask_deadline > now ? c->ask_deadline - now : 0;
		if (until - now < left)
			left = until - now;
		hx_cond_wait_ms(&c->cv, &c->mu, left < HX_WAIT_SLICE_MS ? (int)left + 1 : HX_WAIT_SLICE_MS);
	}
	return c->answered;
}

/* Hands the queue's answer (answered is true) to the runner. */
static enum svc_step take_answer(struct hx_call *c, struct svc_refusal *ref)
{
	pthread_mutex_lock(&c->mu);
	enum srv_gate_outcome o = c->answer;
	enum srv_gate_by by = c->answer_by;
	char approver[sizeof(c->approver)];
	memcpy(approver, c->approver, sizeof(approver));
	pthread_mutex_unlock(&c->mu);
	char text[SVC_TEXT_MAX];
	denial(c, o, text, sizeof(text));
	svc_call_set_approver(c->sc, approver[0] ? approver : NULL);
	return svc_call_answer(c->sc, o, by, text, ref);
}

/* Waits for the reviewer's decision, its deadline, or a stop; then hands it to the runner. */
static enum svc_step wait_answer(struct hx_call *c, struct svc_refusal *ref)
{
	bool gave_up = false;
	pthread_mutex_lock(&c->mu);
	(void)await_answer(c, -1, &gave_up);
	pthread_mutex_unlock(&c->mu);
	return take_answer(c, ref);
}

/* ---- running -------------------------------------------------------------------------------- */

/* Waits for on_done. On a stop, or when the client goes away, cancels the operation and waits a
 * grace period more. */
static int wait_done(struct hx_call *c)
{
	uint64_t give_up = 0;
	pthread_mutex_lock(&c->mu);
	while (!c->done) {
		if (!give_up && (hx_stopping(c->s) || client_gone(c))) {
			pthread_mutex_unlock(&c->mu);
			svc_call_cancel(c->sc);
			give_up = hx_now_ms() + STOP_GRACE_MS;
			pthread_mutex_lock(&c->mu);
			continue;
		}
		if (give_up && hx_now_ms() >= give_up)
			break;
		hx_cond_wait_ms(&c->cv, &c->mu, HX_WAIT_SLICE_MS);
	}
	bool done = c->done;
	pthread_mutex_unlock(&c->mu);
	return done ? 0 : -ECANCELED;
}

/* The request is over: stop what still runs; the runner hands the operation back and ends the
 * audit record of a call that did not end (CANCELLED). */
static void call_release(struct hx_call *c)
{
	pthread_mutex_lock(&c->mu);
	bool done = c->done;
	pthread_mutex_unlock(&c->mu);
	if (!done)
		svc_call_cancel(c->sc);
	svc_call_free(c->sc);
	c->sc = NULL;
	call_unref(c);
}

void hx_call_drop(struct hx_call *c)
{
	call_release(c);
}

/* A call the runner refused (and recorded), as the JSON API answers it. */
static void refused(const struct svc_refusal *ref, struct hx_response *rs)
{
	switch (ref->status) {
	case SRV_CALL_INVALID:
		hx_error(rs, 400, "invalid request: %s", ref->text);
		return;
	case SRV_CALL_DENIED: {
		json_t *reason = json_string(ref->text);
		hx_json(rs, 403,
			json_pack("{s:o,s:s}", "error", reason ? reason : json_string("denied"), "approval",
				  srv_gate_outcome_name(ref->approval)));
		return;
	}
	case SRV_CALL_OK:
	case SRV_CALL_PROGRAM_FAILED:
	case SRV_CALL_REQUEST_FAILED:
	case SRV_CALL_CANCELLED:
		break;
	}
	hx_error(rs, ref->unavailable ? 503 : hx_status_of_errno(ref->error), "%s",
		 ref->text[0] ? ref->text : "the request failed");
}

/* Validation, the gate and the start: SVC_ASKING when a reviewer is asked (the queue's answer
 * then comes to approval_done). */
static enum svc_step start(struct hx_call *c, const void *raw, size_t raw_len, struct svc_refusal *ref)
{
	if (svc_call_validate(c->sc, ref) != 0)
		return SVC_REFUSED;
	svc_call_payload(c->sc, raw, raw_len, c->tool == TL_READ_FILE);
	if (c->spool_fd >= 0)
		svc_call_spool(c->sc, c->spool_fd);
	return svc_call_begin(c->sc, &request_port, c, ref);
}

/* Validation, the gate (waiting for a reviewer when the rules ask one) and the start; 1 when rs
 * holds the refusal. */
static int begin(struct hx_call *c, const void *raw, size_t raw_len, struct hx_response *rs)
{
	struct svc_refusal ref;
	enum svc_step step = start(c, raw, raw_len, &ref);
	if (step == SVC_ASKING)
		step = wait_answer(c, &ref);
	if (step == SVC_RUNNING)
		return 0;
	refused(&ref, rs);
	return 1;
}

void hx_call_run(struct hx_call *c, const void *raw, size_t raw_len, hx_ok_fn ok, struct hx_response *rs)
{
	if (begin(c, raw, raw_len, rs) == 0) {
		int r = wait_done(c);
		if (c->left) {
			/* Nobody reads this answer; the record says the call was cancelled, not how the
			 * killed program ended. */
			hx_error(rs, 503, "the client went away: the call was cancelled");
			rs->close = true;
			svc_call_end(c->sc, SRV_CALL_CANCELLED, r == 0 ? c->result : NULL, "the client went away");
		} else if (r < 0) {
			hx_error(rs, 503, "the server is stopping");
		} else if (!c->result) {
			hx_error(rs, 500, "the manager ran out of memory");
			svc_call_end(c->sc, SRV_CALL_REQUEST_FAILED, NULL, "out of memory");
		} else if (c->result->error) {
			const char *msg = c->result->err.msg[0] ? c->result->err.msg : "the request failed";
			hx_error(rs, hx_status_of_errno(c->result->error), "%s", msg);
			svc_call_end(c->sc, SRV_CALL_REQUEST_FAILED, c->result, msg);
		} else {
			ok(c, c->result, rs);
			svc_call_end(c->sc, rs->status < 300 ? SRV_CALL_OK : SRV_CALL_REQUEST_FAILED, c->result, NULL);
		}
	}
	call_release(c);
}

/* ---- the stream ----------------------------------------------------------------------------- */

/* Appends n bytes to pending. */
static int append(struct hx_call *c, const char *p, size_t n)
{
	/* Grown by doubling: a stream of many small events (a watch's) appends thousands at once. */
	size_t need = c->pending_len + n;
	if (need > c->pending_cap) {
		size_t cap = c->pending_cap ? c->pending_cap : 4096;
		while (cap < need)
			cap *= 2;
		char *grown = realloc(c->pending, cap);
		if (!grown)
			return -ENOMEM;
		c->pending = grown;
		c->pending_cap = cap;
	}
	if (n)
		memcpy(c->pending + c->pending_len, p, n);
	c->pending_len = need;
	return 0;
}

/* Appends what a framing callback made (malloc'd out, n bytes; r its return). */
static int append_framed(struct hx_call *c, int r, char *out, size_t n)
{
	if (r == 0 && out)
		r = append(c, out, n);
	free(out);
	return r;
}

/* Appends one event (an NDJSON line, or an SSE event named name, or what the framing makes of it)
 * carrying obj to pending. */
static int emit(struct hx_call *c, const char *name, json_t *steal)
{
	if (c->framing) {
		char *out = NULL;
		size_t n = 0;
		int r = steal ? c->framing->event(c->framing_ctx, name, steal, &out, &n) : -ENOMEM;
		json_decref(steal);
		return append_framed(c, r, out, n);
	}
	cleanup_free char *text = steal ? json_dumps(steal, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	json_decref(steal);
	if (!text)
		return -ENOMEM;
	char *ev = NULL;
	int n = c->sse ? asprintf(&ev, "event: %s\ndata: %s\n\n", name, text) : asprintf(&ev, "%s\n", text);
	if (n < 0)
		return -ENOMEM;
	int r = append(c, ev, (size_t)n);
	free(ev);
	return r;
}

/* A quiet stream's keep-alive (an SSE comment, or the framing's ping), when one is due. */
static int keepalive(struct hx_call *c)
{
	if (c->framing) {
		char *out = NULL;
		size_t n = 0;
		int r = c->framing->keepalive ? c->framing->keepalive(c->framing_ctx, &out, &n) : 0;
		return append_framed(c, r, out, n);
	}
	return append(c, ": keepalive\n\n", 13);
}

static bool keepalive_due(const struct hx_call *c)
{
	uint32_t every = c->framing ? c->framing->keepalive_ms : c->sse ? HX_KEEPALIVE_MS : 0;
	return every && (c->framing ? c->framing->keepalive != NULL : true) && hx_now_ms() - c->idle_since >= every;
}

/* One chunk as an output event; a character cut by the chunk boundary waits for the next one. */
static int emit_output(struct hx_call *c, enum srv_stream stream, const char *data, size_t len, bool final)
{
	if (stream == SRV_EVENT) { /* a whole JSON object (a watch's event): its own line, as it is */
		json_t *ev = json_loadb(data, len, 0, NULL);
		return ev ? emit(c, "event", ev) : 0;
	}
	int k = stream == SRV_STDERR;
	cleanup_free char *joined = NULL;
	size_t send;
	if (c->base64 && !len)
		return 0;
	if (c->base64) { /* bytes as they are: no character to keep whole */
		cleanup_free char *b64 = txt_base64_encode(data, len);
		return b64 ? emit(c, "output",
				  json_pack("{s:s,s:s,s:s}", "stream", k ? "stderr" : "stdout", "data", b64, "encoding",
					    "base64"))
			   : -ENOMEM;
	}
	if (txt_carry_take(&c->carry[k], data, len, final, &joined, &send) < 0)
		return -ENOMEM;
	if (!send)
		return 0;
	return emit(c, "output",
		    json_pack("{s:s,s:o}", "stream", k ? "stderr" : "stdout", "data", txt_json_lossy(joined, send)));
}

static int emit_result(struct hx_call *c)
{
	int r = 0;
	for (int k = 0; k < 2 && r == 0; k++)
		if (c->carry[k].len)
			r = emit_output(c, k ? SRV_STDERR : SRV_STDOUT, "", 0, true);
	if (r < 0)
		return r;
	const struct srv_result *res = c->result;
	if (!res || res->error) {
		const char *msg = !res ? "the manager ran out of memory"
				       : (res->err.msg[0] ? res->err.msg : "the request failed");
		svc_call_end(c->sc, SRV_CALL_REQUEST_FAILED, res, msg);
		return emit(c, "error",
			    json_pack("{s:s,s:i}", "error", msg, "status", res ? hx_status_of_errno(res->error) : 500));
	}
	json_t *full = tl_result(c->tool, c->args, res);
	json_t *sc = json_object_get(full, "structuredContent");
	bool failed = json_is_true(json_object_get(full, "isError"));
	json_t *last = sc ? json_pack("{s:O,s:I}", "result", sc, "stream_dropped_bytes", (json_int_t)c->dropped) : NULL;
	if (last && c->dropped_events)
		json_object_set_new(last, "stream_dropped_events", json_integer((json_int_t)c->dropped_events));
	r = last ? emit(c, "result", last) : -ENOMEM;
	json_decref(full);
	svc_call_end(c->sc, failed ? SRV_CALL_PROGRAM_FAILED : SRV_CALL_OK, res, NULL);
	return r;
}

/* A stream whose call waits for a reviewer says so at once: which approval, where to decide it. */
static int emit_pending(struct hx_call *c)
{
	char decide[64];
	snprintf(decide, sizeof(decide), "POST /v1/approvals/%llu", (unsigned long long)c->ask_id);
	uint64_t now = hx_now_ms();
	return emit(c, "approval",
		    json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:I}", "type", "approval", "status", "pending", "approval_id",
			      (json_int_t)c->ask_id, "decide", decide, "console", "/console", "reason",
			      svc_call_reason(c->sc), "timeout_s",
			      (json_int_t)((c->ask_deadline > now ? c->ask_deadline - now + 999 : 0) / 1000)));
}

/* How the approval ended, then (denied, timed out) the refusal as the stream's last event. */
static int emit_decided(struct hx_call *c, enum svc_step step, const struct svc_refusal *ref)
{
	pthread_mutex_lock(&c->mu);
	enum srv_gate_outcome o = c->answer;
	enum srv_gate_by by = c->answer_by;
	json_t *who = c->approver[0] ? json_string(c->approver) : json_null();
	pthread_mutex_unlock(&c->mu);
	const char *status = o == SRV_GATE_DECLINED ? "denied" : srv_gate_outcome_name(o);
	int r = emit(c, "approval",
		     json_pack("{s:s,s:s,s:I,s:s,s:o}", "type", "approval", "status", status, "approval_id",
			       (json_int_t)c->ask_id, "by", srv_gate_by_name(by), "approver", who));
	if (r < 0 || step != SVC_REFUSED)
		return r;
	c->eof = true;
	return emit(c, "error",
		    json_pack("{s:s,s:i,s:s}", "error", ref->text, "status", ref->status == SRV_CALL_DENIED ? 403 : 500,
			      "approval", srv_gate_outcome_name(ref->approval)));
}

/* The stream's part of the wait for a reviewer (the connection's thread): 1 once answered (the
 * outcome is pending), 0 while still asked, -errno. */
static int stream_asking(struct hx_call *c, bool block)
{
	bool gave_up = false;
	pthread_mutex_lock(&c->mu);
	bool answered = await_answer(c, block ? HX_WAIT_SLICE_MS : 0, &gave_up);
	pthread_mutex_unlock(&c->mu);
	if (!answered)
		return 0;
	c->asking = false;
	struct svc_refusal ref;
	enum svc_step step = take_answer(c, &ref);
	int r = emit_decided(c, step, &ref);
	return r < 0 ? r : 1;
}

/* Moves what the manager queued into pending; 1 when something is pending or the stream ended,
 * 0 when the caller should wait, -errno on failure. Called with mu held; drops and retakes it. */
static int fill(struct hx_call *c)
{
	struct chunk *list = c->head;
	bool done = c->done;
	c->head = c->tail = NULL;
	c->queued = 0;
	if (!list && !done)
		return 0;
	pthread_mutex_unlock(&c->mu);
	int r = 0;
	for (struct chunk *k = list, *next; k; k = next) {
		next = k->next;
		if (r == 0)
			r = emit_output(c, k->stream, k->data, k->len, false);
		free(k);
	}
	/* Output queued before on_done precedes the result (the manager calls nothing after on_done). */
	if (r == 0 && done) {
		r = emit_result(c);
		c->eof = true;
	}
	pthread_mutex_lock(&c->mu);
	return r < 0 ? r : 1;
}

/* The server stops while the call runs: the client learns it from a last line (rather than from a
 * cut connection that looks like a network fault), and the execution is killed. */
static int emit_stopped(struct hx_call *c)
{
	static const char msg[] = "the server is stopping: the execution was stopped before it ended";
	svc_call_cancel(c->sc);
	for (int k = 0; k < 2; k++)
		c->carry[k].len = 0;
	c->eof = true;
	svc_call_end(c->sc, SRV_CALL_CANCELLED, NULL, msg);
	return emit(c, "error", json_pack("{s:s,s:i,s:b}", "error", msg, "status", 503, "stopped", 1));
}

static ssize_t stream_read(void *ctx, char *buf, size_t max, bool block)
{
	struct hx_call *c = ctx;
	/* One wait at most (round 0), then one more look: a quiet program returns 0 to the server
	 * every slice, so it can see a client that went away (hx_stream_ops). */
	for (int round = 0; c->pending_off == c->pending_len; round++) {
		free(c->pending);
		c->pending = NULL;
		c->pending_len = c->pending_off = c->pending_cap = 0;
		if (c->eof)
			return HX_STREAM_END;
		if (c->asking) {
			int a = stream_asking(c, block && round == 0);
			if (a < 0)
				return HX_STREAM_ERROR;
			if (a > 0)
				continue;
			if (!keepalive_due(c))
				return 0;
			if (keepalive(c) < 0) /* a reviewer may take minutes */
				return HX_STREAM_ERROR;
			c->idle_since = hx_now_ms();
			continue;
		}
		pthread_mutex_lock(&c->mu);
		int r = fill(c);
		bool waited = r == 0 && block && round == 0 && !hx_stopping(c->s);
		if (waited)
			hx_cond_wait_ms(&c->cv, &c->mu, HX_WAIT_SLICE_MS);
		pthread_mutex_unlock(&c->mu);
		if (r == 0 && hx_stopping(c->s)) {
			if (emit_stopped(c) < 0)
				return HX_STREAM_ERROR;
			continue;
		}
		if (r < 0)
			return HX_STREAM_ERROR;
		if (r == 0 && keepalive_due(c)) {
			/* Keeps proxies (and clients that ask for pings) from closing a quiet stream. */
			if (keepalive(c) < 0)
				return HX_STREAM_ERROR;
			c->idle_since = hx_now_ms();
		} else if (r == 0 && !waited) {
			return 0;
		}
	}
	c->idle_since = hx_now_ms();
	size_t n = c->pending_len - c->pending_off;
	if (n > max)
		n = max;
	memcpy(buf, c->pending + c->pending_off, n);
	c->pending_off += n;
	return (ssize_t)n;
}

static void stream_free(void *ctx)
{
	struct hx_call *c = ctx;
	/* Freed before its last event: the connection ended under it (the client closed it, or a
	 * write to it failed). A call that ended already keeps its record as it is. */
	if (!c->eof) {
		svc_call_client_left(c->sc);
		hx_log(c->s, MCP_LOG_INFO, "%s from %s: the client went away; the call is cancelled", tl_name(c->tool),
		       c->peer ? c->peer : "?");
	}
	if (c->asking) {
		/* Nobody waits for this call now: the question leaves the queue (a reviewer's late
		 * approval is void), and the queue's callback, which may be running on a resolver's
		 * thread, has come before c goes. */
		apq_cancel(c->s->o.approvals, c->ask_id, SRV_GATE_ABANDONED);
		pthread_mutex_lock(&c->mu);
		while (!c->answered)
			hx_cond_wait_ms(&c->cv, &c->mu, HX_WAIT_SLICE_MS);
		pthread_mutex_unlock(&c->mu);
		c->asking = false;
		svc_call_abandon(c->sc);
	}
	call_release(c);
}

static const struct hx_stream_ops call_stream_ops = {.read = stream_read, .free = stream_free};

void hx_call_output_base64(struct hx_call *c)
{
	c->base64 = true;
}

void hx_call_framing(struct hx_call *c, const struct hx_framing *f, void *ctx)
{
	c->framing = f;
	c->framing_ctx = ctx;
}

void hx_call_stream(struct hx_call *c, bool sse, struct hx_response *rs)
{
	c->want_output = true;
	c->sse = sse;
	struct svc_refusal ref;
	enum svc_step step = start(c, NULL, 0, &ref);
	if (step == SVC_REFUSED) {
		refused(&ref, rs);
		call_release(c);
		return;
	}
	/* A reviewer is asked: the stream starts now and says so, rather than a silent wait of up to
	 * the rule's timeout; how it ends (approved and running, denied, timed out) follows in it. */
	c->asking = step == SVC_ASKING;
	if (c->asking && emit_pending(c) < 0) {
		apq_cancel(c->s->o.approvals, c->ask_id, SRV_GATE_ABANDONED);
		(void)wait_answer(c, &ref);
		hx_error(rs, 500, "out of memory");
		call_release(c);
		return;
	}
	/* Started: from here the status is 200 and failures travel in the stream's last event. */
	if (c->framing && c->framing->begin) {
		char *out = NULL;
		size_t n = 0;
		int r = c->framing->begin(c->framing_ctx, &out, &n);
		if (append_framed(c, r, out, n) < 0) {
			hx_error(rs, 500, "out of memory");
			call_release(c);
			return;
		}
	}
	rs->status = 200;
	c->idle_since = hx_now_ms();
	rs->type = c->framing ? c->framing->type : sse ? "text/event-stream" : "application/x-ndjson";
	rs->ops = &call_stream_ops;
	rs->stream = c;
}
