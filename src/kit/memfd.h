/* memfd.h — sealed memory files: bytes handed to a payload that nobody, the payload included, can change. */
#ifndef AL_KIT_MEMFD_H
#define AL_KIT_MEMFD_H

#include <stddef.h>

/* A memfd holding data[0..len), sealed against writes, growth, shrinking and further seals, and
 * reopened read-only: the descriptor (O_CLOEXEC), or -errno. */
int mfd_sealed(const char *name, const char *data, size_t len);

#endif
