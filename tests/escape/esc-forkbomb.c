/* esc-forkbomb.c — hostile program: a fork bomb that never stops trying. */
/*
 * Usage: esc-forkbomb MARKER
 *   MARKER only rides in argv (every copy keeps it) so the driver can count the copies on
 *   the host; the bomb never reads it.
 * Every process forks as fast as it can, forever; the children do the same. The first
 * process reports its first failure once ("fork=EAGAIN") and how many forks it had made.
 * Expected defence: the cgroup pids limit (--pids: fork fails with EAGAIN and the verdict
 * says pids_limit_hit), the wall-clock limit ends the job, and killing the namespace's init
 * takes every copy with it.
 */
#include "esc.h"

int main(int argc, char **argv)
{
	(void)argv;
	esc_init();
	if (argc != 2) {
		fprintf(stderr, "usage: esc-forkbomb MARKER\n");
		return 2;
	}
	pid_t first = getpid();
	long made = 0;
	int reported = 0;
	for (;;) {
		pid_t pid = fork();
		if (pid > 0 && getpid() == first)
			made++;
		if (pid < 0 && getpid() == first && !reported) {
			printf("fork=%s\nforked-before-failure=%ld\n", esc_errname(errno), made);
			reported = 1;
		}
	}
}
