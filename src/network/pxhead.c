/* pxhead.c — response heads relayed over terminated TLS: their facts (status, framing, coding) and the head the client gets. Pure. */
#include "network/pxhead.h"

#include <string.h>
#include <strings.h>

bool pxh_hdr_is(const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	return len > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0;
}

static bool value_has(const char *v, size_t n, const char *word)
{
	size_t wl = strlen(word);
	for (size_t i = 0; i + wl <= n; i++)
		if (strncasecmp(v + i, word, wl) == 0)
			return true;
	return false;
}

/* Whether a Content-Encoding value names a coding other than identity in any element of its list
 * ("identity, gzip" is gzip): the secret scan sees only raw bytes, so one such element hides it. */
static bool coded(const char *v, size_t n)
{
	for (size_t i = 0; i < n;) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t t = i;
		while (t < n && v[t] != ' ' && v[t] != '\t' && v[t] != ',')
			t++;
		if (t > i && !(t - i == 8 && strncasecmp(v + i, "identity", 8) == 0))
			return true;
		i = t;
	}
	return false;
}

void pxh_facts(const char *h, size_t n, bool head_req, struct pxh_facts *f)
{
	*f = (struct pxh_facts){0};
	/* "HTTP/1.x NNN": the three digits alone (a status is never more, nor signed). */
	if (n >= 12 && memcmp(h, "HTTP/1.", 7) == 0 && h[8] == ' ' && h[9] >= '0' && h[9] <= '9' && h[10] >= '0' &&
	    h[10] <= '9' && h[11] >= '0' && h[11] <= '9')
		f->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
	f->framed = head_req || f->status == 204 || f->status == 304;
	for (const char *p = h, *end = h + n; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - p) : (size_t)(end - p);
		if (pxh_hdr_is(p, ll, "content-length"))
			f->framed = true;
		if (pxh_hdr_is(p, ll, "transfer-encoding") && value_has(p, ll, "chunked"))
			f->framed = true;
		/* pxh_hdr_is held: the line is longer than "content-encoding" and its ':'. */
		if (pxh_hdr_is(p, ll, "content-encoding") && coded(p + 17, ll - 17))
			f->encoded = true;
		p += ll + 2;
	}
}

size_t pxh_rewrite(const char *h, size_t n, bool framed, char *out)
{
	size_t o = 0;
	for (const char *p = h, *end = h + n - 2; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - p) + 2 : (size_t)(end - p);
		if (!pxh_hdr_is(p, ll, "connection") && !pxh_hdr_is(p, ll, "keep-alive") &&
		    !pxh_hdr_is(p, ll, "proxy-connection"))
			memcpy(out + o, p, ll), o += ll;
		p += ll;
	}
	/* Byte arrays, not strings: the head is bytes with a length, no terminator. */
	static const char close_line[19] = "Connection: close\r\n", crlf[2] = "\r\n";
	if (!framed) {
		memcpy(out + o, close_line, sizeof(close_line));
		o += sizeof(close_line);
	}
	memcpy(out + o, crlf, sizeof(crlf));
	return o + sizeof(crlf);
}
