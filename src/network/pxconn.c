/* pxconn.c — one egress-proxy connection: read and judge the request head, resolve, check
 * every address, connect to the address that was checked, relay with byte counts.
 *
 * Order of checks (each refusal is recorded with its reason):
 *   1. the head parses (proxyreq.c): else 4xx/5xx from the parser, counted as malformed;
 *   2. origin-form goes to the credential broker (whose upstream leg comes back here for 5.);
 *   3. plain HTTP only when the policy enables it;
 *   4. host and port on the allowlist (an IP literal only when listed literally);
 *   5. every resolved address classified (addrclass.c): forbidden ones are skipped, and we
 *      connect to a checked sockaddr, never to the name again, so DNS rebinding gains nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "network/addrclass.h"
#include "network/broker.h"
#include "network/proxy.h"
#include "network/proxyreq.h"
#include "network/resolve.h"

#define PX_IO_BUF	      65536
#define PX_CONNECT_TIMEOUT_MS 10000

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

/* The record keeps the static reason; the client reads it with the name it asked for, in the
 * status line and the body ("airlock: pypi.org refused: host or port not on the allowlist"), so
 * pip's and curl's messages say why. A captured connection gets a reset: no HTTP answer means
 * anything to its protocol. */
static void refuse(struct px_conn *c, const struct px_config *cfg, enum px_decision d, int status, const char *why)
{
	c->rec.decision = d;
	c->rec.status = status;
	c->rec.reason = why;
	if (c->rec.kind == PXK_CAPTURE) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		(void)setsockopt(c->client, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		c->rec.status = 0;
		return;
	}
	char text[AL_HOST_MAX + 128];
	if (!c->rec.host[0] || !why)
		snprintf(text, sizeof(text), "%s", why ? why : px_status_text(status));
	else if (d == PXD_DENIED)
		snprintf(text, sizeof(text), "%s refused: %s", c->rec.host, why);
	else
		snprintf(text, sizeof(text), "%s for %s", why, c->rec.host);
	px_reply(c->client, status, text, cfg->idle_ms);
}

/* Reads the request head; buf keeps what followed it. Returns the parser or NULL (recorded). */
static struct pr_state *read_head(struct px_conn *c, const struct px_config *cfg, char *buf, size_t *rest,
				  size_t *nrest)
{
	struct pr_state *st = NULL;
	if (pr_new(0, &st) < 0) {
		refuse(c, cfg, PXD_ERROR, 503, "out of memory");
		return NULL;
	}
	for (;;) {
		struct pollfd p = {.fd = c->client, .events = POLLIN};
		int r = poll(&p, 1, cfg->idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			refuse(c, cfg, PXD_ERROR, 408, "no complete request before the idle timeout");
			break;
		}
		ssize_t n = recv(c->client, buf, PX_IO_BUF, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			c->rec.decision = PXD_ERROR;
			c->rec.reason = "client closed before a complete request";
			break;
		}
		size_t used;
		enum pr_status s = pr_feed(st, buf, (size_t)n, &used);
		if (s == PR_NEED_MORE)
			continue;
		if (s == PR_ERROR) {
			refuse(c, cfg, PXD_ERROR, pr_error_status(st), pr_error_reason(st));
			break;
		}
		*rest = used;
		*nrest = (size_t)n - used;
		return st;
	}
	pr_free(st);
	return NULL;
}

static void fill_addr(struct px_record *rec, const struct rs_addr *a)
{
	const void *p = a->ss.ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)&a->ss)->sin_addr
						   : (const void *)&((const struct sockaddr_in6 *)&a->ss)->sin6_addr;
	inet_ntop(a->ss.ss_family, p, rec->addr, sizeof(rec->addr));
}

int px_connect_checked(struct px_conn *c, const struct px_config *cfg, const char *host, uint16_t port)
{
	struct rs_addr addrs[RS_MAX_ADDRS];
	size_t n = 0;
	int r = rs_resolve(host, port, cfg->hosts_file, addrs, &n);
	if (r < 0) {
		refuse(c, cfg, PXD_ERROR, 502, r == -ENOENT ? "name does not resolve" : "name resolution failed");
		return -1;
	}
	const char *why = NULL;
	int last = 0;
	bool tried = false;
	for (size_t i = 0; i < n; i++) {
		const char *bad = ac_check((const struct sockaddr *)&addrs[i].ss, addrs[i].len, cfg->allow_private);
		if (bad) {
			if (!why) {
				why = bad;
				fill_addr(&c->rec, &addrs[i]);
			}
			continue;
		}
		tried = true;
		fill_addr(&c->rec, &addrs[i]);
		int fd = rs_connect(&addrs[i], min_int(cfg->idle_ms, PX_CONNECT_TIMEOUT_MS));
		if (fd >= 0) {
			if (px_conn_set_upstream(c, fd))
				return fd;
			close(fd);
			refuse(c, cfg, PXD_ERROR, 503, "the job is ending");
			return -1;
		}
		last = fd;
	}
	if (!tried) {
		/* Static reasons only: "address is loopback", "... private", ... */
		refuse(c, cfg, PXD_DENIED, 403, why ? why : "no permitted address");
		c->rec.reason = why;
		return -1;
	}
	refuse(c, cfg, PXD_ERROR, 502, last == -ETIMEDOUT ? "connect timed out" : "connect failed");
	return -1;
}

/* One direction of a relay: bytes move socket -> pipe -> socket with splice(), never through
 * our memory (the copy loop reached ~85% of a direct download; splice keeps up with it). */
struct px_dir {
	int from, to, pipe[2];
	size_t queued; /* in the pipe, not yet written */
	bool eof;      /* from is done; to was shut down once the pipe drained */
	uint64_t *count;
};

#define PX_SPLICE_CHUNK (1 << 20)

static int dir_open(struct px_dir *d, int from, int to, uint64_t *count)
{
	*d = (struct px_dir){.from = from, .to = to, .count = count};
	if (pipe2(d->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	(void)fcntl(d->pipe[1], F_SETPIPE_SZ, PX_SPLICE_CHUNK); /* best effort: 64 KiB works too */
	return 0;
}

static void dir_close(struct px_dir *d)
{
	close(d->pipe[0]);
	close(d->pipe[1]);
}

static bool dir_done(const struct px_dir *d)
{
	return d->eof && d->queued == 0;
}

/* Moves what can move without blocking. -1 on a hard error of either side. */
static int dir_step(struct px_dir *d)
{
	if (!d->eof && d->queued == 0) {
		ssize_t n = splice(d->from, NULL, d->pipe[1], NULL, PX_SPLICE_CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == 0)
			d->eof = true;
		else if (n > 0) {
			d->queued = (size_t)n;
			*d->count += (uint64_t)n;
		} else if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	while (d->queued > 0) {
		ssize_t n = splice(d->pipe[0], NULL, d->to, NULL, d->queued, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0)
			return -1;
		d->queued -= (size_t)n;
	}
	if (dir_done(d))
		shutdown(d->to, SHUT_WR);
	return 0;
}

static void dir_poll(const struct px_dir *d, struct pollfd *p)
{
	*p = (struct pollfd){.fd = -1};
	if (d->queued > 0)
		*p = (struct pollfd){.fd = d->to, .events = POLLOUT};
	else if (!d->eof)
		*p = (struct pollfd){.fd = d->from, .events = POLLIN};
}

void px_relay(struct px_conn *c, int idle_ms)
{
	struct px_dir up, down;
	if (dir_open(&up, c->client, c->upstream, &c->rec.bytes_up) < 0) {
		c->rec.reason = "out of pipes";
		return;
	}
	if (dir_open(&down, c->upstream, c->client, &c->rec.bytes_down) < 0) {
		dir_close(&up);
		c->rec.reason = "out of pipes";
		return;
	}
	while (!dir_done(&up) || !dir_done(&down)) {
		struct pollfd p[2];
		dir_poll(&up, &p[0]);
		dir_poll(&down, &p[1]);
		int r = poll(p, 2, idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			c->rec.reason = r == 0 ? "idle timeout" : "poll failed";
			break;
		}
		if ((p[0].revents && dir_step(&up) < 0) || (p[1].revents && dir_step(&down) < 0))
			break; /* a reset on either side ends the connection */
		/* Plain HTTP: the upstream answered and closed; the client's side may stay open. */
		if (dir_done(&down) && c->rec.kind == PXK_HTTP)
			break;
	}
	dir_close(&up);
	dir_close(&down);
}

static const char *policy_refusal(const struct px_config *cfg, const struct pr_request *req)
{
	if (req->kind == PR_ABSOLUTE && !cfg->plain_http)
		return "plain HTTP is not enabled (use https through CONNECT)";
	if (!cfg->allow || !al_allow_match(cfg->allow, req->host, req->port)) {
		if (req->host_kind != AL_HOST_NAME)
			return "IP literal not on the allowlist";
		return "host or port not on the allowlist";
	}
	return NULL;
}

static void serve_terminated(struct px_conn *c, const struct px_config *cfg, size_t nrest);

/* Plain HTTP is seen whole: its one request is held to the host's rules here. No secret is ever
 * put into it (it would travel in clear text). */
static bool http_permitted(struct px_conn *c, const struct px_config *cfg, const struct pr_request *req)
{
	snprintf(c->rec.method, sizeof(c->rec.method), "%s", req->method);
	snprintf(c->rec.path, sizeof(c->rec.path), "%s", req->path ? req->path : "/");
	if (!al_allow_sees(cfg->allow, req->host, req->port))
		return true;
	int r = al_allow_request(cfg->allow, req->host, req->port, req->method, req->path ? req->path : "/",
				 c->rec.rule, sizeof(c->rec.rule));
	if (r == 0)
		return true;
	char text[1024];
	c->rec.decision = PXD_DENIED;
	c->rec.reason = "no rule allows this request";
	c->rec.status = 403;
	snprintf(text, sizeof(text), "airlock: %s %s%s refused: %s; the rules for this host: %s", req->method,
		 req->host, req->path ? req->path : "/", c->rec.reason, c->rec.rule);
	px_reply(c->client, 403, text, cfg->idle_ms);
	return false;
}

static void serve_network(struct px_conn *c, const struct px_config *cfg, const struct pr_request *req,
			  const char *rest, size_t nrest)
{
	c->rec.kind = req->kind == PR_CONNECT ? PXK_CONNECT : PXK_HTTP;
	snprintf(c->rec.host, sizeof(c->rec.host), "%s", req->host);
	c->rec.port = req->port;
	const char *no = policy_refusal(cfg, req);
	if (no) {
		refuse(c, cfg, PXD_DENIED, 403, no);
		return;
	}
	if (req->kind == PR_CONNECT && px_tls_wanted(cfg, req->host, req->port)) {
		serve_terminated(c, cfg, nrest);
		return;
	}
	if (req->kind == PR_ABSOLUTE && !http_permitted(c, cfg, req))
		return;
	if (px_connect_checked(c, cfg, req->host, req->port) < 0)
		return;
	c->rec.decision = PXD_ALLOWED;
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	int r = req->kind == PR_CONNECT ? px_write_all(c->client, ok, sizeof(ok) - 1, cfg->idle_ms)
					: px_write_all(c->upstream, req->head, req->head_len, cfg->idle_ms);
	if (r == 0 && nrest > 0 && (r = px_write_all(c->upstream, rest, nrest, cfg->idle_ms)) == 0)
		c->rec.bytes_up += nrest;
	if (r < 0) {
		c->rec.reason = "write failed";
		return;
	}
	px_relay(c, cfg->idle_ms);
}

/* A CONNECT whose requests airlock must see: the tunnel is acknowledged without an upstream yet,
 * the TLS ends here (pxtls.c), and each request makes its own checked upstream connection. */
static void serve_terminated(struct px_conn *c, const struct px_config *cfg, size_t nrest)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	if (nrest > 0) {
		/* The job sent TLS before our answer: those bytes would have to be fed to OpenSSL
		 * by hand; no client does this, so it is refused rather than half-supported. */
		refuse(c, cfg, PXD_ERROR, 400, "data after CONNECT before the tunnel was established");
		return;
	}
	if (px_write_all(c->client, ok, sizeof(ok) - 1, cfg->idle_ms) < 0) {
		c->rec.reason = "write failed";
		return;
	}
	px_tls_serve(c, cfg);
}

void px_conn_serve(struct px_conn *c, const struct px_config *cfg)
{
	char *buf = malloc(PX_IO_BUF);
	c->rec.kind = PXK_INVALID;
	if (!buf) {
		refuse(c, cfg, PXD_ERROR, 503, "out of memory");
		return;
	}
	size_t at = 0, nrest = 0;
	struct pr_state *st = read_head(c, cfg, buf, &at, &nrest);
	if (st) {
		const struct pr_request *req = pr_request(st);
		if (req->kind == PR_CONNECT || req->kind == PR_ABSOLUTE)
			serve_network(c, cfg, req, buf + at, nrest);
		else if (cfg->brokers && al_broker_count(cfg->brokers) > 0)
			broker_serve(cfg->brokers, c, cfg, req, buf + at, nrest);
		else
			refuse(c, cfg, PXD_ERROR, 400, "not a proxy request");
		pr_free(st);
	}
	free(buf);
}
