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
/* clone3's errno says the kernel or its policy refuses user namespaces. */
bool nat_userns_refused(int e);
/* The fallback without namespaces (fallback.c); clone_errno says why namespaces failed. */
int nat_fallback_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, int clone_errno,
		       struct al_error *err);

#endif
