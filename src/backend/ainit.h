/* ainit.h — airlock-init: the airlock binary as the first program of airlock's inside another tool's boundary.
 *
 * Where a backend's boundary is made by another program (crun, runsc, bwrap), the payload's
 * last steps — its rlimits, the native backend's Landlock ruleset — are taken by the airlock
 * binary itself, bound read-only into the sandbox at AI_PATH and run as the tool's command:
 *
 *   crun  (--backend oci):    pid 1 of the container; forks the payload (pid 2), reaps, and
 *                             writes one record to AI_RECORD_FD (crun --preserve-fds=1).
 *   runsc (--backend gvisor): --exec, only when the policy has files: copies them into place
 *                             and becomes the payload (gVisor's pid 1); failures on stderr.
 *   bwrap (--backend bwrap):  --exec --record FD: bwrap's own pid 1 stays the namespace's
 *                             init; the init builds and enforces the ruleset and becomes the
 *                             payload (its pid, bwrap's exit status handling unchanged); a
 *                             failure before the exec is one record on FD.
 *
 * Its argv: AI_PATH [--rlimit RES:SOFT:HARD]... [--landlock-set FLAGS [--landlock MODE:PATH]...]
 * [--exec [--record FD] [--file SRC DEST MODE]...] -- CMD...
 * --rlimit: set in the payload only, just before its execve (RES: the RLIMIT_* number, SOFT and
 * HARD decimal); --landlock: the native backend's ruleset (fs_landlock_spec), one rule each (MODE
 * "w" or "r", "?" after it when the path is optional), after --landlock-set's FLAGS (the spec's
 * "t" deny_tcp, "s" scope, "w" writes_only, then "-"; POSIX queues through the layout's
 * /dev/mqueue rule, where the backend mounts the namespace's mqueue), built by the init and
 * enforced by the payload after its rlimits; --exec: no fork, the init becomes CMD; --file (runsc):
 * copies SRC to DEST (a new file of the sandbox user's, octal MODE) first. */
#ifndef AL_BACKEND_AINIT_H
#define AL_BACKEND_AINIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kit/landlock.h"
#include "policy/policy.h"

#define AI_PATH	     "/.airlock-init"
#define AI_RECORD_FD 3	 /* pid-1 mode: where the record goes */
#define AI_FAIL	     125 /* the init's own failure (the record says more) */
/* A record: two int32, kind and value. */
enum ai_record_kind {
	AI_EXITED = 1,		/* value: the payload's wait status (pid-1 mode) */
	AI_EXEC_FAILED = 2,	/* value: errno of execvp (or fork) */
	AI_RLIMIT_FAILED = 3,	/* value: errno of setrlimit (EINVAL, ERANGE: a malformed argv) */
	AI_LANDLOCK_FAILED = 4, /* value: errno of building or enforcing the Landlock ruleset */
};
#define AI_MAX_LANDLOCK 96 /* rules the init takes (the layout's ~20 plus the policy's binds) */
#define AI_MAX_RLIMITS	6

/* AI_PATH; a reference that also links ainit.c's constructor into the binary. */
const char *ai_path(void);

/* One rlimit, already clamped to what the caller may set. */
struct ai_rlimit {
	const char *type; /* "RLIMIT_NOFILE" ...: an OCI process.rlimits name */
	int resource;	  /* RLIMIT_NOFILE ...: the init's --rlimit */
	uint64_t soft, hard;
};

/* The limits rl_apply sets for the native payload, clamped as it clamps them (RLIMIT_CORE 0
 * first). Returns how many it wrote to out. */
size_t ai_rlimits(const uint64_t *limits, struct ai_rlimit out[AI_MAX_RLIMITS]);

/* The native backend's Landlock ruleset for the init to build (*paths: malloc'd, free() it),
 * every rule optional, and the ABI it will be built at in *abi: 0 (and nothing else set) for
 * --landlock off or a kernel without Landlock; the floor was checked by be_refuse. */
int ai_landlock(const struct al_policy *p, struct ll_spec *spec, struct ll_path **paths, int *abi,
		struct al_error *err);

/* What goes on the init's command line before the caller's --file options and "--". */
struct ai_opts {
	const struct ai_rlimit *rlimits;
	size_t nrlimits;
	const struct ll_spec *landlock; /* NULL: none */
	bool exec;
	int record_fd; /* with exec: where a failure's record goes; -1: a line on stderr */
};

/* Calls push for each string of the init's argv, AI_PATH first; stops at push's first error. */
int ai_argv(const struct ai_opts *o, int (*push)(void *ctx, const char *s), void *ctx);

/* The host path of the running airlock binary, which the init is (path: PATH_MAX bytes). */
int ai_binary(char *path, size_t size, struct al_error *err);

/* A failure record (not AI_EXITED) as the nat_record the supervisor reads; cmd names the command. */
void ai_record_send(int status_fd, const int32_t rec[2], const char *cmd);

#endif
