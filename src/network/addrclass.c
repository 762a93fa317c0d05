/* addrclass.c — classification of resolved addresses for the egress proxy; pure, table-driven.
 *
 * Why this exists: the proxy resolves an allowed name itself and connects to the address it
 * checked here, so a name that resolves (or is rebound) to loopback, a private network or a
 * cloud metadata service is refused. Everything that is not an ordinary public unicast address
 * is forbidden; when in doubt a range is forbidden, since an operator can open it with
 * allow_private while a wrongly open range is a hole nobody sees.
 */
#include "network/addrclass.h"

#include <string.h>

struct range4 {
	uint32_t net; /* host order */
	unsigned prefix;
	const char *reason;
	bool hard;
};

/* First match wins: more specific entries come before the ranges that contain them. */
static const struct range4 ranges4[] = {
	{0x00000000, 8, "unspecified", true}, /* 0/8 "this network": 0.0.0.0 reaches the host */
	{0x7f000000, 8, "loopback", false},
	{0x0a000000, 8, "private", false},
	/* Alibaba Cloud's metadata service sits inside CGNAT space; named for the audit. */
	{0x646464c8, 32, "metadata", false},		/* 100.100.100.200 */
	{0x64400000, 10, "cgnat", false},		/* 100.64/10, RFC 6598 */
	{0xa9fe0000, 16, "link-local/metadata", false}, /* 169.254/16: 169.254.169.254 etc. */
	{0xac100000, 12, "private", false},		/* 172.16/12 */
	{0xc0000000, 24, "reserved", false},		/* 192.0.0/24 IETF protocol assignments */
	{0xc0000200, 24, "documentation", false},	/* 192.0.2/24 TEST-NET-1 */
	{0xc0586300, 24, "reserved", false},		/* 192.88.99/24 old 6to4 relay anycast */
	{0xc0a80000, 16, "private", false},		/* 192.168/16 */
	/* Benchmarking space is never on the internet, but VPNs and "fake-IP" DNS proxies use it
	 * for internal addresses: forbidden. */
	{0xc6120000, 15, "benchmarking", false},  /* 198.18/15 */
	{0xc6336400, 24, "documentation", false}, /* 198.51.100/24 TEST-NET-2 */
	{0xcb007100, 24, "documentation", false}, /* 203.0.113/24 TEST-NET-3 */
	{0xe0000000, 4, "multicast", true},	  /* 224/4 */
	{0xffffffff, 32, "broadcast", true},	  /* before 240/4, which holds it */
	{0xf0000000, 4, "reserved", false},	  /* 240/4 */
};

struct range6 {
	uint8_t net[16];
	unsigned prefix;
	const char *reason;
	bool hard;
};

static const struct range6 ranges6[] = {
	/* AWS's IPv6 instance metadata address, inside ULA space; named for the audit. */
	{{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, "metadata", false},
	{{0xfe, 0x80}, 10, "link-local", false},
	{{0xfe, 0xc0}, 10, "private", false}, /* deprecated site-local */
	{{0xfc}, 7, "private", false},	      /* ULA */
	{{0xff}, 8, "multicast", true},
	{{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "private", false}, /* local-use NAT64, RFC 8215 */
	{{0x20, 0x01, 0x00, 0x00}, 32, "teredo", false},	      /* tunnels to an obfuscated IPv4 client */
	{{0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48, "benchmarking", false},
	{{0x20, 0x01}, 23, "reserved", false}, /* the rest of the IETF protocol block */
	{{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation", false},
	{{0x3f, 0xff}, 20, "documentation", false}, /* RFC 9637 */
	/* Only 2000::/3 is global unicast; everything else left (100::/64 discard, unassigned
	 * space) is not a destination a package index has. */
	{{0x20}, 3, NULL, false},
	{{0}, 0, "reserved", false},
};

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;
	if (memcmp(a, net, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (net[full] & mask);
}

struct ac_class ac_classify4(const struct in_addr *a)
{
	struct ac_class c = {0};
	uint32_t h = ntohl(a->s_addr);
	for (size_t i = 0; i < sizeof(ranges4) / sizeof(ranges4[0]); i++) {
		const struct range4 *r = &ranges4[i];
		uint32_t mask = r->prefix ? ~UINT32_C(0) << (32 - r->prefix) : 0;
		if ((h & mask) == r->net) {
			c.reason = r->reason;
			c.hard = r->hard;
			return c;
		}
	}
	return c;
}

/* IPv6 forms that carry an IPv4 address and reach it (through the kernel's dual stack, a
 * NAT64 gateway or a 6to4 relay): they are classified as that address, so ::ffff:127.0.0.1
 * is loopback and 64:ff9b::a9fe:a9fe is the metadata service. Returns whether a is one. */
static bool embedded_v4(const uint8_t *a, struct in_addr *v4)
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff}; /* ::ffff:0:0/96 */
	static const uint8_t compat[12] = {0};			      /* ::/96 (deprecated) */
	static const uint8_t siit[12] = {[8] = 0xff, [9] = 0xff};     /* ::ffff:0:0:0/96 */
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};    /* 64:ff9b::/96 */
	if (!memcmp(a, mapped, 12) || !memcmp(a, compat, 12) || !memcmp(a, siit, 12) || !memcmp(a, nat64, 12)) {
		memcpy(&v4->s_addr, a + 12, 4);
		return true;
	}
	if (a[0] == 0x20 && a[1] == 0x02) { /* 2002::/16 6to4: the IPv4 address is bits 16-47 */
		memcpy(&v4->s_addr, a + 2, 4);
		return true;
	}
	return false;
}

struct ac_class ac_classify6(const struct in6_addr *a)
{
	static const uint8_t loopback[16] = {[15] = 1};
	struct ac_class c = {0};
	const uint8_t *b = a->s6_addr;
	/* :: and ::1 sit inside ::/96 but are IPv6's own unspecified and loopback addresses. */
	if (!memcmp(b, in6addr_any.s6_addr, 16))
		return (struct ac_class){.reason = "unspecified", .hard = true};
	if (!memcmp(b, loopback, 16))
		return (struct ac_class){.reason = "loopback"};
	if (embedded_v4(b, &c.v4)) {
		struct ac_class inner = ac_classify4(&c.v4);
		c.reason = inner.reason;
		c.hard = inner.hard;
		c.embedded = true;
		/* A 6to4 address of a public IPv4 is an ordinary public IPv6 address. */
		return c;
	}
	for (size_t i = 0; i < sizeof(ranges6) / sizeof(ranges6[0]); i++) {
		const struct range6 *r = &ranges6[i];
		if (prefix_match(b, r->net, r->prefix)) {
			c.reason = r->reason;
			c.hard = r->hard;
			return c;
		}
	}
	return c; /* not reached: the last entry matches everything */
}

const char *ac_check4(const struct in_addr *a, const struct al_cidr_list *allow_private)
{
	struct ac_class c = ac_classify4(a);
	if (!c.reason)
		return NULL;
	/* The operator's exemption is exact: only addresses inside a listed CIDR, never the
	 * hard classes (which no CIDR should ever have meant to open). */
	if (!c.hard && al_cidr_list_contains(allow_private, AF_INET, &a->s_addr))
		return NULL;
	return c.reason;
}

const char *ac_check6(const struct in6_addr *a, const struct al_cidr_list *allow_private)
{
	struct ac_class c = ac_classify6(a);
	if (!c.reason)
		return NULL;
	if (c.hard)
		return c.reason;
	if (al_cidr_list_contains(allow_private, AF_INET6, a->s6_addr))
		return NULL;
	/* An embedded IPv4 reaches that IPv4 address, so an exemption for it covers it too. */
	if (c.embedded && al_cidr_list_contains(allow_private, AF_INET, &c.v4.s_addr))
		return NULL;
	return c.reason;
}

const char *ac_check(const struct sockaddr *sa, socklen_t len, const struct al_cidr_list *allow_private)
{
	if (!sa || len < (socklen_t)sizeof(sa_family_t))
		return "bad address";
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		struct sockaddr_in sin;
		memcpy(&sin, sa, sizeof(sin)); /* no alignment or aliasing assumptions */
		return ac_check4(&sin.sin_addr, allow_private);
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 sin6;
		memcpy(&sin6, sa, sizeof(sin6));
		return ac_check6(&sin6.sin6_addr, allow_private);
	}
	return "unsupported address family";
}
