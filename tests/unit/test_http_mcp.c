/* test_http_mcp.c — the HTTP front end's approvals, principals and MCP (src/http/) over real loopback sockets: a tiny HTTP/1.1 client drives
 * http_serve, running in a thread, against the fake manager and gate of http_fake.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "http/http.h"
#include "http/hx.h"
#include "http_fake.h"
#include "service/approval.h"
#include "http_harness.h"

static void *bg_request(void *arg)
{
	struct bg *b = arg;
	b->r = request_as(b->e,
			  b->via_unix ? NULL
			  : b->token  ? b->token
				      : CLIENT_TOKEN,
			  b->via_unix, "POST", b->path, NULL, b->body);
	return NULL;
}

/* The first pending approval, as the reviewer sees it; *digest gets what an approval must name. */
static uint64_t pending_id(struct env *e, char digest[80])
{
	for (int i = 0; i < 500; i++) {
		struct resp r = request_as(e, REVIEWER_TOKEN, false, "GET", "/v1/approvals", NULL, NULL);
		assert_int_equal(r.status, 200);
		json_t *j = body_json(&r);
		json_t *first = json_array_get(json_object_get(j, "approvals"), 0);
		uint64_t id = (uint64_t)json_integer_value(json_object_get(first, "id"));
		if (first) {
			assert_string_equal(json_string_value(json_object_get(first, "tool")), "code_execute");
			assert_string_equal(json_string_value(json_object_get(first, "reason")), "HIGH: network");
			assert_string_equal(json_string_value(json_object_get(first, "principal")), "token:agent");
			/* The request exactly as it will run, and its digest. */
			assert_non_null(json_object_get(json_object_get(first, "request"), "code"));
			const char *d = json_string_value(json_object_get(first, "digest"));
			assert_non_null(d);
			assert_int_equal(strlen(d), 71);
			snprintf(digest, 80, "%s", d);
		}
		json_decref(j);
		resp_clear(&r);
		if (id)
			return id;
		usleep(10000);
	}
	fail_msg("no pending approval");
	return 0;
}

/* POST /v1/approvals/{id} with body, as the reviewer. */
static struct resp decide(struct env *e, uint64_t id, const char *body)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/approvals/%llu", (unsigned long long)id);
	return request_as(e, REVIEWER_TOKEN, false, "POST", path, NULL, body);
}

/* decide, and the answer's status is status. */
static void expect_decide(struct env *e, uint64_t id, const char *body, int status)
{
	struct resp r = decide(e, id, body);
	assert_int_equal(r.status, status);
	resp_clear(&r);
}

/* GET /metrics has each of the n lines (each with its newline). */
static void expect_metrics(struct env *e, const char *const *lines, size_t n)
{
	struct resp r = request(e, "GET", "/metrics", NULL, NULL);
	assert_int_equal(r.status, 200);
	for (size_t i = 0; i < n; i++)
		if (!strstr(r.body, lines[i]))
			fail_msg("/metrics has no line \"%s\" in:\n%s", lines[i], r.body);
	resp_clear(&r);
}

static void test_approvals(void **state)
{
	struct env *e = env_open(&(struct env_opts){.gate = true, .queue = true});
	e->g.verdict = SRV_GATE_ASK;
	e->g.reason = "HIGH: network";
	e->g.timeout_ms = 10000;
	struct bg b = {.e = e, .path = "/v1/sandboxes/sb-a/exec", .body = "{\"command\":\"curl example.com\"}"};

	/* Granted: the call runs. */
	assert_int_equal(pthread_create(&b.th, NULL, bg_request, &b), 0);
	char digest[80], body[160];
	uint64_t id = pending_id(e, digest);
	assert_int_equal(hf_get(&e->m.calls[FK_EXEC]), 0); /* not before the decision */
	char path[64];
	snprintf(path, sizeof(path), "/v1/approvals/%llu", (unsigned long long)id);
	/* The client sees its own pending call, and cannot decide it (nor any other). */
	struct resp r = request(e, "GET", "/v1/approvals", NULL, NULL);
	assert_non_null(strstr(r.body, digest));
	resp_clear(&r);
	expect_error(e, "POST", path, NULL, "{\"approve\":true}", 403, "only approvers");
	/* The reviewer runs nothing. */
	e->token = REVIEWER_TOKEN;
	expect_error(e, "POST", "/v1/sandboxes", NULL, "{}", 403, "runs nothing");
	e->token = CLIENT_TOKEN;
	expect_decide(e, id, "{\"approve\":\"yes\"}", 400);
	/* An approval names the request it approves: none, or another's digest, approves nothing. */
	expect_decide(e, id, "{\"approve\":true}", 409);
	expect_decide(e, id,
		      "{\"approve\":true,\"digest\":\"sha256:"
		      "0000000000000000000000000000000000000000000000000000000000000000\"}",
		      409);
	assert_int_equal(hf_get(&e->m.calls[FK_EXEC]), 0);
	snprintf(body, sizeof(body), "{\"approve\":true,\"digest\":\"%s\"}", digest);
	expect_decide(e, id, body, 200);
	pthread_join(b.th, NULL);
	assert_int_equal(b.r.status, 200);
	assert_non_null(strstr(b.r.body, "\"result\""));
	resp_clear(&b.r);
	assert_int_equal(hf_get(&e->m.calls[FK_EXEC]), 1);
	assert_int_equal(hf_get(&e->g.outcomes[SRV_GATE_APPROVED]), 1);
	expect_decide(e, id, body, 404); /* decided once */

	/* Declined: never reaches the manager. The stream started when the reviewer was asked
	 * (its first line says so), and ends with the denial: a 403 error line, no result. */
	assert_int_equal(pthread_create(&b.th, NULL, bg_request, &b), 0);
	id = pending_id(e, digest);
	expect_decide(e, id, "{\"approve\":false}", 200);
	pthread_join(b.th, NULL);
	assert_int_equal(b.r.status, 200);
	assert_non_null(strstr(b.r.body, "{\"type\":\"approval\",\"status\":\"pending\""));
	assert_non_null(strstr(b.r.body, "\"status\":\"denied\""));
	assert_non_null(strstr(b.r.body, "\"status\":403,\"approval\":\"declined\""));
	assert_null(strstr(b.r.body, "\"result\""));
	resp_clear(&b.r);
	assert_int_equal(hf_get(&e->m.calls[FK_EXEC]), 1);

	/* Silence past the timeout: 403, never ran, and the queue is empty again. */
	e->g.timeout_ms = 300;
	b.path = "/v1/sandboxes";
	b.body = "{}";
	b.r = request(e, "POST", b.path, NULL, b.body);
	assert_int_equal(b.r.status, 403);
	assert_non_null(strstr(b.r.body, "timed-out"));
	resp_clear(&b.r);
	assert_int_equal(hf_get(&e->m.calls[FK_CREATE]), 0);
	assert_int_equal(apq_pending(e->q), 0);
	assert_int_equal(hf_get(&e->g.outcomes[SRV_GATE_TIMED_OUT]), 1);
	assert_int_equal(hf_get(&e->g.finished[SRV_CALL_DENIED]), 2);
	e->token = REVIEWER_TOKEN;
	expect_error(e, "POST", "/v1/approvals/abc", NULL, "{\"approve\":true}", 400, "number");
	expect_error(e, "POST", "/v1/approvals/77", NULL, "{\"approve\":true}", 404, NULL);
	e->token = CLIENT_TOKEN;

	/* The rules deny: 403 with the reason. */
	e->g.verdict = SRV_GATE_DENY;
	e->g.reason = "CRITICAL: rm -rf";
	expect_error(e, "DELETE", "/v1/sandboxes/sb-a", NULL, NULL, 403, "CRITICAL: rm -rf");
	assert_int_equal(hf_get(&e->m.calls[FK_DESTROY]), 0);

	/* The metrics saw all of it. */
	static const char *const want[] = {
		"airlock_approvals_total{outcome=\"approved\"} 1\n",
		"airlock_approvals_total{outcome=\"declined\"} 1\n",
		"airlock_approvals_total{outcome=\"timed-out\"} 1\n",
		"airlock_approvals_total{outcome=\"denied\"} 1\n",
		"airlock_execs_total{status=\"exited\"} 1\n",
		"airlock_execs_total{status=\"denied\"} 1\n",
		"airlock_exec_duration_seconds_bucket{le=\"0.25\"} 1\n",
		"airlock_exec_duration_seconds_count 1\n",
		"airlock_sandboxes_live 3\n",
		"airlock_sandboxes_pooled 2\n",
		"airlock_proxy_decisions_total{decision=\"denied\"} 0\n",
		"# TYPE airlock_exec_duration_seconds histogram\n",
	};
	expect_metrics(e, want, sizeof(want) / sizeof(want[0]));
	env_close(e);
}

/* The Unix socket: the peer's uid is the principal; it never approves its own call, and another
 * principal's client does not even see it waiting. */
static void test_unix_principal(void **state)
{
	struct env *e = env_open(&(struct env_opts){.gate = true, .queue = true});
	e->g.verdict = SRV_GATE_ASK;
	e->g.reason = "HIGH: network";
	e->g.timeout_ms = 10000;
	struct stat st;
	assert_int_equal(stat(e->sock, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	struct bg b = {.e = e,
		       .path = "/v1/sandboxes/sb-a/exec",
		       .body = "{\"command\":\"curl example.com\"}",
		       .via_unix = true};
	assert_int_equal(pthread_create(&b.th, NULL, bg_request, &b), 0);
	char digest[80] = "", body[160], who[32];
	uint64_t id;
	/* pending_id asserts the principal "token:agent": look for ours instead. */
	for (id = 0; !id;) {
		struct resp r = request_as(e, REVIEWER_TOKEN, false, "GET", "/v1/approvals", NULL, NULL);
		json_t *j = body_json(&r);
		json_t *first = json_array_get(json_object_get(j, "approvals"), 0);
		id = (uint64_t)json_integer_value(json_object_get(first, "id"));
		snprintf(who, sizeof(who), "uid:%u", (unsigned)getuid());
		if (first) {
			assert_string_equal(json_string_value(json_object_get(first, "principal")), who);
			snprintf(digest, sizeof(digest), "%s", json_string_value(json_object_get(first, "digest")));
		}
		json_decref(j);
		resp_clear(&r);
		usleep(10000);
	}
	/* Another client does not see it. */
	struct resp r = request(e, "GET", "/v1/approvals", NULL, NULL);
	assert_null(strstr(r.body, digest));
	resp_clear(&r);
	/* The caller itself (root is an approver by default) cannot approve it. */
	snprintf(body, sizeof(body), "{\"approve\":true,\"digest\":\"%s\"}", digest);
	char path[64];
	snprintf(path, sizeof(path), "/v1/approvals/%llu", (unsigned long long)id);
	r = request_as(e, NULL, true, "POST", path, NULL, body);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(r.body, getuid() == 0 ? "own call" : "only approvers"));
	resp_clear(&r);
	assert_int_equal(hf_get(&e->m.calls[FK_EXEC]), 0);
	expect_decide(e, id, body, 200);
	pthread_join(b.th, NULL);
	assert_int_equal(b.r.status, 200);
	resp_clear(&b.r);
	assert_int_equal(hf_get(&e->m.calls[FK_EXEC]), 1);
	env_close(e);
}

/* Without an approval queue an ASK is a denial; the server's stop abandons a waiting approval. */
static void test_approval_unavailable(void **state)
{
	struct env *e = env_open(&(struct env_opts){.gate = true});
	e->g.verdict = SRV_GATE_ASK;
	e->g.reason = "HIGH";
	expect_error(e, "POST", "/v1/sandboxes/sb-a/exec", NULL, "{\"command\":\"id\"}", 403, "no approval queue");
	assert_int_equal(hf_get(&e->m.total_calls), 0);
	assert_int_equal(hf_get(&e->g.outcomes[SRV_GATE_UNAVAILABLE]), 1);
	env_close(e);

	e = env_open(&(struct env_opts){.gate = true, .queue = true});
	e->g.verdict = SRV_GATE_ASK;
	e->g.timeout_ms = 60000;
	struct bg b = {.e = e, .path = "/v1/sandboxes", .body = "{}"};
	assert_int_equal(pthread_create(&b.th, NULL, bg_request, &b), 0);
	while (apq_pending(e->q) == 0)
		usleep(10000);
	struct apq *q = e->q;
	int abandoned_before = hf_get(&e->g.outcomes[SRV_GATE_ABANDONED]);
	assert_int_equal(write(e->stop[1], "x", 1), 1);
	pthread_join(e->th, NULL);
	pthread_join(b.th, NULL);
	assert_int_equal(b.r.status, 403);
	resp_clear(&b.r);
	assert_int_equal(apq_pending(q), 0);
	assert_int_equal(hf_get(&e->g.outcomes[SRV_GATE_ABANDONED]), abandoned_before + 1);
	assert_int_equal(hf_get(&e->m.total_calls), 0);
	/* env_close without the stop it already had. */
	assert_int_equal(pipe2(e->stop, O_CLOEXEC), 0);
	assert_int_equal(pthread_create(&e->th, NULL, serve_thread, e), 0);
	env_close(e);
}

/* ---- MCP over HTTP --------------------------------------------------------------------------- */

#define ACCEPT_BOTH "Accept: application/json, text/event-stream\r\n"

static struct resp mcp(struct env *e, const char *sid, const char *extra, const char *body)
{
	char headers[512];
	snprintf(headers, sizeof(headers), "Content-Type: application/json\r\n" ACCEPT_BOTH "%s%s%s%s",
		 sid ? "Mcp-Session-Id: " : "", sid ? sid : "", sid ? "\r\n" : "", extra ? extra : "");
	return request(e, "POST", "/mcp", headers, body);
}

static void test_mcp(void **state)
{
	struct env *e = env_open(&(struct env_opts){.gate = true});
	/* initialize: a session id comes back with the result. */
	struct resp r = mcp(e, NULL, NULL,
			    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
			    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	assert_int_equal(r.status, 200);
	assert_string_equal(header(&r, "Content-Type"), "application/json");
	char sid[64];
	assert_non_null(header(&r, "Mcp-Session-Id"));
	snprintf(sid, sizeof(sid), "%s", header(&r, "Mcp-Session-Id"));
	assert_int_equal(strlen(sid), 32);
	json_t *j = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "result"), "protocolVersion")),
			    "2025-11-25");
	json_decref(j);
	resp_clear(&r);

	r = mcp(e, sid, "MCP-Protocol-Version: 2025-11-25\r\n",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	assert_int_equal(r.status, 202);
	assert_int_equal(r.len, 0);
	resp_clear(&r);

	r = mcp(e, sid, NULL, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_true(json_array_size(json_object_get(json_object_get(j, "result"), "tools")) >= 6);
	json_decref(j);
	resp_clear(&r);

	/* Errors of the transport. */
	r = mcp(e, NULL, NULL, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	assert_int_equal(r.status, 400);
	resp_clear(&r);
	r = mcp(e, "0123456789abcdef0123456789abcdef", NULL,
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	assert_int_equal(r.status, 404);
	resp_clear(&r);
	r = mcp(e, sid, "MCP-Protocol-Version: 1999-01-01\r\n", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	assert_int_equal(r.status, 400);
	resp_clear(&r);
	r = mcp(e, sid, "MCP-Protocol-Version: 2025-06-18\r\n", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	assert_int_equal(r.status, 400); /* not this session's revision */
	resp_clear(&r);
	r = mcp(e, sid, NULL, "{not json");
	assert_int_equal(r.status, 400);
	j = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "error"), "code")), -32700);
	json_decref(j);
	resp_clear(&r);

	/* tools/call with a progress token: an SSE stream, progress first, then the response. */
	e->m.async = true;
	struct bg b = {.e = e};
	int fd = send_req(e, "POST", "/mcp", NULL, NULL, 0);
	close(fd); /* (a connection that sends nothing is harmless) */
	char headers[256];
	snprintf(headers, sizeof(headers), "Content-Type: application/json\r\n" ACCEPT_BOTH "Mcp-Session-Id: %s\r\n",
		 sid);
	const char *call = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{"
			   "\"name\":\"code_execute\",\"arguments\":{\"language\":\"python\",\"code\":\"print(2)\"},"
			   "\"_meta\":{\"progressToken\":\"p1\"}}}";
	fd = send_req(e, "POST", "/mcp", headers, call, strlen(call));
	wait_for(&e->m.calls[FK_EXEC], 1);
	pthread_mutex_lock(&hf_mu);
	fake_output(fake_op(&e->m, 0), SRV_STDOUT, "partial\n", 8);
	pthread_mutex_unlock(&hf_mu);
	char *raw = NULL;
	size_t len = 0;
	read_until(fd, &raw, &len, "notifications/progress");
	assert_non_null(strstr(raw, "text/event-stream"));
	assert_null(strstr(raw, "\"id\":4")); /* not answered yet */
	pthread_mutex_lock(&hf_mu);
	fake_finish(fake_op(&e->m, 0), 0, "partial\n");
	pthread_mutex_unlock(&hf_mu);
	finish_resp(fd, raw, len, &b.r);
	char *progress =
		strstr(b.r.body, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"");
	char *answer = strstr(b.r.body, "\"id\":4");
	assert_non_null(progress);
	assert_non_null(answer);
	assert_true(progress < answer);
	assert_non_null(strstr(progress, "partial"));
	resp_clear(&b.r);

	/* DELETE ends the session; it is 404 from then on. */
	r = request(e, "DELETE", "/mcp", headers, NULL);
	assert_int_equal(r.status, 204);
	resp_clear(&r);
	r = mcp(e, sid, NULL, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}");
	assert_int_equal(r.status, 404);
	resp_clear(&r);
	r = request(e, "DELETE", "/mcp", headers, NULL);
	assert_int_equal(r.status, 404);
	resp_clear(&r);
	r = request(e, "DELETE", "/mcp", NULL, NULL);
	assert_int_equal(r.status, 400);
	resp_clear(&r);

	/* The MCP call went through the same gate and the same metrics, after the session's own
	 * sandbox was made for it (a code_create_sandbox of the session's principal); DELETE destroyed
	 * that sandbox once the session's last reference went (the pump may hold one a moment after
	 * the 204: wait for it, as a client would see it gone). */
	assert_int_equal(hf_get(&e->g.finished[SRV_CALL_OK]), 2);
	assert_int_equal(hf_get(&e->m.calls[FK_CREATE]), 1);
	wait_for(&e->m.calls[FK_DESTROY], 1);
	static const char *const want[] = {
		"airlock_execs_total{status=\"exited\"} 1\n",
		"airlock_mcp_sessions_opened_total 1\n",
		"airlock_mcp_sessions 0\n",
	};
	expect_metrics(e, want, sizeof(want) / sizeof(want[0]));
	env_close(e);
}

/* A session whose call is still running when the server stops: cancelled and released. */
static void test_mcp_stop(void **state)
{
	struct env *e = env_open(&(struct env_opts){0});
	struct resp r = mcp(e, NULL, NULL,
			    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
			    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", header(&r, "Mcp-Session-Id"));
	resp_clear(&r);
	e->m.async = true;
	char headers[256];
	snprintf(headers, sizeof(headers), "Accept: application/json\r\nMcp-Session-Id: %s\r\n", sid);
	const char *call = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
			   "\"name\":\"code_execute\",\"arguments\":{\"language\":\"shell\",\"code\":\"sleep 99\"}}}";
	int fd = send_req(e, "POST", "/mcp", headers, call, strlen(call));
	wait_for(&e->m.calls[FK_EXEC], 1);
	assert_int_equal(write(e->stop[1], "x", 1), 1);
	pthread_join(e->th, NULL);
	char *raw = NULL;
	size_t len = 0;
	read_all(fd, &raw, &len);
	free(raw);
	close(fd);
	assert_int_equal(hf_get(&e->m.cancels), 1);
	assert_int_equal(hf_get(&e->m.releases), 1);
	assert_int_equal(hf_get(&e->m.live_ops), 0);
	/* The call ran in the session's own sandbox, which the stop destroyed with the session. */
	assert_int_equal(hf_get(&e->m.calls[FK_CREATE]), 1);
	assert_int_equal(hf_get(&e->m.calls[FK_DESTROY]), 1);
	assert_int_equal(pipe2(e->stop, O_CLOEXEC), 0);
	assert_int_equal(pthread_create(&e->th, NULL, serve_thread, e), 0);
	env_close(e);
}

/* The unescaper libmicrohttpd calls: %XX decoded in place, %00 as the overlong C0 80, broken
 * escapes kept as they are. */
static void wait_done(void *cookie, enum srv_gate_outcome o, enum srv_gate_by by, const char *who)
{
	*(int *)cookie += 1;
}

struct waiter {
	struct apq *q;
	uint64_t seen, got;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	w->got = apq_wait(w->q, w->seen, 5000);
	return NULL;
}

static void test_apq_wait(void **state)
{
	struct apq *q;
	assert_int_equal(apq_new(&q), 0);
	uint64_t g0 = apq_generation(q);
	assert_int_equal(apq_wait(q, g0, 30), g0); /* nothing changed: back after the time */
	/* A waiter wakes when a call is asked, not after its 5 s. */
	struct waiter w = {.q = q, .seen = g0};
	pthread_t th;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	usleep(20000);
	int done = 0;
	uint64_t id;
	struct srv_question qn = {.tool = "code_execute", .reason = "r", .timeout_ms = 1000, .principal = "a"};
	assert_int_equal(apq_ask(q, &qn, wait_done, &done, &id), 0);
	pthread_join(th, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(w.got > g0);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	/* A decision changes it again; a change already seen returns at once. */
	uint64_t g1 = apq_generation(q);
	apq_cancel(q, id, SRV_GATE_TIMED_OUT);
	assert_int_equal(done, 1);
	assert_true(apq_wait(q, g1, 5000) > g1);
	apq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_approvals),      cmocka_unit_test(test_approval_unavailable),
		cmocka_unit_test(test_unix_principal), cmocka_unit_test(test_mcp),
		cmocka_unit_test(test_mcp_stop),       cmocka_unit_test(test_apq_wait),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
