/* child.h — the sandbox side of the native backend: init (pid 1 of the namespace) and the payload. */
#ifndef AL_NATIVE_CHILD_H
#define AL_NATIVE_CHILD_H

#include "cgroup/cgroup.h"
#include "kit/channel.h"
#include "kit/fsplan.h"
#include "kit/landlock.h"
#include "kit/seccomp.h"
#include "kit/userns.h"

/* Everything the child needs, prepared by the parent before clone3 (nothing is allocated after). */
struct pol_capture;

struct nat_child {
	struct fs_plan *plan;
	struct uns_map map;
	const uint64_t *limits;
	char *const *argv;
	char *const *envp;
	const char *path; /* the PATH value used to find argv[0] */
	const char *hostname;
	const char *cwd;
	const char *staging; /* where the new root is assembled before pivot_root */
	int sync_fd;	     /* read end: "g" once the id maps are written, "c" once in the job's cgroups */
	int status_fd;	     /* write end: nat_record to the supervisor (O_CLOEXEC) */
	int stdin_fd;	     /* -1: /dev/null */
	int stdout_fd;
	int stderr_fd;
	const struct ll_spec *landlock;	 /* NULL: no Landlock */
	int landlock_fd;		 /* set by init: the ruleset the payload enforces */
	const struct sc_filter *seccomp; /* prog.len == 0: no filter */
	uid_t run_uid;			 /* the payload's uid and gid (as this process sees ids) */
	gid_t run_gid;
	bool drop_groups;		   /* setgroups(0) before switching (allowed: root or range map) */
	bool fallback;			   /* no namespaces: see nat_fallback_main */
	bool lo_up;			   /* loopback posture: lo up in the new network namespace */
	int proxy_sock;			   /* -1, or where init sends the egress proxy's listening socket */
	const struct pol_capture *capture; /* and the capture's sockets, when on */
	int ctl_sock;			   /* -1, or a held sandbox's control socket (hold.c) */
	bool shed_libs;	       /* a held sandbox's init unmaps the libraries it never runs (nat_hold_can_shed) */
	struct cg_view cgview; /* the job's cgroups, shown at FS_CGROUP_VIEW when the plan made it */
	/* --tty: the payload opens a pty of the sandbox's devpts and sends its master on tty_sock
	 * (the sync socket for a fresh job, which init keeps open until the payload's fork; a
	 * spare's request socket); its slave becomes stdio and controlling terminal (payload.c). */
	bool tty;
	uint16_t tty_cols, tty_rows;
	int tty_sock; /* -1 without a terminal */
};

/* Runs as the clone3 child: builds the sandbox, forks the payload, reaps until it ends. */
_Noreturn void nat_child_main(struct nat_child *c);
/* Forks the payload, reaps until it exits, reports its status and usage, and exits. */
_Noreturn void nat_run_payload(struct nat_child *c);
/* Reaps until the payload pid exits, reports its status and usage on c->status_fd, and exits. */
_Noreturn void nat_reap_payload(const struct nat_child *c, pid_t pid);
/* The payload (payload.c): confines itself and execs c->argv. */
_Noreturn void nat_payload_main(const struct nat_child *c);
/* A held sandbox's spare payload (payload.c): confines itself, then waits on sock for one request
 * (execmsg.h: argv, env, cwd + stdout, stderr, status [, stdin]) and execs it. */
_Noreturn void nat_spare_payload(struct nat_child *c, int sock);
/* A held sandbox's init (hold.c): hands the workspace to the supervisor, then starts one payload
 * per request on the control socket until that socket closes. */
_Noreturn void nat_hold_main(struct nat_child *c);
/* In the supervisor, before the clone: whether that init may unmap the libraries neither it nor
 * its exec inits and payloads run, so its forks copy less (hold.c). */
bool nat_hold_can_shed(void);
/* Reports a failed setup step on the status pipe and exits. */
_Noreturn void nat_die(const struct nat_child *c, enum nat_stage stage, int err, const char *what);

/* The fallback without namespaces: a subreaper init in the host's namespaces that forks the
 * payload (Landlock, seccomp, rlimits, no_new_privs) and, when it ends or on SIGTERM, kills
 * every descendant before exiting. */
_Noreturn void nat_fallback_main(struct nat_child *c);

#endif
