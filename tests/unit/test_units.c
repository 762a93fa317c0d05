/* test_units.c — unit tests for the size, duration and count parsers of src/config/units.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>

#include "config/units.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)

/* A value no parser returns, so a test can see that a failed parse left *out alone. */
#define SENTINEL 0xDEADBEEFULL

static void expect_size(const char *s, uint64_t want)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_size(s, &got, &err);
	if (r != 0)
		fail_msg("al_parse_size(\"%s\") = %d (%s), want %llu", s, r, err.msg, (unsigned long long)want);
	if (got != want)
		fail_msg("al_parse_size(\"%s\") gave %llu, want %llu", s, (unsigned long long)got,
			 (unsigned long long)want);
}

/* Bad input must fail with the given code, fill the message, and leave the output untouched. */
static void expect_size_error(const char *s, int want_code)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_size(s, &got, &err);
	if (r != want_code)
		fail_msg("al_parse_size(\"%s\") = %d (got %llu), want %d", s, r, (unsigned long long)got, want_code);
	assert_int_equal(err.code, want_code);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(got, SENTINEL);
}

static void expect_duration(const char *s, uint64_t want_ms)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_duration_ms(s, &got, &err);
	if (r != 0)
		fail_msg("al_parse_duration_ms(\"%s\") = %d (%s), want %llu", s, r, err.msg,
			 (unsigned long long)want_ms);
	if (got != want_ms)
		fail_msg("al_parse_duration_ms(\"%s\") gave %llu ms, want %llu", s, (unsigned long long)got,
			 (unsigned long long)want_ms);
}

static void expect_duration_error(const char *s, int want_code)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_duration_ms(s, &got, &err);
	if (r != want_code)
		fail_msg("al_parse_duration_ms(\"%s\") = %d (got %llu ms), want %d", s, r, (unsigned long long)got,
			 want_code);
	assert_int_equal(err.code, want_code);
	assert_true(err.msg[0] != '\0');
	/* *out is not checked: a zero duration is refused after it was stored, which callers
	 * never see because they do not read *out on failure. */
}

static void expect_count(const char *s, uint64_t max, uint64_t want)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_count(s, max, &got, &err);
	if (r != 0)
		fail_msg("al_parse_count(\"%s\") = %d (%s), want %llu", s, r, err.msg, (unsigned long long)want);
	if (got != want)
		fail_msg("al_parse_count(\"%s\") gave %llu, want %llu", s, (unsigned long long)got,
			 (unsigned long long)want);
}

static void expect_count_error(const char *s, uint64_t max, int want_code)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_count(s, max, &got, &err);
	if (r != want_code)
		fail_msg("al_parse_count(\"%s\") = %d (got %llu), want %d", s, r, (unsigned long long)got, want_code);
	assert_int_equal(err.code, want_code);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(got, SENTINEL);
}

/* ---- sizes ---------------------------------------------------------------------- */

static void size_plain_and_suffixes(void **state)
{
	expect_size("0", 0);
	expect_size("512", 512);
	expect_size("512b", 512);
	expect_size("64K", 64 * KiB);
	expect_size("64k", 64 * KiB);
	expect_size("64KB", 64 * KiB);
	expect_size("64KiB", 64 * KiB);
	expect_size("3M", 3 * MiB);
	expect_size("3mib", 3 * MiB);
	expect_size("2G", 2 * GiB);
	expect_size("1GiB", GiB);
	expect_size("1gb", GiB);
	expect_size("1T", TiB);
	expect_size("1TiB", TiB);
	expect_size("007K", 7 * KiB);
}

static void size_decimals(void **state)
{
	expect_size("1.5M", MiB + MiB / 2);
	expect_size("0.5K", 512);
	expect_size("1.25G", GiB + GiB / 4);
	expect_size("2.0G", 2 * GiB);
	/* Below a byte the fraction is dropped, not rounded up: sizes are caps, not minimums. */
	expect_size("1.5", 1);
	/* Precision is three decimals; further digits are read and ignored. */
	expect_size("1.0009K", KiB);
}

static void size_unlimited(void **state)
{
	expect_size("none", AL_UNLIMITED);
	expect_size("unlimited", AL_UNLIMITED);
	expect_size("NONE", AL_UNLIMITED);
	expect_size("Unlimited", AL_UNLIMITED);
}

static void size_largest(void **state)
{
	/* The largest whole number of TiB that fits, plus a fraction: must not wrap. */
	expect_size("16777215T", 16777215ULL * TiB);
	expect_size("16777215.5T", 16777215ULL * TiB + TiB / 2);
}

static void size_bad_input(void **state)
{
	expect_size_error("", -EINVAL);
	expect_size_error("12X", -EINVAL);
	expect_size_error("-5", -EINVAL);
	expect_size_error("+5", -EINVAL);
	expect_size_error("1.", -EINVAL);
	expect_size_error(".5", -EINVAL);
	expect_size_error("5ss", -EINVAL);
	expect_size_error("5KK", -EINVAL);
	expect_size_error("5 K", -EINVAL);
	expect_size_error(" 5", -EINVAL);
	expect_size_error("5K ", -EINVAL);
	expect_size_error("K", -EINVAL);
	expect_size_error("1.5.5", -EINVAL);
	expect_size_error("0x10", -EINVAL);
	expect_size_error("1e3", -EINVAL);
	expect_size_error("nonee", -EINVAL);
	expect_size_error("5P", -EINVAL); /* no peta suffix: refuse rather than guess */
}

static void size_null(void **state)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	assert_int_equal(al_parse_size(NULL, &got, &err), -EINVAL);
	assert_int_equal(got, SENTINEL);
}

static void size_overflow(void **state)
{
	/* 2^24 TiB and 2^34 GiB are exactly 2^64 bytes: one past the largest size. */
	expect_size_error("16777216T", -ERANGE);
	expect_size_error("17179869184G", -ERANGE);
	/* Too many digits for the number itself. The parser reports these as invalid rather
	 * than too large; either way it must refuse, so only the failure is pinned here. */
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	assert_true(al_parse_size("99999999999999999999T", &got, &err) < 0);
	assert_true(al_parse_size("99999999999999999999", &got, &err) < 0);
	assert_true(al_parse_size("184467440737095516160", &got, &err) < 0);
	assert_int_equal(got, SENTINEL);
}

/* The digit loop lets a 17-digit number through whose milli-value (number * 1000) no
 * longer fits in 64 bits; it must be refused, not wrapped to a small size. */
static void size_overflow_milli_wrap(void **state)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_size("18446744073709552", &got, &err);
	if (r == 0)
		fail_msg("al_parse_size(\"18446744073709552\") accepted and gave %llu bytes (wrapped)",
			 (unsigned long long)got);
	r = al_parse_size("18446744073709559K", &got, &err);
	if (r == 0)
		fail_msg("al_parse_size(\"18446744073709559K\") accepted and gave %llu bytes (wrapped)",
			 (unsigned long long)got);
}

/* ---- durations ------------------------------------------------------------------ */

static void duration_units(void **state)
{
	expect_duration("10", 10000);
	expect_duration("10s", 10000);
	expect_duration("10S", 10000);
	expect_duration("250ms", 250);
	expect_duration("250MS", 250);
	expect_duration("2m", 120000);
	expect_duration("2min", 120000);
	expect_duration("1h", 3600000);
	expect_duration("1H", 3600000);
	expect_duration("1ms", 1);
}

static void duration_decimals(void **state)
{
	expect_duration("1.5s", 1500);
	expect_duration("1.5", 1500);
	expect_duration("0.25", 250);
	expect_duration("0.5m", 30000);
	expect_duration("1.5h", 5400000);
	expect_duration("0.001s", 1);
	/* Fractions of a millisecond round up so a tiny limit is never silently zero. */
	expect_duration("0.5ms", 1);
	expect_duration("1.2ms", 2);
}

static void duration_unlimited(void **state)
{
	expect_duration("none", AL_UNLIMITED);
	expect_duration("unlimited", AL_UNLIMITED);
	expect_duration("None", AL_UNLIMITED);
}

static void duration_zero_rejected(void **state)
{
	expect_duration_error("0", -EINVAL);
	expect_duration_error("0s", -EINVAL);
	expect_duration_error("0ms", -EINVAL);
	expect_duration_error("0.0h", -EINVAL);
	/* Below the parser's resolution (1/1000 of the unit): zero, so refused, not rounded up. */
	expect_duration_error("0.0001s", -EINVAL);
}

static void duration_bad_input(void **state)
{
	expect_duration_error("", -EINVAL);
	expect_duration_error("12X", -EINVAL);
	expect_duration_error("-5", -EINVAL);
	expect_duration_error("-5s", -EINVAL);
	expect_duration_error("1.", -EINVAL);
	expect_duration_error(".5", -EINVAL);
	expect_duration_error("5ss", -EINVAL);
	expect_duration_error("5sec", -EINVAL);
	expect_duration_error("5 s", -EINVAL);
	expect_duration_error("s", -EINVAL);
	expect_duration_error("5d", -EINVAL);
	expect_duration_error("1K", -EINVAL); /* a size suffix is not a duration */
	expect_duration_error("1m30s", -EINVAL);
}

static void duration_overflow(void **state)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	assert_true(al_parse_duration_ms("99999999999999999999h", &got, &err) < 0);
	assert_true(al_parse_duration_ms("99999999999999999999", &got, &err) < 0);
	assert_int_equal(got, SENTINEL);
	/* Fits the digit loop but not once scaled to milliseconds. */
	expect_duration_error("10000000000000000h", -ERANGE);
}

/* Same wrap as for sizes: ~1.8e16 seconds must not come back as a fraction of a second. */
static void duration_overflow_milli_wrap(void **state)
{
	struct al_error err = {0};
	uint64_t got = SENTINEL;
	int r = al_parse_duration_ms("18446744073709552", &got, &err);
	if (r == 0)
		fail_msg("al_parse_duration_ms(\"18446744073709552\") accepted and gave %llu ms (wrapped)",
			 (unsigned long long)got);
}

/* ---- counts --------------------------------------------------------------------- */

static void count_valid(void **state)
{
	expect_count("0", 100, 0);
	expect_count("1", 100, 1);
	expect_count("100", 100, 100);
	expect_count("0042", 100, 42);
	expect_count("1844674407370955160", UINT64_MAX, 1844674407370955160ULL);
}

static void count_unlimited(void **state)
{
	/* "none" is the caller's to refuse (a limit may not allow lifting); the parser maps it. */
	expect_count("none", 10, AL_UNLIMITED);
	expect_count("unlimited", 10, AL_UNLIMITED);
}

static void count_bad_input(void **state)
{
	expect_count_error("", 100, -EINVAL);
	expect_count_error("12X", 100, -EINVAL);
	expect_count_error("-5", 100, -EINVAL);
	expect_count_error("+5", 100, -EINVAL);
	expect_count_error("1.", 100, -EINVAL);
	expect_count_error(".5", 100, -EINVAL);
	expect_count_error("1.5", 100, -EINVAL);
	expect_count_error("5ss", 100, -EINVAL);
	expect_count_error("1K", 100, -EINVAL); /* counts take no suffix */
	expect_count_error(" 5", 100, -EINVAL);

	struct al_error err = {0};
	uint64_t got = SENTINEL;
	assert_int_equal(al_parse_count(NULL, 100, &got, &err), -EINVAL);
	assert_int_equal(got, SENTINEL);
}

static void count_range(void **state)
{
	expect_count_error("101", 100, -ERANGE);
	expect_count_error("18446744073709551616", UINT64_MAX, -ERANGE);
	expect_count_error("99999999999999999999", UINT64_MAX, -ERANGE);
}

static void null_error_struct(void **state)
{
	/* The error struct is optional everywhere: the return code alone must suffice. */
	uint64_t got = SENTINEL;
	assert_int_equal(al_parse_size("12X", &got, NULL), -EINVAL);
	assert_int_equal(al_parse_count("7", 5, &got, NULL), -ERANGE);
	assert_int_equal(got, SENTINEL);
	assert_int_equal(al_parse_duration_ms("0", &got, NULL), -EINVAL);
	assert_int_equal(al_parse_duration_ms("1x", &got, NULL), -EINVAL);
	assert_int_equal(al_parse_size("1K", &got, NULL), 0);
	assert_int_equal(got, KiB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_plain_and_suffixes),
		cmocka_unit_test(size_decimals),
		cmocka_unit_test(size_unlimited),
		cmocka_unit_test(size_largest),
		cmocka_unit_test(size_bad_input),
		cmocka_unit_test(size_null),
		cmocka_unit_test(size_overflow),
		cmocka_unit_test(size_overflow_milli_wrap),
		cmocka_unit_test(duration_units),
		cmocka_unit_test(duration_decimals),
		cmocka_unit_test(duration_unlimited),
		cmocka_unit_test(duration_zero_rejected),
		cmocka_unit_test(duration_bad_input),
		cmocka_unit_test(duration_overflow),
		cmocka_unit_test(duration_overflow_milli_wrap),
		cmocka_unit_test(count_valid),
		cmocka_unit_test(count_unlimited),
		cmocka_unit_test(count_bad_input),
		cmocka_unit_test(count_range),
		cmocka_unit_test(null_error_struct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
