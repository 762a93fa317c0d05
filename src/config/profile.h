/* profile.h — applying a profile and a language to a policy (the front ends' part of issue 5's
 * "say what you run, not forty flags"). */
#ifndef AL_CONFIG_PROFILE_H
#define AL_CONFIG_PROFILE_H

#include <stdbool.h>

#include "config/config.h"
#include "config/options.h"

/* The profile airlock exec uses when none is named: the strictest shipped one. */
#define CFG_DEFAULT_EXEC_PROFILE "untrusted-code-read"

/*
 * Applies profile pr: its posture (namespaces/backend, filesystem view, network with the
 * registries' hosts, the configuration's allow-private and upstream-ca, seccomp, required layers,
 * rootfs), its secrets (those for every principal, and those for principal: NULL for a job of the
 * command line, which has none) and its limits as defaults. Call after the configuration's limits
 * and before the flags.
 */
int cfg_apply_profile(const struct cfg *c, const struct cfg_profile *pr, const char *principal, struct al_policy *p,
		      struct al_error *err);
/* The secrets part of cfg_apply_profile: each secret pr names that principal may have, read now. */
int cfg_apply_secrets(const struct cfg *c, const struct cfg_profile *pr, const char *principal, struct al_policy *p,
		      struct al_error *err);
/* Whether pr names a secret given only to some principals, principal among them: a sandbox for
 * that principal is then never a spare of the pool (made before anyone owned it, without it). */
bool cfg_profile_has_personal_secrets(const struct cfg *c, const struct cfg_profile *pr, const char *principal);

/*
 * May flag o (with value) be given together with profile pr? A profile fixes the posture:
 * only resource knobs, the rootfs, the checkout to show, and reporting may change. Returns 0,
 * or -EPERM with err naming the profile and the knob.
 */
int cfg_profile_allows(const struct cfg_profile *pr, const struct al_option *o, const char *value,
		       struct al_error *err);

/* May a service client ask for the image name under this profile? Only the profile's image and
 * its images list (the operator's choice); 0 or -EPERM. The posture is the profile's either way. */
int cfg_profile_image_allowed(const struct cfg_profile *pr, const char *name, struct al_error *err);

#endif
