/* proxyreq.c — the egress proxy's request-head parser: strict, incremental, bounded, no I/O.
 *
 * Decisions (each one errs towards refusing; a refused request costs a retry, a misread one
 * could reach a host the policy never allowed):
 *  - Lines end in CRLF only. A bare LF or a bare CR is 400: the proxy and the upstream server
 *    must never disagree about where a line or the head ends (request smuggling).
 *  - NUL anywhere, control characters and DEL in the request line or headers: 400.
 *  - Request line: exactly METHOD SP TARGET SP HTTP/x.y. Only HTTP/1.0 and 1.1 (505 for
 *    other versions, which also catches the HTTP/2 preface "PRI * HTTP/2.0").
 *  - CONNECT takes authority-form host:port only (port required; IPv6 in brackets).
 *  - Other methods: GET HEAD POST PUT PATCH DELETE OPTIONS (TRACE and unknown methods: 405)
 *    with an absolute-form http:// target (plain HTTP) or an origin-form "/..." target (for
 *    the credential broker, which alone decides where it goes and checks the path itself).
 *    "*", https:// URLs, userinfo and fragments: 400.
 *  - Header lines: obs-fold (a line starting with blank), whitespace before the colon and
 *    non-token names are 400. For absolute- and origin-form, Content-Length must be one plain
 *    decimal, once; Content-Length with Transfer-Encoding is 400; Transfer-Encoding alone is
 *    501 (we forward exactly content_length body bytes and never parse chunked framing).
 *  - The forwarded head never carries Host, Connection or other hop-by-hop headers from the
 *    client; it ends with our own "Connection: close".
 *  - A head longer than max_head is 431.
 */
#include "network/proxyreq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Room in the forwarded head beyond the client's: "Host: [v6]:port\r\n" may be longer than
 * the authority it replaces, plus "Connection: close\r\n". Every append is bounds-checked. */
#define FWD_SLACK 256

struct pr_state {
	size_t max, len; /* head bytes allowed, collected */
	size_t line_len; /* bytes in the current line so far, CR excluded */
	bool cr;	 /* the last byte was CR */
	enum pr_status status;
	int err_status;
	const char *err_reason;
	struct pr_request req;
	char *buf; /* max + 1: the head, NUL-terminated once complete */
	char *fwd; /* max + FWD_SLACK: the head to forward (absolute- and origin-form) */
	size_t fwd_len, fwd_cap;
	char mem[];
};

int pr_new(size_t max_head, struct pr_state **out)
{
	if (max_head == 0)
		max_head = PR_DEFAULT_MAX_HEAD;
	if (max_head < PR_MIN_MAX_HEAD || max_head > PR_MAX_MAX_HEAD)
		return -EINVAL;
	/* One allocation per connection, sized once: nothing grows with what the client sends. */
	struct pr_state *st = calloc(1, sizeof(*st) + (max_head + 1) + (max_head + FWD_SLACK));
	if (!st)
		return -ENOMEM;
	st->max = max_head;
	st->buf = st->mem;
	st->fwd = st->mem + max_head + 1;
	st->fwd_cap = max_head + FWD_SLACK;
	*out = st;
	return 0;
}

void pr_free(struct pr_state *st)
{
	free(st);
}

const struct pr_request *pr_request(const struct pr_state *st)
{
	return st->status == PR_DONE ? &st->req : NULL;
}

int pr_error_status(const struct pr_state *st)
{
	return st->status == PR_ERROR ? st->err_status : 0;
}

const char *pr_error_reason(const struct pr_state *st)
{
	return st->status == PR_ERROR ? st->err_reason : NULL;
}

static enum pr_status fail(struct pr_state *st, int status, const char *reason)
{
	st->status = PR_ERROR;
	st->err_status = status;
	st->err_reason = reason;
	return PR_ERROR;
}

/* ---- characters ------------------------------------------------------------------ */

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool pr_is_token(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

static bool is_vchar(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

static bool name_is(const char *n, size_t nl, const char *lit)
{
	return strlen(lit) == nl && strncasecmp(n, lit, nl) == 0;
}

/* ---- the forwarded head ---------------------------------------------------------- */

static bool fwd_put(struct pr_state *st, const char *s, size_t n)
{
	if (n > st->fwd_cap - st->fwd_len)
		return false;
	memcpy(st->fwd + st->fwd_len, s, n);
	st->fwd_len += n;
	return true;
}

static bool fwd_str(struct pr_state *st, const char *s)
{
	return fwd_put(st, s, strlen(s));
}

/* "Host: name[:port]" rebuilt from the URL's authority: the upstream must see the host the
 * policy checked, never a Host header the client chose (virtual hosting on a shared address,
 * e.g. a CDN, would otherwise reach a site that is not on the list). */
static bool fwd_host(struct pr_state *st)
{
	const struct pr_request *r = &st->req;
	char port[8];
	bool ok = fwd_str(st, "Host: ");
	ok = ok && (r->host_kind != AL_HOST_IPV6 || fwd_str(st, "["));
	ok = ok && fwd_str(st, r->host);
	ok = ok && (r->host_kind != AL_HOST_IPV6 || fwd_str(st, "]"));
	if (r->port != 80) {
		size_t n = 0;
		char digits[6];
		for (unsigned v = r->port; v; v /= 10)
			digits[n++] = (char)('0' + v % 10);
		port[0] = ':';
		for (size_t i = 0; i < n; i++)
			port[1 + i] = digits[n - 1 - i];
		ok = ok && fwd_put(st, port, n + 1);
	}
	return ok && fwd_str(st, "\r\n");
}

/* Headers that are the proxy's business or describe this hop only: never forwarded. Proxy-*
 * carries the client's proxy credentials; Connection/Upgrade could turn the request into
 * something other than one request (we send Connection: close ourselves). */
static bool hop_header(const char *n, size_t nl)
{
	static const char *const drop[] = {"host", "connection", "keep-alive", "upgrade", "te", "trailer"};
	if (nl >= 6 && strncasecmp(n, "proxy-", 6) == 0)
		return true;
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (name_is(n, nl, drop[i]))
			return true;
	return false;
}

/* ---- headers --------------------------------------------------------------------- */

struct hdr_facts {
	bool has_cl, has_te;
	uint64_t cl;
};

static enum pr_status content_length(struct pr_state *st, const char *v, size_t vl, struct hdr_facts *f)
{
	uint64_t n = 0;
	/* One plain decimal, once: "5, 5", "+5", " 5 5" and repeated headers are how two
	 * parsers come to frame the body differently. */
	if (f->has_cl)
		return fail(st, 400, "repeated Content-Length");
	if (vl == 0 || vl > 18)
		return fail(st, 400, "bad Content-Length");
	for (size_t i = 0; i < vl; i++) {
		if (v[i] < '0' || v[i] > '9')
			return fail(st, 400, "bad Content-Length");
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	f->has_cl = true;
	f->cl = n;
	return PR_DONE;
}

/* One header line (no CRLF). Validates it; for absolute- and origin-form, notes framing and
 * copies it on. */
static enum pr_status header_line(struct pr_state *st, const char *l, size_t n, struct hdr_facts *f)
{
	if (l[0] == ' ' || l[0] == '\t')
		return fail(st, 400, "obsolete line folding");
	const char *colon = memchr(l, ':', n);
	size_t nl = colon ? (size_t)(colon - l) : 0;
	/* A non-token name includes "Name :" (whitespace before the colon, RFC 9112 5.1). */
	if (!colon || !pr_is_token(l, nl))
		return fail(st, 400, "bad header name");
	const char *v = colon + 1, *end = l + n;
	for (const char *p = v; p < end; p++)
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
			return fail(st, 400, "control character in header");
	if (st->req.kind == PR_CONNECT)
		return PR_DONE; /* a CONNECT has no content; nothing here is forwarded */
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (name_is(l, nl, "content-length") && content_length(st, v, (size_t)(end - v), f) == PR_ERROR)
		return PR_ERROR;
	if (name_is(l, nl, "transfer-encoding"))
		f->has_te = true;
	if (hop_header(l, nl))
		return PR_DONE;
	if (!fwd_put(st, l, n) || !fwd_str(st, "\r\n"))
		return fail(st, 431, "request head too large");
	return PR_DONE;
}

/* Walks the header lines between the request line and the empty line that ends the head. */
static enum pr_status headers(struct pr_state *st, const char *p, const char *end)
{
	struct hdr_facts f = {0};
	while (p < end) {
		/* pr_feed let through only CRs that are followed by LF. */
		const char *cr = memchr(p, '\r', (size_t)(end - p));
		if (!cr || cr == p)
			break; /* the empty line */
		if (header_line(st, p, (size_t)(cr - p), &f) == PR_ERROR)
			return PR_ERROR;
		p = cr + 2;
	}
	if (st->req.kind == PR_CONNECT)
		return PR_DONE;
	if (f.has_te && f.has_cl)
		return fail(st, 400, "both Content-Length and Transfer-Encoding");
	if (f.has_te)
		return fail(st, 501, "Transfer-Encoding in a request is not supported");
	st->req.content_length = f.cl;
	if (!fwd_str(st, "Connection: close\r\n\r\n"))
		return fail(st, 431, "request head too large");
	st->req.head = st->fwd;
	st->req.head_len = st->fwd_len;
	return PR_DONE;
}

/* ---- the request line ------------------------------------------------------------ */

static enum pr_status parse_connect(struct pr_state *st, const char *t, size_t tl)
{
	const char *why;
	struct pr_request *r = &st->req;
	/* Authority-form only, with a port: "CONNECT host HTTP/1.1" could not say where. Shares
	 * al_hostport_parse with the allowlist, so both read a host the same way. */
	if (al_hostport_parse(t, tl, false, r->host, &r->host_kind, &r->port, &why) < 0)
		return fail(st, 400, "bad CONNECT target");
	if (r->port == 0)
		return fail(st, 400, "CONNECT target needs a port");
	r->kind = PR_CONNECT;
	return PR_DONE;
}

static bool allowed_method(const char *m)
{
	static const char *const ok[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(m, ok[i]) == 0)
			return true;
	return false;
}

/* "/path": only the broker serves these. The target is kept as sent (NUL-terminated in buf):
 * which upstream it reaches and whether its path is acceptable is the broker's decision, made
 * against its own list; nothing here names a host. The head gets no request line: the broker
 * writes its own, with the path rebased onto its upstream's. */
static enum pr_status parse_origin(struct pr_state *st, const char *t, size_t tl)
{
	struct pr_request *r = &st->req;
	if (memchr(t, '#', tl))
		return fail(st, 400, "fragment in URL");
	r->kind = PR_ORIGIN;
	r->host[0] = 0;
	r->port = 0;
	r->path = t;
	return PR_DONE;
}

/* t is NUL-terminated inside buf, which we own: the path is left in place. */
static enum pr_status parse_absolute(struct pr_state *st, char *t, size_t tl, const char *version)
{
	const char *why;
	struct pr_request *r = &st->req;
	if (tl < 7 || strncasecmp(t, "http://", 7) != 0)
		return fail(st, 400, t[0] == '*' ? "not a proxy request" : "only http:// URLs (use CONNECT)");
	if (memchr(t, '#', tl))
		return fail(st, 400, "fragment in URL");
	char *auth = t + 7;
	size_t al = strcspn(auth, "/?");
	/* userinfo: "http://allowed.org@evil.org/" reads differently to different parsers. */
	if (memchr(auth, '@', al))
		return fail(st, 400, "userinfo in URL");
	if (al_hostport_parse(auth, al, false, r->host, &r->host_kind, &r->port, &why) < 0)
		return fail(st, 400, "bad host in URL");
	if (r->port == 0)
		r->port = 80;
	r->kind = PR_ABSOLUTE;
	if (auth[al] == '/') {
		r->path = auth + al;
	} else if (auth[al] == '?') {
		/* "http://h?q" means "/?q": the authority was already copied out, so its last
		 * byte can become the '/'. */
		auth[al - 1] = '/';
		r->path = auth + al - 1;
	} else {
		r->path = "/";
	}
	bool ok = fwd_str(st, r->method) && fwd_str(st, " ") && fwd_str(st, r->path) && fwd_str(st, " ") &&
		  fwd_str(st, version) && fwd_str(st, "\r\n") && fwd_host(st);
	return ok ? PR_DONE : fail(st, 431, "request head too large");
}

static enum pr_status check_version(struct pr_state *st, const char *v)
{
	if (strcmp(v, "HTTP/1.1") == 0 || strcmp(v, "HTTP/1.0") == 0)
		return PR_DONE;
	if (strlen(v) == 8 && strncmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' && v[7] >= '0' &&
	    v[7] <= '9')
		return fail(st, 505, "HTTP version not supported");
	return fail(st, 400, "bad HTTP version");
}

/* The request line, NUL-terminated in place: METHOD SP TARGET SP VERSION. */
static enum pr_status request_line(struct pr_state *st, char *line)
{
	char *sp1 = strchr(line, ' ');
	char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || strchr(sp2 + 1, ' '))
		return fail(st, 400, "malformed request line");
	*sp1 = 0;
	*sp2 = 0;
	char *target = sp1 + 1, *version = sp2 + 1;
	size_t tl = (size_t)(sp2 - target);
	if (tl == 0 || !pr_is_token(line, strlen(line)))
		return fail(st, 400, "malformed request line");
	for (size_t i = 0; i < tl; i++)
		if (!is_vchar((unsigned char)target[i]))
			return fail(st, 400, "bad character in request target");
	if (check_version(st, version) == PR_ERROR)
		return PR_ERROR;
	size_t ml = strlen(line);
	if (ml >= PR_METHOD_MAX)
		return fail(st, 405, "method not allowed");
	memcpy(st->req.method, line, ml + 1); /* fits: checked just above */
	/* Methods are case-sensitive (RFC 9110 9.1): "connect" is not CONNECT. */
	if (strcmp(line, "CONNECT") == 0)
		return parse_connect(st, target, tl);
	if (!allowed_method(line))
		return fail(st, 405, "method not allowed");
	if (target[0] == '/')
		return parse_origin(st, target, tl);
	return parse_absolute(st, target, tl, version);
}

/* The head is complete in buf[0..len) (it ends in CRLF CRLF, or is a lone CRLF). */
static enum pr_status finish(struct pr_state *st)
{
	char *cr = memchr(st->buf, '\r', st->len);
	if (!cr || cr == st->buf)
		return fail(st, 400, "empty request line");
	char *headers_start = cr + 2;
	*cr = 0;
	if (request_line(st, st->buf) == PR_ERROR)
		return PR_ERROR;
	if (headers(st, headers_start, st->buf + st->len) == PR_ERROR)
		return PR_ERROR;
	st->status = PR_DONE;
	return PR_DONE;
}

enum pr_status pr_feed(struct pr_state *st, const char *buf, size_t len, size_t *consumed)
{
	*consumed = 0;
	if (st->status != PR_NEED_MORE)
		return st->status;
	/* Byte by byte, but O(1) each and no allocation: the checks that must not wait for the
	 * end of the head (a client that sends bare LFs would otherwise hang until the idle
	 * timeout) are done here; the rest once the head is complete. */
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		*consumed = i + 1;
		if (st->len == st->max)
			return fail(st, 431, "request head too large");
		st->buf[st->len++] = c;
		if (c == '\0')
			return fail(st, 400, "NUL byte in request");
		if (st->cr) {
			if (c != '\n')
				return fail(st, 400, "bare CR in request");
			st->cr = false;
			if (st->line_len == 0) {
				st->buf[st->len] = 0;
				return finish(st);
			}
			st->line_len = 0;
		} else if (c == '\r') {
			st->cr = true;
		} else if (c == '\n') {
			return fail(st, 400, "bare LF in request (lines must end in CRLF)");
		} else {
			st->line_len++;
		}
	}
	return PR_NEED_MORE;
}
