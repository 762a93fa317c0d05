/* mcp_env.h — the harness of the MCP session's unit tests (test_mcp*.c): a session on a fake
 * manager and a fake approval gate (mcp_fake.h), fed JSON-RPC text, and checks of what it answers.
 * Header-only, as mcp_fake.h: each test file is its own program. */
#ifndef AL_TESTS_MCP_ENV_H
#define AL_TESTS_MCP_ENV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mcp_fake.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "service/schema.h"
#include "service/tools.h"
#include "util/cleanup.h"

FAKE_UNUSED static uint64_t clock_now = 1000000;

FAKE_UNUSED static uint64_t test_clock(void *ctx)
{
	return clock_now;
}

struct env {
	struct fake_mgr m;
	struct srv_mgr_api api;
	struct fake_gate g;
	struct srv_gate gate;
	struct tl_catalog cat;
	struct mcp_session *s;
	json_t *out;
};

/* What env_open gives the session besides the gate (the approver tests set them). */
static struct {
	const struct srv_approver *approver;
	bool approver_first, no_elicitation;
	const char *transport;
} env_ask;

FAKE_UNUSED static struct env *env_open(bool with_gate, size_t max_message)
{
	struct env *e = calloc(1, sizeof(*e));
	assert_non_null(e);
	e->m.cancel_finishes = true;
	e->api = fake_api(&e->m);
	e->gate = fake_gate_api(&e->g);
	fake_add_sandbox(&e->m, "sb-a");
	struct mcp_opts o = {
		.size = sizeof(o),
		.mgr = &e->api,
		.gate = with_gate ? &e->gate : NULL,
		.server_version = "9.9.9",
		.max_message = max_message,
		.now_ms = test_clock,
		.approver = env_ask.approver,
		.approver_first = env_ask.approver_first,
		.no_elicitation = env_ask.no_elicitation,
		.transport = env_ask.transport,
	};
	struct al_error err = {0};
	if (mcp_session_new(&o, &e->s, &err) < 0)
		fail_msg("mcp_session_new: %s", err.msg);
	char msg[SCH_MSG_MAX];
	assert_int_equal(tl_catalog_load(&e->cat, msg), 0);
	e->out = json_array();
	return e;
}

FAKE_UNUSED static void env_close(struct env *e)
{
	mcp_session_free(e->s);
	/* Whatever the session started, it released, and the fake freed once done. */
	for (struct srv_op *o = e->m.ops; o; o = o->next)
		assert_true(o->released);
	json_decref(e->out);
	tl_catalog_clear(&e->cat);
	while (e->m.ops)
		fake_finish(e->m.ops, 0, ""); /* late on_done after the session is gone: must be harmless */
	assert_int_equal(e->m.live_ops, 0);
	free(e);
}

FAKE_UNUSED static json_t *feed_len(struct env *e, const char *text, size_t len)
{
	json_array_clear(e->out);
	assert_int_equal(mcp_session_feed(e->s, text, len, e->out), 0);
	return e->out;
}

FAKE_UNUSED static json_t *feed(struct env *e, const char *text)
{
	return feed_len(e, text, strlen(text));
}

FAKE_UNUSED __attribute__((format(printf, 2, 3))) static json_t *feedf(struct env *e, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	va_start(ap, fmt);
	assert_true(vasprintf(&text, fmt, ap) >= 0);
	va_end(ap);
	json_t *out = feed(e, text);
	free(text);
	return out;
}

FAKE_UNUSED static json_t *poll_session(struct env *e)
{
	json_array_clear(e->out);
	assert_int_equal(mcp_session_poll(e->s, e->out), 0);
	return e->out;
}

/* The response (result or error) with integer id, or NULL. */
FAKE_UNUSED static json_t *response(json_t *out, json_int_t id)
{
	size_t i;
	json_t *m;
	json_array_foreach(out, i, m) {
		json_t *mid = json_object_get(m, "id");
		if (json_is_integer(mid) && json_integer_value(mid) == id && !json_object_get(m, "method"))
			return m;
	}
	return NULL;
}

FAKE_UNUSED static json_t *result_of(json_t *out, json_int_t id)
{
	json_t *r = response(out, id);
	if (!r || !json_object_get(r, "result")) {
		char *d = json_dumps(out, 0);
		fail_msg("no result for id %lld in %s", (long long)id, d);
	}
	return json_object_get(r, "result");
}

FAKE_UNUSED static int error_code(json_t *out, json_int_t id)
{
	json_t *r = response(out, id);
	if (!r || !json_object_get(r, "error")) {
		char *d = json_dumps(out, 0);
		fail_msg("no error for id %lld in %s", (long long)id, d);
	}
	return (int)json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

FAKE_UNUSED static const char *error_message(json_t *out, json_int_t id)
{
	return json_string_value(json_object_get(json_object_get(response(out, id), "error"), "message"));
}

FAKE_UNUSED static size_t count_method(json_t *out, const char *method)
{
	size_t i, n = 0;
	json_t *m;
	json_array_foreach(out, i, m)
		n += json_is_string(json_object_get(m, "method")) &&
		     strcmp(json_string_value(json_object_get(m, "method")), method) == 0;
	return n;
}

FAKE_UNUSED static json_t *first_method(json_t *out, const char *method)
{
	size_t i;
	json_t *m;
	json_array_foreach(out, i, m)
		if (json_is_string(json_object_get(m, "method")) &&
		    strcmp(json_string_value(json_object_get(m, "method")), method) == 0)
			return m;
	return NULL;
}

/* Every message the session emits is valid JSON-RPC 2.0 and encodes to one line. */
FAKE_UNUSED static void check_wire(json_t *out)
{
	size_t i;
	json_t *m;
	json_array_foreach(out, i, m) {
		assert_string_equal(json_string_value(json_object_get(m, "jsonrpc")), "2.0");
		char *line = NULL;
		assert_true(jr_encode(m, &line) > 0);
		assert_null(strchr(line, '\n'));
		free(line);
	}
}

FAKE_UNUSED static void initialize(struct env *e, const char *version, bool elicit)
{
	json_t *out = feedf(e,
			    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
			    "\"%s\",\"capabilities\":{%s},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}",
			    version, elicit ? "\"elicitation\":{}" : "");
	assert_non_null(result_of(out, 0));
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	assert_int_equal(json_array_size(out), 0);
}

/* tools/call with JSON text arguments (and _meta, if any). */
FAKE_UNUSED static json_t *call(struct env *e, int id, const char *tool, const char *args, const char *meta)
{
	return feedf(e,
		     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
		     "\"arguments\":%s%s%s}}",
		     id, tool, args, meta ? ",\"_meta\":" : "", meta ? meta : "");
}

/* A successful CallToolResult: structuredContent matches the tool's outputSchema, the text block is
 * the model's short reading of it (service/brief.c: never empty; tests/mcp/session.py checks its
 * words), and isError is as expected. */
FAKE_UNUSED static json_t *check_tool_result(struct env *e, json_t *out, int id, enum tl_id tool, bool is_error)
{
	json_t *r = result_of(out, id);
	json_t *sc = json_object_get(r, "structuredContent");
	assert_non_null(sc);
	char msg[SCH_MSG_MAX];
	if (sch_validate(e->cat.output[tool], sc, msg) < 0)
		fail_msg("%s: structuredContent does not match outputSchema: %s", tl_name(tool), msg);
	json_t *text = json_object_get(json_array_get(json_object_get(r, "content"), 0), "text");
	char *whole = json_dumps(sc, JSON_COMPACT);
	assert_non_null(whole);
	assert_true(json_string_length(text) > 0);
	free(whole);
	assert_int_equal(json_is_true(json_object_get(r, "isError")), is_error);
	return sc;
}

/* A tool error: isError with a text block containing want. */
FAKE_UNUSED static void check_tool_error(json_t *out, int id, const char *want)
{
	json_t *r = result_of(out, id);
	assert_true(json_is_true(json_object_get(r, "isError")));
	const char *text = json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
	assert_non_null(text);
	if (!strstr(text, want))
		fail_msg("tool error \"%s\" lacks \"%s\"", text, want);
}

#endif
