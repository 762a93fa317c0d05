/* esc-signal.c — hostile program: see and signal host processes. */
/*
 * Usage: esc-signal [scan-max=N] VICTIM-PID...
 *   scan-max=N bounds the kill(pid, 0) scan (default: pid_max). Under gVisor each system call
 *   is a round trip through the Sentry (ptrace platform: tens of microseconds), and gVisor has
 *   no /proc/sys/kernel/pid_max, so a 4M-pid scan takes minutes; its pids are its own, numbered
 *   from 1, so a shorter scan still counts everything it shows. The victims are tried by pid.
 *   VICTIM-PIDs are host processes the driver started (sleepers, one of them running as the
 *   payload's own host uid, so permissions alone would not save it).
 * Attempts: count every pid that answers kill(pid, 0) up to pid_max (signal 0 delivers
 * nothing: it only asks whether the pid exists); list /proc; kill(-1, 0); then SIGKILL to
 * each victim by pid, through pidfd_open + pidfd_send_signal and rt_sigqueueinfo, and a
 * stat of /proc/VICTIM. Real signals go only to the victims' exact pids, which cannot name
 * anything else if the sandbox failed.
 * Expected defence: the pid namespace (host pids do not exist inside: ESRCH; /proc is the
 * namespace's own), Landlock ABI 6 signal scoping as a second wall.
 */
#include "esc.h"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	char buf[64];

	esc_init();
	long pid_max = 4194304;
	if (esc_slurp("/proc/sys/kernel/pid_max", buf, sizeof(buf)) == 0)
		pid_max = atol(buf);
	if (pid_max <= 0 || pid_max > 4194304)
		pid_max = 4194304;
	int first = 1;
	if (argc > 1 && strncmp(argv[1], "scan-max=", 9) == 0) {
		long m = (long)esc_num(argv[1] + 9);
		if (m > 0 && m < pid_max)
			pid_max = m;
		first = 2;
	}

	/* Every pid that exists from here (0 or EPERM both mean "it exists"). */
	long visible = 0, shown = 0;
	printf("visible-pids=");
	for (long pid = 1; pid <= pid_max; pid++) {
		if (kill((pid_t)pid, 0) == 0 || errno == EPERM) {
			visible++;
			if (shown++ < 32)
				printf("%s%ld", shown > 1 ? "," : "", pid);
		}
	}
	printf("\nvisible-count=%ld\nscanned=%ld\n", visible, pid_max);

	long in_proc = 0;
	DIR *d = opendir("/proc");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
				in_proc++;
		closedir(d);
	}
	printf("proc-count=%ld\n", in_proc);
	esc_report("kill-all-0", kill(-1, 0));

	for (int i = first; i < argc; i++) {
		pid_t victim = (pid_t)esc_num(argv[i]);
		struct stat st;
		snprintf(buf, sizeof(buf), "/proc/%d", (int)victim);
		esc_reportf(stat(buf, &st), "proc-stat-%d", (int)victim);
		esc_reportf(kill(victim, 0), "kill0-%d", (int)victim);
		esc_reportf(kill(victim, SIGKILL), "kill-%d", (int)victim);
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		si.si_signo = SIGKILL;
		si.si_code = SI_QUEUE;
		esc_reportf(syscall(SYS_rt_sigqueueinfo, victim, SIGKILL, &si), "sigqueue-%d", (int)victim);
		int pfd = (int)syscall(SYS_pidfd_open, victim, 0);
		esc_reportf(pfd, "pidfd-open-%d", (int)victim);
		if (pfd >= 0) {
			esc_reportf(syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0), "pidfd-kill-%d",
				    (int)victim);
			close(pfd);
		}
	}
	return 0;
}
