/* landlock.h — Landlock rules for the payload (raw syscalls, ABI detected at run time). */
#ifndef AL_NATIVE_LANDLOCK_H
#define AL_NATIVE_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One filesystem rule, as a path inside the sandbox (after pivot_root). */
struct ll_path {
	const char *path;
	bool writable;	/* read-write (files and directories) instead of read/execute */
	bool optional;	/* skip silently when the path does not exist */
};

/* Prepared by the parent (it may allocate); used by init without allocating. */
struct ll_spec {
	const struct ll_path *paths;
	size_t npaths;
	bool deny_tcp;	     /* ABI >= 4: no TCP bind/connect at all (network posture "none") */
	bool scope;	     /* ABI >= 6: scope abstract UNIX sockets and signals to the sandbox */
};

/* What was applied, for the verdict. */
struct ll_result {
	int abi;	    /* ABI used (0: Landlock unavailable) */
	bool fs;	    /* filesystem rules applied */
	bool net;	    /* TCP rules applied */
	bool scoped;	    /* scoping applied */
};

/* The running kernel's Landlock ABI, 0 if unsupported or disabled. */
int ll_abi(void);
/* init, after pivot_root: creates the ruleset for spec; returns its fd (O_CLOEXEC) or -errno.
 * Fills res. Only system calls, no allocation. */
int ll_build(const struct ll_spec *spec, struct ll_result *res);
/* payload, after no_new_privs: enforce the ruleset on itself, then close it. */
int ll_restrict(int ruleset_fd);

#endif
