/* bundle.h — the OCI backends' shared insides: the policy as an OCI bundle (pure), the spawn and the monitor. */
#ifndef AL_OCI_BUNDLE_H
#define AL_OCI_BUNDLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/ainit.h"
#include "backend/backend.h"
#include "backend/capability.h"
#include "cgroup/cgroup.h"
#include "kit/channel.h"
#include "kit/fsplan.h"
#include "kit/landlock.h"
#include "kit/seccomp.h"
#include "policy/policy.h"

/* Fixed paths, never searched in PATH: a root caller must not run whatever a PATH entry holds. */
#define OCI_CRUN_PATH  "/usr/bin/crun"
#define OCI_RUNSC_PATH "/usr/bin/runsc"

enum oci_runtime {
	OCI_CRUN,  /* --backend oci: crun, the host kernel behind namespaces and airlock's seccomp filter */
	OCI_RUNSC, /* --backend gvisor: runsc, gVisor's user-space kernel (ptrace platform) */
};

/* crun's container process is airlock-init (backend/ainit.h), the airlock binary bound read-only
 * at AI_PATH: it runs the payload as pid 2 and writes one record to AI_RECORD_FD
 * (crun --preserve-fds=1); with runsc it only copies the policy's files (--exec). */
/* runsc: the bundle's files directory, bound read-only, which the --exec init copies from. */
#define OCI_FILES_PATH "/.airlock-files"

/* ---- the bundle (bundle.c, pure) ------------------------------------------------------ */

struct oci_opts {
	enum oci_runtime runtime;
	bool root;			      /* the caller is host root: the sandbox's ids map to id_base.. */
	const char *const *file_src;	      /* per plan op: the bundle file holding an FS_FILE's text, else NULL */
	const char *seccomp_b64;	      /* crun: airlock's BPF program (base64), NULL for profile "off" */
	const char *init_src;		      /* the host path of the airlock binary, run as the container's init (crun;
				      * runsc only for the policy's files, with init_exec); NULL: none */
	bool init_exec;			      /* the init copies the policy's files and becomes the payload (runsc) */
	const char *files_dir;		      /* the bundle directory holding file_src's files (init_exec binds it) */
	const struct sc_options *oci_seccomp; /* runsc: the profile as linux.seccomp rules, NULL for "off" */
	struct ai_rlimit rlimits[AI_MAX_RLIMITS];
	size_t nrlimits;
	const struct ll_spec *landlock; /* crun: the payload's ruleset, applied by airlock-init; NULL: none */
	const struct cg_view *cgview;	/* crun: the job's cgroups, bound read-only at FS_CGROUP_VIEW; NULL: none */
};

/* config.json for policy p over the native backend's filesystem plan (ops whose optional
 * source is missing carry skip). *out is a new reference. */
int oci_config_build(const struct al_policy *p, const struct fs_plan *plan, const struct oci_opts *o, json_t **out,
		     struct al_error *err);
/* Is op i of the plan made in the bundle's rootfs directory (a directory, symlink or mount
 * point of the read-only root), rather than by the runtime inside a mount? */
bool oci_on_rootfs(const struct fs_plan *plan, size_t i);
/* The seccomp profile as an OCI linux.seccomp object (runsc --oci-seccomp enforces it in gVisor's
 * kernel): the same decisions as sc_build, per system call name. *out is a new reference. */
int oci_seccomp_json(const struct sc_options *so, json_t **out, struct al_error *err);
/* Standard base64 of n bytes (malloc'd), or NULL when out of memory. */
char *oci_base64(const void *data, size_t n);
/* The wait status of a payload whose runtime exited with code (128+N: signal N, as a shell reads it). */
int oci_wstatus(int code);
/* The last "error" message of crun's JSON log (--log-format=json), copied to msg; false if none. */
bool oci_log_error(const char *buf, size_t n, char *msg, size_t size);

/* ---- the spawn (ocispawn.c): what gvisor.c and oci.c share ---------------------------- */

/* What neither runtime can do: the layers made by airlock's own init, an overlay. */
#define OCI_LACKS                                                                                                      \
	[PN_CHECKOUT_COPY] = BE_WHY_NO_COPY, [PN_KEEP_CHANGES] = BE_WHY_NO_KEEP,                                       \
	[PN_SUBIDS] = "the container maps only the sandbox user (use --backend native)",                               \
	[PN_FALLBACK] = "the runtime itself needs user namespaces (use --backend native)", [PN_HOLD] = BE_WHY_NO_HOLD, \
	[PN_TTY] = BE_WHY_NO_TTY,                                                                                      \
	[PN_WORKDIR_DISK] = "it has no overlay, so the directory is bound read-write and writes reach the "            \
			    "host directly (use --backend native)",                                                    \
	[PN_WORKDIR] = "it has no overlay, so the host directory would be bound read-write and the job's "             \
		       "set-id files, FIFOs and modes would land on the host as it left them " BE_WHY_NO_WBACK

/* What one runtime adds to the shared spawn. */
struct oci_runtime_desc {
	enum oci_runtime runtime;
	const char *path;    /* OCI_CRUN_PATH or OCI_RUNSC_PATH */
	const char *name;    /* the backend's name in the verdict */
	const char *package; /* the Debian package, for messages */
	/* Fills a NULL-terminated argv (all strings malloc'd) to run the container in the
	 * foreground: state is the runtime's private --root, bundle the bundle directory, log
	 * the log file, id the container id. */
	int (*argv)(char ***argv, const struct al_policy *p, const char *state, const char *bundle, const char *log,
		    const char *id);
	/* What it makes, for the verdict's enforced object (be_applied). */
	unsigned ns; /* enum be_ns */
	bool pivot_root;
	const char *netns_maker, *kernel, *platform;
};

int oci_spawn(const struct oci_runtime_desc *d, const struct al_policy *p, const struct pol_plan *pl,
	      const struct be_io *io, struct be_proc *out, struct al_error *err);
/* A NULL-terminated copy of list (every string malloc'd) in *out: 0 or -ENOMEM. */
int oci_strv_dup(char ***out, const char *const *list);

/* ---- the monitor (ocichild.c): between clone3 and the runtime's execve ---------------- */

struct pol_capture;

struct oci_child {
	char *const *argv; /* the runtime's */
	const char *cmd;   /* the payload's argv[0], for messages */
	const char *log;   /* the runtime's log file, read once it exits */
	const char *tmp;   /* airlock's directory for this job: removed by the monitor at the end */
	enum oci_runtime runtime;
	int sync_fd;   /* read end: one byte once the job's cgroup holds us */
	int status_fd; /* write end: nat_record to the supervisor */
	int stdin_fd;  /* -1: /dev/null */
	int stdout_fd;
	int stderr_fd;
	int proxy_sock;			   /* -1, or where the egress proxy's listening socket goes (SCM_RIGHTS) */
	const struct pol_capture *capture; /* and the capture's sockets, when on */
	int init_r, init_w; /* crun: the pipe of airlock-init's record (write end: the container's fd 3); else -1 */
	bool root;	    /* host root: no user namespace of airlock's around the runtime */
	bool mask_unified;  /* hide the cgroup2 hierarchy of a hybrid layout from the runtime */
	uid_t uid;	    /* the caller's ids, mapped to 0 in airlock's user namespace */
	gid_t gid;
	bool cmd_absent; /* runsc with airlock-init: the command is in no PATH directory of its tree */
};

/* Runs as the clone3 child: starts the runtime as pid 1 of a pid namespace of its own,
 * reports the payload's end, removes the job's directory. */
_Noreturn void oci_monitor_main(const struct oci_child *c);

#endif
