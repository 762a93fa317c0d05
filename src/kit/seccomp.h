/* seccomp.h — the payload's system call filter: compiled with libseccomp in the parent, loaded last in the payload. */
#ifndef AL_KIT_SECCOMP_H
#define AL_KIT_SECCOMP_H

#include <linux/filter.h>
#include <stdbool.h>

#include "airlock/airlock.h"

struct sc_options {
	enum al_seccomp_profile profile;
	bool allow_inet;     /* AF_INET/AF_INET6 sockets (network posture other than "none") */
	bool allow_io_uring; /* io_uring_* (opt-in) */
};

/* A compiled filter: plain BPF the child can load without allocating. */
struct sc_filter {
	struct sock_fprog prog; /* prog.filter is malloc'd; prog.len == 0 means "no filter" (profile off) */
	enum al_seccomp_profile profile;
};

/* Parent side: builds the filter for the native x86_64 ABI, rejecting the 32-bit x86 ABI and x32. */
int sc_build(const struct sc_options *o, struct sc_filter *f, struct al_error *err);
/* Payload side, after no_new_privs and Landlock, just before execve: raw seccomp(2), no allocation. */
int sc_load(const struct sc_filter *f);
void sc_free(struct sc_filter *f);
/* Compiles with libseccomp, bypassing the build-time programs (for the generator and tests). */
int sc_compile(const struct sc_options *o, struct sock_fprog *prog, struct al_error *err);
/* The eight option combinations as 0..7 (profile strict, allow_inet, allow_io_uring bits). */
unsigned sc_options_key(const struct sc_options *o);
void sc_options_from_key(unsigned key, struct sc_options *o);

/* What a profile does with one x86_64 system call, by name (pure; what sc_build compiles).
 * For tests, reports and "airlock profiles". */
enum sc_action {
	SC_ACT_ALLOW,  /* allowed whatever the arguments */
	SC_ACT_ARGS,   /* allowed with argument filters: clone, ioctl, socket, socketpair, personality,
			* and the calls that set a mode (open, openat, creat, mkdir[at], mknod[at],
			* chmod, fchmod, fchmodat[2]): not with S_ISUID/S_ISGID */
	SC_ACT_EPERM,  /* known and denied: fails with EPERM */
	SC_ACT_KILL,   /* always-denied in the strict profile: kills the process (SIGSYS) */
	SC_ACT_ENOSYS, /* clone3, openat2, or unknown to the filter (above sc_horizon()): fails with ENOSYS */
};
enum sc_action sc_classify(const struct sc_options *o, const char *name);
/* The set-id rule of the calls that set a mode, for translators of the profile (OCI
 * linux.seccomp): true when NAME is one, with the index of its mode argument and of its
 * open flags (-1: the call always applies its mode). Such a call is allowed only when
 * (mode & SC_SETID_MODE) == 0, or when (flags & SC_CREATE_FLAGS) == 0; else EPERM. */
#define SC_SETID_MODE	06000ULL     /* S_ISUID | S_ISGID */
#define SC_CREATE_FLAGS 020000100ULL /* O_CREAT | __O_TMPFILE without O_DIRECTORY */
bool sc_mode_args(const char *name, int *mode_arg, int *flags_arg);
const char *sc_action_name(enum sc_action a);
/* The highest syscall number the filter classifies: min(this libseccomp's newest x86_64
 * call, the number the tables were reviewed against). Anything above it gets ENOSYS. */
int sc_horizon(void);

#endif
