/* pxtls.c — TLS terminated at airlock, for the hosts whose rules must see requests or to which a
 * secret may go: each request of a kept-alive connection is parsed, held to the host's rules,
 * given its secrets, sent upstream over TLS that airlock verifies, and recorded.
 *
 * Theory of operation. The connection thread (proxy.c) has the client's socket, already told
 * "200 Connection established" (CONNECT) or captured (capture.c), for a host:port the allowlist
 * names. Here:
 *   1. the handshake with the client presents a leaf for that host from the sandbox's CA
 *      (tlsca.c); a client whose SNI names another host is refused: airlock would only ever
 *      connect to the host that was allowed, and a mismatch means the client meant something else;
 *   2. each request head is parsed by the proxy's one parser (proxyreq.c, origin-form): strict
 *      framing (Content-Length only; chunked request bodies are 501), hop-by-hop headers dropped;
 *   3. the rules (allowlist.c, al_allow_request) decide; a refusal is a 403 whose body names the
 *      rule, and the connection ends (what the client sent after it is never read as a request);
 *   4. placeholders of secrets that may go to this host are replaced (secrets.c) in the head, and
 *      in a body of at most BODY_MAX bytes where the secret allows it; Accept-Encoding becomes
 *      identity so the response can be scanned;
 *   5. a fresh upstream connection per request (resolved and address-checked as any CONNECT:
 *      px_connect_checked), TLS verified against the host's store or the operator's CA, SNI and
 *      the name checked; the request goes with "Connection: close", so the response ends where
 *      the upstream closes and no response framing needs parsing to find it;
 *   6. the response head is held whole: its Connection headers go; a response that frames itself
 *      (Content-Length, chunked, or no body) keeps the client's connection for the next request,
 *      any other gets "Connection: close". Where a secret was put in, the response is scanned and
 *      cut before the secret could reach the job.
 * Steps 4 to 6 are also the credential broker's upstream leg (broker.c, px_forward_serve): the job's
 * side is then a plain socket with one origin-form request, the upstream and its target are the
 * operator's, and the broker's header lines (placeholders of its own secrets) are added, the job's
 * lines of those names dropped. One upstream leg, so a broker's upstream is resolved (hosts file),
 * address-checked, verified and scanned exactly as any terminated host.
 * Every wait is a poll bounded by the idle timeout; px_stop shuts the sockets down, which ends it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "network/proxy.h"
#include "network/pxhead.h"
#include "network/proxyreq.h"
#include "network/secrets.h"
#include "network/tlsca.h"

#define IO_CHUNK 16384
#define HEAD_MAX 16384	   /* a response head held whole */
#define BODY_MAX (1 << 20) /* a request body a secret may be put into */
#define REQ_HEAD 16384	   /* a request head */

bool px_tls_wanted(const struct px_config *cfg, const char *host, uint16_t port)
{
	return cfg->ca && (al_allow_sees(cfg->allow, host, port) || al_secrets_for(cfg->secrets, host, port));
}

struct side {
	SSL *ssl; /* NULL: a plain socket (the broker's job side) */
	int fd;
};

struct term {
	struct px_conn *c;
	const struct px_config *cfg;
	const struct px_forward *fw; /* the upstream leg: context, secrets, what is added */
	struct side cl, up;
	const char *pre; /* read with the head (a broker request's first body bytes): before cl */
	size_t npre;
	char in[IO_CHUNK]; /* from the client: what follows the head parsed so far */
	size_t nin;
	uint32_t used;	/* the secrets put into this request */
	bool keep;	/* the client's connection may carry another request */
	EVP_MD_CTX *md; /* the body's SHA-256 as relayed (a GET answered 200), else NULL */
};

/* ---- waiting and TLS I/O ----------------------------------------------------------------- */

static int wait_fd(const struct term *t, int fd, short ev)
{
	struct pollfd p = {.fd = fd, .events = ev};
	for (;;) {
		int r = poll(&p, 1, t->cfg->idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
	}
}

static int wait_io(const struct term *t, const struct side *s, int ret)
{
	short ev;
	switch (SSL_get_error(s->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		ev = POLLIN;
		break;
	case SSL_ERROR_WANT_WRITE:
		ev = POLLOUT;
		break;
	case SSL_ERROR_ZERO_RETURN:
		return -ECONNRESET;
	case SSL_ERROR_SYSCALL:
		return errno && errno != EAGAIN ? -errno : -ECONNRESET;
	default:
		return -EPROTO;
	}
	return wait_fd(t, s->fd, ev);
}

static int side_write(const struct term *t, const struct side *s, const char *p, size_t len)
{
	if (!s->ssl)
		return px_write_all(s->fd, p, len, t->cfg->idle_ms);
	while (len > 0) {
		ERR_clear_error();
		int n = SSL_write(s->ssl, p, len > INT_MAX ? INT_MAX : (int)len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		int r = wait_io(t, s, n);
		if (r < 0)
			return r;
	}
	return 0;
}

static int plain_read(const struct term *t, int fd, char *buf, size_t cap)
{
	for (;;) {
		ssize_t n = recv(fd, buf, cap > INT_MAX ? INT_MAX : cap, 0);
		if (n >= 0)
			return (int)n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == ECONNRESET ? 0 : -errno;
		int r = wait_fd(t, fd, POLLIN);
		if (r < 0)
			return r;
	}
}

/* > 0 bytes, 0 at the end of the stream, or -errno. */
static int side_read(const struct term *t, const struct side *s, char *buf, size_t cap)
{
	if (!s->ssl)
		return plain_read(t, s->fd, buf, cap);
	for (;;) {
		ERR_clear_error();
		int n = SSL_read(s->ssl, buf, cap > INT_MAX ? INT_MAX : (int)cap);
		if (n > 0)
			return n;
		int e = SSL_get_error(s->ssl, n);
		if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && (errno == 0 || errno == ECONNRESET)))
			return 0;
		int r = wait_io(t, s, n);
		if (r < 0)
			return r;
	}
}

/* From the job: what was read with the head first, then its side. */
static int client_read(struct term *t, char *buf, size_t cap)
{
	if (t->npre == 0)
		return side_read(t, &t->cl, buf, cap);
	size_t k = t->npre < cap ? t->npre : cap;
	memcpy(buf, t->pre, k);
	t->pre += k, t->npre -= k;
	return (int)k;
}

static int handshake(const struct term *t, const struct side *s, bool server)
{
	for (;;) {
		ERR_clear_error();
		int ret = server ? SSL_accept(s->ssl) : SSL_connect(s->ssl);
		if (ret == 1)
			return 0;
		int r = wait_io(t, s, ret);
		if (r < 0)
			return r;
	}
}

static void side_end(struct side *s)
{
	if (!s->ssl)
		return;
	ERR_clear_error();
	(void)SSL_shutdown(s->ssl); /* one non-blocking close_notify: a polite end, never a wait */
	SSL_free(s->ssl);
	s->ssl = NULL;
}

/* ---- answers to the client --------------------------------------------------------------- */

/* A complete short response over the client's TLS; the connection ends after it. */
static void answer(struct term *t, int status, const char *text)
{
	char buf[1536];
	int n = snprintf(
		buf, sizeof(buf),
		"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n"
		"%s\n",
		status, px_status_text(status), strlen(text) + 1, text);
	if (n > 0)
		(void)side_write(t, &t->cl, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	t->c->rec.status = status;
	t->keep = false;
}

static void fail(struct term *t, enum px_decision d, int status, const char *why)
{
	char text[1024];
	t->c->rec.decision = d;
	t->c->rec.reason = why;
	snprintf(text, sizeof(text), "airlock: %s: %s", t->c->rec.host, why);
	answer(t, status, text);
}

/* ---- the client's handshake --------------------------------------------------------------- */

static int accept_client(struct term *t)
{
	struct px_conn *c = t->c;
	SSL_CTX *ctx = tca_server_ctx(t->cfg->ca, c->rec.host);
	if (!ctx) {
		c->rec.reason = "no certificate for the host";
		return -1;
	}
	t->cl.ssl = SSL_new(ctx);
	SSL_CTX_free(ctx); /* the SSL holds its own reference */
	if (!t->cl.ssl || SSL_set_fd(t->cl.ssl, c->client) != 1) {
		c->rec.reason = "out of memory";
		return -1;
	}
	if (handshake(t, &t->cl, true) < 0) {
		/* Most often: the job does not trust the sandbox's CA (its own bundle, pinning). */
		c->rec.reason = "TLS handshake with the job failed (does it trust the sandbox's CA?)";
		return -1;
	}
	const char *sni = SSL_get_servername(t->cl.ssl, TLSEXT_NAMETYPE_host_name);
	char norm[AL_HOST_MAX];
	enum al_host_kind kind;
	if (sni && (al_host_normalize(sni, strlen(sni), norm, &kind) < 0 || strcmp(norm, c->rec.host) != 0)) {
		c->rec.decision = PXD_DENIED;
		c->rec.reason = "TLS server name (SNI) names another host";
		return -1;
	}
	return 0;
}

/* ---- one request ------------------------------------------------------------------------ */

/* Reads and parses the next request head. 1: a request; 0: the client ended between requests;
 * -1: answered and recorded. */
static int read_request(struct term *t, struct pr_state *st, const struct pr_request **req)
{
	bool any = t->nin > 0;
	for (;;) {
		size_t used = 0;
		enum pr_status s = t->nin ? pr_feed(st, t->in, t->nin, &used) : PR_NEED_MORE;
		memmove(t->in, t->in + used, t->nin - used);
		t->nin -= used;
		if (s == PR_DONE) {
			*req = pr_request(st);
			return 1;
		}
		if (s == PR_ERROR) {
			fail(t, PXD_ERROR, pr_error_status(st), pr_error_reason(st));
			return -1;
		}
		int n = client_read(t, t->in + t->nin, sizeof(t->in) - t->nin);
		if (n <= 0) {
			if (any) {
				t->c->rec.decision = PXD_ERROR;
				t->c->rec.reason = n == -ETIMEDOUT ? "no complete request before the idle timeout"
								   : "client closed before a complete request";
				return -1;
			}
			return 0;
		}
		any = true;
		t->nin += (size_t)n;
	}
}

/* Whether the job's header line is one airlock leaves out: Accept-Encoding when a secret is put in
 * (the scan reads raw bodies), Content-Length when the body's length changed, and one of the
 * forwarder's own names (a job's copy could replace the broker's header at a server that takes the
 * last one, or make it a list). */
static bool dropped(const struct term *t, const char *line, size_t len, bool secrets, bool body_changed)
{
	if ((secrets && pxh_hdr_is(line, len, "accept-encoding")) ||
	    (body_changed && pxh_hdr_is(line, len, "content-length")))
		return true;
	for (const char *const *d = t->fw->drop; d && *d; d++)
		if (pxh_hdr_is(line, len, *d))
			return true;
	return false;
}

/* The head to send: request line, Host, the forwarder's lines, the client's headers (less those
 * dropped), secrets put in. */
static char *build_head(struct term *t, const struct pr_request *req, bool body_changed, uint64_t body_len, size_t *len)
{
	struct px_record *rec = &t->c->rec;
	const char *target = t->fw->target ? t->fw->target : req->path;
	const char *lines = t->fw->lines ? t->fw->lines : "";
	bool v6 = strchr(rec->host, ':') != NULL;
	size_t cap = strlen(req->method) + strlen(target) + AL_HOST_MAX + strlen(lines) + req->head_len + 128;
	char *h = malloc(cap);
	if (!h)
		return NULL;
	size_t n = (size_t)snprintf(h, cap, "%s %s HTTP/1.1\r\nHost: %s%s%s", req->method, target, v6 ? "[" : "",
				    rec->host, v6 ? "]" : "");
	if (rec->port != 443)
		n += (size_t)snprintf(h + n, cap - n, ":%u", rec->port);
	n += (size_t)snprintf(h + n, cap - n, "\r\n");
	if (body_changed)
		n += (size_t)snprintf(h + n, cap - n, "Content-Length: %llu\r\n", (unsigned long long)body_len);
	bool secrets = al_secrets_for(t->fw->secrets, rec->host, rec->port);
	if (secrets)
		n += (size_t)snprintf(h + n, cap - n, "Accept-Encoding: identity\r\n");
	n += (size_t)snprintf(h + n, cap - n, "%s", lines);
	for (const char *p = req->head, *end = req->head + req->head_len; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - p) + 2 : (size_t)(end - p);
		if (!dropped(t, p, ll, secrets, body_changed))
			memcpy(h + n, p, ll), n += ll;
		p += ll;
	}
	char *sub = NULL;
	size_t sl = 0;
	if (al_secrets_apply(t->fw->secrets, rec->host, rec->port, false, h, n, &sub, &sl, &t->used) < 0) {
		free(h);
		return NULL;
	}
	if (sub) {
		al_secrets_wipe(h, n);
		free(h);
		h = sub;
		n = sl;
	}
	*len = n;
	return h;
}

/* The request body: exactly req->content_length bytes, from what was read already and then from
 * the client. Where a secret may be put into bodies, a body of at most BODY_MAX is read whole
 * first (*whole), else streamed by send_body. */
static int read_body(struct term *t, uint64_t cl, char **whole)
{
	*whole = malloc(cl ? cl : 1);
	if (!*whole)
		return -ENOMEM;
	size_t got = 0;
	while (got < cl) {
		if (t->nin) {
			size_t k = t->nin < cl - got ? t->nin : (size_t)(cl - got);
			memcpy(*whole + got, t->in, k);
			memmove(t->in, t->in + k, t->nin - k);
			t->nin -= k, got += k;
			continue;
		}
		int n = client_read(t, t->in, sizeof(t->in));
		if (n <= 0)
			return n == 0 ? -EPIPE : n;
		t->nin = (size_t)n;
	}
	return 0;
}

static int send_body(struct term *t, uint64_t left)
{
	while (left > 0) {
		if (!t->nin) {
			int n = client_read(t, t->in, sizeof(t->in));
			if (n <= 0)
				return n == 0 ? -EPIPE : n;
			t->nin = (size_t)n;
		}
		size_t k = t->nin < left ? t->nin : (size_t)left;
		int r = side_write(t, &t->up, t->in, k);
		if (r < 0)
			return r;
		memmove(t->in, t->in + k, t->nin - k);
		t->nin -= k, left -= k;
		t->c->rec.bytes_up += k;
	}
	return 0;
}

static int connect_upstream(struct term *t)
{
	struct px_conn *c = t->c;
	int fd = px_connect_checked(c, t->cfg, c->rec.host, c->rec.port);
	if (fd < 0)
		return -1; /* recorded; px_connect_checked's answer went to the raw socket: none over TLS */
	t->up.fd = fd;
	const char *why = "upstream TLS setup failed";
	t->up.ssl = SSL_new(t->fw->ctx);
	bool ok = t->up.ssl && SSL_set_fd(t->up.ssl, fd) == 1;
	char norm[AL_HOST_MAX];
	enum al_host_kind kind = AL_HOST_NAME;
	ok = ok && al_host_normalize(c->rec.host, strlen(c->rec.host), norm, &kind) == 0;
	if (ok && kind == AL_HOST_NAME) {
		SSL_set_hostflags(t->up.ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		ok = SSL_set_tlsext_host_name(t->up.ssl, norm) == 1 && SSL_set1_host(t->up.ssl, norm) == 1;
	} else if (ok) { /* no SNI for addresses (RFC 6066): the certificate must name the IP */
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->up.ssl), norm) == 1;
	}
	int r = ok ? handshake(t, &t->up, false) : -ENOMEM;
	if (r < 0 || SSL_get_verify_result(t->up.ssl) != X509_V_OK) {
		long v = t->up.ssl ? SSL_get_verify_result(t->up.ssl) : X509_V_OK;
		why = r == -ETIMEDOUT  ? "upstream TLS handshake timed out"
		      : v != X509_V_OK ? X509_verify_cert_error_string(v)
		      : ok	       ? "upstream TLS handshake failed"
				       : why;
		fail(t, PXD_ERROR, 502, why);
		return -1;
	}
	return 0;
}

/* ---- the response ------------------------------------------------------------------------ */

static int to_client(struct term *t, const char *p, size_t n)
{
	int r = n ? side_write(t, &t->cl, p, n) : 0;
	if (r == 0)
		t->c->rec.bytes_down += n;
	return r;
}

/* Heads until the final one (1xx interim heads pass), rewritten; returns bytes of body already in
 * buf (moved to its start) or -errno / -EPROTO (encoded while a secret went) / -E2BIG. */
static int relay_head(struct term *t, const struct pr_request *req, char *buf, size_t *held)
{
	char out[HEAD_MAX + PXH_GROWTH];
	size_t n = 0;
	for (;;) {
		const char *e = n ? memmem(buf, n, "\r\n\r\n", 4) : NULL;
		if (e) {
			size_t hl = (size_t)(e - buf) + 4;
			struct pxh_facts f;
			pxh_facts(buf, hl, strcmp(req->method, "HEAD") == 0, &f);
			if (t->used && f.encoded)
				return -EPROTO;
			if (t->used && al_secrets_seen(t->fw->secrets, t->used, buf, hl))
				return -EACCES;
			bool interim = f.status >= 100 && f.status < 200 && f.status != 101;
			t->c->rec.status = interim ? t->c->rec.status : f.status;
			size_t ol = pxh_rewrite(buf, hl, interim || f.framed, out);
			int r = to_client(t, out, ol);
			if (r < 0)
				return r;
			memmove(buf, buf + hl, n - hl);
			n -= hl;
			if (!interim) {
				t->keep = t->keep && f.framed;
				*held = n;
				return 0;
			}
			continue;
		}
		if (n == HEAD_MAX)
			return -E2BIG;
		int r = side_read(t, &t->up, buf + n, HEAD_MAX - n);
		if (r <= 0)
			return r == 0 ? -ECONNRESET : r;
		n += (size_t)r;
	}
}

/* The body until the upstream closes; where a secret went, the last longest - 1 bytes are held
 * back until more arrive, so the scan sees a secret whole before any of it is passed on. */
static int relay_body(struct term *t, char *buf, size_t held)
{
	size_t longest = al_secrets_longest(t->fw->secrets, t->used), keep = longest ? longest - 1 : 0;
	for (;;) {
		if (t->used && al_secrets_seen(t->fw->secrets, t->used, buf, held))
			return -EACCES;
		size_t out = held > keep ? held - keep : 0;
		int r = to_client(t, buf, out);
		if (r < 0)
			return r;
		if (t->md && out && !EVP_DigestUpdate(t->md, buf, out))
			return -ENOMEM;
		memmove(buf, buf + out, held - out);
		held -= out;
		int n = side_read(t, &t->up, buf + held, IO_CHUNK);
		if (n < 0)
			return n;
		if (n == 0) {
			r = to_client(t, buf, held);
			return r < 0 || !t->md || !held || EVP_DigestUpdate(t->md, buf, held) ? r : -ENOMEM;
		}
		held += (size_t)n;
	}
}

/* The relayed body's SHA-256 into the record, once the body went whole. */
static void body_digest(struct term *t)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	if (!EVP_DigestFinal_ex(t->md, d, &len) || len != 32)
		return;
	for (size_t i = 0; i < len; i++)
		snprintf(t->c->rec.sha256 + 2 * i, 3, "%02x", d[i]);
}

static const char *relay_reason(int r)
{
	switch (r) {
	case -EACCES:
		return "upstream response contained the secret; cut off";
	case -EPROTO:
		return "upstream response is content-encoded although a secret was sent: refused";
	case -E2BIG:
		return "upstream response head too large";
	case -ETIMEDOUT:
		return "upstream timed out";
	default:
		return "upstream connection failed";
	}
}

static void relay_response(struct term *t, const struct pr_request *req)
{
	size_t cap = HEAD_MAX + IO_CHUNK + al_secrets_longest(t->fw->secrets, t->used);
	char *buf = malloc(cap);
	size_t held = 0;
	int r = buf ? relay_head(t, req, buf, &held) : -ENOMEM;
	bool began = t->c->rec.status != 0;
	/* What a GET answered 200 fetched is named by its digest (a package install's provenance). */
	if (r == 0 && t->c->rec.status == 200 && strcmp(req->method, "GET") == 0 && (t->md = EVP_MD_CTX_new()) &&
	    !EVP_DigestInit_ex(t->md, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(t->md);
		t->md = NULL;
	}
	if (r == 0)
		r = relay_body(t, buf, held);
	if (r == 0 && t->md)
		body_digest(t);
	EVP_MD_CTX_free(t->md);
	t->md = NULL;
	if (r < 0) {
		t->keep = false;
		t->c->rec.reason = relay_reason(r);
		if (!began)
			fail(t, PXD_ERROR, 502, relay_reason(r));
		if (r == -EACCES || r == -EPROTO)
			t->c->rec.decision = PXD_DENIED;
	}
	if (buf) {
		al_secrets_wipe(buf, cap);
		free(buf);
	}
}

/* ---- the request's decision and exchange ------------------------------------------------- */

static bool permitted(struct term *t, const struct pr_request *req)
{
	struct px_record *rec = &t->c->rec;
	if (!al_allow_sees(t->cfg->allow, rec->host, rec->port))
		return true; /* terminated for a secret; the host's entry has no rule */
	int r = al_allow_request(t->cfg->allow, rec->host, rec->port, req->method, req->path, rec->rule,
				 sizeof(rec->rule));
	if (r == 0)
		return true;
	char text[1024];
	rec->decision = PXD_DENIED;
	rec->reason = r == -EPERM ? "path not in plain form (dot segments or encoded '/', '.', '\\')"
				  : "no rule allows this request";
	snprintf(text, sizeof(text), "airlock: %s %s%s refused: %s; the rules for this host: %s", req->method,
		 rec->host, req->path, rec->reason, rec->rule);
	answer(t, 403, text);
	return false;
}

static void upstream_end(struct term *t)
{
	side_end(&t->up);
	if (t->up.fd >= 0 && px_conn_set_upstream(t->c, -1))
		close(t->up.fd);
	t->up.fd = -1;
}

static void exchange(struct term *t, const struct pr_request *req)
{
	struct px_record *rec = &t->c->rec;
	bool into_body = req->content_length > 0 && req->content_length <= BODY_MAX &&
			 al_secrets_for(t->fw->secrets, rec->host, rec->port);
	char *body = NULL, *sub = NULL;
	size_t sl = 0;
	uint64_t bl = req->content_length;
	if (into_body) {
		int r = read_body(t, bl, &body);
		r = r
			    ?: al_secrets_apply(t->fw->secrets, rec->host, rec->port, true, body, (size_t)bl, &sub, &sl,
						&t->used);
		if (r < 0) {
			free(body);
			fail(t, PXD_ERROR, r == -ENOMEM ? 503 : 400, "the request body did not arrive whole");
			return;
		}
	}
	size_t hl = 0;
	char *head = connect_upstream(t) == 0 ? build_head(t, req, sub != NULL, sub ? sl : bl, &hl) : NULL;
	int r = head ? side_write(t, &t->up, head, hl) : -1;
	if (head) {
		al_secrets_wipe(head, hl);
		free(head);
	}
	if (r == 0 && into_body)
		r = side_write(t, &t->up, sub ? sub : body, sub ? sl : (size_t)bl);
	else if (r == 0)
		r = send_body(t, bl);
	if (r == 0)
		rec->bytes_up += into_body ? bl : 0;
	if (sub) {
		al_secrets_wipe(sub, sl);
		free(sub);
	}
	free(body);
	if (r == 0) {
		rec->decision = PXD_ALLOWED;
		relay_response(t, req);
	} else if (head) {
		fail(t, PXD_ERROR, 502, "sending to upstream failed");
	} else if (rec->decision == PXD_ERROR && !rec->reason) {
		rec->reason = "upstream connection failed";
	}
	if (!rec->status && !rec->reason)
		rec->reason = "upstream closed without answering";
	if (rec->status == 0 && t->keep)
		fail(t, PXD_ERROR, 502, rec->reason ? rec->reason : "upstream failed");
	upstream_end(t);
}

static void serve_requests(struct term *t)
{
	struct px_record *rec = &t->c->rec;
	for (bool first = true; t->keep; first = false) {
		struct pr_state *st = NULL;
		if (pr_new(REQ_HEAD, &st) < 0) {
			fail(t, PXD_ERROR, 503, "out of memory");
			return;
		}
		const struct pr_request *req = NULL;
		if (!first)
			px_conn_next(t->c);
		int r = read_request(t, st, &req);
		if (r > 0 && req->kind != PR_ORIGIN)
			fail(t, PXD_ERROR, 400, "a request inside TLS takes an origin-form target (/path)"), r = -1;
		if (r > 0) {
			snprintf(rec->method, sizeof(rec->method), "%s", req->method);
			snprintf(rec->path, sizeof(rec->path), "%s", req->path);
			t->used = 0;
			if (permitted(t, req))
				exchange(t, req);
		}
		pr_free(st);
		if (r <= 0)
			return;
	}
}

/* OpenSSL writes with write(): a peer's reset would raise SIGPIPE and kill the supervisor. This
 * thread is the proxy's own and ends with the connection, so SIGPIPE stays blocked for the rest of
 * its life; a pending one is discarded with the thread. */
static void block_sigpipe(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}

void px_tls_serve(struct px_conn *c, const struct px_config *cfg)
{
	block_sigpipe();
	struct term *t = calloc(1, sizeof(*t));
	if (!t) {
		c->rec.reason = "out of memory";
		return;
	}
	const struct px_forward fw = {.ctx = tca_client_ctx(cfg->ca), .secrets = cfg->secrets};
	*t = (struct term){.c = c, .cfg = cfg, .fw = &fw, .cl = {.fd = c->client}, .up = {.fd = -1}, .keep = true};
	c->rec.tls_airlock = true;
	c->rec.decision = PXD_ERROR;
	if (accept_client(t) == 0)
		serve_requests(t);
	upstream_end(t);
	side_end(&t->cl);
	free(t);
	ERR_clear_error();
}

void px_forward_serve(struct px_conn *c, const struct px_config *cfg, const struct px_forward *fw,
		      const struct pr_request *req, const char *rest, size_t nrest)
{
	block_sigpipe();
	struct term *t = calloc(1, sizeof(*t));
	if (!t) {
		c->rec.reason = "out of memory";
		px_reply(c->client, 503, "out of memory", cfg->idle_ms);
		return;
	}
	/* Only body bytes: what follows the body (a pipelined request) is never sent, one request
	 * per connection, framed by Content-Length alone. */
	size_t pre = nrest < req->content_length ? nrest : (size_t)req->content_length;
	*t = (struct term){.c = c,
			   .cfg = cfg,
			   .fw = fw,
			   .cl = {.fd = c->client},
			   .up = {.fd = -1},
			   .pre = rest,
			   .npre = pre,
			   .keep = true};
	c->rec.decision = PXD_ERROR;
	snprintf(c->rec.method, sizeof(c->rec.method), "%s", req->method);
	snprintf(c->rec.path, sizeof(c->rec.path), "%s", req->path);
	/* No rule check: the upstream and its base are the operator's, the path checked by the broker. */
	exchange(t, req);
	upstream_end(t);
	free(t);
	ERR_clear_error();
}
