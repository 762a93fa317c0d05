/* cgroup.h — one cgroup per job, on cgroup v2 where its controllers are available, else on the v1 hierarchies. */
#ifndef AL_CGROUP_CGROUP_H
#define AL_CGROUP_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"

struct cg_limits {
	uint64_t memory_bytes;	/* AL_UNLIMITED: none (swap is always disabled when set) */
	uint64_t pids;		/* AL_UNLIMITED: none */
	uint64_t cpu_millis;	/* AL_UNLIMITED: none; 500 = half a CPU */
	bool need_memory, need_pids, need_cpu; /* explicitly requested: fail rather than skip */
};

struct cg_usage {
	double user_s, system_s;    /* the whole tree's CPU time */
	uint64_t peak_memory_bytes; /* the whole tree's peak (0 if unknown) */
	uint64_t oom_kills;
	bool pids_limit_hit;
	bool memory_limited, pids_limited, cpu_limited; /* what was actually enforced */
	int version;		    /* 1 or 2 (per the memory controller), 0 if none */
};

struct cg_job; /* opaque */

/* Creates the job's cgroup(s) and sets limits. When no usable cgroup exists and nothing is
 * required, returns 0 with *out == NULL (the verdict then says cgroup: false). */
int cg_create(const struct cg_limits *lim, struct cg_job **out, struct al_error *err);
/* v2: an O_PATH|O_DIRECTORY fd for clone3's CLONE_INTO_CGROUP; -1 when the job is on v1. */
int cg_clone_fd(const struct cg_job *cg);
/* v1 (and v2 without CLONE_INTO_CGROUP): move pid into the job's cgroups, before it is released. */
int cg_attach(struct cg_job *cg, pid_t pid, struct al_error *err);
/* Kills every process in the job's cgroup(s) (cgroup.kill on v2 where available). */
int cg_kill(struct cg_job *cg);
/* Reads accounting; call after the job ended, before cg_destroy. */
int cg_usage(struct cg_job *cg, struct cg_usage *u);
/* Kills what is left, removes the cgroup(s), frees. Accepts NULL. */
void cg_destroy(struct cg_job *cg);
/* Removes cgroups left by a crashed airlock (their owner pid is gone). Best effort. */
void cg_cleanup_stale(void);
/* For the verdict and `airlock check`: "v2", "v1" or "none", and the controllers used. */
const char *cg_version_name(const struct cg_job *cg);

#endif
