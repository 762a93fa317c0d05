/* test_proxyreq.c — unit tests for the egress proxy's request-head parser (src/network/proxyreq.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "network/proxyreq.h"

/* Feeds s in one go (chunk 0) or in chunks of the given size; returns the final status and
 * how many bytes were consumed in all. */
static enum pr_status feed(struct pr_state *st, const char *s, size_t len, size_t chunk, size_t *total)
{
	enum pr_status r = PR_NEED_MORE;
	*total = 0;
	if (chunk == 0)
		chunk = len ? len : 1;
	for (size_t off = 0; off < len && r == PR_NEED_MORE; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk, used = 99999;
		r = pr_feed(st, s + off, n, &used);
		assert_true(used <= n);
		if (r == PR_NEED_MORE)
			assert_int_equal(used, n);
		*total += used;
	}
	return r;
}

static struct pr_state *parse_ok(const char *s, size_t chunk)
{
	struct pr_state *st = NULL;
	size_t used;
	assert_int_equal(pr_new(0, &st), 0);
	enum pr_status r = feed(st, s, strlen(s), chunk, &used);
	if (r != PR_DONE)
		fail_msg("\"%s\": status %d, %d %s", s, r, pr_error_status(st), pr_error_reason(st) ?: "");
	assert_non_null(pr_request(st));
	return st;
}

static void expect_error(const char *s, size_t len, int status)
{
	struct pr_state *st = NULL;
	size_t used;
	assert_int_equal(pr_new(0, &st), 0);
	enum pr_status r = feed(st, s, len, 0, &used);
	if (r != PR_ERROR || pr_error_status(st) != status)
		fail_msg("\"%.*s\": status %d (%d %s), want error %d", (int)len, s, r, pr_error_status(st),
			 pr_error_reason(st) ?: "", status);
	assert_non_null(pr_error_reason(st));
	assert_null(pr_request(st));
	/* Sticky: more input changes nothing and is not consumed. */
	assert_int_equal(pr_feed(st, "x", 1, &used), PR_ERROR);
	assert_int_equal(used, 0);
	pr_free(st);
}

#define ERR(lit, status) expect_error(lit, sizeof(lit) - 1, status)

static void test_connect(void **state)
{
	(void)state;
	for (size_t chunk = 0; chunk <= 3; chunk++) {
		struct pr_state *st = parse_ok("CONNECT PyPI.org.:443 HTTP/1.1\r\nHost: pypi.org:443\r\n"
					       "Proxy-Authorization: x\r\n\r\n",
					       chunk);
		const struct pr_request *r = pr_request(st);
		assert_int_equal(r->kind, PR_CONNECT);
		assert_string_equal(r->method, "CONNECT");
		assert_string_equal(r->host, "pypi.org");
		assert_int_equal(r->host_kind, AL_HOST_NAME);
		assert_int_equal(r->port, 443);
		assert_null(r->path);
		assert_null(r->head);
		pr_free(st);
	}
	struct pr_state *st = parse_ok("CONNECT 10.0.0.1:8443 HTTP/1.0\r\n\r\n", 0);
	assert_string_equal(pr_request(st)->host, "10.0.0.1");
	assert_int_equal(pr_request(st)->host_kind, AL_HOST_IPV4);
	assert_int_equal(pr_request(st)->port, 8443);
	pr_free(st);
}

static void test_connect_ipv6(void **state)
{
	(void)state;
	struct pr_state *st = parse_ok("CONNECT [2001:DB8:0::1]:443 HTTP/1.1\r\n\r\n", 1);
	assert_string_equal(pr_request(st)->host, "2001:db8::1");
	assert_int_equal(pr_request(st)->host_kind, AL_HOST_IPV6);
	assert_int_equal(pr_request(st)->port, 443);
	pr_free(st);
	st = parse_ok("CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n", 0);
	assert_string_equal(pr_request(st)->host, "::ffff:127.0.0.1");
	pr_free(st);
	ERR("CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT [2001:db8::1] HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT [10.0.0.1]:443 HTTP/1.1\r\n\r\n", 400);
}

/* Bytes after the head (TLS after CONNECT) are not consumed: they are the tunnel's. */
static void test_trailing_bytes(void **state)
{
	(void)state;
	static const char s[] = "CONNECT a.example:443 HTTP/1.1\r\n\r\n\x16\x03\x01\x00";
	struct pr_state *st = NULL;
	size_t used;
	assert_int_equal(pr_new(0, &st), 0);
	assert_int_equal(pr_feed(st, s, sizeof(s) - 1, &used), PR_DONE);
	assert_int_equal(used, sizeof(s) - 1 - 4);
	assert_int_equal(pr_feed(st, "more", 4, &used), PR_DONE);
	assert_int_equal(used, 0);
	pr_free(st);
}

static void test_absolute(void **state)
{
	(void)state;
	for (size_t chunk = 0; chunk <= 2; chunk++) {
		struct pr_state *st =
			parse_ok("GET http://Example.COM/simple/pkg/?a=1 HTTP/1.1\r\n"
				 "Host: evil.example\r\nUser-Agent: pip\r\nProxy-Connection: keep-alive\r\n"
				 "Proxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\n"
				 "Accept:  */* \r\n\r\nBODY",
				 chunk);
		const struct pr_request *r = pr_request(st);
		assert_int_equal(r->kind, PR_ABSOLUTE);
		assert_string_equal(r->host, "example.com");
		assert_int_equal(r->port, 80);
		assert_string_equal(r->path, "/simple/pkg/?a=1");
		assert_int_equal(r->content_length, 0);
		static const char want[] = "GET /simple/pkg/?a=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: pip\r\n"
					   "Accept:  */* \r\nConnection: close\r\n\r\n";
		assert_int_equal(r->head_len, sizeof(want) - 1);
		assert_memory_equal(r->head, want, sizeof(want) - 1);
		pr_free(st);
	}
}

static void test_absolute_forms(void **state)
{
	(void)state;
	struct pr_state *st = parse_ok("HEAD http://h.example:8080 HTTP/1.0\r\n\r\n", 0);
	assert_string_equal(pr_request(st)->path, "/");
	assert_int_equal(pr_request(st)->port, 8080);
	assert_true(strstr(pr_request(st)->head, "HEAD / HTTP/1.0\r\nHost: h.example:8080\r\n") != NULL);
	pr_free(st);
	st = parse_ok("GET http://h.example?q=1 HTTP/1.1\r\n\r\n", 0);
	assert_string_equal(pr_request(st)->path, "/?q=1");
	pr_free(st);
	st = parse_ok("POST http://[2001:db8::1]:81/up HTTP/1.1\r\nContent-Length: 12\r\n\r\n", 0);
	assert_string_equal(pr_request(st)->host, "2001:db8::1");
	assert_int_equal(pr_request(st)->content_length, 12);
	assert_true(strstr(pr_request(st)->head, "Host: [2001:db8::1]:81\r\nContent-Length: 12\r\n") != NULL);
	pr_free(st);
}

/* Origin-form is for the credential broker: no host, the path as sent, and a head of the
 * client's headers only (the broker writes the request line and Host itself). */
static void test_origin(void **state)
{
	(void)state;
	for (size_t chunk = 0; chunk <= 2; chunk++) {
		struct pr_state *st = parse_ok("GET /svc/x?y=1 HTTP/1.1\r\nHost: evil.example\r\n"
					       "Authorization: forged\r\nProxy-Authorization: Basic eA==\r\n"
					       "Connection: keep-alive\r\nUpgrade: h2c\r\nAccept: */*\r\n\r\nBODY",
					       chunk);
		const struct pr_request *r = pr_request(st);
		assert_int_equal(r->kind, PR_ORIGIN);
		assert_string_equal(r->method, "GET");
		assert_string_equal(r->host, "");
		assert_int_equal(r->port, 0);
		assert_string_equal(r->path, "/svc/x?y=1");
		assert_int_equal(r->content_length, 0);
		static const char want[] = "Authorization: forged\r\nAccept: */*\r\nConnection: close\r\n\r\n";
		assert_int_equal(r->head_len, sizeof(want) - 1);
		assert_memory_equal(r->head, want, sizeof(want) - 1);
		pr_free(st);
	}
	/* No headers at all: the head is just our Connection: close and the empty line. */
	struct pr_state *st = parse_ok("DELETE / HTTP/1.0\r\n\r\n", 0);
	assert_int_equal(pr_request(st)->kind, PR_ORIGIN);
	assert_string_equal(pr_request(st)->path, "/");
	assert_int_equal(pr_request(st)->head_len, strlen("Connection: close\r\n\r\n"));
	assert_memory_equal(pr_request(st)->head, "Connection: close\r\n\r\n", pr_request(st)->head_len);
	pr_free(st);
}

/* The body is framed exactly as for absolute-form and is not consumed with the head. */
static void test_origin_body(void **state)
{
	(void)state;
	static const char s[] = "POST /svc/up HTTP/1.1\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello";
	struct pr_state *st = NULL;
	size_t used;
	assert_int_equal(pr_new(0, &st), 0);
	assert_int_equal(pr_feed(st, s, sizeof(s) - 1, &used), PR_DONE);
	assert_int_equal(used, sizeof(s) - 1 - 5);
	const struct pr_request *r = pr_request(st);
	assert_int_equal(r->kind, PR_ORIGIN);
	assert_int_equal(r->content_length, 5);
	static const char want[] = "Content-Length: 5\r\nX-A: 1\r\nConnection: close\r\n\r\n";
	assert_int_equal(r->head_len, sizeof(want) - 1);
	assert_memory_equal(r->head, want, sizeof(want) - 1);
	pr_free(st);
	ERR("POST /svc HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
	ERR("POST /svc HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501);
	ERR("POST /svc HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400);
	ERR("POST /svc HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400);
	ERR("POST /svc HTTP/1.1\r\nX: a\x01\r\n\r\n", 400);
	ERR("POST /svc HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", 400);
}

/* What stays as it was, and what is deliberately left to the broker. */
static void test_origin_edges(void **state)
{
	(void)state;
	ERR("OPTIONS * HTTP/1.1\r\n\r\n", 400);	   /* asterisk-form: still not served */
	ERR("CONNECT /svc HTTP/1.1\r\n\r\n", 400); /* CONNECT takes authority-form only */
	ERR("CONNECT /svc:443 HTTP/1.1\r\n\r\n", 400);
	ERR("TRACE /svc HTTP/1.1\r\n\r\n", 405);
	ERR("get /svc HTTP/1.1\r\n\r\n", 405);
	ERR("GET /svc#frag HTTP/1.1\r\n\r\n", 400);
	ERR("GET /svc HTTP/2.0\r\n\r\n", 505);
	ERR("GET /s vc HTTP/1.1\r\n\r\n", 400);
	ERR("GET /s\x7fvc HTTP/1.1\r\n\r\n", 400);
	ERR("GET /svc\nHTTP/1.1\r\n\r\n", 400);
	/* Dot segments, encoded slashes and backslashes pass through verbatim: the broker, which
	 * knows where the path is rebased, refuses them (tests/unit/test_broker.c). */
	static const char *const kept[] = {"/svc/../admin", "/svc/x%2F..%2fy", "/svc/%2e%2e/z", "/svc\\x", "/..",
					   "//svc"};
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		char line[128];
		snprintf(line, sizeof(line), "GET %s HTTP/1.1\r\n\r\n", kept[i]);
		struct pr_state *st = parse_ok(line, 0);
		assert_int_equal(pr_request(st)->kind, PR_ORIGIN);
		assert_string_equal(pr_request(st)->path, kept[i]);
		pr_free(st);
	}
}

static void test_request_line_errors(void **state)
{
	(void)state;
	ERR("\r\n\r\n", 400);
	ERR("\r\n", 400);
	ERR("OPTIONS * HTTP/1.1\r\n\r\n", 400);
	ERR("GET https://pypi.org/ HTTP/1.1\r\n\r\n", 400);
	ERR("GET ftp://pypi.org/ HTTP/1.1\r\n\r\n", 400);
	ERR("GET http://a.org@evil.org/ HTTP/1.1\r\n\r\n", 400);
	ERR("GET http://evil.org#@a.org/ HTTP/1.1\r\n\r\n", 400);
	ERR("GET http://a.org\\@evil.org/ HTTP/1.1\r\n\r\n", 400);
	ERR("GET http:///x HTTP/1.1\r\n\r\n", 400);
	ERR("GET http://a.org:/ HTTP/1.1\r\n\r\n", 400);
	ERR("GET http://a.org:0/ HTTP/1.1\r\n\r\n", 400);
	ERR("GET http://127.1/ HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:65536 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:443:1 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT http://pypi.org:443 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:443  HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT  pypi.org:443 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:443\r\n\r\n", 400);
	ERR("CONNECT pypi.org:443 HTTP/1.1 x\r\n\r\n", 400);
	ERR("CONNECT py\xc3\xa9.org:443 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:443 http/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:443 HTTP/1.10\r\n\r\n", 400);
	ERR("CONNECT\tpypi.org:443 HTTP/1.1\r\n\r\n", 400);
	ERR("CONNECT pypi.org:443 HTTP/2.0\r\n\r\n", 505);
	ERR("CONNECT pypi.org:443 HTTP/1.2\r\n\r\n", 505);
	ERR("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505); /* the HTTP/2 preface */
	ERR("connect pypi.org:443 HTTP/1.1\r\n\r\n", 405);
	ERR("TRACE http://pypi.org/ HTTP/1.1\r\n\r\n", 405);
	ERR("FOO http://pypi.org/ HTTP/1.1\r\n\r\n", 405);
	ERR("AVERYVERYLONGMETHODNAME http://pypi.org/ HTTP/1.1\r\n\r\n", 405);
}

static void test_framing_errors(void **state)
{
	(void)state;
	ERR("CONNECT a.org:443 HTTP/1.1\n\n", 400); /* bare LF: refused at once */
	ERR("CONNECT a.org:443 HTTP/1.1\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\r\nX: 1\n\r\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\rX\r\n\r\n", 400);	   /* bare CR */
	ERR("CONNECT a.org:443 HTTP/1.1\r\nX: a\0b\r\n\r\n", 400); /* NUL */
	ERR("CONNECT a.org:443 HTTP/1.1\r\nX: a\x01\r\n\r\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\r\nX : 1\r\n\r\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\r\n: 1\r\n\r\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\r\nNoColon\r\n\r\n", 400);
	ERR("CONNECT a.org:443 HTTP/1.1\r\nX(y): 1\r\n\r\n", 400);
	ERR("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400); /* TLS without CONNECT */
	/* Body framing for absolute-form. */
	ERR("POST http://a.org/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
	ERR("POST http://a.org/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501);
	ERR("POST http://a.org/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400);
	ERR("POST http://a.org/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400);
	ERR("POST http://a.org/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400);
	ERR("POST http://a.org/ HTTP/1.1\r\nContent-Length:\r\n\r\n", 400);
	ERR("POST http://a.org/ HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n", 400);
	/* CONNECT has no content: framing headers there are ignored, not errors. */
	struct pr_state *st = parse_ok("CONNECT a.org:443 HTTP/1.1\r\nContent-Length: 5\r\n"
				       "Transfer-Encoding: chunked\r\nX: caf\xc3\xa9\r\n\r\n",
				       0);
	pr_free(st);
}

static void test_size_limit(void **state)
{
	(void)state;
	struct pr_state *st = NULL;
	size_t used, total = 0;
	enum pr_status r = PR_NEED_MORE;
	assert_int_equal(pr_new(0, &st), 0);
	const char *line = "CONNECT a.org:443 HTTP/1.1\r\n";
	r = pr_feed(st, line, strlen(line), &used);
	char hdr[100];
	memset(hdr, 'a', sizeof(hdr));
	memcpy(hdr, "X-Pad: ", 7);
	hdr[98] = '\r';
	hdr[99] = '\n';
	while (r == PR_NEED_MORE && total < 20000) {
		r = pr_feed(st, hdr, sizeof(hdr), &used);
		total += used;
	}
	assert_int_equal(r, PR_ERROR);
	assert_int_equal(pr_error_status(st), 431);
	assert_true(total + strlen(line) <= PR_DEFAULT_MAX_HEAD + 1);
	pr_free(st);
	/* A head of exactly max_head bytes is fine; one more byte is not. */
	char exact[PR_MIN_MAX_HEAD + 1];
	memset(exact, 'a', sizeof(exact));
	memcpy(exact, "CONNECT a.org:443 HTTP/1.1\r\nX: ", 31);
	memcpy(exact + PR_MIN_MAX_HEAD - 4, "\r\n\r\n", 4);
	assert_int_equal(pr_new(PR_MIN_MAX_HEAD, &st), 0);
	assert_int_equal(pr_feed(st, exact, PR_MIN_MAX_HEAD, &used), PR_DONE);
	pr_free(st);
	memcpy(exact + PR_MIN_MAX_HEAD - 4, "a\r\n\r\n", 5);
	assert_int_equal(pr_new(PR_MIN_MAX_HEAD, &st), 0);
	assert_int_equal(pr_feed(st, exact, PR_MIN_MAX_HEAD + 1, &used), PR_ERROR);
	assert_int_equal(pr_error_status(st), 431);
	pr_free(st);
	assert_int_equal(pr_new(PR_MIN_MAX_HEAD - 1, &st), -EINVAL);
	assert_int_equal(pr_new(PR_MAX_MAX_HEAD + 1, &st), -EINVAL);
}

static void test_empty_feed(void **state)
{
	(void)state;
	struct pr_state *st = NULL;
	size_t used = 7;
	assert_int_equal(pr_new(0, &st), 0);
	assert_int_equal(pr_feed(st, "", 0, &used), PR_NEED_MORE);
	assert_int_equal(used, 0);
	assert_null(pr_request(st));
	assert_int_equal(pr_error_status(st), 0);
	pr_free(st);
	pr_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),	       cmocka_unit_test(test_connect_ipv6),
		cmocka_unit_test(test_trailing_bytes), cmocka_unit_test(test_absolute),
		cmocka_unit_test(test_absolute_forms), cmocka_unit_test(test_request_line_errors),
		cmocka_unit_test(test_framing_errors), cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_empty_feed),     cmocka_unit_test(test_origin),
		cmocka_unit_test(test_origin_body),    cmocka_unit_test(test_origin_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
