/* api.c — the JSON API's routes: each one a tool call with the arguments the MCP tool would get. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/hx.h"
#include "service/approval.h"
#include "util/text.h"
#include "util/cleanup.h"

static const char *header(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, name) : NULL;
}

/* The body as a JSON object (an empty body is {}). NULL when rs got the 400 (or 500). */
static json_t *body_object(const struct hx_request *rq, struct hx_response *rs)
{
	if (rq->len == 0)
		return json_object();
	json_error_t jerr;
	json_t *j = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		hx_error(rs, 400, "bad JSON at line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		hx_error(rs, 400, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

static bool wants_sse(const struct hx_request *rq)
{
	const char *accept = header(rq, "Accept");
	return accept && strcasestr(accept, "text/event-stream") && !strcasestr(accept, "application/x-ndjson");
}

/* Sets key to a copy of the string value; false on ENOMEM. */
static bool set_str(json_t *o, const char *key, const char *value)
{
	json_t *v = json_string(value);
	return v && json_object_set_new(o, key, v) == 0;
}

static void run(struct hx_server *s, const struct hx_request *rq, enum tl_id tool, json_t *args, hx_ok_fn ok,
		struct hx_response *rs)
{
	struct hx_call *c = hx_call_new(s, tool, args, rq);
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, ok, rs);
}

/* ---- service routes ------------------------------------------------------------------------- */

/* A server whose audit log fails refuses every call that would run: 503 "degraded", so a balancer
 * sends work elsewhere, with the reason for the operator. */
void api_health(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	struct srv_gate_health h = {0};
	if (s->o.gate && s->o.gate->health)
		s->o.gate->health(s->o.gate->ctx, &h);
	h.reason[sizeof(h.reason) - 1] = 0;
	json_t *o = json_pack("{s:s,s:s,s:I}", "status",
			      hx_stopping(s) ? "stopping"
			      : h.degraded   ? "degraded"
					     : "ok",
			      "version", s->o.server_version, "mcp_sessions", (json_int_t)hx_sessions_count(s));
	if (o && h.degraded)
		json_object_set_new(o, "reason", json_string(h.reason));
	hx_json(rs, h.degraded ? 503 : 200, o);
}

void api_metrics(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	size_t len = 0;
	char *text = hx_metrics_render(s, &len);
	if (!text) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	rs->status = 200;
	rs->type = "text/plain; version=0.0.4; charset=utf-8";
	rs->body = text;
	rs->len = len;
}

/* ---- sandboxes ------------------------------------------------------------------------------ */

static void created(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	const char *id = r->sandbox_id ? r->sandbox_id : "";
	hx_json(rs, 201,
		json_pack("{s:s,s:s,s:o}", "id", id, "sandbox_id", id, "ends_at",
			  r->ends_unix_ms ? txt_json_time(r->ends_unix_ms) : json_null()));
}

void api_create(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = body_object(rq, rs);
	if (args)
		run(s, rq, TL_CREATE_SANDBOX, args, created, rs);
}

static void destroyed(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	const char *id = json_string_value(json_object_get(hx_call_args(c), "sandbox_id"));
	hx_json(rs, 200, json_pack("{s:s,s:b}", "sandbox_id", id ? id : "", "destroyed", 1));
}

void api_destroy(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = json_pack("{s:s}", "sandbox_id", caps[0]);
	if (!args)
		hx_error(rs, 500, "out of memory");
	else
		run(s, rq, TL_DESTROY_SANDBOX, args, destroyed, rs);
}

/* {language, code | command, timeout, network_enabled, allowed_domains}: "command" is shell code. */
static json_t *exec_args(const struct hx_request *rq, const char *sandbox, struct hx_response *rs)
{
	json_t *args = body_object(rq, rs);
	if (!args)
		return NULL;
	json_t *cmd = json_object_get(args, "command");
	if (cmd) {
		if (json_object_get(args, "code") || !json_is_string(cmd)) {
			json_decref(args);
			hx_error(rs, 400, "invalid request: give either \"code\" or \"command\" (a string), not both");
			return NULL;
		}
		json_object_set(args, "code", cmd);
		json_object_del(args, "command");
		if (!json_object_get(args, "language") && !set_str(args, "language", "shell"))
			goto oom;
	}
	/* A terminal session without a command is the sandbox's interactive shell, with job control. */
	if (json_object_get(args, "pty") && !json_object_get(args, "code") &&
	    ((!json_object_get(args, "language") && !set_str(args, "language", "shell")) ||
	     !set_str(args, "code", "exec bash -i")))
		goto oom;
	if (!set_str(args, "sandbox_id", sandbox))
		goto oom;
	return args;
oom:
	json_decref(args);
	hx_error(rs, 500, "out of memory");
	return NULL;
}

bool hx_wants_sse(const struct hx_request *rq)
{
	return wants_sse(rq);
}

void hx_stream_tool(struct hx_server *s, const struct hx_request *rq, enum tl_id tool, json_t *args,
		    struct hx_response *rs)
{
	struct hx_call *c = hx_call_new(s, tool, args, rq);
	if (!c)
		hx_error(rs, 500, "out of memory");
	else
		hx_call_stream(c, wants_sse(rq), rs);
}

void api_exec(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = exec_args(rq, caps[0], rs);
	if (args)
		hx_stream_tool(s, rq, TL_EXECUTE, args, rs);
}

void api_install(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = body_object(rq, rs);
	if (!args)
		return;
	if (!set_str(args, "sandbox_id", caps[0])) {
		json_decref(args);
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_stream_tool(s, rq, TL_INSTALL_PACKAGE, args, rs);
}

/* ---- files ---------------------------------------------------------------------------------- */

static void written(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	const char *path = json_string_value(json_object_get(hx_call_args(c), "path"));
	hx_json(rs, 200,
		hx_resumed(json_pack("{s:s,s:I}", "path", path ? path : "", "bytes", (json_int_t)r->bytes), r));
}

/* The arguments the gate sees are code_write_file's: the content as text when it is UTF-8, else
 * base64, so the risk rules (and the audit digest) see the same thing over both transports. */
void api_write(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	if (rq->spooled) {
		api_write_spooled(s, rq, caps, rs);
		return;
	}
	const char *data = rq->body ? rq->body : "";
	bool text = txt_utf8_valid(data, rq->len) && !memchr(data, 0, rq->len);
	cleanup_free char *b64 = text ? NULL : txt_base64_encode(data, rq->len);
	json_t *content = text ? json_stringn(data, rq->len) : (b64 ? json_string(b64) : NULL);
	json_t *args = content ? json_pack("{s:s,s:s,s:o,s:s}", "sandbox_id", caps[0], "path", caps[1], "content",
					   content, "encoding", text ? "utf-8" : "base64")
			       : NULL;
	struct hx_call *c = args ? hx_call_new(s, TL_WRITE_FILE, args, rq) : NULL;
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, data, rq->len, written, rs);
}

static void read_ok(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	rs->resumed = r->resumed; /* the body is the file's bytes: said in a header */
	if (r->fd >= 0) {	  /* streamed from the file: the result keeps (and closes) its own descriptor */
		rs->fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
		if (rs->fd < 0) {
			hx_error(rs, 503, "out of file descriptors");
			return;
		}
		rs->has_fd = true;
		rs->len = r->len;
		rs->status = 200;
		rs->type = "application/octet-stream";
		return;
	}
	rs->body = malloc(r->len ? r->len : 1);
	if (!rs->body) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	if (r->len)
		memcpy(rs->body, r->data, r->len);
	rs->len = r->len;
	rs->status = 200;
	rs->type = "application/octet-stream";
}

void api_read(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = json_pack("{s:s,s:s}", "sandbox_id", caps[0], "path", caps[1]);
	if (!args)
		hx_error(rs, 500, "out of memory");
	else
		run(s, rq, TL_READ_FILE, args, read_ok, rs);
}

json_t *hx_resumed(json_t *o, const struct srv_result *r)
{
	if (o && r->resumed && json_object_set_new(o, "resumed", json_true()) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void hx_ok_structured(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	json_t *full = tl_result(hx_call_tool(c), hx_call_args(c), r);
	json_t *sc = json_object_get(full, "structuredContent");
	if (sc)
		hx_json(rs, 200, json_incref(sc));
	else
		hx_error(rs, 500, "out of memory");
	json_decref(full);
}

void api_list(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	const char *path = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, "path") : NULL;
	if (path && (!txt_utf8_valid(path, strlen(path)) || strstr(path, "\xc0\x80"))) {
		hx_error(rs, 400, "the path argument is not valid UTF-8 (or holds %%00)");
		return;
	}
	json_t *args = json_pack("{s:s}", "sandbox_id", caps[0]);
	if (args && path && *path && !set_str(args, "path", path)) {
		json_decref(args);
		args = NULL;
	}
	if (!args)
		hx_error(rs, 500, "out of memory");
	else
		run(s, rq, TL_LIST_FILES, args, hx_ok_structured, rs);
}

/* ---- approvals ------------------------------------------------------------------------------ */

void api_approvals(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	/* An approver sees every pending call; anybody else only their own (what they wait for). */
	const char *only = rq->who->approver ? NULL : rq->who->name;
	/* The generation before the list: a page that also reads the live stream keeps the newer of
	 * two lists, whichever arrives last (this list is at least as new as its number). */
	uint64_t gen = s->o.approvals ? apq_generation(s->o.approvals) : 0;
	json_t *list = s->o.approvals ? apq_list(s->o.approvals, only) : json_array();
	if (!list)
		hx_error(rs, 500, "out of memory");
	else
		hx_json(rs, 200,
			json_pack("{s:o,s:b,s:I}", "approvals", list, "enabled", s->o.approvals != NULL, "generation",
				  (json_int_t)gen));
}

void api_decide(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	char *end;
	errno = 0;
	unsigned long long id = strtoull(caps[0], &end, 10);
	if (*end || errno || caps[0][0] < '0' || caps[0][0] > '9') {
		hx_error(rs, 400, "approval id must be a number");
		return;
	}
	json_t *body = body_object(rq, rs);
	if (!body)
		return;
	json_t *approve = json_object_get(body, "approve");
	const json_t *digest = json_object_get(body, "digest");
	bool yes = json_is_true(approve);
	bool valid = json_is_boolean(approve) && (!digest || json_is_string(digest));
	cleanup_free char *dg = digest ? strdup(json_string_value(digest)) : NULL;
	json_decref(body);
	if (!valid) {
		hx_error(rs, 400,
			 "the body must be {\"approve\": true, \"digest\": \"sha256:...\"} or {\"approve\": false}");
		return;
	}
	struct apq_decision d = {.id = id, .approve = yes, .by = SRV_BY_HTTP, .decider = rq->who->name, .digest = dg};
	int r = s->o.approvals ? apq_resolve(s->o.approvals, &d) : -ENOENT;
	if (r == -EPERM) {
		hx_error(rs, 403, "%s made call %llu: nobody approves their own call", rq->who->name, id);
		return;
	}
	if (r == -ESTALE) {
		hx_error(rs, 409,
			 "approval %llu: an approval must name the digest of the request it approves (GET "
			 "/v1/approvals shows it); %s",
			 id, dg ? "this one names another request" : "none was given");
		return;
	}
	if (r < 0) {
		hx_error(rs, 404, "no pending approval %llu", id);
		return;
	}
	hx_log(s, MCP_LOG_NOTICE, "approval %llu %s over HTTP by %s", id, yes ? "granted" : "declined", rq->who->name);
	hx_json(rs, 200, json_pack("{s:I,s:b}", "id", (json_int_t)id, "approved", yes));
}
