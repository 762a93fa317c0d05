/* landlock.h — Landlock rules for the payload (raw syscalls, ABI detected at run time). */
#ifndef AL_KIT_LANDLOCK_H
#define AL_KIT_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The newest Landlock ABI this module knows. A newer kernel is used at this level: every
 * right we ask for exists there too, and rights we do not know stay unhandled (allowed). */
#define LL_ABI_MAX 7

/* One filesystem rule, as a path inside the sandbox (after pivot_root). */
struct ll_path {
	const char *path;
	bool writable; /* read-write (files and directories) instead of read/execute */
	bool optional; /* skip silently when the path does not exist */
};

/* Prepared by the parent (it may allocate); used by init without allocating. */
struct ll_spec {
	const struct ll_path *paths;
	size_t npaths;
	bool deny_tcp; /* ABI >= 4: no TCP bind/connect at all (network posture "none") */
	bool scope;    /* ABI >= 6: scope abstract UNIX sockets and signals to the sandbox */
	/* With deny_tcp: TCP ports the payload may still connect to (e.g. the allowlist
	 * posture's egress proxy on 127.0.0.1). Landlock matches the port only, not the
	 * address; the network namespace decides which addresses exist. NULL/0: none. */
	const uint16_t *tcp_connect_ports;
	size_t ntcp_connect_ports;
	/* 0: the kernel's ABI (capped at LL_ABI_MAX). N > 0: at most ABI N, as an older kernel
	 * would (Landlock keeps older rulesets working): lets the tests cover ABIs 1..7 on a
	 * new kernel. */
	int max_abi;
	/* Handle only the rights that change the tree (write, create, remove, rename), not
	 * read, list, execute, truncate or device ioctls. Right where a mount namespace already
	 * decides what can be read (the native layout, where a rule on / grants every read
	 * anyway): Landlock then skips its path walk on every read-only open, which is what a
	 * syscall-heavy job pays for. The fallback, without a mount namespace, handles all. */
	bool writes_only;
	/* Grant the POSIX message queues of init's IPC namespace (mq_open creates and opens
	 * files of that namespace's internal mqueue filesystem, which Landlock's write rules
	 * would otherwise refuse). Only where the IPC namespace is the sandbox's own. Best
	 * effort: a kernel that cannot mount mqueue leaves mq_open refused (EACCES). */
	bool mqueue;
};

/* What was applied, for the verdict. */
struct ll_result {
	int abi;		 /* ABI used (0: Landlock unavailable); at most LL_ABI_MAX */
	bool fs;		 /* filesystem rules applied */
	bool fs_reads;		 /* ... including read, list and execute (not writes_only) */
	bool net;		 /* TCP rules applied */
	bool scoped;		 /* scoping applied */
	const char *failed_path; /* on failure: the spec path that could not be opened or added, else NULL */
};

/* The running kernel's Landlock ABI, 0 if unsupported or disabled. */
int ll_abi(void);
/* init, after pivot_root: creates the ruleset for spec; returns its fd (O_CLOEXEC) or -errno.
 * Fills res. Only system calls, no allocation.
 * -EOPNOTSUPP: the kernel has no Landlock (res->abi == 0); the caller decides whether that
 * is fatal. ABI < 4 ignores deny_tcp and ABI < 6 ignores scope: res->net / res->scoped
 * say what was really applied, and a caller that requires them must refuse. */
int ll_build(const struct ll_spec *spec, struct ll_result *res);
/* The same, given a mount of the IPC namespace's mqueue filesystem for spec->mqueue (see
 * ll_mqueue_mount; not closed here); mq_fd < 0: ll_build's own detached one. */
int ll_build_mq(const struct ll_spec *spec, int mq_fd, struct ll_result *res);
/* init: a detached mount (fsopen/fsmount) of its IPC namespace's mqueue filesystem, or -errno.
 * Closing it while still detached unmounts it, and every unmount waits for an RCU grace
 * period (namespace_unlock): init attaches it under the old root instead (mnt_enter_root),
 * so it goes with the old root's detach, in the same wait. */
int ll_mqueue_mount(void);
/* payload, after no_new_privs: enforce the ruleset on itself, then close it. */
int ll_restrict(int ruleset_fd);

/* Pure helpers (no system calls), exposed for the unit tests and the verdict. */

/* The filesystem rights handled (denied unless a rule grants them) at this ABI. */
uint64_t ll_fs_handled(int abi);
/* The rights one rule grants at this ABI, for a read-only or writable path, masked to what
 * the kernel accepts on that file type (only file rights on a non-directory). */
uint64_t ll_fs_rule_rights(int abi, bool writable, bool is_dir);

/* Parent side: the rule list for the native backend's sandbox layout (see fsplan.c), plus
 * the policy's extra bind destinations. *out is one malloc'd array (free() it); its path
 * strings are string literals or the caller's extra_ro/extra_rw strings, which must outlive
 * it. Returns 0 or -ENOMEM. */
int ll_default_paths(struct ll_path **out, size_t *n, const char *const *extra_ro, size_t nro,
		     const char *const *extra_rw, size_t nrw);

#endif
