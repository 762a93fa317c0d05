/* test_forkmm.c — unit tests for src/kit/forkmm.c: a process that sheds the libraries it does not
 * run keeps working (its own code, the C library, its forks), the shed ones are gone from its
 * address space, and an address it cannot place sheds nothing. Each check runs in a forked child,
 * since shedding takes this very test's libraries (cmocka's among them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/forkmm.h"

/* Whether /proc/self/maps names a mapping whose path holds needle (read with raw calls only). */
static int maps_mention(const char *needle)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	static char buf[1 << 20];
	size_t have = 0;
	ssize_t n;
	while (have < sizeof(buf) - 1 && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)n;
	close(fd);
	buf[have] = 0;
	return strstr(buf, needle) != NULL;
}

static int child_status(pid_t pid)
{
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* In the child: shed, check, fork once more; the exit code says which step failed. */
static _Noreturn void shed_and_fork(void)
{
	/* As hold.c keeps them: the C library's functions as reached from here (a sanitizer's
	 * runtime standing in for them stays), the loader last. */
	uintptr_t keep[] = {(uintptr_t)shed_and_fork, (uintptr_t)execve, (uintptr_t)open,
			    (uintptr_t)memcpy,	      (uintptr_t)strstr, (uintptr_t)getauxval(AT_BASE)};
	size_t nk = sizeof(keep) / sizeof(keep[0]);
	if (maps_mention("libcmocka") != 1)
		_exit(10); /* nothing to shed: the test would prove nothing */
	int n = fm_shed_objects(keep, keep[nk - 1] ? nk : nk - 1);
	if (n <= 0)
		_exit(11);
	if (maps_mention("libcmocka") != 0)
		_exit(12);
	if (maps_mention("libc.so") != 1 && keep[nk - 1])
		_exit(13);
	pid_t g = fork();
	if (g == 0)
		_exit(maps_mention("libcmocka") == 0 ? 7 : 8);
	_exit(g > 0 && child_status(g) == 7 ? 0 : 14);
}

static void test_shed(void **state)
{
	(void)state;
	assert_true(fm_bound_now((uintptr_t)shed_and_fork)); /* the project links with -z now */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		shed_and_fork();
	assert_int_equal(child_status(pid), 0);
}

static void test_unknown_address_sheds_nothing(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uintptr_t keep[2] = {(uintptr_t)execve, 1}; /* page 0 holds no file */
		int r = fm_shed_objects(keep, 2);
		_exit(r == -ENOENT && maps_mention("libcmocka") == 1 ? 0 : 1);
	}
	assert_int_equal(child_status(pid), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shed),
		cmocka_unit_test(test_unknown_address_sheds_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
