/* test_mcp_calls.c — unit tests for the MCP session (src/mcp/): each tool's call, the session's own
 * sandbox, progress, cancellation and concurrency, against a fake manager (mcp_env.h). */
#include "mcp_env.h"

/* ---- each tool ------------------------------------------------------------------------------- */

static void test_execute(void **state)
{
	struct env *e = env_open(true, 0);
	e->g.verdict = SRV_GATE_ALLOW;
	initialize(e, "2025-11-25", false);
	e->m.stdout_text = "42\n\xff"; /* not UTF-8: must arrive repaired, not refused */
	json_t *out = call(e, 1, "code_execute",
			   "{\"language\":\"python\",\"code\":\"print(42)\",\"timeout\":1.5,\"network_enabled\":true,"
			   "\"allowed_domains\":[\"pypi.org\",\"*.pythonhosted.org\"]}",
			   NULL);
	check_wire(out);
	json_t *sc = check_tool_result(e, out, 1, TL_EXECUTE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "status")), "exited");
	assert_int_equal(json_integer_value(json_object_get(sc, "exit_code")), 0);
	assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "42\n\xEF\xBF\xBD");
	assert_true(json_is_null(json_object_get(sc, "sandbox_id")));
	assert_string_equal(e->m.last_language, "python");
	assert_string_equal(e->m.last_code, "print(42)");
	assert_int_equal(e->m.last_timeout_ms, 1500);
	assert_true(e->m.last_network);
	assert_int_equal(e->m.last_n_domains, 2);
	assert_int_equal(e->g.checks, 1);
	assert_string_equal(e->g.last_tool, "code_execute");
	assert_int_equal(e->g.outcomes[SRV_GATE_ALLOWED], 1);
	/* In a persistent sandbox; a failing program is a result with isError. */
	e->m.exit_code = 3;
	out = call(e, 2, "code_execute", "{\"language\":\"shell\",\"code\":\"exit 3\",\"sandbox_id\":\"sb-a\"}", NULL);
	sc = check_tool_result(e, out, 2, TL_EXECUTE, true);
	assert_int_equal(json_integer_value(json_object_get(sc, "exit_code")), 3);
	assert_string_equal(json_string_value(json_object_get(sc, "sandbox_id")), "sb-a");
	assert_int_equal(e->m.last_timeout_ms, 0);
	assert_int_equal(e->m.calls[FK_EXEC], 2);
	/* The audit hook heard of both, with the manager's result. */
	assert_int_equal(e->g.finished[SRV_CALL_OK], 1);
	assert_int_equal(e->g.finished[SRV_CALL_PROGRAM_FAILED], 1);
	assert_true(e->g.last_had_result);
	env_close(e);
}

/* Calls without sandbox_id share the session's own sandbox: made once, by the first of them, through
 * the runner (the gate and the audit hook see a code_create_sandbox), and destroyed with the session. */
static void test_own_sandbox(void **state)
{
	struct env *e = env_open(true, 0);
	e->g.verdict = SRV_GATE_ALLOW;
	initialize(e, "2025-11-25", false);
	json_t *out = call(e, 1, "code_write_file", "{\"path\":\"in.txt\",\"content\":\"x\"}", NULL);
	check_tool_result(e, out, 1, TL_WRITE_FILE, false);
	assert_int_equal(e->m.calls[FK_CREATE], 1);
	assert_string_equal(e->g.last_tool, "code_write_file");
	assert_int_equal(e->g.finished[SRV_CALL_OK], 2); /* the create, then the write */
	out = call(e, 2, "code_execute", "{\"language\":\"shell\",\"code\":\"cat in.txt\"}", NULL);
	json_t *sc = check_tool_result(e, out, 2, TL_EXECUTE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "sandbox_id")), "sb-1");
	assert_string_equal(e->m.last_sandbox, "sb-1");
	out = call(e, 3, "code_read_file", "{\"path\":\"in.txt\"}", NULL);
	check_tool_result(e, out, 3, TL_READ_FILE, false);
	out = call(e, 4, "code_list_files", "{}", NULL);
	check_tool_result(e, out, 4, TL_LIST_FILES, false);
	out = call(e, 5, "code_install_package", "{\"manager\":\"pip\",\"packages\":[\"x\"]}", NULL);
	check_tool_result(e, out, 5, TL_INSTALL_PACKAGE, false);
	assert_int_equal(e->m.calls[FK_CREATE], 1);
	/* Explicit ids keep working; network without an id keeps its throwaway sandbox. */
	out = call(e, 6, "code_execute", "{\"language\":\"shell\",\"code\":\"true\",\"sandbox_id\":\"sb-a\"}", NULL);
	sc = check_tool_result(e, out, 6, TL_EXECUTE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "sandbox_id")), "sb-a");
	out = call(e, 7, "code_execute", "{\"language\":\"shell\",\"code\":\"true\",\"network_enabled\":true}", NULL);
	sc = check_tool_result(e, out, 7, TL_EXECUTE, false);
	assert_true(json_is_null(json_object_get(sc, "sandbox_id")));
	/* Gone (destroyed here; expired would read the same): the failing call says so, the next
	 * one gets a new sandbox. */
	out = call(e, 8, "code_destroy_sandbox", "{\"sandbox_id\":\"sb-1\"}", NULL);
	check_tool_result(e, out, 8, TL_DESTROY_SANDBOX, false);
	out = call(e, 9, "code_list_files", "{}", NULL);
	check_tool_result(e, out, 9, TL_LIST_FILES, false);
	assert_int_equal(e->m.calls[FK_CREATE], 2);
	assert_true(fake_has_sandbox(&e->m, "sb-2"));
	int destroys = e->m.calls[FK_DESTROY];
	mcp_session_free(e->s);
	e->s = NULL;
	assert_int_equal(e->m.calls[FK_DESTROY], destroys + 1);
	assert_false(fake_has_sandbox(&e->m, "sb-2"));
	assert_true(fake_has_sandbox(&e->m, "sb-a"));
	env_close(e);
}

/* The session's sandbox cannot be made: the calls waiting for it fail with the reason, and the
 * next call tries again. */
static void test_own_sandbox_fails(void **state)
{
	struct env *e = env_open(false, 0);
	initialize(e, "2025-11-25", false);
	e->m.fail_errno = EAGAIN;
	json_t *out = call(e, 1, "code_list_files", "{}", NULL);
	check_tool_error(out, 1, "this session's sandbox could not be made: fake failure");
	assert_int_equal(e->m.calls[FK_LIST], 0);
	e->m.fail_errno = 0;
	out = call(e, 2, "code_list_files", "{}", NULL);
	check_tool_result(e, out, 2, TL_LIST_FILES, false);
	assert_int_equal(e->m.calls[FK_LIST], 1);
	env_close(e);
}

static void test_sandbox_tools(void **state)
{
	struct env *e = env_open(false, 0);
	initialize(e, "2025-06-18", false);
	json_t *out =
		call(e, 1, "code_create_sandbox",
		     "{\"profile\":\"untrusted-code-write\",\"language\":\"python\",\"limits\":{\"memory_mb\":256,"
		     "\"cpus\":0.5,\"pids\":64,\"disk_mb\":100,\"timeout\":30}}",
		     NULL);
	json_t *sc = check_tool_result(e, out, 1, TL_CREATE_SANDBOX, false);
	char id[64];
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(sc, "sandbox_id")));
	assert_string_equal(id, "sb-1");
	assert_string_equal(e->m.last_profile, "untrusted-code-write");
	assert_int_equal(e->m.last_limits.memory_bytes, 256u << 20);
	assert_int_equal(e->m.last_limits.milli_cpus, 500);
	assert_int_equal(e->m.last_limits.pids, 64);
	assert_int_equal(e->m.last_limits.disk_bytes, 100u << 20);
	assert_int_equal(e->m.last_limits.timeout_ms, 30000);
	out = call(e, 2, "code_create_sandbox", "{}", NULL);
	check_tool_result(e, out, 2, TL_CREATE_SANDBOX, false);

	out = call(e, 3, "code_write_file",
		   "{\"sandbox_id\":\"sb-1\",\"path\":\"main.py\",\"content\":\"print(1)\\n\"}", NULL);
	sc = check_tool_result(e, out, 3, TL_WRITE_FILE, false);
	assert_int_equal(json_integer_value(json_object_get(sc, "bytes")), 9);
	assert_memory_equal(e->m.last_data, "print(1)\n", 9);
	out = call(e, 4, "code_write_file",
		   "{\"sandbox_id\":\"sb-1\",\"path\":\"bin\",\"content\":\"AAH/\",\"encoding\":\"base64\"}", NULL);
	check_tool_result(e, out, 4, TL_WRITE_FILE, false);
	assert_int_equal(e->m.last_len, 3);
	assert_memory_equal(e->m.last_data, "\x00\x01\xff", 3);

	out = call(e, 5, "code_read_file", "{\"sandbox_id\":\"sb-1\",\"path\":\"main.py\"}", NULL);
	sc = check_tool_result(e, out, 5, TL_READ_FILE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "encoding")), "utf-8");
	assert_string_equal(json_string_value(json_object_get(sc, "content")), "file content\n");
	e->m.file_data = "\x00\x01\xff";
	e->m.file_len = 3;
	out = call(e, 6, "code_read_file", "{\"sandbox_id\":\"sb-1\",\"path\":\"bin\"}", NULL);
	sc = check_tool_result(e, out, 6, TL_READ_FILE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "encoding")), "base64");
	assert_string_equal(json_string_value(json_object_get(sc, "content")), "AAH/");
	assert_int_equal(json_integer_value(json_object_get(sc, "size")), 3);

	out = call(e, 7, "code_list_files", "{\"sandbox_id\":\"sb-1\"}", NULL);
	sc = check_tool_result(e, out, 7, TL_LIST_FILES, false);
	assert_int_equal(json_array_size(json_object_get(sc, "entries")), 2);
	assert_string_equal(
		json_string_value(json_object_get(json_array_get(json_object_get(sc, "entries"), 1), "type")),
		"directory");

	out = call(e, 8, "code_install_package",
		   "{\"sandbox_id\":\"sb-1\",\"manager\":\"pip\",\"packages\":[\"numpy\","
		   "\"requests==2.32.3\"]}",
		   NULL);
	check_tool_result(e, out, 8, TL_INSTALL_PACKAGE, false);
	assert_string_equal(e->m.last_manager, "pip");
	assert_int_equal(e->m.last_n_packages, 2);

	out = call(e, 9, "code_destroy_sandbox", "{\"sandbox_id\":\"sb-1\"}", NULL);
	sc = check_tool_result(e, out, 9, TL_DESTROY_SANDBOX, false);
	assert_string_equal(json_string_value(json_object_get(sc, "sandbox_id")), "sb-1");
	/* A destroyed sandbox is unknown from now on: a tool error, and the server keeps serving. */
	out = call(e, 10, "code_read_file", "{\"sandbox_id\":\"sb-1\",\"path\":\"main.py\"}", NULL);
	check_tool_error(out, 10, "no sandbox \"sb-1\"");
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}");
	assert_non_null(result_of(out, 11));
	env_close(e);
}

/* Failures of the request are tool errors the model can act on; the server's own are -32603. */
static void test_request_failures(void **state)
{
	struct env *e = env_open(false, 0);
	initialize(e, "2025-11-25", false);
	json_t *out =
		call(e, 1, "code_execute", "{\"language\":\"python\",\"code\":\"1\",\"sandbox_id\":\"nope\"}", NULL);
	check_tool_error(out, 1, "no sandbox \"nope\"");
	out = call(e, 2, "code_read_file", "{\"sandbox_id\":\"sb-a\",\"path\":\"../../etc/passwd\"}", NULL);
	check_tool_error(out, 2, "escapes the workspace");
	out = call(e, 3, "code_write_file", "{\"sandbox_id\":\"sb-a\",\"path\":\"/etc/x\",\"content\":\"\"}", NULL);
	check_tool_error(out, 3, "escapes the workspace");
	out = call(e, 4, "code_create_sandbox", "{\"profile\":\"no-such-profile\"}", NULL);
	check_tool_error(out, 4, "unknown profile");
	e->m.fail_errno = ENOMEM;
	out = call(e, 5, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", NULL);
	assert_int_equal(error_code(out, 5), JR_INTERNAL_ERROR);
	e->m.fail_errno = EIO;
	out = call(e, 6, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", NULL);
	assert_int_equal(error_code(out, 6), JR_INTERNAL_ERROR);
	assert_int_equal(e->m.total_calls, 0); /* every one failed at the start call */
	env_close(e);
}

/* ---- progress, cancellation, concurrency ---------------------------------------------------- */

static void test_progress(void **state)
{
	struct env *e = env_open(false, 0);
	e->m.async = true;
	initialize(e, "2025-11-25", false);
	json_t *out = call(e, 1, "code_execute", "{\"language\":\"python\",\"code\":\"print('hello w\\u00f6rld')\"}",
			   "{\"progressToken\":\"tok\"}");
	assert_int_equal(json_array_size(out), 0); /* running: nothing to say yet */
	struct srv_op *op = fake_op(&e->m, 0);
	assert_non_null(op);
	fake_output(op, SRV_STDOUT, "hello w\xc3", 8); /* the chunk cuts "ö" in half */
	fake_output(op, SRV_STDOUT, "\xb6rld\n", 5);
	fake_output(op, SRV_STDERR, "warn\n", 5);
	out = poll_session(e);
	check_wire(out);
	assert_int_equal(count_method(out, "notifications/progress"), 3);
	char text[64] = "";
	double last = 0;
	size_t i;
	json_t *m;
	json_array_foreach(out, i, m) {
		json_t *p = json_object_get(m, "params");
		assert_string_equal(json_string_value(json_object_get(p, "progressToken")), "tok");
		double v = json_number_value(json_object_get(p, "progress"));
		assert_true(v > last); /* the spec: progress increases with every notification */
		last = v;
		const char *stream = json_string_value(json_object_get(json_object_get(p, "_meta"), "airlock/stream"));
		if (strcmp(stream, "stdout") == 0)
			strncat(text, json_string_value(json_object_get(p, "message")),
				sizeof(text) - strlen(text) - 1);
	}
	assert_string_equal(text, "hello w\xc3\xb6rld\n");
	assert_null(response(out, 1));
	fake_finish(op, 0, "hello w\xc3\xb6rld\n");
	out = poll_session(e);
	check_tool_result(e, out, 1, TL_EXECUTE, false);
	assert_int_equal(count_method(out, "notifications/progress"), 0);
	assert_int_equal(mcp_session_inflight(e->s), 0);
	assert_int_equal(e->m.releases, 1);

	/* Without a progress token, output is not streamed at all. */
	out = call(e, 2, "code_execute", "{\"language\":\"python\",\"code\":\"1\"}", NULL);
	op = fake_op(&e->m, 0);
	fake_output(op, SRV_STDOUT, "x\n", 2);
	out = poll_session(e);
	assert_int_equal(json_array_size(out), 0);
	fake_finish(op, 0, "x\n");
	out = poll_session(e);
	check_tool_result(e, out, 2, TL_EXECUTE, false);
	env_close(e);
}

static void test_cancellation(void **state)
{
	struct env *e = env_open(false, 0);
	e->m.async = true;
	initialize(e, "2025-11-25", false);
	call(e, 5, "code_execute", "{\"language\":\"shell\",\"code\":\"sleep 100\"}", "{\"progressToken\":7}");
	assert_int_equal(mcp_session_inflight(e->s), 1);
	json_t *out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":5,"
			      "\"reason\":\"user\"}}");
	assert_int_equal(e->m.cancels, 1);
	assert_null(response(out, 5)); /* the spec: no response for a cancelled request */
	assert_int_equal(count_method(out, "notifications/progress"), 0);
	assert_int_equal(mcp_session_inflight(e->s), 0);
	/* A second cancel, a cancel of an unknown or finished id, a malformed one: ignored. */
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":5}}");
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"5\"}}");
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{}}");
	out = feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}");
	assert_int_equal(json_array_size(out), 0);
	assert_int_equal(e->m.cancels, 1);

	/* A manager that takes its time: the call stays in flight (its output is no longer streamed)
	 * until on_done, which still produces no response. */
	e->m.cancel_finishes = false;
	call(e, 6, "code_execute", "{\"language\":\"shell\",\"code\":\"sleep 100\"}", "{\"progressToken\":8}");
	struct srv_op *op = fake_op(&e->m, 0);
	feed(e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":6}}");
	assert_int_equal(e->m.cancels, 2);
	assert_int_equal(mcp_session_inflight(e->s), 1);
	fake_output(op, SRV_STDOUT, "late\n", 5);
	out = poll_session(e);
	assert_int_equal(json_array_size(out), 0);
	fake_finish(op, 137, "");
	out = poll_session(e);
	assert_null(response(out, 6));
	assert_int_equal(mcp_session_inflight(e->s), 0);
	assert_int_equal(e->m.live_ops, 0);
	/* The id is free again. */
	out = call(e, 6, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", NULL);
	check_tool_result(e, out, 6, TL_LIST_FILES, false);
	env_close(e);
}

static void test_inflight(void **state)
{
	struct env *e = env_open(false, 0);
	e->m.async = true;
	initialize(e, "2025-11-25", false);
	for (int i = 1; i <= 3; i++)
		assert_int_equal(
			json_array_size(call(e, i, "code_execute", "{\"language\":\"python\",\"code\":\"1\"}", NULL)),
			0);
	assert_int_equal(mcp_session_inflight(e->s), 3);
	/* An id still in flight cannot be reused. */
	json_t *out = call(e, 2, "code_execute", "{\"language\":\"python\",\"code\":\"1\"}", NULL);
	assert_int_equal(error_code(out, 2), JR_INVALID_REQUEST);
	/* Synchronous tools answer while the others run. */
	out = call(e, 4, "code_list_files", "{\"sandbox_id\":\"sb-a\"}", NULL);
	check_tool_result(e, out, 4, TL_LIST_FILES, false);
	/* Finish out of order (fake_op 0 is the newest: id 3). */
	fake_finish(fake_op(&e->m, 2), 0, "one\n");
	fake_finish(fake_op(&e->m, 0), 0, "three\n");
	out = poll_session(e);
	assert_int_equal(json_array_size(out), 2);
	json_t *sc = check_tool_result(e, out, 1, TL_EXECUTE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "one\n");
	sc = check_tool_result(e, out, 3, TL_EXECUTE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "three\n");
	fake_finish(fake_op(&e->m, 0), 0, "two\n");
	out = poll_session(e);
	sc = check_tool_result(e, out, 2, TL_EXECUTE, false);
	assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "two\n");
	assert_int_equal(mcp_session_inflight(e->s), 0);
	env_close(e);
}

static void test_inflight_limit(void **state)
{
	struct env *e = env_open(false, 0);
	e->m.async = true;
	initialize(e, "2025-11-25", false);
	for (int i = 1; i <= 32; i++)
		call(e, i, "code_execute", "{\"language\":\"python\",\"code\":\"1\"}", NULL);
	json_t *out = call(e, 33, "code_execute", "{\"language\":\"python\",\"code\":\"1\"}", NULL);
	check_tool_error(out, 33, "too many calls");
	assert_int_equal(e->m.calls[FK_EXEC], 32);
	/* The session goes away with 32 operations running: each is cancelled and released. */
	env_close(e);
}

/* The manager's callbacks from another thread; the session wakes through its fd. */
struct runner {
	struct srv_op *op;
};

static void *run_elsewhere(void *arg)
{
	struct runner *r = arg;
	for (int i = 0; i < 100; i++)
		fake_output(r->op, SRV_STDOUT, "0123456789", 10);
	fake_finish(r->op, 0, "done\n");
	return NULL;
}

static void test_threads(void **state)
{
	struct env *e = env_open(false, 0);
	e->m.async = true;
	initialize(e, "2025-11-25", false);
	call(e, 1, "code_execute", "{\"language\":\"python\",\"code\":\"1\"}", "{\"progressToken\":\"t\"}");
	struct runner r = {.op = fake_op(&e->m, 0)};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, run_elsewhere, &r), 0);
	size_t progress = 0;
	json_t *resp = NULL;
	json_t *all = json_array();
	while (!resp) {
		struct pollfd pfd = {.fd = mcp_session_fd(e->s), .events = POLLIN};
		assert_true(poll(&pfd, 1, 10000) == 1);
		json_t *out = poll_session(e);
		progress += count_method(out, "notifications/progress");
		json_array_extend(all, out);
		resp = response(all, 1);
	}
	pthread_join(th, NULL);
	assert_int_equal(progress, 100);
	check_tool_result(e, all, 1, TL_EXECUTE, false);
	json_decref(all);
	env_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_execute),		 cmocka_unit_test(test_sandbox_tools),
		cmocka_unit_test(test_own_sandbox),	 cmocka_unit_test(test_own_sandbox_fails),
		cmocka_unit_test(test_request_failures), cmocka_unit_test(test_progress),
		cmocka_unit_test(test_cancellation),	 cmocka_unit_test(test_inflight),
		cmocka_unit_test(test_inflight_limit),	 cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
