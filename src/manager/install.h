/* install.h — code_install_package's command: pip or npm into the sandbox's workspace, refused at
 * once when the sandbox has no route to the registry. */
#ifndef AL_MANAGER_INSTALL_H
#define AL_MANAGER_INSTALL_H

#include <stddef.h>

#include "airlock/airlock.h"
#include "config/config.h"

/* What the sandbox's network reaches: its posture and, for AL_NET_ALLOW, its allowlist
 * ("a,b,c"; "" for its profile's registries). */
struct inst_net {
	enum al_net_posture posture;
	const char *hosts;
};

/* Whether the sandbox's network reaches the registry the packages come from (a spec that is a
 * path needs none): 0, or EPERM saying what is missing. Cheap: the service asks it before a
 * human is asked to approve an install that could never work. */
int inst_check_route(const char *manager, const char *const *packages, size_t n, const struct inst_net *net,
		     struct al_error *err);

/* The policy (argv, environment, limits; the caller attaches it to the sandbox) that installs
 * packages with manager ("pip" or "npm") into /workspace, where a later exec finds them. EPERM,
 * before anything runs, when a package must come from a registry the sandbox cannot reach. */
int inst_policy(const struct cfg *cfg, const char *manager, char *const *packages, size_t n, const struct inst_net *net,
		struct al_policy **out, struct al_error *err);

#endif
