/* test_ptyargs.c — the tools' arguments for terminal sessions: code_execute's pty (sizes 1 to 1000, no other field, never with "background": false) and code_process's resize. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "service/tools.h"

static void check_all(const struct tl_catalog *c, enum tl_id id, const char *const *v, size_t n, int want)
{
	char msg[SCH_MSG_MAX];
	for (size_t i = 0; i < n; i++) {
		json_t *a = json_loads(v[i], 0, NULL);
		assert_non_null(a);
		int r = tl_check_args(c, id, a, msg);
		if (r != want)
			fail_msg("%s: %d (want %d): %s", v[i], r, want, msg);
		json_decref(a);
	}
}

#define N(v) (sizeof(v) / sizeof((v)[0]))

static void test_execute_pty(void **state)
{
	(void)state;
	struct tl_catalog c = {0};
	char msg[SCH_MSG_MAX];
	assert_int_equal(tl_catalog_load(&c, msg), 0);
	static const char *const good[] = {
		"{\"language\":\"shell\",\"code\":\"exec bash "
		"-i\",\"sandbox_id\":\"sb\",\"pty\":{\"cols\":80,\"rows\":24}}",
		"{\"language\":\"shell\",\"code\":\"exec bash -i\",\"sandbox_id\":\"sb\",\"pty\":{}}",
		("{\"language\":\"shell\",\"code\":\"top\",\"sandbox_id\":\"sb\",\"pty\":{\"cols\":1000,\"rows\":1},"
		 "\"background\":true}")};
	static const char *const bad[] = {
		"{\"language\":\"shell\",\"code\":\"x\",\"sandbox_id\":\"sb\",\"pty\":{\"cols\":0,\"rows\":24}}",
		"{\"language\":\"shell\",\"code\":\"x\",\"sandbox_id\":\"sb\",\"pty\":{\"cols\":80,\"rows\":5000}}",
		"{\"language\":\"shell\",\"code\":\"x\",\"sandbox_id\":\"sb\",\"pty\":{\"cols\":80.5,\"rows\":24}}",
		("{\"language\":\"shell\",\"code\":\"x\",\"sandbox_id\":\"sb\",\"pty\":{\"cols\":80,\"rows\":24,"
		 "\"term\":1}}"),
		"{\"language\":\"shell\",\"code\":\"x\",\"sandbox_id\":\"sb\",\"pty\":true}",
		"{\"language\":\"shell\",\"code\":\"x\",\"sandbox_id\":\"sb\",\"pty\":{},\"background\":false}"};
	check_all(&c, TL_EXECUTE, good, N(good), 0);
	check_all(&c, TL_EXECUTE, bad, N(bad), -EINVAL);
	tl_catalog_clear(&c);
}

static void test_process_resize(void **state)
{
	(void)state;
	struct tl_catalog c = {0};
	char msg[SCH_MSG_MAX];
	assert_int_equal(tl_catalog_load(&c, msg), 0);
	static const char *const good[] = {
		"{\"sandbox_id\":\"sb\",\"action\":\"resize\",\"pid\":4,\"cols\":100,\"rows\":30}"};
	static const char *const bad[] = {
		"{\"sandbox_id\":\"sb\",\"action\":\"resize\",\"pid\":4,\"cols\":0,\"rows\":30}",
		"{\"sandbox_id\":\"sb\",\"action\":\"resize\",\"pid\":4,\"cols\":100,\"rows\":1001}",
		"{\"sandbox_id\":\"sb\",\"action\":\"resize\",\"pid\":4,\"cols\":\"100\",\"rows\":30}"};
	check_all(&c, TL_PROCESS, good, N(good), 0);
	check_all(&c, TL_PROCESS, bad, N(bad), -EINVAL);
	tl_catalog_clear(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_execute_pty),
		cmocka_unit_test(test_process_resize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
