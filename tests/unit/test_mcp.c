/* test_mcp.c — unit tests for the MCP session (src/mcp/): the protocol's lifecycle, tools/list,
 * bad input and the stdio transport, against a fake manager (mcp_env.h). */
#include "mcp_env.h"

/* ---- lifecycle ---------------------------------------------------------------------------- */

static void negotiate(const char *asked, const char *want)
{
	struct env *e = env_open(false, 0);
	json_t *out = feedf(e,
			    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
			    "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\","
			    "\"version\":\"1\"}}}",
			    asked);
	check_wire(out);
	json_t *r = result_of(out, 1);
	assert_string_equal(json_string_value(json_object_get(r, "protocolVersion")), want);
	json_t *caps = json_object_get(r, "capabilities");
	assert_true(json_is_object(json_object_get(caps, "tools")));
	assert_true(json_is_object(json_object_get(caps, "logging")));
	json_t *info = json_object_get(r, "serverInfo");
	assert_string_equal(json_string_value(json_object_get(info, "name")), "airlock");
	assert_string_equal(json_string_value(json_object_get(info, "version")), "9.9.9");
	assert_true(json_string_length(json_object_get(r, "instructions")) > 20);
	assert_string_equal(mcp_session_protocol(e->s), want);
	env_close(e);
}

static void test_negotiation(void **state)
{
	negotiate("2025-11-25", "2025-11-25"); /* current */
	negotiate("2025-06-18", "2025-06-18"); /* previous */
	negotiate("2025-03-26", "2025-11-25"); /* older than we serve: our latest, the client decides */
	negotiate("2099-01-01", "2025-11-25"); /* unknown */
	negotiate("", "2025-11-25");
}

static void test_initialize_errors(void **state)
{
	struct env *e = env_open(false, 0);
	json_t *out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
	assert_int_equal(error_code(out, 1), JR_INVALID_PARAMS);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":7}}");
	assert_int_equal(error_code(out, 2), JR_INVALID_PARAMS);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		      "\"2025-11-25\",\"capabilities\":[]}}");
	assert_int_equal(error_code(out, 3), JR_INVALID_PARAMS);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":[1]}");
	assert_int_equal(error_code(out, 4), JR_INVALID_PARAMS);
	initialize(e, "2025-11-25", false);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		      "\"2025-11-25\"}}");
	assert_int_equal(error_code(out, 5), JR_INVALID_REQUEST);
	assert_string_equal(mcp_session_protocol(e->s), "2025-11-25");
	env_close(e);
}

static void test_before_initialize(void **state)
{
	struct env *e = env_open(false, 0);
	json_t *out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	assert_int_equal(error_code(out, 1), JR_INVALID_REQUEST);
	assert_non_null(strstr(error_message(out, 1), "initialize"));
	out = call(e, 2, "code_execute", "{\"language\":\"python\",\"code\":\"1\"}", NULL);
	assert_int_equal(error_code(out, 2), JR_INVALID_REQUEST);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no/such\"}");
	assert_int_equal(error_code(out, 3), JR_INVALID_REQUEST);
	/* ping is allowed at any time; notifications are never answered. */
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
	assert_int_equal(json_object_size(result_of(out, 4)), 0);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}");
	assert_int_equal(json_array_size(out), 0);
	assert_int_equal(e->m.total_calls, 0);
	env_close(e);
}

static void test_ping_and_logging(void **state)
{
	struct env *e = env_open(true, 0);
	initialize(e, "2025-11-25", false);
	json_t *out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\",\"params\":{}}");
	assert_int_equal(json_array_size(out), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(out, 0), "id")), "p");
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"loud\"}}");
	assert_int_equal(error_code(out, 1), JR_INVALID_PARAMS);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\",\"params\":{}}");
	assert_int_equal(error_code(out, 2), JR_INVALID_PARAMS);
	/* At the default level a denial is logged to the client; at "error" it is not. */
	e->g.verdict = SRV_GATE_DENY;
	out = call(e, 3, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", NULL);
	json_t *log = first_method(out, "notifications/message");
	assert_non_null(log);
	assert_string_equal(json_string_value(json_object_get(json_object_get(log, "params"), "level")), "notice");
	out = feed(e,
		   "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"error\"}}");
	assert_int_equal(json_object_size(result_of(out, 4)), 0);
	out = call(e, 5, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", NULL);
	assert_int_equal(count_method(out, "notifications/message"), 0);
	check_tool_error(out, 5, "denied");
	env_close(e);
}

/* ---- tools/list ------------------------------------------------------------------------------ */

static void test_tools_list(void **state)
{
	static const char *const names[] = {"code_execute",
					    "code_install_package",
					    "code_write_file",
					    "code_read_file",
					    "code_list_files",
					    "code_create_sandbox",
					    "code_destroy_sandbox",
					    "code_context",
					    "code_process",
					    "code_file",
					    "code_set_sandbox_timeout",
					    "code_watch",
					    "code_fork_sandbox",
					    "code_pause_sandbox",
					    "code_resume_sandbox",
					    "code_snapshot_sandbox",
					    "code_list_snapshots",
					    "code_delete_snapshot"};
	struct env *e = env_open(false, 0);
	initialize(e, "2025-11-25", false);
	json_t *out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	check_wire(out);
	json_t *tools = json_object_get(result_of(out, 1), "tools");
	assert_int_equal(json_array_size(tools), AL_ARRAY_SIZE(names));
	for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++) {
		json_t *t = json_array_get(tools, i);
		assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
		assert_true(json_string_length(json_object_get(t, "description")) > 10);
		assert_true(json_is_object(json_object_get(t, "annotations")));
		for (int k = 0; k < 2; k++) {
			json_t *sch = json_object_get(t, k ? "outputSchema" : "inputSchema");
			char msg[SCH_MSG_MAX];
			/* A JSON Schema object (never null), of type object as MCP requires, using only
			 * keywords the server enforces; every required property is declared. */
			assert_true(json_is_object(sch));
			assert_string_equal(json_string_value(json_object_get(sch, "type")), "object");
			if (sch_check_schema(sch, msg) < 0)
				fail_msg("%s: %s", names[i], msg);
			size_t j;
			json_t *req;
			json_array_foreach(json_object_get(sch, "required"), j, req)
				assert_non_null(
					json_object_get(json_object_get(sch, "properties"), json_string_value(req)));
		}
		/* Input schemas are closed: an unknown property is an error, not ignored. */
		assert_true(json_is_false(json_object_get(json_object_get(t, "inputSchema"), "additionalProperties")));
	}
	json_t *lang = json_object_get(
		json_object_get(json_object_get(json_array_get(tools, 0), "inputSchema"), "properties"), "language");
	assert_int_equal(json_array_size(json_object_get(lang, "enum")), 6);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"cursor\":\"x\"}}");
	assert_int_equal(error_code(out, 2), JR_INVALID_PARAMS);
	env_close(e);
}

/* ---- bad input --------------------------------------------------------------------------------- */

struct bad_args {
	const char *tool, *args, *want;
};

static const struct bad_args bad_args[] = {
	{"code_execute", "{\"code\":\"1\"}", "missing required property \"language\""},
	{"code_execute", "{\"language\":\"cobol\",\"code\":\"1\"}", "language: must be one of"},
	{"code_execute", "{\"language\":\"python\",\"code\":5}", "code: expected string"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"\"}", "code: must be at least 1"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"1\",\"timeout\":\"5\"}", "timeout: expected number"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"1\",\"timeout\":0}", "timeout: must be greater than 0"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"1\",\"timeout\":99999}", "timeout: must be at most"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"1\",\"network_enabled\":\"yes\"}", "expected boolean"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"1\",\"allowed_domains\":[\"a\",3]}",
	 "allowed_domains[1]: expected string"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"1\",\"allowed_domains\":[\"pypi.org\"]}",
	 "needs \"network_enabled\": true"},
	{"code_execute", "{\"language\":\"python\",\"code\":\"1\",\"sandbox\":\"x\"}", "unknown property \"sandbox\""},
	{"code_install_package", "{\"sandbox_id\":\"sb-a\",\"manager\":\"apt\",\"packages\":[\"x\"]}", "manager"},
	{"code_install_package", "{\"sandbox_id\":\"sb-a\",\"manager\":\"pip\",\"packages\":[]}", "at least 1 items"},
	{"code_install_package",
	 "{\"sandbox_id\":\"sb-a\",\"manager\":\"pip\",\"packages\":[\"--index-url=http://x\"]}",
	 "cannot start with '-'"},
	{"code_install_package", "{\"sandbox_id\":\"sb-a\",\"manager\":\"npm\",\"packages\":[\"a b\"]}", "no spaces"},
	{"code_write_file", "{\"sandbox_id\":\"sb-a\",\"path\":\"x\",\"content\":\"!!\",\"encoding\":\"base64\"}",
	 "not valid base64"},
	{"code_write_file", "{\"sandbox_id\":\"sb-a\",\"path\":\"x\",\"content\":\"x\",\"encoding\":\"latin1\"}",
	 "encoding"},
	{"code_read_file", "{\"sandbox_id\":\"sb-a\"}", "missing required property \"path\""},
	{"code_read_file", "{\"sandbox_id\":\"sb-a\",\"path\":\"\"}", "path: must be at least 1"},
	{"code_create_sandbox", "{\"limits\":{\"memory_mb\":1}}", "limits.memory_mb: must be at least 16"},
	{"code_create_sandbox", "{\"limits\":{\"memory_mb\":64.5}}", "limits.memory_mb: expected integer"},
	{"code_create_sandbox", "{\"limits\":{\"swap\":1}}", "unknown property \"swap\""},
	{"code_destroy_sandbox", "{\"sandbox_id\":7}", "sandbox_id: expected string"},
};

static void test_schema_violations(void **state)
{
	/* 2025-11-25: input validation errors are tool execution errors (SEP-1303). */
	struct env *e = env_open(true, 0);
	e->g.verdict = SRV_GATE_ALLOW;
	initialize(e, "2025-11-25", false);
	for (size_t i = 0; i < AL_ARRAY_SIZE(bad_args); i++) {
		json_t *out = call(e, (int)i + 1, bad_args[i].tool, bad_args[i].args, NULL);
		check_wire(out);
		check_tool_error(out, (int)i + 1, bad_args[i].want);
	}
	assert_int_equal(e->m.total_calls, 0);
	assert_int_equal(e->g.checks, 0); /* the gate only ever sees valid arguments */
	assert_int_equal(e->g.finished[SRV_CALL_INVALID], (int)AL_ARRAY_SIZE(bad_args)); /* ... and audit, all */
	env_close(e);
	/* 2025-06-18: they are JSON-RPC errors -32602. */
	e = env_open(false, 0);
	initialize(e, "2025-06-18", false);
	for (size_t i = 0; i < AL_ARRAY_SIZE(bad_args); i++) {
		json_t *out = call(e, (int)i + 1, bad_args[i].tool, bad_args[i].args, NULL);
		assert_int_equal(error_code(out, (int)i + 1), JR_INVALID_PARAMS);
		if (!strstr(error_message(out, (int)i + 1), bad_args[i].want))
			fail_msg("\"%s\" lacks \"%s\"", error_message(out, (int)i + 1), bad_args[i].want);
	}
	assert_int_equal(e->m.total_calls, 0);
	env_close(e);
}

static void test_bad_calls(void **state)
{
	struct env *e = env_open(false, 0);
	initialize(e, "2025-11-25", false);
	json_t *out = call(e, 1, "code_teleport", "{}", NULL);
	assert_int_equal(error_code(out, 1), JR_INVALID_PARAMS); /* the spec: unknown tools are protocol errors */
	assert_non_null(strstr(error_message(out, 1), "Unknown tool: code_teleport"));
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{}}");
	assert_int_equal(error_code(out, 2), JR_INVALID_PARAMS);
	out = feed(e,
		   "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"code_list_files\","
		   "\"arguments\":[1]}}");
	assert_int_equal(error_code(out, 3), JR_INVALID_PARAMS);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":[\"code_list_files\"]}");
	assert_int_equal(error_code(out, 4), JR_INVALID_PARAMS);
	out = call(e, 5, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", "{\"progressToken\":1.5}");
	assert_int_equal(error_code(out, 5), JR_INVALID_PARAMS);
	out = call(e, 6, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", "\"meta\"");
	assert_int_equal(error_code(out, 6), JR_INVALID_PARAMS);
	/* No arguments at all is an empty object: here, a missing required property. */
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/"
		      "call\",\"params\":{\"name\":\"code_read_file\"}}");
	check_tool_error(out, 7, "path");
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/list\"}");
	assert_int_equal(error_code(out, 8), JR_METHOD_NOT_FOUND);
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\",\"params\":{}}");
	assert_int_equal(json_array_size(out), 0);
	assert_int_equal(e->m.total_calls, 0);
	env_close(e);
}

struct garbage {
	const char *text;
	int code;
};

static const struct garbage garbage[] = {
	{"", JR_PARSE_ERROR},
	{"{", JR_PARSE_ERROR},
	{"not json", JR_PARSE_ERROR},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing", JR_PARSE_ERROR},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", JR_PARSE_ERROR},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\\u0000ng\"}", JR_PARSE_ERROR},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", JR_PARSE_ERROR},
	{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", JR_INVALID_REQUEST},
	{"[]", JR_INVALID_REQUEST},
	{"42", JR_INVALID_REQUEST},
	{"\"ping\"", JR_INVALID_REQUEST},
	{"null", JR_INVALID_REQUEST},
	{"{}", JR_INVALID_REQUEST},
	{"{\"id\":1,\"method\":\"ping\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":\"x\"}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"param\":{}}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"result\":{}}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"x\"}}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"1\",\"message\":\"x\"}}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\",\"extra\":1}}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}", JR_INVALID_REQUEST},
	{"{\"jsonrpc\":\"2.0\",\"params\":{}}", JR_INVALID_REQUEST},
};

static void test_garbage(void **state)
{
	struct env *e = env_open(false, 0);
	initialize(e, "2025-11-25", false);
	for (size_t i = 0; i < AL_ARRAY_SIZE(garbage); i++) {
		json_t *out = feed(e, garbage[i].text);
		check_wire(out);
		if (json_array_size(out) != 1)
			fail_msg("\"%s\": %zu messages", garbage[i].text, json_array_size(out));
		json_t *err = json_object_get(json_array_get(out, 0), "error");
		if (json_integer_value(json_object_get(err, "code")) != garbage[i].code)
			fail_msg("\"%s\": code %lld, want %d (%s)", garbage[i].text,
				 (long long)json_integer_value(json_object_get(err, "code")), garbage[i].code,
				 json_string_value(json_object_get(err, "message")));
		/* An id that could be read is echoed; otherwise it is null. */
		json_t *id = json_object_get(json_array_get(out, 0), "id");
		assert_true(json_is_null(id) || json_is_integer(id));
	}
	/* A NUL byte inside the message, and bytes past the given length, are not read. */
	json_t *out = feed_len(e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0{", 42);
	assert_int_equal(json_array_size(out), 1);
	assert_true(json_is_null(json_object_get(json_array_get(out, 0), "id")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(out, 0), "error"), "code")),
			 JR_PARSE_ERROR);
	out = feed_len(e, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}XXXX", 40);
	assert_non_null(result_of(out, 9));
	/* Deep nesting is refused by the parser's depth limit, not by the stack. */
	size_t depth = 100000;
	char *deep = malloc(depth * 2 + 1);
	assert_non_null(deep);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	deep[depth * 2] = 0;
	out = feed(e, deep);
	free(deep);
	assert_int_equal(json_array_size(out), 1);
	/* The session still serves. */
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}");
	assert_non_null(result_of(out, 10));
	assert_int_equal(e->m.total_calls, 0);
	env_close(e);
}

static void test_message_limit(void **state)
{
	struct env *e = env_open(false, 256);
	initialize(e, "2025-11-25", false);
	char big[400];
	int n = snprintf(big, sizeof(big),
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"%0300d\"}}", 0);
	json_t *out = feed_len(e, big, (size_t)n);
	assert_int_equal(json_array_size(out), 1);
	json_t *err = json_object_get(json_array_get(out, 0), "error");
	assert_int_equal(json_integer_value(json_object_get(err, "code")), JR_INVALID_REQUEST);
	assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "too large"));
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	assert_non_null(result_of(out, 2));
	env_close(e);
}

/* ---- the stdio transport ---------------------------------------------------------------------- */

struct served {
	struct mcp_opts o;
	int in, out, rc;
};

static void *serve(void *arg)
{
	struct served *sv = arg;
	struct al_error err = {0};
	sv->rc = mcp_serve_stdio(&sv->o, sv->in, sv->out, -1, &err);
	close(sv->out);
	return NULL;
}

static void write_str(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(fd, s, n);
		assert_true(w > 0);
		s += w;
		n -= (size_t)w;
	}
}

static void test_stdio(void **state)
{
	struct fake_mgr m = {.cancel_finishes = true};
	struct srv_mgr_api api = fake_api(&m);
	fake_add_sandbox(&m, "sb-a");
	int to_srv[2], from_srv[2];
	assert_int_equal(pipe2(to_srv, O_CLOEXEC), 0);
	assert_int_equal(pipe2(from_srv, O_CLOEXEC), 0);
	struct served sv = {
		.o = {.size = sizeof(sv.o), .mgr = &api, .max_message = 1024}, .in = to_srv[0], .out = from_srv[1]};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, serve, &sv), 0);
	write_str(to_srv[1], "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
			     "\"2025-06-18\",\"capabilities\":{}}}\r\n");
	write_str(to_srv[1], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\n");
	char big[3000];
	memset(big, 'x', sizeof(big) - 2);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = 0;
	write_str(to_srv[1], big); /* over the 1024-byte limit: discarded, answered with an error */
	write_str(to_srv[1], "garbage\n");
	write_str(to_srv[1], "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
			     "\"code_execute\",\"arguments\":{\"language\":\"python\",\"code\":\"print(1)\"}}}\n");
	write_str(to_srv[1], "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}"); /* the last line has no newline */
	close(to_srv[1]);
	pthread_join(th, NULL);
	assert_int_equal(sv.rc, 0);
	close(to_srv[0]);
	FILE *f = fdopen(from_srv[0], "r");
	assert_non_null(f);
	json_t *all = json_array();
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		json_error_t jerr;
		json_t *msg = json_loads(line, 0, &jerr); /* stdout carries JSON-RPC messages only */
		if (!msg)
			fail_msg("not JSON on stdout: %s (%s)", line, jerr.text);
		json_array_append_new(all, msg);
	}
	free(line);
	fclose(f);
	assert_non_null(result_of(all, 1));
	assert_non_null(result_of(all, 2));
	assert_null(response(all, 3)); /* an unterminated line is not a message */
	int errors = 0;
	size_t i;
	json_t *msg;
	json_array_foreach(all, i, msg)
		errors += json_is_null(json_object_get(msg, "id")) && json_object_get(msg, "error") != NULL;
	assert_int_equal(errors, 2); /* the oversized line and the garbage */
	assert_int_equal(json_array_size(all), 4);
	json_decref(all);
	assert_int_equal(m.calls[FK_EXEC], 1);
}

/* EOF with a call in flight: cancelled through the manager, no response, clean return. */
static void test_stdio_eof_cancels(void **state)
{
	struct fake_mgr m = {.cancel_finishes = true, .async = true};
	struct srv_mgr_api api = fake_api(&m);
	int to_srv[2], from_srv[2];
	assert_int_equal(pipe2(to_srv, O_CLOEXEC), 0);
	assert_int_equal(pipe2(from_srv, O_CLOEXEC), 0);
	struct served sv = {.o = {.size = sizeof(sv.o), .mgr = &api}, .in = to_srv[0], .out = from_srv[1]};
	write_str(to_srv[1], "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
			     "\"2025-11-25\"}}\n"
			     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
			     "\"code_execute\",\"arguments\":{\"language\":\"python\",\"code\":\"while 1: pass\"}}}\n");
	close(to_srv[1]);
	serve(&sv);
	assert_int_equal(sv.rc, 0);
	assert_int_equal(m.calls[FK_EXEC], 1);
	assert_int_equal(m.cancels, 1);
	assert_int_equal(m.releases, 1);
	assert_int_equal(m.live_ops, 0);
	char buf[4096];
	ssize_t n = read(from_srv[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	assert_null(strstr(buf, "\"id\":2")); /* the cancelled call got no response */
	close(to_srv[0]);
	close(from_srv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiation),	  cmocka_unit_test(test_initialize_errors),
		cmocka_unit_test(test_before_initialize), cmocka_unit_test(test_ping_and_logging),
		cmocka_unit_test(test_tools_list),	  cmocka_unit_test(test_schema_violations),
		cmocka_unit_test(test_bad_calls),	  cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_message_limit),	  cmocka_unit_test(test_stdio),
		cmocka_unit_test(test_stdio_eof_cancels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
