/* broker.c — the credential broker: parses --broker specs into named upstreams whose secret
 * headers the supervisor adds, and serves the sandbox's origin-form requests to them.
 *
 * Theory of operation. al_broker_list_add reads each secret once, at policy time, from airlock's
 * own environment or a file, into a secrets list of the broker's own (secrets.c: one secret per
 * header, allowed to the upstream's host:port only, wiped when freed), and makes the broker's
 * header lines "HEADER: [scheme ]PLACEHOLDER\r\n" from the placeholders, which nobody but the
 * supervisor ever sees. The sandbox never holds a secret: a job sends "GET /NAME/path HTTP/1.1" to
 * the egress proxy's port, the proxy's connection thread parses the head (proxyreq.c, PR_ORIGIN)
 * and calls broker_serve, which
 *   1. picks the broker by the first path segment (404 if none) and refuses paths that could
 *      climb out of the upstream's BASE (dot segments, encoded slashes or dots, backslashes);
 *   2. hands the request to the upstream leg every terminated request takes (pxtls.c,
 *      px_forward_serve) with the operator's upstream and BASE + path as the target: resolution
 *      through the proxy's hosts file, every address checked as any CONNECT's (private and
 *      loopback only under --allow-private), TLS verified (the system store, or only the broker's
 *      ca= file), the header lines added and the job's lines of those names dropped (the job can
 *      neither replace nor duplicate one), the placeholders replaced by the secrets, Accept-Encoding
 *      identity, and the response scanned and cut when it carries a secret.
 * Errors before the first response byte are answered (404, 400, 403 or 502), never with a secret.
 */
#include "network/broker.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/ssl.h>

#include "network/proxy.h"
#include "network/proxyreq.h"
#include "network/secrets.h"
#include "network/tlsca.h"
#include "util/cleanup.h"
#include "util/error.h"

#define BROKER_MAX	64   /* brokers per policy */
#define SPEC_MAX	4096 /* one --broker value */
#define HEADERS_MAX	8    /* secret headers per broker */
#define HEADER_NAME_MAX 64
#define SCHEME_MAX	32

struct broker {
	char name[AL_BROKER_NAME_MAX];
	char host[AL_HOST_MAX];
	enum al_host_kind host_kind;
	uint16_t port;
	char *base;				    /* "" or "/a/b": a clean path without a trailing slash */
	char hdr[HEADERS_MAX][HEADER_NAME_MAX + 1]; /* lower case: the job's lines of these names go */
	const char *drop[HEADERS_MAX + 1];	    /* hdr[0..nhdr), NULL-ended, for px_forward */
	size_t nhdr;
	char *lines;		    /* "HEADER: [scheme ]PLACEHOLDER\r\n" per header: no secret in it */
	struct al_secrets *secrets; /* one per header, to host:port only */
	SSL_CTX *ctx;		    /* verifies the upstream: the system store, or only ca= */
};

struct al_broker_list {
	struct broker *b[BROKER_MAX];
	size_t n;
};

/* ---- the list ---------------------------------------------------------------------- */

static void broker_free(struct broker *b)
{
	if (!b)
		return;
	al_secrets_unref(b->secrets);
	SSL_CTX_free(b->ctx);
	free(b->lines);
	free(b->base);
	free(b);
}

static void broker_freep(struct broker **b)
{
	broker_free(*b);
}

int al_broker_list_new(struct al_broker_list **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void al_broker_list_free(struct al_broker_list *bl)
{
	if (!bl)
		return;
	for (size_t i = 0; i < bl->n; i++)
		broker_free(bl->b[i]);
	free(bl);
}

size_t al_broker_count(const struct al_broker_list *bl)
{
	return bl ? bl->n : 0;
}

const char *al_broker_name(const struct al_broker_list *bl, size_t i)
{
	return bl && i < bl->n ? bl->b[i]->name : NULL;
}

/* ---- spec parsing: characters and messages ----------------------------------------- */

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* "--broker NAME: " + fmt (or "--broker: " before a name is known). Nothing formatted here
 * ever comes from a secret: only the spec (which names sources, not values) and fixed text. */
__attribute__((format(printf, 3, 4))) static int bad(struct al_error *err, const char *name, const char *fmt, ...)
{
	char msg[AL_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (name && *name)
		return al_err(err, EINVAL, "--broker %s: %s", name, msg);
	return al_err(err, EINVAL, "--broker: %s", msg);
}

/* A piece of the spec for a message: printable ASCII only, truncated. */
static const char *shown(char *dst, size_t cap, const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 4 < cap; i++, n++)
		dst[n] = (char)((s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?');
	if (n < len)
		memcpy(dst + n, "...", 3), n += 3;
	dst[n] = 0;
	return dst;
}

/* ---- spec parsing: name and upstream ------------------------------------------------ */

static int parse_name(struct broker *b, const char *s, size_t len, struct al_error *err)
{
	if (len == 0 || len >= AL_BROKER_NAME_MAX)
		return bad(err, NULL, "NAME must be 1-%d characters (in NAME=https://HOST...)", AL_BROKER_NAME_MAX - 1);
	for (size_t i = 0; i < len; i++)
		if (!is_name_char(s[i]))
			return bad(err, NULL, "NAME may use only a-z, 0-9, '_' and '-'");
	memcpy(b->name, s, len);
	b->name[len] = 0;
	return 0;
}

/* BASE is the operator's; kept clean so that "BASE + rest" can only mean BASE's subtree. */
static int parse_base(struct broker *b, const char *s, size_t len, struct al_error *err)
{
	char tmp[72];
	while (len > 0 && s[len - 1] == '/')
		len--; /* "/v1/" and "/v1" rebase the same way; "/" is no base at all */
	shown(tmp, sizeof(tmp), s, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '\\' || c == '%')
			return bad(err, b->name, "base path \"%s\" may not contain '?', '#', '%%', '\\' or blanks",
				   tmp);
	}
	/* s[0] is '/' (the authority ended there); each segment follows one '/'. */
	for (size_t i = 0; i < len;) {
		size_t sl = 0;
		while (i + 1 + sl < len && s[i + 1 + sl] != '/')
			sl++;
		if (sl == 0)
			return bad(err, b->name, "base path \"%s\" has an empty segment (\"//\")", tmp);
		if ((sl == 1 && s[i + 1] == '.') || (sl == 2 && s[i + 1] == '.' && s[i + 2] == '.'))
			return bad(err, b->name, "base path \"%s\" has a dot segment", tmp);
		i += 1 + sl;
	}
	b->base = strndup(s, len);
	return b->base ? 0 : al_err(err, ENOMEM, "--broker %s: out of memory", b->name);
}

static int parse_upstream(struct broker *b, const char *url, size_t len, struct al_error *err)
{
	char tmp[72];
	const char *why = "";
	/* The secret rides in a header: only TLS keeps it from everyone on the path. */
	if (len >= 7 && strncasecmp(url, "http://", 7) == 0)
		return bad(err, b->name, "upstream must be https:// (http:// would send the secret in clear text)");
	if (len < 8 || strncasecmp(url, "https://", 8) != 0)
		return bad(err, b->name, "upstream \"%s\" must be an https:// URL", shown(tmp, sizeof(tmp), url, len));
	const char *auth = url + 8;
	size_t al = 0;
	while (al < len - 8 && auth[al] != '/')
		al++;
	if (memchr(auth, '@', al))
		return bad(err, b->name, "upstream may not carry userinfo (user@host)");
	if (memchr(auth, '?', al) || memchr(auth, '#', al))
		return bad(err, b->name, "upstream may not carry a query or fragment");
	if (al_hostport_parse(auth, al, false, b->host, &b->host_kind, &b->port, &why) < 0)
		return bad(err, b->name, "upstream host \"%s\": %s", shown(tmp, sizeof(tmp), auth, al), why);
	if (b->port == 0)
		b->port = 443;
	return parse_base(b, auth + al, len - 8 - al, err);
}

/* ---- spec parsing: keys ------------------------------------------------------------- */

enum spec_key {
	K_HEADER,
	K_SCHEME,
	K_ENV,
	K_FILE,
	K_CA,
	K_COUNT
};

static const char *const key_names[K_COUNT] = {"header", "scheme", "env", "file", "ca"};

struct spec_val {
	const char *s; /* NULL: not given; else NUL-terminated at s[len] (in the spec's copy) */
	size_t len;
};

/* What the keys say: one group per header= (header, scheme, env, file: the keys from it to the next
 * header=, those before the first one included), and ca= once for the broker. */
struct spec_keys {
	struct spec_val g[HEADERS_MAX][K_CA];
	size_t ng;
	struct spec_val ca;
};

/* Files key k of value v into its group: a header= that finds its group's header taken opens the
 * next group; any other key given twice in one group is refused. */
static int put_key(struct broker *b, struct spec_keys *ks, size_t k, struct spec_val v, struct al_error *err)
{
	if (k == K_CA) {
		if (ks->ca.s)
			return bad(err, b->name, "ca= given twice");
		ks->ca = v;
		return 0;
	}
	if (ks->ng == 0)
		ks->ng = 1;
	if (k == K_HEADER && ks->g[ks->ng - 1][K_HEADER].s) {
		if (ks->ng == HEADERS_MAX)
			return bad(err, b->name, "at most %d headers", HEADERS_MAX);
		ks->ng++;
	}
	struct spec_val *slot = &ks->g[ks->ng - 1][k];
	if (slot->s)
		return bad(err, b->name, "%s= given twice", key_names[k]);
	*slot = v;
	return 0;
}

/* "key=value[,key=value...]" after the upstream, split in place (p is the spec's copy). */
static int parse_keys(struct broker *b, char *p, struct spec_keys *ks, struct al_error *err)
{
	char tmp[40];
	while (*p) {
		char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		if (!eq)
			return bad(err, b->name, "\"%s\" is not key=value", shown(tmp, sizeof(tmp), p, len));
		size_t kl = (size_t)(eq - p);
		size_t k = 0;
		while (k < K_COUNT && !(strlen(key_names[k]) == kl && strncmp(p, key_names[k], kl) == 0))
			k++;
		if (k == K_COUNT)
			return bad(err, b->name, "unknown key \"%s\" (header, scheme, env, file, ca)",
				   shown(tmp, sizeof(tmp), p, kl));
		struct spec_val v = {eq + 1, len - kl - 1};
		if (v.len == 0)
			return bad(err, b->name, "%s= is empty", key_names[k]);
		int r = put_key(b, ks, k, v, err);
		if (r < 0)
			return r;
		if (end)
			*end = 0;
		p = end ? end + 1 : p + len;
		if (end && !*p)
			return bad(err, b->name, "trailing ','");
	}
	return 0;
}

/* Headers that frame the message or belong to this hop: a secret there would change how the
 * upstream reads the request, not authenticate it. */
static bool reserved_header(const char *h, size_t n)
{
	static const char *const no[] = {
		"host",	   "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te",
		"trailer", "expect",	     "accept-encoding"};
	if (n >= 6 && strncasecmp(h, "proxy-", 6) == 0)
		return true;
	for (size_t i = 0; i < AL_ARRAY_SIZE(no); i++)
		if (strlen(no[i]) == n && strncasecmp(h, no[i], n) == 0)
			return true;
	return false;
}

/* One group: a header name that may carry a secret (not one of the broker's already), a one-word
 * scheme, exactly one source. Its lower-case name is kept for dropping the job's copies. */
static int check_group(struct broker *b, const struct spec_val g[K_CA], struct al_error *err)
{
	char tmp[72];
	const struct spec_val *h = &g[K_HEADER];
	if (!h->s)
		return bad(err, b->name, "header= is required (the header that carries the secret)");
	shown(tmp, sizeof(tmp), h->s, h->len);
	if (h->len > HEADER_NAME_MAX || !pr_is_token(h->s, h->len))
		return bad(err, b->name, "header \"%s\" is not an HTTP header name", tmp);
	if (reserved_header(h->s, h->len))
		return bad(err, b->name, "header %s may not carry a secret", tmp);
	for (size_t i = 0; i < b->nhdr; i++)
		if (strlen(b->hdr[i]) == h->len && strncasecmp(b->hdr[i], h->s, h->len) == 0)
			return bad(err, b->name, "header %s given twice", tmp);
	if (g[K_SCHEME].s && (g[K_SCHEME].len > SCHEME_MAX || !pr_is_token(g[K_SCHEME].s, g[K_SCHEME].len)))
		return bad(err, b->name, "scheme \"%s\" is not a single word",
			   shown(tmp, sizeof(tmp), g[K_SCHEME].s, g[K_SCHEME].len));
	if (!g[K_ENV].s == !g[K_FILE].s)
		return bad(err, b->name, "header %s: give exactly one of env=VAR and file=PATH for the secret", tmp);
	for (size_t i = 0; i < h->len; i++)
		b->hdr[b->nhdr][i] = (char)(h->s[i] >= 'A' && h->s[i] <= 'Z' ? h->s[i] - 'A' + 'a' : h->s[i]);
	b->drop[b->nhdr] = b->hdr[b->nhdr];
	b->nhdr++;
	return 0;
}

/* ---- spec parsing: the secrets and the CA file -------------------------------------- */

/* The upstream as an allowlist entry: the only place its secrets may go. */
static void host_entry(const struct broker *b, char *out, size_t cap)
{
	bool v6 = b->host_kind == AL_HOST_IPV6;
	snprintf(out, cap, "%s%s%s:%u", v6 ? "[" : "", b->host, v6 ? "]" : "", b->port);
}

/* Reads group i's secret into the broker's list (secrets.c reads, checks and keeps it) and appends
 * its header line, which holds the secret's placeholder. */
static int add_secret(struct broker *b, const struct spec_val g[K_CA], size_t i, struct al_error *err)
{
	char label[AL_BROKER_NAME_MAX + 16], sname[24], entry[AL_HOST_MAX + 16];
	snprintf(label, sizeof(label), "--broker %s", b->name);
	snprintf(sname, sizeof(sname), "H%zu", i);
	host_entry(b, entry, sizeof(entry));
	const char *hosts[1] = {entry};
	const struct al_secret_src src = {.what = label,
					  .name = sname,
					  .kind = g[K_ENV].s ? AL_SECRET_ENV : AL_SECRET_FILE,
					  .ref = g[K_ENV].s ? g[K_ENV].s : g[K_FILE].s,
					  .hosts = hosts,
					  .nhosts = 1};
	int r = al_secrets_add_src(b->secrets, &src, err);
	if (r < 0 && r != -ENOMEM) {
		r = -EINVAL; /* a bad spec, whatever the file said: the caller reports it as one */
		if (err)
			err->code = r;
	}
	if (r < 0)
		return r;
	const char *ph = al_secret_placeholder(b->secrets, i);
	size_t have = b->lines ? strlen(b->lines) : 0;
	size_t add = g[K_HEADER].len + 2 + (g[K_SCHEME].s ? g[K_SCHEME].len + 1 : 0) + strlen(ph) + 2;
	char *l = realloc(b->lines, have + add + 1);
	if (!l)
		return al_err(err, ENOMEM, "--broker %s: out of memory", b->name);
	b->lines = l;
	snprintf(l + have, add + 1, "%s: %s%s%s\r\n", g[K_HEADER].s, g[K_SCHEME].s ? g[K_SCHEME].s : "",
		 g[K_SCHEME].s ? " " : "", ph);
	return 0;
}

/* The upstream's verification: the system store, or only the ca= file's certificates, read now,
 * so that what was checked here is what verification uses later (tlsca.c, as for --upstream-ca). */
static int load_ca(struct broker *b, const struct spec_val *v, struct al_error *err)
{
	char tmp[72];
	if (v->s && v->s[0] != '/')
		return bad(err, b->name, "ca=%s: the path must be absolute", shown(tmp, sizeof(tmp), v->s, v->len));
	int r = tca_client_new(v->s, &b->ctx);
	if (r == -EIO || r == -ENOMEM)
		return al_err(err, -r, "--broker %s: upstream TLS setup failed", b->name);
	if (r == -EINVAL)
		return bad(err, b->name, "ca=%s: no PEM certificate in it (or not a regular file)",
			   shown(tmp, sizeof(tmp), v->s, v->len));
	if (r < 0)
		return bad(err, b->name, "ca=%s: cannot read it: %s", shown(tmp, sizeof(tmp), v->s, v->len),
			   strerror(-r));
	return 0;
}

/* NAME=URL[,key=value...] into b; everything checked, the secrets and CA read. */
static int parse_spec(struct al_broker_list *bl, struct broker *b, char *spec, struct al_error *err)
{
	char *eq = strchr(spec, '=');
	if (!eq)
		return bad(err, NULL, "expected NAME=https://HOST[:PORT][/BASE],header=HEADER,env=VAR|file=PATH");
	int r = parse_name(b, spec, (size_t)(eq - spec), err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < bl->n; i++)
		if (strcmp(bl->b[i]->name, b->name) == 0)
			return bad(err, b->name, "defined twice");
	char *url = eq + 1, *comma = strchr(url, ',');
	r = parse_upstream(b, url, comma ? (size_t)(comma - url) : strlen(url), err);
	if (r < 0)
		return r;
	struct spec_keys ks = {0};
	if (!comma || !comma[1])
		return bad(err, b->name, "header= and env= or file= are required");
	r = parse_keys(b, comma + 1, &ks, err);
	for (size_t i = 0; r == 0 && i < ks.ng; i++)
		r = check_group(b, ks.g[i], err);
	if (r == 0)
		r = load_ca(b, &ks.ca, err);
	if (r == 0 && al_secrets_new(&b->secrets) < 0)
		r = al_err(err, ENOMEM, "--broker %s: out of memory", b->name);
	for (size_t i = 0; r == 0 && i < ks.ng; i++)
		r = add_secret(b, ks.g[i], i, err);
	return r;
}

int al_broker_list_add(struct al_broker_list *bl, const char *spec, struct al_error *err)
{
	if (!bl)
		return bad(err, NULL, "no broker list");
	if (!spec || !*spec)
		return bad(err, NULL, "empty specification");
	if (strnlen(spec, SPEC_MAX + 1) > SPEC_MAX)
		return bad(err, NULL, "specification longer than %d bytes", SPEC_MAX);
	if (bl->n == BROKER_MAX)
		return bad(err, NULL, "at most %d brokers", BROKER_MAX);
	__attribute__((cleanup(broker_freep))) struct broker *b = calloc(1, sizeof(*b));
	if (!b)
		return al_err(err, ENOMEM, "--broker: out of memory");
	/* A copy the parser splits in place: it names sources, not values. */
	char copy[SPEC_MAX + 1];
	snprintf(copy, sizeof(copy), "%s", spec);
	int r = parse_spec(bl, b, copy, err);
	if (r < 0)
		return r;
	bl->b[bl->n++] = steal_ptr(b);
	return 0;
}

/* ---- serving: the request --------------------------------------------------------- */

/* The broker named by the first segment of path ("/NAME", "/NAME/...", "/NAME?..."); *tail is
 * what follows the name. The name is recorded even when unknown (it is bounded and of a
 * restricted alphabet): which broker a job tried is worth auditing. */
static const struct broker *find_broker(const struct al_broker_list *bl, const char *path, const char **tail,
					struct px_record *rec)
{
	if (path[0] != '/') {
		*tail = path;
		return NULL;
	}
	size_t n = strcspn(path + 1, "/?");
	*tail = path + 1 + n;
	if (n == 0 || n >= AL_BROKER_NAME_MAX)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!is_name_char(path[1 + i]))
			return NULL;
	memcpy(rec->broker, path + 1, n);
	rec->broker[n] = 0;
	for (size_t i = 0; bl && i < bl->n; i++)
		if (strcmp(bl->b[i]->name, rec->broker) == 0)
			return bl->b[i];
	return NULL;
}

/* May tail be appended to BASE? Only the path part (before '?') is checked: a query may
 * legitimately carry "%2F" or "..", and no server resolves dot segments in it. Refused: dot
 * segments ("..", ".", and "..;x" which some servers read as ".."), encoded dots and slashes
 * ("%2e", "%2f", "%5c": decoded by some servers before routing, so "%2e%2e%2f" climbs), and
 * backslashes (a separator to some servers). What is left can only name BASE's subtree. */
static bool tail_ok(const char *tail)
{
	size_t pl = strcspn(tail, "?");
	for (size_t i = 0; i < pl; i++) {
		if (tail[i] == '\\')
			return false;
		/* tail is NUL-terminated: the comparisons stop at its end (or at the '?'). */
		if (tail[i] == '%' && (strncasecmp(tail + i, "%2e", 3) == 0 || strncasecmp(tail + i, "%2f", 3) == 0 ||
				       strncasecmp(tail + i, "%5c", 3) == 0))
			return false;
		if (tail[i] != '/')
			continue;
		size_t sl = strcspn(tail + i + 1, "/?;");
		if ((sl == 1 && tail[i + 1] == '.') || (sl == 2 && tail[i + 1] == '.' && tail[i + 2] == '.'))
			return false;
	}
	return true;
}

/* The request target: BASE + tail, with a '/' only where neither gives one ("" + "?q" is "/?q";
 * "/b" + "?q" stays "/b?q"). */
static char *make_target(const struct broker *b, const char *tail)
{
	char *t = NULL;
	if (asprintf(&t, "%s%s%s", b->base, !b->base[0] && tail[0] != '/' ? "/" : "", tail) < 0)
		return NULL;
	return t;
}

static void fail_reply(struct px_conn *c, const struct px_config *cfg, int status, const char *why)
{
	c->rec.decision = PXD_ERROR;
	c->rec.reason = why;
	c->rec.status = status;
	px_reply(c->client, status, why, cfg->idle_ms);
}

void broker_serve(const struct al_broker_list *bl, struct px_conn *c, const struct px_config *cfg,
		  const struct pr_request *req, const char *rest, size_t nrest)
{
	struct px_record *rec = &c->rec;
	const char *tail = "";
	/* Only the fields this call owns: the caller may have set the times already. */
	rec->kind = PXK_BROKER;
	rec->decision = PXD_ERROR;
	rec->host[0] = rec->addr[0] = rec->broker[0] = 0;
	rec->method[0] = rec->path[0] = rec->rule[0] = 0;
	rec->port = 0;
	rec->reason = NULL;
	rec->status = 0;
	rec->bytes_up = rec->bytes_down = 0;
	rec->tls_airlock = false;
	if (!req || req->kind != PR_ORIGIN || !req->path) {
		fail_reply(c, cfg, 400, "not a broker request");
		return;
	}
	const struct broker *b = find_broker(bl, req->path, &tail, rec);
	if (!b) {
		fail_reply(c, cfg, 404, "no such broker");
		return;
	}
	snprintf(rec->host, sizeof(rec->host), "%s", b->host);
	rec->port = b->port;
	if (!tail_ok(tail)) {
		fail_reply(c, cfg, 400, "path refused by the broker (dot segment, encoded '/' or '.', or '\\')");
		return;
	}
	cleanup_free char *target = make_target(b, tail);
	if (!target) {
		fail_reply(c, cfg, 503, "out of memory");
		return;
	}
	const struct px_forward fw = {
		.ctx = b->ctx, .secrets = b->secrets, .target = target, .lines = b->lines, .drop = b->drop};
	px_forward_serve(c, cfg, &fw, req, rest, nrest);
}
