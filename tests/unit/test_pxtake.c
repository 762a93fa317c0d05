/* test_pxtake.c — px_take (src/network/proxy.c): a held sandbox's proxy gives each exec the
 * attempts made since the last take, each once, with counters of their own and start times
 * relative to the exec's start; a connection still open at a take is counted unfinished and never
 * reported later. Real sockets on 127.0.0.1, names refused by the allowlist (no resolver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "network/proxy.h"

#define DENIED_REQ "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n"

struct fixture {
	struct px *px;
	struct al_allowlist *allow;
	struct timespec t0;
	struct sockaddr_in addr;
};

static int setup(void **state)
{
	static struct fixture f;
	memset(&f, 0, sizeof(f));
	struct al_error e = {0};
	if (al_allowlist_new(&f.allow) < 0 || al_allowlist_add(f.allow, "allowed.test:443", &e) < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &f.t0);
	struct px_config cfg = {.allow = f.allow, .max_conns = 4, .idle_ms = 2000, .t0 = f.t0};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	f.addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(f.addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&f.addr, sizeof(f.addr)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&f.addr, &len) < 0)
		return -1;
	if (px_new(&cfg, &f.px) < 0 || px_serve(f.px, fd) < 0)
		return -1;
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	px_free(f->px);
	al_allowlist_free(f->allow);
	return 0;
}

static int dial(const struct fixture *f)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)&f->addr, sizeof(f->addr)), 0);
	return fd;
}

/* Sends req on a new connection and reads the answer to its end (5 s at most). */
static void ask(const struct fixture *f, const char *req, char *reply, size_t cap)
{
	int fd = dial(f);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	size_t n = 0;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	while (n + 1 < cap && poll(&pf, 1, 5000) == 1) {
		ssize_t k = read(fd, reply + n, cap - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	reply[n] = 0;
	close(fd);
}

/* Waits until the proxy has recorded want attempts since the last take (its stats are live). */
static void wait_recorded(const struct fixture *f, uint64_t want)
{
	for (int i = 0; i < 500; i++) {
		struct px_stats st = px_get_stats(f->px);
		if (st.allowed + st.denied + st.errors >= want)
			return;
		usleep(10000);
	}
	fail_msg("the proxy recorded fewer than %llu attempts", (unsigned long long)want);
}

static void test_take(void **state)
{
	struct fixture *f = *state;
	char reply[512];
	ask(f, DENIED_REQ, reply, sizeof(reply));
	assert_non_null(strstr(reply, " 403 "));
	wait_recorded(f, 1);
	/* An exec that started 1000 s after the proxy: its records start 1000 s earlier. */
	struct timespec t1 = f->t0;
	t1.tv_sec += 1000;
	struct px *a = NULL;
	assert_int_equal(px_take(f->px, &t1, 1000, &a), 0);
	size_t n = 0;
	const struct px_record *r = px_records(a, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].decision, PXD_DENIED);
	assert_string_equal(r[0].host, "denied.test");
	assert_true(r[0].start_s < -990 && r[0].start_s > -1000);
	struct px_stats st = px_get_stats(a);
	assert_int_equal(st.connections, 1);
	assert_int_equal(st.denied, 1);
	assert_int_equal(st.allowed + st.errors + st.unfinished, 0);
	px_free(a);

	/* The next take has the attempts made since, only. */
	ask(f, DENIED_REQ, reply, sizeof(reply));
	ask(f, DENIED_REQ, reply, sizeof(reply));
	wait_recorded(f, 3);
	assert_int_equal(px_take(f->px, &f->t0, 1000, &a), 0);
	px_records(a, &n);
	st = px_get_stats(a);
	assert_int_equal(n, 2);
	assert_int_equal(st.connections, 2);
	assert_int_equal(st.denied, 2);
	px_free(a);
	assert_int_equal(px_take(f->px, &f->t0, 0, &a), 0);
	px_records(a, &n);
	st = px_get_stats(a);
	assert_int_equal(n + st.connections + st.denied, 0);
	px_free(a);
}

static void test_unfinished(void **state)
{
	struct fixture *f = *state;
	struct px *a = NULL;
	assert_int_equal(px_take(f->px, &f->t0, 0, &a), 0); /* what test_take left */
	px_free(a);
	/* A connection open across a take: unfinished there, and its record never appears later. */
	uint64_t before = px_get_stats(f->px).connections; /* the proxy's own counters only grow */
	int fd = dial(f);
	for (int i = 0; i < 500 && px_get_stats(f->px).connections == before; i++)
		usleep(10000);
	assert_int_equal(px_take(f->px, &f->t0, 50, &a), 0);
	size_t n = 0;
	px_records(a, &n);
	struct px_stats st = px_get_stats(a);
	assert_int_equal(n, 0);
	assert_int_equal(st.unfinished, 1);
	px_free(a);
	assert_int_equal(write(fd, DENIED_REQ, strlen(DENIED_REQ)), (ssize_t)strlen(DENIED_REQ));
	char buf[256];
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 5000), 1); /* answered: its thread is done with it */
	assert_true(read(fd, buf, sizeof(buf)) > 0);
	close(fd);
	assert_int_equal(px_take(f->px, &f->t0, 1000, &a), 0);
	px_records(a, &n);
	st = px_get_stats(a);
	assert_int_equal(n + st.denied + st.connections, 0);
	px_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_unfinished),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
