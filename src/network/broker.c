/* broker.c — the credential broker: parses --broker specs, keeps their secrets in the
 * supervisor only, and serves the sandbox's origin-form requests over verified TLS.
 *
 * Theory of operation. al_broker_list_add reads each secret once, at policy time, from
 * airlock's own environment or a file, and stores it in exactly one place: the ready-made
 * header line "HEADER: [scheme ]SECRET\r\n" of its broker (wiped on free). The sandbox never
 * holds it: a job sends "GET /NAME/path HTTP/1.1" to the egress proxy's port, the proxy's
 * connection thread parses the head (proxyreq.c, PR_ORIGIN) and calls broker_serve, which
 *   1. picks the broker by the first path segment (404 if none) and refuses paths that could
 *      climb out of the upstream's BASE (dot segments, encoded slashes or dots, backslashes);
 *   2. resolves and connects to the upstream the operator named (never one the client names),
 *      and completes a TLS handshake that verifies the certificate chain (system store, or
 *      only the broker's ca= file) and the host name or IP (SNI for names);
 *   3. sends its own request line and Host, the secret header, "Accept-Encoding: identity", the
 *      client's headers minus any of the secret header's name (the client can neither replace nor
 *      duplicate it) and its Accept-Encoding, then the body (exactly Content-Length bytes);
 *   4. relays the response until the upstream closes: its head whole and first, refused (502) if it
 *      names a content coding (a gzipped echo would carry the secret past the scan), then the body,
 *      holding back enough bytes to see the secret whole: a response that reflects the raw secret
 *      is cut before it reaches the job.
 * Every wait is a poll bounded by the idle timeout, which also watches the client socket so a
 * proxy shutdown (which shuts the client down) ends the wait. Errors before the first
 * response byte are answered with px_reply (404, 400 or 502), never with the secret.
 */
#include "network/broker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "network/proxyreq.h"
#include "network/resolve.h"
#include "util/cleanup.h"
#include "util/error.h"

#if OPENSSL_VERSION_NUMBER < 0x30000000L
#define SSL_get1_peer_certificate SSL_get_peer_certificate
#endif

#define BROKER_MAX	64	  /* brokers per policy */
#define SPEC_MAX	4096	  /* one --broker value */
#define SECRET_MAX	8192	  /* bytes of secret (file= and env=) */
#define CA_FILE_MAX	(1 << 20) /* a PEM bundle of a few thousand certificates */
#define HEADER_NAME_MAX 64
#define SCHEME_MAX	32
#define VAR_MAX		128
#define RELAY_CHUNK	16384
#define DEFAULT_IDLE_MS 30000 /* when the caller passes no idle timeout: never wait forever */

struct broker {
	char name[AL_BROKER_NAME_MAX];
	char host[AL_HOST_MAX];
	enum al_host_kind host_kind;
	uint16_t port;
	char *base; /* "" or "/a/b": a clean path without a trailing slash */
	char header[HEADER_NAME_MAX + 1];
	/* "HEADER: [scheme ]SECRET\r\n": the only copy of the secret; wiped before free. */
	char *line;
	size_t line_len;
	size_t secret_off, secret_len; /* the secret inside line, for the response scan */
	char *ca_pem;		       /* the ca= file's bytes (public); NULL: the system store */
	size_t ca_len;
	pthread_mutex_t lock; /* guards ctx: connection threads serve concurrently */
	bool lock_ready;
	SSL_CTX *ctx; /* made on first use, then shared (SSL_new on it is thread-safe) */
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
	if (b->line) {
		OPENSSL_cleanse(b->line, b->line_len);
		free(b->line);
	}
	SSL_CTX_free(b->ctx);
	if (b->lock_ready)
		pthread_mutex_destroy(&b->lock);
	free(b->ca_pem);
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
	const char *s; /* NULL: not given */
	size_t len;
};

/* "key=value[,key=value...]" after the upstream: each known key at most once. */
static int parse_keys(struct broker *b, const char *p, struct spec_val v[K_COUNT], struct al_error *err)
{
	char tmp[40];
	while (*p) {
		const char *end = strchr(p, ',');
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
		if (v[k].s)
			return bad(err, b->name, "%s= given twice", key_names[k]);
		v[k].s = eq + 1;
		v[k].len = len - kl - 1;
		if (v[k].len == 0)
			return bad(err, b->name, "%s= is empty", key_names[k]);
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
	static const char *const no[] = {"host",       "content-length", "transfer-encoding",
					 "connection", "keep-alive",	 "upgrade",
					 "te",	       "trailer",	 "expect"};
	if (n >= 6 && strncasecmp(h, "proxy-", 6) == 0)
		return true;
	for (size_t i = 0; i < AL_ARRAY_SIZE(no); i++)
		if (strlen(no[i]) == n && strncasecmp(h, no[i], n) == 0)
			return true;
	return false;
}

static int check_header(struct broker *b, const struct spec_val v[K_COUNT], struct al_error *err)
{
	char tmp[72];
	if (!v[K_HEADER].s)
		return bad(err, b->name, "header= is required (the header that carries the secret)");
	if (v[K_HEADER].len > HEADER_NAME_MAX || !pr_is_token(v[K_HEADER].s, v[K_HEADER].len))
		return bad(err, b->name, "header \"%s\" is not an HTTP header name",
			   shown(tmp, sizeof(tmp), v[K_HEADER].s, v[K_HEADER].len));
	if (reserved_header(v[K_HEADER].s, v[K_HEADER].len))
		return bad(err, b->name, "header %s may not carry a secret",
			   shown(tmp, sizeof(tmp), v[K_HEADER].s, v[K_HEADER].len));
	memcpy(b->header, v[K_HEADER].s, v[K_HEADER].len);
	if (v[K_SCHEME].s && (v[K_SCHEME].len > SCHEME_MAX || !pr_is_token(v[K_SCHEME].s, v[K_SCHEME].len)))
		return bad(err, b->name, "scheme \"%s\" is not a single word",
			   shown(tmp, sizeof(tmp), v[K_SCHEME].s, v[K_SCHEME].len));
	if (!v[K_ENV].s == !v[K_FILE].s)
		return bad(err, b->name, "give exactly one of env=VAR and file=PATH for the secret");
	return 0;
}

/* ---- spec parsing: reading the secret and the CA file ------------------------------- */

/* Reads a whole regular file of at most max bytes into buf (room for max + 1). O_NONBLOCK so a FIFO
 * named by mistake is refused instead of hanging. Returns the length or -errno (-EFBIG, -EISDIR,
 * -EINVAL for other non-regular files). */
static ssize_t read_small_file(const char *path, char *buf, size_t max)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size > (off_t)max)
		return -EFBIG;
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, buf + got, max + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return (ssize_t)got;
		got += (size_t)n;
		if (got > max)
			return -EFBIG; /* it grew after fstat */
	}
}

/* A path from the spec, NUL-terminated and absolute (a relative path would depend on the
 * directory airlock happens to be started from). */
static int spec_path(struct broker *b, const char *key, const struct spec_val *v, char out[PATH_MAX],
		     struct al_error *err)
{
	char tmp[72];
	if (v->len >= PATH_MAX)
		return bad(err, b->name, "%s= path too long", key);
	memcpy(out, v->s ? v->s : "", v->len);
	out[v->len] = 0;
	if (out[0] != '/')
		return bad(err, b->name, "%s=%s: the path must be absolute", key, shown(tmp, sizeof(tmp), out, v->len));
	return 0;
}

static int file_error(struct broker *b, const char *key, const char *path, ssize_t r, int max, struct al_error *err)
{
	char tmp[72];
	shown(tmp, sizeof(tmp), path, strlen(path));
	if (r == -EFBIG)
		return bad(err, b->name, "%s=%s: larger than %d KiB", key, tmp, max / 1024);
	if (r == -EISDIR || r == -EINVAL)
		return bad(err, b->name, "%s=%s: not a regular file", key, tmp);
	return bad(err, b->name, "%s=%s: cannot read it: %s", key, tmp, strerror((int)-r));
}

static bool is_var_name(const char *s, size_t n)
{
	if (n == 0 || n > VAR_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_'))
			return false;
	return true;
}

/* Fills sec[0..*len) (room for SECRET_MAX + 1) from env= or file=. The caller wipes sec. */
static int secret_source(struct broker *b, const struct spec_val v[K_COUNT], char *sec, size_t *len,
			 struct al_error *err)
{
	char path[PATH_MAX] = "", tmp[72];
	if (v[K_ENV].s) {
		const struct spec_val *e = &v[K_ENV];
		if (!is_var_name(e->s, e->len))
			return bad(err, b->name, "env=%s is not a variable name",
				   shown(tmp, sizeof(tmp), e->s, e->len));
		char var[VAR_MAX + 1];
		memcpy(var, e->s, e->len);
		var[e->len] = 0;
		const char *val = getenv(var);
		if (!val || !*val)
			return bad(err, b->name, "env=%s: the variable is %s", var, val ? "empty" : "not set");
		*len = strlen(val);
		if (*len > SECRET_MAX)
			return bad(err, b->name, "env=%s: the secret is larger than %d KiB", var, SECRET_MAX / 1024);
		memcpy(sec, val, *len);
		return 0;
	}
	int r = spec_path(b, "file", &v[K_FILE], path, err);
	if (r < 0)
		return r;
	ssize_t n = read_small_file(path, sec, SECRET_MAX);
	if (n < 0)
		return file_error(b, "file", path, n, SECRET_MAX, err);
	while (n > 0 && (sec[n - 1] == '\n' || sec[n - 1] == '\r'))
		n--; /* the line ending an editor or `echo` adds is not part of the secret */
	if (n == 0)
		return bad(err, b->name, "file=%s: empty", shown(tmp, sizeof(tmp), path, strlen(path)));
	*len = (size_t)n;
	return 0;
}

/* Builds the header line from the secret. A CR or LF in it would let the secret's source
 * inject headers (or a second request); any control character is refused, naming only where
 * the secret came from. */
static int build_line(struct broker *b, const struct spec_val v[K_COUNT], const char *sec, size_t sl,
		      struct al_error *err)
{
	for (size_t i = 0; i < sl; i++)
		if ((unsigned char)sec[i] < 0x20 || sec[i] == 0x7f)
			return bad(err, b->name, "the secret from %s= contains a control character (CR, LF, NUL, ...)",
				   v[K_ENV].s ? "env" : "file");
	size_t hl = strlen(b->header), scl = v[K_SCHEME].s ? v[K_SCHEME].len + 1 : 0;
	b->line_len = hl + 2 + scl + sl + 2;
	b->line = malloc(b->line_len + 1);
	if (!b->line)
		return al_err(err, ENOMEM, "--broker %s: out of memory", b->name);
	char *p = b->line;
	memcpy(p, b->header, hl), p += hl; /* NOLINT(bugprone-not-null-terminated-result): a length-counted line */
	memcpy(p, ": ", 2), p += 2;	   /* NOLINT(bugprone-not-null-terminated-result): ditto */
	if (scl) {
		memcpy(p, v[K_SCHEME].s, scl - 1), p += scl - 1;
		*p++ = ' ';
	}
	b->secret_off = (size_t)(p - b->line);
	b->secret_len = sl;
	memcpy(p, sec, sl), p += sl;
	memcpy(p, "\r\n", 3);
	return 0;
}

static int read_secret(struct broker *b, const struct spec_val v[K_COUNT], struct al_error *err)
{
	/* Heap, not stack: wiped and freed here, so no copy outlives this call in a stack frame
	 * that later calls would leave unwiped. */
	char *sec = calloc(1, SECRET_MAX + 1);
	size_t sl = 0;
	if (!sec)
		return al_err(err, ENOMEM, "--broker %s: out of memory", b->name);
	int r = secret_source(b, v, sec, &sl, err);
	if (r == 0)
		r = build_line(b, v, sec, sl, err);
	OPENSSL_cleanse(sec, SECRET_MAX + 1);
	free(sec);
	return r;
}

/* Adds every certificate of a PEM buffer to store (NULL: only counts). Returns how many. */
static int pem_certs(const char *pem, size_t len, X509_STORE *store)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	int n = 0;
	X509 *x;
	while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		if (!store || X509_STORE_add_cert(store, x) == 1)
			n++;
		X509_free(x);
	}
	BIO_free(bio);
	ERR_clear_error(); /* the read that ends the loop leaves "no start line" behind */
	return n;
}

static int load_ca(struct broker *b, const struct spec_val *v, struct al_error *err)
{
	char path[PATH_MAX] = "", tmp[72];
	if (!v->s)
		return 0;
	int r = spec_path(b, "ca", v, path, err);
	if (r < 0)
		return r;
	b->ca_pem = malloc(CA_FILE_MAX + 1);
	if (!b->ca_pem)
		return al_err(err, ENOMEM, "--broker %s: out of memory", b->name);
	ssize_t n = read_small_file(path, b->ca_pem, CA_FILE_MAX);
	if (n < 0)
		return file_error(b, "ca", path, n, CA_FILE_MAX, err);
	b->ca_len = (size_t)n;
	/* Read now, kept in memory: what was checked here is what verification uses later. */
	if (pem_certs(b->ca_pem, b->ca_len, NULL) == 0)
		return bad(err, b->name, "ca=%s: no PEM certificate in it",
			   shown(tmp, sizeof(tmp), path, strlen(path)));
	char *fit = realloc(b->ca_pem, b->ca_len + 1);
	if (fit)
		b->ca_pem = fit;
	return 0;
}

/* NAME=URL[,key=value...] into b; everything checked, the secret and CA read. */
static int parse_spec(struct al_broker_list *bl, struct broker *b, const char *spec, struct al_error *err)
{
	const char *eq = strchr(spec, '=');
	if (!eq)
		return bad(err, NULL, "expected NAME=https://HOST[:PORT][/BASE],header=HEADER,env=VAR|file=PATH");
	int r = parse_name(b, spec, (size_t)(eq - spec), err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < bl->n; i++)
		if (strcmp(bl->b[i]->name, b->name) == 0)
			return bad(err, b->name, "defined twice");
	const char *url = eq + 1, *comma = strchr(url, ',');
	r = parse_upstream(b, url, comma ? (size_t)(comma - url) : strlen(url), err);
	if (r < 0)
		return r;
	struct spec_val v[K_COUNT] = {{0}};
	if (!comma || !comma[1])
		return bad(err, b->name, "header= and env= or file= are required");
	r = parse_keys(b, comma + 1, v, err);
	if (r == 0)
		r = check_header(b, v, err);
	if (r == 0)
		r = load_ca(b, &v[K_CA], err);
	if (r == 0)
		r = read_secret(b, v, err);
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
	int r = parse_spec(bl, b, spec, err);
	if (r < 0)
		return r;
	if (pthread_mutex_init(&b->lock, NULL) != 0)
		return al_err(err, ENOMEM, "--broker %s: cannot create a lock", b->name);
	b->lock_ready = true;
	bl->b[bl->n++] = steal_ptr(b);
	return 0;
}

/* ---- serving: the request --------------------------------------------------------- */

/* The broker named by the first segment of path ("/NAME", "/NAME/...", "/NAME?..."); *tail is
 * what follows the name. The name is recorded even when unknown (it is bounded and of a
 * restricted alphabet): which broker a job tried is worth auditing. */
static struct broker *find_broker(const struct al_broker_list *bl, const char *path, const char **tail,
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

static bool hdr_name_is(const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	return len > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0;
}

/* Asked of every upstream in place of the client's Accept-Encoding: the response scan reads the
 * body as it comes, and a compressed echo of the request would carry the secret past it. */
#define IDENTITY_LINE "Accept-Encoding: identity\r\n"

/*
 * "METHOD BASE+tail HTTP/1.1", Host, the secret line, Accept-Encoding: identity, then the client's
 * header lines without any named like the secret header (a client copy could replace ours at a
 * server that takes the last one, or make the header a list) or Accept-Encoding. req->head ends with Connection: close and the empty
 * line. Returns a heap buffer the caller wipes (it holds the secret), or NULL.
 */
static char *build_head(const struct broker *b, const struct pr_request *req, const char *tail, size_t *len)
{
	size_t cap = strlen(req->method) + strlen(b->base) + strlen(tail) + AL_HOST_MAX + b->line_len +
		     sizeof(IDENTITY_LINE) + req->head_len + 64;
	char *h = malloc(cap);
	if (!h)
		return NULL;
	bool v6 = b->host_kind == AL_HOST_IPV6;
	char port[8] = "";
	if (b->port != 443)
		snprintf(port, sizeof(port), ":%u", b->port);
	/* The target is BASE + tail, with a '/' only where neither gives one ("" + "?q" is "/?q";
	 * "/b" + "?q" stays "/b?q"). */
	int n = snprintf(h, cap, "%s %s%s%s HTTP/1.1\r\nHost: %s%s%s%s\r\n", req->method, b->base,
			 !b->base[0] && tail[0] != '/' ? "/" : "", tail, v6 ? "[" : "", b->host, v6 ? "]" : "", port);
	size_t used = (size_t)n; /* cap covers every part: n < cap */
	memcpy(h + used, b->line, b->line_len), used += b->line_len;
	memcpy(h + used, IDENTITY_LINE, sizeof(IDENTITY_LINE) - 1), used += sizeof(IDENTITY_LINE) - 1;
	for (const char *p = req->head, *end = req->head + req->head_len; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - p) + 2 : (size_t)(end - p);
		if (!hdr_name_is(p, ll, b->header) && !hdr_name_is(p, ll, "accept-encoding")) {
			memcpy(h + used, p, ll);
			used += ll;
		}
		p += ll;
	}
	*len = used;
	return h;
}

/* ---- serving: waiting and TLS ------------------------------------------------------ */

struct conn {
	struct broker *b;
	int client, up;
	SSL *ssl;
	int idle_ms;
	struct px_record *rec;
	bool answered;	/* response bytes went to the client: no error reply any more */
	char first[12]; /* the first response bytes, for the status code */
	size_t nfirst;
};

/* Waits for events on fd; also wakes (with -EPIPE) when the client hangs up, so a proxy
 * shutting down its connections ends this one. */
static int wait_fd(const struct conn *c, int fd, short events)
{
	struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = c->client, .events = 0}};
	nfds_t n = fd == c->client ? 1 : 2;
	for (;;) {
		int r = poll(p, n, c->idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (n == 2 && (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)))
			return -EPIPE;
		return 0;
	}
}

/* After an SSL call returned ret: waits as TLS asks, or says why it cannot go on. */
static int tls_wait(struct conn *c, int ret)
{
	switch (SSL_get_error(c->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		return wait_fd(c, c->up, POLLIN);
	case SSL_ERROR_WANT_WRITE:
		return wait_fd(c, c->up, POLLOUT);
	case SSL_ERROR_ZERO_RETURN:
		return -ECONNRESET;
	case SSL_ERROR_SYSCALL:
		return errno ? -errno : -ECONNRESET;
	default:
		return -EPROTO;
	}
}

static SSL_CTX *make_ctx(const struct broker *b)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return NULL;
	/* Peer verification is what makes "the upstream" mean the operator's server and not
	 * whoever answers at that address: without it the secret goes to anyone on the path. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	/* Many servers close without close_notify after "Connection: close"; the client sees the
	 * same end of stream either way. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	if (b->ca_pem)
		ok = ok && pem_certs(b->ca_pem, b->ca_len, SSL_CTX_get_cert_store(ctx)) > 0;
	else
		ok = ok && SSL_CTX_set_default_verify_paths(ctx) == 1;
	if (!ok) {
		SSL_CTX_free(ctx);
		ctx = NULL;
	}
	ERR_clear_error();
	return ctx;
}

static SSL_CTX *broker_ctx(struct broker *b)
{
	pthread_mutex_lock(&b->lock);
	if (!b->ctx)
		b->ctx = make_ctx(b);
	SSL_CTX *ctx = b->ctx;
	pthread_mutex_unlock(&b->lock);
	return ctx;
}

/* The TLS handshake, verifying the chain and the operator's host name (or IP). *why is a short
 * static reason on failure. */
static int tls_start(struct conn *c, const char **why)
{
	SSL_CTX *ctx = broker_ctx(c->b);
	*why = "upstream TLS setup failed";
	if (!ctx || !(c->ssl = SSL_new(ctx)) || SSL_set_fd(c->ssl, c->up) != 1)
		return -ENOMEM;
	bool ok;
	if (c->b->host_kind == AL_HOST_NAME) {
		SSL_set_hostflags(c->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		ok = SSL_set_tlsext_host_name(c->ssl, c->b->host) == 1 && SSL_set1_host(c->ssl, c->b->host) == 1;
	} else { /* no SNI for addresses (RFC 6066); the certificate must name the IP */
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), c->b->host) == 1;
	}
	if (!ok)
		return -ENOMEM;
	for (;;) {
		ERR_clear_error();
		int ret = SSL_connect(c->ssl);
		if (ret == 1)
			break;
		int r = tls_wait(c, ret);
		if (r < 0) {
			long v = SSL_get_verify_result(c->ssl);
			*why = r == -ETIMEDOUT	? "upstream TLS handshake timed out"
			       : v != X509_V_OK ? X509_verify_cert_error_string(v)
						: "upstream TLS handshake failed";
			return r == -ETIMEDOUT || r == -EPIPE ? r : -EPROTO;
		}
	}
	/* Belt and braces: SSL_VERIFY_PEER already failed the handshake otherwise. */
	X509 *peer = SSL_get1_peer_certificate(c->ssl);
	X509_free(peer);
	if (!peer || SSL_get_verify_result(c->ssl) != X509_V_OK) {
		*why = "upstream certificate not verified";
		return -EPROTO;
	}
	return 0;
}

static int tls_write_all(struct conn *c, const char *p, size_t len)
{
	while (len > 0) {
		ERR_clear_error();
		int n = SSL_write(c->ssl, p, len > INT_MAX ? INT_MAX : (int)len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		int r = tls_wait(c, n);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Reads some response bytes: > 0, 0 at the end of the stream, or -errno. */
static int tls_read(struct conn *c, char *buf, size_t cap)
{
	for (;;) {
		ERR_clear_error();
		int n = SSL_read(c->ssl, buf, (int)cap);
		if (n > 0)
			return n;
		int e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0))
			return 0;
		int r = tls_wait(c, n);
		if (r < 0)
			return r;
	}
}

/* ---- serving: connecting, sending, relaying ----------------------------------------- */

static void put_addr(struct px_record *rec, const struct rs_addr *a)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;
	if (a->ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &s4->sin_addr, rec->addr, sizeof(rec->addr));
	else
		inet_ntop(AF_INET6, &s6->sin6_addr, rec->addr, sizeof(rec->addr));
}

/* The operator named this upstream, so its addresses are not checked against the forbidden
 * ranges the way a job's CONNECT target is: a broker to an internal service is a deliberate
 * choice, and TLS verification (not the address) is what authenticates it. */
static int connect_upstream(struct conn *c, const char **why)
{
	struct rs_addr a[RS_MAX_ADDRS];
	size_t n = 0;
	int r = rs_resolve(c->b->host, c->b->port, NULL, a, &n);
	if (r < 0) {
		*why = r == -ENOENT ? "upstream name does not resolve" : "upstream name resolution failed";
		return r;
	}
	*why = "cannot connect to upstream";
	for (size_t i = 0; i < n; i++) {
		put_addr(c->rec, &a[i]);
		c->up = rs_connect(&a[i], c->idle_ms);
		if (c->up >= 0)
			return 0;
		r = c->up;
	}
	return r < 0 ? r : -ECONNREFUSED;
}

/* The rest of the request body, from the client socket to the upstream. */
static int copy_body(struct conn *c, uint64_t left, char *buf)
{
	while (left > 0) {
		ssize_t n = recv(c->client, buf, left < RELAY_CHUNK ? (size_t)left : RELAY_CHUNK, 0);
		if (n > 0) {
			int r = tls_write_all(c, buf, (size_t)n);
			if (r < 0)
				return r;
			left -= (uint64_t)n;
			c->rec->bytes_up += (uint64_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE; /* the client ended before its body did */
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		int r = wait_fd(c, c->client, POLLIN);
		if (r < 0)
			return r;
	}
	return 0;
}

static int send_request(struct conn *c, const struct pr_request *req, const char *tail, const char *rest, size_t nrest,
			char *buf)
{
	size_t hl = 0;
	char *head = build_head(c->b, req, tail, &hl);
	if (!head)
		return -ENOMEM;
	int r = tls_write_all(c, head, hl);
	OPENSSL_cleanse(head, hl);
	free(head);
	/* Bytes after the head that are not body (a pipelined request) are not forwarded: one
	 * request per connection, framed by Content-Length alone. */
	size_t pre = nrest < req->content_length ? nrest : (size_t)req->content_length;
	if (r == 0 && pre > 0) {
		r = tls_write_all(c, rest, pre);
		c->rec->bytes_up += pre;
	}
	if (r == 0)
		r = copy_body(c, req->content_length - pre, buf);
	return r;
}

/* "HTTP/1.x NNN": the status for the record, from the first response bytes. */
static void note_status(struct conn *c, const char *p, size_t n)
{
	while (n > 0 && c->nfirst < sizeof(c->first))
		c->first[c->nfirst++] = *p++, n--;
	if (c->nfirst < sizeof(c->first) || c->rec->status)
		return;
	const char *f = c->first;
	if (memcmp(f, "HTTP/1.", 7) == 0 && f[8] == ' ' && f[9] >= '1' && f[9] <= '5' && f[10] >= '0' && f[10] <= '9' &&
	    f[11] >= '0' && f[11] <= '9')
		c->rec->status = (f[9] - '0') * 100 + (f[10] - '0') * 10 + (f[11] - '0');
}

static int to_client(struct conn *c, const char *p, size_t n)
{
	if (n == 0)
		return 0;
	int r = px_write_all(c->client, p, n, c->idle_ms);
	if (r == 0) {
		c->rec->bytes_down += n;
		c->answered = true;
	}
	return r;
}

/* Where the response head at h ends (just past its blank line), or 0 while it is incomplete. */
static size_t head_end(const char *h, size_t n)
{
	const char *e = memmem(h, n, "\r\n\r\n", 4);
	return e ? (size_t)(e - h) + 4 : 0;
}

/* Whether a complete head names a content coding other than identity (in any Content-Encoding line,
 * any element of its list). Such a body is refused whole: the secret scan sees only raw bytes, and
 * gzip or br of an echo hides the secret from it, whatever the request asked for. */
static bool head_encoded(const char *h, size_t n)
{
	static const char name[] = "content-encoding";
	for (const char *p = h, *end = h + n; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - p) : (size_t)(end - p);
		for (size_t i = hdr_name_is(p, ll, name) ? sizeof(name) : ll; i < ll;) {
			while (i < ll && (p[i] == ' ' || p[i] == '\t' || p[i] == ','))
				i++;
			size_t t = i;
			while (t < ll && p[t] != ' ' && p[t] != '\t' && p[t] != ',')
				t++;
			if (t > i && !(t - i == 8 && strncasecmp(p + i, "identity", 8) == 0))
				return true;
			i = t;
		}
		p += ll + 2;
	}
	return false;
}

/* Checks the heads complete in buf[*hs, total): an interim 1xx head is passed over (its final head
 * follows), a final one ends the head phase. -EPROTO for an encoded body, -E2BIG for a head that does
 * not fit the buffer (cap bytes). */
static int check_heads(const char *buf, size_t total, size_t cap, size_t *hs, bool *in_head)
{
	size_t e;
	while (*in_head && (e = head_end(buf + *hs, total - *hs)) > 0) {
		if (head_encoded(buf + *hs, e))
			return -EPROTO;
		if (e > 9 && buf[*hs + 9] == '1')
			*hs += e;
		else
			*in_head = false;
	}
	return *in_head && total == cap ? -E2BIG : 0;
}

/*
 * Upstream to client until the upstream ends. The response head is held whole and checked first
 * (check_heads). Then the last secret_len - 1 bytes are held back until more arrive, so the scan
 * always sees the secret whole before any of it is passed on: an upstream that reflects request
 * headers (an echo or debug endpoint) is cut off instead of handing the job the secret. An encoded
 * reflection (base64, JSON escapes) is not caught; a compressed one is refused (head_encoded).
 */
static int relay_response(struct conn *c, char *buf)
{
	const char *secret = c->b->line + c->b->secret_off;
	size_t sl = c->b->secret_len, keep = sl - 1, held = 0, cap = RELAY_CHUNK + sl, hs = 0;
	bool in_head = true;
	for (;;) {
		int n = tls_read(c, buf + held, in_head ? cap - held : RELAY_CHUNK);
		if (n == -ETIMEDOUT && c->rec->decision == PXD_ALLOWED)
			c->rec->reason = "upstream idle timeout";
		else if (n < 0)
			return n;
		if (n <= 0)
			break; /* end of stream, or idle after an answer: pass on what is held, then stop */
		c->rec->decision = PXD_ALLOWED;
		note_status(c, buf + held, (size_t)n);
		size_t total = held + (size_t)n;
		if (memmem(buf, total, secret, sl))
			return -EACCES;
		int r = in_head ? check_heads(buf, total, cap, &hs, &in_head) : 0;
		if (r < 0)
			return r;
		size_t out = in_head ? 0 : total > keep ? total - keep : 0;
		if ((r = to_client(c, buf, out)) < 0)
			return r;
		memmove(buf, buf + out, total - out);
		held = total - out;
	}
	return to_client(c, buf, held);
}

/* ---- serving: the whole exchange --------------------------------------------------- */

static void fail_reply(struct conn *c, int status, const char *why)
{
	c->rec->decision = PXD_ERROR;
	c->rec->reason = why;
	if (c->answered)
		return; /* the response has begun: all we can do is close */
	c->rec->status = status;
	px_reply(c->client, status, why, c->idle_ms);
}

static const char *relay_reason(int r)
{
	switch (r) {
	case -EACCES:
		return "upstream response contained the secret; cut off";
	case -EPROTO:
		return "upstream response is content-encoded (gzip, br...): refused, the broker scans only "
		       "identity bodies for the secret";
	case -E2BIG:
		return "upstream response head too large";
	case -ETIMEDOUT:
		return "upstream timed out";
	case -EPIPE:
		return "client closed the connection";
	default:
		return "upstream connection failed";
	}
}

static void exchange(struct conn *c, const struct pr_request *req, const char *tail, const char *rest, size_t nrest)
{
	const char *why = NULL;
	if (connect_upstream(c, &why) < 0 || tls_start(c, &why) < 0) {
		fail_reply(c, 502, why);
		return;
	}
	/* One buffer for the body and the response: a chunk plus the held-back secret window. */
	char *buf = malloc(RELAY_CHUNK + c->b->secret_len);
	if (!buf) {
		fail_reply(c, 502, "out of memory");
		return;
	}
	int r = send_request(c, req, tail, rest, nrest, buf);
	if (r < 0) {
		fail_reply(c, 502,
			   r == -EPIPE ? "client closed before its body was sent" : "sending to upstream failed");
	} else if ((r = relay_response(c, buf)) < 0) {
		bool had = c->rec->decision == PXD_ALLOWED;
		fail_reply(c, 502, relay_reason(r));
		if (had && r != -EACCES && r != -EPROTO && r != -E2BIG)
			c->rec->decision = PXD_ALLOWED; /* the upstream did answer; the end was untidy */
	} else if (c->rec->decision != PXD_ALLOWED) {
		fail_reply(c, 502, "upstream closed without answering");
	}
	OPENSSL_cleanse(buf, RELAY_CHUNK + c->b->secret_len);
	free(buf);
}

/* OpenSSL writes to the upstream socket with write(): an upstream that resets the connection
 * would raise SIGPIPE and kill the supervisor. SIGPIPE is blocked in this thread for the
 * exchange and a SIGPIPE it raised is consumed before the old mask returns. */
struct pipe_guard {
	sigset_t old;
	bool was_pending;
};

static void pipe_block(struct pipe_guard *g)
{
	sigset_t s, pending;
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, &g->old);
	g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

static void pipe_restore(struct pipe_guard *g)
{
	if (!g->was_pending) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGPIPE);
		const struct timespec zero = {0, 0};
		while (sigtimedwait(&s, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

void broker_serve(const struct al_broker_list *bl, int client_fd, const struct pr_request *req, const char *rest,
		  size_t nrest, int idle_timeout_ms, struct px_record *rec)
{
	struct conn c = {.client = client_fd, .up = -1, .rec = rec};
	c.idle_ms = idle_timeout_ms > 0 ? idle_timeout_ms : DEFAULT_IDLE_MS;
	const char *tail = "";
	/* Only the fields this call owns: the caller may have set the times already. */
	rec->kind = PXK_BROKER;
	rec->decision = PXD_ERROR;
	rec->host[0] = rec->addr[0] = rec->broker[0] = 0;
	rec->port = 0;
	rec->reason = NULL;
	rec->status = 0;
	rec->bytes_up = rec->bytes_down = 0;
	if (!req || req->kind != PR_ORIGIN || !req->path) {
		fail_reply(&c, 400, "not a broker request");
		return;
	}
	c.b = find_broker(bl, req->path, &tail, rec);
	if (!c.b) {
		fail_reply(&c, 404, "no such broker");
		return;
	}
	snprintf(rec->host, sizeof(rec->host), "%s", c.b->host);
	rec->port = c.b->port;
	if (!tail_ok(tail)) {
		fail_reply(&c, 400, "path refused by the broker (dot segment, encoded '/' or '.', or '\\')");
		return;
	}
	struct pipe_guard g;
	pipe_block(&g);
	exchange(&c, req, tail, rest, nrest);
	if (c.ssl) {
		/* One non-blocking close_notify attempt: a polite end, never a wait. */
		ERR_clear_error();
		(void)SSL_shutdown(c.ssl);
		SSL_free(c.ssl);
	}
	if (c.up >= 0)
		close(c.up);
	ERR_clear_error();
	pipe_restore(&g);
}
