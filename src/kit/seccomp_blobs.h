/* seccomp_blobs.h — the filters compiled at build time by tools/gen-seccomp.c (seccomp_blobs.c is generated). */
#ifndef AL_KIT_SECCOMP_BLOBS_H
#define AL_KIT_SECCOMP_BLOBS_H

#include <linux/filter.h>

#define SC_NBLOBS 8 /* indexed by sc_options_key() */

struct sc_blob {
	const struct sock_filter *code;
	unsigned short len;
};

extern const struct sc_blob sc_blobs[SC_NBLOBS];

#endif
