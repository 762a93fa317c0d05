/* seccomp.h — the payload's system call filter: compiled with libseccomp in the parent, loaded last in the payload. */
#ifndef AL_NATIVE_SECCOMP_H
#define AL_NATIVE_SECCOMP_H

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
const char *sc_profile_name(enum al_seccomp_profile p);

#endif
