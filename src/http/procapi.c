/* procapi.c — the JSON API's routes for background processes and terminal sessions (and the approver's read-only view of them): each one a code_process call, as the MCP tool would get it. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "http/hx.h"
#include "util/cleanup.h"
#include "util/text.h"

static const char *query(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, name) : NULL;
}

/* caps[1] as a pid: > 0, or 0 when it is not a number (the call then answers 400). */
static json_int_t pid_of(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	return *end || v <= 0 || v > 4194304 || s[0] < '0' || s[0] > '9' ? 0 : (json_int_t)v;
}

/* The args of code_process action on sandbox caps[0] (process caps[1] when with_pid); NULL with rs
 * filled when the pid is not one. */
static json_t *process_args(const char *action, char *const caps[2], bool with_pid, struct hx_response *rs)
{
	json_int_t pid = with_pid ? pid_of(caps[1]) : 0;
	if (with_pid && !pid) {
		hx_error(rs, 400, "\"%.32s\" is not a process id (a positive number)", caps[1]);
		return NULL;
	}
	json_t *args = json_pack("{s:s,s:s}", "sandbox_id", caps[0], "action", action);
	if (args && with_pid)
		json_object_set_new(args, "pid", json_integer(pid));
	if (!args)
		hx_error(rs, 500, "out of memory");
	return args;
}

static void call(struct hx_server *s, const struct hx_request *rq, json_t *args, struct hx_response *rs)
{
	struct hx_call *c = args ? hx_call_new(s, TL_PROCESS, args, rq) : NULL;
	if (!c)
		hx_error(rs, 500, "out of memory");
	else
		hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}

void api_proc_list(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = process_args("list", caps, false, rs);
	if (args)
		call(s, rq, args, rs);
}

void api_proc_get(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = process_args("get", caps, true, rs);
	if (args)
		call(s, rq, args, rs);
}

void api_proc_kill(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = process_args("kill", caps, true, rs);
	if (args)
		call(s, rq, args, rs);
}

void api_proc_close_stdin(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *args = process_args("close_stdin", caps, true, rs);
	if (args)
		call(s, rq, args, rs);
}

/* The body, as it is, is what the process reads: text (UTF-8), as the MCP tool's data. */
void api_proc_stdin(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	const char *body = rq->body ? rq->body : "";
	size_t len = rq->body ? rq->len : 0;
	if (!txt_utf8_valid(body, len) || memchr(body, 0, len)) {
		hx_error(rs, 400, "stdin must be UTF-8 text without NUL bytes");
		return;
	}
	json_t *args = process_args("stdin", caps, true, rs);
	if (args && json_object_set_new(args, "data", json_stringn(body, len)) < 0) {
		json_decref(args);
		args = NULL;
		hx_error(rs, 500, "out of memory");
	}
	if (args)
		call(s, rq, args, rs);
}

/* {"signal": 15} or {"signal": "TERM"}. */
void api_proc_signal(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *body = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *sig = json_object_get(body, "signal");
	if (!sig || json_object_size(body) != 1) {
		json_decref(body);
		hx_error(rs, 400, "the body must be {\"signal\": \"TERM\"} (a name or a number)");
		return;
	}
	json_t *args = process_args("signal", caps, true, rs);
	if (args)
		json_object_set(args, "signal", sig);
	json_decref(body);
	if (args)
		call(s, rq, args, rs);
}

/* {"cols": 100, "rows": 30}: a terminal session's new size (the schema bounds both). */
void api_proc_resize(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *body = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *cols = json_object_get(body, "cols"), *rows = json_object_get(body, "rows");
	if (!cols || !rows || json_object_size(body) != 2) {
		json_decref(body);
		hx_error(rs, 400, "the body must be {\"cols\": 100, \"rows\": 30} (1 to %d each)", SRV_PTY_MAX);
		return;
	}
	json_t *args = process_args("resize", caps, true, rs);
	if (args) {
		json_object_set(args, "cols", cols);
		json_object_set(args, "rows", rows);
	}
	json_decref(body);
	if (args)
		call(s, rq, args, rs);
}

/* code_process "output" of process caps[1] from the query (?offset=N, ?follow=, ?encoding=), *base64
 * set; NULL with rs filled (400) when one is not what it must be. */
static json_t *output_args(const struct hx_request *rq, char *const caps[2], bool *base64, struct hx_response *rs)
{
	const char *off = query(rq, "offset"), *follow = query(rq, "follow"), *enc = query(rq, "encoding");
	char *end = NULL;
	long long offset = off ? strtoll(off, &end, 10) : 0;
	if (off && (*end || offset < 0 || off[0] < '0' || off[0] > '9')) {
		hx_error(rs, 400, "offset must be a byte count (0 or more)");
		return NULL;
	}
	if (follow && strcmp(follow, "true") != 0 && strcmp(follow, "false") != 0) {
		hx_error(rs, 400, "follow must be true or false");
		return NULL;
	}
	if (enc && strcmp(enc, "base64") != 0 && strcmp(enc, "utf-8") != 0) {
		hx_error(rs, 400, "encoding must be utf-8 or base64");
		return NULL;
	}
	*base64 = enc && strcmp(enc, "base64") == 0;
	json_t *args = process_args("output", caps, true, rs);
	if (!args)
		return NULL;
	json_object_set_new(args, "offset", json_integer((json_int_t)offset));
	json_object_set_new(args, "follow", json_boolean(!follow || strcmp(follow, "true") == 0));
	return args;
}

/* Streams args' output call, made for owner (an approver's view) when owner is not NULL. */
static void output_stream(struct hx_server *s, const struct hx_request *rq, json_t *args, bool base64,
			  const char *owner, struct hx_response *rs)
{
	struct hx_call *c = hx_call_new(s, TL_PROCESS, args, rq);
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	if (owner && hx_call_act_for(c, owner) < 0) {
		hx_error(rs, 500, "cannot act for %.100s", owner);
		hx_call_drop(c);
		return;
	}
	if (base64)
		hx_call_output_base64(c);
	hx_call_stream(c, hx_wants_sse(rq), rs);
}

/* Its output kept so far (from ?offset=N), then live until it ends (?follow=false: only what it
 * printed so far), as NDJSON lines or SSE events like an exec's; the last one is the process with
 * its exit and verdict. ?encoding=base64: each output event's data is the bytes in base64 (a
 * terminal's output is not always UTF-8; utf-8, the default, replaces what is not). */
void api_proc_output(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	bool base64 = false;
	json_t *args = output_args(rq, caps, &base64, rs);
	if (args)
		output_stream(s, rq, args, base64, NULL, rs);
}

/* ---- the approver's view: read-only ---------------------------------------------------------- */

/*
 * An approver watches what runs in another principal's sandbox (a terminal an agent drives): the
 * list of its processes and their output, nothing else — no stdin, resize, signal or kill route
 * exists here, so the view cannot change what it watches. Each is a code_process call on the one
 * runner like any other (risk rules, audit records naming the approver and the owner), made on
 * behalf of the owner: the manager's ownership check stays the only one. Approvers only (the
 * routes' role); a sandbox nobody owns now is 404.
 */
static char *admin_owner(struct hx_server *s, const char *id, struct hx_response *rs)
{
	char *owner = hx_sandbox_owner(s, id);
	if (!owner)
		hx_error(rs, 404, "no sandbox \"%.100s\" (never created, destroyed, or expired)", id);
	return owner;
}

void api_admin_procs(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	cleanup_free char *owner = admin_owner(s, caps[0], rs);
	json_t *args = owner ? process_args("list", caps, false, rs) : NULL;
	struct hx_call *c = args ? hx_call_new(s, TL_PROCESS, args, rq) : NULL;
	if (args && !c)
		hx_error(rs, 500, "out of memory");
	if (!c)
		return;
	if (hx_call_act_for(c, owner) < 0) {
		hx_error(rs, 500, "cannot act for %.100s", owner);
		hx_call_drop(c);
		return;
	}
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}

void api_admin_proc_output(struct hx_server *s, const struct hx_request *rq, char *const caps[2],
			   struct hx_response *rs)
{
	cleanup_free char *owner = admin_owner(s, caps[0], rs);
	bool base64 = false;
	json_t *args = owner ? output_args(rq, caps, &base64, rs) : NULL;
	if (args)
		output_stream(s, rq, args, base64, owner, rs);
}
