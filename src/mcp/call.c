/* call.c — tools/call on the wire: the runner (service/runner.h) validates, classifies, approves, runs
 * and audits; this file translates: elicitation, the approver's events, progress, cancellation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/session.h"
#include "service/approval.h"
#include "util/text.h"
#include "util/cleanup.h"

/* ---- call records ------------------------------------------------------------------------- */

static struct call *find_by_request(const struct mcp_session *s, const json_t *req_id)
{
	for (struct call *c = s->calls; c; c = c->next)
		if (json_equal(c->req_id, req_id))
			return c;
	return NULL;
}

static struct call *find_by_id(const struct mcp_session *s, uint64_t id)
{
	for (struct call *c = s->calls; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static struct call *find_by_elicitation(const struct mcp_session *s, const json_t *id)
{
	for (struct call *c = s->calls; c; c = c->next)
		if (c->state == CALL_APPROVAL && json_equal(c->elicit_id, id))
			return c;
	return NULL;
}

struct call *call_new(struct mcp_session *s, json_t *req_id, enum tl_id tool, struct svc_call *sc, json_t *token)
{
	struct call *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->s = s;
	c->id = ++s->next_call_id;
	c->req_id = json_incref(req_id);
	c->tool = tool;
	c->sc = sc;
	c->progress = json_incref(token);
	c->next = s->calls;
	if (s->calls)
		s->calls->prev = c;
	s->calls = c;
	s->n_calls++;
	return c;
}

/* Unlinks and frees c; the runner ends a call that did not end (CANCELLED) and releases its
 * operation to the manager. */
void call_free(struct mcp_session *s, struct call *c)
{
	if (s->own_making == c) {
		/* The session ends before its sandbox was made (a transport that does not wait for its
		 * calls, as stdio does): the create is released below, and the manager destroys what it
		 * makes for a released create. */
		s->own_making = NULL;
		(void)ses_logf(s, NULL, MCP_LOG_INFO,
			       "the session ended while its own sandbox was being made: it is destroyed once made");
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		s->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_calls--;
	svc_call_free(c->sc);
	evq_link_unref(c->link);
	evq_link_unref(c->alink);
	json_decref(c->req_id);
	json_decref(c->progress);
	json_decref(c->elicit_id);
	free(c);
}

/* ---- finishing ---------------------------------------------------------------------------- */

/* The session's own create call answers nobody: its end makes (or fails to make) the sandbox the
 * calls waiting for it run in. */
static int finish_own(struct mcp_session *s, struct call *c, enum srv_call_status status, const struct srv_result *res,
		      const char *text, json_t *out)
{
	char id[SRV_SANDBOX_ID_MAX] = "";
	if (status == SRV_CALL_OK && res && res->sandbox_id)
		snprintf(id, sizeof(id), "%s", res->sandbox_id);
	svc_call_end(c->sc, status, res, text);
	s->own_making = NULL; /* ended: call_free below is no early end */
	call_free(s, c);
	return own_made(s, id[0] ? id : NULL, text ? text : "the manager made no sandbox", out);
}

/* Answers c with a tool error (isError) and ends it. */
static int finish_tool_error(struct mcp_session *s, struct call *c, enum srv_call_status status, const char *text,
			     json_t *out)
{
	if (c->own_create)
		return finish_own(s, c, status, NULL, text, out);
	char buf[SVC_TEXT_MAX + 160];
	if (c->uses_own && status == SRV_CALL_REQUEST_FAILED)
		text = own_failed(s, c, text, buf, sizeof(buf));
	int r = ses_reply(out, c->req_id, tl_error_result(text));
	svc_call_end(c->sc, status, NULL, text);
	call_free(s, c);
	return r;
}

int call_fail(struct mcp_session *s, struct call *c, enum srv_call_status status, const char *text, json_t *out)
{
	return finish_tool_error(s, c, status, text, out);
}

/* A failure of the manager: the request's fault is a tool error the model can act on; the
 * server's fault (out of memory, I/O) is a JSON-RPC internal error. */
static int finish_failure(struct mcp_session *s, struct call *c, int rc, const char *msg, json_t *out)
{
	if (tl_is_request_error(rc) || c->own_create)
		return finish_tool_error(s, c, SRV_CALL_REQUEST_FAILED, msg[0] ? msg : "the request failed", out);
	ses_logf(s, out, MCP_LOG_ERROR, "%s failed: %s", tl_name(c->tool), msg[0] ? msg : "internal error");
	int r = ses_reply_error(out, c->req_id, JR_INTERNAL_ERROR, "%s failed: %s", tl_name(c->tool),
				msg[0] ? msg : "internal error");
	svc_call_end(c->sc, SRV_CALL_REQUEST_FAILED, NULL, msg);
	call_free(s, c);
	return r;
}

static int finish_done(struct mcp_session *s, struct call *c, const struct srv_result *res, json_t *out)
{
	if (!res)
		return finish_failure(s, c, -ENOMEM, "the manager ran out of memory", out);
	if (res->error)
		return finish_failure(s, c, res->error, res->err.msg, out);
	if (c->own_create)
		return finish_own(s, c, SRV_CALL_OK, res, NULL, out);
	if (c->tool == TL_DESTROY_SANDBOX)
		own_destroyed(s, json_string_value(json_object_get(svc_call_args(c->sc), "sandbox_id")));
	json_t *result = tl_result(c->tool, svc_call_args(c->sc), res);
	if (!result)
		return finish_failure(s, c, -ENOMEM, "out of memory building the result", out);
	bool failed = json_is_true(json_object_get(result, "isError"));
	int r = ses_reply(out, c->req_id, result);
	svc_call_end(c->sc, failed ? SRV_CALL_PROGRAM_FAILED : SRV_CALL_OK, res, NULL);
	call_free(s, c);
	return r;
}

/* What the runner said, on the wire: a call that waits or runs needs nothing sent now; a refused
 * one (already ended and recorded by the runner) gets its answer and goes. */
static int translate(struct mcp_session *s, struct call *c, enum svc_step step, const struct svc_refusal *ref,
		     json_t *out)
{
	switch (step) {
	case SVC_ASKING:
		c->state = CALL_APPROVAL;
		return 0;
	case SVC_RUNNING:
		c->state = CALL_RUNNING;
		return 0;
	case SVC_REFUSED:
		break;
	}
	if (ref->status == SRV_CALL_DENIED)
		ses_logf(s, out, MCP_LOG_NOTICE, "%s %s", tl_name(c->tool), ref->text);
	return ref->status == SRV_CALL_DENIED ? finish_tool_error(s, c, SRV_CALL_DENIED, ref->text, out)
					      : finish_failure(s, c, ref->error, ref->text, out);
}

/* The runner's calls that may reach the port (ask, sink) see the turn's messages through c->out. */
static int answer(struct mcp_session *s, struct call *c, enum srv_gate_outcome o, enum srv_gate_by by, const char *text,
		  json_t *out)
{
	struct svc_refusal ref;
	c->out = out;
	enum svc_step step = svc_call_answer(c->sc, o, by, text, &ref);
	c->out = NULL;
	return translate(s, c, step, &ref, out);
}

/* ---- the port: how the runner reaches this session's human and sink --------------------- */

/* The whole request, as the human will approve it: the code in full with every invisible or
 * control character spelled \\u{XXXX} (padding cannot push a tail out of view, an override cannot
 * reorder what is read), the other arguments as ASCII JSON, and the digest of exactly this
 * request. Never cut: a client that shows less shows the digest to look it up by. */
static char *approval_message(const struct call *c, const struct srv_gate_decision *d)
{
	const json_t *args = svc_call_args(c->sc);
	const char *reason = d->reason;
	char digest[APQ_DIGEST_LEN + 1];
	if (apq_digest(tl_name(c->tool), args, digest) < 0)
		return NULL;
	const json_t *code = json_object_get(args, "code");
	const char *text = json_string_value(code);
	size_t len = json_string_length(code);
	/* What the rule's pattern matched, marked in the code and listed above it (the list stands
	 * outside the code, so markers the code itself contains cannot pass for the rule's). */
	cleanup_free char *shown = code ? apq_visible_marked(text, len, d->marks, d->nmarks) : NULL;
	cleanup_free char *where = code && d->nmarks ? apq_marks_text(text, len, d->marks, d->nmarks) : NULL;
	cleanup_free char *matched = NULL;
	if ((code && d->nmarks && !where) || (where && asprintf(&matched,
								"\nThe rule's pattern matched (marked " APQ_MARK_OPEN
								" " APQ_MARK_CLOSE " in the code): %s",
								where) < 0))
		return NULL;
	json_t *rest = json_deep_copy(args);
	json_object_del(rest, "code");
	cleanup_free char *other = rest ? json_dumps(rest, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_SORT_KEYS) : NULL;
	json_decref(rest);
	if (!other || (code && !shown))
		return NULL;
	cleanup_free char *code_part = NULL;
	if (code && asprintf(&code_part, "\nCode (%zu bytes, in full; invisible characters shown as \\u{XXXX}):\n%s",
			     json_string_length(code), shown) < 0)
		return NULL;
	char *msg = NULL;
	if (asprintf(&msg, "airlock: allow %s?\n%s\nRequest digest: %s\nArguments: %s%s%s", tl_name(c->tool),
		     reason[0] ? reason : "This call needs your approval.", digest, other, matched ? matched : "",
		     code_part ? code_part : "") < 0)
		return NULL;
	return msg;
}

/* A yes/no form: a flat object with one boolean, which every form-mode client can render. */
static json_t *approval_schema(void)
{
	return json_pack("{s:s,s:{s:{s:s,s:s,s:s,s:b}},s:[s]}", "type", "object", "properties", "approve", "type",
			 "boolean", "title", "Approve", "description", "Run this call in the sandbox", "default", 0,
			 "required", "approve");
}

/* Through MCP elicitation: an elicitation/create request to the client, answered in call_answer. */
static int ask_human(struct mcp_session *s, struct call *c, const struct srv_gate_decision *d, json_t *out)
{
	cleanup_free char *msg = approval_message(c, d);
	char id[32];
	snprintf(id, sizeof(id), "airlock-approval-%llu", (unsigned long long)++s->next_request_id);
	c->elicit_id = json_string(id);
	json_t *req = msg && c->elicit_id
			      ? jr_request(c->elicit_id, "elicitation/create",
					   json_pack("{s:s,s:o}", "message", msg, "requestedSchema", approval_schema()))
			      : NULL;
	if (!req || json_array_append_new(out, req) < 0)
		return -ENOMEM;
	c->deadline = ses_now(s) + (d->timeout_ms ? d->timeout_ms : s->o.approval_timeout_ms);
	(void)ses_logf(s, out, MCP_LOG_NOTICE, "%s waits for approval", tl_name(c->tool)); /* the question is out */
	return 0;
}

/* Through the approver (the approval queue, a terminal prompt). Its answer arrives as an
 * EVQ_ANSWER event for c->id; until then c waits like an elicitation, with the same deadline. */
static int ask_approver(struct mcp_session *s, struct call *c, const struct srv_gate_decision *d, char *why, size_t cap)
{
	const struct srv_approver *a = s->o.approver;
	uint32_t timeout = d->timeout_ms ? d->timeout_ms : s->o.approval_timeout_ms;
	c->alink = evq_link_new(s->q, c->id, 0);
	if (!c->alink)
		return -ENOMEM;
	struct srv_question qn = {.tool = tl_name(c->tool),
				  .args = svc_call_args(c->sc),
				  .reason = d->reason,
				  .timeout_ms = timeout,
				  .principal = svc_call_principal(c->sc)->name,
				  .marks = d->marks,
				  .nmarks = d->nmarks};
	int r = a->ask(a->ctx, &qn, evq_link_answer, c->alink, &c->approver_id);
	if (r < 0) {
		evq_link_not_started(c->alink); /* the approver's reference: done will never come */
		snprintf(why, cap, "denied: this call needs a human's approval, and it could not be asked for");
		return -EPERM;
	}
	c->via_approver = true;
	c->deadline = ses_now(s) + timeout;
	(void)ses_logf(s, c->out, MCP_LOG_NOTICE, "%s waits for approval %llu (%s)", tl_name(c->tool),
		       (unsigned long long)c->approver_id, d->reason);
	return 0;
}

static int port_ask(void *owner, const struct srv_gate_decision *d, char *why, size_t cap)
{
	struct call *c = owner;
	struct mcp_session *s = c->s;
	bool elicit = s->client_elicits && !s->o.no_elicitation;
	if (elicit && !(s->o.approver && s->o.approver_first))
		return ask_human(s, c, d, c->out) < 0 ? -ENOMEM : 0;
	if (s->o.approver)
		return ask_approver(s, c, d, why, cap);
	snprintf(why, cap, "denied: this call needs a human's approval (%s), and nobody can be asked (%s)",
		 d->reason[0] ? d->reason : "risk rules",
		 s->client_elicits ? "the operator turned elicitation off"
				   : "this client has no elicitation capability, and no other channel is set up");
	return -EPERM;
}

static int port_sink(void *owner, struct srv_sink *out)
{
	struct call *c = owner;
	c->link = evq_link_new(c->s->q, c->id, c->progress ? c->s->o.stream_budget : 0);
	if (!c->link)
		return -ENOMEM;
	evq_link_sink(c->link, out);
	return 0;
}

static void port_unsink(void *owner)
{
	evq_link_not_started(((struct call *)owner)->link);
}

static const struct svc_port session_port = {.ask = port_ask, .sink = port_sink, .unsink = port_unsink};

int call_begin(struct mcp_session *s, struct call *c, json_t *out)
{
	struct svc_refusal ref;
	c->out = out;
	enum svc_step step = svc_call_begin(c->sc, &session_port, c, &ref);
	c->out = NULL;
	return translate(s, c, step, &ref, out);
}

/* ---- the human's answers ------------------------------------------------------------------ */

/* Tells the client we no longer wait for our elicitation (the spec's way to give up on a request). */
static int cancel_elicitation(const struct call *c, const char *reason, json_t *out)
{
	json_t *n = jr_notification("notifications/cancelled",
				    json_pack("{s:O,s:s}", "requestId", c->elicit_id, "reason", reason));
	if (!n || json_array_append_new(out, n) < 0)
		return -ENOMEM;
	return 0;
}

/* Stops waiting for the human, whichever way c asked: the client hears that our elicitation is
 * withdrawn, the approver drops its entry (its late answer, if any, finds no call). */
static int give_up_asking(struct mcp_session *s, const struct call *c, enum srv_gate_outcome why, const char *reason,
			  json_t *out)
{
	if (!c->via_approver)
		return cancel_elicitation(c, reason, out);
	s->o.approver->cancel(s->o.approver->ctx, c->approver_id, why);
	return 0;
}

/* The approver's answer. A late one (the call timed out or was cancelled meanwhile) finds no
 * call waiting and is dropped: only an approval that came in time runs anything. */
static int on_answer(struct mcp_session *s, struct call *c, const struct evq_event *e, json_t *out)
{
	if (c->state != CALL_APPROVAL || !c->via_approver)
		return 0;
	svc_call_set_approver(c->sc, e->approver[0] ? e->approver : NULL);
	switch (e->outcome) {
	case SRV_GATE_APPROVED:
		ses_logf(s, out, MCP_LOG_NOTICE, "%s approved (%s)", tl_name(c->tool), srv_gate_by_name(e->by));
		return answer(s, c, SRV_GATE_APPROVED, e->by, NULL, out);
	case SRV_GATE_DECLINED:
		return answer(s, c, SRV_GATE_DECLINED, e->by, "denied: the reviewer did not approve this call", out);
	case SRV_GATE_TIMED_OUT:
		return answer(s, c, SRV_GATE_TIMED_OUT, SRV_BY_NOBODY, "denied: no approval before the timeout", out);
	case SRV_GATE_ALLOWED:
	case SRV_GATE_DENIED:
	case SRV_GATE_UNAVAILABLE:
	case SRV_GATE_ABANDONED:
		break;
	}
	return answer(s, c, SRV_GATE_ABANDONED, SRV_BY_NOBODY,
		      "denied: the approval was withdrawn before anybody answered (the server is stopping)", out);
}

/* Only an explicit "accept" with approve: true runs the call. */
static bool approved(const struct jr_message *m)
{
	if (m->kind != JR_RESULT)
		return false;
	const char *action = json_string_value(json_object_get(m->result, "action"));
	const json_t *content = json_object_get(m->result, "content");
	return action && strcmp(action, "accept") == 0 && json_is_true(json_object_get(content, "approve"));
}

int call_answer(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	struct call *c = find_by_elicitation(s, m->id);
	if (!c)
		return ses_logf(s, NULL, MCP_LOG_DEBUG, "ignored a response to no request of ours");
	if (approved(m)) {
		ses_logf(s, out, MCP_LOG_NOTICE, "%s approved by the user", tl_name(c->tool));
		return answer(s, c, SRV_GATE_APPROVED, SRV_BY_ELICITATION, NULL, out);
	}
	if (m->kind == JR_ERROR)
		return answer(s, c, SRV_GATE_UNAVAILABLE, SRV_BY_NOBODY,
			      "denied: the client could not ask its user for approval", out);
	return answer(s, c, SRV_GATE_DECLINED, SRV_BY_ELICITATION, "denied: the user did not approve this call", out);
}

static struct call *first_expired(const struct mcp_session *s, uint64_t now)
{
	for (struct call *c = s->calls; c; c = c->next)
		if (c->state == CALL_APPROVAL && c->deadline <= now)
			return c;
	return NULL;
}

/* Silence past the deadline denies. Ending one call may end others (the session sandbox's creation
 * denied fails every call waiting for it), so the list is looked at afresh after each, never
 * through a next pointer kept across the answer; each pass ends one call (bounded). */
static int expire_approvals(struct mcp_session *s, json_t *out)
{
	uint64_t now = ses_now(s);
	int r = 0;
	struct call *c;
	for (size_t left = s->n_calls; r == 0 && left-- && (c = first_expired(s, now));) {
		r = give_up_asking(s, c, SRV_GATE_TIMED_OUT, "approval timed out", out);
		if (r == 0)
			r = answer(s, c, SRV_GATE_TIMED_OUT, SRV_BY_NOBODY, "denied: no approval before the timeout",
				   out);
	}
	return r;
}

/* ---- tools/call --------------------------------------------------------------------------- */

/* The progress token, if any: 1 found, 0 none, -1 malformed. */
static int progress_token(const json_t *params, json_t **token)
{
	const json_t *meta = json_object_get(params, "_meta");
	*token = NULL;
	if (!meta)
		return 0;
	if (!json_is_object(meta))
		return -1;
	json_t *t = json_object_get(meta, "progressToken");
	if (!t)
		return 0;
	if (!jr_valid_id(t))
		return -1;
	*token = t;
	return 1;
}

/* Schema mismatches: a JSON-RPC error under 2025-06-18, a tool error under 2025-11-25 (SEP-1303). */
static int invalid_arguments(struct mcp_session *s, const struct jr_message *m, enum tl_id tool, const char *why,
			     json_t *out)
{
	char text[SVC_TEXT_MAX + 64];
	snprintf(text, sizeof(text), "invalid arguments for %s: %s", tl_name(tool), why);
	if (strcmp(s->protocol, MCP_PROTOCOL_PREVIOUS) <= 0)
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS, "%s", text);
	return ses_reply(out, m->id, tl_error_result(text));
}

/* The call's principal: the one the transport authenticated (mcp_session_set_principal: stdio's
 * uid, an HTTP token's name or socket peer's uid), else anonymous. It owns the sandboxes its
 * calls create and never approves them. */
struct svc_principal call_principal(const struct mcp_session *s)
{
	bool token = strncmp(s->principal, "token:", 6) == 0;
	return (struct svc_principal){
		.kind = token		  ? SVC_PRINCIPAL_TOKEN
			: s->principal[0] ? SVC_PRINCIPAL_PEER
					  : SVC_PRINCIPAL_ANONYMOUS,
		.name = s->principal[0] ? s->principal : NULL,
		.uid = (uid_t)-1,
	};
}

int call_tools_call(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	const char *name = json_string_value(json_object_get(m->params, "name"));
	json_t *args = json_object_get(m->params, "arguments");
	json_t *token;
	if (!name)
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS, "tools/call: \"name\" must be a string");
	if (args && !json_is_object(args))
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS, "tools/call: \"arguments\" must be an object");
	int tool = tl_lookup(name);
	if (tool < 0)
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS, "Unknown tool: %.80s", name);
	if (progress_token(m->params, &token) < 0)
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS,
				       "tools/call: \"_meta.progressToken\" must be a string or an integer");
	if (find_by_request(s, m->id))
		return ses_reply_error(out, m->id, JR_INVALID_REQUEST, "request id already in use by a call in flight");
	cleanup_json json_t *empty = args ? NULL : json_object();
	if (!args && !(args = empty))
		return -ENOMEM;
	struct svc_principal who = call_principal(s);
	struct svc_call *sc = svc_call_new(&s->rn, (enum tl_id)tool, args, &who, s->peer[0] ? s->peer : NULL);
	if (!sc)
		return -ENOMEM;
	struct svc_refusal ref;
	int r = svc_call_validate(sc, &ref);
	if (r < 0) {
		svc_call_free(sc);
		return r == -ENOMEM ? r : invalid_arguments(s, m, (enum tl_id)tool, ref.text, out);
	}
	if (s->n_calls >= s->o.max_inflight) {
		svc_call_free(sc); /* never begun: no record */
		return ses_reply(out, m->id, tl_error_result("too many calls in flight: wait for one to finish"));
	}
	struct call *c = call_new(s, m->id, (enum tl_id)tool, sc, token);
	if (!c) {
		svc_call_free(sc);
		return -ENOMEM;
	}
	return own_wanted(c) ? own_route(s, c, out) : call_begin(s, c, out);
}

/* A call waiting for a human is over (the client cancelled it, or went away): the runner records
 * the abandon, the asking channel forgets the question. */
static int abandon(struct mcp_session *s, struct call *c, json_t *out)
{
	svc_call_abandon(c->sc);
	int r = 0;
	if (out)
		r = give_up_asking(s, c, SRV_GATE_ABANDONED, "the call was cancelled", out);
	else if (c->via_approver) /* the client is gone: nothing to tell it, but the approver's entry goes */
		s->o.approver->cancel(s->o.approver->ctx, c->approver_id, SRV_GATE_ABANDONED);
	call_free(s, c);
	return r;
}

/* Stops c, whatever it is doing: waiting for the session's sandbox, for a human, or running. */
static int cancel_call(struct mcp_session *s, struct call *c, json_t *out)
{
	if (c->state == CALL_SANDBOX) {
		call_free(s, c); /* never begun: nothing ran, nothing to record */
		return 0;
	}
	if (c->state == CALL_APPROVAL)
		return abandon(s, c, out);
	/* The manager stops the work and still reports on_done; the response is never sent. */
	c->cancelled = true;
	svc_call_cancel(c->sc);
	return 0;
}

int call_cancelled(struct mcp_session *s, const json_t *params, json_t *out)
{
	const json_t *id = json_object_get(params, "requestId");
	struct call *c = jr_valid_id(id) ? find_by_request(s, id) : NULL;
	if (!c || c->cancelled)
		return 0; /* unknown or finished: the spec says to ignore it */
	const char *reason = json_string_value(json_object_get(params, "reason"));
	ses_logf(s, NULL, MCP_LOG_INFO, "%s cancelled by the client: %.120s", tl_name(c->tool), reason ? reason : "");
	return cancel_call(s, c, out);
}

int call_client_left(struct mcp_session *s, const json_t *req_id, json_t *out)
{
	struct call *c = jr_valid_id(req_id) ? find_by_request(s, req_id) : NULL;
	if (!c || c->cancelled)
		return 0; /* answered already (or never a tools/call): nothing runs for it */
	ses_logf(s, NULL, MCP_LOG_INFO, "%s: the client went away; the call is cancelled", tl_name(c->tool));
	svc_call_client_left(c->sc);
	return cancel_call(s, c, out);
}

/* ---- manager events ----------------------------------------------------------------------- */

/* Sends buf[0..n) of one stream as progress, holding back a character the chunk cut short. */
static int send_progress(struct mcp_session *s, struct call *c, enum srv_stream stream, const char *buf, size_t n,
			 bool final, json_t *out)
{
	int k = stream == SRV_STDERR;
	cleanup_free char *joined = NULL;
	size_t send;
	if (txt_carry_take(&c->carry[k], buf, n, final, &joined, &send) < 0)
		return -ENOMEM;
	if (!send)
		return 0;
	c->streamed += send;
	json_t *params =
		json_pack("{s:O,s:I,s:o,s:{s:s}}", "progressToken", c->progress, "progress", (json_int_t)c->streamed,
			  "message", txt_json_lossy(joined, send), "_meta", "airlock/stream", k ? "stderr" : "stdout");
	json_t *n_msg = jr_notification("notifications/progress", params);
	if (!n_msg || json_array_append_new(out, n_msg) < 0)
		return -ENOMEM;
	return 0;
}

static int on_output(struct mcp_session *s, struct call *c, const struct evq_event *e, json_t *out)
{
	/* Progress must stop once the client stopped waiting (cancelled). */
	if (c->cancelled || !c->progress)
		return 0;
	return send_progress(s, c, e->stream, e->data, e->len, false, out);
}

static int on_done(struct mcp_session *s, struct call *c, const struct evq_event *e, json_t *out)
{
	/* Even cancelled (the session ends), the session's sandbox must be known to be destroyed. */
	if (c->own_create && c->cancelled)
		return finish_done(s, c, e->result, out);
	if (c->cancelled) {
		svc_call_end(c->sc, SRV_CALL_CANCELLED, e->result, NULL);
		call_free(s, c);
		return 0;
	}
	int r = 0;
	/* What the carry still holds (a stream that ended mid-character) goes out, repaired. */
	for (int k = 0; c->progress && k < 2 && r == 0; k++)
		if (c->carry[k].len)
			r = send_progress(s, c, k ? SRV_STDERR : SRV_STDOUT, "", 0, true, out);
	if (evq_link_dropped(c->link))
		ses_logf(s, out, MCP_LOG_INFO, "%s: %llu output bytes not streamed (the result has them, capped)",
			 tl_name(c->tool), (unsigned long long)evq_link_dropped(c->link));
	int d = finish_done(s, c, e->result, out);
	return r < 0 ? r : d;
}

/* The queued events: output, ends, the approver's answers. */
static int take_events(struct mcp_session *s, json_t *out, bool *answered)
{
	int r = 0;
	for (struct evq_event *e = evq_take(s->q), *next; e; e = next) {
		next = e->next;
		struct call *c = find_by_id(s, e->call_id);
		if (c && e->kind == EVQ_OUTPUT && r == 0)
			r = on_output(s, c, e, out);
		else if (c && e->kind == EVQ_DONE) {
			*answered |= c->own_create; /* the calls waiting for the session's sandbox began */
			int d = on_done(s, c, e, out);
			r = r < 0 ? r : d;
		} else if (c && e->kind == EVQ_ANSWER) {
			int d = on_answer(s, c, e, out);
			r = r < 0 ? r : d;
			*answered = true;
		}
		evq_event_free(e);
	}
	return r;
}

int call_poll(struct mcp_session *s, json_t *out)
{
	bool answered = false;
	int r = take_events(s, out, &answered);
	/* An approval started the call, or the session's sandbox the calls waiting for it: a manager
	 * that finished at once has queued their ends. (Bounded: each round needs a new start.) */
	for (int round = 0; answered && round < 4; round++) {
		answered = false;
		int d = take_events(s, out, &answered);
		r = r < 0 ? r : d;
	}
	int x = expire_approvals(s, out);
	return r < 0 ? r : x;
}

void call_cancel_all(struct mcp_session *s)
{
	/* Abandoning one call may end others (see expire_approvals): after each, look again from the
	 * head; each pass ends one call (bounded). */
	for (size_t left = s->n_calls; left--;) {
		struct call *c = s->calls;
		while (c && c->state != CALL_SANDBOX && c->state != CALL_APPROVAL)
			c = c->next;
		if (!c)
			break;
		if (c->state == CALL_SANDBOX)
			call_free(s, c);
		else
			abandon(s, c, NULL);
	}
	for (struct call *c = s->calls; c; c = c->next) {
		if (c->state != CALL_SANDBOX && c->state != CALL_APPROVAL && !c->cancelled) {
			c->cancelled = true;
			svc_call_cancel(c->sc);
		}
	}
}

void call_free_all(struct mcp_session *s)
{
	call_cancel_all(s);
	while (s->calls)
		call_free(s, s->calls); /* the runner ends each as CANCELLED */
}
