/* pidfd.h — clone3 with a pidfd, and the pidfd calls the supervisor and airlock-runc need (raw syscalls, ioctls). */
#ifndef AL_KIT_PIDFD_H
#define AL_KIT_PIDFD_H

#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

/* fork-like clone3: returns the child's pid in the parent (and *pidfd), 0 in the child, -errno on failure.
 * cgroup_fd >= 0 starts the child directly in that cgroup (CLONE_INTO_CGROUP, cgroup v2). */
pid_t pfd_clone3(uint64_t ns_flags, int *pidfd, int cgroup_fd);
int pfd_send_signal(int pidfd, int sig);
/* The pid (in our pid namespace) of a pidfd's process, from /proc/self/fdinfo: -errno when it is gone. */
pid_t pfd_pid(int pidfd);
/* waitid(P_PIDFD) with the rusage of the child and of every descendant it reaped. */
int pfd_wait(int pidfd, siginfo_t *info, struct rusage *ru, int options);

/* The exit status (in waitpid's form) that a pidfd keeps of its process once that process has
 * been reaped, by whichever parent reaped it (PIDFD_GET_INFO with PIDFD_INFO_EXIT, Linux 6.15).
 * 0 and *wstatus; -EAGAIN: the process is not reaped yet (alive, or a zombie); -EOPNOTSUPP: the
 * kernel keeps no exit status for a pidfd; another -errno: the ioctl failed. */
int pfd_exit_status(int pidfd, int *wstatus);
/* Whether this kernel keeps exit statuses (pfd_exit_status): asked of a child of our own, made,
 * reaped and read for the purpose, since the kernel has no other way to tell (its ioctl ignores
 * flags it does not know). Costs one fork. 1: it does; 0: it does not; -errno: no child to ask. */
int pfd_exit_status_supported(void);

#endif
