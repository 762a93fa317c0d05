/* sbports.c — ports of a held sandbox's own loopback: connections made inside its network namespace, the listening ports, and per-port access tokens. */
#include "manager/sbmint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "manager/ports.h"
#include "util/cleanup.h"
#include "util/error.h"

#define PORTS_MAX	 256		   /* listening sockets listed at most */
#define PORTS_TABLE_MAX	 ((size_t)1 << 20) /* bytes of one /proc/net table read at most */
#define PORT_TOKEN_BYTES 32		   /* 256 random bits */

/* The egress proxy's listener (allowlist posture) is airlock's, not the sandbox's: the port proxy
 * never leads there, so the owner cannot use the sandbox's allowlist from outside it. */
static bool airlock_port(const struct sbx *s, uint16_t port)
{
	return s->net == AL_NET_ALLOW && port == AL_PROXY_PORT;
}

/* Under m->mu: the listed sandbox id, whoever owns it (a spare never). */
static struct sbx *find_locked(struct sbm *m, const char *id)
{
	struct sbx *s = m->list;
	while (s && (s->pooled || !s->listed || strcmp(s->id, id) != 0))
		s = s->next;
	return s;
}

/*
 * Whether token opens port of s. Only digests are kept and compared, each slot in constant time
 * (CRYPTO_memcmp), every slot whatever matched: timing tells neither which token nor a prefix.
 * A token is bound to the sandbox that holds it and to one port: another sandbox's token, or this
 * sandbox's for another port, opens nothing. Under m->mu.
 */
static bool token_opens(const struct sbx *s, uint16_t port, const char *token, uint64_t now)
{
	if (!s->port_tokens || !token)
		return false;
	unsigned char d[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)token, strlen(token), d);
	bool ok = false;
	for (size_t i = 0; i < SBM_PORT_TOKENS_MAX; i++) {
		const struct sbm_port_token *t = &s->port_tokens[i];
		bool same = CRYPTO_memcmp(d, t->digest, sizeof(d)) == 0;
		ok |= same && t->port == port && (!t->expires_ms || now < t->expires_ms);
	}
	return ok;
}

/* The sandbox the request may reach, with a reference: by its owner's credentials (another
 * principal's sandbox is unknown, as everywhere), or by a port token. NULL with err set:
 * -ENOENT, or -EACCES for a token that is not valid here (an unknown sandbox included, so a
 * token holder learns nothing about other ids). */
static struct sbx *port_sandbox(struct sbm *m, const struct srv_port_req *req, int *r, struct al_error *err)
{
	if (!req->token) {
		struct sbx *s = sbx_get(m, req->sandbox_id, req->owner, err);
		*r = s ? 0 : -ENOENT;
		return s;
	}
	pthread_mutex_lock(&m->mu);
	struct sbx *s = req->sandbox_id ? find_locked(m, req->sandbox_id) : NULL;
	if (s && token_opens(s, req->port, req->token, sbm_now_ms())) {
		s->refs++;
		s->used_ms = sbm_now_ms();
	} else {
		s = NULL;
	}
	pthread_mutex_unlock(&m->mu);
	*r = s ? 0
	       : al_err(err, EACCES, "the port token is not valid for port %u of this sandbox", (unsigned)req->port);
	return s;
}

int sbm_port_connect(void *ctx, const struct srv_port_req *req, int *fd, struct al_error *err)
{
	struct sbm *m = ctx;
	if (req->port == 0)
		return al_err(err, EINVAL, "port 0: ports are 1 to 65535");
	int r;
	struct sbx *s = port_sandbox(m, req, &r, err);
	if (!s)
		return r;
	/* A connection is made by the sandbox's init: a paused sandbox is resumed first. */
	if ((r = sbx_wake(m, s, NULL, err)) < 0)
		return r;
	if (airlock_port(s, req->port))
		r = al_err(err, ECONNREFUSED,
			   "port %u is the sandbox's egress proxy (airlock's own), not a server of the "
			   "sandbox",
			   (unsigned)req->port);
	else
		r = al_sandbox_connect(s->sb, req->port, fd, err);
	sbx_unuse_put(m, s);
	return r;
}

/* The table name of s's network ("tcp", "tcp6") into buf[0..cap), NUL-terminated: its length, or -errno. */
static ssize_t read_table(struct sbx *s, const char *name, char *buf, size_t cap, struct al_error *err)
{
	cleanup_close int fd = al_sandbox_net_file(s->sb, name, err);
	if (fd < 0)
		return fd;
	size_t len = 0;
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return al_err_sys(err, errno, "reading the sandbox's %s table", name);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* Cut at the last whole line: a table longer than cap loses its tail, never half a line. */
	while (len && len + 1 >= cap && buf[len - 1] != '\n')
		len--;
	buf[len] = 0;
	return (ssize_t)len;
}

int sbm_list_ports(void *ctx, const struct srv_port_req *req, struct srv_port_info **out, size_t *n,
		   struct al_error *err)
{
	struct sbm *m = ctx;
	struct sbx *s = sbx_get(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	cleanup_free char *buf = malloc(PORTS_TABLE_MAX);
	struct srv_port_info *v = calloc(PORTS_MAX, sizeof(*v));
	size_t k = 0;
	if (!buf || !v) {
		free(v);
		sbx_put(m, s);
		return al_err(err, ENOMEM, "out of memory");
	}
	int r = 0;
	for (int i = 0; r == 0 && i < 2; i++) {
		ssize_t len = read_table(s, i ? "tcp6" : "tcp", buf, PORTS_TABLE_MAX, err);
		if (len == -ENOENT && i == 1)
			break; /* a kernel without IPv6 has no tcp6 table */
		if (len < 0)
			r = (int)len;
		else
			ports_parse_tcp(buf, i == 1, v, &k, PORTS_MAX);
	}
	size_t kept = 0;
	for (size_t i = 0; r == 0 && i < k; i++)
		if (!airlock_port(s, v[i].port))
			v[kept++] = v[i];
	sbx_put(m, s);
	if (r < 0) {
		free(v);
		return r;
	}
	*n = ports_sort_unique(v, kept);
	*out = v;
	return 0;
}

/* 32 random bytes as base64url without padding: SRV_PORT_TOKEN_LEN characters and a NUL. */
static int token_text(char out[SRV_PORT_TOKEN_LEN + 1])
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char raw[PORT_TOKEN_BYTES + 1] = {0}; /* one zero byte pads the last group */
	if (getrandom(raw, PORT_TOKEN_BYTES, 0) != PORT_TOKEN_BYTES)
		return -EIO;
	size_t k = 0;
	for (size_t i = 0; i < PORT_TOKEN_BYTES; i += 3) {
		uint32_t g = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 |
			     (i + 2 < PORT_TOKEN_BYTES ? raw[i + 2] : 0);
		for (int j = 3; j >= 0 && k < SRV_PORT_TOKEN_LEN; j--)
			out[k++] = b64[(g >> (6 * j)) & 63];
	}
	out[k] = 0;
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* Under m->mu: a slot for a new token of s: a free or expired one. NULL when all are live. */
static struct sbm_port_token *free_slot(struct sbx *s, uint64_t now)
{
	if (!s->port_tokens && !(s->port_tokens = calloc(SBM_PORT_TOKENS_MAX, sizeof(*s->port_tokens))))
		return NULL;
	for (size_t i = 0; i < SBM_PORT_TOKENS_MAX; i++) {
		struct sbm_port_token *t = &s->port_tokens[i];
		if (!t->port || (t->expires_ms && now >= t->expires_ms))
			return t;
	}
	return NULL;
}

int sbm_port_token(void *ctx, const struct srv_port_req *req, char *token, uint64_t *expires_unix_ms,
		   struct al_error *err)
{
	struct sbm *m = ctx;
	if (req->port == 0)
		return al_err(err, EINVAL, "port 0: ports are 1 to 65535");
	if (req->token)
		return al_err(err, EPERM, "a port token cannot make tokens: only the sandbox's owner can");
	struct sbx *s = sbx_get(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	int r = token_text(token);
	if (r < 0) {
		sbx_put(m, s);
		return al_err_sys(err, -r, "no random bytes for a token");
	}
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	uint64_t now = sbm_now_ms(), wall_ms = (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000;
	pthread_mutex_lock(&m->mu);
	struct sbm_port_token *t = free_slot(s, now);
	if (t) {
		SHA256((const unsigned char *)token, strlen(token), t->digest);
		t->port = req->port;
		t->expires_ms = req->ttl_ms ? now + req->ttl_ms : 0;
	}
	pthread_mutex_unlock(&m->mu);
	sbx_put(m, s);
	if (!t) {
		explicit_bzero(token, SRV_PORT_TOKEN_LEN + 1);
		return al_err(err, EAGAIN, "this sandbox holds %d live port tokens already: let one expire",
			      SBM_PORT_TOKENS_MAX);
	}
	*expires_unix_ms = req->ttl_ms ? wall_ms + req->ttl_ms : 0;
	return 0;
}

/* The listening ports of s as the approver's console lists them: [{port, address, url}] (the
 * url is the owner's: an approver is no owner, and reaches it only with a token the owner gave).
 * Reads two small /proc tables; NULL when they cannot be read. */
json_t *sbm_ports_json(struct sbx *s)
{
	cleanup_free char *buf = malloc(PORTS_TABLE_MAX);
	struct srv_port_info v[64];
	size_t k = 0;
	for (int i = 0; buf && i < 2; i++)
		if (read_table(s, i ? "tcp6" : "tcp", buf, PORTS_TABLE_MAX, NULL) >= 0)
			ports_parse_tcp(buf, i == 1, v, &k, AL_ARRAY_SIZE(v));
	if (!buf)
		return NULL;
	k = ports_sort_unique(v, k);
	json_t *list = json_array();
	for (size_t i = 0; list && i < k; i++) {
		if (airlock_port(s, v[i].port))
			continue;
		char url[SBM_ID_LEN + 48];
		snprintf(url, sizeof(url), "/v1/sandboxes/%s/ports/%u/", s->id, (unsigned)v[i].port);
		json_array_append_new(
			list, json_pack("{s:i,s:s,s:s}", "port", (int)v[i].port, "address", v[i].addr, "url", url));
	}
	return list;
}
