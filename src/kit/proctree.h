/* proctree.h — the processes and threads beneath a process, read from /proc. */
#ifndef AL_KIT_PROCTREE_H
#define AL_KIT_PROCTREE_H

#include <sys/types.h>

struct pt_census {
	unsigned processes; /* live descendants of the root (zombies not counted) */
	unsigned threads;   /* their threads, all told */
};

/* Counts what lives beneath root (root itself not counted): every descendant found through
 * /proc/PID/task/TID/children, each thread of each. 0, or -errno (root gone, /proc unreadable).
 * A census of a pid namespace's init counts everything in that namespace: orphans are its
 * children. */
int pt_census(pid_t root, struct pt_census *out);

/* The oldest live child of root (the lowest pid among its threads' children): a job's init has one,
 * its payload. 0 and *child, -ESRCH (none, or root gone). */
int pt_first_child(pid_t root, pid_t *child);
/* pid's number in the pid namespace `up` levels above its own (0: its own namespace's; 1: the
 * parent namespace's ...), from the NSpid line of /proc/PID/status. 0 and *out, -ERANGE (fewer
 * levels), or -errno. */
int pt_nspid(pid_t pid, unsigned up, pid_t *out);

#endif
