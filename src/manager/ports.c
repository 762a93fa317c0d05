/* ports.c — reading a sandbox's listening sockets from its /proc/net/tcp and tcp6 tables (pure). */
#include "manager/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TCP_LISTEN 0x0A /* the kernel's TCP_LISTEN, as the table's "st" column prints it */

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : -1;
}

/* n hex digits at p into *v: false unless all are. */
static bool hex_n(const char *p, size_t n, uint32_t *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return false;
		*v = *v << 4 | (uint32_t)h;
	}
	return true;
}

/* The kernel prints an address as its 32-bit words in host order (%08X each): read back the same
 * way, the words are the address's bytes again. */
static bool parse_addr(const char *p, bool v6, struct in6_addr *a6, struct in_addr *a4)
{
	uint32_t w[4];
	size_t words = v6 ? 4 : 1;
	for (size_t i = 0; i < words; i++)
		if (!hex_n(p + 8 * i, 8, &w[i]))
			return false;
	if (v6)
		memcpy(a6->s6_addr, w, sizeof(w));
	else
		memcpy(&a4->s_addr, w, sizeof(w[0]));
	return true;
}

/* Whether a server bound there is reachable from the sandbox's loopback. */
static bool reachable(bool v6, const struct in6_addr *a6, const struct in_addr *a4)
{
	if (!v6)
		return a4->s_addr == htonl(INADDR_ANY) || (ntohl(a4->s_addr) >> 24) == 127;
	if (IN6_IS_ADDR_UNSPECIFIED(a6) || IN6_IS_ADDR_LOOPBACK(a6))
		return true;
	return IN6_IS_ADDR_V4MAPPED(a6) && (a6->s6_addr[12] == 127 || memcmp(a6->s6_addr + 12, "\0\0\0\0", 4) == 0);
}

/* One line: "  N: ADDR:PORT REMOTE:PORT ST ...". True with *out filled for a LISTEN socket we report. */
static bool parse_line(const char *l, size_t len, bool v6, struct srv_port_info *out)
{
	size_t alen = v6 ? 32 : 8;
	const char *colon = memchr(l, ':', len);
	if (!colon)
		return false;
	const char *p = colon + 1;
	while (p < l + len && *p == ' ')
		p++;
	/* ADDR ':' PORT(4) ' ' REMADDR ':' PORT(4) ' ' ST(2) */
	size_t need = alen + 1 + 4 + 1 + alen + 1 + 4 + 1 + 2;
	if ((size_t)(l + len - p) < need || p[alen] != ':' || p[alen + 5] != ' ')
		return false;
	const char *st = p + alen + 5 + 1 + alen + 5 + 1;
	uint32_t port, state;
	struct in6_addr a6;
	struct in_addr a4;
	if (!parse_addr(p, v6, &a6, &a4) || !hex_n(p + alen + 1, 4, &port) || !hex_n(st, 2, &state) ||
	    (st + 2 < l + len && st[2] != ' '))
		return false;
	if (state != TCP_LISTEN || port == 0 || !reachable(v6, &a6, &a4))
		return false;
	out->port = (uint16_t)port;
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, v6 ? (const void *)&a6 : (const void *)&a4, out->addr,
		       sizeof(out->addr)))
		snprintf(out->addr, sizeof(out->addr), "?");
	return true;
}

size_t ports_parse_tcp(const char *text, bool v6, struct srv_port_info *out, size_t *n, size_t cap)
{
	size_t added = 0;
	for (const char *l = text; l && *l && *n < cap;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		if (parse_line(l, len, v6, &out[*n])) {
			(*n)++;
			added++;
		}
		l = nl ? nl + 1 : NULL;
	}
	return added;
}

static int cmp_port(const void *a, const void *b)
{
	const struct srv_port_info *x = a, *y = b;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return strcmp(x->addr, y->addr);
}

size_t ports_sort_unique(struct srv_port_info *v, size_t n)
{
	if (n < 2)
		return n;
	qsort(v, n, sizeof(*v), cmp_port);
	size_t k = 1;
	for (size_t i = 1; i < n; i++)
		if (cmp_port(&v[i], &v[k - 1]) != 0)
			v[k++] = v[i];
	return k;
}
