/* console.c — the approver's console: its embedded page at /console, and the approver-only routes it reads (the audit log's last records, the risk rules). */
#include "http/console.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "http/hx.h"
#include "audit/audit.h"
#include "service/approval.h"
#include "util/cleanup.h"

#define AUDIT_LIMIT_DEFAULT 100
#define AUDIT_LIMIT_MAX	    1000

/*
 * The page runs no script but its own file (no inline script or style, nothing from elsewhere),
 * talks to this server only, and may not be framed (no clickjacking of the approve button).
 * What the page shows comes from requests (the code under review is hostile by definition): it
 * is inserted as text nodes only, never as markup, so even a CSP bypass has nothing to run.
 */
static const char console_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
				  "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

static const char *type_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (dot && strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	if (dot && strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	return "text/html; charset=utf-8";
}

/* GET /console and /console/{file}: public, since the files hold no data; every request the page
 * makes carries the approver's credential itself (a header, never a cookie: no CSRF). */
void api_console(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	const char *name = caps[0] ? caps[0] : "index.html";
	for (const struct console_asset *a = console_assets; a->name; a++) {
		if (strcmp(a->name, name) != 0)
			continue;
		rs->body = malloc(a->len ? a->len : 1);
		if (!rs->body) {
			hx_error(rs, 500, "out of memory");
			return;
		}
		memcpy(rs->body, a->bytes, a->len);
		rs->len = a->len;
		rs->status = 200;
		rs->type = type_of(a->name);
		rs->csp = console_csp;
		return;
	}
	hx_error(rs, 404, "no such console file: %.100s", name);
}

/* ---- GET /v1/audit -------------------------------------------------------------------------- */

struct audit_query {
	const char *principal, *tool, *decision, *since, *until;
	json_t **ring; /* the last limit matches, oldest first once unrolled */
	size_t limit, seen;
};

static bool field_is(json_t *rec, const char *outer, const char *inner, const char *want)
{
	if (!want || !*want)
		return true;
	json_t *v = outer ? json_object_get(json_object_get(rec, outer), inner) : json_object_get(rec, inner);
	return json_is_string(v) && strcmp(json_string_value(v), want) == 0;
}

static int audit_keep(json_t *rec, const char *line, size_t len, void *data)
{
	struct audit_query *q = data;
	const char *t = json_string_value(json_object_get(rec, "time"));
	/* Times are ISO 8601 in UTC with a fixed layout: their text order is their time order. */
	if ((q->since && *q->since && (!t || strcmp(t, q->since) < 0)) ||
	    (q->until && *q->until && (!t || strcmp(t, q->until) > 0)))
		return 0;
	if (!field_is(rec, "client", "principal", q->principal) || !field_is(rec, NULL, "tool", q->tool) ||
	    !field_is(rec, "approval", "decision", q->decision))
		return 0;
	size_t slot = q->seen++ % q->limit;
	json_decref(q->ring[slot]);
	q->ring[slot] = json_incref(rec);
	return 0;
}

static const char *query(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, name) : NULL;
}

static json_t *unroll(struct audit_query *q)
{
	json_t *list = json_array();
	size_t n = q->seen < q->limit ? q->seen : q->limit;
	for (size_t i = 0; i < n; i++) {
		size_t slot = (q->seen - n + i) % q->limit;
		if (list && json_array_append(list, q->ring[slot]) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	for (size_t i = 0; i < q->limit; i++)
		json_decref(q->ring[i]);
	return list;
}

/* The last records of the current audit file that match every filter given, oldest first.
 * Approvers only (the route's role): the log names every principal's calls. */
void api_audit(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	if (!s->o.audit_path) {
		hx_error(rs, 404, "this server keeps no audit log it can read back");
		return;
	}
	const char *lim = query(rq, "limit");
	char *end = NULL;
	unsigned long limit = lim ? strtoul(lim, &end, 10) : AUDIT_LIMIT_DEFAULT;
	if ((lim && (*end || !*lim)) || limit == 0 || limit > AUDIT_LIMIT_MAX) {
		hx_error(rs, 400, "limit must be a number from 1 to %d", AUDIT_LIMIT_MAX);
		return;
	}
	struct audit_query q = {.principal = query(rq, "principal"),
				.tool = query(rq, "tool"),
				.decision = query(rq, "decision"),
				.since = query(rq, "since"),
				.until = query(rq, "until"),
				.limit = limit};
	q.ring = calloc(limit, sizeof(json_t *));
	cleanup_close int fd = open(s->o.audit_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (!q.ring || fd < 0) {
		free(q.ring);
		hx_error(rs, 500, "cannot read the audit log");
		return;
	}
	struct audit_read_stats st;
	struct al_error err = {0};
	int r = audit_read(fd, audit_keep, &q, &st, &err);
	json_t *list = unroll(&q);
	free(q.ring);
	if (r < 0 || !list) {
		json_decref(list);
		hx_error(rs, 500, "cannot read the audit log");
		return;
	}
	hx_json(rs, 200, json_pack("{s:o,s:I}", "records", list, "skipped", (json_int_t)st.skipped));
}

/* ---- GET /v1/console/rules -------------------------------------------------------------------- */

static json_t *rule_json(const struct cfg_rule *r)
{
	json_t *tools = json_array(), *when = json_array();
	for (size_t i = 0; tools && i < r->tools.n; i++)
		json_array_append_new(tools, json_string(r->tools.v[i]));
	for (size_t i = 0; when && i < r->nwhen; i++) {
		const struct cfg_cond *c = &r->when[i];
		json_array_append_new(when, c->op == CFG_COND_MATCHES
						    ? json_pack("{s:s,s:s}", "param", c->param, "matches", c->pattern)
						    : json_pack("{s:s,s:O}", "param", c->param, "equals", c->equals));
	}
	return json_pack("{s:s,s:s,s:o*,s:o*,s:I}", "name", r->name, "risk", cfg_risk_name(r->risk), "tools", tools,
			 "when", when, "timeout_ms", (json_int_t)r->timeout_ms);
}

/* The risk rules as configured, so the console can mark what a rule's pattern matched in the code
 * under review. Approvers only: the patterns are what a client would study to slip past them. */
void api_rules(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *list = json_array();
	for (size_t i = 0; list && s->o.cfg && i < s->o.cfg->nrules; i++)
		if (json_array_append_new(list, rule_json(&s->o.cfg->rules[i])) < 0) {
			json_decref(list);
			list = NULL;
		}
	if (!list)
		hx_error(rs, 500, "out of memory");
	else
		hx_json(rs, 200, json_pack("{s:o}", "rules", list));
}

/* ---- GET /v1/admin/sandboxes ------------------------------------------------------------------ */

/* Every principal's live sandboxes with their usage. Approvers only (the route's role): a client
 * sees its own and nobody else's, not even their ids. */
void api_admin_sandboxes(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *list = s->o.sandboxes ? s->o.sandboxes(s->o.sandboxes_ctx) : json_array();
	if (!list)
		hx_error(rs, 500, "out of memory");
	else
		hx_json(rs, 200, json_pack("{s:o}", "sandboxes", list));
}

/* ---- DELETE /v1/admin/sandboxes/{id} ---------------------------------------------------------- */

/* The owner of live sandbox id, from the same listing the console shows; NULL when there is none
 * (destroyed, expired, a spare, never made). */
char *hx_sandbox_owner(struct hx_server *s, const char *id)
{
	if (s->o.sandbox_owner)
		return s->o.sandbox_owner(s->o.sandboxes_ctx, id);
	json_t *list = s->o.sandboxes ? s->o.sandboxes(s->o.sandboxes_ctx) : NULL;
	char *owner = NULL;
	size_t i;
	json_t *sb;
	json_array_foreach(list, i, sb) {
		const char *sid = json_string_value(json_object_get(sb, "id"));
		const char *who = json_string_value(json_object_get(sb, "owner"));
		if (sid && who && strcmp(sid, id) == 0) {
			owner = strdup(who);
			break;
		}
	}
	json_decref(list);
	return owner;
}

static void admin_destroyed(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	const char *id = json_string_value(json_object_get(hx_call_args(c), "sandbox_id"));
	hx_json(rs, 200, json_pack("{s:s,s:b}", "sandbox_id", id ? id : "", "destroyed", 1));
}

/* An approver ends another principal's sandbox (what it runs is killed with it). Approvers only
 * (the route's role). It is a code_destroy_sandbox call on the one runner like any other — risk
 * rules, a durable start record, an end record — made by the approver on behalf of the owner:
 * the manager sees the owner (its ownership check stays the only one), the audit log names both. */
void api_admin_destroy(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	cleanup_free char *owner = hx_sandbox_owner(s, caps[0]);
	if (!owner) {
		hx_error(rs, 404, "no sandbox \"%.100s\" (never created, destroyed, or expired)", caps[0]);
		return;
	}
	json_t *args = json_pack("{s:s}", "sandbox_id", caps[0]);
	struct hx_call *c = args ? hx_call_new(s, TL_DESTROY_SANDBOX, args, rq) : NULL;
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	if (hx_call_act_for(c, owner) < 0) {
		hx_error(rs, 500, "cannot act for %.100s", owner);
		hx_call_drop(c);
		return;
	}
	hx_log(s, MCP_LOG_NOTICE, "%s destroys %s, a sandbox of %s", rq->who->name, caps[0], owner);
	hx_call_run(c, NULL, 0, admin_destroyed, rs);
}

/* ---- GET /v1/approvals/events ---------------------------------------------------------------- */

/* The pending approvals as a server-sent event stream: the list (as GET /v1/approvals answers it)
 * at once and again whenever the queue changes, so a console shows a new call without polling.
 * What each principal sees is what GET /v1/approvals shows it: an approver every call, anybody
 * else only its own. */
struct approvals_stream {
	struct hx_server *s;
	char only[HX_PRINCIPAL_MAX]; /* "" for an approver: every call */
	bool approver, sent;
	uint64_t seen;	  /* the queue's generation of the last list sent */
	uint64_t last_ms; /* when anything was last sent (a keepalive follows a quiet stretch) */
	char *pending;
	size_t len, off;
};

/* "event: approvals" with the list, or NULL on ENOMEM. */
static char *approvals_event(struct approvals_stream *st)
{
	json_t *list = apq_list(st->s->o.approvals, st->approver ? NULL : st->only);
	json_t *body =
		list ? json_pack("{s:o,s:b,s:I}", "approvals", list, "enabled", 1, "generation", (json_int_t)st->seen)
		     : NULL;
	cleanup_free char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	char *ev = NULL;
	return text && asprintf(&ev, "event: approvals\ndata: %s\n\n", text) >= 0 ? ev : NULL;
}

static ssize_t approvals_read(void *ctx, char *buf, size_t max, bool block)
{
	struct approvals_stream *st = ctx;
	struct apq *q = st->s->o.approvals;
	bool waited = false; /* one wait at most: the server then looks whether the reviewer is there */
	while (st->off == st->len) {
		free(st->pending);
		st->pending = NULL;
		st->len = st->off = 0;
		if (hx_stopping(st->s))
			return HX_STREAM_END;
		uint64_t gen = apq_generation(q), now = hx_now_ms();
		if (!st->sent || gen != st->seen) {
			st->seen = gen; /* read before the list: a change while it is made is sent again */
			st->sent = true;
			st->pending = approvals_event(st);
		} else if (now - st->last_ms >= HX_KEEPALIVE_MS) {
			st->pending = strdup(": keepalive\n\n"); /* a proxy must not close a quiet stream */
		} else if (!block || waited) {
			return 0;
		} else {
			apq_wait(q, st->seen, HX_WAIT_SLICE_MS);
			waited = true;
			continue;
		}
		if (!st->pending)
			return HX_STREAM_ERROR;
		st->len = strlen(st->pending);
		st->last_ms = now;
	}
	size_t n = st->len - st->off < max ? st->len - st->off : max;
	memcpy(buf, st->pending + st->off, n);
	st->off += n;
	return (ssize_t)n;
}

static void approvals_free(void *ctx)
{
	struct approvals_stream *st = ctx;
	free(st->pending);
	free(st);
}

static const struct hx_stream_ops approvals_ops = {.read = approvals_read, .free = approvals_free};

void api_approval_events(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	if (!s->o.approvals) {
		hx_error(rs, 404, "this server has no approvals queue (approval.channels lacks http)");
		return;
	}
	struct approvals_stream *st = calloc(1, sizeof(*st));
	if (!st) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	*st = (struct approvals_stream){.s = s, .approver = rq->who->approver, .last_ms = hx_now_ms()};
	snprintf(st->only, sizeof(st->only), "%s", rq->who->name);
	rs->status = 200;
	rs->type = "text/event-stream";
	rs->ops = &approvals_ops;
	rs->stream = st;
}
