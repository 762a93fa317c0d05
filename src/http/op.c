/* op.c — one JSON API request as a tool call: schema check, approval gate, the manager's asynchronous
 * operation, and its result as one response or as a stream of NDJSON lines / SSE events. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/hx.h"
#include "manager/approval.h"
#include "server/text.h"
#include "util/cleanup.h"
#include "util/error.h"

#define STOP_GRACE_MS 5000 /* after a stop, how long a request waits for a cancelled operation */
#define UTF8_CARRY 4

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
	char *principal; /* who made the call: owns what it creates, never approves it */
	uint64_t started; /* hx_now_us() when the request arrived */
	bool decided; /* the gate was consulted: approval holds the outcome */
	enum srv_gate_outcome approval;
	enum srv_gate_by by; /* who answered an ASK */
	bool ended; /* the audit hook (gate->finished) heard how it ended */
	struct srv_op *op;
	bool running;	/* the manager accepted the operation (its on_done will come) */
	bool cancelled; /* cancel(op) was called */
	bool want_output;

	/* Shared with the manager's threads and the approval queue's resolver: under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs; /* the request's, plus the manager's until its on_done */
	struct chunk *head, *tail;
	size_t queued;
	uint64_t dropped;
	struct srv_result *result;
	bool done;
	bool answered; /* the approval queue called back */
	enum srv_gate_outcome answer;
	enum srv_gate_by answer_by;

	/* The stream (the connection's thread only). */
	bool sse, eof;
	char *pending;
	size_t pending_len, pending_off;
	char carry[2][UTF8_CARRY];
	size_t carry_len[2];
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
	free(c->principal);
	free(c->pending);
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

struct hx_call *hx_call_new(struct hx_server *s, enum tl_id tool, json_t *steal_args, const char *peer,
			    const char *principal)
{
	struct hx_call *c = steal_args ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		json_decref(steal_args);
		return NULL;
	}
	c->s = s;
	c->tool = tool;
	c->args = steal_args;
	c->peer = peer ? strdup(peer) : NULL;
	c->principal = strdup(principal ? principal : "");
	if (!c->principal) {
		json_decref(steal_args);
		free(c->peer);
		free(c);
		return NULL;
	}
	c->started = hx_now_us();
	c->refs = 1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	return c;
}

const json_t *hx_call_args(const struct hx_call *c)
{
	return c->args;
}

enum tl_id hx_call_tool(const struct hx_call *c)
{
	return c->tool;
}

/* ---- the audit hook ------------------------------------------------------------------------- */

static void end(struct hx_call *c, enum srv_call_status status, const struct srv_result *res, const char *msg)
{
	if (c->ended)
		return;
	c->ended = true;
	struct srv_call_end e = {
		.tool = tl_name(c->tool),
		.args = c->args,
		.status = status,
		.decided = c->decided,
		.approval = c->approval,
		.by = c->by,
		.transport = "http",
		.peer = c->peer,
		.duration_ms = (hx_now_us() - c->started) / 1000,
		.duration_us = hx_now_us() - c->started,
		.result = res,
		.message = msg,
	};
	c->s->gate.finished(c->s->gate.ctx, &e);
}

static void record(struct hx_call *c, enum srv_gate_outcome o, enum srv_gate_by by)
{
	c->decided = true;
	c->approval = o;
	c->by = by;
	c->s->gate.record(c->s->gate.ctx, tl_name(c->tool), c->args, o);
}

/* ---- the approval gate ---------------------------------------------------------------------- */

static void approval_done(void *cookie, enum srv_gate_outcome outcome, enum srv_gate_by by)
{
	struct hx_call *c = cookie;
	pthread_mutex_lock(&c->mu);
	c->answered = true;
	c->answer = outcome;
	c->answer_by = by;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu); /* c may be gone from here on: the waiter owns it */
}

/* Registers the call in the approval queue and waits for a decision, its deadline, or a stop. */
static enum srv_gate_outcome ask_and_wait(struct hx_call *c, const struct srv_gate_decision *d, enum srv_gate_by *by)
{
	struct apq *q = c->s->o.approvals;
	uint32_t timeout = d->timeout_ms ? d->timeout_ms : c->s->o.approval_timeout_ms;
	uint64_t id;
	struct srv_question qn = {.tool = tl_name(c->tool), .args = c->args, .reason = d->reason,
				  .timeout_ms = timeout, .principal = c->principal};
	if (apq_ask(q, &qn, approval_done, c, &id) < 0)
		return SRV_GATE_UNAVAILABLE;
	hx_log(c->s, MCP_LOG_NOTICE, "%s from %s waits for approval %llu", tl_name(c->tool), c->peer ? c->peer : "?",
	       (unsigned long long)id);
	uint64_t deadline = hx_now_ms() + timeout;
	bool gave_up = false;
	pthread_mutex_lock(&c->mu);
	while (!c->answered) {
		uint64_t now = hx_now_ms();
		if (!gave_up && (now >= deadline || hx_stopping(c->s))) {
			/* Outside our lock: apq_cancel calls approval_done, which takes it. A resolver
			 * that won the race calls it instead; either way answered becomes true. */
			gave_up = true;
			pthread_mutex_unlock(&c->mu);
			apq_cancel(q, id, now >= deadline ? SRV_GATE_TIMED_OUT : SRV_GATE_ABANDONED);
			pthread_mutex_lock(&c->mu);
			continue;
		}
		uint64_t left = deadline > now ? deadline - now : 0;
		hx_cond_wait_ms(&c->cv, &c->mu, left < HX_WAIT_SLICE_MS ? (int)left + 1 : HX_WAIT_SLICE_MS);
	}
	enum srv_gate_outcome o = c->answer;
	*by = c->answer_by;
	pthread_mutex_unlock(&c->mu);
	return o;
}

static const char *denial_text(enum srv_gate_outcome o)
{
	switch (o) {
	case SRV_GATE_DECLINED:
		return "denied: a reviewer did not approve this call";
	case SRV_GATE_TIMED_OUT:
		return "denied: no approval before the timeout";
	case SRV_GATE_ABANDONED:
		return "denied: the server stopped while the call waited for approval";
	case SRV_GATE_UNAVAILABLE:
		return "denied: this call needs a human's approval, and this server has no approval queue";
	case SRV_GATE_ALLOWED:
	case SRV_GATE_APPROVED:
	case SRV_GATE_DENIED:
		break;
	}
	return "denied";
}

/* APPROVAL GATE: the one place where risk rules see a JSON API call before the manager does.
 * 0 lets the call run; 1 filled rs with the denial (403) and ended the call. */
static int gate(struct hx_call *c, struct hx_response *rs)
{
	const struct srv_gate *g = c->s->inner;
	struct srv_gate_decision d = {.verdict = SRV_GATE_DENY};
	if (g)
		g->check(g->ctx, tl_name(c->tool), c->args, &d);
	else
		d.verdict = SRV_GATE_ALLOW; /* no risk rules configured: the operator's choice */
	d.reason[sizeof(d.reason) - 1] = 0;
	enum srv_gate_outcome o;
	enum srv_gate_by by = SRV_BY_NOBODY;
	switch (d.verdict) {
	case SRV_GATE_ALLOW:
		record(c, SRV_GATE_ALLOWED, SRV_BY_NOBODY);
		return 0;
	case SRV_GATE_ASK:
		o = c->s->o.approvals ? ask_and_wait(c, &d, &by) : SRV_GATE_UNAVAILABLE;
		record(c, o, by);
		if (o == SRV_GATE_APPROVED)
			return 0;
		break;
	case SRV_GATE_DENY:
	default: /* a verdict we do not know is a denial: fail closed */
		o = SRV_GATE_DENIED;
		record(c, o, SRV_BY_NOBODY);
		break;
	}
	char text[SRV_GATE_REASON_MAX + 128];
	if (o == SRV_GATE_DENIED)
		snprintf(text, sizeof(text), "denied: %s", d.reason[0] ? d.reason : "the risk rules refuse this call");
	else
		snprintf(text, sizeof(text), "%s%s%s%s", denial_text(o), d.reason[0] ? " (" : "", d.reason,
			 d.reason[0] ? ")" : "");
	json_t *reason = json_string(text);
	hx_json(rs, 403, json_pack("{s:o,s:s}", "error", reason ? reason : json_string("denied"), "approval",
				  srv_gate_outcome_name(o)));
	end(c, SRV_CALL_DENIED, NULL, text);
	return 1;
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

/* ---- running -------------------------------------------------------------------------------- */

static int start(struct hx_call *c, const void *raw, size_t raw_len, struct al_error *err)
{
	const struct srv_mgr_api *m = c->s->o.mgr;
	struct srv_sink sink = {.on_output = sink_output, .on_done = sink_done, .cookie = c};
	pthread_mutex_lock(&c->mu);
	c->refs++; /* the manager's, dropped by sink_done */
	pthread_mutex_unlock(&c->mu);
	int r;
	if (c->tool == TL_WRITE_FILE && raw) {
		/* The bytes as they came: no base64 round trip for a raw PUT body. */
		struct srv_write_req req = {
			.owner = c->principal,
			.sandbox_id = json_string_value(json_object_get(c->args, "sandbox_id")),
			.path = json_string_value(json_object_get(c->args, "path")),
			.data = raw,
			.len = raw_len,
		};
		r = m->write_file(m->ctx, &req, &sink, &c->op, err);
	} else if (c->tool == TL_READ_FILE) {
		/* The open file rather than its bytes: the response streams it (memory per request stays
		 * bounded, whatever the file's size). */
		struct srv_path_req req = {
			.owner = c->principal,
			.sandbox_id = json_string_value(json_object_get(c->args, "sandbox_id")),
			.path = json_string_value(json_object_get(c->args, "path")),
			.want_fd = true,
		};
		r = m->read_file(m->ctx, &req, &sink, &c->op, err);
	} else {
		r = tl_start(m, c->tool, c->args, c->principal, &sink, &c->op, err);
	}
	if (r < 0) {
		c->op = NULL;
		call_unref(c); /* the manager will never call on_done */
		return r;
	}
	c->running = true;
	return 0;
}

static void cancel_op(struct hx_call *c)
{
	const struct srv_mgr_api *m = c->s->o.mgr;
	if (c->running && c->op && !c->cancelled && m->cancel) {
		c->cancelled = true;
		m->cancel(m->ctx, c->op);
	}
}

/* Waits for on_done. On a stop, cancels the operation and waits a grace period more. */
static int wait_done(struct hx_call *c)
{
	uint64_t give_up = 0;
	pthread_mutex_lock(&c->mu);
	while (!c->done) {
		if (hx_stopping(c->s) && !give_up) {
			pthread_mutex_unlock(&c->mu);
			cancel_op(c);
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

/* The request is over: stop what still runs, hand the operation back, end the audit record. */
static void call_release(struct hx_call *c)
{
	const struct srv_mgr_api *m = c->s->o.mgr;
	pthread_mutex_lock(&c->mu);
	bool done = c->done;
	pthread_mutex_unlock(&c->mu);
	if (!done)
		cancel_op(c);
	if (c->running && c->op && m->release)
		m->release(m->ctx, c->op);
	c->op = NULL;
	end(c, SRV_CALL_CANCELLED, NULL, NULL);
	call_unref(c);
}

/* Schema and cross-field checks: the same as a tools/call. 1 when rs got the 400. */
static int validate(struct hx_call *c, struct hx_response *rs)
{
	char why[SCH_MSG_MAX];
	int r = tl_check_args(&c->s->cat, c->tool, c->args, why);
	if (r == 0)
		return 0;
	if (r == -ENOMEM) {
		hx_error(rs, 500, "out of memory");
		end(c, SRV_CALL_REQUEST_FAILED, NULL, "out of memory");
	} else {
		hx_error(rs, 400, "invalid request: %s", why);
		end(c, SRV_CALL_INVALID, NULL, why);
	}
	return 1;
}

/* Validation, gate and start; 1 when rs holds the refusal. */
static int begin(struct hx_call *c, const void *raw, size_t raw_len, struct hx_response *rs)
{
	if (validate(c, rs) || gate(c, rs))
		return 1;
	struct al_error err = {0};
	int r = start(c, raw, raw_len, &err);
	if (r < 0) {
		hx_error(rs, hx_status_of_errno(r), "%s", err.msg[0] ? err.msg : "the request failed");
		end(c, SRV_CALL_REQUEST_FAILED, NULL, err.msg);
		return 1;
	}
	return 0;
}

void hx_call_run(struct hx_call *c, const void *raw, size_t raw_len, hx_ok_fn ok, struct hx_response *rs)
{
	if (begin(c, raw, raw_len, rs) == 0) {
		if (wait_done(c) < 0) {
			hx_error(rs, 503, "the server is stopping");
		} else if (!c->result) {
			hx_error(rs, 500, "the manager ran out of memory");
			end(c, SRV_CALL_REQUEST_FAILED, NULL, "out of memory");
		} else if (c->result->error) {
			const char *msg = c->result->err.msg[0] ? c->result->err.msg : "the request failed";
			hx_error(rs, hx_status_of_errno(c->result->error), "%s", msg);
			end(c, SRV_CALL_REQUEST_FAILED, c->result, msg);
		} else {
			ok(c, c->result, rs);
			end(c, rs->status < 300 ? SRV_CALL_OK : SRV_CALL_REQUEST_FAILED, c->result, NULL);
		}
	}
	call_release(c);
}

/* ---- the stream ----------------------------------------------------------------------------- */

/* Appends one event (an NDJSON line, or an SSE event named name) carrying obj to pending. */
static int emit(struct hx_call *c, const char *name, json_t *steal)
{
	cleanup_free char *text = steal ? json_dumps(steal, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	json_decref(steal);
	if (!text)
		return -ENOMEM;
	char *ev = NULL;
	int n = c->sse ? asprintf(&ev, "event: %s\ndata: %s\n\n", name, text) : asprintf(&ev, "%s\n", text);
	if (n < 0)
		return -ENOMEM;
	char *grown = realloc(c->pending, c->pending_len + (size_t)n);
	if (!grown) {
		free(ev);
		return -ENOMEM;
	}
	memcpy(grown + c->pending_len, ev, (size_t)n);
	free(ev);
	c->pending = grown;
	c->pending_len += (size_t)n;
	return 0;
}

/* One chunk as an output event; a character cut by the chunk boundary waits for the next one. */
static int emit_output(struct hx_call *c, enum srv_stream stream, const char *data, size_t len, bool final)
{
	int k = stream == SRV_STDERR;
	size_t have = c->carry_len[k];
	cleanup_free char *joined = malloc(have + len + 1);
	if (!joined)
		return -ENOMEM;
	memcpy(joined, c->carry[k], have);
	if (len)
		memcpy(joined + have, data, len);
	size_t total = have + len, send = final ? total : txt_utf8_complete(joined, total);
	c->carry_len[k] = total - send;
	memcpy(c->carry[k], joined + send, total - send);
	if (!send)
		return 0;
	return emit(c, "output",
		    json_pack("{s:s,s:o}", "stream", k ? "stderr" : "stdout", "data", txt_json_lossy(joined, send)));
}

static int emit_result(struct hx_call *c)
{
	int r = 0;
	for (int k = 0; k < 2 && r == 0; k++)
		if (c->carry_len[k])
			r = emit_output(c, k ? SRV_STDERR : SRV_STDOUT, "", 0, true);
	if (r < 0)
		return r;
	const struct srv_result *res = c->result;
	if (!res || res->error) {
		const char *msg = !res ? "the manager ran out of memory"
				       : (res->err.msg[0] ? res->err.msg : "the request failed");
		end(c, SRV_CALL_REQUEST_FAILED, res, msg);
		return emit(c, "error", json_pack("{s:s,s:i}", "error", msg, "status",
						  res ? hx_status_of_errno(res->error) : 500));
	}
	json_t *full = tl_result(c->tool, c->args, res);
	json_t *sc = json_object_get(full, "structuredContent");
	bool failed = json_is_true(json_object_get(full, "isError"));
	r = sc ? emit(c, "result", json_pack("{s:O,s:I}", "result", sc, "stream_dropped_bytes", (json_int_t)c->dropped))
	       : -ENOMEM;
	json_decref(full);
	end(c, failed ? SRV_CALL_PROGRAM_FAILED : SRV_CALL_OK, res, NULL);
	return r;
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
	cancel_op(c);
	for (int k = 0; k < 2; k++)
		c->carry_len[k] = 0;
	c->eof = true;
	end(c, SRV_CALL_CANCELLED, NULL, msg);
	return emit(c, "error", json_pack("{s:s,s:i,s:b}", "error", msg, "status", 503, "stopped", 1));
}

static ssize_t stream_read(void *ctx, char *buf, size_t max, bool block)
{
	struct hx_call *c = ctx;
	uint64_t idle_since = hx_now_ms();
	while (c->pending_off == c->pending_len) {
		free(c->pending);
		c->pending = NULL;
		c->pending_len = c->pending_off = 0;
		if (c->eof)
			return HX_STREAM_END;
		pthread_mutex_lock(&c->mu);
		int r = fill(c);
		if (r == 0 && block && !hx_stopping(c->s))
			hx_cond_wait_ms(&c->cv, &c->mu, HX_WAIT_SLICE_MS);
		pthread_mutex_unlock(&c->mu);
		if (r == 0 && hx_stopping(c->s)) {
			if (emit_stopped(c) < 0)
				return HX_STREAM_ERROR;
			continue;
		}
		if (r < 0)
			return HX_STREAM_ERROR;
		if (r == 0 && !block)
			return 0;
		if (r == 0 && c->sse && hx_now_ms() - idle_since >= HX_KEEPALIVE_MS) {
			/* An SSE comment: keeps proxies from closing a quiet stream. */
			c->pending = strdup(": keepalive\n\n");
			if (!c->pending)
				return HX_STREAM_ERROR;
			c->pending_len = strlen(c->pending);
		}
	}
	size_t n = c->pending_len - c->pending_off;
	if (n > max)
		n = max;
	memcpy(buf, c->pending + c->pending_off, n);
	c->pending_off += n;
	return (ssize_t)n;
}

static void stream_free(void *ctx)
{
	call_release(ctx);
}

static const struct hx_stream_ops call_stream_ops = {.read = stream_read, .free = stream_free};

void hx_call_stream(struct hx_call *c, bool sse, struct hx_response *rs)
{
	c->want_output = true;
	c->sse = sse;
	if (begin(c, NULL, 0, rs)) {
		call_release(c);
		return;
	}
	/* Started: from here the status is 200 and failures travel in the stream's last event. */
	rs->status = 200;
	rs->type = sse ? "text/event-stream" : "application/x-ndjson";
	rs->ops = &call_stream_ops;
	rs->stream = c;
}
