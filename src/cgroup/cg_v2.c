/* cg_v2.c — cgroup v2: the delegated parent of the job cgroups, limits through memory.max/pids.max/cpu.max, accounting.
 *
 * The no-internal-process rule: a non-root cgroup that holds processes cannot enable
 * controllers for its children (EBUSY), and no process may join a non-root cgroup that
 * has. Our own cgroup B holds at least us, so
 *
 *   B                    subtree_control +memory +pids +cpu   (no processes any more)
 *   ├── airlock.self     the processes that were in B, ourselves included
 *   └── airlock.jobs     subtree_control +memory +pids +cpu
 *       └── airlock-<pid>-<n>-<rand>    one per job, limits set here
 *
 * Moving B's processes one level down is what systemd documents for a delegated subtree
 * (and what nsjail does for itself). It is safe: they stay inside B, under B's limits, in
 * the subtree delegated to us; the kernel checks our write access to B's cgroup.procs for
 * each move. When B is the root cgroup (which is exempt from the rule) nothing moves.
 * airlock.jobs keeps the job cgroups apart from the leaf so that stale cleanup scans one
 * directory. A later airlock started from inside airlock.self finds B through cg_detect.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "util/cleanup.h"
#include "util/error.h"

static const enum host_cg_ctrl cg_v2_ctrls[] = {HOST_CG_MEMORY, HOST_CG_PIDS, HOST_CG_CPU};

static int cg_v2_move(pid_t pid, void *arg)
{
	int self_fd = *(int *)arg;
	char buf[24];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	int r = cg_write_at(self_fd, "cgroup.procs", buf);
	return r == -ESRCH ? 0 : r; /* it exited meanwhile */
}

/* Moves every process of base into base/leaf; new forks land in the next round. */
static int cg_v2_vacate(int base_fd, const char *base, const char *leaf, struct al_error *err)
{
	if (mkdirat(base_fd, leaf, 0755) < 0 && errno != EEXIST)
		return al_err_sys(err, errno, "mkdir %s/%s", base, leaf);
	cleanup_close int self_fd = openat(base_fd, leaf, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (self_fd < 0)
		return al_err_sys(err, errno, "open %s/%s", base, leaf);
	for (int round = 0; round < 20; round++) {
		int n = cg_for_each_pid(base_fd, cg_v2_move, &self_fd);
		if (n == 0)
			return 0;
		if (n < 0)
			return al_err_sys(err, -n, "moving the processes of %s into %s", base, leaf);
	}
	return al_err(err, EBUSY, "processes keep appearing in %s", base);
}

/* Enables each wanted controller in dir's subtree_control; one write each, so one refusal
 * does not cost the others. Returns the mask enabled (already or now). */
static unsigned cg_v2_enable(int dir_fd, unsigned want, int why[])
{
	char cur[256] = "", op[32];
	unsigned got = 0;
	cg_read_at(dir_fd, "cgroup.subtree_control", cur, sizeof(cur));
	for (size_t i = 0; i < AL_ARRAY_SIZE(cg_v2_ctrls); i++) {
		enum host_cg_ctrl c = cg_v2_ctrls[i];
		const char *name = host_cg_ctrl_name(c);
		if (!(want & CG_BIT(c)))
			continue;
		if (host_cg_list_has(cur, name)) {
			got |= CG_BIT(c);
			continue;
		}
		snprintf(op, sizeof(op), "+%s", name);
		int r = cg_write_at(dir_fd, "cgroup.subtree_control", op);
		if (r == 0)
			got |= CG_BIT(c);
		else
			why[c] = -r;
	}
	return got;
}

int cg_v2_prepare(const char *base, unsigned want, unsigned *got, int why[HOST_CG__COUNT], int *jobs_fd,
		  struct al_error *err)
{
	*got = 0;
	*jobs_fd = -1;
	cleanup_close int base_fd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0)
		return al_err_sys(err, errno, "open %s", base);
	/* Only the root cgroup lacks cgroup.type; it may hold processes and enable controllers. */
	bool root = faccessat(base_fd, "cgroup.type", F_OK, 0) < 0 && errno == ENOENT;
	char avail[256] = "";
	cg_read_at(base_fd, "cgroup.controllers", avail, sizeof(avail));
	for (size_t i = 0; i < AL_ARRAY_SIZE(cg_v2_ctrls); i++)
		if (!host_cg_list_has(avail, host_cg_ctrl_name(cg_v2_ctrls[i])))
			want &= ~CG_BIT(cg_v2_ctrls[i]);
	char cur[256] = "";
	cg_read_at(base_fd, "cgroup.subtree_control", cur, sizeof(cur));
	bool missing = false;
	for (size_t i = 0; i < AL_ARRAY_SIZE(cg_v2_ctrls); i++)
		missing |= (want & CG_BIT(cg_v2_ctrls[i])) && !host_cg_list_has(cur, host_cg_ctrl_name(cg_v2_ctrls[i]));
	/* Vacate before enabling anything: the threaded controllers (pids, cpu) can be enabled
	 * beside processes, but that makes base a thread root, and then no domain child of it
	 * (airlock.self included) can take processes. */
	if (missing && !root && cg_has_procs(base_fd) > 0) {
		int r = cg_v2_vacate(base_fd, base, CG_V2_SELF, err);
		if (r == -EOPNOTSUPP)
			al_err_prefix(err, "%s holds processes and has threaded controllers enabled (%s)", base, cur);
		if (r < 0)
			return r;
	}
	unsigned in_base = cg_v2_enable(base_fd, want, why);
	if (mkdirat(base_fd, CG_V2_JOBS, 0755) < 0 && errno != EEXIST)
		return al_err_sys(err, errno, "mkdir %s/%s", base, CG_V2_JOBS);
	int fd = openat(base_fd, CG_V2_JOBS, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return al_err_sys(err, errno, "open %s/%s", base, CG_V2_JOBS);
	*got = cg_v2_enable(fd, in_base, why);
	*jobs_fd = fd;
	return 0;
}

int cg_v2_nest(int dir_fd, const char *path, unsigned ctrls, struct al_error *err)
{
	unsigned want = ctrls & (CG_BIT(HOST_CG_MEMORY) | CG_BIT(HOST_CG_PIDS) | CG_BIT(HOST_CG_CPU));
	char cur[256] = "";
	cg_read_at(dir_fd, "cgroup.subtree_control", cur, sizeof(cur));
	bool missing = false;
	for (size_t i = 0; i < AL_ARRAY_SIZE(cg_v2_ctrls); i++)
		missing |= (want & CG_BIT(cg_v2_ctrls[i])) && !host_cg_list_has(cur, host_cg_ctrl_name(cg_v2_ctrls[i]));
	if (!missing)
		return 0; /* done by an earlier child */
	/* Safe: the processes stay beneath the job cgroup, under its limits; only we could move them. */
	int r = cg_v2_vacate(dir_fd, path, CG_V2_HELD, err);
	if (r < 0)
		return r;
	int why[HOST_CG__COUNT] = {0};
	unsigned got = cg_v2_enable(dir_fd, want, why);
	for (size_t i = 0; i < AL_ARRAY_SIZE(cg_v2_ctrls); i++)
		if ((want & CG_BIT(cg_v2_ctrls[i])) && !(got & CG_BIT(cg_v2_ctrls[i])))
			return al_err_sys(err, why[cg_v2_ctrls[i]] ? why[cg_v2_ctrls[i]] : EPERM,
					  "enabling %s for the children of %s", host_cg_ctrl_name(cg_v2_ctrls[i]),
					  path);
	return 0;
}

int cg_v2_apply(int dirfd, unsigned ctrls, const struct cg_limits *lim, struct cg_enforced *e, struct al_error *err)
{
	char buf[64];
	int r;
	if ((ctrls & CG_BIT(HOST_CG_MEMORY)) && lim->memory_bytes != AL_UNLIMITED) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->memory_bytes);
		if ((r = cg_write_at(dirfd, "memory.max", buf)) < 0)
			return al_err_sys(err, -r, "memory.max %s", buf);
		/* Swap off. Without swap accounting (no memory.swap.max: swapaccount=0 or no
		 * CONFIG_MEMCG_SWAP) the cgroup cannot bound swap; memory.max still bounds RAM. */
		r = cg_write_at(dirfd, "memory.swap.max", "0");
		if (r < 0 && r != -ENOENT)
			return al_err_sys(err, -r, "memory.swap.max 0");
		e->swap_off = r == 0;
		e->memory = true;
	}
	if ((ctrls & CG_BIT(HOST_CG_PIDS)) && lim->pids != AL_UNLIMITED) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids);
		if ((r = cg_write_at(dirfd, "pids.max", buf)) < 0)
			return al_err_sys(err, -r, "pids.max %s", buf);
		e->pids = true;
	}
	if ((ctrls & CG_BIT(HOST_CG_CPU)) && lim->cpu_millis != AL_UNLIMITED) {
		if (cg_cpu_max_format(lim->cpu_millis, buf, sizeof(buf)) < 0)
			return al_err(err, EINVAL, "cpu: %llu milli-CPUs is below the kernel's minimum of 10",
				      (unsigned long long)lim->cpu_millis);
		if ((r = cg_write_at(dirfd, "cpu.max", buf)) < 0)
			return al_err_sys(err, -r, "cpu.max %s", buf);
		e->cpu = true;
	}
	return 0;
}

void cg_v2_account(struct cg_files *f, unsigned ctrls, struct cg_usage *u)
{
	char buf[2048];
	uint64_t v;
	/* cpu.stat's usage fields are there without the cpu controller (core accounting). */
	if ((ctrls & CG_BIT(HOST_CG_CPUACCT)) && cg_read_file(f, "cpu.stat", buf, sizeof(buf)) > 0)
		u->cpu_accounted = cg_parse_cpu_stat(buf, &u->user_s, &u->system_s) == 0;
	if (ctrls & CG_BIT(HOST_CG_MEMORY)) {
		/* memory.peak appeared in 5.19; before it the peak is unknown (0). */
		/* NOLINTNEXTLINE(cert-err34-c): a number the kernel wrote into a cgroup file, not input to validate */
		if (cg_read_file(f, "memory.peak", buf, sizeof(buf)) > 0 && sscanf(buf, "%" SCNu64, &v) == 1)
			u->peak_memory_bytes = v;
		/* NOLINTNEXTLINE(cert-err34-c): as above */
		if (cg_read_file(f, "memory.current", buf, sizeof(buf)) > 0 && sscanf(buf, "%" SCNu64, &v) == 1)
			u->memory_bytes = v;
		if (cg_read_file(f, "memory.events", buf, sizeof(buf)) > 0 && cg_parse_memory_events(buf, &v) == 0)
			u->oom_kills = v;
	}
	if ((ctrls & CG_BIT(HOST_CG_PIDS)) && cg_read_file(f, "pids.events", buf, sizeof(buf)) > 0)
		cg_parse_pids_events(buf, &u->pids_limit_hit);
}
