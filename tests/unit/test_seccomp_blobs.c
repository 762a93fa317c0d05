/* test_seccomp_blobs.c — the filters compiled at build time are exactly what libseccomp compiles now. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kit/seccomp.h"
#include "kit/seccomp_blobs.h"

static void test_blobs_match_fresh_compile(void **state)
{
	(void)state;
	for (unsigned k = 0; k < SC_NBLOBS; k++) {
		struct sc_options o;
		struct sock_fprog prog = {0};
		struct al_error err = {0};
		sc_options_from_key(k, &o);
		assert_int_equal(sc_options_key(&o), k);
		assert_int_equal(sc_compile(&o, &prog, &err), 0);
		assert_int_equal(prog.len, sc_blobs[k].len);
		assert_memory_equal(prog.filter, sc_blobs[k].code, prog.len * sizeof(struct sock_filter));
		free(prog.filter);
	}
}

static void test_build_uses_blob(void **state)
{
	(void)state;
	struct sc_options o = {.profile = AL_SECCOMP_STRICT, .allow_inet = true};
	struct sc_filter f;
	assert_int_equal(sc_build(&o, &f, NULL), 0);
	unsigned k = sc_options_key(&o);
	assert_int_equal(f.prog.len, sc_blobs[k].len);
	assert_memory_equal(f.prog.filter, sc_blobs[k].code, f.prog.len * sizeof(struct sock_filter));
	assert_ptr_not_equal(f.prog.filter, sc_blobs[k].code); /* a copy the caller frees */
	sc_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blobs_match_fresh_compile),
		cmocka_unit_test(test_build_uses_blob),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
