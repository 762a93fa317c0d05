/* proxy.c — a port of a sandbox's own loopback reached through the server: HTTP requests and answers streamed both ways, WebSocket spliced once switched.
 *
 *   client ──HTTP──▶ serve (this file, on the connection's own thread) ──TCP──▶ 127.0.0.1:PORT
 *                                                                            in the sandbox's netns
 * The connection to the sandbox is made by the manager (sbports.c) from a socket that the
 * sandbox's init created in its network namespace (hold.c): serve never enters the namespace, and
 * the sandbox gets no route anywhere. One upstream connection per request ("Connection: close"),
 * so an answer ends where the sandbox server says (Content-Length, chunked) or at its close.
 * Every buffer is bounded (PX_BUF each way): a 50 MiB answer costs the server PX_BUF, and a
 * client that reads slowly slows the sandbox's server down rather than filling our memory.
 */
#include "http/proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/e2b.h"
#include "util/cleanup.h"

#define PX_BUF	      65536  /* the sandbox server's bytes held at once; also the request head's cap */
#define PX_HEAD_MAX   65536  /* an answer's head (status line and headers) at most */
#define PX_IO_MS      60000  /* a read or write that makes no progress this long ends the exchange */
#define PX_HEAD_MS    300000 /* how long the sandbox's server may take to start its answer */
#define PX_PREFIX_MAX (SRV_SANDBOX_ID_MAX + 32)
/* What a proxied page runs under: an opaque origin of its own (no allow-same-origin), so its
 * scripts can read neither the console's storage (its approver's token) nor any answer of this
 * server's API, though they share its host and port. Added to every answer: it cannot be removed
 * by the sandbox (a second policy only restricts further). */
#define PX_CSP "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

enum px_framing {
	PX_NONE,    /* no body (HEAD, 1xx, 204, 304) */
	PX_LENGTH,  /* left bytes */
	PX_CHUNKED, /* the sandbox server's chunks, decoded (libmicrohttpd chunks them again) */
	PX_EOF,	    /* until the sandbox server closes */
};

enum px_chunk {
	CH_SIZE,
	CH_DATA,
	CH_CRLF,
	CH_TRAILER,
	CH_DONE,
};

struct hx_proxy {
	struct hx_server *s;
	int fd;	       /* to the sandbox's port (ours) */
	int client_fd; /* the client's connection (libmicrohttpd's): only looked at */
	unsigned port;
	char prefix[PX_PREFIX_MAX]; /* "/v1/sandboxes/ID/ports/PORT"; "" for E2B's addressing */
	bool e2b;		    /* named by E2B's headers or Host (e2b.c): the target is the URI as sent */
	bool head_only, websocket, chunked_up, failed;
	bool set_cookie; /* the token came in the URL: answer with it as a cookie */
	char token[SRV_PORT_TOKEN_LEN * 2 + 1];
	char *buf; /* PX_BUF bytes from the sandbox server: [off, len) unread */
	size_t off, len;
	enum px_framing framing;
	enum px_chunk chunk;
	uint64_t left;
	bool upgraded;
};

/* ---- the socket to the sandbox ------------------------------------------------------------- */

/* Waits for events on the sandbox's socket in slices, giving up when the server stops, the client
 * goes, or ms pass: 1 when ready, 0 on timeout, -1 to give up. */
static int px_wait(struct hx_proxy *px, short events, int ms)
{
	for (int waited = 0; waited < ms; waited += HX_WAIT_SLICE_MS) {
		struct pollfd pf = {.fd = px->fd, .events = events};
		int n = poll(&pf, 1, HX_WAIT_SLICE_MS);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -1;
		if (hx_stopping(px->s) || (!px->upgraded && hx_peer_gone(px->client_fd)))
			return -1;
	}
	return 0;
}

static int px_write(struct hx_proxy *px, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(px->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return -errno;
		if (px_wait(px, POLLOUT, PX_IO_MS) <= 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* More of the sandbox server's bytes into buf (moved to its start): their count, 0 at its end,
 * -ENOBUFS when buf is full, another -errno. */
static ssize_t px_fill(struct hx_proxy *px, int ms)
{
	if (px->off) {
		memmove(px->buf, px->buf + px->off, px->len - px->off);
		px->len -= px->off;
		px->off = 0;
	}
	if (px->len == PX_BUF)
		return -ENOBUFS;
	for (;;) {
		ssize_t n = recv(px->fd, px->buf + px->len, PX_BUF - px->len, 0);
		if (n >= 0) {
			px->len += (size_t)n;
			return n;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		int w = px_wait(px, POLLIN, ms);
		if (w <= 0)
			return w == 0 ? -ETIMEDOUT : -ECANCELED;
	}
}

/* ---- the request ------------------------------------------------------------------------- */

/* Growing text of bounded size (the request's head). */
struct px_text {
	char *p;
	size_t len, cap;
	bool over;
};

static void text_add(struct px_text *t, const char *a, size_t n)
{
	if (t->over || t->len + n + 1 > t->cap) {
		t->over = true;
		return;
	}
	memcpy(t->p + t->len, a, n);
	t->len += n;
	t->p[t->len] = 0;
}

static void text_str(struct px_text *t, const char *a)
{
	text_add(t, a, strlen(a));
}

/* Whether list (a header's comma-separated tokens) names tok. */
static bool has_token(const char *list, const char *tok)
{
	size_t n = strlen(tok);
	for (const char *p = list; p && *p;) {
		p += strspn(p, " \t,");
		size_t k = strcspn(p, " \t,;");
		if (k == n && strncasecmp(p, tok, n) == 0)
			return true;
		p += k;
		p += strcspn(p, ",");
	}
	return false;
}

/*
 * Headers that are not the sandbox server's to see: the hop-by-hop ones (RFC 9110 7.6.1; this hop's
 * connection is ours), those the client's Connection header names, and the credentials that
 * opened this door — the caller's bearer token and the port token — which the sandbox must never
 * learn. Content-Length and Transfer-Encoding are set again from what the body is.
 */
static bool dropped(const char *name, const char *connection)
{
	static const char *const hop[] = {"Connection",
					  "Keep-Alive",
					  "Proxy-Connection",
					  "Proxy-Authenticate",
					  "Proxy-Authorization",
					  "TE",
					  "Trailer",
					  "Transfer-Encoding",
					  "Upgrade",
					  "Authorization",
					  "X-Airlock-Port-Token",
					  "Expect",
					  "Content-Length",
					  "Cookie",
					  "X-Forwarded-Prefix"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(hop); i++)
		if (strcasecmp(name, hop[i]) == 0)
			return true;
	return connection && has_token(connection, name);
}

/* What opened an E2B-addressed request (e2b.c): the owner's API key, the sandbox's access and
 * traffic tokens, and the routing headers of this hop. The sandbox's server never learns them. */
static bool e2b_dropped(const char *name)
{
	static const char *const e2b[] = {"X-API-Key", "X-Access-Token", "E2B-Traffic-Access-Token", "E2b-Sandbox-Id",
					  "E2b-Sandbox-Port"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(e2b); i++)
		if (strcasecmp(name, e2b[i]) == 0)
			return true;
	return false;
}

/* The client's cookies but the port token's (which only opens this door). */
static void cookies_add(struct px_text *t, const char *cookie)
{
	bool any = false;
	for (const char *p = cookie; p && *p;) {
		p += strspn(p, " ;");
		size_t k = strcspn(p, ";");
		size_t name = sizeof(HX_PORT_COOKIE) - 1;
		bool ours = k > name && strncmp(p, HX_PORT_COOKIE, name) == 0 && p[name] == '=';
		if (k && !ours) {
			text_str(t, any ? "; " : "Cookie: ");
			text_add(t, p, k);
			any = true;
		}
		p += k;
	}
	if (any)
		text_str(t, "\r\n");
}

struct px_headers {
	struct px_text *t;
	const char *connection;
	bool e2b;
};

static enum MHD_Result header_add(void *cls, enum MHD_ValueKind kind, const char *name, const char *value)
{
	struct px_headers *h = cls;
	(void)kind;
	if (!name || !value || dropped(name, h->connection) || (h->e2b && e2b_dropped(name)) || strpbrk(value, "\r\n"))
		return MHD_YES;
	text_str(h->t, name);
	text_str(h->t, ": ");
	text_str(h->t, value);
	text_str(h->t, "\r\n");
	return MHD_YES;
}

/* The request target for the sandbox's server: the raw URI past "/v1/sandboxes/ID/ports/PORT"
 * (five segments; none for E2B's addressing, which names the port outside the path), "/" when
 * nothing is left, and without the airlock_token query argument. */
static void target_add(struct px_text *t, const char *raw, bool e2b)
{
	const char *p = raw;
	for (int seg = 0; !e2b && seg < 5 && *p == '/'; seg++)
		p += 1 + strcspn(p + 1, "/?");
	size_t path = strcspn(p, "?");
	if (path == 0)
		text_str(t, "/");
	text_add(t, p, path);
	const char *q = p[path] == '?' ? p + path + 1 : NULL;
	bool first = true;
	for (; q && *q;) {
		size_t k = strcspn(q, "&");
		bool ours = (k >= 13 && strncmp(q, "airlock_token", 13) == 0 && (k == 13 || q[13] == '='));
		if (!ours) {
			text_str(t, first ? "?" : "&");
			text_add(t, q, k);
			first = false;
		}
		q += k + (q[k] == '&');
	}
}

/* The request's head for the sandbox's server, in t. */
static void request_head(struct hx_proxy *px, struct MHD_Connection *conn, const struct hx_request *rq, const char *raw,
			 struct px_text *t)
{
	text_str(t, rq->method);
	text_str(t, " ");
	target_add(t, raw, px->e2b);
	text_str(t, " HTTP/1.1\r\n");
	const char *connection = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Connection");
	struct px_headers h = {.t = t, .connection = connection, .e2b = px->e2b};
	MHD_get_connection_values(conn, MHD_HEADER_KIND, header_add, &h);
	cookies_add(t, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Cookie"));
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
	if (te && has_token(te, "chunked")) {
		px->chunked_up = true; /* libmicrohttpd gives us the body unchunked: chunked again */
		text_str(t, "Transfer-Encoding: chunked\r\n");
	} else if (cl && strspn(cl, "0123456789") == strlen(cl) && *cl) {
		text_str(t, "Content-Length: ");
		text_str(t, cl);
		text_str(t, "\r\n");
	}
	if (px->prefix[0]) {
		text_str(t, "X-Forwarded-Prefix: ");
		text_str(t, px->prefix);
		text_str(t, "\r\n");
	}
	text_str(t, px->websocket ? "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n" : "Connection: close\r\n\r\n");
}

/* The WebSocket handshake of RFC 6455: GET, Upgrade: websocket, Connection naming upgrade. */
static bool wants_websocket(struct MHD_Connection *conn, const char *method)
{
	const char *up = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Upgrade");
	const char *c = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Connection");
	return strcmp(method, "GET") == 0 && up && has_token(up, "websocket") && c && has_token(c, "upgrade");
}

/* "/v1/sandboxes/ID/ports/PORT..." (decoded): the id and port, or false. */
static bool parse_path(const char *path, char *id, size_t idcap, char *port, size_t portcap)
{
	const char *p = path + strlen("/v1/sandboxes/");
	size_t k = strcspn(p, "/");
	if (strncmp(path, "/v1/sandboxes/", 14) != 0 || !k || k >= idcap || strncmp(p + k, "/ports/", 7) != 0)
		return false;
	memcpy(id, p, k);
	id[k] = 0;
	p += k + 7;
	k = strcspn(p, "/");
	if (k >= portcap)
		k = portcap - 1;
	memcpy(port, p, k);
	port[k] = 0;
	return true;
}

static int open_error(struct hx_response *rs, int r, const struct al_error *err, unsigned port)
{
	int st = r == -EACCES ? 401 : r == -ECONNREFUSED ? 502 : r == -ETIMEDOUT ? 504 : hx_status_of_errno(r);
	if (err->msg[0])
		hx_error(rs, st, "%s", err->msg);
	else
		hx_error(rs, st, "cannot reach port %u of the sandbox", port);
	return 1;
}

/* "/v1/sandboxes/ID/ports/PORT" itself, the port's root without its slash: 1 when rs got the
 * redirect to ".../PORT/" (the page's relative links then resolve beneath it). */
static int root_redirect(const struct hx_request *rq, const char *raw, struct hx_response *rs)
{
	const char *p = raw;
	for (int seg = 0; seg < 5 && *p == '/'; seg++)
		p += 1 + strcspn(p + 1, "/?");
	if (*p == '/' || (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0))
		return 0;
	size_t n = (size_t)(p - raw);
	if (!(rs->location = malloc(n + strlen(p) + 2))) {
		hx_error(rs, 500, "out of memory");
		return 1;
	}
	snprintf(rs->location, n + strlen(p) + 2, "%.*s/%s", (int)n, raw, p);
	rs->status = 308;
	return 1;
}

static struct hx_proxy *px_new(struct hx_server *s, struct MHD_Connection *conn)
{
	struct hx_proxy *px = calloc(1, sizeof(*px));
	if (px && !(px->buf = malloc(PX_BUF))) {
		free(px);
		px = NULL;
	}
	if (!px)
		return NULL;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	px->s = s;
	px->fd = -1;
	px->client_fd = ci ? ci->connect_fd : -1;
	return px;
}

int hx_proxy_open(struct hx_server *s, struct MHD_Connection *conn, const struct hx_request *rq, const char *raw_uri,
		  struct hx_proxy **out, struct hx_response *rs)
{
	char id[SRV_SANDBOX_ID_MAX], portname[8];
	const struct srv_mgr_api *m = s->o.mgr;
	/* E2B's addressing (E2b-Sandbox-Id and -Port, or a Host "PORT-ID.DOMAIN"): e2b_precheck
	 * named the principal (the owner's API key, or the sandbox's traffic or access token, which
	 * stand for its owner); the manager's ownership check below decides, as for the JSON API. */
	struct e2b_target et;
	bool e2b = e2b_claims(s, rq, &et) && e2b_port_proxied(&et);
	if (e2b) {
		snprintf(id, sizeof(id), "%s", et.sandbox);
		snprintf(portname, sizeof(portname), "%u", et.port);
	} else if (!parse_path(rq->path, id, sizeof(id), portname, sizeof(portname))) {
		hx_error(rs, 404, "no such resource: %.200s", rq->path);
		return 1;
	}
	if (!raw_uri) {
		hx_error(rs, 404, "no such resource: %.200s", rq->path);
		return 1;
	}
	unsigned port = hx_port_number(portname);
	if (!port) {
		hx_error(rs, 400, "port \"%.8s\": a port is a number from 1 to 65535", portname);
		return 1;
	}
	if (!e2b && root_redirect(rq, raw_uri, rs))
		return 1;
	if (!m->port_connect) {
		hx_error(rs, 501, "this manager cannot reach a sandbox's ports");
		return 1;
	}
	struct hx_proxy *px = px_new(s, conn);
	if (!px) {
		hx_error(rs, 500, "out of memory");
		return 1;
	}
	bool from_query = false;
	const char *token = e2b ? NULL : hx_port_token(rq, &from_query);
	struct srv_port_req req = {.owner = rq->who->name[0] ? rq->who->name : "anonymous",
				   .sandbox_id = id,
				   .port = (uint16_t)port,
				   .token = token};
	struct al_error err = {0};
	/* The owner or the token is checked before the connection is made: a refused request
	 * reaches nothing in the sandbox, not even a SYN. */
	int r = m->port_connect(m->ctx, &req, &px->fd, &err);
	if (r < 0) {
		hx_proxy_free(px);
		return open_error(rs, r, &err, port);
	}
	px->port = port;
	px->e2b = e2b;
	if (token)
		hx_conn_mark(s, conn, true, false); /* the manager took the token: a credential */
	if (!e2b)
		snprintf(px->prefix, sizeof(px->prefix), "/v1/sandboxes/%s/ports/%u", id, port);
	/* Only a token of ours' shape goes into a header (no ';' or spaces to smuggle attributes). */
	px->set_cookie =
		from_query && token && strlen(token) < sizeof(px->token) &&
		strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == strlen(token);
	if (px->set_cookie)
		snprintf(px->token, sizeof(px->token), "%s", token);
	px->head_only = strcmp(rq->method, "HEAD") == 0;
	px->websocket = wants_websocket(conn, rq->method);
	struct px_text t = {.p = malloc(PX_BUF), .cap = PX_BUF};
	if (t.p)
		request_head(px, conn, rq, raw_uri, &t);
	r = !t.p ? -ENOMEM : t.over ? -E2BIG : px_write(px, t.p, t.len);
	free(t.p);
	if (r < 0) {
		hx_proxy_free(px);
		if (r == -E2BIG)
			hx_error(rs, 431, "the request's headers exceed %d bytes", PX_BUF);
		else
			hx_error(rs, 502, "the sandbox's server on port %u did not take the request", port);
		return 1;
	}
	*out = px;
	return 0;
}

void hx_proxy_body(struct hx_proxy *px, const char *data, size_t n)
{
	if (px->failed || !n)
		return;
	char size[24];
	int k = snprintf(size, sizeof(size), "%zx\r\n", n);
	int r = px->chunked_up ? px_write(px, size, (size_t)k) : 0;
	if (r == 0)
		r = px_write(px, data, n);
	if (r == 0 && px->chunked_up)
		r = px_write(px, "\r\n", 2);
	px->failed = r < 0; /* the rest is read and dropped; the answer says 502 */
}

/* ---- the answer --------------------------------------------------------------------------- */

/* The status of a status line ("HTTP/1.1 200 OK"): its three digits, or 0. */
static int status_of(const char *line)
{
	const char *d = line + 9;
	if (line[8] != ' ' || strspn(d, "0123456789") != 3 || (d[3] != ' ' && d[3] != '\r'))
		return 0;
	return (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
}

/* The head of the sandbox server's answer, NUL-terminated in buf[0..end), end past its blank
 * line: 0, or -errno (-EPROTO: not HTTP). Interim answers (1xx but 101) are skipped. */
static int read_head(struct hx_proxy *px, size_t *end)
{
	for (;;) {
		char *e = NULL;
		while (!(e = memmem(px->buf + px->off, px->len - px->off, "\r\n\r\n", 4))) {
			ssize_t n = px_fill(px, PX_HEAD_MS);
			if (n == 0)
				return -EPIPE;
			if (n < 0)
				return n == -ENOBUFS ? -EPROTO : (int)n;
		}
		size_t at = (size_t)(e - px->buf) + 4;
		if (px->len - px->off < 12 || strncmp(px->buf + px->off, "HTTP/1.", 7) != 0)
			return -EPROTO;
		int status = status_of(px->buf + px->off);
		if (status >= 100 && status < 200 && status != 101) {
			px->off = at;
			continue;
		}
		e[2] = 0; /* the head as a string: its last line keeps its CRLF */
		*end = at;
		return 0;
	}
}

/* The value of header name in head (case-insensitive), copied into v[0..cap): whether it is there. */
static bool head_value(const char *head, const char *name, char *v, size_t cap)
{
	size_t n = strlen(name);
	for (const char *l = strstr(head, "\r\n"); l && l[2];) {
		l += 2;
		const char *next = strstr(l, "\r\n");
		if (!next)
			break;
		if (strncasecmp(l, name, n) == 0 && l[n] == ':') {
			const char *p = l + n + 1;
			p += strspn(p, " \t");
			size_t k = (size_t)(next - p);
			while (k && (p[k - 1] == ' ' || p[k - 1] == '\t'))
				k--;
			snprintf(v, cap, "%.*s", (int)k, p);
			return true;
		}
		l = next;
	}
	return false;
}

/* Headers of the answer that go to the client: all but the hop-by-hop ones and those
 * libmicrohttpd sets itself (framing, Date). */
static void answer_headers(struct MHD_Response *r, char *head)
{
	static const char *const skip[] = {"Connection",	"Keep-Alive", "Proxy-Connection", "TE",	 "Trailer",
					   "Transfer-Encoding", "Upgrade",    "Content-Length",	  "Date"};
	char conn[256] = "";
	(void)head_value(head, "Connection", conn, sizeof(conn));
	char *l = strstr(head, "\r\n"); /* the end of the status line */
	while (l && l[2]) {
		l += 2;
		char *next = strstr(l, "\r\n");
		if (!next)
			break;
		char *colon = memchr(l, ':', (size_t)(next - l));
		if (colon && colon > l) {
			*colon = 0;
			*next = 0;
			const char *v = colon + 1 + strspn(colon + 1, " \t");
			bool keep = !has_token(conn, l);
			for (size_t i = 0; keep && i < AL_ARRAY_SIZE(skip); i++)
				keep = strcasecmp(l, skip[i]) != 0;
			if (keep)
				(void)MHD_add_response_header(r, l, v);
			*colon = ':';
			*next = '\r';
		}
		l = strstr(l, "\r\n"); /* next again, restored */
	}
}

/* Headers of ours on every proxied answer: the policy above, and the token as a cookie scoped to
 * this port's path (HttpOnly: no script reads it; SameSite=Strict: no other site's page makes the
 * browser send it). */
static void our_headers(struct hx_proxy *px, struct MHD_Response *r)
{
	MHD_add_response_header(r, "Content-Security-Policy", PX_CSP);
	if (!px->set_cookie)
		return;
	char c[sizeof(px->token) + PX_PREFIX_MAX + 96];
	snprintf(c, sizeof(c), "%s=%s; Path=%s; HttpOnly; SameSite=Strict", HX_PORT_COOKIE, px->token, px->prefix);
	MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, c);
	/* The token was in the URL: no page of the sandbox's passes it on in a Referer. */
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
}

/* Chunked decoding: the next line of buf (through its LF) as [*line, its length), filling as need be. */
static int next_line(struct hx_proxy *px, const char **line, size_t *n)
{
	for (;;) {
		char *lf = memchr(px->buf + px->off, '\n', px->len - px->off);
		if (lf) {
			*line = px->buf + px->off;
			*n = (size_t)(lf + 1 - *line);
			px->off += *n;
			return 0;
		}
		ssize_t r = px_fill(px, PX_IO_MS);
		if (r <= 0)
			return r == 0 ? -EPIPE : (int)r;
	}
}

/* Up to max decoded bytes of a chunked body: their count, 0 at its end, -errno. */
static ssize_t chunked_read(struct hx_proxy *px, char *out, size_t max)
{
	for (;;) {
		const char *l;
		size_t n;
		int r;
		switch (px->chunk) {
		case CH_SIZE:
			if ((r = next_line(px, &l, &n)) < 0)
				return r;
			char *end;
			px->left = strtoull(l, &end, 16);
			if (end == l)
				return -EPROTO;
			px->chunk = px->left ? CH_DATA : CH_TRAILER;
			continue;
		case CH_DATA:
			if (px->off == px->len) {
				ssize_t f = px_fill(px, PX_IO_MS);
				if (f <= 0)
					return f == 0 ? -EPIPE : f;
			}
			n = px->len - px->off;
			n = n < max ? n : max;
			n = n < px->left ? n : (size_t)px->left;
			memcpy(out, px->buf + px->off, n);
			px->off += n;
			if (!(px->left -= n))
				px->chunk = CH_CRLF;
			return (ssize_t)n;
		case CH_CRLF:
			if ((r = next_line(px, &l, &n)) < 0)
				return r;
			px->chunk = CH_SIZE;
			continue;
		case CH_TRAILER: /* trailers are dropped: libmicrohttpd's chunks end without */
			if ((r = next_line(px, &l, &n)) < 0)
				return r;
			if (n <= 2)
				px->chunk = CH_DONE;
			continue;
		case CH_DONE:
			return 0;
		}
	}
}

/* libmicrohttpd's content reader: on this connection's thread, blocking in slices (px_wait). */
static ssize_t answer_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct hx_proxy *px = cls;
	(void)pos;
	ssize_t n;
	if (px->framing == PX_CHUNKED) {
		n = chunked_read(px, out, max);
		return n > 0 ? n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (px->framing == PX_NONE || (px->framing == PX_LENGTH && px->left == 0))
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (px->off == px->len && (n = px_fill(px, PX_IO_MS)) <= 0)
		return n == 0 && px->framing == PX_EOF ? MHD_CONTENT_READER_END_OF_STREAM
						       : MHD_CONTENT_READER_END_WITH_ERROR;
	n = (ssize_t)(px->len - px->off < max ? px->len - px->off : max);
	if (px->framing == PX_LENGTH && (uint64_t)n > px->left)
		n = (ssize_t)px->left;
	memcpy(out, px->buf + px->off, (size_t)n);
	px->off += (size_t)n;
	if (px->framing == PX_LENGTH)
		px->left -= (uint64_t)n;
	return n;
}

static void answer_free(void *cls)
{
	(void)cls; /* px is the request's (hx_proxy_free, once it is over) */
}

/* ---- WebSocket ------------------------------------------------------------------------------ */

/* One direction of the splice: a bounded buffer [off, len). */
struct px_pipe {
	char buf[PX_BUF];
	size_t off, len;
	bool eof;
};

/* Moves what can be moved without blocking from `from` through p to `to`: false when either
 * side ended (end of stream, an error) with nothing left to pass on. */
static bool pipe_step(int from, int to, struct px_pipe *p, short rev_from, short rev_to)
{
	if (!p->eof && p->len < sizeof(p->buf) && (rev_from & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = recv(from, p->buf + p->len, sizeof(p->buf) - p->len, MSG_DONTWAIT);
		if (n > 0)
			p->len += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			p->eof = true;
	}
	if (p->off < p->len && (rev_to & POLLOUT)) {
		ssize_t n = send(to, p->buf + p->off, p->len - p->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0)
			p->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
	}
	if (p->off == p->len)
		p->off = p->len = 0;
	return !(p->eof && p->len == 0);
}

/*
 * Splices the client's socket and the sandbox's, both ways, until either ends (its peer closed,
 * an error) or the server stops: then both are closed. When the sandbox is destroyed its
 * processes die, their sockets close, and that end is seen here like any other.
 */
static void splice_both(struct hx_proxy *px, int client, struct px_pipe *up, struct px_pipe *down)
{
	bool go = true;
	while (go && !hx_stopping(px->s)) {
		struct pollfd pf[2] = {
			{.fd = client,
			 .events = (short)((up->len < sizeof(up->buf) && !up->eof ? POLLIN : 0) |
					   (down->len ? POLLOUT : 0))},
			{.fd = px->fd,
			 .events = (short)((down->len < sizeof(down->buf) && !down->eof ? POLLIN : 0) |
					   (up->len ? POLLOUT : 0))},
		};
		int n = poll(pf, 2, HX_WAIT_SLICE_MS);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		go = pipe_step(client, px->fd, up, pf[0].revents, pf[1].revents);
		go = pipe_step(px->fd, client, down, pf[1].revents, pf[0].revents) && go;
		if ((pf[0].revents | pf[1].revents) & (POLLERR | POLLNVAL))
			go = false;
	}
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in, size_t extra_n,
		       MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct hx_proxy *px = cls;
	(void)con_cls;
	px->upgraded = true;
	hx_conn_mark(px->s, conn, false, true); /* the splice is ours: no request deadline cuts it */
	struct px_pipe *up = calloc(1, sizeof(*up)), *down = calloc(1, sizeof(*down));
	if (up && down && extra_n <= sizeof(up->buf) && px->len - px->off <= sizeof(down->buf)) {
		memcpy(up->buf, extra_in, extra_n); /* the client's first frames, read with its handshake */
		up->len = extra_n;
		memcpy(down->buf, px->buf + px->off, px->len - px->off); /* the sandbox's, read with its 101 */
		down->len = px->len - px->off;
		px->off = px->len = 0;
		splice_both(px, sock, up, down);
	}
	free(up);
	free(down);
	close(px->fd);
	px->fd = -1;
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

/* ---- responding ---------------------------------------------------------------------------- */

static enum MHD_Result px_error(struct hx_proxy *px, struct MHD_Connection *conn, int status, const char *msg)
{
	struct hx_response rs = {0};
	hx_error(&rs, status, "port %u of the sandbox: %s", px->port, msg);
	hx_metrics_request(&px->s->metrics, rs.status);
	enum MHD_Result ret = hx_queue(conn, &rs);
	hx_response_clear(&rs);
	return ret;
}

/* How the body after head is framed. */
static void framing_of(struct hx_proxy *px, const char *head, int status)
{
	char v[64];
	if (px->head_only || status == 204 || status == 304) {
		px->framing = PX_NONE;
	} else if (head_value(head, "Transfer-Encoding", v, sizeof(v)) && has_token(v, "chunked")) {
		px->framing = PX_CHUNKED;
	} else if (head_value(head, "Content-Length", v, sizeof(v)) && *v && strspn(v, "0123456789") == strlen(v)) {
		px->framing = PX_LENGTH;
		px->left = strtoull(v, NULL, 10);
	} else {
		px->framing = PX_EOF;
	}
}

enum MHD_Result hx_proxy_respond(struct hx_proxy *px, struct MHD_Connection *conn)
{
	if (px->failed)
		return px_error(px, conn, 502, "its server stopped reading the request");
	if (px->chunked_up && px_write(px, "0\r\n\r\n", 5) < 0)
		return px_error(px, conn, 502, "its server stopped reading the request");
	size_t end = 0;
	int r = read_head(px, &end);
	if (r == -ETIMEDOUT)
		return px_error(px, conn, 504, "its server did not answer in time");
	if (r < 0)
		return px_error(px, conn, 502,
				r == -EPROTO ? "its server's answer is not HTTP/1.x"
					     : "its server closed the connection without an answer");
	char *head = px->buf + px->off;
	int status = status_of(head);
	px->off = end;
	if (status < 100 || status > 599)
		return px_error(px, conn, 502, "its server's answer has no valid status");
	struct MHD_Response *resp;
	if (status == 101) {
		if (!px->websocket)
			return px_error(px, conn, 502, "its server switched protocols unasked");
		resp = MHD_create_response_for_upgrade(on_upgrade, px);
	} else {
		framing_of(px, head, status);
		uint64_t size = px->framing == PX_LENGTH ? px->left : px->framing == PX_NONE ? 0 : MHD_SIZE_UNKNOWN;
		resp = MHD_create_response_from_callback(size, 16384, answer_reader, px, answer_free);
	}
	if (!resp)
		return MHD_NO;
	answer_headers(resp, head);
	if (status == 101)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	our_headers(px, resp);
	hx_metrics_request(&px->s->metrics, status);
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

void hx_proxy_free(struct hx_proxy *px)
{
	if (!px)
		return;
	if (px->fd >= 0)
		close(px->fd);
	explicit_bzero(px->token, sizeof(px->token));
	free(px->buf);
	free(px);
}
