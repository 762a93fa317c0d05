/* test_addrclass.c — unit tests for the egress proxy's address classification (src/network/addrclass.c):
 * every forbidden range, the addresses just inside and just outside each, and the IPv6 forms
 * that carry an IPv4 address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>

#include "network/addrclass.h"

struct row {
	const char *addr;
	const char *reason; /* NULL: public, may be connected to */
};

static const struct row rows[] = {
	/* 0/8 */
	{"0.0.0.0", "unspecified"},
	{"0.255.255.255", "unspecified"},
	{"1.0.0.0", NULL},
	/* 127/8 */
	{"126.255.255.255", NULL},
	{"127.0.0.0", "loopback"},
	{"127.0.0.1", "loopback"},
	{"127.255.255.255", "loopback"},
	{"128.0.0.0", NULL},
	/* 10/8 */
	{"9.255.255.255", NULL},
	{"10.0.0.0", "private"},
	{"10.255.255.255", "private"},
	{"11.0.0.0", NULL},
	/* 100.64/10 and the metadata address inside */
	{"100.63.255.255", NULL},
	{"100.64.0.0", "cgnat"},
	{"100.127.255.255", "cgnat"},
	{"100.128.0.0", NULL},
	{"100.100.100.200", "metadata"},
	{"100.100.100.199", "cgnat"},
	/* 169.254/16 */
	{"169.253.255.255", NULL},
	{"169.254.0.0", "link-local/metadata"},
	{"169.254.169.254", "link-local/metadata"},
	{"169.254.170.2", "link-local/metadata"},
	{"169.254.255.255", "link-local/metadata"},
	{"169.255.0.0", NULL},
	/* 172.16/12 */
	{"172.15.255.255", NULL},
	{"172.16.0.0", "private"},
	{"172.31.255.255", "private"},
	{"172.32.0.0", NULL},
	/* 192.0.0/24, 192.0.2/24, 192.88.99/24 */
	{"191.255.255.255", NULL},
	{"192.0.0.0", "reserved"},
	{"192.0.0.255", "reserved"},
	{"192.0.1.0", NULL},
	{"192.0.2.0", "documentation"},
	{"192.0.2.255", "documentation"},
	{"192.0.3.0", NULL},
	{"192.88.98.255", NULL},
	{"192.88.99.1", "reserved"},
	{"192.88.100.0", NULL},
	/* 192.168/16 */
	{"192.167.255.255", NULL},
	{"192.168.0.0", "private"},
	{"192.168.255.255", "private"},
	{"192.169.0.0", NULL},
	/* 198.18/15 */
	{"198.17.255.255", NULL},
	{"198.18.0.0", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"198.20.0.0", NULL},
	/* 198.51.100/24, 203.0.113/24 */
	{"198.51.99.255", NULL},
	{"198.51.100.0", "documentation"},
	{"198.51.100.255", "documentation"},
	{"198.51.101.0", NULL},
	{"203.0.112.255", NULL},
	{"203.0.113.0", "documentation"},
	{"203.0.113.255", "documentation"},
	{"203.0.114.0", NULL},
	/* 224/4, 240/4, broadcast */
	{"223.255.255.255", NULL},
	{"224.0.0.0", "multicast"},
	{"239.255.255.255", "multicast"},
	{"240.0.0.0", "reserved"},
	{"255.255.255.254", "reserved"},
	{"255.255.255.255", "broadcast"},
	{"8.8.8.8", NULL},
	{"151.101.0.223", NULL},
	/* IPv6 basics */
	{"::", "unspecified"},
	{"::1", "loopback"},
	{"::2", "unspecified"}, /* IPv4-compatible 0.0.0.2 */
	{"2606:4700::6810:84e5", NULL},
	{"2a04:4e42::223", NULL},
	{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
	{"2000::", NULL},
	{"3fff::", "documentation"},
	{"3fff:fff:ffff::", "documentation"},
	{"3fff:1000::", NULL},
	{"3ffe:ffff::", NULL},
	{"4000::", "reserved"},
	{"100::1", "reserved"}, /* discard-only */
	/* fe80::/10, fec0::/10, fc00::/7, ff00::/8 */
	{"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
	{"fe80::", "link-local"},
	{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
	{"fec0::1", "private"},
	{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
	{"fc00::", "private"},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
	{"fd00:ec2::254", "metadata"},
	{"fd00:ec2::253", "private"},
	{"ff00::", "multicast"},
	{"ff02::1", "multicast"},
	{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
	/* 2001::/23 and its parts */
	{"2001::1", "teredo"},
	{"2001:0:ffff::", "teredo"},
	{"2001:2::1", "benchmarking"},
	{"2001:1::1", "reserved"},
	{"2001:1ff:ffff::", "reserved"},
	{"2001:200::", NULL},
	{"2001:db7:ffff::", NULL},
	{"2001:db8::", "documentation"},
	{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
	{"2001:db9::", NULL},
	/* IPv4-mapped, -compatible, SIIT, NAT64: classified as the IPv4 address inside */
	{"::ffff:127.0.0.1", "loopback"},
	{"::ffff:10.1.2.3", "private"},
	{"::ffff:169.254.169.254", "link-local/metadata"},
	{"::ffff:0.0.0.0", "unspecified"},
	{"::ffff:8.8.8.8", NULL},
	{"::127.0.0.1", "loopback"},
	{"::192.168.0.1", "private"},
	{"::8.8.8.8", NULL},
	{"::ffff:0:127.0.0.1", "loopback"},
	{"::ffff:0:8.8.8.8", NULL},
	{"64:ff9b::127.0.0.1", "loopback"},
	{"64:ff9b::169.254.169.254", "link-local/metadata"},
	{"64:ff9b::8.8.8.8", NULL},
	{"64:ff9b:1::1", "private"},
	{"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
	/* 6to4: the IPv4 address in bits 16-47 */
	{"2002:7f00:1::", "loopback"},
	{"2002:a9fe:a9fe::1", "link-local/metadata"},
	{"2002:c0a8:101::", "private"},
	{"2002:808:808::1", NULL},
	{"2002:e000:1::", "multicast"},
};

static const char *reason(const struct ac_class *c)
{
	return c->reason ? c->reason : "(public)";
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct ac_class c = {0};
		struct in_addr a4;
		struct in6_addr a6;
		if (inet_pton(AF_INET, r->addr, &a4) == 1) {
			c = ac_classify4(&a4);
			const char *v = ac_check4(&a4, NULL);
			if ((v == NULL) != (c.reason == NULL))
				fail_msg("%s: ac_check4 disagrees with ac_classify4", r->addr);
		} else if (inet_pton(AF_INET6, r->addr, &a6) == 1) {
			c = ac_classify6(&a6);
			const char *v = ac_check6(&a6, NULL);
			if ((v == NULL) != (c.reason == NULL))
				fail_msg("%s: ac_check6 disagrees with ac_classify6", r->addr);
		} else {
			fail_msg("bad test address %s", r->addr);
		}
		const char *want = r->reason ? r->reason : "(public)";
		if (strcmp(reason(&c), want) != 0)
			fail_msg("%s: got %s, want %s", r->addr, reason(&c), want);
	}
}

static const char *check_str(const char *addr, const struct al_cidr_list *ap)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
		len = sizeof(*s4);
	}
	return ac_check((const struct sockaddr *)&ss, len, ap);
}

static void test_allow_private(void **state)
{
	(void)state;
	struct al_cidr_list *ap = NULL;
	struct al_error err = {0};
	assert_int_equal(al_cidr_list_new(&ap), 0);
	assert_int_equal(al_cidr_list_add(ap, "10.0.0.0/8,fd00::/8,127.0.0.1/32,224.0.0.0/8,0.0.0.0/8,ff00::/8", &err),
			 0);
	assert_null(check_str("10.1.2.3", ap));
	assert_string_equal(check_str("11.0.0.0", ap) ? "x" : "public", "public");
	assert_string_equal(check_str("172.16.0.1", ap), "private");
	assert_null(check_str("127.0.0.1", ap));
	assert_string_equal(check_str("127.0.0.2", ap), "loopback");
	assert_null(check_str("fd12::1", ap));
	assert_string_equal(check_str("fc00::1", ap), "private");
	/* An IPv6 form carrying an exempt IPv4 address is exempt as well, and only that. */
	assert_null(check_str("::ffff:10.9.9.9", ap));
	assert_null(check_str("64:ff9b::10.9.9.9", ap));
	assert_null(check_str("2002:0a00:1::", ap));
	assert_string_equal(check_str("::ffff:192.168.0.1", ap), "private");
	/* Hard classes stay forbidden whatever the list says. */
	assert_string_equal(check_str("224.0.0.1", ap), "multicast");
	assert_string_equal(check_str("0.0.0.0", ap), "unspecified");
	assert_string_equal(check_str("ff02::1", ap), "multicast");
	assert_string_equal(check_str("::ffff:0.0.0.0", ap), "unspecified");
	assert_string_equal(check_str("::", ap), "unspecified");
	/* Without a list, nothing forbidden is exempt. */
	assert_string_equal(check_str("10.1.2.3", NULL), "private");
	assert_null(check_str("8.8.8.8", NULL));
	al_cidr_list_free(ap);
}

static void test_bad_sockaddr(void **state)
{
	(void)state;
	struct sockaddr_storage ss = {0};
	ss.ss_family = AF_INET;
	assert_non_null(ac_check((const struct sockaddr *)&ss, 4, NULL)); /* short */
	ss.ss_family = AF_INET6;
	assert_non_null(ac_check((const struct sockaddr *)&ss, sizeof(struct sockaddr_in), NULL));
	ss.ss_family = AF_UNIX;
	assert_non_null(ac_check((const struct sockaddr *)&ss, sizeof(ss), NULL));
	assert_non_null(ac_check(NULL, 0, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_allow_private),
		cmocka_unit_test(test_bad_sockaddr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
