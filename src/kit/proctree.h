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

#endif
