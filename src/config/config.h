/* config.h — airlock's configuration: one YAML file (version 1) merged over the embedded defaults, as plain data. */
#ifndef AL_CONFIG_CONFIG_H
#define AL_CONFIG_CONFIG_H

/*
 * The file, its lookup and its rules:
 *  - `--config FILE` (must exist), else /etc/airlock/config.yaml, else, for an unprivileged
 *    caller, $XDG_CONFIG_HOME/airlock/config.yaml (~/.config when unset). A missing default
 *    file is fine: the embedded defaults (defaults.c) are a complete configuration.
 *  - The file is merged over the defaults: mappings key by key, so a file overrides only the
 *    keys it sets; a scalar or a list replaces the default's value whole (so a file's `rules:`
 *    is the whole rule list, in the order written: see risk/risk.h).
 *  - The manager's sections (rules, approval, audit, server: server.c) spell their keys with
 *    underscores (approval_timeout, max_sandboxes), as the MCP tools' parameters do.
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

#define CFG_VERSION	1
#define CFG_NAME_MAX	64   /* registry, profile and language names */
#define CFG_MAX_ENTRIES 1024 /* registries, profiles, languages: each */
#define CFG_SYSTEM_FILE "/etc/airlock/config.yaml"
/* Tests relocate the system file's "/etc" (never honoured for anything else). */
#define CFG_SYSCONFDIR_ENV "AIRLOCK_SYSCONFDIR"
/* The name errors give the embedded defaults. Their nodes' marks point at the one object
 * cfg_defaults_name, so a node from them is known by that pointer, whatever a file is called. */
#define CFG_DEFAULTS_NAME "<defaults>"
extern const char cfg_defaults_name[];

/* The embedded defaults, YAML documents parsed by the same code as any file: what every caller
 * reads, and the service's sections (rules, approval, audit, server), merged over it. */
extern const char cfg_default_yaml[];
extern const char cfg_default_service_yaml[];
/* The same documents as cfg_yaml_parse makes them, parsed at build time (tools/gen-config.c):
 * the first alone (a job's, cfg_load_job) and both merged (every other load). Read-only: a
 * load converts them as they are, or merges a file over a copy (cfg_node_clone). */
struct cfg_node;
extern const struct cfg_node *const cfg_defaults_job;
extern const struct cfg_node *const cfg_defaults_all;

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
	CFG_LIM_BEST_EFFORT,	/* not a limit: whether default limits may go unenforced */
	CFG_LIM_CGROUP_SYSTEMD, /* not a limit: whether a user's systemd may give the cgroup for them */
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
	char *rootfs;		  /* absolute host directory used instead of the host's system dirs, or NULL */
	char *image;		  /* an image of the store (`airlock image`) as the rootfs, or NULL */
	struct cfg_strv images;	  /* the images a service client may ask for (besides image) */
	struct cfg_limits limits; /* resource overrides of this profile */
	struct cfg_strv secrets;  /* names of secrets entries its sandboxes get (secrets.c) */
};

/* secrets.NAME: a secret given by reference. The job's variable holds a placeholder; the egress
 * proxy puts the value in its place toward the hosts only (network/secrets.h). */
enum cfg_secret_kind {
	CFG_SECRET_ENV,	  /* env: a variable of airlock's own environment */
	CFG_SECRET_FILE,  /* file: an absolute path, read when each sandbox is made */
	CFG_SECRET_VALUE, /* value: written in the file itself */
};
/* What `airlock config dump` writes for a value (never the value); a load refuses it. */
#define CFG_SECRET_REDACTED "(redacted)"
struct cfg_secret {
	char *name;
	char *variable; /* the job's variable: `variable`, else the name */
	enum cfg_secret_kind kind;
	char *ref; /* the variable's name, the path, or the value (wiped on free) */
	size_t ref_len;
	struct cfg_strv hosts;	    /* allowlist entries without rules */
	bool body;		    /* replaced in request bodies too (else headers only) */
	struct cfg_strv principals; /* "token:NAME", "uid:N"; empty: every principal's sandboxes */
};
const char *cfg_secret_kind_key(enum cfg_secret_kind k);

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
	struct cfg_strv etc;	 /* configuration it reads beneath /etc (glob patterns, pol_etc_check) */
	struct cfg_env *env;	 /* extra environment, in file order */
	size_t nenv;
};

/* ---- the manager's sections (airlock serve): risk rules, approval, audit log, server ---- */

/* Risk levels, lowest first; the manager's risk.c classifies requests with them. NONE is only
 * a policy threshold ("auto-approve nothing", "deny nothing"), never a request's level. */
enum cfg_risk {
	CFG_RISK_NONE = -1,
	CFG_RISK_LOW,
	CFG_RISK_MEDIUM,
	CFG_RISK_HIGH,
	CFG_RISK_CRITICAL,
};
#define CFG_RISK__COUNT 4
/* "LOW" ... "CRITICAL", "none" for CFG_RISK_NONE. */
const char *cfg_risk_name(enum cfg_risk r);

/* The tools a rule may name (the server's MCP tools; HTTP requests map onto them), and "*". A
 * typo in a rule's tool would make it never match, so unknown names are refused. */
extern const char *const cfg_tools[];
extern const size_t cfg_ntools;

/* PCRE2's compiled pattern (pcre2.h is needed only where patterns are compiled or matched). */
struct pcre2_real_code_8;
struct json_t;

/* Regexes are compiled with a callout numbered CFG_REGEX_CALLOUT before the pattern, called at
 * every start position: the matcher (risk.c) uses it to stop at a deadline. */
#define CFG_REGEX_CALLOUT 1
#define CFG_REGEX_MAX	  4096 /* bytes of one pattern */

enum cfg_cond_op {
	CFG_COND_EQUALS,
	CFG_COND_MATCHES
};

/* One condition on a request parameter: a top-level key of the tool's arguments. */
struct cfg_cond {
	char *param;
	enum cfg_cond_op op;
	struct json_t *equals;	      /* EQUALS: a JSON scalar (string, number, true, false, null) */
	char *pattern;		      /* MATCHES: the regex as written */
	struct pcre2_real_code_8 *re; /* MATCHES: compiled once, by cfg_rules_compile (else NULL) */
};

/* rules[i]: the first rule (in file order) whose tools include the request's tool and whose
 * conditions all hold classifies it. */
struct cfg_rule {
	char *name;
	struct cfg_strv tools; /* tool names, or the single entry "*" */
	struct cfg_cond *when;
	size_t nwhen;
	enum cfg_risk risk;
	char *timeout;		   /* approval_timeout as written, or NULL: approval.default_timeout */
	uint64_t timeout_ms;	   /* its value, 0 when NULL */
	bool require_approval;	   /* resolved: as written, else true for HIGH and CRITICAL */
	bool require_approval_set; /* written in the file (the dump repeats only what was written) */
};

/* Interactive approval channels, in the order a server should prefer them. */
enum cfg_channel {
	CFG_CHAN_ELICITATION,
	CFG_CHAN_HTTP,
	CFG_CHAN_TERMINAL,
	CFG_CHAN__COUNT
};
const char *cfg_channel_name(enum cfg_channel ch);

struct cfg_approval {
	enum cfg_risk default_risk; /* requests no rule matches */
	char *default_timeout;	    /* rules without approval_timeout (as written) */
	uint64_t default_timeout_ms;
	enum cfg_risk auto_approve_up_to; /* needing approval at or below: approved without asking */
	enum cfg_risk deny_above;	  /* above: denied without asking */
	struct cfg_strv channels;	  /* cfg_channel names, in order */
	uint32_t channel_bits;		  /* 1 << enum cfg_channel */
};

struct cfg_audit {
	char *path;	       /* absolute, or NULL: the server's default (audit_default_path) */
	bool fsync;	       /* fdatasync after every record */
	char *rotate_size;     /* as written ("64M", "none") */
	uint64_t rotate_bytes; /* AL_UNLIMITED: never rotate */
	unsigned keep;	       /* rotated files kept: path.1 ... path.keep */
};

struct cfg_pool {
	char *profile; /* an existing profile */
	char *image;   /* an image the profile offers, or NULL: the profile's own root */
	unsigned count;
};

struct cfg_server {
	unsigned max_sandboxes, max_execs;
	unsigned max_execs_per_sandbox; /* execs, cells and background processes at once in one sandbox */
	char *idle_ttl, *max_lifetime;	/* as written */
	uint64_t idle_ttl_ms, max_lifetime_ms;
	char *request_timeout;	     /* as written */
	uint64_t request_timeout_ms; /* a request's headers and body must arrive within this (0: 60 s) */
	struct cfg_pool *pool;	     /* ready sandboxes per profile */
	size_t npool;
	char *http_listen;		/* "HOST:PORT" or "[V6]:PORT", or NULL */
	char *http_token_file;		/* absolute, or NULL */
	char *http_approver_token_file; /* absolute, or NULL */
	char *http_e2b_domain;		/* the E2B front end's sandbox domain (Host "PORT-ID.DOMAIN"), or NULL */
	unsigned http_max_connections;	/* the TCP listener's connections at once (0: HX_DEFAULT_CONNECTIONS) */
	char *socket;			/* the Unix socket: absolute, "none", or NULL (the default) */
	char *state_dir;		/* where sandboxes are kept across restarts: absolute, "none", or NULL */
	unsigned *approver_uids;	/* Unix socket peers that decide approvals (NULL: root only) */
	size_t napprover_uids;
	/* quota: what one principal may hold at once (0: the default, CFG_QUOTA_*) */
	unsigned quota_sessions, quota_sandboxes, quota_execs, quota_connections;
	unsigned quota_snapshots;      /* snapshots kept (0: CFG_QUOTA_SNAPSHOTS) */
	uint64_t quota_snapshot_bytes; /* their bytes together (0 or AL_UNLIMITED: no cap) */
	uint64_t quota_sandbox_bytes;  /* the disk limits of its sandboxes together (0 or AL_UNLIMITED: no cap) */
	char *cell_image_limit;	       /* as written, or NULL: the default */
	uint64_t cell_image_bytes;     /* base64 bytes of figures one cell may return (0: CFG_CELL_IMAGE_LIMIT) */
};

#define CFG_CELL_IMAGE_LIMIT (4ULL << 20)

#define CFG_QUOTA_SESSIONS    16
#define CFG_QUOTA_SANDBOXES   32
#define CFG_QUOTA_EXECS	      4
#define CFG_QUOTA_CONNECTIONS 64
#define CFG_QUOTA_SNAPSHOTS   32

struct cfg {
	char *source; /* the file merged over the defaults ("-" read as "<stdin>"), or NULL */
	/* cfg_load_job without a file: the service's sections were not loaded (no rules, approval,
	 * audit or server): never a configuration to classify or serve requests with. */
	bool job_only;
	/* cfg_rules_compile has compiled the rules' patterns: only what classifies needs them. */
	bool rules_compiled;
	struct cfg_limits limits;
	struct cfg_registry *registries;
	size_t nregistries;
	struct cfg_strv allow_private; /* CIDRs (al_cidr_list_add) */
	char *upstream_ca;	       /* network.upstream-ca: PEM verifying terminated upstreams, or NULL */
	struct cfg_secret *secrets;
	size_t nsecrets;
	struct cfg_profile *profiles;
	size_t nprofiles;
	struct cfg_language *languages;
	size_t nlanguages;
	struct cfg_rule *rules; /* in order: the first match wins */
	size_t nrules;
	struct cfg_approval approval;
	struct cfg_audit audit;
	struct cfg_server server;
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
/* The same for a one-shot job (run, exec), which reads limits, network, profiles and languages
 * only: with no file, the defaults' service sections are skipped (cfg->job_only). A file is
 * loaded and checked whole, as by cfg_load: an error anywhere in it is still refused. */
int cfg_load_job(const char *path, struct cfg **out, struct al_error *err);
/* Which file the lookup finds: *path is malloc'd, or NULL when there is none (defaults only).
 * privileged: root, who never reads a per-user file. */
int cfg_lookup(bool privileged, char **path, struct al_error *err);
/* Refuses the open file fd (found at path) unless it and every directory above it belong to
 * root or trusted_uid and nobody else may write them. Root passes 0. */
int cfg_check_trusted(int fd, const char *path, uid_t trusted_uid, struct al_error *err);
void cfg_free(struct cfg *c);

/*
 * Compiles the rules' patterns for risk_classify, once (a second call does nothing); called
 * where requests are classified (the service, at its start, before any thread reads c). Every
 * load already refuses a file's bad pattern with its file:line:column (it is compiled then, and
 * freed); the embedded defaults' patterns are not compiled by a load at all, so `airlock run`,
 * `check` and `config dump` never pay for them (the unit tests prove they compile). 0, -ENOMEM.
 */
int cfg_rules_compile(struct cfg *c, struct al_error *err);

/* NULL when there is no entry of that name. */
const struct cfg_profile *cfg_profile(const struct cfg *c, const char *name);
const struct cfg_language *cfg_language(const struct cfg *c, const char *name);
const struct cfg_registry *cfg_registry(const struct cfg *c, const char *name);
const struct cfg_secret *cfg_secret(const struct cfg *c, const char *name);

/* Reads every secret some profile names once, as a sandbox's creation would (a variable that is
 * not set, a file that cannot be read): what `airlock serve` checks at its start. 0 or -errno. */
int cfg_secrets_check(const struct cfg *c, struct al_error *err);

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
