/* ctr.h — the container's side of airlock-runc: what create and exec prepare, and the child code that applies it. */
#ifndef AL_OCIRT_CTR_H
#define AL_OCIRT_CTR_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kit/landlock.h"
#include "kit/seccomp.h"
#include "spec.h"

/* One process's confinement, prepared by the parent (all allocation there) and applied by the
 * child without allocating: rlimits, ids, capabilities, no_new_privs, Landlock, seccomp. */
struct ort_payload {
	const struct ort_process *proc;
	const struct ort_caps *caps; /* the plan's, not the config's */
	bool nnp;
	struct ll_spec landlock; /* npaths == 0 and !on: none */
	bool landlock_on;
	struct ll_path *ll_paths;
	struct sock_fprog config_sc; /* the config's linux.seccomp, len 0: none */
	struct sc_filter airlock_sc; /* airlock's allowlist, prog.len 0: none */
	char path_buf[4096];	     /* argv[0] resolved against PATH, by the child */
	int fifo_fd;		     /* create: wait for start on it (read one byte); -1 for exec */
	int console_fd;		     /* a connected console socket, or -1 */
	int status_fd;		     /* records to the parent */
	/* create's init: config.json's startContainer hooks, run after start, confined, before execve,
	 * with the state in hook_state_fd on their stdin (else NULL and -1) */
	const struct ort_hooks *start_hooks;
	int hook_state_fd;
};

/* Everything the container's init needs, prepared by create. */
struct ort_init {
	const struct ort_spec *s;
	const struct ort_plan *plan;
	int root_tree;	       /* open_tree clone of the rootfs, made by create (host's root) */
	const int *bind_trees; /* per mount: open_tree clone of a bind's source (its flags set), or -1 */
	int sync_fd;	       /* one byte: the id maps are written */
	const int *cg_tasks;   /* the v1 cgroups' `tasks` to join (ort_cg_join), closed once joined */
	int cg_ntasks;
	/* prestart, createRuntime or createContainer hooks: after the mounts, the init asks create
	 * (ORT_HOOKS) to run the first two, waits for a second byte on sync_fd, runs the third */
	bool hooks_sync;
	struct ort_payload pl;
};

/* A failure in the child: stage, errno and a short static word; READY means waiting for start. */
enum ort_stage {
	ORT_READY,
	ORT_SYNC,
	ORT_IDS,
	ORT_MOUNT,
	ORT_ROOT,
	ORT_DEV,
	ORT_MASK,
	ORT_PIVOT,
	ORT_HOST,
	ORT_CGROUPNS,
	ORT_TTY,
	ORT_RLIMIT,
	ORT_CAPS,
	ORT_NNP,
	ORT_LANDLOCK,
	ORT_SECCOMP,
	ORT_CWD,
	ORT_EXEC,
	ORT_SETNS,
	ORT_SYSCTL,
	ORT_CGROUP,
	ORT_HOOKS, /* not a failure: the init asks create to run the runtime's hooks now */
	ORT_HOOK   /* a hook of the container's side failed (err: ETIMEDOUT, ECANCELED, exec's errno) */
};
struct ort_record {
	int stage;
	int err;
	char what[96];
};
const char *ort_stage_name(int stage);

/* Parent: the payload's layers for process proc under plan (Landlock rules from the spec's
 * layout, the config's seccomp compiled, airlock's allowlist). 0 or -errno. */
int ort_payload_prepare(struct ort_payload *pl, const struct ort_spec *s, const struct ort_plan *plan,
			const struct ort_process *proc, struct al_error *err);
void ort_payload_free(struct ort_payload *pl);
/* Compiles linux.seccomp (libseccomp, in the parent) into plain BPF. */
int ort_seccomp_compile(json_t *sc, struct sock_fprog *out, struct al_error *err);

/* Parent (create): makes the mount points of the spec's mounts beneath the rootfs that do not
 * exist, resolving every path inside it (openat2 RESOLVE_IN_ROOT), as the host's root. */
int ort_prepare_rootfs(const struct ort_spec *s, struct al_error *err);

/* mkdir -p of dest beneath rootfd (openat2 RESOLVE_IN_ROOT at each step; the last component a
 * file when file is set). No allocation: create uses it on the rootfs, init inside its mounts. */
int ort_make_mount_point(int rootfd, const char *dest, bool file);

/* Parent (create): detached clones (open_tree) of the rootfs and of every bind source, made with
 * the host root's access, so the container's init, a user namespace's root, never walks a host
 * path to reach them. trees[i] is -1 for a mount that is not a bind. 0 or -errno. */
int ort_open_trees(const struct ort_spec *s, int *root_tree, int *trees, struct al_error *err);

/* Parent (create): where airlock adds the user namespace, the rootfs clone (root_tree, detached)
 * becomes an idmapped mount with the container's map, so the container's root owns the image's
 * root-owned files; *rm says what was done (UNSUPPORTED: the filesystem cannot, the container runs
 * as before). 0 or -errno for any other failure. */
int ort_idmap_root(int root_tree, const struct ort_spec *s, const struct ort_plan *plan, struct ort_rootmap *rm,
		   struct al_error *err);

/* Child: init of the container, from clone3 to execve. */
_Noreturn void ort_init_main(struct ort_init *in);
/* Child: a process of exec, already in the container's namespaces. */
_Noreturn void ort_payload_main(struct ort_payload *pl);
/* Child: a pty of the container's devpts as stdio and controlling terminal; its master goes
 * to the console socket (pl->console_fd), as runc sends it. */
void ort_setup_terminal(struct ort_payload *pl);
_Noreturn void ort_die(int status_fd, enum ort_stage stage, int err, const char *what);

/* runtime.c: the caller's --console-socket, connected: the pty's master goes there. A descriptor,
 * or -errno with err set. */
int ort_connect_console(const char *path, struct al_error *err);
/* runtime.c: the caller's --pid-file, written whole (a temporary file renamed into place). */
int ort_write_pid_file(const char *path, pid_t pid, struct al_error *err);

#endif
