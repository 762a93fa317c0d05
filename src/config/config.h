/* config.h — airlock's configuration: one YAML file (version 1) merged over the embedded defaults, as plain data. */
#ifndef AL_CONFIG_CONFIG_H
#define AL_CONFIG_CONFIG_H

/*
 * The file, its lookup and its rules:
 *  - `--config FILE` (must exist), else /etc/airlock/config.yaml, else, for an unprivileged
 *    caller, $XDG_CONFIG_HOME/airlock/config.yaml (~/.config when unset). A missing default
 *    file is fine: the embedded defaults (defaults.c) are a complete configuration.
 *  - The file is merged over the defaults: mappings key by key, so a file overrides only the
 *    keys it sets; a scalar or a list replaces the default's value whole.
 *  - Strict: an unknown key, a duplicate key, a wrong type or a bad value is an error naming
 *    file:line:column and the key ("config.yaml:7:11: limits.memory: invalid size '12X' ...").
 *  - Trusted like an executable: as root, the file and each directory above it must belong to
 *    root and be writable by nobody else (a sticky directory above its own is accepted).
 *
 * Only the front ends read a struct cfg; the library's policy API stays the one interface to
 * the sandbox (cfg_apply_limits goes through the option table's opt_apply like a flag).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"
#include "config/options.h"

#define CFG_VERSION 1
#define CFG_NAME_MAX 64	    /* registry, profile and language names */
#define CFG_MAX_ENTRIES 1024 /* registries, profiles, languages: each */
#define CFG_SYSTEM_FILE "/etc/airlock/config.yaml"
/* Tests relocate the system file's "/etc" (never honoured for anything else). */
#define CFG_SYSCONFDIR_ENV "AIRLOCK_SYSCONFDIR"
/* The name errors give the embedded defaults. */
#define CFG_DEFAULTS_NAME "<defaults>"

/* The embedded defaults, a YAML document parsed by the same code as any file. */
extern const char cfg_default_yaml[];

/* The keys of a limits block, in the order they are dumped. Each is the option of that name
 * in the option table (cfg_limit_option): one name, one parser, one doc line. */
enum cfg_limit_key {
	CFG_LIM_TIME,
	CFG_LIM_CPU_TIME,
	CFG_LIM_MEMORY,
	CFG_LIM_CPUS,
	CFG_LIM_PIDS,
	CFG_LIM_DISK,
	CFG_LIM_OUTPUT,
	CFG_LIM_OPEN_FILES,
	CFG_LIM_FILE_SIZE,
	CFG_LIM_ADDRESS_SPACE,
	CFG_LIM__COUNT,
};
const struct al_option *cfg_limit_option(enum cfg_limit_key k);

/* A limits block (top level, or a profile's). Values are kept as written ("512M", "0.5",
 * "none"), already validated by opt_apply; NULL when the block does not set that key. */
struct cfg_limits {
	char *text[CFG_LIM__COUNT];
};

/* A list of strings, NULL-terminated as well (so a command is an argv). */
struct cfg_strv {
	char **v;
	size_t n;
};

/* network.registries.NAME: host patterns for the egress proxy's allowlist (al_allowlist_add). */
struct cfg_registry {
	char *name;
	struct cfg_strv hosts;
};

/* What a profile's job sees of the filesystem. */
enum cfg_fs_view {
	CFG_FS_WORKSPACE,     /* "workspace": a throwaway tmpfs at /workspace (airlock run's default) */
	CFG_FS_CHECKOUT_RO,   /* "checkout-ro": the checkout bound read-only */
	CFG_FS_CHECKOUT_COPY, /* "checkout-copy": a throwaway read-write copy of the checkout */
	CFG_FS_HOST,	      /* "host": the host's filesystem (profile none only) */
};
const char *cfg_fs_view_name(enum cfg_fs_view v);

/* profiles.NAME. Keys a profile does not set keep these defaults: namespaces true, network
 * none, filesystem workspace, seccomp default, require nothing, no rootfs, no limits. */
struct cfg_profile {
	char *name;
	bool namespaces;
	enum al_net_posture net;    /* none, loopback, host; AL_NET_ALLOW: the registries below */
	struct cfg_strv registries; /* names of existing network.registries entries */
	enum cfg_fs_view filesystem;
	enum al_seccomp_profile seccomp;
	struct cfg_strv require; /* layers as written, one per entry */
	uint32_t require_bits;	 /* the same, parsed by pol_parse_require (enum pol_req) */
	int require_landlock_abi;
	char *rootfs; /* absolute host directory used instead of the host's system dirs, or NULL */
	struct cfg_limits limits; /* resource overrides of this profile */
};

struct cfg_env {
	char *name, *value;
};

/* languages.NAME: the code is written to `file` in the workspace; with `compile`, that argv runs
 * first and then `command` as is; without, `command` runs with the file name appended. */
struct cfg_language {
	char *name;
	struct cfg_strv command; /* never empty */
	struct cfg_strv compile; /* empty: interpreted */
	char *file;		 /* a plain file name */
	struct cfg_strv paths;	 /* absolute host paths the language needs, bound read-only */
	struct cfg_env *env;	 /* extra environment, in file order */
	size_t nenv;
};

struct cfg {
	char *source; /* the file merged over the defaults ("-" read as "<stdin>"), or NULL */
	struct cfg_limits limits;
	struct cfg_registry *registries;
	size_t nregistries;
	struct cfg_strv allow_private; /* CIDRs (al_cidr_list_add) */
	struct cfg_profile *profiles;
	size_t nprofiles;
	struct cfg_language *languages;
	size_t nlanguages;
};

/* ---- loading (config.c) ------------------------------------------------------------ */

/* The embedded defaults alone. */
int cfg_load_defaults(struct cfg **out, struct al_error *err);
/* The defaults merged with one YAML document buf[0..len) called name in messages. */
int cfg_load_buffer(const char *buf, size_t len, const char *name, struct cfg **out, struct al_error *err);
/* The defaults merged with the file at path (at most 1 MiB; as root, cfg_check_trusted). */
int cfg_load_file(const char *path, struct cfg **out, struct al_error *err);
/* Reads all of fd (at most CFG_MAX_BYTES, else -EFBIG) into a malloc'd *buf; name is for messages. */
int cfg_read_fd(int fd, const char *name, char **buf, size_t *len, struct al_error *err);
/* The effective configuration: path (--config, must exist) if not NULL, else the lookup. */
int cfg_load(const char *path, struct cfg **out, struct al_error *err);
/* Which file the lookup finds: *path is malloc'd, or NULL when there is none (defaults only).
 * privileged: root, who never reads a per-user file. */
int cfg_lookup(bool privileged, char **path, struct al_error *err);
/* Refuses the open file fd (found at path) unless it and every directory above it belong to
 * root or trusted_uid and nobody else may write them. Root passes 0. */
int cfg_check_trusted(int fd, const char *path, uid_t trusted_uid, struct al_error *err);
void cfg_free(struct cfg *c);

/* NULL when there is no entry of that name. */
const struct cfg_profile *cfg_profile(const struct cfg *c, const char *name);
const struct cfg_language *cfg_language(const struct cfg *c, const char *name);
const struct cfg_registry *cfg_registry(const struct cfg *c, const char *name);

/*
 * Applies the limits set in l to p through opt_apply, exactly as the flags of the same names.
 * as_defaults: they replace the built-in defaults and, like those, are enforced where the host
 * can and reported where it cannot; flags applied later override them and are required.
 * Otherwise they count as explicitly requested (refused when they cannot be enforced).
 */
int cfg_apply_limits(const struct cfg_limits *l, struct al_policy *p, bool as_defaults, struct al_error *err);

/* ---- dumping (dump.c) ------------------------------------------------------------- */

/* The configuration as a YAML document that loads back to the same configuration (malloc'd). */
int cfg_dump(const struct cfg *c, char **out, size_t *len, struct al_error *err);

#endif
