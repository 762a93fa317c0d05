/* capture.c — the egress capture: the table of synthetic addresses, the resolver's sockets and
 * the captured connections.
 *
 * Why this is as safe as the explicit proxy: a captured connection reaches upstream only through
 * px_connect_checked, the very function a CONNECT goes through (allowlist by name and port, the
 * operator's hosts file or the host's resolver, every address classified, a connect to the
 * checked sockaddr). The name comes from our own table, never from the client: the client only
 * picks one of the addresses our resolver gave out, and an address we never gave names nothing.
 * The sandbox's namespace still has no route: a literal address outside 127/8 fails at once.
 */
#include "network/capture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "network/dns.h"
#include "network/proxy.h"

struct cap_names {
	pthread_mutex_t mu;
	char (*v)[AL_HOST_MAX]; /* index i has the address AL_CAPTURE_NET + 1 + i */
	size_t n, cap;
};

int cap_names_new(struct cap_names **out)
{
	struct cap_names *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

void cap_names_free(struct cap_names *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t->v);
	free(t);
}

/* Called with mu held. Linear: a sandbox resolves a few dozen names, and CAP_MAX_NAMES bounds it. */
static int find(const struct cap_names *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i], name) == 0)
			return (int)i;
	return -1;
}

static int grow(struct cap_names *t)
{
	if (t->n < t->cap)
		return 0;
	if (t->cap == CAP_MAX_NAMES)
		return -ENOSPC;
	size_t cap = t->cap ? t->cap * 2 : 16;
	if (cap > CAP_MAX_NAMES)
		cap = CAP_MAX_NAMES;
	void *v = realloc(t->v, cap * sizeof(*t->v));
	if (!v)
		return -ENOMEM;
	t->v = v;
	t->cap = cap;
	return 0;
}

int cap_names_addr(struct cap_names *t, const char *name, struct in_addr *out)
{
	if (strlen(name) >= AL_HOST_MAX)
		return -EINVAL;
	pthread_mutex_lock(&t->mu);
	int i = find(t, name), r = 0;
	if (i < 0 && (r = grow(t)) == 0) {
		i = (int)t->n++;
		snprintf(t->v[i], AL_HOST_MAX, "%s", name);
	}
	pthread_mutex_unlock(&t->mu);
	if (r < 0)
		return r;
	out->s_addr = htonl(AL_CAPTURE_NET + 1 + (uint32_t)i);
	return 0;
}

bool cap_names_name(struct cap_names *t, const struct in_addr *a, char name[AL_HOST_MAX])
{
	uint32_t h = ntohl(a->s_addr);
	if ((h & 0xffff0000u) != AL_CAPTURE_NET || (h & 0xffffu) == 0)
		return false;
	size_t i = (h & 0xffffu) - 1;
	pthread_mutex_lock(&t->mu);
	bool ok = i < t->n;
	if (ok)
		memcpy(name, t->v[i], AL_HOST_MAX);
	pthread_mutex_unlock(&t->mu);
	return ok;
}

size_t cap_names_count(struct cap_names *t)
{
	pthread_mutex_lock(&t->mu);
	size_t n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* ---- the resolver ------------------------------------------------------------------------ */

struct lookup_ctx {
	struct px *px;
	const struct al_allowlist *allow;
};

static int lookup(void *ctx, const char *name, struct in_addr *addr)
{
	const struct lookup_ctx *l = ctx;
	if (!al_allow_name(l->allow, name))
		return 0;
	return cap_names_addr(px_names(l->px), name, addr) == 0 ? 1 : -1;
}

#define CAP_UDP_BATCH 32 /* datagrams answered per wake-up, so the acceptor never starves */

void cap_dns_udp(struct px *px, int fd)
{
	struct lookup_ctx l = {.px = px, .allow = px_allowlist(px)};
	uint8_t in[DNS_MAX_QUERY], out[DNS_MAX_REPLY];
	for (int k = 0; k < CAP_UDP_BATCH; k++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, in, sizeof(in), MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		struct dns_query q = {.rcode = DNS_FORMERR};
		if ((size_t)n > sizeof(in)) {
			px_dns_note(px, &q, false); /* larger than any query: dropped, counted malformed */
			continue;
		}
		size_t r = dns_answer(in, (size_t)n, lookup, &l, out, sizeof(out), &q);
		px_dns_note(px, &q, r > 0);
		if (r > 0)
			(void)sendto(fd, out, r, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&from, fl);
	}
}

/* Reads exactly len bytes within idle_ms of each other: 0, or -1 at the end or on a timeout. */
static int read_full(int fd, uint8_t *buf, size_t len, int idle_ms)
{
	size_t got = 0;
	while (got < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		ssize_t n = recv(fd, buf + got, len - got, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

void cap_dns_tcp(struct px_conn *c, const struct px_config *cfg)
{
	struct lookup_ctx l = {.px = c->px, .allow = cfg->allow};
	uint8_t in[DNS_MAX_QUERY], out[2 + DNS_MAX_REPLY];
	for (;;) {
		uint8_t pre[2];
		if (read_full(c->client, pre, 2, cfg->idle_ms) < 0)
			return;
		size_t len = (size_t)((pre[0] << 8) | pre[1]);
		/* Larger than any query: not read, the connection ends (RFC 7766 allows closing). */
		if (len > sizeof(in) || read_full(c->client, in, len, cfg->idle_ms) < 0)
			return;
		struct dns_query q;
		size_t r = dns_answer(in, len, lookup, &l, out + 2, sizeof(out) - 2, &q);
		px_dns_note(c->px, &q, r > 0);
		if (r == 0)
			return;
		out[0] = (uint8_t)(r >> 8);
		out[1] = (uint8_t)r;
		if (px_write_all(c->client, out, r + 2, cfg->idle_ms) < 0)
			return;
	}
}

/* ---- captured connections ------------------------------------------------------------------ */

static void refuse(struct px_conn *c, enum px_decision d, const char *why)
{
	c->rec.decision = d;
	c->rec.reason = why;
	/* A reset, not a quiet close: the client's connect or first read fails at once. */
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	(void)setsockopt(c->client, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

void cap_conn_serve(struct px_conn *c, const struct px_config *cfg)
{
	struct sockaddr_in local = {0};
	socklen_t ll = sizeof(local);
	c->rec.kind = PXK_CAPTURE;
	if (getsockname(c->client, (struct sockaddr *)&local, &ll) < 0 || local.sin_family != AF_INET) {
		refuse(c, PXD_ERROR, "no local address");
		return;
	}
	c->rec.port = ntohs(local.sin_port);
	if (!cap_names_name(px_names(c->px), &local.sin_addr, c->rec.host)) {
		/* 127.0.0.1:443 and the like: an address the job chose, not one our resolver gave. */
		inet_ntop(AF_INET, &local.sin_addr, c->rec.host, sizeof(c->rec.host));
		refuse(c, PXD_DENIED, "not an address of a name airlock resolved");
		return;
	}
	if (!al_allow_match(cfg->allow, c->rec.host, c->rec.port)) {
		refuse(c, PXD_DENIED, "host or port not on the allowlist");
		return;
	}
	if (px_tls_wanted(cfg, c->rec.host, c->rec.port)) {
		px_tls_serve(c, cfg); /* the job speaks TLS to the synthetic address: it ends here */
		return;
	}
	if (px_connect_checked(c, cfg, c->rec.host, c->rec.port) < 0)
		return;
	c->rec.decision = PXD_ALLOWED;
	px_relay(c, cfg->idle_ms);
}
