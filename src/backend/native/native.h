/* native.h — what the native backend's spawn paths (namespaces, fallback) share. */
#ifndef AL_NATIVE_NATIVE_H
#define AL_NATIVE_NATIVE_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "landlock.h"

json_t *nat_rlimits_json(const struct al_policy *p);
/* The verdict's Landlock entry: false without a spec, else the ABI and rule sets applied. */
json_t *nat_landlock_json(const struct ll_spec *spec, int abi);
/* The payload's Landlock ruleset for policy p in the sandbox layout of the filesystem plan (every
 * backend that applies Landlock inside it uses this one): *paths is malloc'd (free it), its
 * strings borrowed from p. 0 or -ENOMEM. */
int nat_landlock_spec(const struct al_policy *p, struct ll_spec *spec, struct ll_path **paths, size_t *npaths);
/* The --require floor's Landlock part against the kernel's ABI: 0, or a refusal naming it. */
int nat_landlock_floor(const struct al_policy *p, int abi, struct al_error *err);
/* clone3's errno says the kernel or its policy refuses user namespaces. */
bool nat_userns_refused(int e);
/* The fallback without namespaces (fallback.c); clone_errno says why namespaces failed. */
int nat_fallback_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, int clone_errno,
		       struct al_error *err);

#endif
