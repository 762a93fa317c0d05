/* job.h — the supervisor's per-job state, shared by the event loop and the verdict builder. */
#ifndef AL_SUPERVISOR_JOB_H
#define AL_SUPERVISOR_JOB_H

#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <termios.h>
#include <time.h>

#include "airlock/airlock.h"
#include "backend/backend.h"
#include "kit/channel.h"
#include "cgroup/cgroup.h"
#include "network/proxy.h"
#include "pump.h"
#include "writeback.h"

struct al_job {
	struct be_proc proc;
	struct pump out, err;
	int timerfd, epfd;
	int stop_fd;	 /* the caller's signalfd (al_spawn_opts.stop_fd), or -1 */
	int stop_signal; /* the signal that stopped the job through it, or 0 */
	uint64_t wall_limit_ms;
	uint64_t disk_limit;		 /* --disk: also the most a write-back or an export may put on the host */
	char image[72], image_name[128]; /* the policy's image, for the verdict ("" without) */
	struct timespec start;
	bool timed_out, exited, reaped;
	bool killing;		     /* the deadline or a stop killed it: live output no longer waits */
	int kill_asked;		     /* al_job_kill was called (atomic: from any thread) */
	int wake_fds[2];	     /* timerfd, stop_fd: what a live copy must not block (pump.h) */
	struct nat_record setup_err; /* first error record, kind == 0 if none */
	bool have_status;
	int wstatus;
	siginfo_t si;
	struct rusage ru;
	double wall_s;
	struct cg_job *cg; /* NULL when no cgroup could be (or needed to be) used */
	bool cg_wanted[3]; /* memory, pids, cpus (cg_limits_of) had a value: to report what was not applied */
	struct cg_usage cgu;
	bool have_cgu;
	bool wrote_back; /* a --workdir overlay's changes were applied (wb describes them) */
	struct wb_stats wb;
	bool kept_changes; /* --keep-changes: the copy's changes were exported (kc describes them) */
	struct wb_stats kc;
	int tty_fd;	    /* the caller's terminal handed to the job as stdin, or -1 */
	struct termios tty; /* its settings before the job, restored after it */
	struct px *px;	    /* the egress proxy, NULL when the posture has none; an exec in a held
			      * sandbox: its share of the sandbox's proxy's records (execacct.c) */
	struct px *held_px; /* an exec in a held sandbox with its network: the sandbox's proxy */
	bool held_px_served;
	struct cg_job *held_cg; /* an exec in a held sandbox: the sandbox's cgroup (borrowed) */
	uint64_t held_pids_max; /* its pids.events max when the exec started */
	bool have_held_pids;
	bool proxy_served; /* its listening socket arrived from the sandbox */
	bool capture;	   /* the capture's sockets follow it (allowlist posture) */
	bool terminal;	   /* al_spawn_opts.tty: proc.tty_master is the job's terminal (or -1: it failed first) */
};

/* The limits a job cgroup enforces, in the order of al_job.cg_wanted. */
extern const enum al_limit cg_limits_of[3];

/* al_job_spawn, or with hold a held sandbox's init (sandbox.c). */
int job_spawn(const struct al_policy *p, const struct al_spawn_opts *opts, bool hold, struct al_job **out,
	      struct al_error *err);
/* Takes the egress proxy's listening socket from the sandbox (ready on proc.proxy_sock) and serves it. */
void job_serve_proxy(struct al_job *j);

/* The held sandbox's own job (its init's), for its execs' accounting. */
struct al_job *sandbox_job(struct al_sandbox *sb);
/* The held sandbox's state its execs need (sandbox.c), passed down to the backend in be_io. */
struct be_held *sandbox_held(struct al_sandbox *sb);
/* An exec in a held sandbox (policy->attach): its own cgroup beneath the sandbox's and its share
 * of the sandbox's proxy, accounted as al_job_spawn's job is (execacct.c). */
int job_exec_acct_start(struct al_job *j, const struct al_policy *p, struct al_error *err);
/* At the exec's end, after its cgroup was read: the proxy's records made since the start move
 * into j->px; a fork refused at the sandbox's pids limit counts as the exec's. */
void job_exec_acct_end(struct al_job *j);

/* The proxy's records as a JSON object (malloc'd), or NULL when the job had no proxy. */
char *jv_proxy_json(const struct al_job *j);
/* Turns a finished, reaped job into its verdict. */
int jv_build(struct al_job *j, struct al_verdict **out, struct al_error *err);

#endif
