/* test_ports.c — a sandbox's listening ports read from /proc/net/tcp and tcp6 tables: LISTEN sockets on loopback or any address only, sorted and without repeats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "manager/ports.h"

/* Real lines (Linux 6.x) of a sandbox with http.server on 127.0.0.1:8000, a server on *:3000, one
 * on 10.0.0.2:9000 (not reachable from lo: left out), an established connection, a TIME_WAIT. */
static const char tcp4[] =
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 100 0 0 "
	"10 0\n"
	"   1: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0 100 0 0 "
	"10 0\n"
	"   2: 0200000A:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4244 1 0 100 0 0 "
	"10 0\n"
	"   3: 0100007F:1F40 0100007F:D3A2 01 00000000:00000000 00:00000000 00000000  1000        0 4245 1 0 20 4 30 "
	"10 -1\n"
	"   4: 0100007F:A000 0100007F:1F40 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0\n";

static const char tcp6[] = "  sl  local_address                         remote_address                        st "
			   "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
			   "   0: 00000000000000000000000001000000:1F41 00000000000000000000000000000000:0000 0A "
			   "00000000:00000000 00:00000000 00000000  1000        0 5151 1 0 100 0 0 10 0\n"
			   "   1: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A "
			   "00000000:00000000 00:00000000 00000000  1000        0 5152 1 0 100 0 0 10 0\n"
			   "   2: 000080FE00000000FF005452AB1200FE:0050 00000000000000000000000000000000:0000 0A "
			   "00000000:00000000 00:00000000 00000000  1000        0 5153 1 0 100 0 0 10 0\n";

static void v4_listeners(void **state)
{
	(void)state;
	struct srv_port_info v[8];
	size_t n = 0;
	assert_int_equal(ports_parse_tcp(tcp4, false, v, &n, 8), 2);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].port, 8000);
	assert_string_equal(v[0].addr, "127.0.0.1");
	assert_int_equal(v[1].port, 3000);
	assert_string_equal(v[1].addr, "0.0.0.0");
}

static void v6_listeners(void **state)
{
	(void)state;
	struct srv_port_info v[8];
	size_t n = 0;
	assert_int_equal(ports_parse_tcp(tcp6, true, v, &n, 8), 2);
	assert_int_equal(v[0].port, 8001);
	assert_string_equal(v[0].addr, "::1");
	assert_int_equal(v[1].port, 3000);
	assert_string_equal(v[1].addr, "::");
}

static void bounded_and_sorted(void **state)
{
	(void)state;
	struct srv_port_info v[8];
	size_t n = 0;
	assert_int_equal(ports_parse_tcp(tcp4, false, v, &n, 1), 1); /* cap respected */
	assert_int_equal(ports_parse_tcp(tcp4, false, v, &n, 8), 2);
	assert_int_equal(ports_parse_tcp(tcp6, true, v, &n, 8), 2);
	assert_int_equal(n, 5);
	n = ports_sort_unique(v, n); /* 8000 twice (127.0.0.1): one */
	assert_int_equal(n, 4);
	assert_int_equal(v[0].port, 3000);
	assert_string_equal(v[0].addr, "0.0.0.0");
	assert_int_equal(v[1].port, 3000);
	assert_string_equal(v[1].addr, "::");
	assert_int_equal(v[2].port, 8000);
	assert_int_equal(v[3].port, 8001);
}

static void garbage(void **state)
{
	(void)state;
	struct srv_port_info v[4];
	size_t n = 0;
	const char *bad[] = {"",
			     "\n\n",
			     "0: zz00007F:1F40 00000000:0000 0A",
			     "0: 0100007F:1F40 00000000:0000 0",
			     "0: 0100007F:0000 00000000:0000 0A x\n",
			     "0: 0100007F:1F4 00000000:0000 0A x\n",
			     "0: 0100007F:1F40 00000000:0000 0AB\n",
			     "no colon here"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ports_parse_tcp(bad[i], false, v, &n, 4), 0);
	assert_int_equal(ports_parse_tcp(tcp4, true, v, &n, 4), 0); /* v4 lines are not v6 ones */
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(v4_listeners),
		cmocka_unit_test(v6_listeners),
		cmocka_unit_test(bounded_and_sorted),
		cmocka_unit_test(garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
