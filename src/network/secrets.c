/* secrets.c — the secrets a policy names: parsing, placeholders, substitution, the scan.
 *
 * Why this is safe. A value is read once, here, and kept in one heap buffer wiped on free; it is
 * never formatted into a message (errors name the source, never the value). Substitution is by
 * host: a placeholder sent anywhere else stays a placeholder, which tells the receiver nothing.
 * The placeholder is random per list (per sandbox), so a job cannot guess another sandbox's.
 */
#include "network/secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "network/allowlist.h"
#include "util/cleanup.h"
#include "util/error.h"

#define VALUE_MAX 8192
#define SPEC_MAX  4096

struct secret {
	char name[AL_SECRET_NAME_MAX];
	char placeholder[AL_SECRET_NAME_MAX + 48];
	size_t ph_len;
	char *value; /* wiped on free */
	size_t len;
	struct al_allowlist *hosts;
	bool body;
};

struct al_secrets {
	atomic_uint refs;
	struct secret v[AL_SECRETS_MAX];
	size_t n;
};

void al_secrets_wipe(void *p, size_t len)
{
	if (p)
		OPENSSL_cleanse(p, len);
}

int al_secrets_new(struct al_secrets **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	atomic_init(&(*out)->refs, 1);
	return 0;
}

struct al_secrets *al_secrets_ref(struct al_secrets *s)
{
	if (s)
		atomic_fetch_add(&s->refs, 1);
	return s;
}

static void secret_clear(struct secret *e)
{
	if (e->value) {
		al_secrets_wipe(e->value, e->len);
		free(e->value);
	}
	al_allowlist_free(e->hosts);
	*e = (struct secret){0};
}

void al_secrets_unref(struct al_secrets *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->n; i++)
		secret_clear(&s->v[i]);
	free(s);
}

size_t al_secrets_count(const struct al_secrets *s)
{
	return s ? s->n : 0;
}

const char *al_secret_name(const struct al_secrets *s, size_t i)
{
	return s && i < s->n ? s->v[i].name : NULL;
}

const char *al_secret_placeholder(const struct al_secrets *s, size_t i)
{
	return s && i < s->n ? s->v[i].placeholder : NULL;
}

/* ---- parsing ------------------------------------------------------------------------- */

bool al_secret_name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= AL_SECRET_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_'))
			return false;
	return true;
}

/* A regular file of at most VALUE_MAX bytes, O_NONBLOCK so a FIFO is refused, not waited on. */
static int read_value_file(const char *path, struct secret *e)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size > VALUE_MAX)
		return -EFBIG;
	e->value = calloc(1, VALUE_MAX + 1);
	if (!e->value)
		return -ENOMEM;
	ssize_t n = read(fd, e->value, VALUE_MAX + 1);
	if (n < 0)
		return -errno;
	if (n > VALUE_MAX)
		return -EFBIG;
	while (n > 0 && (e->value[n - 1] == '\n' || e->value[n - 1] == '\r'))
		n--; /* the newline an editor or echo adds is not the secret's */
	e->len = (size_t)n;
	return 0;
}

/* A copy of len bytes of val, or an error naming where it came from (never the value). */
static int copy_value(struct secret *e, const struct al_secret_src *src, const char *label, const char *val, size_t len,
		      struct al_error *err)
{
	if (len > VALUE_MAX)
		return al_err(err, EINVAL, "%s: %s%s is larger than %d bytes", label,
			      src->kind == AL_SECRET_ENV ? "env=" : "the value",
			      src->kind == AL_SECRET_ENV ? src->ref : "", VALUE_MAX);
	e->value = malloc(len + 1);
	if (!e->value)
		return al_err(err, ENOMEM, "out of memory");
	memcpy(e->value, val, len);
	e->value[len] = 0;
	e->len = len;
	return 0;
}

static int read_value(struct secret *e, const struct al_secret_src *src, const char *label, struct al_error *err)
{
	const char *v = src->ref ? src->ref : "";
	switch (src->kind) {
	case AL_SECRET_ENV: {
		if (!al_secret_name_ok(v, strlen(v)))
			return al_err(err, EINVAL, "%s: env=%s is not a variable name", label, v);
		const char *val = getenv(v);
		if (!val || !*val)
			return al_err(err, EINVAL, "%s: env=%s is %s", label, v, val ? "empty" : "not set");
		return copy_value(e, src, label, val, strlen(val), err);
	}
	case AL_SECRET_VALUE:
		return copy_value(e, src, label, v, src->ref_len, err);
	case AL_SECRET_FILE:
		break;
	}
	if (v[0] != '/')
		return al_err(err, EINVAL, "%s: file=%s: the path must be absolute", label, v);
	int r = read_value_file(v, e);
	if (r < 0)
		return al_err(err, -r, "%s: file=%s: %s", label, v,
			      r == -EFBIG    ? "larger than 8 KiB"
			      : r == -EINVAL ? "not a regular file"
					     : strerror(-r));
	return 0;
}

/* A CR, LF or NUL would let the value's source add headers or a second request. */
static int check_value(const struct secret *e, const char *label, struct al_error *err)
{
	if (e->len == 0)
		return al_err(err, EINVAL, "%s: the value is empty", label);
	for (size_t i = 0; i < e->len; i++)
		if ((unsigned char)e->value[i] < 0x20 || e->value[i] == 0x7f)
			return al_err(err, EINVAL, "%s: the value contains a control character", label);
	return 0;
}

static int make_placeholder(struct secret *e)
{
	unsigned char r[16];
	if (RAND_bytes(r, sizeof(r)) != 1)
		return -EIO;
	int n = snprintf(e->placeholder, sizeof(e->placeholder), "airlock-secret:%s:", e->name);
	for (size_t i = 0; i < sizeof(r); i++)
		n += snprintf(e->placeholder + n, sizeof(e->placeholder) - (size_t)n, "%02x", r[i]);
	e->ph_len = (size_t)n;
	return 0;
}

/* One host entry: the allowlist's own syntax without rules (a rule is the allowlist's business). */
static int add_host(struct secret *e, const char *label, const char *h, struct al_error *err)
{
	if (!*h || strpbrk(h, " /,|"))
		return al_err(err, EINVAL, "%s: hosts take names and ports only, one per entry ('%.64s')", label, h);
	if (!e->hosts && al_allowlist_new(&e->hosts) < 0)
		return al_err(err, ENOMEM, "out of memory");
	int r = al_allowlist_add(e->hosts, h, err);
	if (r < 0)
		al_err_prefix(err, "%s: hosts", label);
	return r;
}

/* Everything checked, the value read: the secret in *e (cleared by the caller on failure). */
static int build(const struct al_secrets *s, struct secret *e, const struct al_secret_src *src, struct al_error *err)
{
	const char *what = src->what ? src->what : "--secret";
	size_t nl = src->name ? strlen(src->name) : 0;
	if (!al_secret_name_ok(src->name ? src->name : "", nl))
		return al_err(err, EINVAL, "%s: '%.64s' is not an environment variable name (letters, digits, _)", what,
			      src->name ? src->name : "");
	memcpy(e->name, src->name, nl + 1);
	/* "--secret NAME" on the command line; the configuration's own name for it ("secrets.KEY"). */
	char label[AL_SECRET_NAME_MAX + 96];
	if (strcmp(what, "--secret") == 0)
		snprintf(label, sizeof(label), "--secret %s", e->name);
	else
		snprintf(label, sizeof(label), "%.80s", what);
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, e->name) == 0)
			return al_err(err, EINVAL, "%s: the variable %s is given twice", label, e->name);
	if (src->nhosts == 0)
		return al_err(err, EINVAL, "%s: hosts are required (where it may go)", label);
	for (size_t i = 0; i < src->nhosts; i++) {
		int r = add_host(e, label, src->hosts[i], err);
		if (r < 0)
			return r;
	}
	e->body = src->body;
	int r = read_value(e, src, label, err);
	r = r ?: check_value(e, label, err);
	if (r == 0 && make_placeholder(e) < 0)
		r = al_err(err, EIO, "%s: no random bytes for the placeholder", label);
	return r;
}

int al_secrets_add_src(struct al_secrets *s, const struct al_secret_src *src, struct al_error *err)
{
	if (s->n == AL_SECRETS_MAX)
		return al_err(err, EINVAL, "%s: at most %d secrets", src->what ? src->what : "--secret",
			      AL_SECRETS_MAX);
	struct secret e = {0};
	int r = build(s, &e, src, err);
	if (r < 0) {
		secret_clear(&e);
		return r;
	}
	s->v[s->n++] = e;
	return 0;
}

/* "NAME,env=VAR|file=PATH,hosts=A|B[,body]" into src; hosts point into p (split in place). */
static int parse_keys(struct al_secret_src *src, char *p, const char **hosts, struct al_error *err)
{
	bool have_src = false;
	for (char *tok = strsep(&p, ","); tok; tok = strsep(&p, ",")) {
		char *eq = strchr(tok, '=');
		if (strcmp(tok, "body") == 0) {
			src->body = true;
			continue;
		}
		if (!eq)
			return al_err(err, EINVAL, "--secret %s: \"%s\" is not key=value (env, file, hosts, body)",
				      src->name, tok);
		*eq = 0;
		char *v = eq + 1;
		if (strcmp(tok, "env") == 0 || strcmp(tok, "file") == 0) {
			if (have_src)
				return al_err(err, EINVAL, "--secret %s: give one of env= and file=", src->name);
			have_src = true;
			src->kind = tok[0] == 'e' ? AL_SECRET_ENV : AL_SECRET_FILE;
			src->ref = v;
		} else if (strcmp(tok, "hosts") == 0) {
			if (src->nhosts)
				return al_err(err, EINVAL, "--secret %s: hosts= given twice", src->name);
			for (char *h = strsep(&v, "|"); h; h = strsep(&v, "|")) {
				if (src->nhosts == AL_SECRET_HOSTS_MAX)
					return al_err(err, EINVAL, "--secret %s: at most %d hosts", src->name,
						      AL_SECRET_HOSTS_MAX);
				hosts[src->nhosts++] = h;
			}
		} else {
			return al_err(err, EINVAL, "--secret %s: unknown key \"%s\" (env, file, hosts, body)",
				      src->name, tok);
		}
	}
	if (!have_src)
		return al_err(err, EINVAL, "--secret %s: env=VAR or file=PATH is required", src->name);
	if (!src->nhosts)
		return al_err(err, EINVAL, "--secret %s: hosts=HOST[|HOST...] is required (where it may go)",
			      src->name);
	return 0;
}

int al_secrets_add(struct al_secrets *s, const char *spec, struct al_error *err)
{
	if (!spec || !*spec || strlen(spec) >= SPEC_MAX)
		return al_err(err, EINVAL, "--secret: empty or longer than %d bytes", SPEC_MAX - 1);
	char copy[SPEC_MAX];
	snprintf(copy, sizeof(copy), "%s", spec);
	const char *hosts[AL_SECRET_HOSTS_MAX];
	struct al_secret_src src = {.what = "--secret", .name = copy, .hosts = hosts};
	char *comma = strchr(copy, ',');
	int r = 0;
	if (comma)
		*comma = 0;
	if (!al_secret_name_ok(copy, strlen(copy)))
		r = al_err(err, EINVAL,
			   "--secret: NAME must be an environment variable name (in NAME,env=VAR|file=PATH,hosts=...)");
	else if (!comma)
		r = al_err(err, EINVAL, "--secret %s: env=VAR or file=PATH and hosts= are required", copy);
	r = r ?: parse_keys(&src, comma + 1, hosts, err);
	r = r ?: al_secrets_add_src(s, &src, err);
	al_secrets_wipe(copy, sizeof(copy)); /* names sources, not values; wiped all the same */
	return r;
}

/* ---- use ----------------------------------------------------------------------------- */

static bool may_go(const struct secret *e, const char *host, uint16_t port)
{
	return al_allow_match(e->hosts, host, port);
}

bool al_secrets_for(const struct al_secrets *s, const char *host, uint16_t port)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (may_go(&s->v[i], host, port))
			return true;
	return false;
}

/* One secret over buf: a new buffer with each placeholder replaced, or NULL (none found). */
static char *replace_one(const struct secret *e, const char *in, size_t len, size_t *out_len)
{
	size_t count = 0;
	for (const char *p = in; (p = memmem(p, len - (size_t)(p - in), e->placeholder, e->ph_len)); p += e->ph_len)
		count++;
	if (count == 0)
		return NULL;
	size_t n = len - count * e->ph_len + count * e->len;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = in, *end = in + len; p < end;) {
		const char *hit = memmem(p, (size_t)(end - p), e->placeholder, e->ph_len);
		size_t keep = hit ? (size_t)(hit - p) : (size_t)(end - p);
		memcpy(o, p, keep), o += keep, p += keep;
		if (!hit)
			break;
		memcpy(o, e->value, e->len), o += e->len, p += e->ph_len;
	}
	*o = 0;
	*out_len = n;
	return out;
}

int al_secrets_apply(const struct al_secrets *s, const char *host, uint16_t port, bool body, const char *in, size_t len,
		     char **out, size_t *out_len, uint32_t *used)
{
	char *cur = NULL;
	size_t cur_len = len;
	*out = NULL;
	for (size_t i = 0; s && i < s->n; i++) {
		const struct secret *e = &s->v[i];
		if ((body && !e->body) || !may_go(e, host, port))
			continue;
		size_t nl = 0;
		char *next = replace_one(e, cur ? cur : in, cur_len, &nl);
		if (!next && memmem(cur ? cur : in, cur_len, e->placeholder, e->ph_len)) {
			al_secrets_wipe(cur, cur_len);
			free(cur);
			return -ENOMEM;
		}
		if (!next)
			continue;
		al_secrets_wipe(cur, cur_len);
		free(cur);
		cur = next;
		cur_len = nl;
		*used |= 1u << i;
	}
	*out = cur;
	*out_len = cur ? cur_len : 0;
	return 0;
}

bool al_secrets_seen(const struct al_secrets *s, uint32_t used, const char *buf, size_t len)
{
	for (size_t i = 0; s && i < s->n; i++)
		if ((used & (1u << i)) && memmem(buf, len, s->v[i].value, s->v[i].len))
			return true;
	return false;
}

size_t al_secrets_longest(const struct al_secrets *s, uint32_t used)
{
	size_t m = 0;
	for (size_t i = 0; s && i < s->n; i++)
		if ((used & (1u << i)) && s->v[i].len > m)
			m = s->v[i].len;
	return m;
}
