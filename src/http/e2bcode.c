/* e2bcode.c — E2B's code interpreter (its port 49999: /execute streaming NDJSON, /contexts) on airlock's interpreter contexts: each cell a code_execute call of the context, each context call a code_context one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "http/e2b.h"
#include "util/cleanup.h"
#include "util/text.h"

/* E2B's language names (python, javascript / js / typescript?, bash / sh / shell) as airlock's;
 * NULL for one airlock has no context for. */
static const char *language_of(const char *e2b)
{
	if (!e2b || !*e2b || strcmp(e2b, "python") == 0 || strcmp(e2b, "python3") == 0)
		return "python";
	if (strcmp(e2b, "javascript") == 0 || strcmp(e2b, "js") == 0 || strcmp(e2b, "node") == 0)
		return "javascript";
	if (strcmp(e2b, "bash") == 0 || strcmp(e2b, "sh") == 0 || strcmp(e2b, "shell") == 0)
		return "shell";
	return NULL;
}

static const char *e2b_language(const char *ours)
{
	return ours && strcmp(ours, "shell") == 0 ? "bash" : ours ? ours : "python";
}

/* The interpreter's errors as plain text, as its server writes them (the SDK shows the body). */
static void text_error(struct hx_response *rs, int status, const char *msg)
{
	hx_response_clear(rs);
	rs->status = status;
	rs->type = "text/plain; charset=utf-8";
	rs->body = strdup(msg);
	rs->len = rs->body ? strlen(rs->body) : 0;
}

static void text_from_api(struct hx_response *rs)
{
	if (rs->status < 300)
		return;
	json_t *b = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	char msg[AL_ERROR_MAX + 64];
	snprintf(msg, sizeof(msg), "%s", json_string_value(json_object_get(b, "error")) ?: "the request failed");
	json_decref(b);
	text_error(rs, rs->status, msg);
}

/* ---- /execute: a cell's events as the interpreter's NDJSON lines ----------------------------------- */

static int line_out(json_t *steal, struct cx_buf *b)
{
	char *text = steal ? json_dumps(steal, JSON_COMPACT) : NULL;
	json_decref(steal);
	int r = text ? cx_append(b, text, strlen(text)) : -ENOMEM;
	free(text);
	return r ?: cx_append(b, "\n", 1);
}

/* The cell's answer: its figures, its value (the main result), its error, then the end. */
static int cell_lines(const json_t *cell, struct cx_buf *b)
{
	size_t i;
	const json_t *im;
	int r = 0;
	json_array_foreach(json_object_get(cell, "images"), i, im) {
		if (r == 0)
			r = line_out(json_pack("{s:s,s:O,s:b}", "type", "result", "png", json_object_get(im, "data"),
					       "is_main_result", 0),
				     b);
	}
	const json_t *v = json_object_get(cell, "value"), *e = json_object_get(cell, "error");
	if (r == 0 && json_is_object(v) &&
	    (json_string_value(json_object_get(v, "text")) || json_string_value(json_object_get(v, "html")))) {
		json_t *res = json_pack("{s:s,s:b}", "type", "result", "is_main_result", 1);
		json_t *text = json_object_get(v, "text"), *html = json_object_get(v, "html");
		if (res && json_is_string(text))
			json_object_set(res, "text", text);
		if (res && json_is_string(html))
			json_object_set(res, "html", html);
		r = line_out(res, b);
	}
	if (r == 0 && json_is_object(e))
		r = line_out(json_pack("{s:s,s:O,s:O,s:O}", "type", "error", "name", json_object_get(e, "ename"),
				       "value", json_object_get(e, "evalue"), "traceback",
				       json_object_get(e, "traceback")),
			     b);
	return r;
}

static int cell_event(void *ctx, const char *name, const json_t *ev, char **out, size_t *n)
{
	struct cx_buf b = {0};
	int r = 0;
	if (strcmp(name, "output") == 0) {
		const char *stream = json_string_value(json_object_get(ev, "stream"));
		r = line_out(json_pack("{s:s,s:O}", "type",
				       stream && strcmp(stream, "stderr") == 0 ? "stderr" : "stdout", "text",
				       json_object_get(ev, "data")),
			     &b);
	} else if (strcmp(name, "result") == 0) {
		const json_t *res = json_object_get(ev, "result");
		const json_t *cell = json_object_get(res, "cell");
		if (cell)
			r = cell_lines(cell, &b);
		else if (json_string_value(json_object_get(res, "error"))) /* it did not run as a cell */
			r = line_out(json_pack("{s:s,s:s,s:O,s:s}", "type", "error", "name", "AirlockError", "value",
					       json_object_get(res, "error"), "traceback", ""),
				     &b);
		r = r ?: line_out(json_pack("{s:s}", "type", "end_of_execution"), &b);
	} else if (strcmp(name, "error") == 0) {
		r = line_out(json_pack("{s:s,s:s,s:O,s:s}", "type", "error", "name", "AirlockError", "value",
				       json_object_get(ev, "error"), "traceback", ""),
			     &b);
		r = r ?: line_out(json_pack("{s:s}", "type", "end_of_execution"), &b);
	}
	*out = b.p;
	*n = b.len;
	return r;
}

static const struct hx_framing cell_framing = {
	.type = "application/x-ndjson",
	.event = cell_event,
};

static const char *context_language(const char *cid)
{
	static const char *const langs[] = {"python", "javascript", "shell"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(langs); i++) {
		size_t n = strlen(langs[i]);
		if (strncmp(cid, langs[i], n) == 0 && (cid[n] == 0 || cid[n] == '-'))
			return langs[i];
	}
	return "python";
}

static json_t *body_object(const struct hx_request *rq, struct hx_response *rs)
{
	json_t *j = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, NULL) : json_object();
	if (!json_is_object(j)) {
		json_decref(j);
		text_error(rs, 400, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

static void execute(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *body = body_object(rq, rs);
	if (!body)
		return;
	const char *code = json_string_value(json_object_get(body, "code"));
	const char *ctx = json_string_value(json_object_get(body, "context_id"));
	const char *given = json_string_value(json_object_get(body, "language"));
	/* A context's language is the cell's: the ids made here start with it ("javascript-..."). */
	const char *lang = ctx && !given ? context_language(ctx) : language_of(given);
	json_t *env = json_object_get(body, "env_vars");
	if (!code || !lang) {
		text_error(rs, 400,
			   !code ? "code is required"
				 : "airlock's interpreter contexts are python, javascript and bash");
		json_decref(body);
		return;
	}
	json_t *args = json_pack("{s:s,s:s,s:s}", "sandbox_id", id, "language", lang, "code", code);
	/* A context's own language is the cell's: a context id alone names both. */
	if (args && ctx)
		json_object_set_new(args, "context_id", json_string(ctx));
	if (args && json_is_object(env) && json_object_size(env))
		json_object_set(args, "env", env);
	json_decref(body);
	struct hx_call *c = args ? hx_call_new(s, TL_EXECUTE, args, rq) : NULL;
	if (!c) {
		text_error(rs, 500, "out of memory");
		return;
	}
	hx_call_framing(c, &cell_framing, NULL);
	hx_call_stream(c, false, rs);
	if (!rs->ops)
		text_from_api(rs);
}

/* ---- /contexts ---------------------------------------------------------------------------------------- */

static json_t *context_e2b(const json_t *c)
{
	return json_pack("{s:O,s:s,s:s}", "id", json_object_get(c, "context_id"), "language",
			 e2b_language(json_string_value(json_object_get(c, "language"))), "cwd", E2B_HOME);
}

static json_t *context_call(struct hx_server *s, const struct hx_request *rq, json_t *args, struct hx_response *rs)
{
	struct hx_call *c = args ? hx_call_new(s, TL_CONTEXT, args, rq) : NULL;
	if (!c) {
		text_error(rs, 500, "out of memory");
		return NULL;
	}
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
	if (rs->status != 200) {
		text_from_api(rs);
		return NULL;
	}
	json_t *o = json_loadb(rs->body, rs->len, 0, NULL);
	hx_response_clear(rs);
	return o;
}

static void create_context(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *body = body_object(rq, rs);
	if (!body)
		return;
	const char *lang = language_of(json_string_value(json_object_get(body, "language")));
	json_decref(body);
	if (!lang) {
		text_error(rs, 400, "airlock's interpreter contexts are python, javascript and bash");
		return;
	}
	/* Each create is a new context, as the interpreter's: its own id. */
	unsigned char rnd[6];
	char cid[48];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		text_error(rs, 500, "no random bytes");
		return;
	}
	snprintf(cid, sizeof(cid), "%s-%02x%02x%02x%02x%02x%02x", lang, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	json_t *o = context_call(s, rq,
				 json_pack("{s:s,s:s,s:s,s:s}", "sandbox_id", id, "action", "create", "language", lang,
					   "context_id", cid),
				 rs);
	if (o)
		hx_json(rs, 200, context_e2b(o));
	json_decref(o);
}

static void list_contexts(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *o = context_call(s, rq, json_pack("{s:s,s:s}", "sandbox_id", id, "action", "list"), rs);
	if (!o)
		return;
	json_t *out = json_array();
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(o, "contexts"), i, c) {
		json_array_append_new(out, context_e2b(c));
	}
	json_decref(o);
	hx_json(rs, 200, out);
}

static void context_action(struct hx_server *s, const struct hx_request *rq, const char *id, const char *cid,
			   const char *action, struct hx_response *rs)
{
	json_t *o = context_call(s, rq,
				 json_pack("{s:s,s:s,s:s}", "sandbox_id", id, "action", action, "context_id", cid), rs);
	if (o)
		rs->status = 204;
	json_decref(o);
}

void e2b_interpreter(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	const char *path = rq->path ? rq->path : "", *m = rq->method ? rq->method : "";
	if (strcmp(path, "/execute") == 0 && strcmp(m, "POST") == 0) {
		execute(s, rq, id, rs);
		return;
	}
	if (strcmp(path, "/contexts") == 0) {
		if (strcmp(m, "POST") == 0)
			create_context(s, rq, id, rs);
		else if (strcmp(m, "GET") == 0)
			list_contexts(s, rq, id, rs);
		else
			text_error(rs, 405, "GET or POST /contexts");
		return;
	}
	if (strncmp(path, "/contexts/", 10) == 0 && path[10]) {
		cleanup_free char *cid = strndup(path + 10, strcspn(path + 10, "/"));
		const char *rest = path + 10 + (cid ? strlen(cid) : 0);
		if (!cid)
			text_error(rs, 500, "out of memory");
		else if (!*rest && strcmp(m, "DELETE") == 0)
			context_action(s, rq, id, cid, "delete", rs);
		else if (strcmp(rest, "/restart") == 0 && strcmp(m, "POST") == 0)
			context_action(s, rq, id, cid, "restart", rs);
		else
			text_error(rs, 404, "no such interpreter route");
		return;
	}
	if (strcmp(path, "/health") == 0) {
		rs->status = 204;
		return;
	}
	text_error(rs, 404, "no such interpreter route");
}
