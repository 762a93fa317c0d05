/* e2b.c — the E2B-compatible front end's door: which requests are E2B's, their credentials (API keys, sandbox access tokens), and the control plane's REST routes (create, list, info, kill, timeout, connect, metrics). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "http/e2b.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

#define E2B_LIST_LIMIT	 100 /* a list page without ?limit= */
#define E2B_LIST_MAX	 1000
#define E2B_ENV_PREFIX	 "e2b.env." /* the labels that hold a sandbox's envVars (e2bproc.c reads them) */
#define E2B_DEFAULT_TIME 300	    /* seconds: E2B's own default timeout */

static const char *header(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, name) : NULL;
}

static const char *query(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, name) : NULL;
}

/* ---- which requests are E2B's ---------------------------------------------------------------- */

/* The control plane's paths: none of them is one of the JSON API's (those are under /v1). */
static bool control_path(const char *path)
{
	static const char *const prefixes[] = {"/sandboxes", "/v2/sandboxes", "/snapshots",
					       "/templates", "/v2/templates", "/v3/templates"};
	for (size_t i = 0; path && i < AL_ARRAY_SIZE(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(path, prefixes[i], n) == 0 && (path[n] == 0 || path[n] == '/'))
			return true;
	}
	return false;
}

/* "<port>-<id>.<domain>" (and an optional ":port" of the listener) on a server given the domain. */
static bool host_target(const struct hx_server *s, const char *host, struct e2b_target *t)
{
	const char *d = s->o.e2b_domain;
	if (!d || !*d || !host)
		return false;
	size_t hl = strcspn(host, ":"), dl = strlen(d);
	if (hl <= dl + 1 || host[hl - dl - 1] != '.' || strncasecmp(host + hl - dl, d, dl) != 0)
		return false;
	size_t ll = hl - dl - 1; /* the first label: "49983-sb-0123456789abcdef" */
	const char *dash = memchr(host, '-', ll);
	if (!dash || memchr(host, '.', ll))
		return false;
	char port[8];
	size_t pl = (size_t)(dash - host), il = ll - pl - 1;
	if (pl == 0 || pl >= sizeof(port) || il == 0 || il >= sizeof(t->sandbox))
		return false;
	memcpy(port, host, pl);
	port[pl] = 0;
	if (!(t->port = hx_port_number(port)))
		return false;
	memcpy(t->sandbox, dash + 1, il);
	t->sandbox[il] = 0;
	t->envd = true;
	return true;
}

bool e2b_claims(const struct hx_server *s, const struct hx_request *rq, struct e2b_target *t)
{
	struct e2b_target local;
	if (!t)
		t = &local;
	*t = (struct e2b_target){0};
	const char *id = header(rq, "E2b-Sandbox-Id");
	if (id) {
		/* An id too long for any sandbox stays "": nobody's, refused below. */
		if (strlen(id) < sizeof(t->sandbox))
			snprintf(t->sandbox, sizeof(t->sandbox), "%s", id);
		const char *port = header(rq, "E2b-Sandbox-Port");
		t->port = port ? hx_port_number(port) : E2B_ENVD_PORT;
		t->envd = true;
		return true;
	}
	if (host_target(s, header(rq, "Host"), t))
		return true;
	return control_path(rq->path);
}

bool e2b_port_proxied(const struct e2b_target *t)
{
	return t->envd && t->port && t->port != E2B_ENVD_PORT && t->port != E2B_JUPYTER_PORT;
}

size_t e2b_body_limit(const struct hx_server *s, const struct hx_request *rq)
{
	struct e2b_target t;
	e2b_claims(s, rq, &t);
	/* /files uploads are a form held in memory while it is split: the file limit, else 16 MiB. */
	if (t.envd && rq->path && strcmp(rq->path, "/files") == 0)
		return s->o.max_file ? s->o.max_file : HX_DEFAULT_MAX_FILE;
	return t.envd ? CX_MESSAGE_MAX + 5 : s->o.max_body;
}

/* ---- errors as each plane writes them --------------------------------------------------------- */

/* The control plane's and envd's REST error: {"code": STATUS, "message": "..."} (the SDK reads
 * both: a 404's code decides kill's false and getInfo's SandboxNotFoundError). */
__attribute__((format(printf, 3, 4))) static void rest_error(struct hx_response *rs, int status, const char *fmt, ...)
{
	char msg[AL_ERROR_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *text = json_string(msg);
	if (!text)
		text = json_string("invalid request");
	hx_response_clear(rs);
	hx_json(rs, status, json_pack("{s:i,s:o}", "code", status, "message", text));
}

/* A JSON API answer ({"error": "..."}) rewritten as E2B's REST error; a 2xx is left alone. */
static void rest_from_api(struct hx_response *rs)
{
	if (rs->status < 300)
		return;
	json_t *body = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(body, "error"));
	char text[AL_ERROR_MAX + 64];
	snprintf(text, sizeof(text), "%s", msg ? msg : "the request failed");
	json_decref(body);
	int status = rs->status;
	bool close = rs->close;
	rest_error(rs, status, "%s", text);
	rs->close = close;
}

static bool rpc_path(const char *path)
{
	return path &&
	       (strncmp(path, "/process.Process/", 17) == 0 || strncmp(path, "/filesystem.Filesystem/", 23) == 0);
}

/* A refusal before anything runs, in the form the request's client reads. */
static void refuse(const struct hx_request *rq, struct hx_response *rs, int status, const char *msg)
{
	if (rpc_path(rq->path))
		cx_unary_error(rs, cx_code_of_status(status), "%s", msg);
	else
		rest_error(rs, status, "%s", msg);
	rs->close = status == 401;
}

/* ---- credentials ------------------------------------------------------------------------------ */

/* An HMAC of the sandbox id under the digest of its owner's token: only a holder of that token
 * (or of this value, which the owner got at create) has it; it needs no table and is the same
 * after serve restarts; another sandbox's id, or another label, gives another value. */
static void sandbox_mac(const unsigned char key[32], const char *label, const char *id, char out[65])
{
	char msg[128];
	int ln = snprintf(msg, sizeof(msg), "%s%.64s", label, id); /* the id: a sandbox's, 19 characters */
	size_t n = ln < 0 ? 0 : (size_t)ln >= sizeof(msg) ? sizeof(msg) - 1 : (size_t)ln;
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	if (!HMAC(EVP_sha256(), key, 32, (const unsigned char *)msg, n, mac, &len) || len < 32)
		memset(mac, 0, sizeof(mac)); /* never equal to a real token: compared against a client's */
	for (size_t i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	explicit_bzero(mac, sizeof(mac));
}

void e2b_access_token(const unsigned char key[32], const char *id, char out[65])
{
	sandbox_mac(key, "airlock e2b envd access token\n", id, out);
}

void e2b_traffic_token(const unsigned char key[32], const char *id, char out[65])
{
	sandbox_mac(key, "airlock e2b traffic token\n", id, out);
}

/* The API key: X-API-Key (the SDK's), or a bearer token as the JSON API takes it. */
static const char *api_key_of(const struct hx_request *rq)
{
	const char *key = header(rq, "X-API-Key");
	const char *auth = header(rq, "Authorization");
	if (!key && auth && strncasecmp(auth, "Bearer ", 7) == 0)
		for (key = auth + 7; *key == ' '; key++)
			;
	return key;
}

/* rq's principal from its API key; 1 with rs filled when there is none, or an approver's. */
static int by_api_key(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	const struct hx_token *t = hx_token_of_secret(s, api_key_of(rq));
	if (!t) {
		refuse(rq, rs, 401, "missing or wrong API key (X-API-Key: a client token of the server's token file)");
		return 1;
	}
	if (t->approver) {
		refuse(rq, rs, 403, "an approver's credential runs nothing");
		return 1;
	}
	snprintf(rq->who->name, sizeof(rq->who->name), "token:%.72s", t->name);
	rq->who->client = true;
	return 0;
}

/* The client token of sandbox id's owner, or NULL (an unknown sandbox, or one no token owns). */
static const struct hx_token *owner_token(struct hx_server *s, const char *id, char owner[HX_PRINCIPAL_MAX])
{
	cleanup_free char *name = id[0] ? hx_sandbox_owner(s, id) : NULL;
	snprintf(owner, HX_PRINCIPAL_MAX, "%s", name ? name : "");
	return name && strncmp(name, "token:", 6) == 0 ? hx_token_named(s, name + 6) : NULL;
}

/* A /files download (GET, "read") or upload (POST, "write") signed as envd signs its URLs: a
 * query's signature "v1_" and the unpadded base64 of SHA-256("PATH:OP:USERNAME:ACCESS_TOKEN"
 * [":EXPIRY"]), which only a holder of the sandbox's access token can make, for that one path and
 * operation, until signature_expiration (Unix seconds) when it is given. */
static bool signed_files(const struct hx_request *rq, const struct e2b_target *t)
{
	return t->port == E2B_ENVD_PORT && rq->path && strcmp(rq->path, "/files") == 0 && query(rq, "signature") &&
	       rq->method && (strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "POST") == 0);
}

/* Whether sig is the signature of rq for the access token. */
static bool signature_ok(const struct hx_request *rq, const char *token, const char *sig)
{
	const char *path = query(rq, "path"), *user = query(rq, "username"), *exp = query(rq, "signature_expiration");
	const char *op = strcmp(rq->method, "GET") == 0 ? "read" : "write";
	cleanup_free char *raw = NULL;
	if (asprintf(&raw, "%s:%s:%s:%s%s%s", path ? path : "", op, user ? user : "", token, exp ? ":" : "",
		     exp ? exp : "") < 0) {
		raw = NULL;
		return false;
	}
	unsigned char d[32];
	unsigned len = 0;
	if (!EVP_Digest(raw, strlen(raw), d, &len, EVP_sha256(), NULL) || len != sizeof(d))
		return false;
	cleanup_free char *b64 = txt_base64_encode(d, sizeof(d));
	if (!b64)
		return false;
	b64[strcspn(b64, "=")] = 0;
	char want[64];
	snprintf(want, sizeof(want), "v1_%s", b64);
	return strlen(sig) == strlen(want) && CRYPTO_memcmp(sig, want, strlen(want)) == 0;
}

static int by_signature(struct hx_server *s, const struct hx_request *rq, const struct e2b_target *t,
			struct hx_response *rs)
{
	char owner[HX_PRINCIPAL_MAX], token[65];
	const struct hx_token *tok = owner_token(s, t->sandbox, owner);
	const char *exp = query(rq, "signature_expiration");
	if (tok)
		e2b_access_token(tok->digest, t->sandbox, token);
	/* The same answer for an unknown sandbox and a wrong signature, as for a wrong token. */
	bool ok = tok && signature_ok(rq, token, query(rq, "signature"));
	explicit_bzero(token, sizeof(token));
	if (!ok) {
		refuse(rq, rs, 401, "invalid signature for this sandbox's file URL");
		return 1;
	}
	char *end = NULL;
	long long until = exp ? strtoll(exp, &end, 10) : 0;
	if (exp && (!*exp || *end || until < (long long)time(NULL))) {
		refuse(rq, rs, 401, "the file URL's signature is already expired");
		return 1;
	}
	snprintf(rq->who->name, sizeof(rq->who->name), "%s", owner);
	rq->who->client = true;
	return 0;
}

/* A sandbox-plane request: the sandbox's access token names its owner (on any of its ports), its
 * traffic token too on the ports other than envd's (the code interpreter's SDK sends only that
 * one on some calls); the owner's API key also will do (the manager's ownership check then
 * decides, as for every call). */
static int by_access_token(struct hx_server *s, const struct hx_request *rq, const struct e2b_target *t,
			   struct hx_response *rs)
{
	const char *access = header(rq, "X-Access-Token");
	const char *traffic = t->port != E2B_ENVD_PORT ? header(rq, "E2B-Traffic-Access-Token") : NULL;
	if (!access && !traffic && !api_key_of(rq) && signed_files(rq, t))
		return by_signature(s, rq, t, rs);
	if ((!access && !traffic) || api_key_of(rq))
		return by_api_key(s, rq, rs);
	char owner[HX_PRINCIPAL_MAX];
	const struct hx_token *tok = owner_token(s, t->sandbox, owner);
	char want[65];
	bool ok = false;
	if (tok && access) {
		e2b_access_token(tok->digest, t->sandbox, want);
		ok = strlen(access) == 64 && CRYPTO_memcmp(access, want, 64) == 0;
	} else if (tok && traffic) {
		e2b_traffic_token(tok->digest, t->sandbox, want);
		ok = strlen(traffic) == 64 && CRYPTO_memcmp(traffic, want, 64) == 0;
	}
	/* The same answer for an unknown sandbox and a wrong token: nothing tells which ids exist. */
	if (!ok) {
		refuse(rq, rs, 401, "missing or wrong X-Access-Token for this sandbox");
		return 1;
	}
	snprintf(rq->who->name, sizeof(rq->who->name), "%s", owner);
	rq->who->client = true;
	return 0;
}

/* Host and Origin. A Host of the configured sandbox domain is one this server answers to (the
 * operator named it), so a loopback listener behind a TLS proxy takes it; an Origin must then be
 * that very host. Otherwise the JSON API's checks (loopback Host on a loopback listener). */
static int check_origin(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	struct e2b_target t;
	const char *host = header(rq, "Host"), *origin = header(rq, "Origin");
	if (!host_target(s, host, &t))
		return hx_check_origin(s, rq, rs);
	const char *auth = origin && strncasecmp(origin, "https://", 8) == 0  ? origin + 8
			   : origin && strncasecmp(origin, "http://", 7) == 0 ? origin + 7
									      : NULL;
	if (origin && (!auth || strcasecmp(auth, host) != 0)) {
		refuse(rq, rs, 403, "this Origin is not allowed");
		return 1;
	}
	return 0;
}

int e2b_precheck(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	struct e2b_target t;
	if (!e2b_claims(s, rq, &t))
		return -1;
	*rq->who = (struct hx_principal){0};
	if (rq->local) /* the Unix socket: its peer's uid, as for the JSON API */
		return hx_check_access(s, rq, rs);
	if (check_origin(s, rq, rs))
		return 1;
	if (s->ntokens == 0) { /* a server without credentials: the in-process tests' */
		rq->who->client = true;
		return 0;
	}
	if (t.envd && !t.port) {
		refuse(rq, rs, 400, "E2b-Sandbox-Port must be a port (1-65535)");
		return 1;
	}
	return t.envd ? by_access_token(s, rq, &t, rs) : by_api_key(s, rq, rs);
}

/* ---- the control plane ------------------------------------------------------------------------- */

static const char *owner_of(const struct hx_request *rq)
{
	return rq->who->name[0] ? rq->who->name : "anonymous";
}

/* The access and traffic tokens of sandbox id for rq's principal ("" when it has no token: the
 * tests'). */
static void token_for(struct hx_server *s, const struct hx_request *rq, const char *id, char out[65], char traffic[65])
{
	const struct hx_token *t =
		strncmp(rq->who->name, "token:", 6) == 0 ? hx_token_named(s, rq->who->name + 6) : NULL;
	out[0] = traffic[0] = 0;
	if (t) {
		e2b_access_token(t->digest, id, out);
		e2b_traffic_token(t->digest, id, traffic);
	}
}

/* Templates that mean the host's default environment. */
static bool default_template(const char *t)
{
	return !t || !*t || strcmp(t, "base") == 0 || strcmp(t, "code-interpreter-v1") == 0 ||
	       strcmp(t, "code-interpreter") == 0;
}

/* The labels a client sees: its own, without the envVars kept beside them. */
static json_t *user_metadata(const char *json)
{
	json_t *m = json_loads(json ? json : "{}", 0, NULL);
	if (!m)
		return json_object();
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(m, tmp, k, v)
	{
		if (strncmp(k, E2B_ENV_PREFIX, strlen(E2B_ENV_PREFIX)) == 0)
			json_object_del(m, k);
	}
	return m;
}

static json_t *time_or_null(uint64_t ms)
{
	return ms ? txt_json_time(ms) : json_null();
}

/* A sandbox as E2B's ListedSandbox / SandboxDetail describe it (detail adds the access token). */
static json_t *sandbox_e2b(const struct srv_sandbox_info *i, const char *token)
{
	const char *tpl = strcmp(i->image, "host") == 0 || !i->image[0] ? "base" : i->image;
	json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:i,s:i,s:i,s:o,s:s}", "sandboxID", i->id, "templateID", tpl,
			      "clientID", "airlock", "startedAt", txt_json_time(i->created_unix_ms), "endAt",
			      time_or_null(i->ends_unix_ms), "envdVersion", E2B_ENVD_VERSION, "cpuCount", 1, "memoryMB",
			      0, "diskSizeMB", 0, "metadata", user_metadata(i->metadata_json), "state",
			      strcmp(i->state, "paused") == 0 ? "paused" : "running");
	if (o && token && token[0])
		json_object_set_new(o, "envdAccessToken", json_string(token));
	return o;
}

/* The sandbox domain the SDK builds getHost(port) from: the listener's configured one, else null
 * (the SDK then takes its own E2B_DOMAIN). */
static json_t *domain_of(const struct hx_server *s)
{
	return s->o.e2b_domain && *s->o.e2b_domain ? json_string(s->o.e2b_domain) : json_null();
}

/* The Sandbox answer of create and connect. */
static json_t *sandbox_handle(const struct hx_server *s, const char *id, const char *tpl, const char *token,
			      const char *traffic)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o}", "sandboxID", id, "templateID", tpl, "clientID", "airlock",
			      "envdVersion", E2B_ENVD_VERSION, "domain", domain_of(s));
	if (o && token[0])
		json_object_set_new(o, "envdAccessToken", json_string(token));
	json_object_set_new(o, "trafficAccessToken", traffic[0] ? json_string(traffic) : json_null());
	return o;
}

static json_t *body_object(const struct hx_request *rq, struct hx_response *rs)
{
	json_error_t jerr;
	json_t *j = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &jerr) : json_object();
	if (!json_is_object(j)) {
		json_decref(j);
		rest_error(rs, 400, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

static void created_ok(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	hx_json(rs, 201, json_pack("{s:s}", "sandboxID", r->sandbox_id ? r->sandbox_id : ""));
}

/* envVars as labels "e2b.env.NAME" (every command started through envd gets them). */
static int env_labels(json_t *meta, json_t *env, struct hx_response *rs)
{
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v) {
		char key[80];
		if (!json_is_string(v) || strlen(k) + strlen(E2B_ENV_PREFIX) >= 64 || !k[0] ||
		    strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(k)) {
			rest_error(rs, 400,
				   "envVars: \"%.64s\" must be a name of letters, digits and _ (at most %zu) "
				   "with a string value",
				   k, 63 - strlen(E2B_ENV_PREFIX));
			return -1;
		}
		snprintf(key, sizeof(key), E2B_ENV_PREFIX "%s", k);
		json_object_set(meta, key, v);
	}
	return 0;
}

/* The code_create_sandbox arguments of E2B's NewSandbox body; NULL with rs filled. */
static json_t *create_args(const json_t *body, struct hx_response *rs)
{
	const char *tpl = json_string_value(json_object_get(body, "templateID"));
	json_t *env = json_object_get(body, "envVars");
	const json_t *timeout = json_object_get(body, "timeout"), *meta = json_object_get(body, "metadata"),
		     *net = json_object_get(body, "allow_internet_access");
	if ((meta && !json_is_object(meta) && !json_is_null(meta)) ||
	    (env && !json_is_object(env) && !json_is_null(env)) || (timeout && !json_is_integer(timeout))) {
		rest_error(rs, 400, "metadata and envVars are objects of strings; timeout is seconds (an integer)");
		return NULL;
	}
	json_t *args = json_object(), *labels = json_is_object(meta) ? json_deep_copy(meta) : json_object();
	if (!args || !labels) {
		json_decref(args);
		json_decref(labels);
		rest_error(rs, 500, "out of memory");
		return NULL;
	}
	if (json_is_object(env) && env_labels(labels, env, rs) < 0) {
		json_decref(args);
		json_decref(labels);
		return NULL;
	}
	json_int_t secs = timeout ? json_integer_value(timeout) : E2B_DEFAULT_TIME;
	json_object_set_new(args, "lifetime", json_integer(secs > 0 ? secs : E2B_DEFAULT_TIME));
	if (json_object_size(labels))
		json_object_set_new(args, "metadata", labels);
	else
		json_decref(labels);
	/* Sandbox.create(snapshotId): E2B's snapshots are templates; airlock's are named "snap-...". */
	if (tpl && strncmp(tpl, "snap-", 5) == 0)
		json_object_set_new(args, "snapshot", json_string(tpl));
	else if (!default_template(tpl))
		json_object_set_new(args, "image", json_string(tpl));
	/* Internet only when asked, and then the profile's allowlist through its egress proxy (the
	 * tool's network_enabled): never an open network. */
	if (json_is_true(net))
		json_object_set_new(args, "network_enabled", json_true());
	return args;
}

static void create(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	json_t *body = body_object(rq, rs);
	json_t *args = body ? create_args(body, rs) : NULL;
	cleanup_free char *tpl = body && json_string_value(json_object_get(body, "templateID"))
					 ? strdup(json_string_value(json_object_get(body, "templateID")))
					 : strdup("base");
	json_decref(body);
	struct hx_call *c = args ? hx_call_new(s, TL_CREATE_SANDBOX, args, rq) : NULL;
	if (!c) {
		if (!rs->status)
			rest_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, created_ok, rs);
	if (rs->status != 201) {
		if ((rs->status == 400 || rs->status == 403 || rs->status == 404) && !default_template(tpl) &&
		    strncmp(tpl, "snap-", 5) != 0) {
			json_t *b = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
			char msg[AL_ERROR_MAX];
			snprintf(msg, sizeof(msg), "%s", json_string_value(json_object_get(b, "error")) ?: "");
			json_decref(b);
			rest_error(rs, 400,
				   "unknown template \"%.100s\" (templates: base, code-interpreter-v1, or an "
				   "image of `airlock image list` the profile offers): %s",
				   tpl ? tpl : "", msg);
			return;
		}
		rest_from_api(rs);
		return;
	}
	json_t *b = json_loadb(rs->body, rs->len, 0, NULL);
	const char *id = json_string_value(json_object_get(b, "sandboxID"));
	char token[65], traffic[65];
	token_for(s, rq, id ? id : "", token, traffic);
	json_t *out = sandbox_handle(s, id ? id : "", tpl ? tpl : "base", token, traffic);
	json_decref(b);
	hx_response_clear(rs);
	hx_json(rs, 201, out);
}

/* ?limit=N&nextToken=ID: a page of the list, ordered by start time then id. */
static int by_start(const void *a, const void *b)
{
	const struct srv_sandbox_info *x = a, *y = b;
	if (x->created_unix_ms != y->created_unix_ms)
		return x->created_unix_ms < y->created_unix_ms ? -1 : 1;
	return strcmp(x->id, y->id);
}

static void list(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	const char *lim = query(rq, "limit"), *next = query(rq, "nextToken"), *state = query(rq, "state");
	long limit = lim ? strtol(lim, NULL, 10) : E2B_LIST_LIMIT;
	if (limit <= 0 || limit > E2B_LIST_MAX)
		limit = limit <= 0 ? E2B_LIST_LIMIT : E2B_LIST_MAX;
	struct srv_sandbox_info *v = NULL;
	size_t n = 0;
	if (hx_sandboxes_filtered(s, rq, &v, &n, rs)) {
		rest_from_api(rs);
		return;
	}
	qsort(v, n, sizeof(*v), by_start);
	json_t *arr = json_array();
	size_t i = 0, taken = 0;
	if (next) /* the page after the sandbox the token names (ids are unique) */
		while (i < n && strcmp(v[i++].id, next) != 0)
			;
	/* ?state=running,paused (E2B's default: both): the states asked for, by name. */
	const char *last = NULL;
	for (; arr && i < n && taken < (size_t)limit; i++) {
		bool paused = strcmp(v[i].state, "paused") == 0;
		if (state && !strstr(state, paused ? "paused" : "running"))
			continue;
		json_array_append_new(arr, sandbox_e2b(&v[i], NULL));
		last = v[i].id;
		taken++;
	}
	if (arr && i < n && last && asprintf(&rs->headers, "x-next-token: %s\n", last) < 0)
		rs->headers = NULL;
	char *headers = rs->headers;
	rs->headers = NULL;
	srv_sandbox_infos_free(v, n);
	free(v);
	if (!arr) {
		free(headers);
		rest_error(rs, 500, "out of memory");
		return;
	}
	hx_json(rs, 200, arr);
	rs->headers = headers;
}

static void info(struct hx_server *s, const struct hx_request *rq, const char *id, bool metrics, struct hx_response *rs)
{
	const struct srv_mgr_api *m = s->o.mgr;
	struct srv_sandbox_info i;
	struct al_error err = {0};
	int r = m->sandbox_info ? m->sandbox_info(m->ctx, owner_of(rq), id, &i, &err) : -ENOTSUP;
	if (r < 0) {
		rest_error(rs, hx_status_of_errno(r), "%s", err.msg[0] ? err.msg : "sandbox not found");
		return;
	}
	char token[65], traffic[65];
	token_for(s, rq, id, token, traffic);
	json_t *o = metrics ? json_pack("[{s:o,s:f,s:i,s:I,s:I,s:I,s:I}]", "timestamp", txt_json_time(i.used_unix_ms),
					"cpuUsedPct", 0.0, "cpuCount", 1, "memUsed", (json_int_t)i.memory_bytes,
					"memTotal", (json_int_t)i.peak_memory_bytes, "diskUsed", (json_int_t)0,
					"diskTotal", (json_int_t)0)
			    : sandbox_e2b(&i, token);
	if (o && !metrics) /* SandboxDetail's domain, as create's */
		json_object_set_new(o, "domain", domain_of(s));
	srv_sandbox_infos_free(&i, 1);
	hx_json(rs, 200, o);
}

static void no_content(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	rs->status = 204;
}

static void kill_sandbox(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	struct hx_call *c = hx_call_new(s, TL_DESTROY_SANDBOX, json_pack("{s:s}", "sandbox_id", id), rq);
	if (!c) {
		rest_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, no_content, rs);
	rest_from_api(rs);
}

/* A tool call whose E2B answer is 204 (or the call's error, in E2B's shape); takes args. */
static void call_no_content(struct hx_server *s, const struct hx_request *rq, enum tl_id tool, json_t *args,
			    struct hx_response *rs)
{
	struct hx_call *c = hx_call_new(s, tool, args, rq);
	if (!c) {
		rest_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, no_content, rs);
	rest_from_api(rs);
}

/* {"timeout": S}: a code_set_sandbox_timeout call. */
static void set_timeout(struct hx_server *s, const struct hx_request *rq, const char *id, json_int_t secs,
			struct hx_response *rs)
{
	call_no_content(s, rq, TL_SET_TIMEOUT,
			json_pack("{s:s,s:I}", "sandbox_id", id, "lifetime", secs > 0 ? secs : 1), rs);
}

static void timeout_route(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *body = body_object(rq, rs);
	const json_t *t = json_object_get(body, "timeout");
	if (body && !json_is_integer(t))
		rest_error(rs, 400, "the body must be {\"timeout\": SECONDS}");
	else if (body)
		set_timeout(s, rq, id, json_integer_value(t), rs);
	json_decref(body);
}

/* Pause and resume in place (the manager's freezer): code_pause_sandbox / code_resume_sandbox
 * calls on the one runner, as the JSON API's. E2B's pause answers 204; its connect resumes a paused
 * sandbox first. */
static void pause_call(struct hx_server *s, const struct hx_request *rq, const char *id, enum tl_id tool,
		       struct hx_response *rs)
{
	call_no_content(s, rq, tool, json_pack("{s:s}", "sandbox_id", id), rs);
}

static void pause_route(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	pause_call(s, rq, id, TL_PAUSE, rs);
}

static void forked_ok(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	(void)c;
	json_t *o = r->sandboxes_json ? json_loads(r->sandboxes_json, 0, NULL) : NULL;
	hx_json(rs, 201, o ? o : json_object());
}

/* {count, timeout}: a code_fork_sandbox call; E2B's answer is one {sandbox} per child (airlock
 * makes all or, past a quota, refuses the call naming what it made). Without a timeout a child
 * gets its parent's lifetime. */
static void fork_route(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *body = body_object(rq, rs);
	if (!body)
		return;
	const json_t *n = json_object_get(body, "count"), *t = json_object_get(body, "timeout");
	bool bad = (n && !json_is_integer(n)) || (t && !json_is_integer(t));
	json_int_t count = n ? json_integer_value(n) : 1, secs = t ? json_integer_value(t) : 0;
	json_decref(body);
	if (bad) {
		rest_error(rs, 400, "the body must be {\"count\": N, \"timeout\": SECONDS}");
		return;
	}
	const struct srv_mgr_api *m = s->o.mgr;
	struct srv_sandbox_info i;
	struct al_error err = {0};
	int r = m->sandbox_info ? m->sandbox_info(m->ctx, owner_of(rq), id, &i, &err) : -ENOTSUP;
	if (r < 0) {
		rest_error(rs, hx_status_of_errno(r), "%s", err.msg[0] ? err.msg : "sandbox not found");
		return;
	}
	char tpl[sizeof(i.image)];
	snprintf(tpl, sizeof(tpl), "%s", strcmp(i.image, "host") == 0 || !i.image[0] ? "base" : i.image);
	srv_sandbox_infos_free(&i, 1);
	json_t *args = json_pack("{s:s,s:I}", "sandbox_id", id, "count", count);
	if (args && secs > 0)
		json_object_set_new(args, "lifetime", json_integer(secs));
	struct hx_call *c = args ? hx_call_new(s, TL_FORK, args, rq) : NULL;
	if (!c) {
		rest_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, forked_ok, rs);
	if (rs->status != 201) {
		rest_from_api(rs);
		return;
	}
	json_t *b = json_loadb(rs->body, rs->len, 0, NULL), *out = json_array();
	size_t k;
	json_t *kid;
	json_array_foreach(json_object_get(b, "sandboxes"), k, kid) {
		const char *kid_id = json_string_value(json_object_get(kid, "sandbox_id"));
		char token[65], traffic[65];
		token_for(s, rq, kid_id ? kid_id : "", token, traffic);
		json_array_append_new(out, json_pack("{s:o}", "sandbox",
						     sandbox_handle(s, kid_id ? kid_id : "", tpl, token, traffic)));
	}
	json_decref(b);
	hx_response_clear(rs);
	if (out)
		hx_json(rs, 201, out);
	else
		rest_error(rs, 500, "out of memory");
}

/* ---- snapshots: createSnapshot, listSnapshots, deleteSnapshot (a template's DELETE) ---------- */

/* E2B's SnapshotInfo of one of airlock's: its id, and its name as its one name (none: no names). */
static json_t *snapshot_e2b(const json_t *o)
{
	const char *id = json_string_value(json_object_get(o, "snapshot_id"));
	const char *name = json_string_value(json_object_get(o, "name"));
	json_t *names = name ? json_pack("[s]", name) : json_array();
	return json_pack("{s:s,s:o}", "snapshotID", id ? id : "", "names", names ? names : json_array());
}

static void snapshot_taken(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	(void)c;
	json_t *o = r->snapshot_json ? json_loads(r->snapshot_json, 0, NULL) : NULL;
	hx_json(rs, 201, o ? snapshot_e2b(o) : json_object());
	json_decref(o);
}

/* {name?}: a code_snapshot_sandbox call (the files only: E2B's keeps memory too, airlock's does
 * not, and a sandbox made from it starts no process). */
static void snapshot_route(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *body = body_object(rq, rs);
	if (!body)
		return;
	const json_t *name = json_object_get(body, "name");
	json_t *args = json_pack("{s:s}", "sandbox_id", id);
	if (args && json_is_string(name))
		json_object_set_new(args, "name", json_string(json_string_value(name)));
	json_decref(body);
	struct hx_call *c = args ? hx_call_new(s, TL_SNAPSHOT, args, rq) : NULL;
	if (!c) {
		rest_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, snapshot_taken, rs);
	rest_from_api(rs);
}

/* ?sandboxID= and ?name= filter the caller's snapshots; all of them fit one page (X-Next-Token
 * never set: the quota bounds their number). */
static void snapshots_route(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	const char *of = query(rq, "sandboxID"), *name = query(rq, "name");
	struct hx_call *c = hx_call_new(s, TL_LIST_SNAPSHOTS, json_object(), rq);
	if (!c) {
		rest_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
	if (rs->status != 200) {
		rest_from_api(rs);
		return;
	}
	json_t *b = json_loadb(rs->body, rs->len, 0, NULL), *out = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(b, "snapshots"), i, v) {
		const char *sb = json_string_value(json_object_get(v, "sandbox_id"));
		const char *id = json_string_value(json_object_get(v, "snapshot_id"));
		const char *n = json_string_value(json_object_get(v, "name"));
		if ((of && (!sb || strcmp(sb, of) != 0)) ||
		    (name && (!id || strcmp(id, name) != 0) && (!n || strcmp(n, name) != 0)))
			continue;
		json_array_append_new(out, snapshot_e2b(v));
	}
	json_decref(b);
	hx_response_clear(rs);
	if (out)
		hx_json(rs, 200, out);
	else
		rest_error(rs, 500, "out of memory");
}

static void connect_route(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *body = body_object(rq, rs);
	if (!body)
		return;
	const json_t *t = json_object_get(body, "timeout");
	json_int_t secs = json_is_integer(t) ? json_integer_value(t) : 0;
	json_decref(body);
	const struct srv_mgr_api *m = s->o.mgr;
	struct srv_sandbox_info i;
	struct al_error err = {0};
	int r = m->sandbox_info ? m->sandbox_info(m->ctx, owner_of(rq), id, &i, &err) : -ENOTSUP;
	if (r < 0) {
		rest_error(rs, hx_status_of_errno(r), "%s", err.msg[0] ? err.msg : "sandbox not found");
		return;
	}
	const char *tpl = strcmp(i.image, "host") == 0 || !i.image[0] ? "base" : i.image;
	char token[65], traffic[65], tplcopy[sizeof(i.image)];
	snprintf(tplcopy, sizeof(tplcopy), "%s", tpl);
	bool paused = strcmp(i.state, "paused") == 0;
	srv_sandbox_infos_free(&i, 1);
	if (paused) {
		pause_call(s, rq, id, TL_RESUME, rs);
		if (rs->status >= 300)
			return;
		hx_response_clear(rs);
	}
	if (secs > 0) {
		set_timeout(s, rq, id, secs, rs);
		if (rs->status >= 300)
			return;
		hx_response_clear(rs);
	}
	token_for(s, rq, id, token, traffic);
	hx_json(rs, 200, sandbox_handle(s, id, tplcopy, token, traffic));
}

/* "/sandboxes/ID[/ACTION]" or "/v2/sandboxes/ID[/ACTION]": id and action (malloc'd, "" when none). */
static int split(const char *path, char **id, char **action)
{
	const char *p = strncmp(path, "/v2", 3) == 0 ? path + 3 : path;
	*id = *action = NULL;
	if (strncmp(p, "/sandboxes/", 11) != 0 || !p[11])
		return -1;
	p += 11;
	size_t n = strcspn(p, "/");
	*id = strndup(p, n);
	*action = strdup(p[n] ? p + n + 1 : "");
	return *id && *action ? 0 : -ENOMEM;
}

void e2b_handle(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	struct e2b_target t;
	e2b_claims(s, rq, &t);
	const char *path = rq->path ? rq->path : "", *m = rq->method ? rq->method : "";
	if (t.envd) {
		if (t.port == E2B_ENVD_PORT)
			e2b_envd(s, rq, t.sandbox, rs);
		else if (t.port == E2B_JUPYTER_PORT)
			e2b_interpreter(s, rq, t.sandbox, rs);
		else /* server.c streams these through proxy.c; a dispatcher without a connection cannot */
			rest_error(rs, 501, "port %u of sandbox %.64s is reached over a connection of the server",
				   t.port, t.sandbox);
		return;
	}
	bool top = strcmp(path, "/sandboxes") == 0 || strcmp(path, "/v2/sandboxes") == 0;
	if (top && strcmp(m, "POST") == 0) {
		create(s, rq, rs);
		return;
	}
	if (top && strcmp(m, "GET") == 0) {
		list(s, rq, rs);
		return;
	}
	cleanup_free char *id = NULL, *action = NULL;
	if (split(path, &id, &action) == 0) {
		if (!*action && strcmp(m, "GET") == 0) {
			info(s, rq, id, false, rs);
			return;
		}
		if (!*action && strcmp(m, "DELETE") == 0) {
			kill_sandbox(s, rq, id, rs);
			return;
		}
		if (strcmp(action, "metrics") == 0 && strcmp(m, "GET") == 0) {
			info(s, rq, id, true, rs);
			return;
		}
		if (strcmp(action, "timeout") == 0 && strcmp(m, "POST") == 0) {
			timeout_route(s, rq, id, rs);
			return;
		}
		if ((strcmp(action, "connect") == 0 || strcmp(action, "resume") == 0) && strcmp(m, "POST") == 0) {
			connect_route(s, rq, id, rs);
			return;
		}
		if (strcmp(action, "pause") == 0 && strcmp(m, "POST") == 0) {
			pause_route(s, rq, id, rs);
			return;
		}
		if (strcmp(action, "fork") == 0 && strcmp(m, "POST") == 0) {
			fork_route(s, rq, id, rs);
			return;
		}
		if (strcmp(action, "snapshots") == 0 && strcmp(m, "POST") == 0) {
			snapshot_route(s, rq, id, rs);
			return;
		}
	}
	if (strcmp(path, "/snapshots") == 0 && strcmp(m, "GET") == 0) {
		snapshots_route(s, rq, rs);
		return;
	}
	/* deleteSnapshot: a snapshot is a template to E2B; the other templates are not airlock's. */
	if (strncmp(path, "/templates/snap-", 16) == 0 && !strchr(path + 11, '/') && strcmp(m, "DELETE") == 0) {
		call_no_content(s, rq, TL_DELETE_SNAPSHOT, json_pack("{s:s}", "snapshot_id", path + 11), rs);
		return;
	}
	rest_error(rs, 501, "%.16s %.200s: not offered by airlock's E2B front end (docs/e2b.md lists what is)", m,
		   path);
}
