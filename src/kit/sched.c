/* sched.c — a job never inherits the caller's real-time class or raised priority.
 *
 * A process forked by a SCHED_FIFO/SCHED_RR thread is real-time too: such a job is not held by
 * the cgroup's CPU quota (CFS bandwidth applies to SCHED_OTHER tasks only) and can keep a CPU
 * from the host, and on cgroup v1 with real-time group scheduling it cannot even be moved into
 * the job's cpu cgroup (EINVAL). The kernel's reset-on-fork flag, set on the forking thread for
 * the span of the spawn, starts every child in SCHED_OTHER at nice 0 — before any cgroup sees
 * it, CLONE_INTO_CGROUP included (sched_fork comes first in copy_process). Only the calling
 * thread is touched, and only while it spawns. */
#include "sched.h"

#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif

void sched_fork_default(struct sched_saved *s)
{
	memset(s, 0, sizeof(*s));
	s->attr.size = sizeof(s->attr);
	if (syscall(SYS_sched_getattr, 0, &s->attr, sizeof(s->attr), 0) < 0 ||
	    (s->attr.flags & SCHED_FLAG_RESET_ON_FORK))
		return;
	bool rt = s->attr.policy == SCHED_FIFO || s->attr.policy == SCHED_RR;
	if (!rt && s->attr.nice >= 0)
		return; /* what a child inherits is no more than the default */
	typeof(s->attr) a = s->attr;
	a.flags |= SCHED_FLAG_RESET_ON_FORK;
	s->set = syscall(SYS_sched_setattr, 0, &a, 0) == 0;
}

void sched_fork_restore(const struct sched_saved *s)
{
	if (s->set)
		(void)syscall(SYS_sched_setattr, 0, &s->attr, 0);
}
