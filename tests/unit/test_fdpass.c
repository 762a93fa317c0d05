/* test_fdpass.c — unit tests for src/util/fdpass.c: a tag alone, one and several descriptors
 * across a unix socket; a message with more descriptors than asked for is refused and what it
 * carried is closed; nothing to receive, without waiting, is -ENOENT; a waiting receive gets a
 * message sent later by another process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fdpass.h"

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/* Whether a and b are the same open file (the received copy of a sent descriptor). */
static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void test_tag_alone(void **state)
{
	(void)state;
	int sv[2], fds[AL_FDPASS_MAX];
	char tag = 0;
	pair(sv);
	assert_int_equal(al_send_fds(sv[0], NULL, 0, 'c'), 0);
	assert_int_equal(al_recv_fds(sv[1], fds, AL_FDPASS_MAX, &tag, false), 0);
	assert_int_equal(tag, 'c');
	/* al_recv_fd wants exactly one descriptor. */
	assert_int_equal(al_send_fds(sv[0], NULL, 0, 'x'), 0);
	assert_int_equal(al_recv_fd(sv[1], &tag), -EPROTO);
	close(sv[0]);
	close(sv[1]);
}

static void test_several(void **state)
{
	(void)state;
	int sv[2], p1[2], p2[2], p3[2], got[AL_FDPASS_MAX];
	char tag = 0;
	pair(sv);
	assert_int_equal(pipe2(p1, O_CLOEXEC), 0);
	assert_int_equal(pipe2(p2, O_CLOEXEC), 0);
	assert_int_equal(pipe2(p3, O_CLOEXEC), 0);
	int send[3] = {p1[1], p2[1], p3[1]};
	assert_int_equal(al_send_fds(sv[0], send, 3, 't'), 0);
	assert_int_equal(al_recv_fds(sv[1], got, AL_FDPASS_MAX, &tag, false), 3);
	assert_int_equal(tag, 't');
	for (int i = 0; i < 3; i++) {
		assert_true(same_file(got[i], send[i]));
		assert_int_equal(fcntl(got[i], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
		close(got[i]);
	}
	/* One descriptor through al_send_fd and al_recv_fd. */
	assert_int_equal(al_send_fd(sv[0], p1[0], 'p'), 0);
	int one = al_recv_fd(sv[1], &tag);
	assert_true(one >= 0);
	assert_int_equal(tag, 'p');
	assert_true(same_file(one, p1[0]));
	close(one);
	/* More than AL_FDPASS_MAX cannot be sent. */
	int many[AL_FDPASS_MAX + 1];
	for (int i = 0; i <= AL_FDPASS_MAX; i++)
		many[i] = p1[0];
	assert_int_equal(al_send_fds(sv[0], many, AL_FDPASS_MAX + 1, 'm'), -EINVAL);
	close(sv[0]);
	close(sv[1]);
	for (int i = 0; i < 2; i++) {
		close(p1[i]);
		close(p2[i]);
		close(p3[i]);
	}
}

/* Three descriptors to a receiver with room for two: refused, and none of the three stays open
 * in the receiver (the pipe's write end, closed by the sender, then reads as ended). */
static void test_too_many(void **state)
{
	(void)state;
	int sv[2], p[2], got[2] = {-1, -1};
	char tag = 0;
	pair(sv);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	int send[3] = {p[1], p[1], p[1]};
	assert_int_equal(al_send_fds(sv[0], send, 3, 't'), 0);
	close(p[1]);
	assert_int_equal(al_recv_fds(sv[1], got, 2, &tag, false), -EPROTO);
	char b;
	assert_int_equal(read(p[0], &b, 1), 0); /* no write end is left anywhere */
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
}

static void test_nothing_and_wait(void **state)
{
	(void)state;
	int sv[2], fds[1];
	char tag = 0;
	pair(sv);
	assert_int_equal(al_recv_fds(sv[1], fds, 1, &tag, false), -ENOENT);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		usleep(50 * 1000);
		_exit(al_send_fds(sv[0], NULL, 0, 'g') == 0 ? 0 : 1);
	}
	assert_int_equal(al_recv_fds(sv[1], fds, 1, &tag, true), 0);
	assert_int_equal(tag, 'g');
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The peer gone: a waiting receive returns at once. */
	close(sv[0]);
	assert_int_equal(al_recv_fds(sv[1], fds, 1, &tag, true), -ENOENT);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tag_alone),
		cmocka_unit_test(test_several),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_nothing_and_wait),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
