/* test_error.c — unit tests for the error struct's formatting (src/util/error.c): whole messages
 * stay as written, and a message cut at the struct's size says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>

#include "util/error.h"

static void ends_cut(const struct al_error *err)
{
	size_t n = strlen(err->msg);
	assert_int_equal(n, AL_ERROR_MAX - 1);
	assert_string_equal(err->msg + n - 3, "...");
}

static void test_whole(void **state)
{
	struct al_error err = {0};
	assert_int_equal(al_err(&err, ENOENT, "no %s", "thing"), -ENOENT);
	assert_string_equal(err.msg, "no thing");
	assert_int_equal(err.code, -ENOENT);
	al_err_sys(&err, EACCES, "open %s", "/x");
	assert_string_equal(err.msg, "open /x: Permission denied");
	al_err_prefix(&err, "setup");
	assert_string_equal(err.msg, "setup: open /x: Permission denied");
}

static void test_cut(void **state)
{
	char longer[AL_ERROR_MAX + 40];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	struct al_error err = {0};
	al_err(&err, EINVAL, "%s", longer);
	ends_cut(&err);
	assert_int_equal(err.msg[0], 'a');
	/* Exactly full: not cut. */
	longer[AL_ERROR_MAX - 1] = 0;
	al_err(&err, EINVAL, "%s", longer);
	assert_int_equal(strlen(err.msg), AL_ERROR_MAX - 1);
	assert_int_equal(err.msg[AL_ERROR_MAX - 2], 'a');
	/* The errno's text is what overflows. */
	longer[AL_ERROR_MAX - 10] = 0;
	al_err_sys(&err, EACCES, "%s", longer);
	ends_cut(&err);
	/* A prefix pushes a full message's tail out. */
	memset(longer, 'a', AL_ERROR_MAX - 1);
	al_err(&err, EINVAL, "%s", longer);
	al_err_prefix(&err, "setup");
	ends_cut(&err);
	assert_memory_equal(err.msg, "setup: aaa", 10);
	/* A short message under a prefix is not marked. */
	al_err(&err, EINVAL, "short");
	al_err_prefix(&err, "setup");
	assert_string_equal(err.msg, "setup: short");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
