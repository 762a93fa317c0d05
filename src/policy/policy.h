/* policy.h — the policy object's insides, shared by the layers above the public API. */
#ifndef AL_POLICY_POLICY_H
#define AL_POLICY_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "airlock/airlock.h"

#define AL_SANDBOX_UID 1000 /* the payload's uid/gid inside the sandbox */
#define AL_IDS_PER_SANDBOX 65536
#define AL_DEFAULT_ID_BASE 1879048192u /* 0x70000000: above systemd's container ranges */
#define AL_DEFAULT_HOSTNAME "airlock"
#define AL_WORKSPACE "/workspace"

struct al_bind {
	char *src;  /* absolute, canonical host path */
	char *dest; /* absolute path inside */
	bool writable;
	bool is_dir;
};

struct al_policy {
	int argc;
	char **argv;
	char **env; /* "NAME=VALUE", already resolved */
	size_t nenv;
	struct al_bind *binds;
	size_t nbinds;
	char *workdir; /* canonical host dir bound at /workspace, or NULL for a tmpfs */
	char *hostname;
	char *cwd;
	uint64_t limits[AL_LIMIT__COUNT];
	uint32_t id_base;
};

/* Checks that a path inside the sandbox is absolute and free of "." and ".." parts. Pure. */
int pol_check_inside_path(const char *path, struct al_error *err);
/* The environment the payload gets: fixed base plus the policy's entries (NULL-terminated, malloc'd). */
char **pol_build_envp(const struct al_policy *p);
void pol_free_strv(char **v);

#endif
