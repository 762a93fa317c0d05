/* allowlist.c — parsing and matching of the egress allowlist and the allow_private CIDRs; pure. */
#include "network/allowlist.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/cleanup.h"
#include "util/error.h"

enum entry_kind {
	ENTRY_EXACT,
	ENTRY_SUFFIX,
	ENTRY_IP4,
	ENTRY_IP6
};

struct entry {
	enum entry_kind kind;
	uint16_t port;
	char name[AL_HOST_MAX]; /* EXACT: the name; SUFFIX: the part after "*." */
	uint8_t addr[16];	/* IP4 (4 bytes) / IP6 */
	/* A request rule (seen only where airlock terminates TLS, or in plain HTTP): */
	unsigned methods;	     /* AL_M_* bits; 0: any method */
	char path[AL_RULE_PATH_MAX]; /* a path prefix, "/..."; "": any path */
};

struct al_allowlist {
	struct entry *v;
	size_t n, cap;
};

struct cidr {
	int family;
	unsigned prefix;
	uint8_t addr[16];
};

struct al_cidr_list {
	struct cidr *v;
	size_t n, cap;
};

/* ---- hosts and ports ------------------------------------------------------------- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Digits only, or 0x + hex digits: inet_aton() and browsers read such a last label as (part of)
 * an IPv4 address, so a "name" like 127.1 or 0x7f000001 would really be loopback. */
static bool numeric_label(const char *l, size_t n)
{
	size_t i = 0;
	bool hex = n >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X');
	if (hex)
		i = 2;
	for (; i < n; i++)
		if (!(hex ? is_hex(l[i]) : is_digit(l[i])))
			return false;
	return true;
}

static int normalize_ipv6(const char *s, size_t len, char out[AL_HOST_MAX], enum al_host_kind *kind)
{
	char tmp[INET6_ADDRSTRLEN];
	struct in6_addr a;
	/* Only the characters an IPv6 literal has: this also refuses zone ids ("%eth0"), which
	 * would name an interface of the supervisor's host, and embedded NULs that inet_pton
	 * would silently stop at. */
	if (len >= sizeof(tmp))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!is_hex(s[i]) && s[i] != ':' && s[i] != '.')
			return -EINVAL;
	memcpy(tmp, s, len);
	tmp[len] = 0;
	if (inet_pton(AF_INET6, tmp, &a) != 1 || !inet_ntop(AF_INET6, &a, out, AL_HOST_MAX))
		return -EINVAL;
	*kind = AL_HOST_IPV6;
	return 0;
}

/* Checks labels of a lower-cased name (no trailing dot); refuses anything but LDH labels. */
static bool valid_name(const char *s, size_t n)
{
	size_t start = 0;
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.') {
			char c = s[i];
			if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '-'))
				return false;
			continue;
		}
		size_t ll = i - start;
		if (ll == 0 || ll > 63 || s[start] == '-' || s[i - 1] == '-')
			return false;
		if (i == n && numeric_label(s + start, ll))
			return false;
		start = i + 1;
	}
	return true;
}

int al_host_normalize(const char *s, size_t len, char out[AL_HOST_MAX], enum al_host_kind *kind)
{
	char tmp[AL_HOST_MAX + 1];
	struct in_addr a4;
	if (!s || len == 0 || len > 254)
		return -EINVAL;
	if (memchr(s, ':', len))
		return normalize_ipv6(s, len, out, kind);
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		/* ASCII folding only: anything non-ASCII is refused below, never folded by locale. */
		tmp[i] = (char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
	}
	if (len > 1 && tmp[len - 1] == '.')
		len--; /* "pypi.org." is the same host as "pypi.org" */
	tmp[len] = 0;
	if (memchr(tmp, 0, len))
		return -EINVAL;
	/* glibc's inet_pton takes only strict dotted quads (no octal, hex or short forms). */
	if (inet_pton(AF_INET, tmp, &a4) == 1) {
		if (!inet_ntop(AF_INET, &a4, out, AL_HOST_MAX))
			return -EINVAL;
		*kind = AL_HOST_IPV4;
		return 0;
	}
	if (!valid_name(tmp, len))
		return -EINVAL;
	memcpy(out, tmp, len + 1);
	*kind = AL_HOST_NAME;
	return 0;
}

int al_port_parse(const char *s, size_t len, uint16_t *out)
{
	unsigned v = 0;
	/* No leading zero: "0443" would be a second spelling of 443, and "0" is no port. */
	if (!s || len == 0 || len > 5 || s[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

/* Splits s into host text and optional port text; brackets are only for IPv6. */
static int split_hostport(const char *s, size_t len, bool bare_v6, const char **h, size_t *hl, const char **p,
			  size_t *pl, const char **why)
{
	*p = NULL;
	*pl = 0;
	if (len > 0 && s[0] == '[') {
		const char *rb = memchr(s, ']', len);
		if (!rb)
			return *why = "unclosed '['", -EINVAL;
		*h = s + 1;
		*hl = (size_t)(rb - s) - 1;
		if (!memchr(*h, ':', *hl))
			return *why = "brackets are only for IPv6 literals", -EINVAL;
		size_t rest = len - (size_t)(rb - s) - 1;
		if (rest == 0)
			return 0;
		if (rb[1] != ':')
			return *why = "junk after ']'", -EINVAL;
		*p = rb + 2;
		*pl = rest - 1;
		return 0;
	}
	const char *c = memchr(s, ':', len);
	*h = s;
	*hl = len;
	if (c && memchr(c + 1, ':', len - (size_t)(c - s) - 1)) {
		/* An unbracketed IPv6 literal cannot carry a port: "::1:443" is ambiguous. */
		return bare_v6 ? 0 : (*why = "IPv6 literals need brackets", -EINVAL);
	}
	if (c) {
		*hl = (size_t)(c - s);
		*p = c + 1;
		*pl = len - *hl - 1;
	}
	return 0;
}

int al_hostport_parse(const char *s, size_t len, bool bare_v6, char host[AL_HOST_MAX], enum al_host_kind *kind,
		      uint16_t *port, const char **why)
{
	const char *h, *p;
	size_t hl, pl;
	*why = "";
	if (split_hostport(s, len, bare_v6, &h, &hl, &p, &pl, why) < 0)
		return -EINVAL;
	if (hl == 0)
		return *why = "empty host", -EINVAL;
	if (al_host_normalize(h, hl, host, kind) < 0)
		return *why = "not a valid host name or IP literal", -EINVAL;
	/* "[1.2.3.4]" or "[name]" never reach here (no ':'); "[::ffff:1.2.3.4]" stays IPv6. */
	*port = 0;
	if (p && al_port_parse(p, pl, port) < 0)
		return *why = "port must be 1-65535", -EINVAL;
	return 0;
}

/* ---- messages -------------------------------------------------------------------- */

/* Copies an entry for an error message: printable ASCII only (a config could hold terminal
 * escapes), truncated with "..." so the message keeps its reason. */
static void printable(char *dst, size_t cap, const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 4 < cap; i++, n++)
		dst[n] = (char)((s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?');
	if (n < len)
		memcpy(dst + n, "...", 3), n += 3;
	dst[n] = 0;
}

static int bad_entry(struct al_error *err, const char *what, const char *s, size_t len, const char *why)
{
	char shown[72];
	printable(shown, sizeof(shown), s, len);
	return al_err(err, EINVAL, "%s: bad entry \"%s\": %s", what, shown, why);
}

/* Calls fn on each comma-separated entry with surrounding blanks trimmed; stops at the first error. */
static int for_each_entry(const char *spec, const char *what, struct al_error *err,
			  int (*fn)(void *ctx, const char *s, size_t len, const char **why), void *ctx)
{
	if (!spec || !*spec)
		return al_err(err, EINVAL, "%s: empty list", what);
	const char *p = spec;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *s = p, *why = "empty entry";
		while (len > 0 && (*s == ' ' || *s == '\t'))
			s++, len--;
		while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		int r = len == 0 ? -EINVAL : fn(ctx, s, len, &why);
		if (r == -ENOMEM)
			return al_err(err, ENOMEM, "%s: out of memory", what);
		if (r < 0)
			return bad_entry(err, what, s, len, why);
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* The new capacity when n == cap (doubling), else cap. */
static size_t next_cap(size_t n, size_t cap)
{
	return n < cap ? cap : (cap ? cap * 2 : 8);
}

/* ---- the allowlist ---------------------------------------------------------------- */

int al_allowlist_new(struct al_allowlist **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void al_allowlist_free(struct al_allowlist *al)
{
	if (!al)
		return;
	free(al->v);
	free(al);
}

size_t al_allowlist_count(const struct al_allowlist *al)
{
	return al ? al->n : 0;
}

/* Copies n elements of size sz into a fresh array (NULL for none). */
static int dup_array(const void *v, size_t n, size_t sz, void **out)
{
	*out = NULL;
	if (n == 0)
		return 0;
	*out = calloc(n, sz);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, v, n * sz);
	return 0;
}

int al_allowlist_clone(const struct al_allowlist *al, struct al_allowlist **out)
{
	struct al_allowlist *c = calloc(1, sizeof(*c));
	void *v = NULL;
	if (!c || dup_array(al->v, al->n, sizeof(*al->v), &v) < 0) {
		free(c);
		return -ENOMEM;
	}
	c->v = v;
	c->n = c->cap = al->n;
	*out = c;
	return 0;
}

int al_cidr_list_clone(const struct al_cidr_list *l, struct al_cidr_list **out)
{
	struct al_cidr_list *c = calloc(1, sizeof(*c));
	void *v = NULL;
	if (!c || dup_array(l->v, l->n, sizeof(*l->v), &v) < 0) {
		free(c);
		return -ENOMEM;
	}
	c->v = v;
	c->n = c->cap = l->n;
	*out = c;
	return 0;
}

static const char *const method_names[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};

unsigned al_method_bit(const char *m, size_t n)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(method_names); i++)
		if (strlen(method_names[i]) == n && memcmp(m, method_names[i], n) == 0)
			return 1u << i;
	return 0;
}

/* "GET|HEAD" before the blank of "GET|HEAD host/path". */
static int parse_methods(const char *s, size_t len, unsigned *out, const char **why)
{
	*out = 0;
	for (size_t i = 0; i <= len;) {
		size_t k = i;
		while (k < len && s[k] != '|')
			k++;
		unsigned b = al_method_bit(s + i, k - i);
		if (!b)
			return *why = "methods are GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, joined by '|'",
			       -EINVAL;
		*out |= b;
		i = k + 1;
	}
	return 0;
}

bool al_path_plain(const char *path, size_t len)
{
	size_t pl = 0;
	while (pl < len && path[pl] != '?' && path[pl] != '#')
		pl++;
	for (size_t i = 0; i < pl; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c == '\\' || c <= 0x20 || c >= 0x7f)
			return false;
		/* "%2e", "%2f", "%5c": decoded by some servers before they route, so "/ok/%2e%2e/x"
		 * would climb out of a prefix that "/ok/" seems to hold. */
		if (c == '%' && i + 2 < pl &&
		    ((path[i + 1] == '2' &&
		      (path[i + 2] == 'e' || path[i + 2] == 'E' || path[i + 2] == 'f' || path[i + 2] == 'F')) ||
		     (path[i + 1] == '5' && (path[i + 2] == 'c' || path[i + 2] == 'C'))))
			return false;
		if (c != '/')
			continue;
		size_t sl = 0;
		while (i + 1 + sl < pl && path[i + 1 + sl] != '/' && path[i + 1 + sl] != ';')
			sl++;
		if ((sl == 1 && path[i + 1] == '.') || (sl == 2 && path[i + 1] == '.' && path[i + 2] == '.'))
			return false;
	}
	return pl > 0 && path[0] == '/';
}

/* The "/prefix" of "host/prefix": printable, plain (al_path_plain), no query. */
static int parse_rule_path(const char *s, size_t len, struct entry *e, const char **why)
{
	if (len >= AL_RULE_PATH_MAX)
		return *why = "path prefix too long", -EINVAL;
	if (memchr(s, '?', len) || memchr(s, '#', len) || !al_path_plain(s, len))
		return *why = "a path prefix is a plain path (no '?', '#', '%2e', '%2f', '\\', dot segments or blanks)",
		       -EINVAL;
	memcpy(e->path, s, len);
	e->path[len] = 0;
	return 0;
}

static int parse_host_entry(const char *s, size_t len, struct entry *e, const char **why);

/* [METHODS ]HOST[:PORT][/PREFIX] */
static int parse_allow_entry(const char *s, size_t len, struct entry *e, const char **why)
{
	const char *sp = memchr(s, ' ', len);
	if (sp) {
		int r = parse_methods(s, (size_t)(sp - s), &e->methods, why);
		if (r < 0)
			return r;
		len -= (size_t)(sp - s) + 1;
		s = sp + 1;
		while (len > 0 && *s == ' ')
			s++, len--;
	}
	const char *slash = memchr(s, '/', len);
	if (slash) {
		int r = parse_rule_path(slash, len - (size_t)(slash - s), e, why);
		if (r < 0)
			return r;
		len = (size_t)(slash - s);
	}
	return parse_host_entry(s, len, e, why);
}

static int parse_host_entry(const char *s, size_t len, struct entry *e, const char **why)
{
	enum al_host_kind kind;
	bool suffix = len >= 2 && s[0] == '*' && s[1] == '.';
	if (suffix)
		s += 2, len -= 2;
	if (len == 0)
		return *why = "a pattern needs a domain after \"*.\"", -EINVAL;
	if (al_hostport_parse(s, len, true, e->name, &kind, &e->port, why) < 0)
		return -EINVAL;
	if (e->port == 0)
		e->port = AL_ALLOW_DEFAULT_PORT;
	switch (kind) {
	case AL_HOST_NAME:
		/* "*.com" would open a whole top-level domain: refused as a likely mistake. */
		if (suffix && !strchr(e->name, '.'))
			return *why = "pattern too broad (a single label after \"*.\")", -EINVAL;
		e->kind = suffix ? ENTRY_SUFFIX : ENTRY_EXACT;
		return 0;
	case AL_HOST_IPV4:
	case AL_HOST_IPV6:
		if (suffix)
			return *why = "patterns are for names, not IP literals", -EINVAL;
		e->kind = kind == AL_HOST_IPV4 ? ENTRY_IP4 : ENTRY_IP6;
		inet_pton(kind == AL_HOST_IPV4 ? AF_INET : AF_INET6, e->name, e->addr);
		return 0;
	}
	return -EINVAL;
}

static int add_allow_cb(void *ctx, const char *s, size_t len, const char **why)
{
	struct al_allowlist *al = ctx;
	struct entry e = {0};
	if (parse_allow_entry(s, len, &e, why) < 0)
		return -EINVAL;
	size_t cap = next_cap(al->n, al->cap);
	struct entry *v = cap == al->cap ? al->v : reallocarray(al->v, cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	al->v = v;
	al->cap = cap;
	al->v[al->n++] = e;
	return 0;
}

int al_allowlist_add(struct al_allowlist *al, const char *spec, struct al_error *err)
{
	size_t n0 = al->n;
	int r = for_each_entry(spec, "allow", err, add_allow_cb, al);
	if (r < 0)
		al->n = n0; /* all or nothing: a half-applied list would be a surprise */
	return r;
}

/* host ends in ".suffix" with at least one label before: "*.x.org" matches "a.x.org" and
 * "a.b.x.org" but neither "x.org" nor "evilx.org". Both sides are normalized, so a byte
 * comparison is exact. */
static bool suffix_match(const char *host, size_t hl, const char *suf)
{
	size_t sl = strlen(suf);
	return hl > sl + 1 && host[hl - sl - 1] == '.' && memcmp(host + hl - sl, suf, sl) == 0;
}

/* Does entry e cover the normalized host (of kind, with addr its bytes for a literal)? */
static bool entry_match(const struct entry *e, const char *norm, size_t nl, enum al_host_kind kind,
			const uint8_t addr[16])
{
	/* An IP literal matches only an entry with the same address (compared as bytes, so any
	 * spelling of it); a name never matches an IP entry, and a pattern never matches a literal
	 * ("*.3.4" cannot exist, and would not match 1.2.3.4). */
	switch (e->kind) {
	case ENTRY_EXACT:
		return kind == AL_HOST_NAME && strcmp(norm, e->name) == 0;
	case ENTRY_SUFFIX:
		return kind == AL_HOST_NAME && suffix_match(norm, nl, e->name);
	case ENTRY_IP4:
		return kind == AL_HOST_IPV4 && memcmp(addr, e->addr, 4) == 0;
	case ENTRY_IP6:
		return kind == AL_HOST_IPV6 && memcmp(addr, e->addr, 16) == 0;
	}
	return false;
}

/* any_port: whether some entry covers host on whatever port (the sandbox's resolver asks). */
static bool match(const struct al_allowlist *al, const char *host, uint16_t port, bool any_port)
{
	char norm[AL_HOST_MAX];
	enum al_host_kind kind;
	uint8_t addr[16] = {0};
	if (!al || !host || (port == 0 && !any_port))
		return false;
	size_t len = strnlen(host, 256);
	if (len > 254 || al_host_normalize(host, len, norm, &kind) < 0)
		return false;
	if (kind != AL_HOST_NAME)
		inet_pton(kind == AL_HOST_IPV4 ? AF_INET : AF_INET6, norm, addr);
	size_t nl = strlen(norm);
	for (size_t i = 0; i < al->n; i++)
		if ((any_port || al->v[i].port == port) && entry_match(&al->v[i], norm, nl, kind, addr))
			return true;
	return false;
}

bool al_allow_match(const struct al_allowlist *al, const char *host, uint16_t port)
{
	return match(al, host, port, false);
}

bool al_allow_name(const struct al_allowlist *al, const char *name)
{
	char norm[AL_HOST_MAX];
	enum al_host_kind kind;
	size_t len = name ? strnlen(name, 256) : 0;
	/* A literal is never a name the resolver answers: it needs no answer. */
	if (len == 0 || len > 254 || al_host_normalize(name, len, norm, &kind) < 0 || kind != AL_HOST_NAME)
		return false;
	return match(al, norm, 0, true);
}

static bool restricted(const struct entry *e)
{
	return e->methods != 0 || e->path[0] != 0;
}

/* Calls fn on each entry covering host:port; stops when fn returns true. */
static bool each_match(const struct al_allowlist *al, const char *host, uint16_t port,
		       bool (*fn)(const struct entry *e, void *ctx), void *ctx)
{
	char norm[AL_HOST_MAX];
	enum al_host_kind kind;
	uint8_t addr[16] = {0};
	size_t len = host ? strnlen(host, 256) : 0;
	if (!al || len == 0 || len > 254 || port == 0 || al_host_normalize(host, len, norm, &kind) < 0)
		return false;
	if (kind != AL_HOST_NAME)
		inet_pton(kind == AL_HOST_IPV4 ? AF_INET : AF_INET6, norm, addr);
	size_t nl = strlen(norm);
	for (size_t i = 0; i < al->n; i++)
		if (al->v[i].port == port && entry_match(&al->v[i], norm, nl, kind, addr) && fn(&al->v[i], ctx))
			return true;
	return false;
}

static bool is_open(const struct entry *e, void *ctx)
{
	(void)ctx;
	return !restricted(e);
}

static bool any(const struct entry *e, void *ctx)
{
	(void)e;
	(void)ctx;
	return true;
}

bool al_allowlist_has_rules(const struct al_allowlist *al)
{
	for (size_t i = 0; al && i < al->n; i++)
		if (restricted(&al->v[i]))
			return true;
	return false;
}

bool al_allow_sees(const struct al_allowlist *al, const char *host, uint16_t port)
{
	/* One entry without a rule opens every request: then nothing needs to be seen. */
	return each_match(al, host, port, any, NULL) && !each_match(al, host, port, is_open, NULL);
}

void al_rule_text(const struct al_allowlist *al, size_t i, char *out, size_t cap)
{
	const struct entry *e = &al->v[i];
	size_t n = 0;
	out[0] = 0;
	for (size_t m = 0; m < AL_ARRAY_SIZE(method_names); m++)
		if (e->methods & (1u << m))
			n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", n ? "|" : "", method_names[m]);
	bool v6 = e->kind == ENTRY_IP6;
	snprintf(out + (n < cap ? n : cap - 1), n < cap ? cap - n : 1, "%s%s%s%s%s:%u%s", n ? " " : "",
		 e->kind == ENTRY_SUFFIX ? "*." : "", v6 ? "[" : "", e->name, v6 ? "]" : "", e->port, e->path);
}

struct req_ctx {
	const struct al_allowlist *al;
	unsigned bit;
	const char *path;
	size_t path_len;
	bool plain;
	const struct entry *hit;
};

static bool permits(const struct entry *e, void *ctx)
{
	struct req_ctx *q = ctx;
	if (e->methods && !(e->methods & q->bit))
		return false;
	size_t pl = strlen(e->path);
	if (pl && (!q->plain || q->path_len < pl || memcmp(q->path, e->path, pl) != 0))
		return false;
	q->hit = e;
	return true;
}

int al_allow_request(const struct al_allowlist *al, const char *host, uint16_t port, const char *method,
		     const char *path, char *rule, size_t cap)
{
	struct req_ctx q = {.al = al, .bit = al_method_bit(method, strlen(method)), .path = path};
	q.path_len = strlen(path);
	q.plain = al_path_plain(path, q.path_len);
	rule[0] = 0;
	if (each_match(al, host, port, permits, &q)) {
		al_rule_text(al, (size_t)(q.hit - al->v), rule, cap);
		return 0;
	}
	/* Refused: the rules for this host, for the message the client reads. */
	size_t n = 0;
	for (size_t i = 0; i < al->n && n + 2 < cap; i++) {
		if (!al_allow_match_entry(al, i, host, port))
			continue;
		if (n)
			n += (size_t)snprintf(rule + n, cap - n, ", ");
		if (n + 2 < cap)
			al_rule_text(al, i, rule + n, cap - n);
		n = strlen(rule);
	}
	return q.plain ? -EACCES : -EPERM;
}

bool al_allow_match_entry(const struct al_allowlist *al, size_t i, const char *host, uint16_t port)
{
	char norm[AL_HOST_MAX];
	enum al_host_kind kind;
	uint8_t addr[16] = {0};
	size_t len = host ? strnlen(host, 256) : 0;
	if (!al || i >= al->n || len == 0 || len > 254 || al->v[i].port != port ||
	    al_host_normalize(host, len, norm, &kind) < 0)
		return false;
	if (kind != AL_HOST_NAME)
		inet_pton(kind == AL_HOST_IPV4 ? AF_INET : AF_INET6, norm, addr);
	return entry_match(&al->v[i], norm, strlen(norm), kind, addr);
}

size_t al_allowlist_ports(const struct al_allowlist *al, uint16_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; al && i < al->n; i++) {
		const struct entry *e = &al->v[i];
		bool seen = e->kind == ENTRY_IP4 || e->kind == ENTRY_IP6; /* literals are never captured */
		for (size_t k = 0; k < n && !seen; k++)
			seen = out[k] == e->port;
		if (seen)
			continue;
		if (n == max)
			return max + 1;
		out[n++] = e->port;
	}
	return n;
}

/* ---- allow_private ---------------------------------------------------------------- */

int al_cidr_list_new(struct al_cidr_list **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void al_cidr_list_free(struct al_cidr_list *l)
{
	if (!l)
		return;
	free(l->v);
	free(l);
}

size_t al_cidr_list_count(const struct al_cidr_list *l)
{
	return l ? l->n : 0;
}

/* Are the bits of addr beyond prefix all zero? */
static bool host_bits_clear(const uint8_t *addr, unsigned bytes, unsigned prefix)
{
	for (unsigned i = 0; i < bytes * 8; i++)
		if (i >= prefix && (addr[i / 8] & (0x80 >> (i % 8))))
			return false;
	return true;
}

static int parse_cidr(const char *s, size_t len, struct cidr *c, const char **why)
{
	char tmp[INET6_ADDRSTRLEN];
	const char *slash = memchr(s, '/', len);
	size_t al = slash ? (size_t)(slash - s) : len;
	if (al == 0 || al >= sizeof(tmp) || memchr(s, 0, al))
		return *why = "not an address", -EINVAL;
	memcpy(tmp, s, al);
	tmp[al] = 0;
	c->family = memchr(tmp, ':', al) ? AF_INET6 : AF_INET;
	unsigned bits = c->family == AF_INET ? 32 : 128;
	if (inet_pton(c->family, tmp, c->addr) != 1)
		return *why = "not an IPv4 or IPv6 address", -EINVAL;
	c->prefix = bits;
	if (slash) {
		const char *p = slash + 1;
		size_t pl = len - al - 1;
		unsigned v = 0;
		if (pl == 0 || pl > 3 || (p[0] == '0' && pl > 1))
			return *why = "bad prefix length", -EINVAL;
		for (size_t i = 0; i < pl; i++) {
			if (!is_digit(p[i]))
				return *why = "bad prefix length", -EINVAL;
			v = v * 10 + (unsigned)(p[i] - '0');
		}
		if (v > bits)
			return *why = "prefix length too long", -EINVAL;
		c->prefix = v;
	}
	/* Every forbidden range fits in a /8 (IPv4) or /7 (IPv6, fc00::/7); a wider exemption
	 * would switch the check off wholesale, which is never what an operator means. */
	if (c->prefix < (c->family == AF_INET ? 8u : 7u))
		return *why = "too broad (shorter than /8 for IPv4, /7 for IPv6)", -EINVAL;
	/* "10.1.2.3/8" might mean the host or the /8: refuse rather than open the wider one. */
	if (!host_bits_clear(c->addr, bits / 8, c->prefix))
		return *why = "address has bits set beyond the prefix", -EINVAL;
	return 0;
}

static int add_cidr_cb(void *ctx, const char *s, size_t len, const char **why)
{
	struct al_cidr_list *l = ctx;
	struct cidr c = {0};
	if (parse_cidr(s, len, &c, why) < 0)
		return -EINVAL;
	size_t cap = next_cap(l->n, l->cap);
	struct cidr *v = cap == l->cap ? l->v : reallocarray(l->v, cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	l->cap = cap;
	l->v[l->n++] = c;
	return 0;
}

int al_cidr_list_add(struct al_cidr_list *l, const char *spec, struct al_error *err)
{
	size_t n0 = l->n;
	int r = for_each_entry(spec, "allow_private", err, add_cidr_cb, l);
	if (r < 0)
		l->n = n0;
	return r;
}

static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;
	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

bool al_cidr_list_contains(const struct al_cidr_list *l, int family, const void *addr)
{
	if (!l || !addr)
		return false;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].family == family && prefix_equal(l->v[i].addr, addr, l->v[i].prefix))
			return true;
	return false;
}
