/* monitor.h — what the backends that run another program as the boundary (bwrap, crun, runsc) share:
 * starting their monitor and the process hygiene of every child between clone and execve.
 *
 * A monitor is the clone3 child of the supervisor that starts the boundary's program and reports
 * the payload's end on the status pipe (bwrap/bwchild.c, oci/ocichild.c). mon_start makes it in
 * the job's cgroup (clone3 into it on v2, attached before its release on v1) and releases it with
 * one byte on the sync pipe; the helpers below run in such children, and in the native backend's
 * init and payload: none allocates or formats. */
#ifndef AL_BACKEND_MONITOR_H
#define AL_BACKEND_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend/backend.h"

/* What mon_start needs: the monitor's entry and the descriptors only the supervisor keeps. */
struct mon_start {
	void (*main)(const void *arg); /* runs in the child, with arg; never returns */
	const void *arg;
	int sync_w;		/* write end of the sync pipe: one byte releases the monitor */
	int status_w;		/* the monitor's status pipe: a record if it cannot join the job's cgroups */
	const int *parent_only; /* closed in the child (negative entries ignored) */
	size_t nparent_only;
	const char *what; /* "the bwrap monitor": for messages */
};

/* Starts the monitor in io->cg and releases it: 0 with *pid and *pidfd (owned by the caller), or
 * -errno (the monitor, if it was started, is killed and reaped). */
int mon_start(const struct mon_start *m, const struct be_io *io, pid_t *pid, int *pidfd, struct al_error *err);

/* In a child the supervisor (pid supervisor, taken before the clone) just made: the supervisor's
 * death sends it sig from now on, and a death before now is caught here. The kernel sends the
 * parent-death signal only for a death after it was armed, and a supervisor killed right after
 * releasing its child leaves the release in the pipe: unchecked, the job would start with nobody
 * to watch or end it. False: the supervisor is gone (or prctl failed); the child exits at once. */
bool mon_tie_to(pid_t supervisor, int sig);

/* Every signal back to its default disposition, none blocked: a child of the supervisor, whose
 * front end blocks its stop signals and ignores others, must not pass that on. */
void mon_reset_signals(void);
/* Closes every descriptor >= 3 except the n in keep (negative entries are ignored); sorts keep.
 * 0 or -errno. */
int mon_close_all_but(int *keep, size_t n);
/* "INSIDE OUTSIDE 1\n" into a /proc/self map file (uid_map, gid_map): one id, mapped. 0 or -errno. */
int mon_write_map(const char *file, unsigned inside, unsigned outside);
/* In a user namespace just made (unshare, by a process whose ids were uid and gid before it):
 * setgroups denied, and inside mapped to uid and gid. 0, or -errno with *in_maps saying whether
 * the maps (or setgroups) failed. */
int mon_map_self(unsigned inside, unsigned uid, unsigned gid, bool *in_maps);

/* The egress proxy's listening socket, made on 127.0.0.1 in this process's network namespace (lo
 * up) and handed to the supervisor on proxy_sock ('p'); then, with cap on (may be NULL), the
 * capture's sockets ('u' the resolver's UDP, 't' its TCP, 'l' each port's listener) and 'e' last.
 * 0, or -errno with *what naming the step. No allocation. */
struct pol_capture;
int mon_hand_proxy_socket(int proxy_sock, const struct pol_capture *cap, const char **what);

#endif
