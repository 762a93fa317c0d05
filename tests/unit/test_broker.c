/* test_broker.c — unit tests for the credential broker (src/network/broker.c): spec parsing, and
 * broker_serve end to end, through the proxy's upstream leg (pxtls.c), against a TLS server in a
 * thread with a throwaway CA. The server listens on loopback, which the proxy's address check lets
 * through only because the configuration says so (allow_private 127.0.0.0/8). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "skip.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "network/broker.h"
#include "network/proxy.h"
#include "network/proxyreq.h"

#define ENV_SECRET  "TOPSECRET-env-7f3a9c"
#define FILE_SECRET "TOPSECRET-file-51d2e8"
#define MARKER	    ".airlock-test-dir"

static char g_dir[64];
static bool g_certs; /* the openssl CLI made the CA and server certificates */
/* What the proxy would pass broker_serve, and a proxy for the connection to belong to. */
static struct al_cidr_list *g_loopback;
static struct px_config g_cfg;
static struct px *g_px;

/* ---- the temporary directory ------------------------------------------------------ */

static const char *const g_files[] = {
	MARKER,	       "secret",      "secret_nl", "secret_cr", "secret_nul", "secret_big", "empty",
	"garbage.pem", "openssl.cnf", "ca.key",	   "ca.pem",	"other.key",  "other.pem",  "srv.key",
	"srv.csr",     "srv.pem",     "wrong.key", "wrong.csr", "wrong.pem",  "ca.srl",	    "hosts",
};

static void path_of(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", g_dir, name);
}

static void put_file(const char *name, const void *data, size_t len)
{
	char p[128];
	path_of(p, sizeof(p), name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static const char cnf[] = "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = unused\n"
			  "[v3ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\n"
			  "subjectKeyIdentifier = hash\n"
			  "[srv]\nbasicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\n"
			  "subjectAltName = DNS:localhost,IP:127.0.0.1\n"
			  "[wrong]\nbasicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\n"
			  "subjectAltName = DNS:wrong.example\n";

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* A CA, a second unrelated CA, a server certificate for localhost/127.0.0.1 and one for
 * another name, both signed by the first CA. EC keys: fast to make. */
static bool make_certs(void)
{
	if (sh("command -v openssl >/dev/null 2>&1") != 0)
		return false;
	put_file("openssl.cnf", cnf, sizeof(cnf) - 1);
	const char *d = g_dir, *key = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
	int r = 0;
	r |= sh("cd %s && openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 -subj /CN=airlock-test-ca "
		"-config openssl.cnf -extensions v3ca >/dev/null 2>&1",
		d, key);
	r |= sh("cd %s && openssl req -x509 %s -keyout other.key -out other.pem -days 2 -subj /CN=airlock-other-ca "
		"-config openssl.cnf -extensions v3ca >/dev/null 2>&1",
		d, key);
	for (int i = 0; i < 2; i++) {
		const char *n = i ? "wrong" : "srv", *cn = i ? "wrong.example" : "localhost";
		r |= sh("cd %s && openssl req %s -keyout %s.key -out %s.csr -subj /CN=%s -config openssl.cnf "
			">/dev/null 2>&1",
			d, key, n, n, cn);
		r |= sh("cd %s && openssl x509 -req -in %s.csr -CA ca.pem -CAkey ca.key -set_serial %d -out %s.pem "
			"-days 2 -extfile openssl.cnf -extensions %s >/dev/null 2>&1",
			d, n, 10 + i, n, i ? "wrong" : "srv");
	}
	return r == 0;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/al-broker-test-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	put_file(MARKER, "", 0);
	put_file("secret", FILE_SECRET "\n\n", strlen(FILE_SECRET) + 2);
	put_file("secret_nl", "TOPSECRET-a\nb\n", 14);
	put_file("secret_cr", "TOPSECRET-a\r\nInjected: 1", 24);
	put_file("secret_nul", "TOPSECRET-a\0b", 13);
	static char big[8193];
	memset(big, 'T', sizeof(big));
	put_file("secret_big", big, sizeof(big));
	put_file("empty", "\n", 1);
	put_file("garbage.pem", "not a certificate\n", 18);
	setenv("BROKER_TEST_SECRET", ENV_SECRET, 1);
	setenv("BROKER_TEST_EMPTY", "", 1);
	setenv("BROKER_TEST_CRLF", "TOPSECRET-x\r\nInjected: 1", 1);
	unsetenv("BROKER_TEST_UNSET");
	g_certs = make_certs();
	struct al_error err = {0};
	if (al_cidr_list_new(&g_loopback) < 0 || al_cidr_list_add(g_loopback, "127.0.0.0/8", &err) < 0)
		return -1;
	g_cfg = (struct px_config){.allow_private = g_loopback, .max_conns = 8, .idle_ms = 5000};
	clock_gettime(CLOCK_MONOTONIC, &g_cfg.t0);
	return px_new(&g_cfg, &g_px);
}

/* Removes only what this test made, and only from a directory carrying the marker. */
static int group_teardown(void **state)
{
	(void)state;
	char p[128];
	px_free(g_px);
	al_cidr_list_free(g_loopback);
	path_of(p, sizeof(p), MARKER);
	if (access(p, F_OK) != 0)
		return -1;
	for (size_t i = 1; i < sizeof(g_files) / sizeof(g_files[0]); i++) {
		path_of(p, sizeof(p), g_files[i]);
		unlink(p);
	}
	path_of(p, sizeof(p), MARKER);
	unlink(p);
	return rmdir(g_dir) == 0 ? 0 : -1;
}

/* In a spec, "{D}" stands for the temporary directory and "{P}" for the test server's port. */
static void expand_port(char *out, size_t cap, const char *spec, unsigned port)
{
	size_t n = 0;
	for (const char *s = spec; *s && n + 1 < cap; s++) {
		if (strncmp(s, "{D}", 3) == 0 || strncmp(s, "{P}", 3) == 0) {
			int w = s[1] == 'D' ? snprintf(out + n, cap - n, "%s", g_dir)
					    : snprintf(out + n, cap - n, "%u", port);
			n = w > 0 && (size_t)w < cap - n ? n + (size_t)w : cap - 1;
			s += 2;
			continue;
		}
		out[n++] = *s;
	}
	out[n] = 0;
}

static void expand(char *out, size_t cap, const char *spec)
{
	expand_port(out, cap, spec, 0);
}

/* ---- spec parsing ----------------------------------------------------------------- */

static void expect_bad(const char *spec, const char *fragment)
{
	char s[1024];
	struct al_broker_list *bl = NULL;
	struct al_error err = {0};
	expand(s, sizeof(s), spec);
	assert_int_equal(al_broker_list_new(&bl), 0);
	int r = al_broker_list_add(bl, s, &err);
	if (r != -EINVAL)
		fail_msg("\"%s\": %d, want -EINVAL (%s)", s, r, err.msg);
	if (strncmp(err.msg, "--broker ", 9) != 0 && strncmp(err.msg, "--broker: ", 10) != 0)
		fail_msg("\"%s\": message \"%s\" does not start with --broker", s, err.msg);
	if (!strstr(err.msg, fragment))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", s, err.msg, fragment);
	/* The secret (or any part of it) never reaches a message. */
	if (strstr(err.msg, "TOPSECRET"))
		fail_msg("\"%s\": message \"%s\" shows the secret", s, err.msg);
	assert_int_equal(al_broker_count(bl), 0);
	al_broker_list_free(bl);
}

static void test_bad_specs(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *fragment;
	} bad[] = {
		{"", "--broker: empty"},
		{"svc", "--broker: expected NAME="},
		{"=https://a.example,header=X,env=BROKER_TEST_SECRET", "--broker: NAME must be"},
		{"Svc=https://a.example,header=X,env=BROKER_TEST_SECRET", "--broker: NAME may use"},
		{"s.v=https://a.example,header=X,env=BROKER_TEST_SECRET", "--broker: NAME may use"},
		{"abcdefghijklmnopqrstuvwxyz012345=https://a.example,header=X,env=BROKER_TEST_SECRET", "1-31"},
		{"svc=http://a.example,header=X,env=BROKER_TEST_SECRET", "--broker svc: upstream must be https://"},
		{"svc=ftp://a.example,header=X,env=BROKER_TEST_SECRET", "must be an https:// URL"},
		{"svc=a.example,header=X,env=BROKER_TEST_SECRET", "must be an https:// URL"},
		{"svc=https://,header=X,env=BROKER_TEST_SECRET", "upstream host"},
		{"svc=https://a.example:0,header=X,env=BROKER_TEST_SECRET", "port"},
		{"svc=https://a.example:65536,header=X,env=BROKER_TEST_SECRET", "port"},
		{"svc=https://a.example:,header=X,env=BROKER_TEST_SECRET", "upstream host"},
		{"svc=https://127.1,header=X,env=BROKER_TEST_SECRET", "upstream host"},
		{"svc=https://a_b.example,header=X,env=BROKER_TEST_SECRET", "upstream host"},
		{"svc=https://u:p@a.example,header=X,env=BROKER_TEST_SECRET", "userinfo"},
		{"svc=https://a.example?x=1,header=X,env=BROKER_TEST_SECRET", "query"},
		{"svc=https://a.example/a/../b,header=X,env=BROKER_TEST_SECRET", "dot segment"},
		{"svc=https://a.example/a/./b,header=X,env=BROKER_TEST_SECRET", "dot segment"},
		{"svc=https://a.example/a//b,header=X,env=BROKER_TEST_SECRET", "empty segment"},
		{"svc=https://a.example/a?b,header=X,env=BROKER_TEST_SECRET", "may not contain"},
		{"svc=https://a.example/a#b,header=X,env=BROKER_TEST_SECRET", "may not contain"},
		{"svc=https://a.example/a%2fb,header=X,env=BROKER_TEST_SECRET", "may not contain"},
		{"svc=https://a.example/a\\b,header=X,env=BROKER_TEST_SECRET", "may not contain"},
		{"svc=https://a.example", "header= and env= or file= are required"},
		{"svc=https://a.example,", "header= and env= or file= are required"},
		{"svc=https://a.example,env=BROKER_TEST_SECRET", "header= is required"},
		{"svc=https://a.example,header=Bad Name,env=BROKER_TEST_SECRET", "not an HTTP header name"},
		{"svc=https://a.example,header=X:Y,env=BROKER_TEST_SECRET", "not an HTTP header name"},
		{"svc=https://a.example,header=Host,env=BROKER_TEST_SECRET", "may not carry a secret"},
		{"svc=https://a.example,header=content-length,env=BROKER_TEST_SECRET", "may not carry a secret"},
		{"svc=https://a.example,header=Proxy-Authorization,env=BROKER_TEST_SECRET", "may not carry a secret"},
		{"svc=https://a.example,header=X,scheme=Two Words,env=BROKER_TEST_SECRET", "not a single word"},
		{"svc=https://a.example,header=X,scheme=,env=BROKER_TEST_SECRET", "scheme= is empty"},
		{"svc=https://a.example,header=X", "exactly one of env=VAR and file=PATH"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,file={D}/secret", "exactly one of"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_UNSET", "env=BROKER_TEST_UNSET is not set"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_EMPTY", "env=BROKER_TEST_EMPTY is empty"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_CRLF", "control character"},
		{"svc=https://a.example,header=X,env=1BAD", "not a variable name"},
		{"svc=https://a.example,header=X,env=A-B", "not a variable name"},
		{"svc=https://a.example,header=X,file=secret", "must be absolute"},
		{"svc=https://a.example,header=X,file={D}/missing", "No such file"},
		{"svc=https://a.example,header=X,file={D}", "not a regular file"},
		{"svc=https://a.example,header=X,file={D}/empty", "empty"},
		{"svc=https://a.example,header=X,file={D}/secret_big", "larger than 8 KiB"},
		{"svc=https://a.example,header=X,file={D}/secret_nl", "control character"},
		{"svc=https://a.example,header=X,file={D}/secret_cr", "control character"},
		{"svc=https://a.example,header=X,file={D}/secret_nul", "control character"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,ca=ca.pem", "must be absolute"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,ca={D}/missing.pem", "cannot read it"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,ca={D}/garbage.pem", "no PEM certificate"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,ca={D}/secret", "no PEM certificate"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,foo=bar", "unknown key \"foo\""},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,Header=Y", "unknown key"},
		/* Each header= takes the keys up to the next one: X has no secret here. */
		{"svc=https://a.example,header=X,header=Y,env=BROKER_TEST_SECRET", "header X: give exactly one of"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,header=x,env=BROKER_TEST_SECRET",
		 "header x given twice"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,header=Y,env=BROKER_TEST_UNSET",
		 "env=BROKER_TEST_UNSET is not set"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,header=Y", "header Y: give exactly one of"},
		{"svc=https://a.example,header=X,scheme=A,scheme=B,env=BROKER_TEST_SECRET", "scheme= given twice"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,ca={D}/ca.pem,header=Y,file={D}/secret,"
		 "ca={D}/ca.pem",
		 "ca= given twice"},
		{"svc=https://a.example,header=A,env=BROKER_TEST_SECRET,header=B,env=BROKER_TEST_SECRET,header=C,"
		 "env=BROKER_TEST_SECRET,header=D,env=BROKER_TEST_SECRET,header=E,env=BROKER_TEST_SECRET,header=F,"
		 "env=BROKER_TEST_SECRET,header=G,env=BROKER_TEST_SECRET,header=H,env=BROKER_TEST_SECRET,header=I,"
		 "env=BROKER_TEST_SECRET",
		 "at most 8 headers"},
		{"svc=https://a.example,header=Accept-Encoding,env=BROKER_TEST_SECRET", "may not carry a secret"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,env=BROKER_TEST_SECRET", "env= given twice"},
		{"svc=https://a.example,header=X,,env=BROKER_TEST_SECRET", "is not key=value"},
		{"svc=https://a.example,header=X,env=BROKER_TEST_SECRET,", "trailing ','"},
		{"svc=https://a.example,header,env=BROKER_TEST_SECRET", "is not key=value"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_bad(bad[i].spec, bad[i].fragment);
}

static void add_ok(struct al_broker_list *bl, const char *spec)
{
	char s[1024];
	struct al_error err = {0};
	expand(s, sizeof(s), spec);
	if (al_broker_list_add(bl, s, &err) != 0)
		fail_msg("\"%s\": %s", s, err.msg);
}

static void test_good_specs(void **state)
{
	(void)state;
	struct al_broker_list *bl = NULL;
	struct al_error err = {0};
	assert_int_equal(al_broker_list_new(&bl), 0);
	add_ok(bl, "svc=https://api.example.com,header=Authorization,scheme=Bearer,env=BROKER_TEST_SECRET");
	add_ok(bl, "gh_2-x=HTTPS://API.Example.COM.:8443/v1/,header=X-Api-Key,file={D}/secret");
	add_ok(bl, "v6=https://[2001:DB8::1]:8443/a/b,header=X-K,env=BROKER_TEST_SECRET");
	add_ok(bl, "ip=https://10.1.2.3/,header=X-K,env=BROKER_TEST_SECRET");
	add_ok(bl, "abcdefghijklmnopqrstuvwxyz01234=https://a.example,file={D}/secret,header=X");
	add_ok(bl, "two=https://a.example,header=X-A,env=BROKER_TEST_SECRET,header=X-B,scheme=Token,file={D}/secret");
	assert_int_equal(al_broker_count(bl), 6);
	assert_string_equal(al_broker_name(bl, 0), "svc");
	assert_string_equal(al_broker_name(bl, 1), "gh_2-x");
	assert_string_equal(al_broker_name(bl, 4), "abcdefghijklmnopqrstuvwxyz01234");
	assert_string_equal(al_broker_name(bl, 5), "two");
	assert_null(al_broker_name(bl, 6));
	/* A second broker of the same name is refused and the first one stays. */
	assert_int_equal(al_broker_list_add(bl, "svc=https://b.example,header=X,env=BROKER_TEST_SECRET", &err),
			 -EINVAL);
	assert_string_equal(err.msg, "--broker svc: defined twice");
	assert_int_equal(al_broker_count(bl), 6);
	al_broker_list_free(bl);
	al_broker_list_free(NULL);
	assert_int_equal(al_broker_count(NULL), 0);
	assert_null(al_broker_name(NULL, 0));
}

/* ---- a TLS upstream in a thread --------------------------------------------------- */

enum srv_mode {
	SRV_HELLO, /* answers "hello" */
	SRV_ECHO,  /* answers with the request head it got, in 7-byte TLS records */
	SRV_GZIP,  /* answers a 100 Continue, then a gzip-encoded body (whatever the request asked) */
};

struct server {
	SSL_CTX *ctx;
	int lfd;
	uint16_t port;
	enum srv_mode mode;
	int conns; /* connections to serve, one after another */
	pthread_t th;
	int accepted, handshakes;
	char head[8192]; /* the last request head (and body) received */
	size_t head_len;
	char body[256];
	size_t body_len;
};

static void srv_read_request(struct server *s, SSL *ssl)
{
	s->head_len = s->body_len = 0;
	char *end = NULL;
	while (!end && s->head_len < sizeof(s->head) - 1) {
		int n = SSL_read(ssl, s->head + s->head_len, (int)(sizeof(s->head) - 1 - s->head_len));
		if (n <= 0)
			return;
		s->head_len += (size_t)n;
		s->head[s->head_len] = 0;
		end = strstr(s->head, "\r\n\r\n");
	}
	if (!end)
		return;
	size_t hl = (size_t)(end + 4 - s->head), want = 0;
	const char *cl = strcasestr(s->head, "\r\ncontent-length:");
	if (cl && cl < end)
		want = strtoul(cl + 17, NULL, 10);
	s->body_len = s->head_len - hl;
	memcpy(s->body, s->head + hl, s->body_len);
	while (s->body_len < want && s->body_len < sizeof(s->body)) {
		int n = SSL_read(ssl, s->body + s->body_len, (int)(sizeof(s->body) - s->body_len));
		if (n <= 0)
			return;
		s->body_len += (size_t)n;
	}
	s->head_len = hl;
	s->head[hl] = 0;
}

static void srv_answer(struct server *s, SSL *ssl)
{
	if (s->mode == SRV_HELLO) {
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
		SSL_write(ssl, ok, sizeof(ok) - 1);
		return;
	}
	if (s->mode == SRV_GZIP) {
		static const char gz[] =
			"HTTP/1.1 100 Continue\r\n\r\n"
			"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nContent-Encoding: identity, GZip\r\n\r\n"
			"\x1f\x8bZIPD";
		SSL_write(ssl, gz, sizeof(gz) - 1);
		return;
	}
	char resp[9000];
	int n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s", s->head_len, s->head);
	/* Small records, so the secret straddles the broker's reads. */
	for (int off = 0; off < n; off += 7)
		SSL_write(ssl, resp + off, n - off < 7 ? n - off : 7);
}

static void *srv_main(void *arg)
{
	struct server *s = arg;
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE); /* the broker may close first; this thread must not die of it */
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	for (int i = 0; i < s->conns; i++) {
		struct pollfd p = {.fd = s->lfd, .events = POLLIN};
		if (poll(&p, 1, 10000) != 1)
			break;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			break;
		s->accepted++;
		struct timeval tv = {.tv_sec = 10};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		SSL *ssl = SSL_new(s->ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_accept(ssl) == 1) {
			s->handshakes++;
			srv_read_request(s, ssl);
			srv_answer(s, ssl);
			SSL_shutdown(ssl);
		}
		SSL_free(ssl);
		close(fd);
		ERR_clear_error();
	}
	return NULL;
}

static void srv_start(struct server *s, const char *cert, enum srv_mode mode, int conns)
{
	char c[128], k[128];
	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->conns = conns;
	snprintf(c, sizeof(c), "%s/%s.pem", g_dir, cert);
	snprintf(k, sizeof(k), "%s/%s.key", g_dir, cert);
	s->ctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(s->ctx);
	assert_int_equal(SSL_CTX_use_certificate_chain_file(s->ctx, c), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(s->ctx, k, SSL_FILETYPE_PEM), 1);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 8), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_stop(struct server *s)
{
	shutdown(s->lfd, SHUT_RDWR); /* wakes a thread still polling for a connection */
	pthread_join(s->th, NULL);
	close(s->lfd);
	SSL_CTX_free(s->ctx);
}

/* ---- the client side: a socketpair standing in for the sandboxed client ------------ */

struct result {
	struct px_record rec;
	char got[16384];
	size_t got_len;
};

/* Parses request as the proxy would, serves it with broker_serve on one end of a socketpair
 * (more is written to the other end first, as a client's later bytes), and collects what the
 * client end received. No cmocka assertion here: it also runs in threads. Returns 0 or -1. */
static int serve_cfg(struct al_broker_list *bl, const struct px_config *cfg, const char *request, const char *more,
		     struct result *res)
{
	int sp[2];
	struct pr_state *st = NULL;
	size_t used = 0, len = strlen(request), ml = more ? strlen(more) : 0;
	memset(res, 0, sizeof(*res));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	int ok = fcntl(sp[0], F_SETFL, O_NONBLOCK) == 0 && pr_new(0, &st) == 0 &&
		 pr_feed(st, request, len, &used) == PR_DONE && pr_request(st)->kind == PR_ORIGIN &&
		 (!more || write(sp[1], more, ml) == (ssize_t)ml);
	if (ok) {
		struct px_conn c = {.px = g_px, .client = sp[0], .upstream = -1};
		broker_serve(bl, &c, cfg, pr_request(st), request + used, len - used);
		res->rec = c.rec;
	}
	close(sp[0]);
	ssize_t n;
	while ((n = read(sp[1], res->got + res->got_len, sizeof(res->got) - 1 - res->got_len)) > 0)
		res->got_len += (size_t)n;
	res->got[res->got_len] = 0;
	close(sp[1]);
	pr_free(st);
	return ok ? 0 : -1;
}

static int serve_raw(struct al_broker_list *bl, const char *request, const char *more, struct result *res)
{
	return serve_cfg(bl, &g_cfg, request, more, res);
}

static void serve(struct al_broker_list *bl, const char *request, const char *more, struct result *res)
{
	if (serve_raw(bl, request, more, res) < 0)
		fail_msg("could not set up the client for \"%s\"", request);
}

static struct al_broker_list *one_broker(const char *spec, uint16_t port)
{
	char s[512];
	struct al_broker_list *bl = NULL;
	struct al_error err = {0};
	expand_port(s, sizeof(s), spec, port);
	assert_int_equal(al_broker_list_new(&bl), 0);
	if (al_broker_list_add(bl, s, &err) != 0)
		fail_msg("\"%s\": %s", s, err.msg);
	return bl;
}

/* One upstream (cert, mode) for one connection, one broker of spec on its port, one request (and
 * more on the socket) served through it; the upstream has stopped when this returns. The broker
 * list is the caller's to free, after the asserts (the record names its broker). */
static struct al_broker_list *serve_one(struct server *srv, const char *cert, enum srv_mode mode, const char *spec,
					const char *request, const char *more, struct result *res)
{
	srv_start(srv, cert, mode, 1);
	struct al_broker_list *bl = one_broker(spec, srv->port);
	serve(bl, request, more, res);
	srv_stop(srv);
	return bl;
}

/* GET path through bl is answered status, in the status line and the record, as an error. */
static void expect_status(struct al_broker_list *bl, const char *path, int status, struct result *res)
{
	char req[128], line[32];
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n\r\n", path);
	serve(bl, req, NULL, res);
	snprintf(line, sizeof(line), "HTTP/1.1 %d ", status);
	if (strncmp(res->got, line, strlen(line)) != 0)
		fail_msg("%s: got \"%s\"", path, res->got);
	assert_int_equal(res->rec.status, status);
	assert_int_equal(res->rec.decision, PXD_ERROR);
}

static size_t count_lines(const char *head, const char *name)
{
	size_t n = 0, nl = strlen(name);
	for (const char *p = head; p && *p; p = strstr(p, "\r\n"), p = p ? p + 2 : NULL)
		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':')
			n++;
	return n;
}

#define NEED_CERTS()                                                                                        \
	do {                                                                                                \
		if (!g_certs)                                                                               \
			AL_SKIP("the openssl CLI is unavailable: no certificates for the end-to-end case"); \
	} while (0)

static void test_serve_get(void **state)
{
	(void)state;
	NEED_CERTS();
	struct server srv;
	struct result res;
	struct al_broker_list *bl =
		serve_one(&srv, "srv", SRV_HELLO,
			  "svc=https://localhost:{P}/base,header=Authorization,scheme=Bearer,env=BROKER_TEST_SECRET,"
			  "ca={D}/ca.pem",
			  "GET /svc/x?y=1 HTTP/1.1\r\nAuthorization: forged\r\nHost: evil\r\n\r\n", NULL, &res);
	char want[64];
	assert_int_equal(strncmp(srv.head, "GET /base/x?y=1 HTTP/1.1\r\n", 26), 0);
	snprintf(want, sizeof(want), "\r\nHost: localhost:%u\r\n", srv.port);
	assert_non_null(strstr(srv.head, want));
	assert_int_equal(count_lines(srv.head, "Host"), 1);
	assert_int_equal(count_lines(srv.head, "Authorization"), 1);
	assert_non_null(strstr(srv.head, "\r\nAuthorization: Bearer " ENV_SECRET "\r\n"));
	assert_null(strstr(srv.head, "forged"));
	assert_null(strstr(srv.head, "evil"));
	assert_non_null(strstr(srv.head, "\r\nConnection: close\r\n\r\n"));
	/* The client got the upstream's answer, and nothing of the secret. */
	assert_string_equal(res.got, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
	assert_int_equal(res.rec.kind, PXK_BROKER);
	assert_int_equal(res.rec.decision, PXD_ALLOWED);
	assert_string_equal(res.rec.broker, "svc");
	assert_string_equal(res.rec.host, "localhost");
	assert_int_equal(res.rec.port, srv.port);
	assert_string_equal(res.rec.addr, "127.0.0.1");
	assert_int_equal(res.rec.status, 200);
	assert_null(res.rec.reason);
	assert_int_equal(res.rec.bytes_up, 0);
	assert_int_equal(res.rec.bytes_down, res.got_len);
	al_broker_list_free(bl);
}

/* A body split between the head's read and the socket; a file secret with its newlines
 * stripped; an IP-literal upstream; a client header of the secret's name in another case. */
static void test_serve_post(void **state)
{
	(void)state;
	NEED_CERTS();
	struct server srv;
	struct result res;
	struct al_broker_list *bl = serve_one(
		&srv, "srv", SRV_HELLO, "up=https://127.0.0.1:{P}/,header=X-Api-Key,file={D}/secret,ca={D}/ca.pem",
		"POST /up/items?next=%2F..%2e HTTP/1.1\r\nx-api-key: mine\r\nContent-Length: 11\r\n\r\nhello", " world",
		&res);
	char want[64];
	assert_int_equal(strncmp(srv.head, "POST /items?next=%2F..%2e HTTP/1.1\r\n", 36), 0);
	snprintf(want, sizeof(want), "\r\nHost: 127.0.0.1:%u\r\n", srv.port);
	assert_non_null(strstr(srv.head, want));
	assert_int_equal(count_lines(srv.head, "X-Api-Key"), 1);
	assert_non_null(strstr(srv.head, "\r\nX-Api-Key: " FILE_SECRET "\r\n"));
	assert_null(strstr(srv.head, "mine"));
	assert_int_equal(srv.body_len, 11);
	assert_memory_equal(srv.body, "hello world", 11);
	assert_int_equal(res.rec.decision, PXD_ALLOWED);
	assert_int_equal(res.rec.bytes_up, 11);
	assert_int_equal(res.rec.status, 200);
	assert_non_null(strstr(res.got, "hello"));
	al_broker_list_free(bl);
}

/* An upstream that reflects the request is cut off before any byte of the secret reaches the
 * client, even when the secret arrives split over several reads. */
static void test_serve_echo_cut(void **state)
{
	(void)state;
	NEED_CERTS();
	struct server srv;
	struct result res;
	struct al_broker_list *bl = serve_one(
		&srv, "srv", SRV_ECHO,
		"svc=https://localhost:{P},header=Authorization,scheme=Bearer,env=BROKER_TEST_SECRET,ca={D}/ca.pem",
		"GET /svc/headers HTTP/1.1\r\n\r\n", NULL, &res);
	assert_non_null(strstr(srv.head, ENV_SECRET)); /* the upstream did get it */
	assert_null(strstr(res.got, "TOPSECRET"));
	assert_null(memmem(res.got, res.got_len, "TOP", 3));
	assert_int_equal(res.rec.decision, PXD_DENIED);
	assert_non_null(res.rec.reason);
	assert_non_null(strstr(res.rec.reason, "secret"));
	assert_int_equal(res.rec.status, 200);
	al_broker_list_free(bl);
}

/* The client's Accept-Encoding never reaches the upstream, which is asked for identity; a response
 * in another content coding (after an interim 100) is refused, and none of its bytes reach the
 * client: a gzipped echo would carry the secret past the raw-secret scan. */
static void test_serve_encoded(void **state)
{
	(void)state;
	NEED_CERTS();
	struct server srv;
	struct result res;
	struct al_broker_list *bl = serve_one(
		&srv, "srv", SRV_GZIP,
		"svc=https://localhost:{P},header=Authorization,scheme=Bearer,env=BROKER_TEST_SECRET,ca={D}/ca.pem",
		"GET /svc/z HTTP/1.1\r\nAccept-Encoding: gzip, br\r\naccept-encoding: deflate\r\n\r\n", NULL, &res);
	assert_int_equal(count_lines(srv.head, "Accept-Encoding"), 1);
	assert_non_null(strstr(srv.head, "\r\nAccept-Encoding: identity\r\n"));
	assert_null(strstr(srv.head, "gzip"));
	assert_null(strstr(srv.head, "deflate"));
	/* The interim 100 may pass (it carries nothing); the final answer is airlock's 502. */
	const char *final = strncmp(res.got, "HTTP/1.1 100 ", 13) == 0 ? strstr(res.got, "\r\n\r\n") + 4 : res.got;
	if (strncmp(final, "HTTP/1.1 502 ", 13) != 0)
		fail_msg("got \"%s\"", res.got);
	assert_null(strstr(res.got, "ZIPD"));
	assert_null(strstr(res.got, "200 OK"));
	assert_int_equal(res.rec.decision, PXD_DENIED);
	assert_int_equal(res.rec.status, 502);
	if (!res.rec.reason || !strstr(res.rec.reason, "content-encoded"))
		fail_msg("reason \"%s\"", res.rec.reason ? res.rec.reason : "(null)");
	al_broker_list_free(bl);
}

static void expect_502(const char *spec, const char *cert, const char *reason_part)
{
	struct server srv;
	struct result res;
	struct al_broker_list *bl = serve_one(&srv, cert, SRV_HELLO, spec, "GET /svc/x HTTP/1.1\r\n\r\n", NULL, &res);
	assert_int_equal(srv.accepted, 1);
	assert_int_equal(srv.handshakes, 0);
	assert_int_equal(srv.head_len, 0); /* the server never saw a request, let alone the secret */
	assert_int_equal(strncmp(res.got, "HTTP/1.1 502 ", 13), 0);
	assert_null(strstr(res.got, "TOPSECRET"));
	assert_int_equal(res.rec.decision, PXD_ERROR);
	assert_int_equal(res.rec.status, 502);
	assert_string_equal(res.rec.addr, "127.0.0.1");
	if (!res.rec.reason || !strstr(res.rec.reason, reason_part))
		fail_msg("reason \"%s\" lacks \"%s\"", res.rec.reason ? res.rec.reason : "(null)", reason_part);
	assert_int_equal(res.rec.bytes_down, 0);
	al_broker_list_free(bl);
}

static void test_serve_untrusted(void **state)
{
	(void)state;
	NEED_CERTS();
	/* A certificate from a CA other than the broker's. */
	expect_502("svc=https://localhost:{P},header=Authorization,env=BROKER_TEST_SECRET,ca={D}/other.pem", "srv",
		   "certificate");
	/* The right CA, the wrong name. */
	expect_502("svc=https://localhost:{P},header=Authorization,env=BROKER_TEST_SECRET,ca={D}/ca.pem", "wrong",
		   "mismatch");
	/* Without ca=, the system store: our throwaway CA is not in it. */
	expect_502("svc=https://localhost:{P},header=Authorization,env=BROKER_TEST_SECRET", "srv", "certificate");
}

static void test_serve_refused(void **state)
{
	(void)state;
	struct result res;
	/* Port 1 on loopback: nothing listens, and nothing must be tried for these requests. */
	struct al_broker_list *bl = one_broker("svc=https://127.0.0.1:{P}/base,header=X-K,env=BROKER_TEST_SECRET", 1);
	static const char *const not_found[] = {"/nosuch/x", "/", "/?q", "//svc/x", "/SVC/x", "/svc%2fx", "/svcx"};
	for (size_t i = 0; i < sizeof(not_found) / sizeof(not_found[0]); i++) {
		expect_status(bl, not_found[i], 404, &res);
		assert_int_equal(res.rec.kind, PXK_BROKER);
	}
	serve(bl, "GET /nosuch/x HTTP/1.1\r\n\r\n", NULL, &res);
	assert_string_equal(res.rec.broker, "nosuch");
	static const char *const bad_path[] = {"/svc/../admin", "/svc/..",    "/svc/a/../../x", "/svc/.",
					       "/svc/./x",	"/svc/..;/x", "/svc/%2e%2e/x",	"/svc/.%2E/x",
					       "/svc/a%2Fb",	"/svc/a%2fb", "/svc/a%5cb",	"/svc/a\\b",
					       "/svc/..?x=1"};
	for (size_t i = 0; i < sizeof(bad_path) / sizeof(bad_path[0]); i++) {
		expect_status(bl, bad_path[i], 400, &res);
		assert_string_equal(res.rec.broker, "svc");
		assert_string_equal(res.rec.addr, ""); /* never connected */
	}
	/* A path that passes reaches the (absent) upstream: 502, not a parse error. */
	serve(bl, "GET /svc/a..b/.x/x.?p=..%2F HTTP/1.1\r\n\r\n", NULL, &res);
	assert_int_equal(strncmp(res.got, "HTTP/1.1 502 ", 13), 0);
	assert_string_equal(res.rec.addr, "127.0.0.1");
	assert_null(strstr(res.got, "TOPSECRET"));
	/* No list at all is the same as an unknown name. */
	serve(NULL, "GET /svc/x HTTP/1.1\r\n\r\n", NULL, &res);
	assert_int_equal(res.rec.status, 404);
	al_broker_list_free(bl);
}

/* Two secret headers both arrive, each once; the job's copies of either name (any case) are gone. */
static void test_serve_two_headers(void **state)
{
	(void)state;
	NEED_CERTS();
	struct server srv;
	struct result res;
	struct al_broker_list *bl =
		serve_one(&srv, "srv", SRV_HELLO,
			  "svc=https://localhost:{P},header=Authorization,scheme=Bearer,env=BROKER_TEST_SECRET,"
			  "header=X-Api-Key,file={D}/secret,ca={D}/ca.pem",
			  "GET /svc/two HTTP/1.1\r\nAuthorization: forged\r\nX-API-KEY: mine\r\nX-Other: kept\r\n\r\n",
			  NULL, &res);
	assert_int_equal(count_lines(srv.head, "Authorization"), 1);
	assert_int_equal(count_lines(srv.head, "X-Api-Key"), 1);
	assert_non_null(strstr(srv.head, "\r\nAuthorization: Bearer " ENV_SECRET "\r\n"));
	assert_non_null(strstr(srv.head, "\r\nX-Api-Key: " FILE_SECRET "\r\n"));
	assert_non_null(strstr(srv.head, "\r\nX-Other: kept\r\n"));
	assert_null(strstr(srv.head, "forged"));
	assert_null(strstr(srv.head, "mine"));
	assert_null(strstr(srv.head, "airlock-secret:")); /* every placeholder was replaced */
	assert_int_equal(res.rec.decision, PXD_ALLOWED);
	assert_int_equal(res.rec.status, 200);
	assert_null(strstr(res.got, "TOPSECRET"));
	al_broker_list_free(bl);
}

/* The upstream's addresses are checked as any CONNECT's: loopback is refused (403, nothing tried)
 * unless the configuration's allow_private names it. */
static void test_serve_address_checked(void **state)
{
	(void)state;
	struct result res;
	struct px_config strict = g_cfg;
	strict.allow_private = NULL;
	struct al_broker_list *bl = one_broker("svc=https://127.0.0.1:{P},header=X-K,env=BROKER_TEST_SECRET", 1);
	assert_int_equal(serve_cfg(bl, &strict, "GET /svc/x HTTP/1.1\r\n\r\n", NULL, &res), 0);
	if (strncmp(res.got, "HTTP/1.1 403 ", 13) != 0)
		fail_msg("got \"%s\"", res.got);
	assert_int_equal(res.rec.kind, PXK_BROKER);
	assert_int_equal(res.rec.decision, PXD_DENIED);
	assert_int_equal(res.rec.status, 403);
	assert_string_equal(res.rec.addr, "127.0.0.1");
	if (!res.rec.reason || !strstr(res.rec.reason, "loopback"))
		fail_msg("reason \"%s\"", res.rec.reason ? res.rec.reason : "(null)");
	al_broker_list_free(bl);
}

/* The proxy's hosts file names the upstream: a name no resolver knows is reached at the address
 * the file gives (the certificate names localhost, so the handshake then fails on the name). */
static void test_serve_hosts_file(void **state)
{
	(void)state;
	NEED_CERTS();
	char hosts[128];
	path_of(hosts, sizeof(hosts), "hosts");
	put_file("hosts", "# test\n127.0.0.1 upstream.invalid\n", 34);
	struct px_config cfg = g_cfg;
	cfg.hosts_file = hosts;
	struct server srv;
	struct result res;
	srv_start(&srv, "srv", SRV_HELLO, 1);
	struct al_broker_list *bl = one_broker(
		"svc=https://upstream.invalid:{P},header=X-K,env=BROKER_TEST_SECRET,ca={D}/ca.pem", srv.port);
	assert_int_equal(serve_cfg(bl, &cfg, "GET /svc/x HTTP/1.1\r\n\r\n", NULL, &res), 0);
	srv_stop(&srv);
	assert_int_equal(srv.accepted, 1);
	assert_int_equal(srv.head_len, 0);
	assert_string_equal(res.rec.host, "upstream.invalid");
	assert_string_equal(res.rec.addr, "127.0.0.1");
	assert_int_equal(res.rec.status, 502);
	if (!res.rec.reason || !strstr(res.rec.reason, "mismatch"))
		fail_msg("reason \"%s\"", res.rec.reason ? res.rec.reason : "(null)");
	al_broker_list_free(bl);
}

/* Several connection threads share one broker and its TLS context. */
struct par {
	struct al_broker_list *bl;
	struct result res;
	int rc;
};

static void *par_main(void *arg)
{
	struct par *p = arg;
	p->rc = serve_raw(p->bl, "GET /svc/p HTTP/1.1\r\n\r\n", NULL, &p->res);
	return NULL;
}

static void test_serve_concurrent(void **state)
{
	(void)state;
	NEED_CERTS();
	struct server srv;
	struct par p[4];
	pthread_t th[4];
	srv_start(&srv, "srv", SRV_HELLO, 4);
	struct al_broker_list *bl = one_broker(
		"svc=https://localhost:{P},header=Authorization,env=BROKER_TEST_SECRET,ca={D}/ca.pem", srv.port);
	for (int i = 0; i < 4; i++) {
		p[i].bl = bl;
		assert_int_equal(pthread_create(&th[i], NULL, par_main, &p[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	srv_stop(&srv);
	assert_int_equal(srv.handshakes, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(p[i].rc, 0);
		assert_int_equal(p[i].res.rec.decision, PXD_ALLOWED);
		assert_int_equal(p[i].res.rec.status, 200);
	}
	al_broker_list_free(bl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_good_specs),
		cmocka_unit_test(test_serve_refused),
		cmocka_unit_test(test_serve_get),
		cmocka_unit_test(test_serve_post),
		cmocka_unit_test(test_serve_echo_cut),
		cmocka_unit_test(test_serve_encoded),
		cmocka_unit_test(test_serve_untrusted),
		cmocka_unit_test(test_serve_concurrent),
		cmocka_unit_test(test_serve_two_headers),
		cmocka_unit_test(test_serve_address_checked),
		cmocka_unit_test(test_serve_hosts_file),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
