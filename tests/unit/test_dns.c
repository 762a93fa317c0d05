/* test_dns.c — the sandbox's resolver (src/network/dns.c) and the capture's name table
 * (src/network/capture.c): allowed names get their synthetic A record and empty AAAA, unknown
 * names NXDOMAIN, malformed queries FORMERR, responses no answer; the question is echoed as sent;
 * one name keeps one address, and an address maps back to its name only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "network/allowlist.h"
#include "network/capture.h"
#include "network/dns.h"

/* The lookup the capture gives dns_answer: the allowlist, then the table. */
struct ctx {
	struct al_allowlist *allow;
	struct cap_names *names;
	int full; /* 1: answer "no address left" */
};

static int lookup(void *c, const char *name, struct in_addr *addr)
{
	struct ctx *x = c;
	if (!al_allow_name(x->allow, name))
		return 0;
	if (x->full)
		return -1;
	return cap_names_addr(x->names, name, addr) == 0 ? 1 : -1;
}

static int setup(void **state)
{
	struct ctx *x = calloc(1, sizeof(*x));
	struct al_error err = {0};
	if (!x || al_allowlist_new(&x->allow) < 0 || cap_names_new(&x->names) < 0 ||
	    al_allowlist_add(x->allow, "pypi.org,*.pythonhosted.org,git.test:22,10.1.2.3", &err) < 0)
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *x = *state;
	al_allowlist_free(x->allow);
	cap_names_free(x->names);
	free(x);
	return 0;
}

/* A standard query for name (dotted) of qtype, with RD set; its length. */
static size_t query(uint8_t *q, uint16_t id, const char *name, uint16_t qtype)
{
	size_t n = 0;
	q[n++] = (uint8_t)(id >> 8);
	q[n++] = (uint8_t)id;
	q[n++] = 0x01; /* RD */
	q[n++] = 0;
	q[n++] = 0, q[n++] = 1; /* QDCOUNT */
	memset(q + n, 0, 6);
	n += 6;
	for (const char *p = name; *p;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		q[n++] = (uint8_t)l;
		memcpy(q + n, p, l);
		n += l;
		p += l + (dot ? 1 : 0);
	}
	q[n++] = 0;
	q[n++] = (uint8_t)(qtype >> 8), q[n++] = (uint8_t)qtype;
	q[n++] = 0, q[n++] = 1; /* IN */
	return n;
}

static unsigned rcode(const uint8_t *r)
{
	return r[3] & 0x0f;
}

static unsigned count(const uint8_t *r, int at)
{
	return (unsigned)(r[at] << 8 | r[at + 1]);
}

static void allowed_name_gets_a(void **state)
{
	struct ctx *x = *state;
	uint8_t q[512], r[DNS_MAX_REPLY];
	size_t ql = query(q, 0x1234, "PyPI.org", DNS_TYPE_A);
	struct dns_query info;
	size_t n = dns_answer(q, ql, lookup, x, r, sizeof(r), &info);
	assert_int_equal(n, ql + 16);
	assert_int_equal(r[0] << 8 | r[1], 0x1234);
	assert_true(r[2] & 0x80); /* a response */
	assert_true(r[2] & 0x01); /* RD echoed */
	assert_int_equal(rcode(r), DNS_NOERROR);
	assert_int_equal(count(r, 4), 1);
	assert_int_equal(count(r, 6), 1);
	/* The question comes back byte for byte: the case as sent. */
	assert_memory_equal(r + DNS_HEADER, q + DNS_HEADER, ql - DNS_HEADER);
	const uint8_t *a = r + ql;
	assert_int_equal(a[0], 0xc0);
	assert_int_equal(a[1], DNS_HEADER);
	assert_int_equal(count(a, 2), DNS_TYPE_A);
	assert_int_equal(count(a, 10), 4);
	char text[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, a + 12, text, sizeof(text));
	assert_string_equal(text, "127.18.0.1");
	assert_string_equal(info.name, "pypi.org");
	assert_int_equal(info.answers, 1);

	/* A wildcard's subdomain, and a port-22 name: each a name of its own. */
	ql = query(q, 2, "files.pythonhosted.org", DNS_TYPE_A);
	assert_int_equal(dns_answer(q, ql, lookup, x, r, sizeof(r), NULL), ql + 16);
	inet_ntop(AF_INET, r + ql + 12, text, sizeof(text));
	assert_string_equal(text, "127.18.0.2");
	ql = query(q, 3, "git.test", DNS_TYPE_A);
	assert_int_equal(dns_answer(q, ql, lookup, x, r, sizeof(r), NULL), ql + 16);
	/* The same name again: the same address. */
	ql = query(q, 4, "pypi.org.", DNS_TYPE_A);
	assert_int_equal(dns_answer(q, ql, lookup, x, r, sizeof(r), NULL), ql + 16);
	inet_ntop(AF_INET, r + ql + 12, text, sizeof(text));
	assert_string_equal(text, "127.18.0.1");
}

static void other_types_empty(void **state)
{
	struct ctx *x = *state;
	uint8_t q[512], r[DNS_MAX_REPLY];
	const uint16_t types[] = {DNS_TYPE_AAAA, 65 /* HTTPS */, 15 /* MX */, 16 /* TXT */};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t ql = query(q, 7, "pypi.org", types[i]);
		assert_int_equal(dns_answer(q, ql, lookup, x, r, sizeof(r), NULL), ql);
		assert_int_equal(rcode(r), DNS_NOERROR);
		assert_int_equal(count(r, 6), 0);
	}
}

static void unknown_names_nxdomain(void **state)
{
	struct ctx *x = *state;
	uint8_t q[512], r[DNS_MAX_REPLY];
	/* Not listed; the bare domain of a wildcard; a literal's text; not a host name at all. */
	const char *names[] = {"evil.test", "pythonhosted.org", "10.1.2.3", "_srv._tcp.pypi.org", "a.pypi.org"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		for (int t = 0; t < 2; t++) {
			size_t ql = query(q, 9, names[i], t ? DNS_TYPE_AAAA : DNS_TYPE_A);
			struct dns_query info;
			assert_int_equal(dns_answer(q, ql, lookup, x, r, sizeof(r), &info), ql);
			assert_int_equal(rcode(r), DNS_NXDOMAIN);
			assert_int_equal(info.rcode, DNS_NXDOMAIN);
			assert_int_equal(count(r, 6), 0);
		}
	}
	assert_int_equal(cap_names_count(x->names), 0);
}

static void full_table_servfail(void **state)
{
	struct ctx *x = *state;
	uint8_t q[512], r[DNS_MAX_REPLY];
	x->full = 1;
	size_t ql = query(q, 1, "pypi.org", DNS_TYPE_A);
	assert_int_equal(dns_answer(q, ql, lookup, x, r, sizeof(r), NULL), ql);
	assert_int_equal(rcode(r), DNS_SERVFAIL);
	x->full = 0;
}

/* Malformed: FORMERR, with the id; a response or a runt: nothing at all. */
static void malformed(void **state)
{
	struct ctx *x = *state;
	uint8_t q[512], r[DNS_MAX_REPLY];
	size_t ql = query(q, 0xbeef, "pypi.org", DNS_TYPE_A);
	assert_int_equal(dns_answer(q, 11, lookup, x, r, sizeof(r), NULL), 0);
	/* Cut inside the name, and before the type. */
	assert_int_equal(dns_answer(q, DNS_HEADER + 3, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_FORMERR);
	assert_int_equal(r[0] << 8 | r[1], 0xbeef);
	assert_int_equal(dns_answer(q, ql - 2, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_FORMERR);
	/* Two questions; an answer section; a compression pointer; a label of 64. */
	uint8_t b[512];
	memcpy(b, q, ql);
	b[5] = 2;
	assert_int_equal(dns_answer(b, ql, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_FORMERR);
	memcpy(b, q, ql);
	b[7] = 1;
	assert_int_equal(dns_answer(b, ql, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_FORMERR);
	memcpy(b, q, ql);
	b[DNS_HEADER] = 0xc0;
	b[DNS_HEADER + 1] = 0x0c;
	assert_int_equal(dns_answer(b, ql, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_FORMERR);
	memcpy(b, q, ql);
	b[DNS_HEADER] = 64;
	assert_int_equal(dns_answer(b, ql, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_FORMERR);
	/* A name of more than 255 bytes: five labels of 63. */
	char longname[5 * 64];
	for (int i = 0; i < 5; i++) {
		memset(longname + i * 64, 'a', 63);
		longname[i * 64 + 63] = i == 4 ? 0 : '.';
	}
	size_t ll = query(b, 5, longname, DNS_TYPE_A);
	assert_int_equal(dns_answer(b, ll, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_FORMERR);
	/* A response is never answered (no loops); another opcode is NOTIMP; CHAOS is REFUSED. */
	memcpy(b, q, ql);
	b[2] |= 0x80;
	assert_int_equal(dns_answer(b, ql, lookup, x, r, sizeof(r), NULL), 0);
	memcpy(b, q, ql);
	b[2] = 0x28; /* opcode 5, UPDATE */
	assert_int_equal(dns_answer(b, ql, lookup, x, r, sizeof(r), NULL), DNS_HEADER);
	assert_int_equal(rcode(r), DNS_NOTIMP);
	memcpy(b, q, ql);
	b[ql - 1] = 3;
	assert_int_equal(dns_answer(b, ql, lookup, x, r, sizeof(r), NULL), ql);
	assert_int_equal(rcode(r), DNS_REFUSED);
	/* An EDNS OPT record in the additional section is accepted (and not echoed). */
	memcpy(b, q, ql);
	b[11] = 1;
	static const uint8_t opt[] = {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
	memcpy(b + ql, opt, sizeof(opt));
	assert_int_equal(dns_answer(b, ql + sizeof(opt), lookup, x, r, sizeof(r), NULL), ql + 16);
	assert_int_equal(count(r, 10), 0);
}

static void names_table(void **state)
{
	(void)state;
	struct cap_names *t;
	assert_int_equal(cap_names_new(&t), 0);
	struct in_addr a, b;
	char name[AL_HOST_MAX];
	assert_int_equal(cap_names_addr(t, "one.test", &a), 0);
	assert_int_equal(cap_names_addr(t, "two.test", &b), 0);
	assert_int_not_equal(a.s_addr, b.s_addr);
	assert_true(cap_names_name(t, &b, name));
	assert_string_equal(name, "two.test");
	/* Addresses it never gave name nothing: the next one, the network's own, loopback. */
	struct in_addr o = {.s_addr = htonl(ntohl(b.s_addr) + 1)};
	assert_false(cap_names_name(t, &o, name));
	o.s_addr = htonl(AL_CAPTURE_NET);
	assert_false(cap_names_name(t, &o, name));
	o.s_addr = htonl(INADDR_LOOPBACK);
	assert_false(cap_names_name(t, &o, name));
	/* Full at CAP_MAX_NAMES. */
	char n[32];
	for (int i = 2; i < CAP_MAX_NAMES; i++) {
		snprintf(n, sizeof(n), "n%d.test", i);
		assert_int_equal(cap_names_addr(t, n, &a), 0);
	}
	assert_int_equal(cap_names_addr(t, "one-more.test", &a), -ENOSPC);
	assert_int_equal(cap_names_addr(t, "one.test", &a), 0); /* known names still answer */
	assert_int_equal(cap_names_count(t), CAP_MAX_NAMES);
	cap_names_free(t);
}

static void allowlist_ports_and_names(void **state)
{
	struct ctx *x = *state;
	uint16_t ports[4];
	assert_int_equal(al_allowlist_ports(x->allow, ports, 4), 2);
	assert_int_equal(ports[0], 443);
	assert_int_equal(ports[1], 22);
	assert_int_equal(al_allowlist_ports(x->allow, ports, 1), 2); /* more than max: max + 1 */
	assert_true(al_allow_name(x->allow, "git.test"));
	assert_false(al_allow_name(x->allow, "10.1.2.3"));
	assert_false(al_allow_name(x->allow, ""));
	assert_false(al_allow_name(NULL, "pypi.org"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(allowed_name_gets_a, setup, teardown),
		cmocka_unit_test_setup_teardown(other_types_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_names_nxdomain, setup, teardown),
		cmocka_unit_test_setup_teardown(full_table_servfail, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed, setup, teardown),
		cmocka_unit_test(names_table),
		cmocka_unit_test_setup_teardown(allowlist_ports_and_names, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
