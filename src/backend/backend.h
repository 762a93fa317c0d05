/* backend.h — what a backend gives the supervisor: one confined process, its channels, and what it enforced. */
#ifndef AL_BACKEND_BACKEND_H
#define AL_BACKEND_BACKEND_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "policy/plan.h"
#include "policy/policy.h"

struct cg_job;
struct be_held;

struct be_io {
	int stdin_fd;  /* -1: /dev/null */
	int code_fd;   /* -1, or the payload's fd 3 (AL_CODE_FD): an exec in a held sandbox only */
	int stdout_fd; /* write ends of the supervisor's pipes (>= 3) */
	int stderr_fd;
	struct cg_job *cg;    /* the job's cgroup (owned by the supervisor), or NULL */
	bool hold;	      /* a held sandbox: init keeps it and serves exec requests (native only) */
	struct be_held *held; /* policy->attach's held state (the supervisor's, passed down), or NULL */
	/* A terminal (al_spawn_opts.tty): the payload opens a pty of the sandbox's devpts, takes its
	 * slave as stdin, stdout, stderr and controlling terminal, and sends the master back
	 * (be_proc.tty_master); stdin_fd is then -1. Native backend only (PN_TTY). */
	bool tty;
	uint16_t tty_cols, tty_rows; /* its first size; 0: the kernel's default */
};

struct be_proc {
	pid_t pid;
	int pidfd;	     /* exits when the whole sandbox is gone */
	int status_fd;	     /* read end of the nat_record channel; EOF once the sandbox is gone */
	json_t *enforced;    /* each protection actually applied (a reference of the proc's): data to the verdict */
	const char *backend; /* static name */
	bool seccomp_kills;  /* the filter kills (rather than fails) denied calls: SIGSYS means seccomp */
	/* The job cgroup's pids.max counts the runtime's host tasks (gVisor's Sentry and gofer threads,
	 * its ptrace stubs), not the payload's processes, which live in the runtime's own kernel: the
	 * verdict's cgroup says "pids": false and "pids_host_tasks" instead. */
	bool pids_host_tasks;
	int kill_signal;      /* what ends the whole job when sent to pid (SIGKILL to a pid-ns init) */
	char *cleanup_dir;    /* malloc'd: a host directory the job used, removed after it */
	int upper_sock;	      /* -1, or where the --workdir overlay's upper layer arrives (SCM_RIGHTS) */
	char *workdir;	      /* malloc'd: the host directory the upper layer's changes go back to */
	char *checkout;	      /* malloc'd: the checkout a --keep-changes export is compared with */
	char *keep_changes;   /* malloc'd: where a copied checkout's changes are exported, or NULL */
	int proxy_sock;	      /* -1, or where the egress proxy's listening socket arrives (SCM_RIGHTS) */
	int ctl_sock;	      /* -1, or a held sandbox's control socket (native, policy->hold) */
	bool foreign;	      /* pid is not our child (an exec in a held sandbox): no waitid */
	struct cg_job *cg;    /* an exec in a held sandbox: its own cgroup, the supervisor's from now on */
	struct be_held *held; /* an exec in a held sandbox: be_held_exec_done once it is over */
	int tty_master;	      /* -1, or be_io.tty's pty master (the supervisor's); -1 too when the
			       * sandbox failed before opening it (its status record says why) */
};

/* Spawns through the policy's backend (backend.c): the one entry the supervisor calls. It plans
 * the policy (pol_plan_build) and refuses what the backend cannot carry (be_refuse) once, then
 * calls the backend's spawn with the plan. */
int be_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct al_error *err);

/* One backend's spawn: a confined process for policy p, planned as pl, which be_refuse accepted. */
typedef int be_spawn_fn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io,
			struct be_proc *out, struct al_error *err);

be_spawn_fn be_native_spawn; /* our own namespaces (backend/native) */
be_spawn_fn be_bwrap_spawn;  /* bubblewrap (backend/bwrap) */
be_spawn_fn be_gvisor_spawn; /* gVisor's runsc (backend/gvisor) */
be_spawn_fn be_oci_spawn;    /* an OCI runtime, crun (backend/oci) */
/* No isolation (backend/native/fallback.c): the supervisor's limits and accounting only. */
be_spawn_fn be_none_spawn;
/* An exec in the held sandbox io->held (backend/native/attach.c): a spare payload the sandbox's
 * init made runs it. */
be_spawn_fn be_attach_spawn;

/* Removes bundle directories of supervisors that are gone (backend/oci/ocistale.c). */
void be_oci_cleanup_stale(void);
/* After the stale cgroups' sweep (killed: it killed something): each backend's cleanup_stale hook,
 * once per hook, for p's backend (NULL: every backend), and for all when killed — the sweep that
 * killed a dead job's cgroup killed its monitor with it, maybe before the monitor removed what it
 * made, and no later start of that backend may come to remove it. */
void be_cleanup_stale(const struct al_policy *p, bool killed);

/* What an exec needs of its held sandbox (kept by supervisor/sandbox.c, passed down in be_io). */
/* A spare payload of a held sandbox, waiting for its exec request (backend/native/hold.c). */
struct be_spare {
	int pidfd;  /* its exec init: -1 when there is none */
	int sock;   /* the payload's request socket */
	int status; /* the exec init's status records */
};

#define BE_HELD_DONE_MAX 16 /* ended execs' cgroups awaiting removal; beyond, removed in place */

struct be_held {
	int ctl_sock;	       /* to the sandbox's init: spare requests, answered in order */
	pthread_mutex_t lock;  /* ... under this lock, which also covers: */
	struct be_spare spare; /* the next exec's payload, when init has made it */
	bool spare_asked;      /* init's answer for spare is on its way (the worker takes it) */
	json_t *enforced;      /* the sandbox's protections, which every exec inherits (borrowed) */
	bool seccomp_kills;
	int net;	     /* the sandbox's posture (enum al_net): an exec may only narrow it */
	struct cg_job *cg;   /* where execs get theirs: work, else the sandbox's (the supervisor's), or NULL */
	struct cg_job *work; /* the sandbox's code's cgroup beneath the sandbox's, holding its memory limit (owned) */
	struct cg_job *spare_cg; /* spare's own cgroup, spare in it (NULL: made at its exec) */
	/* Ended execs' cgroups, read, and their exec inits' pidfds: each is removed once its init
	 * is gone. */
	struct be_done {
		struct cg_job *cg;
		int pidfd;
	} done[BE_HELD_DONE_MAX];
	int ndone;
	bool readying;	   /* the worker readies the next spare (attach.c): wait on cv */
	bool worker;	   /* the worker thread runs (it ends when idle) */
	bool closing;	   /* the sandbox goes: the worker finishes and ends */
	pthread_cond_t cv; /* the worker's wake-ups, and the end of readying or of the worker */
};
/* Initialises h's spare (none), or lets the spare go (its payload exits unused) once the worker
 * is done with h. */
void be_held_init(struct be_held *h);
/* Takes h->lock once the worker is not readying a spare (no request to init is half answered):
 * a pause freezes the sandbox under it, so nothing of ours waits on a frozen init. */
void be_held_lock_idle(struct be_held *h);
void be_held_unlock(struct be_held *h);
void be_held_release(struct be_held *h);
/* An exec of h is over and its cgroup cg read (cg and the exec init's pidfd, taken over): the
 * worker removes the cgroup once that init is gone. */
void be_held_exec_done(struct be_held *h, struct cg_job *cg, int pidfd);
/* A TCP socket (family AF_INET or AF_INET6; unconnected, O_CLOEXEC, O_NONBLOCK) made by h's init in
 * the sandbox's network namespace (attach.c): 0 and *fd (the caller's), or -errno. */
int be_held_socket(struct be_held *h, int family, int *fd, struct al_error *err);

#endif
