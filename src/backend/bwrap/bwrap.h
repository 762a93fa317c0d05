/* bwrap.h — the bubblewrap backend's insides: the argv plan (pure), bwrap's reports (pure), and the monitor. */
#ifndef AL_BWRAP_BWRAP_H
#define AL_BWRAP_BWRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/ainit.h"
#include "cgroup/cgroup.h"
#include "kit/channel.h"
#include "kit/fsplan.h"
#include "policy/policy.h"

/* Fixed, not searched in PATH: a root caller must not run whatever a PATH entry holds. */
#define BW_PATH "/usr/bin/bwrap"

/* ---- the argv (bwargs.c, pure) ------------------------------------------------------ */

/* A NULL-terminated argv whose strings are all malloc'd. */
struct bw_argv {
	char **v;
	size_t n, cap;
	size_t cmd_at; /* v[cmd_at] is the "--" before bwrap's command (airlock-init's argv) */
};

/* Descriptors the parent made for bwrap, already numbered as bwrap will see them. */
struct bw_fds {
	const int *file_fds;	      /* per plan op: the memfd holding an FS_FILE's text, else -1 */
	int seccomp;		      /* the BPF program (--seccomp), or -1 for profile "off" */
	int json;		      /* --json-status-fd */
	int init_bin;		      /* an O_PATH descriptor of the airlock binary, bound at AI_PATH */
	const struct ai_opts *init;   /* airlock-init's options (ainit.h): bwrap's command */
	bool mqueue;		      /* the IPC namespace's mqueue at /dev/mqueue (the ruleset's rule) */
	const struct cg_view *cgview; /* the job's cgroups, bound read-only at FS_CGROUP_VIEW, or NULL */
};

/* The bwrap command line for policy p over the native backend's filesystem plan (the same
 * view by construction). cgroupns: the kernel has cgroup namespaces. When the policy needs
 * the egress proxy (pol_needs_proxy), the network namespace is made before bwrap runs (see
 * bwchild.c) and bwrap joins it instead of making its own. */
int bw_argv_build(struct bw_argv *a, const struct al_policy *p, const struct fs_plan *plan, const struct bw_fds *fds,
		  bool cgroupns, struct al_error *err);
void bw_argv_free(struct bw_argv *a);

/* ---- what bwrap reports (bwparse.c, pure, no allocation: the monitor uses them) ------ */

/* The payload's exit code from --json-status-fd output ({ "exit-code": N }), if present. */
bool bw_json_exit_code(const char *buf, size_t n, int *code);
/* bwrap reports a signal as 128+N (its propagate_exit_status): back to a wait status. */
int bw_wstatus(int exit_code);

/* Remembers the last line on bwrap's stderr that starts with "bwrap: " (its own messages). */
struct bw_errscan {
	char cur[160]; /* the line being read (truncated) */
	size_t len;
	bool overflow;	/* cur was truncated */
	char last[160]; /* the last complete "bwrap: " line, without prefix or newline */
};
void bw_errscan_feed(struct bw_errscan *s, const char *buf, size_t n);
/* Ends a last line that had no newline. */
void bw_errscan_end(struct bw_errscan *s);
/* A bwrap message ("execvp x: No such file or directory") as a setup stage and errno. */
void bw_classify(const char *msg, enum nat_stage *stage, int *err);

/* ---- the monitor (bwchild.c): between clone3 and execve of bwrap --------------------- */

/* The generated /etc files, the seccomp program and the policy's files (airlock exec). */
#define BW_MAX_PASS 64

/* Everything the monitor needs, prepared by the parent: it allocates nothing. */
struct pol_capture;

struct bw_child {
	char *const *argv; /* bwrap's */
	const char *cmd;   /* the payload's argv[0], for messages */
	int sync_fd;	   /* read end: one byte once the job's cgroup holds us */
	int status_fd;	   /* write end: nat_record to the supervisor */
	int stdin_fd;	   /* -1: /dev/null */
	int stdout_fd;
	int stderr_fd;	     /* where bwrap's stderr is relayed to */
	int json_r, json_w;  /* --json-status-fd */
	int err_r, err_w;    /* bwrap's stderr, read by the monitor */
	int rec_r;	     /* airlock-init's failure record (its write end is one of pass_fds) */
	const int *pass_fds; /* the descriptors bwrap reads (files, seccomp): at most BW_MAX_PASS */
	size_t npass;
	int proxy_sock;			   /* -1, or where the egress proxy's listening socket goes (SCM_RIGHTS) */
	const struct pol_capture *capture; /* and the capture's sockets, when on */
	bool drop_ids;			   /* root: run bwrap as run_uid/run_gid, never as host root */
	uid_t run_uid;
	gid_t run_gid;
};

/* Runs as the clone3 child: starts bwrap, relays its stderr, reports the payload's end. */
_Noreturn void bw_monitor_main(const struct bw_child *c);

#endif
