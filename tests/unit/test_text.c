/* test_text.c — unit tests for src/util/text.c's one RFC 3339 formatter, which the audit log, the
 * verdicts of airlock-runc, the HTTP API and the file stats all write their times with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/text.h"

/* 2025-01-02T03:04:05 UTC. */
#define T0 1735787045

static void rfc3339_digits(void **state)
{
	(void)state;
	char buf[TXT_RFC3339_MAX];
	struct timespec t = {T0, 678901234};
	assert_string_equal(txt_rfc3339(t, 0, buf), "2025-01-02T03:04:05Z");
	assert_string_equal(txt_rfc3339(t, 3, buf), "2025-01-02T03:04:05.678Z");
	assert_string_equal(txt_rfc3339(t, 9, buf), "2025-01-02T03:04:05.678901234Z");
	t.tv_nsec = 5;
	assert_string_equal(txt_rfc3339(t, 9, buf), "2025-01-02T03:04:05.000000005Z");
	assert_string_equal(txt_rfc3339(t, 3, buf), "2025-01-02T03:04:05.000Z");
}

/* Before the epoch a time's fraction may be negative (ns / 1e9 truncates toward zero): it is
 * borrowed from the seconds, so -0.5 s reads 23:59:59.5 of 1969-12-31, not a minus sign. */
static void rfc3339_negative_fraction(void **state)
{
	(void)state;
	char buf[TXT_RFC3339_MAX];
	struct timespec t = {0, -500000000L};
	assert_string_equal(txt_rfc3339(t, 3, buf), "1969-12-31T23:59:59.500Z");
}

/* A year strftime cannot write in the buffer is "", never a truncated time. */
static void rfc3339_unrepresentable(void **state)
{
	(void)state;
	char buf[TXT_RFC3339_MAX];
	struct timespec t = {(time_t)INT64_MAX, 0};
	assert_string_equal(txt_rfc3339(t, 3, buf), "");
	json_t *j = txt_json_time(UINT64_MAX);
	assert_true(json_is_null(j) || json_is_string(j));
	json_decref(j);
}

static void json_time_ms(void **state)
{
	(void)state;
	json_t *j = txt_json_time((uint64_t)T0 * 1000 + 7);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "2025-01-02T03:04:05.007Z");
	json_decref(j);
}

static void now_is_current(void **state)
{
	(void)state;
	char a[TXT_RFC3339_MAX], b[TXT_RFC3339_MAX];
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	txt_rfc3339(t, 0, a);
	txt_rfc3339_now(0, b);
	/* Same minute: the two calls are microseconds apart (a minute's edge aside, which the
	 * prefix up to the hour survives). */
	assert_memory_equal(a, b, strlen("2025-01-02T03"));
	assert_int_equal(strlen(b), strlen("2025-01-02T03:04:05Z"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc3339_digits),	   cmocka_unit_test(rfc3339_negative_fraction),
		cmocka_unit_test(rfc3339_unrepresentable), cmocka_unit_test(json_time_ms),
		cmocka_unit_test(now_is_current),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
