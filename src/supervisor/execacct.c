/* execacct.c — an exec in a held sandbox accounted as airlock run's job is: a cgroup of its own beneath the sandbox's, and its share of the sandbox's egress proxy.
 *
 * Why a child cgroup: the sandbox's cgroup holds its init, its spares and every exec made so far,
 * so its peak memory, OOM kills and CPU time are the sandbox's life, not this exec's. The child
 * sets no limit (the sandbox's bound the exec, as they were enforced when it was made) and is
 * read and removed by the same code as any job's cgroup, so the verdict's status (oom included),
 * CPU time, peak memory, pids-limit hit and enforced.cgroup come out as airlock run's do. The
 * backend makes it with the exec's spare, ahead of the exec where it can (attach.c), and hands it
 * over in be_proc.cg.
 */
#include <errno.h>
#include <string.h>

#include "job.h"
#include "policy/policy.h"
#include "util/error.h"

/* How long the exec's end waits for its proxy connections to finish: its processes are gone, so
 * each connection thread sees its client's end closed at once unless a resolver holds it. */
#define EXEC_PX_WAIT_MS 500

int job_exec_acct_start(struct al_job *j, const struct al_policy *p, struct al_error *err)
{
	struct al_job *sj = sandbox_job(p->attach);
	if (!sj)
		return al_err(err, ESRCH, "setup: the sandbox is gone");
	/* The limits that bound the exec are the sandbox's: what it wanted, and (its cgroup) got. */
	memcpy(j->cg_wanted, sj->cg_wanted, sizeof(j->cg_wanted));
	j->held_cg = sj->cg;
	j->have_held_pids = sj->cg && cg_pids_max_count(sj->cg, &j->held_pids_max) == 0;
	if (p->net == AL_NET_ALLOW && sj->px) {
		j->held_px = sj->px;
		j->held_px_served = sj->proxy_served;
		struct px *before = NULL;
		if (px_take(sj->px, &j->start, 0, &before) == 0)
			px_free(before); /* made before this exec: no exec's (execs of a sandbox take turns) */
	}
	return 0;
}

void job_exec_acct_end(struct al_job *j)
{
	/* v1 and v2 before Linux 6.10 count a refused fork in the forking cgroup (the exec's); v2
	 * since counts it only where the limit is, the sandbox's cgroup, which no other exec uses
	 * meanwhile (execs of a sandbox take turns). */
	uint64_t n;
	if (j->have_cgu && j->have_held_pids && cg_pids_max_count(j->held_cg, &n) == 0 && n > j->held_pids_max)
		j->cgu.pids_limit_hit = true;
	if (!j->held_px || j->px)
		return;
	if (px_take(j->held_px, &j->start, EXEC_PX_WAIT_MS, &j->px) == 0)
		j->proxy_served = j->held_px_served;
}
