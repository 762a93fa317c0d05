/* pidfd.h — clone3 with a pidfd, and the pidfd calls the supervisor needs (raw syscalls). */
#ifndef AL_NATIVE_PIDFD_H
#define AL_NATIVE_PIDFD_H

#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

/* fork-like clone3: returns the child's pid in the parent (and *pidfd), 0 in the child, -errno on failure.
 * cgroup_fd >= 0 starts the child directly in that cgroup (CLONE_INTO_CGROUP, cgroup v2). */
pid_t pfd_clone3(uint64_t ns_flags, int *pidfd, int cgroup_fd);
int pfd_send_signal(int pidfd, int sig);
/* waitid(P_PIDFD) with the rusage of the child and of every descendant it reaped. */
int pfd_wait(int pidfd, siginfo_t *info, struct rusage *ru, int options);

#endif
