/* test_http.c — the HTTP front end (src/http/) over real loopback sockets: a tiny HTTP/1.1 client drives
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

static void test_health_and_errors(void **state)
{
	struct env *e = env_open(&(struct env_opts){.max_body = 32});
	struct resp r = request(e, "GET", "/v1/health", NULL, NULL);
	assert_int_equal(r.status, 200);
	json_t *j = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
	assert_string_equal(json_string_value(json_object_get(j, "version")), "9.9.9");
	json_decref(j);
	resp_clear(&r);

	expect_error(e, "GET", "/nope", NULL, NULL, 404, "no such resource");
	expect_error(e, "GET", "/v1/sandboxes", NULL, NULL, 501, "cannot list sandboxes"); /* the fake has no list */
	expect_error(e, "GET", "/v1/sandboxes/sb-a/nothing", NULL, NULL, 404, NULL);
	r = request(e, "PUT", "/v1/health", NULL, NULL);
	assert_int_equal(r.status, 405);
	assert_string_equal(header(&r, "Allow"), "GET");
	resp_clear(&r);
	r = request(e, "GET", "/mcp", NULL, NULL);
	assert_int_equal(r.status, 405);
	assert_string_equal(header(&r, "Allow"), "POST, DELETE");
	resp_clear(&r);
	expect_error(e, "POST", "/v1/sandboxes", NULL, "{bad", 400, "bad JSON");
	expect_error(e, "POST", "/v1/sandboxes", NULL, "[1]", 400, "JSON object");
	expect_error(e, "POST", "/v1/sandboxes", NULL, "{\"a\":1,\"a\":2}", 400, "bad JSON");
	expect_error(e, "POST", "/v1/sandboxes", NULL, "{\"bogus\":1}", 400, "invalid request");
	/* 413 from the declared length, before the body is read. */
	expect_error(e, "POST", "/v1/sandboxes", NULL, "{\"profile\":\"01234567890123456789012345678901234\"}", 413,
		     "limit");
	/* A body on a route that takes none is over its limit of 0. */
	expect_error(e, "GET", "/v1/health", NULL, "x", 413, NULL);
	/* A decoded path that is not UTF-8, or holds %00: 400 before any handler (never a 500, never
	 * a C string cut at the NUL: the manager is not called, see total_calls below). */
	expect_error(e, "GET", "/v1/sandboxes/sb-a/files/a%ff%fe", NULL, NULL, 400, "UTF-8");
	expect_error(e, "PUT", "/v1/sandboxes/sb-a/files/config.py%00.txt", NULL, "x", 400, "%00");
	expect_error(e, "GET", "/v1/sandboxes/sb-a/files?path=%ff", NULL, NULL, 400, "UTF-8");
	expect_error(e, "GET", "/v1/sandboxes/sb-a/files?path=a%00b", NULL, NULL, 400, "%00");
	assert_int_equal(hf_get(&e->m.total_calls), 0);
	env_close(e);
}

static void test_sandbox_routes(void **state)
{
	struct env *e = env_open(&(struct env_opts){.gate = true});
	struct resp r = request(e, "POST", "/v1/sandboxes", "Content-Type: application/json\r\n",
				"{\"profile\":\"default\",\"language\":\"python\",\"network_enabled\":true,"
				"\"allowed_domains\":[\"pypi.org\"],\"limits\":{\"memory_mb\":256,\"timeout\":5}}");
	assert_int_equal(r.status, 201);
	json_t *j = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(j, "id")), "sb-1");
	json_decref(j);
	resp_clear(&r);
	assert_string_equal(e->m.last_profile, "default");
	assert_true(e->m.last_network);
	assert_int_equal(e->m.last_n_domains, 1);
	assert_int_equal(e->m.last_limits.memory_bytes, 256u << 20);
	assert_int_equal(e->m.last_limits.timeout_ms, 5000);
	assert_string_equal(e->g.last_tool, "code_create_sandbox");

	/* Unknown profile: the manager's EINVAL is the client's 400. */
	expect_error(e, "POST", "/v1/sandboxes", NULL, "{\"profile\":\"no-such-profile\"}", 400, "unknown profile");

	/* Files. */
	r = request(e, "PUT", "/v1/sandboxes/sb-1/files/dir/a.txt", NULL, "hello");
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "bytes")), 5);
	assert_string_equal(json_string_value(json_object_get(j, "path")), "dir/a.txt");
	json_decref(j);
	resp_clear(&r);
	assert_string_equal(e->m.last_path, "dir/a.txt");
	assert_int_equal(e->m.last_len, 5);
	assert_memory_equal(e->m.last_data, "hello", 5);
	assert_string_equal(e->g.last_tool, "code_write_file");

	/* Binary content passes as raw bytes. */
	int fd = send_req(e, "PUT", "/v1/sandboxes/sb-1/files/bin", NULL, "\x00\xff\x01", 3);
	finish_resp(fd, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	resp_clear(&r);
	assert_int_equal(e->m.last_len, 3);
	assert_memory_equal(e->m.last_data, "\x00\xff\x01", 3);

	r = request(e, "GET", "/v1/sandboxes/sb-1/files/dir/a.txt", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(header(&r, "Content-Type"), "application/octet-stream");
	assert_int_equal(r.len, strlen("file content\n"));
	assert_memory_equal(r.body, "file content\n", r.len);
	resp_clear(&r);

	r = request(e, "GET", "/v1/sandboxes/sb-1/files?path=dir", NULL, NULL);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(j, "path")), "dir");
	json_t *entries = json_object_get(j, "entries");
	assert_int_equal(json_array_size(entries), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(entries, 0), "name")), "main.py");
	assert_string_equal(json_string_value(json_object_get(json_array_get(entries, 1), "type")), "directory");
	json_decref(j);
	resp_clear(&r);
	assert_string_equal(e->m.last_path, "dir");
	r = request(e, "GET", "/v1/sandboxes/sb-1/files", NULL, NULL);
	assert_int_equal(r.status, 200);
	resp_clear(&r);

	/* Paths go to the manager as given; it refuses an escape (400), an unknown sandbox is 404. */
	expect_error(e, "GET", "/v1/sandboxes/sb-1/files/..%2F..%2Fetc%2Fpasswd", NULL, NULL, 400, "escapes");
	expect_error(e, "GET", "/v1/sandboxes/sb-9/files/a", NULL, NULL, 404, "no sandbox");
	expect_error(e, "PUT", "/v1/sandboxes/sb-9/files/a", NULL, "x", 404, "no sandbox");

	r = request(e, "DELETE", "/v1/sandboxes/sb-1", NULL, NULL);
	assert_int_equal(r.status, 200);
	resp_clear(&r);
	assert_string_equal(e->g.last_tool, "code_destroy_sandbox");
	expect_error(e, "DELETE", "/v1/sandboxes/sb-1", NULL, NULL, 404, "no sandbox");
	/* Every call reached the audit hook once. */
	assert_int_equal(e->g.checks, 12);
	assert_int_equal(e->g.finished[SRV_CALL_OK], 7);
	env_close(e);
}

static void test_file_limit(void **state)
{
	struct env *e = env_open(&(struct env_opts){.max_file = 1024});
	char big[2048];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	expect_error(e, "PUT", "/v1/sandboxes/sb-a/files/big", NULL, big, 413, "limit");
	big[1000] = 0;
	struct resp r = request(e, "PUT", "/v1/sandboxes/sb-a/files/big", NULL, big);
	assert_int_equal(r.status, 200);
	resp_clear(&r);
	/* A chunked body has no declared length: counted as it arrives, then 413. */
	int fd = connect_to(e);
	char head[256];
	snprintf(head, sizeof(head),
		 "PUT /v1/sandboxes/sb-a/files/big HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n"
		 "Authorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n",
		 e->port, e->token);
	send_all(fd, head, strlen(head));
	memset(big, 'y', sizeof(big));
	for (int i = 0; i < 3; i++) {
		send_all(fd, "400\r\n", 5);
		send_all(fd, big, 0x400);
		send_all(fd, "\r\n", 2);
	}
	send_all(fd, "0\r\n\r\n", 5);
	finish_resp(fd, NULL, 0, &r);
	assert_int_equal(r.status, 413);
	resp_clear(&r);
	assert_int_equal(hf_get(&e->m.calls[FK_WRITE]), 1);
	env_close(e);
}

/* exec streams NDJSON: output lines arrive while the program runs, then the result line. */
static void test_exec_stream(void **state)
{
	struct env *e = env_open(&(struct env_opts){.gate = true});
	e->m.async = true;
	int fd = send_req(e, "POST", "/v1/sandboxes/sb-a/exec", NULL,
			  "{\"language\":\"python\",\"code\":\"print(1)\",\"timeout\":2}", 51);
	wait_for(&e->m.calls[FK_EXEC], 1);
	pthread_mutex_lock(&hf_mu);
	struct srv_op *op = fake_op(&e->m, 0);
	fake_output(op, SRV_STDOUT, "hel", 3);
	fake_output(op, SRV_STDOUT, "lo \xc3", 4); /* a character cut in two */
	pthread_mutex_unlock(&hf_mu);
	char *raw = NULL;
	size_t len = 0;
	read_until(fd, &raw, &len, "\"hel");
	assert_non_null(strstr(raw, "200 OK"));
	assert_non_null(strstr(raw, "application/x-ndjson"));
	assert_null(strstr(raw, "\"result\"")); /* still running: streamed, not buffered */
	pthread_mutex_lock(&hf_mu);
	fake_output(op, SRV_STDOUT, "\xa9!", 2);
	fake_output(op, SRV_STDERR, "warn", 4);
	fake_finish(op, 0, "hello \xc3\xa9!");
	pthread_mutex_unlock(&hf_mu);
	struct resp r = {0};
	finish_resp(fd, raw, len, &r);
	assert_string_equal(e->m.last_code, "print(1)");
	assert_int_equal(e->m.last_timeout_ms, 2000);
	assert_string_equal(e->m.last_sandbox, "sb-a");
	/* Lines: stdout chunks (the cut character rejoined), stderr, then the result. */
	char *save = NULL, *line = strtok_r(r.body, "\n", &save);
	char out[64] = "";
	json_t *result = NULL;
	int lines = 0;
	for (; line; line = strtok_r(NULL, "\n", &save), lines++) {
		json_t *j = json_loads(line, 0, NULL);
		assert_non_null(j);
		const char *stream = json_string_value(json_object_get(j, "stream"));
		if (stream && strcmp(stream, "stdout") == 0)
			strncat(out, json_string_value(json_object_get(j, "data")), sizeof(out) - strlen(out) - 1);
		if (json_object_get(j, "result")) {
			assert_null(result);
			result = json_incref(json_object_get(j, "result"));
		} else {
			assert_null(result); /* the result is last */
		}
		json_decref(j);
	}
	assert_string_equal(out, "hello \xc3\xa9!");
	assert_non_null(result);
	assert_string_equal(json_string_value(json_object_get(result, "status")), "exited");
	assert_int_equal(json_integer_value(json_object_get(result, "exit_code")), 0);
	json_decref(result);
	resp_clear(&r);
	assert_int_equal(hf_get(&e->g.finished[SRV_CALL_OK]), 1);

	/* "command" is shell code; SSE on request. */
	e->m.async = false;
	r = request(e, "POST", "/v1/sandboxes/sb-a/exec", "Accept: text/event-stream\r\n", "{\"command\":\"ls -l\"}");
	assert_int_equal(r.status, 200);
	assert_string_equal(header(&r, "Content-Type"), "text/event-stream");
	assert_non_null(strstr(r.body, "event: result\ndata: {\"result\":"));
	resp_clear(&r);
	assert_string_equal(e->m.last_language, "shell");
	assert_string_equal(e->m.last_code, "ls -l");
	expect_error(e, "POST", "/v1/sandboxes/sb-a/exec", NULL, "{\"command\":\"ls\",\"code\":\"x\"}", 400, "either");
	expect_error(e, "POST", "/v1/sandboxes/sb-a/exec", NULL, "{\"language\":\"cobol\",\"code\":\"x\"}", 400,
		     "language");
	expect_error(e, "POST", "/v1/sandboxes/sb-9/exec", NULL, "{\"command\":\"ls\"}", 404, "no sandbox");
	assert_int_equal(hf_get(&e->m.calls[FK_EXEC]), 2);
	env_close(e);
}

/* A client that goes away mid-stream: the exec is cancelled and released. */
static void test_exec_disconnect(void **state)
{
	struct env *e = env_open(&(struct env_opts){0});
	e->m.async = true;
	int fd = send_req(e, "POST", "/v1/sandboxes/sb-a/exec", NULL, "{\"command\":\"sleep 100\"}", 23);
	wait_for(&e->m.calls[FK_EXEC], 1);
	close(fd);
	/* The server notices on its next write. */
	for (int i = 0; i < 500 && hf_get(&e->m.releases) == 0; i++) {
		pthread_mutex_lock(&hf_mu);
		if (e->m.ops && !e->m.ops->cancelled)
			fake_output(e->m.ops, SRV_STDOUT, "tick\n", 5);
		pthread_mutex_unlock(&hf_mu);
		usleep(10000);
	}
	assert_int_equal(hf_get(&e->m.cancels), 1);
	assert_int_equal(hf_get(&e->m.releases), 1);
	assert_int_equal(hf_get(&e->m.live_ops), 0);
	env_close(e);
}

/* A client that goes away while the program prints nothing: the server has nothing to write, yet
 * sees the closed connection (within a second; 5 s allowed here) and cancels the exec. */
static void test_exec_disconnect_quiet(void **state)
{
	struct env *e = env_open(&(struct env_opts){0});
	e->m.async = true;
	int fd = send_req(e, "POST", "/v1/sandboxes/sb-a/exec", NULL, "{\"command\":\"sleep 100\"}", 23);
	wait_for(&e->m.calls[FK_EXEC], 1);
	close(fd);
	for (int i = 0; i < 500 && hf_get(&e->m.releases) == 0; i++)
		usleep(10000);
	assert_int_equal(hf_get(&e->m.cancels), 1);
	assert_int_equal(hf_get(&e->m.releases), 1);
	assert_int_equal(hf_get(&e->m.live_ops), 0);
	env_close(e);
}

static void test_token(void **state)
{
	struct env *e = env_open(&(struct env_opts){.token = "s3cret-token"});
	struct resp r = request(e, "GET", "/metrics", NULL, NULL);
	assert_int_equal(r.status, 200);
	resp_clear(&r);
	e->token = NULL;
	r = request(e, "GET", "/v1/health", NULL, NULL);
	assert_int_equal(r.status, 401);
	assert_non_null(header(&r, "WWW-Authenticate"));
	resp_clear(&r);
	e->token = "s3cret-tokem";
	expect_error(e, "POST", "/v1/sandboxes", NULL, "{}", 401, "token");
	e->token = "s3cret-token-longer";
	expect_error(e, "GET", "/nope", NULL, NULL, 401, "token"); /* auth before routing: nothing leaks */
	e->token = NULL;
	expect_error(e, "POST", "/mcp", "Authorization: Basic czNjcmV0\r\n", "{}", 401, NULL);
	assert_int_equal(hf_get(&e->m.total_calls), 0);
	env_close(e);
}

static void test_listen_rules(void **state)
{
	struct fake_mgr m = {0};
	struct srv_mgr_api api = hf_api(&m);
	struct http_opts o = {.size = sizeof(o), .listen = "0.0.0.0:0", .mgr = &api};
	struct al_error err = {0};
	assert_int_equal(http_serve(&o, 0, &err), -EPERM);
	assert_non_null(strstr(err.msg, "token"));
	o.listen = "[::]:0";
	assert_int_equal(http_serve(&o, 0, &err), -EPERM);
	o.listen = "example.com:80";
	assert_int_equal(http_serve(&o, 0, &err), -EINVAL);
	o.listen = "127.0.0.1";
	assert_int_equal(http_serve(&o, 0, &err), -EINVAL);
	o.listen = "127.0.0.1:99999";
	assert_int_equal(http_serve(&o, 0, &err), -EINVAL);
}

/* DNS rebinding and cross-site requests: refused on a loopback listener. */
static void test_host_origin(void **state)
{
	struct env *e = env_open(&(struct env_opts){0});
	int fd = connect_to(e);
	const char *req = "GET /v1/health HTTP/1.1\r\nHost: evil.example:8080\r\nConnection: close\r\n\r\n";
	send_all(fd, req, strlen(req));
	char *raw = NULL;
	size_t len = 0;
	read_all(fd, &raw, &len);
	close(fd);
	assert_non_null(strstr(raw, "403"));
	free(raw);
	/* A port that is not one: whatever follows the colon is not ignored. */
	fd = connect_to(e);
	req = "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:80@evil.example\r\nConnection: close\r\n\r\n";
	send_all(fd, req, strlen(req));
	raw = NULL;
	len = 0;
	read_all(fd, &raw, &len);
	close(fd);
	assert_non_null(strstr(raw, "HTTP/1.1 403"));
	free(raw);
	expect_error(e, "POST", "/v1/sandboxes/sb-a/exec", "Origin: http://evil.example\r\n", "{\"command\":\"id\"}",
		     403, "Origin");
	expect_error(e, "POST", "/mcp", "Origin: null\r\n", "{}", 403, "Origin");
	struct resp r = request(e, "GET", "/v1/health", "Origin: http://localhost:3000\r\n", NULL);
	assert_int_equal(r.status, 200);
	resp_clear(&r);
	/* After the host, only a port: digits, 1 to 65535, nothing after it. */
	expect_error(e, "POST", "/v1/sandboxes/sb-a/exec", "Origin: http://127.0.0.1:80@evil.example\r\n",
		     "{\"command\":\"id\"}", 403, "Origin");
	static const char *const good[] = {"127.0.0.1", "127.0.0.1:80", "localhost:65535",
					   "[::1]",	"[::1]:8080",	"LOCALHOST:1"};
	static const char *const bad[] = {"127.0.0.1:80@evil", "127.0.0.1:",   "127.0.0.1:0",	"127.0.0.1:65536",
					  "127.0.0.1:8080x",   "127.0.0.1:-1", "127.0.0.1:+80", "localhost:80/",
					  "[::1]:80@evil",     "[::1]x",       "[::1]:",	"127.0.0.1:1000000",
					  "127.0.0.1: 80"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!hx_loopback_host(good[i], strlen(good[i])))
			fail_msg("Host %s was refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hx_loopback_host(bad[i], strlen(bad[i])))
			fail_msg("Host %s was accepted", bad[i]);
	assert_int_equal(hf_get(&e->m.total_calls), 0);
	env_close(e);
}

static void test_unescape(void **state)
{
	(void)state;
	char a[] = "a%20b%2Fc%41";
	assert_int_equal(hx_unescape(a), 6);
	assert_string_equal(a, "a b/cA");
	char b[] = "config.py%00.txt";
	assert_int_equal(hx_unescape(b), 15);
	assert_memory_equal(b, "config.py\xc0\x80.txt", 16);
	char c[] = "%zz%4%";
	assert_int_equal(hx_unescape(c), 6);
	assert_string_equal(c, "%zz%4%");
}

/* ---- the queue's generation: what the live approvals stream waits on --------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health_and_errors),     cmocka_unit_test(test_unescape),
		cmocka_unit_test(test_sandbox_routes),	      cmocka_unit_test(test_file_limit),
		cmocka_unit_test(test_exec_stream),	      cmocka_unit_test(test_exec_disconnect),
		cmocka_unit_test(test_exec_disconnect_quiet), cmocka_unit_test(test_token),
		cmocka_unit_test(test_listen_rules),	      cmocka_unit_test(test_host_origin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
