/* jsonrpc.c — strict JSON-RPC 2.0 parsing and building for the MCP server; bounded, never trusts its input. */
#include "mcp/jsonrpc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Members JSON-RPC 2.0 defines; anything else is refused, as the reference SDKs' strict
 * schemas do, so a typo ("param") is an error instead of a silently ignored field. */
static const char *const known_members[] = {"jsonrpc", "id", "method", "params", "result", "error"};

__attribute__((format(printf, 4, 5))) static int fail_with(struct jr_failure *f, int rc, int code, const char *fmt, ...)
{
	f->code = code;
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return rc;
}

int jr_valid_id(const json_t *id)
{
	return id && (json_is_string(id) || json_is_integer(id));
}

static int is_known_member(const char *key)
{
	for (size_t i = 0; i < sizeof(known_members) / sizeof(known_members[0]); i++)
		if (strcmp(key, known_members[i]) == 0)
			return 1;
	return 0;
}

/* The envelope every message shares: an object, "jsonrpc": "2.0", only known members. */
static int check_envelope(json_t *root, struct jr_failure *f)
{
	if (json_is_array(root))
		return fail_with(
			f, -EBADMSG, JR_INVALID_REQUEST,
			"batches are not supported: send one message per line (MCP removed JSON-RPC batching)");
	if (!json_is_object(root))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "a JSON-RPC message must be a JSON object");
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v) {
		if (!is_known_member(key))
			return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "unknown member \"%.40s\"", key);
	}
	json_t *ver = json_object_get(root, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "\"jsonrpc\" must be the string \"2.0\"");
	return 0;
}

static int parse_call(json_t *root, struct jr_message *m, struct jr_failure *f)
{
	json_t *method = json_object_get(root, "method");
	json_t *id = json_object_get(root, "id");
	if (id && !jr_valid_id(id))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "\"id\" must be a string or an integer");
	if (id)
		f->id = json_incref(id);
	if (json_object_get(root, "result") || json_object_get(root, "error"))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "a request cannot carry \"result\" or \"error\"");
	if (!json_is_string(method))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "\"method\" must be a string");
	json_t *params = json_object_get(root, "params");
	if (params && !json_is_object(params) && !json_is_array(params))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "\"params\" must be an object or an array");
	m->kind = id ? JR_REQUEST : JR_NOTIFICATION;
	m->id = id;
	m->method = json_string_value(method);
	m->params = params;
	return 0;
}

static int check_error_object(json_t *e, struct jr_failure *f)
{
	if (!json_is_object(e))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "\"error\" must be an object");
	const char *key;
	json_t *v;
	json_object_foreach(e, key, v) {
		if (strcmp(key, "code") != 0 && strcmp(key, "message") != 0 && strcmp(key, "data") != 0)
			return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "unknown member \"%.40s\" in \"error\"", key);
	}
	if (!json_is_integer(json_object_get(e, "code")) || !json_is_string(json_object_get(e, "message")))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST,
				 "\"error\" needs an integer code and a string message");
	return 0;
}

static int parse_response(json_t *root, struct jr_message *m, struct jr_failure *f)
{
	json_t *id = json_object_get(root, "id");
	json_t *result = json_object_get(root, "result");
	json_t *error = json_object_get(root, "error");
	if (json_object_get(root, "params"))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "\"params\" without \"method\"");
	if (!id)
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "a message needs \"method\" or \"id\"");
	/* null is only legal in an error answering a message whose id could not be read. */
	if (!jr_valid_id(id) && !(json_is_null(id) && error))
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST, "\"id\" must be a string or an integer");
	if (jr_valid_id(id))
		f->id = json_incref(id);
	if (!result == !error)
		return fail_with(f, -EBADMSG, JR_INVALID_REQUEST,
				 "a response needs exactly one of \"result\" and \"error\"");
	if (error) {
		int r = check_error_object(error, f);
		if (r < 0)
			return r;
	}
	m->kind = result ? JR_RESULT : JR_ERROR;
	m->id = id;
	m->result = result;
	m->error = error;
	return 0;
}

int jr_parse(const char *buf, size_t len, size_t max, struct jr_message *out, struct jr_failure *fail)
{
	memset(out, 0, sizeof(*out));
	memset(fail, 0, sizeof(*fail));
	if (!max)
		max = JR_DEFAULT_MAX_MESSAGE;
	if (len > max)
		return fail_with(fail, -EMSGSIZE, JR_INVALID_REQUEST, "message too large (%zu bytes; the limit is %zu)",
				 len, max);
	json_error_t jerr;
	/* JSON_DECODE_ANY so that a bare scalar is an invalid request, not a parse error; duplicate
	 * keys are refused because two readers could otherwise disagree on which one counts.
	 * jansson bounds nesting itself (JSON_PARSER_MAX_DEPTH), so deep input cannot exhaust the stack. */
	json_t *root = json_loadb(buf ? buf : "", len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			return -ENOMEM;
		return fail_with(fail, -EBADMSG, JR_PARSE_ERROR, "parse error: %.120s (at byte %d)", jerr.text,
				 jerr.position);
	}
	int r = check_envelope(root, fail);
	if (r == 0)
		r = json_object_get(root, "method") ? parse_call(root, out, fail) : parse_response(root, out, fail);
	if (r < 0) {
		json_decref(root);
		memset(out, 0, sizeof(*out));
		return r;
	}
	/* The id taken for a possible error answer is not needed after all. */
	jr_failure_clear(fail);
	out->root = root;
	return 0;
}

void jr_message_clear(struct jr_message *m)
{
	json_decref(m->root);
	memset(m, 0, sizeof(*m));
}

void jr_failure_clear(struct jr_failure *f)
{
	json_decref(f->id);
	f->id = NULL;
}

/* JSON-RPC 2.0 (section 5): an error whose request id could not be read carries id null. */
static json_t *id_or_null(json_t *id)
{
	return id ? json_incref(id) : json_null();
}

json_t *jr_result(json_t *id, json_t *steal_result)
{
	if (!steal_result)
		return NULL;
	return json_pack("{s:s,s:o,s:o}", "jsonrpc", "2.0", "id", id_or_null(id), "result", steal_result);
}

json_t *jr_error(json_t *id, int code, const char *message, json_t *steal_data)
{
	json_t *e = json_pack("{s:i,s:s}", "code", code, "message", message ? message : "error");
	if (!e) {
		json_decref(steal_data);
		return NULL;
	}
	if (steal_data && json_object_set_new(e, "data", steal_data) < 0) {
		json_decref(e);
		return NULL;
	}
	return json_pack("{s:s,s:o,s:o}", "jsonrpc", "2.0", "id", id_or_null(id), "error", e);
}

json_t *jr_request(json_t *id, const char *method, json_t *steal_params)
{
	if (!steal_params)
		return json_pack("{s:s,s:O,s:s}", "jsonrpc", "2.0", "id", id, "method", method);
	return json_pack("{s:s,s:O,s:s,s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params", steal_params);
}

json_t *jr_notification(const char *method, json_t *steal_params)
{
	if (!steal_params)
		return json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
	return json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params", steal_params);
}

json_t *jr_failure_response(const struct jr_failure *f)
{
	return jr_error(f->id, f->code ? f->code : JR_INVALID_REQUEST, f->message, NULL);
}

ssize_t jr_encode(const json_t *msg, char **out)
{
	/* Compact: no newline anywhere (strings escape theirs), as the stdio transport requires. */
	char *s = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(9));
	if (!s)
		return -ENOMEM;
	*out = s;
	return (ssize_t)strlen(s);
}
