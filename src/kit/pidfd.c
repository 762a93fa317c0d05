/* pidfd.c — clone3 and pidfd system calls, which glibc 2.36 does not wrap (or wraps without rusage). */
#include "pidfd.h"

#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

pid_t pfd_clone3(uint64_t ns_flags, int *pidfd, int cgroup_fd)
{
	struct clone_args args;
	memset(&args, 0, sizeof(args));
	args.flags = ns_flags | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)pidfd;
	args.exit_signal = SIGCHLD;
	if (cgroup_fd >= 0) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)cgroup_fd;
	}
	long r = syscall(SYS_clone3, &args, sizeof(args));
	return r < 0 ? -errno : (pid_t)r;
}

int pfd_send_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int pfd_wait(int pidfd, siginfo_t *info, struct rusage *ru, int options)
{
	long r;
	do
		r = syscall(SYS_waitid, P_PIDFD, pidfd, info, options, ru);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}
