/* esc-spin.c — hostile program: burn CPU forever, in several processes, ignoring the CPU-limit signal. */
/*
 * Usage: esc-spin NPROC
 * Forks NPROC-1 copies; every copy ignores SIGXCPU (the soft RLIMIT_CPU warning), tries to
 * raise its own RLIMIT_CPU (reported once), and spins.
 * Expected defence: RLIMIT_CPU with the hard limit at the soft one (--cpu-time: SIGKILL at
 * the hard limit, whatever the process ignores), the wall-clock limit (--time: the whole
 * namespace is killed, status "timeout"), and the cgroup CPU quota (--cpus) for the host's share.
 */
#include "esc.h"

#include <signal.h>
#include <sys/resource.h>

int main(int argc, char **argv)
{
	esc_init();
	if (argc != 2) {
		fprintf(stderr, "usage: esc-spin NPROC\n");
		return 2;
	}
	long n = (long)esc_num(argv[1]);
	signal(SIGXCPU, SIG_IGN);
	struct rlimit rl;
	getrlimit(RLIMIT_CPU, &rl);
	printf("cpu-soft=%lld\ncpu-hard=%lld\n", (long long)rl.rlim_cur, (long long)rl.rlim_max);
	struct rlimit up = {RLIM_INFINITY, RLIM_INFINITY};
	esc_report("raise-cpu-limit", setrlimit(RLIMIT_CPU, &up));
	for (long i = 1; i < n; i++)
		if (fork() == 0)
			break;
	for (volatile unsigned long x = 0;; x++)
		;
}
