/* seccomp_load.c — the run-time side of the filter: the programs compiled at build time, loaded
 * into the payload with one system call. No libseccomp here (seccomp.c compiles, at build time). */
#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp.h"
#include "util/error.h"
#ifndef AL_SECCOMP_NO_BLOBS
#include "seccomp_blobs.h"
#endif

unsigned sc_options_key(const struct sc_options *o)
{
	return (o->profile == AL_SECCOMP_STRICT ? 1u : 0u) | (o->allow_inet ? 2u : 0u) | (o->allow_io_uring ? 4u : 0u);
}

void sc_options_from_key(unsigned key, struct sc_options *o)
{
	*o = (struct sc_options){.profile = (key & 1u) ? AL_SECCOMP_STRICT : AL_SECCOMP_DEFAULT,
				 .allow_inet = key & 2u,
				 .allow_io_uring = key & 4u};
}

int sc_build(const struct sc_options *o, struct sc_filter *f, struct al_error *err)
{
	memset(f, 0, sizeof(*f));
	f->profile = o->profile;
	switch (o->profile) {
	case AL_SECCOMP_OFF:
		return 0;
	case AL_SECCOMP_DEFAULT:
	case AL_SECCOMP_STRICT:
		break;
	default:
		return al_err(err, EINVAL, "seccomp: unknown profile %d", (int)o->profile);
	}
#ifdef AL_SECCOMP_NO_BLOBS
	return al_err(err, ENOSYS, "seccomp: this build has no compiled filters");
#else
	/* Compiled at build time by tools/gen-seccomp.c with the same tables and libseccomp
	 * (test_seccomp_blobs checks they match a fresh compile): a start costs a copy, not
	 * ~1.5 ms of libseccomp work, and airlock does not carry libseccomp at all. */
	unsigned key = sc_options_key(o);
	if (key >= SC_NBLOBS || !sc_blobs[key].len)
		return al_err(err, ENOSYS, "seccomp: no compiled filter for this variant");
	size_t bytes = sc_blobs[key].len * sizeof(struct sock_filter);
	if (!(f->prog.filter = malloc(bytes)))
		return al_err(err, ENOMEM, "seccomp: out of memory");
	memcpy(f->prog.filter, sc_blobs[key].code, bytes);
	f->prog.len = sc_blobs[key].len;
	return 0;
#endif
}

int sc_load(const struct sc_filter *f)
{
	if (f->prog.len == 0)
		/* Only "off" may load nothing: a filter that failed to build never means "no filter". */
		return f->profile == AL_SECCOMP_OFF ? 0 : -EINVAL;
	/* Flags 0: the payload is single-threaded here (no TSYNC needed), and the kernel's
	 * speculative-store-bypass mitigation for filtered tasks stays as the host set it. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f->prog) < 0)
		return -errno;
	return 0;
}

void sc_free(struct sc_filter *f)
{
	if (!f)
		return;
	free(f->prog.filter);
	f->prog.filter = NULL;
	f->prog.len = 0;
}
