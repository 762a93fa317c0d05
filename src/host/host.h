/* host.h — what this host can enforce: /proc parsers, the cgroup layout detector, side-effect-free probes. */
#ifndef AL_HOST_HOST_H
#define AL_HOST_HOST_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "airlock/airlock.h"

/* ---- cgroup layout (reused by the cgroup module) --------------------------------- */

/* The controllers airlock limits or accounts with. */
enum host_cg_ctrl {
	HOST_CG_MEMORY,
	HOST_CG_PIDS,
	HOST_CG_CPU,
	HOST_CG_CPUACCT,
	HOST_CG_FREEZER, /* pause and resume (v2: cgroup.freeze, core; v1: the freezer hierarchy) */
	HOST_CG__COUNT,
};

enum host_cg_version {
	HOST_CG_NONE = 0, /* not usable at all */
	HOST_CG_V1 = 1,
	HOST_CG_V2 = 2,
};

enum host_cg_layout {
	HOST_CG_LAYOUT_NONE,   /* no cgroup filesystem mounted */
	HOST_CG_LAYOUT_V1,     /* only v1 controller hierarchies */
	HOST_CG_LAYOUT_V2,     /* only the unified hierarchy (named v1 ones like name=systemd ignored) */
	HOST_CG_LAYOUT_HYBRID, /* both: v1 controllers plus a cgroup2 mount */
};

/* One mounted hierarchy: the unified one, or the v1 one that holds a controller. */
struct host_cg_hier {
	bool mounted;	      /* a mount of this hierarchy is visible in our mount namespace */
	bool member;	      /* /proc/self/cgroup names our cgroup in it */
	bool found;	      /* dir exists */
	bool writable;	      /* we may create a child cgroup under dir and move processes there */
	char mount[PATH_MAX]; /* mount point (first mount wins) */
	char root[PATH_MAX];  /* mountinfo "root": the part of the hierarchy the mount shows */
	char own[PATH_MAX];   /* our cgroup within the hierarchy, from /proc/self/cgroup */
	char dir[PATH_MAX];   /* our cgroup's directory: mount + (own - root); "" if not visible */
	char ctrls[64];	      /* v1: the hierarchy's controllers as /proc/self/cgroup lists them ("cpu,cpuacct"),
			       * which are also the mount options that name it; "" if longer */
};

/* The layout as seen from this process. Large (about 80 KiB): allocate it, don't nest it on small stacks. */
struct host_cgroups {
	enum host_cg_layout layout;
	struct host_cg_hier v2;
	char v2_controllers[256]; /* cgroup.controllers of v2.dir, space-separated */
	char v2_subtree[256];	  /* cgroup.subtree_control of v2.dir */
	bool v1_any;		  /* some v1 hierarchy with a real controller (any, not only ours) is mounted */
	struct host_cg_hier v1[HOST_CG__COUNT];
	enum host_cg_version use[HOST_CG__COUNT]; /* the version airlock uses per controller */
};

const char *host_cg_ctrl_name(enum host_cg_ctrl c);
const char *host_cg_layout_name(enum host_cg_layout l);
const char *host_cg_version_name(enum host_cg_version v); /* "v1", "v2" or NULL */

/* Pure parsers; they fill the mount and membership fields of cg and leave the rest alone. */
/* cgroup and cgroup2 mounts from a mountinfo file (proc_pid_mountinfo(5) format). */
int host_cg_parse_mountinfo(FILE *f, struct host_cgroups *cg, struct al_error *err);
/* Our cgroups from a /proc/<pid>/cgroup file ("0::/path", "4:memory:/path", "2:cpu,cpuacct:/"). */
int host_cg_parse_proc_cgroup(FILE *f, struct host_cgroups *cg, struct al_error *err);
/* Pure: computes layout and each hierarchy's dir from what the parsers found. */
int host_cg_resolve(struct host_cgroups *cg, struct al_error *err);
/* Pure: fills use[] from found/writable and v2_controllers (v2 preferred when the controller is there). */
void host_cg_choose(struct host_cgroups *cg);
/* True when the space-separated list holds name as a whole word. */
bool host_cg_list_has(const char *list, const char *name);

/* All of the above against /proc/self, plus reading cgroup.controllers and checking
 * write access. Reads only; creates nothing. Fills all of *cg (zeroed first): callers need
 * not clear it (80 KiB, and clearing it twice was 82 K instructions of every start). */
int host_cg_detect(struct host_cgroups *cg, struct al_error *err);

/* ---- other pure parsers ---------------------------------------------------------- */

/* Is filesystem type name listed in a /proc/filesystems file? */
int host_fs_listed(FILE *f, const char *name, bool *out);

/* ---- probes ---------------------------------------------------------------------- */

/* The outcome of one probe run in a forked child: ok, or the step that failed and why. */
struct host_probe_res {
	bool ran; /* false: not applicable here (e.g. "as root" when not root) */
	bool ok;
	int err;	  /* positive errno of the failing step */
	const char *step; /* static name of the failing step, or NULL */
};

enum host_ns {
	HOST_NS_USER,
	HOST_NS_PID,
	HOST_NS_MOUNT,
	HOST_NS_NET,
	HOST_NS_IPC,
	HOST_NS_UTS,
	HOST_NS_CGROUP,
	HOST_NS_TIME,
	HOST_NS__COUNT,
};
const char *host_ns_name(enum host_ns ns);

enum host_backend {
	HOST_BACKEND_BWRAP,
	HOST_BACKEND_RUNSC,
	HOST_BACKEND_CRUN,
	HOST_BACKEND_RUNC,
	HOST_BACKEND__COUNT,
};
const char *host_backend_name(enum host_backend b);

/* Seccomp return actions the kernel knows (SECCOMP_GET_ACTION_AVAIL), as bits. */
enum host_seccomp_action {
	HOST_SECCOMP_KILL_PROCESS,
	HOST_SECCOMP_KILL_THREAD,
	HOST_SECCOMP_TRAP,
	HOST_SECCOMP_ERRNO,
	HOST_SECCOMP_USER_NOTIF,
	HOST_SECCOMP_TRACE,
	HOST_SECCOMP_LOG,
	HOST_SECCOMP_ALLOW,
	HOST_SECCOMP__COUNT,
};
const char *host_seccomp_action_name(enum host_seccomp_action a);

struct host_userns {
	struct host_probe_res as_root;	    /* ran only when we are root */
	struct host_probe_res unprivileged; /* as uid/gid 65534 when root, else as ourselves */
	unsigned unpriv_uid;
	long max_user_namespaces;	/* /proc/sys/user/max_user_namespaces; -1 absent */
	long unprivileged_userns_clone; /* Debian's kernel.unprivileged_userns_clone; -1 absent */
	long apparmor_restrict_userns;	/* Ubuntu's kernel.apparmor_restrict_unprivileged_userns; -1 absent */
	char newuidmap[PATH_MAX];	/* "" when absent */
	char newgidmap[PATH_MAX];
	bool newuidmap_privileged; /* setuid root or file capabilities: it can map ranges */
	bool newgidmap_privileged;
};

struct host_seccomp {
	bool filter;	  /* a filter can be installed and can return errors */
	int mode;	  /* PR_GET_SECCOMP: 0 none, 2 already under a filter; -1 unknown */
	int err;	  /* errno of the failing query when !filter */
	unsigned actions; /* bit (1u << enum host_seccomp_action) per action the kernel knows */
};

struct host_kvm {
	bool present; /* /dev/kvm exists */
	bool usable;  /* and opens read-write */
	int err;      /* errno of stat or open */
};

/* Everything airlock check reports. Large (over 100 KiB): allocate it. */
struct al_host_report {
	char kernel[128]; /* uname release */
	unsigned euid;
	struct host_userns userns;
	struct host_probe_res ns[HOST_NS__COUNT]; /* unshare(CLONE_NEWUSER | type) as ourselves */
	int landlock_abi;			  /* 0: absent or disabled */
	int landlock_err;			  /* errno of the version query when abi is 0 */
	struct host_seccomp seccomp;
	struct host_cgroups cg;
	int cg_err; /* detection failed part-way (cg holds what was found) */
	char cg_errmsg[AL_ERROR_MAX];
	struct {
		bool available; /* host_systemd_probe */
		char detail[AL_ERROR_MAX];
	} systemd_scope;
	struct {
		bool listed; /* in /proc/filesystems (a module may still autoload) */
		struct host_probe_res userns_mount;
	} overlay;
	struct host_kvm kvm;
	char backend[HOST_BACKEND__COUNT][PATH_MAX]; /* path found in PATH, or "" */
	char bwrap_version[32];			     /* of the bwrap backend's /usr/bin/bwrap; "" if it does not run */
};

/* Probes everything. Each probe runs in a forked child that exits at once, or is a
 * read-only query; nothing is mounted or created in the host's namespaces. Missing
 * features are data, not errors: this fails only when probing itself cannot work. */
int host_probe(struct al_host_report *r, struct al_error *err);

/* The individual probes, for the modules that need one answer. */
void host_probe_userns(struct host_userns *u);
void host_probe_ns(enum host_ns ns, struct host_probe_res *res);
int host_landlock_abi(int *err_out);
void host_probe_seccomp(struct host_seccomp *s);
void host_probe_kvm(struct host_kvm *k);
void host_probe_overlay_userns(struct host_probe_res *res);
/* Finds an executable name in PATH (or the default PATH) and writes its path to out. */
int host_find_in_path(const char *name, char *out, size_t outsz);

/* ---- a delegated cgroup from the user's systemd (systemd.c) ----------------------- */

/* Runs argv (an absolute path) with envp, stdin and stderr on /dev/null, and keeps the start of
 * its stdout in out (NUL-terminated; the rest is drained). Kills it after timeout_ms. Returns its
 * exit status (128+N for signal N), -ETIMEDOUT, or -errno when it could not be started. */
int host_run_capture(char *const argv[], char *const envp[], int timeout_ms, char *out, size_t size);
/* As an ordinary user: asks the user's systemd manager for a transient scope with Delegate=yes
 * and moves this process into it (airlock-scope, beside our executable). 0 and the unit's name,
 * or -errno and err naming what was tried and why it failed. */
int host_systemd_scope(char *unit, size_t size, struct al_error *err);
/* For `airlock check`: whether an ordinary user's systemd manager answers here and a scope of
 * its could hold limit controllers; detail says its version, or why not. Never as root. */
bool host_systemd_probe(const struct host_cgroups *hc, char *detail, size_t size);
/* A small file relative to dirfd into buf, without the trailing newline: 0 or -errno. */
int host_read_small(int dirfd, const char *name, char *buf, size_t size);
/* Pure: of the controllers missing (bits 1u << enum host_cg_ctrl), those a scope could bring: the
 * ones the cgroup2 hierarchy offers at its root (root_controllers, that root's cgroup.controllers). */
unsigned host_cg_scope_gain(const struct host_cgroups *hc, const char *root_controllers, unsigned missing);

/* ---- what each backend can enforce here (backends.c) ------------------------------- */

/* The layers of a policy a backend may be asked for (names as in --require where they exist). */
enum host_layer {
	HOST_LAYER_USERNS,
	HOST_LAYER_PIDNS,
	HOST_LAYER_MNTNS,
	HOST_LAYER_NETNS,
	HOST_LAYER_IPCNS,
	HOST_LAYER_UTSNS,
	HOST_LAYER_CGROUPNS,
	HOST_LAYER_SECCOMP,
	HOST_LAYER_LANDLOCK,
	HOST_LAYER_CGROUP_LIMITS, /* memory, pids or cpu through the job's cgroup */
	HOST_LAYER_PIDS_LIMIT,	  /* the job cgroup's pids limit bounds the payload's processes (not gVisor's) */
	HOST_LAYER_NO_NEW_PRIVS,
	HOST_LAYER_CAPS,	    /* every capability dropped */
	HOST_LAYER_DISK_CAP,	    /* /tmp and /workspace as size-capped tmpfs */
	HOST_LAYER_EGRESS_PROXY,    /* --net allow=... */
	HOST_LAYER_CHECKOUT_COPY,   /* --checkout-mode copy */
	HOST_LAYER_WORKDIR_OVERLAY, /* --workdir behind an overlay capped by --disk */
	HOST_LAYER__COUNT,
};
const char *host_layer_name(enum host_layer l);

/* The backends that make layers: enum al_backend's, each before AL_BACKEND_NONE (which makes none). */
#define HOST_LAYERS_BACKENDS AL_BACKEND_NONE

struct host_layers {
	bool available; /* the backend can start a job here at all */
	char why[160];	/* when not available: what is missing */
	bool has[HOST_LAYER__COUNT];
};

/* Pure: what backend b can enforce on the host the report describes, but the layers it lacks
 * whatever the host offers (lacks, NULL for none: its capability table's word, which the backend
 * layer above gives, be_host_lacks). */
void host_backend_layers(const struct al_host_report *r, enum al_backend b, const bool lacks[HOST_LAYER__COUNT],
			 struct host_layers *out);
/* What the backend layer says of each backend (be_host_lacks, from the capability tables): its
 * name, and its lacks as host_backend_layers takes them. */
struct host_backend_caps {
	const char *name;
	bool lacks[HOST_LAYER__COUNT];
};
typedef struct host_backend_caps host_lacks_table[HOST_LAYERS_BACKENDS];
/* Runs /usr/bin/bwrap --version in a child; "" when it is missing or does not run. */
void host_probe_bwrap(char *version, size_t size);

/* "step: reason" for a failed probe, "ok", or "not applicable" (for the front ends). */
void host_res_describe(const struct host_probe_res *res, char *buf, size_t size);

/* The report as one JSON object (malloc'd, caller frees). */
int host_report_to_json(const struct al_host_report *r, const host_lacks_table *lacks, char **out);

#endif
