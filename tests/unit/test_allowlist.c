/* test_allowlist.c — unit tests for the egress allowlist and allow_private CIDRs (src/network/allowlist.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>

#include "network/allowlist.h"

static struct al_allowlist *list(const char *spec)
{
	struct al_allowlist *al = NULL;
	struct al_error err = {0};
	assert_int_equal(al_allowlist_new(&al), 0);
	if (al_allowlist_add(al, spec, &err) != 0)
		fail_msg("al_allowlist_add(\"%s\"): %s", spec, err.msg);
	return al;
}

/* Bad input fails with -EINVAL, names the entry in the message and adds nothing. */
static void expect_bad(const char *spec, const char *named)
{
	struct al_allowlist *al = NULL;
	struct al_error err = {0};
	assert_int_equal(al_allowlist_new(&al), 0);
	int r = al_allowlist_add(al, spec, &err);
	if (r != -EINVAL)
		fail_msg("al_allowlist_add(\"%s\") = %d, want -EINVAL", spec, r);
	assert_int_equal(err.code, -EINVAL);
	if (named && !strstr(err.msg, named))
		fail_msg("message \"%s\" does not name \"%s\"", err.msg, named);
	assert_int_equal(al_allowlist_count(al), 0);
	al_allowlist_free(al);
}

static void test_exact_and_ports(void **state)
{
	(void)state;
	struct al_allowlist *al = list("pypi.org, example.com:8443");
	assert_true(al_allow_match(al, "pypi.org", 443));
	assert_true(al_allow_match(al, "PyPI.ORG", 443));
	assert_true(al_allow_match(al, "pypi.org.", 443));
	assert_false(al_allow_match(al, "pypi.org", 80));
	assert_false(al_allow_match(al, "pypi.org", 0));
	assert_false(al_allow_match(al, "www.pypi.org", 443));
	assert_false(al_allow_match(al, "pypi.org.evil.com", 443));
	assert_false(al_allow_match(al, "xpypi.org", 443));
	assert_true(al_allow_match(al, "example.com", 8443));
	assert_false(al_allow_match(al, "example.com", 443)); /* only the listed port */
	assert_false(al_allow_match(al, "pypi.org..", 443));
	assert_false(al_allow_match(al, "", 443));
	assert_false(al_allow_match(al, NULL, 443));
	assert_false(al_allow_match(NULL, "pypi.org", 443));
	al_allowlist_free(al);
}

static void test_suffix(void **state)
{
	(void)state;
	struct al_allowlist *al = list("*.pythonhosted.org");
	assert_true(al_allow_match(al, "files.pythonhosted.org", 443));
	assert_true(al_allow_match(al, "a.b.pythonhosted.org", 443));
	assert_true(al_allow_match(al, "FILES.PythonHosted.org.", 443));
	assert_false(al_allow_match(al, "pythonhosted.org", 443)); /* not the bare domain */
	assert_false(al_allow_match(al, "evilpythonhosted.org", 443));
	assert_false(al_allow_match(al, "files.pythonhosted.org.evil", 443));
	assert_false(al_allow_match(al, "files.pythonhosted.org", 80));
	al_allowlist_free(al);
}

static void test_ip_literals(void **state)
{
	(void)state;
	struct al_allowlist *al = list("pypi.org,203.0.113.5,[2001:db8::1]:8443,2001:db8::2");
	assert_true(al_allow_match(al, "203.0.113.5", 443));
	assert_false(al_allow_match(al, "203.0.113.6", 443));
	assert_true(al_allow_match(al, "2001:db8::1", 8443));
	assert_true(al_allow_match(al, "2001:0db8:0:0::1", 8443)); /* any spelling of the address */
	assert_false(al_allow_match(al, "2001:db8::1", 443));
	assert_true(al_allow_match(al, "2001:db8::2", 443));
	/* Non-canonical IPv4 spellings are not names and not literals. */
	assert_false(al_allow_match(al, "203.0.113.05", 443));
	assert_false(al_allow_match(al, "0xcb.0.113.5", 443));
	assert_false(al_allow_match(al, "3405803781", 443));
	/* Zone ids and bracketed text are not hosts here. */
	assert_false(al_allow_match(al, "2001:db8::2%eth0", 443));
	assert_false(al_allow_match(al, "[2001:db8::2]", 443));
	al_allowlist_free(al);
	/* A pattern over numeric labels is no name (and so can never match a literal). */
	expect_bad("*.0.113.5", NULL);
}

static void test_all_or_nothing_and_append(void **state)
{
	(void)state;
	struct al_allowlist *al = list("a.example");
	struct al_error err = {0};
	assert_int_equal(al_allowlist_add(al, "b.example,bad..example", &err), -EINVAL);
	assert_int_equal(al_allowlist_count(al), 1);
	assert_false(al_allow_match(al, "b.example", 443));
	assert_int_equal(al_allowlist_add(al, "c.example:80", &err), 0);
	assert_int_equal(al_allowlist_count(al), 2);
	assert_true(al_allow_match(al, "c.example", 80));
	al_allowlist_free(al);
}

static void test_bad_entries(void **state)
{
	(void)state;
	expect_bad("", NULL);
	expect_bad("pypi.org,", "\"\"");
	expect_bad(",pypi.org", NULL);
	expect_bad("*", "\"*\"");
	expect_bad("*.", "\"*.\"");
	expect_bad("*.com", "*.com");
	expect_bad("a..b", "a..b");
	expect_bad(".pypi.org", NULL);
	expect_bad("pypi.org:0", "pypi.org:0");
	expect_bad("pypi.org:65536", "65536");
	expect_bad("pypi.org:", NULL);
	expect_bad("pypi.org:0443", NULL);
	expect_bad("pypi.org:-1", NULL);
	expect_bad("pypi.org:44 3", NULL);
	expect_bad("py pi.org", NULL);
	expect_bad("bücher.de", NULL);
	expect_bad("under_score.org", NULL);
	expect_bad("-lead.org", NULL);
	expect_bad("trail-.org", NULL);
	expect_bad("a.*.org", NULL);
	expect_bad("*.*.org", NULL);
	expect_bad("*.1.2.3.4", NULL);
	expect_bad("127.1", "127.1");
	expect_bad("0x7f.0.0.1", NULL);
	expect_bad("2130706433", NULL);
	expect_bad("[1.2.3.4]", NULL);
	expect_bad("[pypi.org]:443", NULL);
	expect_bad("[::1", NULL);
	expect_bad("[::1]x", NULL);
	expect_bad("::1:443:", NULL);
	expect_bad("fe80::1%eth0", NULL);
	expect_bad("http://pypi.org", NULL);
	expect_bad("pypi.org/simple/../admin", NULL);
	expect_bad("pypi.org/a%2e%2e/b", NULL);
	expect_bad("pypi.org/a?b", NULL);
	expect_bad("FETCH pypi.org", NULL);
	expect_bad("GET||HEAD pypi.org", NULL);
	expect_bad("evil\x1b[2J.org", "evil?[2J.org"); /* the message is printable */
	/* Labels and lengths at their limits. */
	char label64[80], name254[300];
	memset(label64, 'a', 64);
	strcpy(label64 + 64, ".org");
	expect_bad(label64, NULL);
	label64[63] = '.';
	label64[64] = 0;
	strcat(label64, "org");
	struct al_allowlist *al = list(label64); /* 63 + ".org" */
	al_allowlist_free(al);
	/* 253 characters is the longest name: 3 x (63 + '.') + 61. */
	name254[0] = 0;
	for (int i = 0; i < 3; i++)
		strcat(name254, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.");
	strcat(name254, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(strlen(name254), 253);
	al = list(name254);
	assert_true(al_allow_match(al, name254, 443));
	al_allowlist_free(al);
	strcat(name254, "a");
	expect_bad(name254, NULL);
}

/* Request rules: methods and path prefixes, seen only where airlock terminates TLS. */
static void test_rules(void **state)
{
	(void)state;
	struct al_allowlist *al = list("GET|HEAD pypi.org/simple/,POST api.example.com/v1/,open.example.com");
	char rule[256];
	assert_true(al_allow_match(al, "pypi.org", 443));
	assert_true(al_allow_sees(al, "pypi.org", 443));
	assert_false(al_allow_sees(al, "open.example.com", 443));
	assert_false(al_allow_sees(al, "other.example.com", 443));
	assert_int_equal(al_allow_request(al, "pypi.org", 443, "GET", "/simple/numpy/", rule, sizeof(rule)), 0);
	assert_string_equal(rule, "GET|HEAD pypi.org:443/simple/");
	assert_int_equal(al_allow_request(al, "pypi.org", 443, "POST", "/simple/x", rule, sizeof(rule)), -EACCES);
	assert_string_equal(rule, "GET|HEAD pypi.org:443/simple/");
	assert_int_equal(al_allow_request(al, "pypi.org", 443, "GET", "/admin", rule, sizeof(rule)), -EACCES);
	assert_int_equal(al_allow_request(al, "pypi.org", 443, "GET", "/simple/../admin", rule, sizeof(rule)), -EPERM);
	assert_int_equal(al_allow_request(al, "pypi.org", 443, "GET", "/simple/%2e%2e/admin", rule, sizeof(rule)),
			 -EPERM);
	assert_int_equal(al_allow_request(al, "api.example.com", 443, "POST", "/v1/chat?x=1", rule, sizeof(rule)), 0);
	assert_int_equal(al_allow_request(al, "api.example.com", 443, "GET", "/v1/chat", rule, sizeof(rule)), -EACCES);
	assert_int_equal(al_allow_request(al, "open.example.com", 443, "DELETE", "/x", rule, sizeof(rule)), 0);
	assert_true(al_path_plain("/a/b.c/..x?q=/../", 17));
	assert_false(al_path_plain("/a/./b", 6));
	al_allowlist_free(al);
}

static void test_host_normalize(void **state)
{
	(void)state;
	char out[AL_HOST_MAX];
	enum al_host_kind k;
	assert_int_equal(al_host_normalize("Ex-Ample.COM.", 13, out, &k), 0);
	assert_string_equal(out, "ex-ample.com");
	assert_int_equal(k, AL_HOST_NAME);
	assert_int_equal(al_host_normalize("::FFFF:7f00:1", 13, out, &k), 0);
	assert_string_equal(out, "::ffff:127.0.0.1");
	assert_int_equal(k, AL_HOST_IPV6);
	assert_int_equal(al_host_normalize("10.0.0.1", 8, out, &k), 0);
	assert_int_equal(k, AL_HOST_IPV4);
	assert_int_equal(al_host_normalize("a\0b.org", 7, out, &k), -EINVAL);
	assert_int_equal(al_host_normalize("::1\0x", 5, out, &k), -EINVAL);
	assert_int_equal(al_host_normalize(".", 1, out, &k), -EINVAL);
	assert_int_equal(al_host_normalize("1.2.3.4.5", 9, out, &k), -EINVAL);
	assert_int_equal(al_host_normalize("a.b.0x", 6, out, &k), -EINVAL);
	assert_int_equal(al_host_normalize("a.b2", 4, out, &k), 0); /* mixed last label: a name */
}

static struct al_cidr_list *cidrs(const char *spec)
{
	struct al_cidr_list *l = NULL;
	struct al_error err = {0};
	assert_int_equal(al_cidr_list_new(&l), 0);
	if (al_cidr_list_add(l, spec, &err) != 0)
		fail_msg("al_cidr_list_add(\"%s\"): %s", spec, err.msg);
	return l;
}

static bool has4(const struct al_cidr_list *l, const char *a)
{
	uint8_t b[4];
	assert_int_equal(inet_pton(AF_INET, a, b), 1);
	return al_cidr_list_contains(l, AF_INET, b);
}

static bool has6(const struct al_cidr_list *l, const char *a)
{
	uint8_t b[16];
	assert_int_equal(inet_pton(AF_INET6, a, b), 1);
	return al_cidr_list_contains(l, AF_INET6, b);
}

static void test_cidrs(void **state)
{
	(void)state;
	struct al_cidr_list *l = cidrs("10.0.0.0/8, fd00::/8,192.168.1.7/32,172.16.0.0/13,198.51.100.9");
	assert_int_equal(al_cidr_list_count(l), 5);
	assert_true(has4(l, "10.0.0.0"));
	assert_true(has4(l, "10.255.255.255"));
	assert_false(has4(l, "11.0.0.0"));
	assert_false(has4(l, "9.255.255.255"));
	assert_true(has4(l, "192.168.1.7"));
	assert_false(has4(l, "192.168.1.6"));
	assert_false(has4(l, "192.168.1.8"));
	assert_true(has4(l, "172.23.255.255"));
	assert_false(has4(l, "172.24.0.0"));
	assert_true(has4(l, "198.51.100.9"));
	assert_true(has6(l, "fd00::1"));
	assert_true(has6(l, "fdff:ffff::1"));
	assert_false(has6(l, "fc00::1"));
	assert_false(has6(l, "::ffff:10.0.0.1")); /* families never mix here; addrclass unwraps */
	assert_false(al_cidr_list_contains(NULL, AF_INET, "\x0a\0\0\1"));
	al_cidr_list_free(l);
	l = cidrs("fc00::/7,2001:db8::1/128");
	assert_true(has6(l, "fdff::1"));
	assert_true(has6(l, "2001:db8::1"));
	assert_false(has6(l, "2001:db8::2"));
	al_cidr_list_free(l);
}

static void expect_bad_cidr(const char *spec, const char *named)
{
	struct al_cidr_list *l = NULL;
	struct al_error err = {0};
	assert_int_equal(al_cidr_list_new(&l), 0);
	int r = al_cidr_list_add(l, spec, &err);
	if (r != -EINVAL)
		fail_msg("al_cidr_list_add(\"%s\") = %d, want -EINVAL", spec, r);
	if (named && !strstr(err.msg, named))
		fail_msg("message \"%s\" does not name \"%s\"", err.msg, named);
	assert_int_equal(al_cidr_list_count(l), 0);
	al_cidr_list_free(l);
}

static void test_bad_cidrs(void **state)
{
	(void)state;
	expect_bad_cidr("", NULL);
	expect_bad_cidr("10.0.0.0/8,", NULL);
	expect_bad_cidr("10.0.0.0/33", "10.0.0.0/33");
	expect_bad_cidr("fd00::/129", "fd00::/129");
	expect_bad_cidr("10.0.0.0/", NULL);
	expect_bad_cidr("10.0.0.0/08", NULL);
	expect_bad_cidr("10.0.0.0/-8", NULL);
	expect_bad_cidr("10.0.0.0/8x", NULL);
	expect_bad_cidr("10.0.0/8", NULL);
	expect_bad_cidr("10.1.2.3/8", "10.1.2.3/8"); /* host bits set */
	expect_bad_cidr("fd00::1/8", NULL);
	expect_bad_cidr("0.0.0.0/0", NULL); /* too broad */
	expect_bad_cidr("8.0.0.0/7", NULL);
	expect_bad_cidr("::/0", NULL);
	expect_bad_cidr("fc00::/6", NULL);
	expect_bad_cidr("example.com/8", NULL);
	expect_bad_cidr("/8", NULL);
	expect_bad_cidr("10.0.0.0/8, 192.168.0.0/16/1", "192.168.0.0/16/1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_and_ports), cmocka_unit_test(test_suffix),
		cmocka_unit_test(test_ip_literals),	cmocka_unit_test(test_all_or_nothing_and_append),
		cmocka_unit_test(test_bad_entries),	cmocka_unit_test(test_host_normalize),
		cmocka_unit_test(test_rules),		cmocka_unit_test(test_cidrs),
		cmocka_unit_test(test_bad_cidrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
