/* test_resolve.c — the egress proxy's resolver (src/network/resolve.c): IP literals never reach
 * a resolver, a hosts file wins over DNS and lists every address for a name, and rs_connect
 * reaches a listener and reports a refused port. */
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
#include <sys/socket.h>
#include <unistd.h>

#include "network/resolve.h"

static char hosts_path[64];

static int make_hosts(void **state)
{
	(void)state;
	strcpy(hosts_path, "/tmp/al-test-hosts-XXXXXX");
	int fd = mkstemp(hosts_path);
	if (fd < 0)
		return -1;
	static const char text[] = "# comment line\n"
				   "127.0.0.1   one.test  Alias.Test. # trailing comment\n"
				   "10.1.2.3    two.test\n"
				   "2001:db8::7 two.test\n"
				   "not-an-address bad.test\n"
				   "\n";
	int ok = write(fd, text, sizeof(text) - 1) == (ssize_t)(sizeof(text) - 1);
	close(fd);
	return ok ? 0 : -1;
}

static int drop_hosts(void **state)
{
	(void)state;
	unlink(hosts_path);
	return 0;
}

static const char *text_of(const struct rs_addr *a, char *buf, size_t n)
{
	const void *p = a->ss.ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)&a->ss)->sin_addr
						   : (const void *)&((const struct sockaddr_in6 *)&a->ss)->sin6_addr;
	return inet_ntop(a->ss.ss_family, p, buf, (socklen_t)n);
}

static uint16_t port_of(const struct rs_addr *a)
{
	return ntohs(a->ss.ss_family == AF_INET ? ((const struct sockaddr_in *)&a->ss)->sin_port
						: ((const struct sockaddr_in6 *)&a->ss)->sin6_port);
}

static void literals_skip_resolution(void **state)
{
	(void)state;
	struct rs_addr a[RS_MAX_ADDRS];
	size_t n;
	char buf[64];
	assert_int_equal(rs_resolve("192.0.2.9", 8443, hosts_path, a, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(text_of(&a[0], buf, sizeof(buf)), "192.0.2.9");
	assert_int_equal(port_of(&a[0]), 8443);
	assert_int_equal(rs_resolve("2001:db8::1", 443, NULL, a, &n), 0);
	assert_int_equal(a[0].ss.ss_family, AF_INET6);
}

static void hosts_file_wins(void **state)
{
	(void)state;
	struct rs_addr a[RS_MAX_ADDRS];
	size_t n;
	char buf[64];
	assert_int_equal(rs_resolve("one.test", 443, hosts_path, a, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(text_of(&a[0], buf, sizeof(buf)), "127.0.0.1");
	/* Names compare case-insensitively, and a trailing dot in the file is ignored. */
	assert_int_equal(rs_resolve("alias.test", 443, hosts_path, a, &n), 0);
	assert_int_equal(n, 1);
	/* Every address of a name, so the caller can check each one. */
	assert_int_equal(rs_resolve("two.test", 80, hosts_path, a, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(text_of(&a[0], buf, sizeof(buf)), "10.1.2.3");
	assert_string_equal(text_of(&a[1], buf, sizeof(buf)), "2001:db8::7");
	assert_int_equal(port_of(&a[1]), 80);
}

static void missing_file_is_an_error(void **state)
{
	(void)state;
	struct rs_addr a[RS_MAX_ADDRS];
	size_t n;
	assert_int_equal(rs_resolve("one.test", 443, "/nonexistent/hosts", a, &n), -ENOENT);
}

static void connect_and_refuse(void **state)
{
	(void)state;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	struct rs_addr a[RS_MAX_ADDRS];
	size_t n;
	assert_int_equal(rs_resolve("127.0.0.1", ntohs(sa.sin_port), NULL, a, &n), 0);
	int fd = rs_connect(&a[0], 2000);
	assert_true(fd >= 0);
	close(fd);
	close(l); /* the port is now closed: a fresh connect is refused */
	assert_int_equal(rs_connect(&a[0], 2000), -ECONNREFUSED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(literals_skip_resolution),
		cmocka_unit_test(hosts_file_wins),
		cmocka_unit_test(missing_file_is_an_error),
		cmocka_unit_test(connect_and_refuse),
	};
	return cmocka_run_group_tests(tests, make_hosts, drop_hosts);
}
