/* sched.h — the scheduling class a job starts with: the default, never the caller's. */
#ifndef AL_KIT_SCHED_H
#define AL_KIT_SCHED_H

#include <stdbool.h>
#include <stdint.h>

/* The calling thread's scheduling attributes, as sched_getattr(2) reports them. */
struct sched_saved {
	bool set; /* sched_fork_default changed them; sched_fork_restore puts them back */
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
		uint32_t util_min, util_max;
	} attr;
};

/* Until sched_fork_restore, every process the calling thread forks starts in the default class
 * (SCHED_OTHER, nice 0) when the thread runs real-time or above nice 0 (SCHED_RESET_ON_FORK);
 * otherwise nothing changes. No allocation. */
void sched_fork_default(struct sched_saved *s);
/* Clears what sched_fork_default set (where the kernel lets us: without CAP_SYS_NICE the
 * reset-on-fork flag stays on the thread, which only keeps its later forks in the default class). */
void sched_fork_restore(const struct sched_saved *s);

#endif
