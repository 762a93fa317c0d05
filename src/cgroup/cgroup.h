/* cgroup.h — one cgroup per job, on cgroup v2 where its controllers are available, else on the v1 hierarchies. */
#ifndef AL_CGROUP_CGROUP_H
#define AL_CGROUP_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"
#include "host/host.h"

struct cg_limits {
	uint64_t memory_bytes;		       /* AL_UNLIMITED: none (swap is always disabled when set) */
	uint64_t pids;			       /* AL_UNLIMITED: none */
	uint64_t cpu_millis;		       /* AL_UNLIMITED: none; 500 = half a CPU */
	bool need_memory, need_pids, need_cpu; /* explicitly requested: fail rather than skip */
	bool no_systemd_scope;		       /* never ask the user's systemd for a delegated scope */
	bool freezer; /* a held sandbox's: join a freezer where one is usable (never required) */
};

struct cg_usage {
	double user_s, system_s;    /* the whole tree's CPU time, when cpu_accounted */
	bool cpu_accounted;	    /* a cpuacct (v1) or cpu.stat (v2) figure was read */
	uint64_t peak_memory_bytes; /* the whole tree's peak (0 if unknown) */
	uint64_t memory_bytes;	    /* the whole tree's use now (0 if unknown) */
	uint64_t oom_kills;
	bool pids_limit_hit;
	bool memory_limited, pids_limited, cpu_limited; /* what was actually enforced */
	int version;					/* 1 or 2 (per the memory controller), 0 if none */
};

struct cg_job; /* opaque */

/* Plans the job's cgroup(s) for limits lim (copied): detects the layout, picks each controller's
 * hierarchy, names the job's directory in each (cg_job_path, cg_view_plan work from here on)
 * and refuses a required controller that no hierarchy can give, all without making them; on v2
 * it prepares the delegated parent (CG_V2_JOBS). When no usable cgroup exists and nothing is
 * required, returns 0 with *out == NULL (the verdict then says cgroup: false). As an ordinary
 * user whose cgroup lacks a controller a limit needs, it first moves this whole process into a
 * delegated scope of the user's systemd where one answers (host_systemd_scope), unless
 * lim->no_systemd_scope; later calls then find that scope writable. */
int cg_plan(const struct cg_limits *lim, struct cg_job **out, struct al_error *err);
/* Makes the planned directories and sets the limits. Once made, 0 again; a failure is reported
 * once (err), cg_make_failed says so afterwards, and cg_destroy removes what was made. Split
 * from cg_plan so that a spawner whose process is moved in (v1) can make them while that
 * process sets itself up; a job born inside (cg_clone_into) needs them made before. */
int cg_make(struct cg_job *cg, struct al_error *err);
bool cg_make_failed(const struct cg_job *cg);
/* cg_plan, then cg_make. */
int cg_create(const struct cg_limits *lim, struct cg_job **out, struct al_error *err);
/* Whether the job's processes are started inside its cgroup (a lone v2 hierarchy: clone3's
 * CLONE_INTO_CGROUP) rather than moved in (cg_attach): its directory must be made first. */
bool cg_clone_into(const struct cg_job *cg);
/* cg_clone_into and made: an O_PATH|O_DIRECTORY fd for CLONE_INTO_CGROUP; else -1. */
int cg_clone_fd(const struct cg_job *cg);
/* v1 (and v2 without CLONE_INTO_CGROUP): move pid into the job's cgroups (made), before it is
 * released. */
int cg_attach(struct cg_job *cg, pid_t pid, struct al_error *err);
/* cg_attach, and with children, then the children pid has (its main thread's, at most 16): a
 * process and the ones it forked before, in one open of each hierarchy's cgroup.procs. */
int cg_attach_family(struct cg_job *cg, pid_t pid, bool children, struct al_error *err);
/*
 * The job's cgroups joined from inside, where every hierarchy is v1: the process to move writes
 * "0" to each hierarchy's `tasks` itself (cg_join_self). A thread moving itself needs no exclusion
 * of every fork and exit on the host; a move by pid (cg_attach) takes the kernel's global
 * cgroup_threadgroup_rwsem for writing, which after a quiet moment waits for an RCU grace period
 * (5-14 ms on this VM: most of a lone start). (v2 cannot move a thread between domains: a lone
 * v2 hierarchy is joined at birth, cg_clone_into; v1 and v2 mixed are moved by pid.)
 * cg_join_fds opens those files of the made cgroups into fds[] (room for CG_JOIN_MAX) and
 * returns their number, for the process to inherit or receive. They carry our right to move a
 * thread: only the process to move may hold them, and it closes them before it runs anything.
 */
#define CG_JOIN_MAX 8
bool cg_joins_self(const struct cg_job *cg);
int cg_join_fds(const struct cg_job *cg, int *fds, struct al_error *err);
/* Writes "0" to each of fds[0..n) and closes them: the calling thread, the process's only one,
 * moves into each cgroup. For use between clone and exec (no allocation). 0 or -errno. */
int cg_join_self(const int *fds, int n);
/* A child cgroup of parent in each of its hierarchies that accounts (not a v1 cpu-only one), to
 * account one part of the job apart (an exec in a held sandbox): it sets no limit (the parent's bound it) and reports the parent's as
 * enforced. On v2 the parent's processes first move into the leaf CG_V2_HELD (the
 * no-internal-process rule). Free it with cg_destroy, before its parent. */
int cg_create_child(struct cg_job *parent, struct cg_job **out, struct al_error *err);
/* Lifts the memory limit of cg (a held sandbox's, once a child carries it: cg_create_child copies
 * it), so that an OOM at that limit happens in the child and its victims are the child's processes
 * only, never cg's own (the sandbox's init). 0 or -errno. */
int cg_lift_memory_limit(struct cg_job *cg, struct al_error *err);
/* pids.events "max" of the job's pids cgroup: forks refused at a limit so far (0 and *n, or -errno). */
int cg_pids_max_count(struct cg_job *cg, uint64_t *n);
/* Kills every process in the job's cgroup(s) (cgroup.kill on v2 where available). */
int cg_kill(struct cg_job *cg);
/* Reads accounting; call after the job ended, before cg_destroy. */
int cg_usage(struct cg_job *cg, struct cg_usage *u);
/* Opens the files cg_usage and cg_pids_max_count read and keeps them open (until cg_destroy), so
 * that each later read is one pread: for a cgroup read on a latency path (a held exec's, its
 * sandbox's). Call before cg is shared with another thread. */
void cg_usage_open(struct cg_job *cg);
/* As cg_usage_open for pids.events alone (cg_pids_max_count): a held sandbox's, read twice by each
 * of its execs while its other counters wait for its end. */
void cg_pids_events_open(struct cg_job *cg);
/* Kills what is left, removes the cgroup(s), frees. Accepts NULL. */
void cg_destroy(struct cg_job *cg);
/* Whether owner is alive and started before created (seconds since the epoch): false for a pid
 * that is gone or was reused since. What cannot be told counts as alive. */
bool cg_owner_alive_since(pid_t owner, int64_t created);
/* Removes cgroups left by a crashed airlock (their owner pid is gone), killing what still runs in
 * them. Best effort. How many such cgroups it found. */
unsigned cg_cleanup_stale(void);
/* For the verdict and `airlock check`: "v2", "v1" or "none", and the controllers used. */
const char *cg_version_name(const struct cg_job *cg);

/* ---- the freezer (freeze.c): a job paused in place ------------------------------------ */

/* The freezer cg can use: 2 (cgroup.freeze), 1 (the v1 freezer hierarchy), 0: none. */
int cg_freezer(const struct cg_job *cg);
/* Why cg (NULL: none at all) has no freezer, in words (a static or cg's own string). */
const char *cg_freezer_why(const struct cg_job *cg);
/* Freezes (freeze) or thaws every process of cg and of the cgroups beneath it, and waits up to
 * timeout_ms until the kernel says it is done; a freeze not done in time is thawed back. 0, or
 * -ENOTSUP (no freezer: err says why), -ETIMEDOUT, -errno. */
int cg_freeze(struct cg_job *cg, bool freeze, int timeout_ms, struct al_error *err);
/* A frozen job about to be killed: each of its processes sent SIGKILL, then thawed, so that they
 * die (a frozen v1 task does not) and run nothing meanwhile. No-op without a freezer. */
void cg_thaw_killed(struct cg_job *cg);
/* Thaws the cgroup dirfd (v2 or a v1 freezer one): stale cleanup. Best effort. */
void cg_thaw_dir(int dirfd);
/* A process of ours, out of the job's cgroups and in a session of its own, that waits for this
 * process to end and then kills, thaws and removes the (frozen) job cg (see freeze.c). Started
 * before the first freeze, stopped when the job goes. */
struct cg_keeper;
int cg_keeper_start(struct cg_job *cg, struct cg_keeper **out, struct al_error *err);
/* Kills and reaps the keeper. Accepts NULL. */
void cg_keeper_stop(struct cg_keeper *k);

/* ---- the job's own cgroups, seen from inside (view.c) --------------------------------- */

#define CG_VIEW_MAX (1 + HOST_CG__COUNT) /* the unified hierarchy plus one per v1 controller */

/* The hierarchies of a job that its sandbox shows (at /sys/fs/cgroup, as Docker does): plain
 * data, filled by the supervisor before clone, so that the sandbox's init allocates nothing to
 * mount them. */
struct cg_view {
	int n;
	bool whole; /* one v2 hierarchy, shown at the top itself; else one directory per hierarchy */
	struct cg_view_hier {
		int version;	   /* 1 or 2 */
		char name[64];	   /* its directory: v1 its controllers ("cpu,cpuacct"), also its mount
				   * options; v2 "unified" */
		char links[4][16]; /* v1 co-mounted: a link to name per controller ("cpu", "cpuacct") */
		int nlinks;
		const char *path; /* the job's cgroup in it on the host (borrowed from the cg_job) */
	} h[CG_VIEW_MAX];
};

/* The hierarchies job cg (NULL: none) holds its processes in: the only ones whose cgroup
 * namespace root is the job's own cgroup, so the only ones that may be shown. Pure. */
void cg_view_plan(const struct cg_job *cg, struct cg_view *v);
/* Mounts view v read-only (nosuid, nodev, noexec) at dir, an existing directory of the
 * sandbox's root. The caller has moved into the job's cgroups and then entered a new cgroup
 * namespace, which is what makes the job's cgroup the root of every mount. v->whole: one
 * cgroup2 mount at dir; else a small read-only tmpfs at dir holding each hierarchy at
 * dir/<name>, Docker's layout. A hierarchy the kernel refuses is left out: a view is a courtesy
 * to runtimes that size themselves, never a reason to fail the job. Returns how many hierarchies
 * are shown. No allocation, no formatting: safe between clone and exec. */
int cg_view_mount(const struct cg_view *v, const char *dir);

/* ---- additions: introspection ------------------------------------------------------ */

/* cg_version_name says "hybrid" when the job uses both versions (per controller: below). */

/* The version (1 or 2) that holds controller c for this job, 0 when it is not used. */
int cg_ctrl_version(const struct cg_job *cg, enum host_cg_ctrl c);
/* The directory of the job's cgroup that holds controller c, or NULL (for tests and reports). */
const char *cg_job_path(const struct cg_job *cg, enum host_cg_ctrl c);

/* ---- additions: pure helpers (no side effects; unit-tested) ------------------------ */

#define CG_NAME_PREFIX	 "airlock-"
#define CG_CPU_PERIOD_US 100000ULL	/* v1 cpu.cfs_period_us and the v2 cpu.max period */
#define CG_V2_JOBS	 "airlock.jobs" /* v2: holds the job cgroups, controllers enabled for them */
#define CG_V2_SELF	 "airlock.self" /* v2: the leaf our delegated cgroup's processes move into */
#define CG_V2_HELD	 "airlock.held" /* v2: the leaf a job cgroup's own processes move into (cg_create_child) */

/* "airlock-<owner>-<counter>-<8 hex>". Returns the length or -ENAMETOOLONG. */
int cg_name_format(char *buf, size_t size, pid_t owner, unsigned long counter, uint32_t rnd);
/* Parses a job cgroup name; 0 and *owner, or -EINVAL for anything else. */
int cg_name_parse(const char *name, pid_t *owner);
/* The CFS quota per CG_CPU_PERIOD_US for millis milli-CPUs; -EINVAL below the kernel's 1 ms minimum. */
int cg_cpu_quota_us(uint64_t millis, uint64_t *quota_us);
/* v2 cpu.max: "QUOTA PERIOD", or "max PERIOD" for AL_UNLIMITED. Returns the length or -errno. */
int cg_cpu_max_format(uint64_t millis, char *buf, size_t size);
/* Flat-keyed files ("key value" per line): the value of key, -ENOENT when absent, -EINVAL when malformed. */
int cg_parse_keyed(const char *text, const char *key, uint64_t *out);
/* v2 cpu.stat: user_usec and system_usec, in seconds. */
int cg_parse_cpu_stat(const char *text, double *user_s, double *system_s);
/* v1 cpuacct.stat: user and system in USER_HZ ticks, converted with ticks_per_s. */
int cg_parse_cpuacct_stat(const char *text, long ticks_per_s, double *user_s, double *system_s);
/* Splits an exact CPU total in the proportion of tick-sampled user and system times (v1). */
void cg_split_cpu(double total_s, double user_sample, double system_sample, double *user_s, double *system_s);
/* v2 memory.events: oom_kill (-ENOENT before Linux 4.13). */
int cg_parse_memory_events(const char *text, uint64_t *oom_kills);
/* v1 memory.oom_control: oom_kill (-ENOENT before Linux 4.13; use memory.failcnt then). */
int cg_parse_oom_control(const char *text, uint64_t *oom_kills);
/* pids.events (v1 and v2): whether "max" is non-zero. */
int cg_parse_pids_events(const char *text, bool *hit);
/* /proc/<pid>/stat: field number field (1-based, 3 or later), an unsigned decimal (comm may hold
 * spaces and ')'). */
int cg_parse_proc_field(const char *text, int field, uint64_t *value);
/* /proc/<pid>/stat: field 22, the start time in clock ticks after boot. */
int cg_parse_proc_start(const char *text, uint64_t *start_ticks);
/* Could a process that started start_ticks after boot (boot at btime) have created a cgroup at
 * created (seconds since the epoch)? 2 s of slack cover btime's whole-second resolution. */
bool cg_started_before(uint64_t start_ticks, long ticks_per_s, int64_t btime, int64_t created);

/* ---- internal to src/cgroup/ (declared here because the module has one header) ----- */

#define CG_BIT(c) (1u << (c))

/* What one hierarchy's limit files accepted. */
struct cg_enforced {
	bool memory, swap_off, pids, cpu;
};

/* Small cgroupfs files relative to a directory fd (O_PATH is enough). */
int cg_read_at(int dirfd, const char *file, char *buf, size_t size); /* length or -errno; NUL-terminated */
/* The files a job cgroup's accounting reads, kept open once cg_usage_open has opened them and read
 * again with one pread each (cg_usage on the path of every held exec's verdict, cg_pids_max_count
 * twice per exec of the sandbox's): a handful per hierarchy. Filled only while filling is set
 * (cg_usage_open, before the cgroup is shared); read-only afterwards, so any thread may read. */
#define CG_FILES_MAX 10
struct cg_files {
	int dirfd; /* the job cgroup (borrowed) */
	bool filling;
	int n;
	const char *name[CG_FILES_MAX]; /* string literals */
	int fd[CG_FILES_MAX];
};
/* cg_read_at through f's open files (a file not among them is opened and closed as by
 * cg_read_at, or kept open while f->filling): length or -errno; NUL-terminated. */
int cg_read_file(struct cg_files *f, const char *file, char *buf, size_t size);
void cg_files_close(struct cg_files *f);
int cg_write_at(int dirfd, const char *file, const char *value); /* 0 or -errno */
/* Calls fn for each pid in dirfd's cgroup.procs; stops at fn's first non-zero return. Count or -errno. */
int cg_for_each_pid(int dirfd, int (*fn)(pid_t pid, void *arg), void *arg);
/* 1 when cgroup.procs lists a process, 0 when empty, -errno. */
int cg_has_procs(int dirfd);
/* One round of SIGKILL to what one cgroup's cgroup.procs lists (pinned by pidfds): how many, or -errno. */
int cg_kill_once(int dirfd);
/* The job's hierarchies, for freeze.c: their number; hierarchy i's job cgroup fd (-1 before it
 * is made) and version, its controllers, the fd of its parent directory; the job's name. */
int cg_nhier(const struct cg_job *cg);
int cg_hier_fd(const struct cg_job *cg, int i, int *version);
unsigned cg_hier_ctrls(const struct cg_job *cg, int i);
/* A new descriptor (O_PATH, the caller's to close) of the directory holding hierarchy i's job
 * cgroup, or -1. */
int cg_hier_parent_open(const struct cg_job *cg, int i);
const char *cg_name(const struct cg_job *cg);
/* SIGKILLs everything in one cgroup (cgroup.kill on v2 where present). 0 when it ended up empty. */
int cg_kill_dir(int dirfd, int version);
/* Waits up to timeout_ms for cgroup.procs to be empty: 0, or -EBUSY. */
int cg_wait_empty(int dirfd, int timeout_ms);
/* host_cg_detect, plus: when we sit in CG_V2_SELF, the delegated cgroup is its parent. */
int cg_detect(struct host_cgroups *hc, struct al_error *err);

/* The directories that hold airlock's job cgroups in a layout, which cg_cleanup_stale sweeps:
 * <v2 dir>/CG_V2_JOBS and each distinct v1 hierarchy's dir, where we may write. */
struct cg_sweep {
	int n;
	char dir[1 + HOST_CG__COUNT][PATH_MAX];
};
void cg_sweep_dirs(const struct host_cgroups *hc, struct cg_sweep *s);
/* Those of the layout this process's last cg_plan found, if that was less than a second ago:
 * true and *s filled, or false. The sweep follows a start, and only looks, best effort, beneath
 * airlock's own directories; detecting again would read mountinfo, which grows with the host's
 * mounts (0.6 ms a read with 500 of them). */
bool cg_recent_sweep(struct cg_sweep *s);

/* v2: makes <base>/CG_V2_JOBS with the wanted controllers enabled for its children, moving
 * the processes of base into <base>/CG_V2_SELF when the no-internal-process rule demands.
 * *got: the controllers enabled; why[c]: errno of each wanted one that could not be. */
int cg_v2_prepare(const char *base, unsigned want, unsigned *got, int why[HOST_CG__COUNT], int *jobs_fd,
		  struct al_error *err);
/* v2: makes the job cgroup dir_fd (path) able to have children with its controllers ctrls:
 * its processes move into CG_V2_HELD and the controllers are enabled for its children. */
int cg_v2_nest(int dir_fd, const char *path, unsigned ctrls, struct al_error *err);
int cg_v2_apply(int dirfd, unsigned ctrls, const struct cg_limits *lim, struct cg_enforced *e, struct al_error *err);
void cg_v2_account(struct cg_files *f, unsigned ctrls, struct cg_usage *u);
int cg_v1_apply(int dirfd, unsigned ctrls, const struct cg_limits *lim, struct cg_enforced *e, struct al_error *err);
void cg_v1_account(struct cg_files *f, unsigned ctrls, struct cg_usage *u);

#endif
