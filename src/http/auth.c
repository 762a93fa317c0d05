/* auth.c — who may talk to the server: the listen address, Host and Origin checks, the bearer token. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "http/hx.h"
#include "util/error.h"

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

/* host[0..len) without its port: "127.0.0.1:8080", "[::1]:8080", "localhost". */
bool hx_loopback_host(const char *host, size_t len)
{
	char name[64];
	if (len == 0)
		return false;
	if (host[0] == '[') {
		const char *close = memchr(host, ']', len);
		if (!close || (size_t)(close - host - 1) >= sizeof(name))
			return false;
		memcpy(name, host + 1, (size_t)(close - host - 1));
		name[close - host - 1] = 0;
		struct in6_addr a;
		return inet_pton(AF_INET6, name, &a) == 1 && IN6_IS_ADDR_LOOPBACK(&a);
	}
	const char *colon = memchr(host, ':', len);
	size_t n = colon ? (size_t)(colon - host) : len;
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
static int check_origin(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
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

/* ---- the token ------------------------------------------------------------------------------ */

static int check_token(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	if (!s->has_token)
		return 0;
	const char *auth = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, "Authorization") : NULL;
	if (auth && strncasecmp(auth, "Bearer ", 7) == 0) {
		const char *given = auth + 7;
		while (*given == ' ')
			given++;
		/* Digests of equal length, compared in constant time: the comparison reveals neither
		 * a prefix of the token nor its length. */
		unsigned char d[SHA256_DIGEST_LENGTH];
		SHA256((const unsigned char *)given, strlen(given), d);
		if (CRYPTO_memcmp(d, s->token_digest, sizeof(d)) == 0)
			return 0;
	}
	hx_error(rs, 401, "missing or wrong bearer token");
	rs->challenge = true;
	return 1;
}

int hx_check_access(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	return check_origin(s, rq, rs) || check_token(s, rq, rs);
}
