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

/* ---- the server in a thread ------------------------------------------------------------------ */

struct env {
	struct fake_mgr m;
	struct srv_mgr_api api;
	struct fake_gate g;
	struct srv_gate gate;
	struct apq *q;
	struct http_opts o;
	pthread_t th;
	int stop[2];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint16_t port;
	bool ready, ended;
	int rc;
	struct al_error err;
	const char *token;	     /* what the client sends */
	struct http_token tokens[2]; /* the client's and the reviewer's */
	char client_token[64], reviewer_token[64];
	char client_name[8], reviewer_name[16];
	char sock[108]; /* the Unix socket */
	bool via_unix;	/* requests go through the socket (as our own uid) */
};

#define CLIENT_TOKEN   "client-token-0123456789"
#define REVIEWER_TOKEN "reviewer-token-0123456789"

static void on_ready(void *ctx, uint16_t port)
{
	struct env *e = ctx;
	pthread_mutex_lock(&e->mu);
	e->port = port;
	e->ready = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static void *serve_thread(void *arg)
{
	struct env *e = arg;
	e->rc = http_serve(&e->o, e->stop[0], &e->err);
	pthread_mutex_lock(&e->mu);
	e->ended = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static void stats(void *ctx, struct http_stats *out)
{
	out->sandboxes_live = 3;
	out->sandboxes_pooled = 2;
}

struct env_opts {
	const char *token; /* the client's token (default CLIENT_TOKEN) */
	bool gate, queue;
	size_t max_file, max_body;
};

static struct env *env_open(const struct env_opts *eo)
{
	struct env *e = calloc(1, sizeof(*e));
	assert_non_null(e);
	e->m.cancel_finishes = true;
	e->api = hf_api(&e->m);
	e->gate = hf_gate_api(&e->g);
	fake_add_sandbox(&e->m, "sb-a");
	if (eo->queue)
		assert_int_equal(apq_new(&e->q), 0);
	snprintf(e->client_token, sizeof(e->client_token), "%s", eo->token ? eo->token : CLIENT_TOKEN);
	snprintf(e->reviewer_token, sizeof(e->reviewer_token), "%s", REVIEWER_TOKEN);
	snprintf(e->client_name, sizeof(e->client_name), "agent");
	snprintf(e->reviewer_name, sizeof(e->reviewer_name), "reviewer");
	e->tokens[0] = (struct http_token){.name = e->client_name, .token = e->client_token};
	e->tokens[1] = (struct http_token){.name = e->reviewer_name, .token = e->reviewer_token, .approver = true};
	snprintf(e->sock, sizeof(e->sock), "/tmp/test_http.%d.%p.sock", (int)getpid(), (void *)e);
	e->o = (struct http_opts){
		.size = sizeof(e->o),
		.listen = "127.0.0.1:0",
		.unix_path = e->sock,
		.tokens = e->tokens,
		.ntokens = 2,
		.mgr = &e->api,
		.gate = eo->gate ? &e->gate : NULL,
		.approvals = e->q,
		.max_file = eo->max_file,
		.max_body = eo->max_body,
		.server_version = "9.9.9",
		.stats = stats,
		.ready = on_ready,
		.ready_ctx = e,
	};
	e->token = eo->token ? eo->token : CLIENT_TOKEN;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	assert_int_equal(pipe2(e->stop, O_CLOEXEC), 0);
	assert_int_equal(pthread_create(&e->th, NULL, serve_thread, e), 0);
	pthread_mutex_lock(&e->mu);
	while (!e->ready && !e->ended)
		pthread_cond_wait(&e->cv, &e->mu);
	pthread_mutex_unlock(&e->mu);
	if (!e->ready)
		fail_msg("http_serve: %s", e->err.msg);
	assert_true(e->port > 0);
	return e;
}

static void env_close(struct env *e)
{
	assert_int_equal(write(e->stop[1], "x", 1), 1);
	pthread_join(e->th, NULL);
	assert_int_equal(e->rc, 0);
	assert_int_equal(access(e->sock, F_OK), -1); /* the socket went with the server */
	/* Whatever the server started, it released; the fake freed what was also done. */
	pthread_mutex_lock(&hf_mu);
	while (e->m.ops)
		fake_finish(e->m.ops, 0, "");
	assert_int_equal(e->m.live_ops, 0);
	pthread_mutex_unlock(&hf_mu);
	apq_free(e->q);
	close(e->stop[0]);
	close(e->stop[1]);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* ---- a tiny HTTP/1.1 client ------------------------------------------------------------------ */

struct resp {
	int status;
	char *head; /* status line and headers */
	char *body;
	size_t len;
};

static void resp_clear(struct resp *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static int connect_as(struct env *e, bool via_unix)
{
	if (via_unix) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(fd >= 0);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", e->sock);
		assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		return fd;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(e->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		assert_true(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

static int connect_to(struct env *e)
{
	return connect_as(e, e->via_unix);
}

/* Sends one request (Connection: close) with token (or none), through the Unix socket or TCP.
 * headers: extra lines, each ending in \r\n. */
static int send_as(struct env *e, const char *token, bool via_unix, const char *method, const char *path,
		   const char *headers, const char *body, size_t blen)
{
	int fd = connect_as(e, via_unix);
	char head[4096];
	int n = snprintf(head, sizeof(head),
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n%s%s%s%s"
			 "Content-Length: %zu\r\n\r\n",
			 method, path, e->port, token ? "Authorization: Bearer " : "", token ? token : "",
			 token ? "\r\n" : "", headers ? headers : "", blen);
	assert_true(n > 0 && (size_t)n < sizeof(head));
	send_all(fd, head, (size_t)n);
	if (blen)
		send_all(fd, body, blen);
	return fd;
}

static int send_req(struct env *e, const char *method, const char *path, const char *headers, const char *body,
		    size_t blen)
{
	return send_as(e, e->token, e->via_unix, method, path, headers, body, blen);
}

/* Reads whatever arrives within ms (or until EOF); appends to *buf. Returns false at EOF. */
static bool read_some(int fd, char **buf, size_t *len, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, ms) <= 0)
		return true;
	char tmp[65536];
	ssize_t n = read(fd, tmp, sizeof(tmp));
	if (n <= 0)
		return false;
	*buf = realloc(*buf, *len + (size_t)n + 1);
	assert_non_null(*buf);
	memcpy(*buf + *len, tmp, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = 0;
	return true;
}

static void read_all(int fd, char **buf, size_t *len)
{
	for (int i = 0; i < 400; i++) /* 20 s at most */
		if (!read_some(fd, buf, len, 50))
			return;
	fail_msg("the server did not close the connection");
}

/* Splits raw into head and body, undoing chunked transfer coding. */
static void parse(char *raw, size_t len, struct resp *r)
{
	char *sep = raw ? strstr(raw, "\r\n\r\n") : NULL;
	if (!sep)
		fail_msg("no HTTP response in \"%s\"", raw ? raw : "");
	r->head = strndup(raw, (size_t)(sep - raw) + 2);
	assert_int_equal(sscanf(raw, "HTTP/1.%*d %d", &r->status), 1);
	char *p = sep + 4, *end = raw + len;
	r->body = calloc(1, (size_t)(end - p) + 1);
	assert_non_null(r->body);
	if (strcasestr(r->head, "Transfer-Encoding: chunked")) {
		while (p < end) {
			size_t n = strtoul(p, &p, 16);
			p = strstr(p, "\r\n") + 2;
			if (n == 0)
				break;
			memcpy(r->body + r->len, p, n);
			r->len += n;
			p += n + 2;
		}
	} else {
		r->len = (size_t)(end - p);
		memcpy(r->body, p, r->len);
	}
}

/* Reads the rest of fd's response (raw and len: what arrived so far, or NULL and 0), closes fd and
 * parses the whole into r. */
static void finish_resp(int fd, char *raw, size_t len, struct resp *r)
{
	read_all(fd, &raw, &len);
	close(fd);
	parse(raw, len, r);
	free(raw);
}

/* Reads from fd until what arrived holds needle (10 s at most); fails when nothing arrived. */
static void read_until(int fd, char **raw, size_t *len, const char *needle)
{
	for (int i = 0; i < 200 && !(*raw && strstr(*raw, needle)); i++)
		read_some(fd, raw, len, 50);
	assert_non_null(*raw);
}

static struct resp request_as(struct env *e, const char *token, bool via_unix, const char *method, const char *path,
			      const char *headers, const char *body)
{
	int fd = send_as(e, token, via_unix, method, path, headers, body, body ? strlen(body) : 0);
	struct resp r = {0};
	finish_resp(fd, NULL, 0, &r);
	return r;
}

static struct resp request(struct env *e, const char *method, const char *path, const char *headers, const char *body)
{
	return request_as(e, e->token, e->via_unix, method, path, headers, body);
}

/* The value of a response header, or NULL (static buffer). */
static const char *header(const struct resp *r, const char *name)
{
	static char value[256];
	char pat[80];
	snprintf(pat, sizeof(pat), "\r\n%s: ", name);
	const char *h = strcasestr(r->head, pat);
	if (!h)
		return NULL;
	h += strlen(pat);
	size_t n = strcspn(h, "\r\n");
	snprintf(value, sizeof(value), "%.*s", (int)n, h);
	return value;
}

static json_t *body_json(const struct resp *r)
{
	json_error_t jerr;
	json_t *j = json_loadb(r->body, r->len, 0, &jerr);
	if (!j)
		fail_msg("not JSON (%s): %.*s", jerr.text, (int)r->len, r->body);
	return j;
}

static void expect_error(struct env *e, const char *method, const char *path, const char *headers, const char *body,
			 int status, const char *want)
{
	struct resp r = request(e, method, path, headers, body);
	if (r.status != status)
		fail_msg("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body);
	json_t *j = body_json(&r);
	const char *msg = json_string_value(json_object_get(j, "error"));
	assert_non_null(msg);
	if (want && !strstr(msg, want))
		fail_msg("%s %s: error \"%s\" lacks \"%s\"", method, path, msg, want);
	json_decref(j);
	resp_clear(&r);
}

static void wait_for(const int *counter, int value)
{
	for (int i = 0; i < 1000 && hf_get(counter) < value; i++)
		usleep(10000);
	assert_int_equal(hf_get(counter), value);
}

/* ---- the JSON API ---------------------------------------------------------------------------- */

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

/* ---- approvals ------------------------------------------------------------------------------- */

/* A request on a thread of its own, as the client (token, or the Unix socket with via_unix). */
struct bg {
	struct env *e;
	const char *path, *body;
	const char *token;
	bool via_unix;
	struct resp r;
	pthread_t th;
};

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
		cmocka_unit_test(test_health_and_errors),
		cmocka_unit_test(test_unescape),
		cmocka_unit_test(test_sandbox_routes),
		cmocka_unit_test(test_file_limit),
		cmocka_unit_test(test_exec_stream),
		cmocka_unit_test(test_exec_disconnect),
		cmocka_unit_test(test_exec_disconnect_quiet),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_listen_rules),
		cmocka_unit_test(test_host_origin),
		cmocka_unit_test(test_approvals),
		cmocka_unit_test(test_approval_unavailable),
		cmocka_unit_test(test_unix_principal),
		cmocka_unit_test(test_mcp),
		cmocka_unit_test(test_mcp_stop),
		cmocka_unit_test(test_apq_wait),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
