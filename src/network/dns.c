/* dns.c — the sandbox's resolver: parse one query, answer it from the allowlist; pure.
 *
 * Safe by construction: every read is bounded by the message's length, the reply is built in
 * the caller's buffer from the echoed question (at most DNS_MAX_NAME + 4 bytes) and at most one
 * fixed-size answer, and nothing of the query is ever sent anywhere but back to its sender. A
 * query whose name is not on the allowlist learns nothing but NXDOMAIN: no upstream resolver
 * is asked, so a name cannot carry data out of the sandbox through DNS either.
 */
#include "network/dns.h"

#include <string.h>

#define FLAG_QR	    0x8000u
#define FLAG_AA	    0x0400u
#define FLAG_TC	    0x0200u
#define FLAG_RD	    0x0100u
#define FLAG_RA	    0x0080u
#define OPCODE(f)   (((f) >> 11) & 0xfu)
#define OPCODE_MASK 0x7800u

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A label's bytes as a host name may hold them; anything else makes the name no host's. */
static bool host_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/*
 * The question's name at msg[*at..len): its text (dotted, "" if some label cannot be a host
 * name's) and *at past it. -1 for a malformed name: running past the end, a compression pointer
 * (a query's only name comes first, so it has nothing to point at), a reserved label type, or
 * more than DNS_MAX_NAME bytes.
 */
static int parse_name(const uint8_t *msg, size_t len, size_t *at, char text[AL_HOST_MAX], bool *is_host)
{
	size_t p = *at, tl = 0, wire = 0;
	*is_host = true;
	for (;;) {
		if (p >= len)
			return -1;
		uint8_t l = msg[p++];
		if (++wire > DNS_MAX_NAME)
			return -1;
		if (l == 0)
			break;
		if (l & 0xc0)
			return -1;
		if (p + l > len || (wire += l) > DNS_MAX_NAME)
			return -1;
		for (size_t i = 0; i < l; i++)
			*is_host = *is_host && host_byte(msg[p + i]);
		if (*is_host && tl + l + 1 < AL_HOST_MAX) {
			if (tl)
				text[tl++] = '.';
			memcpy(text + tl, msg + p, l);
			tl += l;
		} else {
			*is_host = false;
		}
		p += l;
	}
	text[tl] = 0;
	*is_host = *is_host && tl > 0;
	*at = p;
	return 0;
}

/* The header of a reply to a query with flags f: the id, the opcode and RD echoed. */
static size_t put_header(uint8_t *out, uint16_t id, uint16_t f, enum dns_rcode rc, uint16_t qd, uint16_t an)
{
	put16(out, id);
	put16(out + 2, (uint16_t)(FLAG_QR | (f & OPCODE_MASK) | FLAG_AA | (f & FLAG_RD) | FLAG_RA | rc));
	put16(out + 4, qd);
	put16(out + 6, an);
	put16(out + 8, 0);
	put16(out + 10, 0);
	return DNS_HEADER;
}

/* The question's verdict before any lookup: a reason to refuse it outright, or NOERROR. */
static enum dns_rcode screen(uint16_t qtype, uint16_t qclass)
{
	if (qclass != DNS_CLASS_IN && qclass != DNS_CLASS_ANY)
		return DNS_REFUSED; /* CHAOS's version.bind and the like: nothing of ours to say */
	if (qtype == DNS_TYPE_AXFR || qtype == DNS_TYPE_IXFR || qtype == 0)
		return DNS_REFUSED;
	return DNS_NOERROR;
}

/* The answer's decision for a well-formed question: its rcode and, for A, the address. */
static enum dns_rcode decide(struct dns_query *q, bool is_host, dns_lookup_fn lookup, void *ctx, struct in_addr *addr)
{
	enum dns_rcode rc = screen(q->qtype, q->qclass);
	if (rc != DNS_NOERROR)
		return rc;
	char norm[AL_HOST_MAX];
	enum al_host_kind kind;
	if (!is_host || al_host_normalize(q->name, strlen(q->name), norm, &kind) < 0 || kind != AL_HOST_NAME) {
		q->name[0] = 0;
		return DNS_NXDOMAIN;
	}
	memcpy(q->name, norm, sizeof(norm));
	int r = lookup ? lookup(ctx, q->name, addr) : 0;
	if (r < 0)
		return DNS_SERVFAIL;
	if (r == 0)
		return DNS_NXDOMAIN;
	q->answers = q->qtype == DNS_TYPE_A || q->qtype == DNS_TYPE_ANY;
	return DNS_NOERROR;
}

/* One A record naming the question (a pointer to offset 12) with addr. */
static size_t put_a(uint8_t *p, const struct in_addr *addr)
{
	put16(p, 0xc000 | DNS_HEADER);
	put16(p + 2, DNS_TYPE_A);
	put16(p + 4, DNS_CLASS_IN);
	put16(p + 6, 0);
	put16(p + 8, DNS_TTL);
	put16(p + 10, 4);
	memcpy(p + 12, &addr->s_addr, 4);
	return 16;
}

size_t dns_answer(const uint8_t *msg, size_t len, dns_lookup_fn lookup, void *ctx, uint8_t *out, size_t cap,
		  struct dns_query *q)
{
	struct dns_query local;
	if (!q)
		q = &local;
	memset(q, 0, sizeof(*q));
	if (len < DNS_HEADER || cap < DNS_MAX_REPLY)
		return 0;
	uint16_t f = get16(msg + 2);
	q->id = get16(msg);
	if (f & FLAG_QR)
		return 0;
	q->rcode = DNS_FORMERR;
	if (OPCODE(f) != 0) {
		q->rcode = DNS_NOTIMP;
		return put_header(out, q->id, f, q->rcode, 0, 0);
	}
	/* One question, no answers or authority: what every stub resolver sends. The additional
	 * section (an EDNS OPT record) is ignored, and so answered without one (RFC 6891 7). */
	if ((f & FLAG_TC) || get16(msg + 4) != 1 || get16(msg + 6) != 0 || get16(msg + 8) != 0)
		return put_header(out, q->id, f, q->rcode, 0, 0);
	size_t at = DNS_HEADER;
	bool is_host;
	if (parse_name(msg, len, &at, q->name, &is_host) < 0 || at + 4 > len) {
		q->name[0] = 0;
		return put_header(out, q->id, f, q->rcode, 0, 0);
	}
	q->qtype = get16(msg + at);
	q->qclass = get16(msg + at + 2);
	size_t qlen = at + 4 - DNS_HEADER;
	struct in_addr addr = {0};
	q->rcode = decide(q, is_host, lookup, ctx, &addr);
	size_t n = put_header(out, q->id, f, q->rcode, 1, (uint16_t)q->answers);
	memcpy(out + n, msg + DNS_HEADER, qlen);
	n += qlen;
	if (q->answers)
		n += put_a(out + n, &addr);
	return n;
}
