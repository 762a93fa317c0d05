/* http_harness.h — the HTTP floor's test harness (test_http.c, test_http_mcp.c): the server in a
 * thread over the fakes of http_fake.h, and a raw HTTP/1.1 client. Included once per test program. */
#ifndef AL_TEST_HTTP_HARNESS_H
#define AL_TEST_HTTP_HARNESS_H

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

static __attribute__((unused)) void on_ready(void *ctx, uint16_t port)
{
	struct env *e = ctx;
	pthread_mutex_lock(&e->mu);
	e->port = port;
	e->ready = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static __attribute__((unused)) void *serve_thread(void *arg)
{
	struct env *e = arg;
	e->rc = http_serve(&e->o, e->stop[0], &e->err);
	pthread_mutex_lock(&e->mu);
	e->ended = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static __attribute__((unused)) void stats(void *ctx, struct http_stats *out)
{
	out->sandboxes_live = 3;
	out->sandboxes_pooled = 2;
}

struct env_opts {
	const char *token; /* the client's token (default CLIENT_TOKEN) */
	bool gate, queue;
	size_t max_file, max_body;
};

static __attribute__((unused)) struct env *env_open(const struct env_opts *eo)
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

static __attribute__((unused)) void env_close(struct env *e)
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

static __attribute__((unused)) void resp_clear(struct resp *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static __attribute__((unused)) int connect_as(struct env *e, bool via_unix)
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

static __attribute__((unused)) void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		assert_true(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

static __attribute__((unused)) int connect_to(struct env *e)
{
	return connect_as(e, e->via_unix);
}

/* Sends one request (Connection: close) with token (or none), through the Unix socket or TCP.
 * headers: extra lines, each ending in \r\n. */
static __attribute__((unused)) int send_as(struct env *e, const char *token, bool via_unix, const char *method,
					   const char *path, const char *headers, const char *body, size_t blen)
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

static __attribute__((unused)) int send_req(struct env *e, const char *method, const char *path, const char *headers,
					    const char *body, size_t blen)
{
	return send_as(e, e->token, e->via_unix, method, path, headers, body, blen);
}

/* Reads whatever arrives within ms (or until EOF); appends to *buf. Returns false at EOF. */
static __attribute__((unused)) bool read_some(int fd, char **buf, size_t *len, int ms)
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

static __attribute__((unused)) void read_all(int fd, char **buf, size_t *len)
{
	for (int i = 0; i < 400; i++) /* 20 s at most */
		if (!read_some(fd, buf, len, 50))
			return;
	fail_msg("the server did not close the connection");
}

/* Splits raw into head and body, undoing chunked transfer coding. */
static __attribute__((unused)) void parse(char *raw, size_t len, struct resp *r)
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
static __attribute__((unused)) void finish_resp(int fd, char *raw, size_t len, struct resp *r)
{
	read_all(fd, &raw, &len);
	close(fd);
	parse(raw, len, r);
	free(raw);
}

/* Reads from fd until what arrived holds needle (10 s at most); fails when nothing arrived. */
static __attribute__((unused)) void read_until(int fd, char **raw, size_t *len, const char *needle)
{
	for (int i = 0; i < 200 && !(*raw && strstr(*raw, needle)); i++)
		read_some(fd, raw, len, 50);
	assert_non_null(*raw);
}

static __attribute__((unused)) struct resp request_as(struct env *e, const char *token, bool via_unix,
						      const char *method, const char *path, const char *headers,
						      const char *body)
{
	int fd = send_as(e, token, via_unix, method, path, headers, body, body ? strlen(body) : 0);
	struct resp r = {0};
	finish_resp(fd, NULL, 0, &r);
	return r;
}

static __attribute__((unused)) struct resp request(struct env *e, const char *method, const char *path,
						   const char *headers, const char *body)
{
	return request_as(e, e->token, e->via_unix, method, path, headers, body);
}

/* The value of a response header, or NULL (static buffer). */
static __attribute__((unused)) const char *header(const struct resp *r, const char *name)
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

static __attribute__((unused)) json_t *body_json(const struct resp *r)
{
	json_error_t jerr;
	json_t *j = json_loadb(r->body, r->len, 0, &jerr);
	if (!j)
		fail_msg("not JSON (%s): %.*s", jerr.text, (int)r->len, r->body);
	return j;
}

static __attribute__((unused)) void expect_error(struct env *e, const char *method, const char *path,
						 const char *headers, const char *body, int status, const char *want)
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

static __attribute__((unused)) void wait_for(const int *counter, int value)
{
	for (int i = 0; i < 1000 && hf_get(counter) < value; i++)
		usleep(10000);
	assert_int_equal(hf_get(counter), value);
}

/* ---- the JSON API ---------------------------------------------------------------------------- */

/* A request on a thread of its own, as the client (token, or the Unix socket with via_unix). */
struct bg {
	struct env *e;
	const char *path, *body;
	const char *token;
	bool via_unix;
	struct resp r;
	pthread_t th;
};

#endif
