/* e2bform.c — multipart/form-data (RFC 7578) as E2B's SDKs upload files to envd's /files: the parts, their field names and file names, split out of a body held in memory. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/e2b.h"

#define BOUNDARY_MAX 70 /* RFC 2046 */

/* The boundary parameter of a multipart/form-data Content-Type, quoted or not. */
static int boundary_of(const char *type, char out[BOUNDARY_MAX + 1])
{
	if (!type || strncasecmp(type, "multipart/form-data", 19) != 0)
		return -EINVAL;
	const char *p = strcasestr(type, "boundary=");
	if (!p)
		return -EINVAL;
	p += 9;
	size_t n;
	if (*p == '"') {
		p++;
		const char *end = strchr(p, '"');
		if (!end)
			return -EINVAL;
		n = (size_t)(end - p);
	} else {
		n = strcspn(p, "; \t");
	}
	if (n == 0 || n > BOUNDARY_MAX)
		return -EINVAL;
	memcpy(out, p, n);
	out[n] = 0;
	return 0;
}

/* The value of param (name= or filename=) in a Content-Disposition line [p, end), copied into
 * *names (advanced past it). Quoted strings as browsers and undici write them: '"', CR and LF
 * escaped as %22, %0D, %0A (WHATWG's multipart/form-data encoding); nothing else is decoded. */
static const char *param(const char *p, const char *end, const char *key, char **names, char *names_end)
{
	size_t kl = strlen(key);
	for (const char *q = p; q + kl + 1 < end; q++) {
		/* The key at a parameter's start: after ';' and spaces, so "name=" is not "filename=". */
		const char *before = q;
		while (before > p && (before[-1] == ' ' || before[-1] == '\t'))
			before--;
		if (before == p || before[-1] != ';' || strncasecmp(q, key, kl) != 0 || q[kl] != '=')
			continue;
		const char *v = q + kl + 1, *ve;
		bool quoted = v < end && *v == '"';
		if (quoted) {
			v++;
			ve = memchr(v, '"', (size_t)(end - v));
			if (!ve)
				return NULL;
		} else {
			ve = v + strcspn(v, ";\r");
			if (ve > end)
				ve = end;
		}
		char *out = *names;
		if (out >= names_end) /* no room for even the terminating NUL */
			return NULL;
		for (const char *c = v; c < ve; c++) {
			char ch = *c;
			if (ch == '%' && ve - c >= 3 &&
			    (strncasecmp(c, "%22", 3) == 0 || strncasecmp(c, "%0D", 3) == 0 ||
			     strncasecmp(c, "%0A", 3) == 0)) {
				ch = "\"\r\n"[c[2] == '2' ? 0 : (c[2] == 'D' || c[2] == 'd') ? 1 : 2];
				c += 2;
			}
			if (out + 1 >= names_end)
				return NULL;
			*out++ = ch;
		}
		*out++ = 0;
		const char *value = *names;
		*names = out;
		return value;
	}
	return NULL;
}

/* One part's headers [p, end): its Content-Disposition's name and filename. */
static int part_headers(const char *p, const char *end, struct e2b_part *part, char **names, char *names_end)
{
	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > 20 && strncasecmp(p, "Content-Disposition:", 20) == 0) {
			part->name = param(p, eol, "name", names, names_end);
			part->filename = param(p, eol, "filename", names, names_end);
		}
		p = eol + 2;
	}
	return part->name ? 0 : -EINVAL;
}

int e2b_form_parse(const char *content_type, const char *body, size_t len, struct e2b_part *parts, size_t max,
		   char *names, size_t names_cap, char *why, size_t cap)
{
	char b[BOUNDARY_MAX + 1], delim[BOUNDARY_MAX + 5];
	if (boundary_of(content_type, b) < 0) {
		snprintf(why, cap, "a multipart/form-data body needs a boundary (1-%d characters)", BOUNDARY_MAX);
		return -EINVAL;
	}
	int dn = snprintf(delim, sizeof(delim), "\r\n--%s", b);
	const char *end = body + len;
	char *names_end = names + names_cap;
	/* The first delimiter may open the body (no CRLF before it) or follow a preamble. */
	const char *p;
	if (len >= (size_t)dn - 2 && memcmp(body, delim + 2, (size_t)dn - 2) == 0) {
		p = body + dn - 2;
	} else {
		p = memmem(body, len, delim, (size_t)dn);
		p = p ? p + dn : NULL;
	}
	size_t n = 0;
	while (p) {
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return (int)n; /* the closing delimiter */
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			break;
		p += 2;
		const char *head_end = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
		const char *data = head_end ? head_end + 4 : NULL;
		const char *next = data ? memmem(data, (size_t)(end - data), delim, (size_t)dn) : NULL;
		if (!next)
			break;
		if (n == max) {
			snprintf(why, cap, "more than %zu parts", max);
			return -EINVAL;
		}
		struct e2b_part *part = &parts[n];
		*part = (struct e2b_part){.data = data, .len = (size_t)(next - data)};
		if (part_headers(p, head_end, part, &names, names_end) < 0) {
			snprintf(why, cap, "part %zu has no Content-Disposition with a name", n + 1);
			return -EINVAL;
		}
		n++;
		p = next + dn;
	}
	snprintf(why, cap, "the multipart body is cut short (no closing --%.20s--)", b);
	return -EINVAL;
}
