/* rlimits.h — the policy's resource limits as setrlimit calls. */
#ifndef AL_KIT_RLIMITS_H
#define AL_KIT_RLIMITS_H

#include <stdint.h>

#include "airlock/airlock.h"

/* Applies limits (indexed by enum al_limit). Never raises a hard limit: a request above
 * the current hard limit is clamped to it, which is stricter, never weaker. */
int rl_apply(const uint64_t limits[AL_LIMIT__COUNT]);

#endif
