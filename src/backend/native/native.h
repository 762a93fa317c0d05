/* native.h — what the native backend's spawn paths (namespaces, fallback) share. */
#ifndef AL_NATIVE_NATIVE_H
#define AL_NATIVE_NATIVE_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "kit/landlock.h"

/* clone3's errno says the kernel or its policy refuses user namespaces. */
bool nat_userns_refused(int e);
/* The fallback without namespaces (fallback.c); clone_errno says why namespaces failed. */
int nat_fallback_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io,
		       struct be_proc *out, int clone_errno, struct al_error *err);

#endif
