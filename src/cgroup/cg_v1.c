/* cg_v1.c — cgroup v1, one hierarchy at a time: memory/memsw, pids and CFS bandwidth limits, cpuacct and memory accounting. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "util/error.h"

static int cg_v1_memory(int dirfd, uint64_t bytes, struct cg_enforced *e, struct al_error *err)
{
	char buf[256];
	int r;
	/* oom_kill_disable is inherited from the parent: with it set, a job at its limit would
	 * hang instead of being killed. Make sure the OOM killer stays on. */
	if (cg_read_at(dirfd, "memory.oom_control", buf, sizeof(buf)) > 0) {
		uint64_t off = 0;
		if (cg_parse_keyed(buf, "oom_kill_disable", &off) == 0 && off != 0 &&
		    (r = cg_write_at(dirfd, "memory.oom_control", "0")) < 0)
			return al_err_sys(err, -r, "re-enabling the OOM killer (memory.oom_control)");
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)bytes);
	if ((r = cg_write_at(dirfd, "memory.limit_in_bytes", buf)) < 0)
		return al_err_sys(err, -r, "memory.limit_in_bytes %s", buf);
	/* memory+swap equal to memory: no swap. It must be written after limit_in_bytes (the
	 * kernel keeps memsw >= memory). Absent without swap accounting (swapaccount=0). */
	r = cg_write_at(dirfd, "memory.memsw.limit_in_bytes", buf);
	if (r < 0 && r != -ENOENT)
		return al_err_sys(err, -r, "memory.memsw.limit_in_bytes %s", buf);
	e->swap_off = r == 0;
	if (r == -ENOENT)
		(void)cg_write_at(dirfd, "memory.swappiness", "0"); /* the next best thing; best effort */
	e->memory = true;
	return 0;
}

int cg_v1_apply(int dirfd, unsigned ctrls, const struct cg_limits *lim, struct cg_enforced *e, struct al_error *err)
{
	char buf[64];
	int r;
	if ((ctrls & CG_BIT(HOST_CG_MEMORY)) && lim->memory_bytes != AL_UNLIMITED &&
	    (r = cg_v1_memory(dirfd, lim->memory_bytes, e, err)) < 0)
		return r;
	if ((ctrls & CG_BIT(HOST_CG_PIDS)) && lim->pids != AL_UNLIMITED) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids);
		if ((r = cg_write_at(dirfd, "pids.max", buf)) < 0)
			return al_err_sys(err, -r, "pids.max %s", buf);
		e->pids = true;
	}
	if ((ctrls & CG_BIT(HOST_CG_CPU)) && lim->cpu_millis != AL_UNLIMITED) {
		uint64_t q;
		if (cg_cpu_quota_us(lim->cpu_millis, &q) < 0)
			return al_err(err, EINVAL, "cpu: %llu milli-CPUs is below the kernel's minimum of 10",
				      (unsigned long long)lim->cpu_millis);
		snprintf(buf, sizeof(buf), "%llu", CG_CPU_PERIOD_US);
		if ((r = cg_write_at(dirfd, "cpu.cfs_period_us", buf)) < 0)
			return al_err_sys(err, -r, "cpu.cfs_period_us %s", buf);
		snprintf(buf, sizeof(buf), "%" PRIu64, q);
		if ((r = cg_write_at(dirfd, "cpu.cfs_quota_us", buf)) < 0)
			return al_err_sys(err, -r, "cpu.cfs_quota_us %s", buf);
		e->cpu = true;
	}
	return 0;
}

static bool cg_v1_u64(struct cg_files *f, const char *file, uint64_t *v)
{
	char buf[64];
	/* NOLINTNEXTLINE(cert-err34-c): a number the kernel wrote into a cgroup file, not input to validate */
	return cg_read_file(f, file, buf, sizeof(buf)) > 0 && sscanf(buf, "%" SCNu64, v) == 1;
}

/* cpuacct.usage is exact (ns of runtime); the user/system split is tick-sampled in both
 * cpuacct.usage_user/usage_sys (ns, 4.x+) and cpuacct.stat (USER_HZ ticks), and can miss a
 * short job entirely. So the exact total is split in the sampled proportion. */
static void cg_v1_cpu(struct cg_files *f, struct cg_usage *u)
{
	char buf[256];
	uint64_t total_ns = 0, un, sn;
	double us = 0, ss = 0;
	bool have_total = cg_v1_u64(f, "cpuacct.usage", &total_ns);
	if (cg_v1_u64(f, "cpuacct.usage_user", &un) && cg_v1_u64(f, "cpuacct.usage_sys", &sn)) {
		us = (double)un / 1e9;
		ss = (double)sn / 1e9;
	} else if (cg_read_file(f, "cpuacct.stat", buf, sizeof(buf)) > 0) {
		cg_parse_cpuacct_stat(buf, sysconf(_SC_CLK_TCK), &us, &ss);
	}
	if (have_total)
		cg_split_cpu((double)total_ns / 1e9, us, ss, &u->user_s, &u->system_s);
	else {
		u->user_s = us;
		u->system_s = ss;
	}
	u->cpu_accounted = have_total || us > 0 || ss > 0;
}

static void cg_v1_mem(struct cg_files *f, struct cg_usage *u)
{
	char buf[256];
	uint64_t v;
	if (cg_v1_u64(f, "memory.max_usage_in_bytes", &v))
		u->peak_memory_bytes = v;
	if (cg_v1_u64(f, "memory.usage_in_bytes", &v))
		u->memory_bytes = v;
	if (cg_read_file(f, "memory.oom_control", buf, sizeof(buf)) > 0 && cg_parse_oom_control(buf, &v) == 0)
		u->oom_kills = v;
	else if (cg_v1_u64(f, "memory.failcnt", &v) && v > 0)
		u->oom_kills = 1; /* before 4.13: the limit was hit; the best hint there is */
}

void cg_v1_account(struct cg_files *f, unsigned ctrls, struct cg_usage *u)
{
	char buf[256];
	if (ctrls & CG_BIT(HOST_CG_CPUACCT))
		cg_v1_cpu(f, u);
	if (ctrls & CG_BIT(HOST_CG_MEMORY))
		cg_v1_mem(f, u);
	if ((ctrls & CG_BIT(HOST_CG_PIDS)) && cg_read_file(f, "pids.events", buf, sizeof(buf)) > 0)
		cg_parse_pids_events(buf, &u->pids_limit_hit);
}
