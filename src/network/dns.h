/* dns.h — the sandbox's resolver, as pure code: one DNS query message in, one answer out (RFC
 * 1035). Allowed names get the synthetic address the caller chose; everything else NXDOMAIN at
 * once; nothing is ever forwarded. No I/O: capture.c serves it on the sandbox's UDP and TCP 53. */
#ifndef AL_NETWORK_DNS_H
#define AL_NETWORK_DNS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "network/allowlist.h"

#define DNS_HEADER    12
#define DNS_MAX_NAME  255  /* wire form, length bytes included (RFC 1035 3.1) */
#define DNS_MAX_QUERY 4096 /* larger queries (TCP) are refused unread: no real one comes near */
#define DNS_MAX_REPLY 512  /* every answer fits the classic UDP size: no truncation ever */
#define DNS_TTL	      60
#define DNS_TYPE_A    1
#define DNS_TYPE_AAAA 28
#define DNS_TYPE_IXFR 251
#define DNS_TYPE_AXFR 252
#define DNS_TYPE_ANY  255
#define DNS_CLASS_IN  1
#define DNS_CLASS_ANY 255

enum dns_rcode {
	DNS_NOERROR = 0,
	DNS_FORMERR = 1,
	DNS_SERVFAIL = 2,
	DNS_NXDOMAIN = 3,
	DNS_NOTIMP = 4,
	DNS_REFUSED = 5,
};

/* What a query asked and how it was answered (for the record and the counters). */
struct dns_query {
	uint16_t id;
	uint16_t qtype, qclass;
	char name[AL_HOST_MAX]; /* normalized (al_host_normalize); "" when the name is not a host name */
	enum dns_rcode rcode;
	unsigned answers; /* 0 or 1 */
};

/*
 * Looks up an allowed name: 1 with *addr set (the name's synthetic address), 0 when the name is
 * not allowed, -1 when no address can be given (the table is full: SERVFAIL). name is normalized.
 */
typedef int (*dns_lookup_fn)(void *ctx, const char *name, struct in_addr *addr);

/*
 * Answers msg[0..len) into out[0..cap) (cap >= DNS_MAX_REPLY): the reply's length, or 0 when no
 * reply may be sent (shorter than a header, or a response rather than a query: answering one
 * could start a loop). Malformed queries get FORMERR, other opcodes NOTIMP, other classes and
 * zone transfers REFUSED; for a query of an allowed name, A (and ANY) get the one synthetic
 * address, every other type NOERROR with no data (AAAA included: the sandbox has only IPv4
 * addresses that lead to airlock). The question is echoed byte for byte (its letter case too,
 * which some resolvers check). q (may be NULL) says what was asked and answered.
 */
size_t dns_answer(const uint8_t *msg, size_t len, dns_lookup_fn lookup, void *ctx, uint8_t *out, size_t cap,
		  struct dns_query *q);

#endif
