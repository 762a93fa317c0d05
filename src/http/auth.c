/* auth.c — who may talk to the server and as whom: the listen address, Host and Origin checks, the
 * principal of each request (peer uid or bearer token), token files. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "http/hx.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fsutil.h"

int hx_parse_listen(const char *spec, struct hx_listen *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!spec || !*spec)
		return al_err(err, EINVAL, "listen: empty address");
	char host[64];
	const char *port;
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof(host))
			return al_err(err, EINVAL, "listen \"%s\": expected [IPv6]:PORT", spec);
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = 0;
		port = close + 2;
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon || (size_t)(colon - spec) >= sizeof(host) || memchr(spec, ':', (size_t)(colon - spec)))
			return al_err(err, EINVAL, "listen \"%s\": expected HOST:PORT (IPv6 in brackets)", spec);
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = 0;
		port = colon + 1;
	}
	char *end;
	errno = 0;
	unsigned long p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p > 65535)
		return al_err(err, EINVAL, "listen \"%s\": bad port", spec);
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	struct sockaddr_in *v4 = (struct sockaddr_in *)&out->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->addr;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)p);
		out->len = sizeof(*v4);
		out->loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)p);
		out->len = sizeof(*v6);
		out->v6 = true;
		out->loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr) ||
				(IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr) && v6->sin6_addr.s6_addr[12] == 127);
	} else {
		return al_err(err, EINVAL, "listen \"%s\": \"%s\" is not a numeric address (or localhost)", spec, host);
	}
	return 0;
}

/* ---- Host and Origin ------------------------------------------------------------------------ */

/* What follows the host name in a Host header or an Origin: nothing, or ":" and a port of 1 to
 * 65535 in decimal digits and nothing after it. Anything else ("127.0.0.1:80@evil",
 * "[::1]:80/x", "localhost:") is not an authority this server is reached by: a browser sends
 * none of them, and a parser downstream (a proxy, a log reader) may read another host in them. */
static bool port_suffix_ok(const char *p, size_t n)
{
	if (n == 0)
		return true;
	if (p[0] != ':' || n < 2 || n > 6)
		return false;
	unsigned v = 0;
	for (size_t i = 1; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

/* host[0..len): "127.0.0.1:8080", "[::1]:8080", "localhost" (the port, if any, must be one). */
bool hx_loopback_host(const char *host, size_t len)
{
	char name[64];
	if (len == 0)
		return false;
	if (host[0] == '[') {
		const char *close = memchr(host, ']', len);
		if (!close || (size_t)(close - host - 1) >= sizeof(name) ||
		    !port_suffix_ok(close + 1, len - (size_t)(close + 1 - host)))
			return false;
		memcpy(name, host + 1, (size_t)(close - host - 1));
		name[close - host - 1] = 0;
		struct in6_addr a;
		return inet_pton(AF_INET6, name, &a) == 1 && IN6_IS_ADDR_LOOPBACK(&a);
	}
	const char *colon = memchr(host, ':', len);
	size_t n = colon ? (size_t)(colon - host) : len;
	if (!port_suffix_ok(host + n, len - n))
		return false;
	if (n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = 0;
	if (strcasecmp(name, "localhost") == 0)
		return true;
	struct in_addr a;
	return inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* The authority of an Origin ("http://127.0.0.1:8080" -> "127.0.0.1:8080"), or NULL ("null",
 * other schemes, garbage). */
static const char *origin_authority(const char *origin)
{
	if (strncasecmp(origin, "http://", 7) == 0)
		return origin + 7;
	if (strncasecmp(origin, "https://", 8) == 0)
		return origin + 8;
	return NULL;
}

static bool same_host(const char *a, const char *b)
{
	return strcasecmp(a, b) == 0;
}

/*
 * Why this is safe. A browser visiting a hostile page can make requests to 127.0.0.1, but:
 *  - by DNS rebinding (evil.example resolving to 127.0.0.1) its requests carry
 *    "Host: evil.example", refused here on a loopback listener;
 *  - by a cross-site request (a form post, fetch() with no-cors) they carry the page's Origin,
 *    refused unless it is a loopback origin (or, off loopback, this very host).
 * Clients that are not browsers send no Origin and a Host they were given. With a token, a
 * browser cannot add the Authorization header cross-site without a CORS preflight, which this
 * server never grants (it sends no Access-Control-* header).
 */
int hx_check_origin(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	const char *host = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, "Host") : NULL;
	const char *origin = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, "Origin") : NULL;
	if (s->loopback && (!host || !hx_loopback_host(host, strlen(host)))) {
		hx_error(rs, 403, "Host header must name a loopback address (this server listens on loopback only)");
		return 1;
	}
	if (!origin)
		return 0;
	const char *auth = origin_authority(origin);
	if (auth && s->loopback && hx_loopback_host(auth, strlen(auth)))
		return 0;
	if (auth && !s->loopback && host && same_host(auth, host))
		return 0;
	hx_error(rs, 403, "Origin %.100s is not allowed", origin);
	return 1;
}

/* ---- credentials ---------------------------------------------------------------------------- */

static bool approver_uid(const struct hx_server *s, uid_t uid)
{
	if (!s->o.approver_uids)
		return uid == 0;
	for (size_t i = 0; i < s->o.n_approver_uids; i++)
		if (s->o.approver_uids[i] == uid)
			return true;
	return false;
}

/* The token's entry, or NULL. Every entry is compared, each by digest in constant time: neither
 * which token matched, nor a prefix, nor a length leaks through timing. */
const struct hx_token *hx_token_of_secret(const struct hx_server *s, const char *given)
{
	if (!given)
		return NULL;
	unsigned char d[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)given, strlen(given), d);
	const struct hx_token *found = NULL;
	for (size_t i = 0; i < s->ntokens; i++)
		if (CRYPTO_memcmp(d, s->tokens[i].digest, sizeof(d)) == 0)
			found = &s->tokens[i];
	return found;
}

const struct hx_token *hx_token_named(const struct hx_server *s, const char *name)
{
	for (size_t i = 0; name && i < s->ntokens; i++)
		if (!s->tokens[i].approver && strcmp(s->tokens[i].name, name) == 0)
			return &s->tokens[i];
	return NULL;
}

static const struct hx_token *token_of(const struct hx_server *s, const struct hx_request *rq)
{
	const char *auth = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, "Authorization") : NULL;
	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
		return NULL;
	const char *given = auth + 7;
	while (*given == ' ')
		given++;
	return hx_token_of_secret(s, given);
}

/*
 * Who the request is from. On the Unix socket the kernel says (SO_PEERCRED, read when the
 * connection was accepted): the socket's mode (0600) decides who may connect at all, the uid
 * names the principal, and the approver list (default: root) who may decide. A bearer token
 * sent there is ignored: a uid cannot borrow a token's role through the local door.
 * On TCP the token is the only identity: a client token is a client, an approver token an
 * approver and nothing else (the two roles never share a credential). A server given no token
 * at all (in-process tests; http_serve refuses TCP without one) knows one anonymous principal.
 */
static int check_credentials(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	struct hx_principal *who = rq->who;
	*who = (struct hx_principal){0};
	if (rq->local) {
		snprintf(who->name, sizeof(who->name), "uid:%u", (unsigned)rq->uid);
		who->client = true;
		who->approver = approver_uid(s, rq->uid);
		return 0;
	}
	if (s->ntokens == 0) {
		who->client = who->approver = true;
		return 0;
	}
	const struct hx_token *t = token_of(s, rq);
	if (!t) {
		hx_error(rs, 401, "missing or wrong bearer token");
		rs->challenge = true;
		return 1;
	}
	snprintf(who->name, sizeof(who->name), "token:%.72s", t->name);
	who->client = !t->approver;
	who->approver = t->approver;
	return 0;
}

int hx_check_access(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	/* A browser cannot open a Unix socket: Host and Origin matter on TCP only. */
	return (!rq->local && hx_check_origin(s, rq, rs)) || check_credentials(s, rq, rs);
}

/* ---- token files ---------------------------------------------------------------------------- */

#define TOKEN_MIN      16
#define TOKEN_FILE_MAX 65536

static bool token_ok(const char *t)
{
	size_t n = strlen(t);
	for (size_t i = 0; i < n; i++)
		if (t[i] <= ' ' || t[i] > '~')
			return false;
	return n >= TOKEN_MIN;
}

static bool name_ok(const char *t)
{
	size_t n = strlen(t);
	return n > 0 && n < HX_PRINCIPAL_MAX - 8 &&
	       strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-#@") == n;
}

/* The file's bytes (*len of them, NUL-terminated), if it is a regular file only its owner may read
 * or write. */
static int read_private(const char *path, char **out, size_t *len, struct al_error *err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return al_err_sys(err, errno, "token file %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return al_err_sys(err, errno, "token file %s", path);
	if (!S_ISREG(st.st_mode))
		return al_err(err, EINVAL, "token file %s: not a regular file", path);
	if (st.st_mode & 077)
		return al_err(err, EPERM, "token file %s: mode %04o lets others read or change it (chmod 600 %s)", path,
			      (unsigned)(st.st_mode & 07777), path);
	if (st.st_size > TOKEN_FILE_MAX)
		return al_err(err, EFBIG, "token file %s: over %d bytes", path, TOKEN_FILE_MAX);
	char *buf = calloc(1, (size_t)st.st_size + 1);
	if (!buf)
		return al_err(err, ENOMEM, "out of memory");
	ssize_t n = read(fd, buf, (size_t)st.st_size);
	if (n < 0) {
		free(buf);
		return al_err_sys(err, errno, "token file %s", path);
	}
	buf[n] = 0;
	*out = buf;
	*len = (size_t)n;
	return 0;
}

static int add_token(const char *name, const char *token, bool approver, struct http_token **tokens, size_t *n)
{
	struct http_token *grown = realloc(*tokens, (*n + 1) * sizeof(**tokens));
	if (!grown)
		return -ENOMEM;
	*tokens = grown;
	char *nm = strdup(name), *tk = strdup(token);
	if (!nm || !tk) {
		free(nm);
		free(tk);
		return -ENOMEM;
	}
	grown[(*n)++] = (struct http_token){.name = nm, .token = tk, .approver = approver};
	return 0;
}

static int parse_line(const char *path, unsigned line, char *text, bool approver, struct http_token **tokens, size_t *n,
		      struct al_error *err)
{
	text += strspn(text, " \t");
	if (!*text || *text == '#')
		return 0;
	char *sp = text + strcspn(text, " \t");
	char *second = *sp ? sp + strspn(sp, " \t") : sp;
	*sp = 0;
	char fallback[HX_PRINCIPAL_MAX];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	snprintf(fallback, sizeof(fallback), "%.48s#%u", base, line);
	const char *name = *second ? text : fallback, *token = *second ? second : text;
	if (*second && !name_ok(name))
		return al_err(err, EINVAL, "token file %s:%u: bad name (letters, digits, . _ - # @)", path, line);
	if (!token_ok(token))
		return al_err(err, EINVAL, "token file %s:%u: a token is %d or more printable characters, no spaces",
			      path, line, TOKEN_MIN);
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*tokens)[i].token, token) == 0)
			return al_err(err, EINVAL,
				      "token file %s:%u: this token is already %s's: one credential, one principal",
				      path, line, (*tokens)[i].name);
	return add_token(name, token, approver, tokens, n) < 0 ? al_err(err, ENOMEM, "out of memory") : 0;
}

int http_tokens_load(const char *path, bool approver, struct http_token **tokens, size_t *n, struct al_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int r = read_private(path, &buf, &len, err);
	if (r < 0 || !buf)
		return r < 0 ? r : -EIO;
	size_t before = *n;
	unsigned line = 0;
	for (char *save = NULL, *l = strtok_r(buf, "\r\n", &save); l && r == 0; l = strtok_r(NULL, "\r\n", &save))
		r = parse_line(path, ++line, l, approver, tokens, n, err);
	if (r == 0 && *n == before)
		r = al_err(err, ENODATA, "token file %s holds no token", path);
	explicit_bzero(buf, len); /* the whole file: strtok_r cut it into lines */
	free(buf);
	return r;
}

void http_tokens_free(struct http_token *tokens, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(tokens[i].name);
		explicit_bzero(tokens[i].token, strlen(tokens[i].token));
		free(tokens[i].token);
	}
	free(tokens);
}

int http_token_generate(const char *path, struct al_error *err)
{
	unsigned char raw[32];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return al_err_sys(err, errno ? errno : EIO, "token: no random bytes");
	char text[2 * sizeof(raw) + 2];
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(text + 2 * i, 3, "%02x", raw[i]);
	text[2 * sizeof(raw)] = '\n';
	text[2 * sizeof(raw) + 1] = 0;
	explicit_bzero(raw, sizeof(raw));
	int r = path[0] == '/' ? al_make_parents(path, 0700) : 0;
	if (r < 0)
		return al_err_sys(err, -r, "token: cannot create the directories above %s", path);
	/* O_EXCL: never over a file that exists (a link planted there included). */
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return al_err_sys(err, errno, "token: cannot create %s", path);
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	explicit_bzero(text, sizeof(text));
	if (w != (ssize_t)len || fsync(fd) < 0) {
		int e = w < 0 ? errno : EIO;
		unlink(path);
		return al_err_sys(err, e, "token: cannot write %s", path);
	}
	return 0;
}
