/* esc-ptrace.c — hostile program: trace, read or write the memory of other processes (the sandbox's init, a sibling, a host process). */
/*
 * Usage: esc-ptrace [HOST-VICTIM-PID]
 * Attempts: PTRACE_TRACEME; PTRACE_ATTACH and PTRACE_SEIZE of pid 1 (the sandbox's init,
 * which holds more privilege than the payload), of a forked sibling and of the host victim;
 * process_vm_readv/writev of them; open /proc/PID/mem for writing and write a word;
 * pidfd_getfd to steal pid 1's descriptors.
 * A sibling is the payload's own trust domain, so its /proc/PID/mem line is reported as
 * "info-" (a control: it shows the technique works when nothing forbids it); pid 1 and the
 * host victim are the targets that must hold.
 * Expected defence: seccomp (ptrace, process_vm_*, pidfd_getfd: EPERM); init is not dumpable
 * and runs as another id (/proc/1/mem: EACCES/EPERM); the pid namespace (host pid: ENOENT/ESRCH).
 */
#include "esc.h"

#include <signal.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

static volatile unsigned long target_word = 0x1111111111111111UL;

static void attack(const char *who, pid_t pid, int judged)
{
	char name[64], path[64];
	const char *pre = judged ? "" : "info-";
	snprintf(name, sizeof(name), "%sptrace-attach-%s", pre, who);
	if (esc_report(name, ptrace(PTRACE_ATTACH, pid, 0, 0)) == 0)
		ptrace(PTRACE_DETACH, pid, 0, 0);
	snprintf(name, sizeof(name), "%sptrace-seize-%s", pre, who);
	if (esc_report(name, ptrace(PTRACE_SEIZE, pid, 0, 0)) == 0)
		ptrace(PTRACE_DETACH, pid, 0, 0);

	unsigned long word = 0;
	struct iovec local = {.iov_base = &word, .iov_len = sizeof(word)};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)&target_word, .iov_len = sizeof(word)};
	snprintf(name, sizeof(name), "%sprocess_vm_readv-%s", pre, who);
	esc_report(name, process_vm_readv(pid, &local, 1, &remote, 1, 0));
	/* Writes only to the sibling's copy of target_word (the same static binary). */
	if (!judged) {
		word = 0x2222222222222222UL;
		snprintf(name, sizeof(name), "%sprocess_vm_writev-%s", pre, who);
		esc_report(name, process_vm_writev(pid, &local, 1, &remote, 1, 0));
	}

	/* /proc/PID/mem: the read-write open is the attack; a word is written only where it
	 * is our own binary (the sibling), at target_word. */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	snprintf(name, sizeof(name), "%sproc-mem-open-rw-%s", pre, who);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	esc_report(name, fd);
	if (fd >= 0) {
		snprintf(name, sizeof(name), "%sproc-mem-read-%s", pre, who);
		esc_report(name, pread(fd, &word, sizeof(word), (off_t)(unsigned long)&target_word));
		if (!judged) {
			word = 0x3333333333333333UL;
			snprintf(name, sizeof(name), "%sproc-mem-write-%s", pre, who);
			esc_report(name, pwrite(fd, &word, sizeof(word), (off_t)(unsigned long)&target_word));
		}
		close(fd);
	}
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	snprintf(name, sizeof(name), "%sproc-environ-%s", pre, who);
	esc_try_read(name, path);
}

int main(int argc, char **argv)
{
	esc_init();

	/* A sibling that waits to be attacked, then reports whether its memory changed. */
	int ready[2];
	if (pipe(ready) < 0)
		return 3;
	pid_t sib = fork();
	if (sib == 0) {
		close(ready[0]);
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		for (int i = 0; i < 200 && target_word == 0x1111111111111111UL; i++)
			usleep(10000);
		_exit(target_word == 0x1111111111111111UL ? 0 : 1);
	}
	char c;
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return 3;

	esc_report_init();
	attack("init", 1, 1);
	if (argc > 1)
		attack("host", (pid_t)esc_num(argv[1]), 1);
	attack("sibling", sib, 0);

	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	esc_report("pidfd-open-init", pfd);
	if (pfd >= 0) {
		esc_report("pidfd_getfd-init", syscall(SYS_pidfd_getfd, pfd, 0, 0));
		close(pfd);
	}

	int st = 0;
	kill(sib, SIGKILL);
	waitpid(sib, &st, 0);

	/* Last, since a successful TRACEME changes how we are treated: trace me, then stop. */
	pid_t child = fork();
	if (child == 0) {
		long r = ptrace(PTRACE_TRACEME, 0, 0, 0);
		printf("ptrace-traceme=%s\n", r == 0 ? "OK" : esc_errname(errno));
		_exit(0);
	}
	waitpid(child, &st, 0);
	return 0;
}
