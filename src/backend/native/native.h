/* native.h — what the native backend's spawn paths (namespaces, fallback) share. */
#ifndef AL_NATIVE_NATIVE_H
#define AL_NATIVE_NATIVE_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "kit/landlock.h"

/* The payload's Landlock ruleset for policy p in the sandbox layout of the filesystem plan (every
 * backend that applies Landlock inside it uses this one): *paths is malloc'd (free it), its
 * strings borrowed from p. 0 or -ENOMEM. */
int nat_landlock_spec(const struct al_policy *p, struct ll_spec *spec, struct ll_path **paths, size_t *npaths);
/* clone3's errno says the kernel or its policy refuses user namespaces. */
bool nat_userns_refused(int e);
/* The fallback without namespaces (fallback.c); clone_errno says why namespaces failed. */
int nat_fallback_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io,
		       struct be_proc *out, int clone_errno, struct al_error *err);

#endif
