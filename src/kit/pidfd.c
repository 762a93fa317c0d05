/* pidfd.c — clone3 and pidfd system calls, which glibc 2.36 does not wrap (or wraps without rusage). */
#include "pidfd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"

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

/* The kernel's PIDFD_GET_INFO interface (include/uapi/linux/pidfd.h of Linux 6.15), declared here
 * because the C library's headers this builds against predate it. The structure is versioned by
 * size (the ioctl's number carries it): its first version, 64 bytes, already holds exit_code, and
 * a newer kernel answers a smaller structure with the fields it has. */
struct pfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
_Static_assert(sizeof(struct pfd_info) == 64, "PIDFD_INFO_SIZE_VER0");
#define PFD_INFO_PID  (1ULL << 0)
#define PFD_INFO_EXIT (1ULL << 3)
#define PFD_GET_INFO  _IOWR(0xFF, 11, struct pfd_info)

int pfd_exit_status(int pidfd, int *wstatus)
{
	struct pfd_info info;
	memset(&info, 0, sizeof(info));
	info.mask = PFD_INFO_EXIT;
	if (ioctl(pidfd, PFD_GET_INFO, &info) < 0) {
		/* ENOTTY/EINVAL: no PIDFD_GET_INFO (before 6.13); ESRCH: the process is reaped and the
		 * kernel kept nothing of it (6.13, 6.14). */
		if (errno == ENOTTY || errno == EINVAL || errno == ESRCH)
			return -EOPNOTSUPP;
		return -errno;
	}
	if (info.mask & PFD_INFO_EXIT) {
		*wstatus = info.exit_code;
		return 0;
	}
	/* The kernel answered about a live process (or a zombie): its exit status comes at the reap. */
	return (info.mask & PFD_INFO_PID) ? -EAGAIN : -EOPNOTSUPP;
}

int pfd_exit_status_supported(void)
{
	int fd = -1, st;
	pid_t pid = pfd_clone3(0, &fd, -1);
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return (int)pid;
	siginfo_t si;
	int r = pfd_wait(fd, &si, NULL, WEXITED);
	if (r == 0)
		r = pfd_exit_status(fd, &st);
	close(fd);
	return r == 0 ? 1 : r == -EOPNOTSUPP ? 0 : r;
}

/* The host pid of a pidfd's process, from /proc/self/fdinfo: -errno when it is gone. */
pid_t pfd_pid(int pidfd)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -errno;
	buf[n] = 0;
	const char *p = strstr(buf, "\nPid:");
	long pid = p ? strtol(p + 5, NULL, 10) : -1;
	return pid > 0 ? (pid_t)pid : -ESRCH;
}
