/* options.h — the one option table: each knob has one name, one parser and one doc line (CLI flags and config keys). */
#ifndef AL_CONFIG_OPTIONS_H
#define AL_CONFIG_OPTIONS_H

#include <stddef.h>

#include "airlock/airlock.h"

enum opt_kind {
	OK_SIZE,
	OK_DURATION,
	OK_COUNT,
	OK_CPUS,
	OK_STRING,
	OK_FLAG
};

enum opt_id {
	OPT_TIME,
	OPT_CPU_TIME,
	OPT_OUTPUT_LIMIT,
	OPT_DISK,
	OPT_OPEN_FILES,
	OPT_FILE_SIZE,
	OPT_ADDRESS_SPACE,
	OPT_WORKDIR,
	OPT_CHECKOUT,
	OPT_CHECKOUT_MODE,
	OPT_KEEP_CHANGES,
	OPT_RO,
	OPT_RW,
	OPT_ENV,
	OPT_HOSTNAME,
	OPT_ROOTFS,
	OPT_IMAGE,
	OPT_CWD,
	OPT_ID_BASE,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPUS,
	OPT_BACKEND,
	OPT_SECCOMP,
	OPT_LANDLOCK,
	OPT_REQUIRE,
	OPT_FALLBACK,
	OPT_BEST_EFFORT,
	OPT_CGROUP_SYSTEMD,
	OPT_SUBIDS,
	OPT_NET,
	OPT_ALLOW_PRIVATE,
	OPT_PROXY_HOSTS,
	OPT_PROXY_HTTP,
	OPT_PROXY_CONNS,
	OPT_PROXY_IDLE,
	OPT_BROKER,
	OPT_SECRET,
	OPT_UPSTREAM_CA,
	/* Front-end options: how to report, not what the sandbox is. */
	OPT_CONFIG,
	OPT_PROFILE,
	OPT_LANG,
	OPT_CODE,
	OPT_LIST,
	OPT_STREAM,
	OPT_JSON,
	OPT_RESULT_FD,
	OPT_RESULT_FILE,
	OPT_TTY,
	OPT_HELP,
	OPT__COUNT,
};

struct al_option {
	enum opt_id id;
	const char *name; /* long flag without "--"; also the config key */
	char short_name;  /* 0 if none */
	enum opt_kind kind;
	const char *metavar;
	const char *help;
	bool policy; /* applies to the policy (opt_apply); otherwise the front end handles it */
};

extern const struct al_option al_options[];
extern const size_t al_noptions;

const struct al_option *opt_find(enum opt_id id);
/* Parses value per the option's kind and applies it to the policy; errors name the option. */
int opt_apply(struct al_policy *p, const struct al_option *o, const char *value, struct al_error *err);

/* The default of a limit's option (pol_default_limit) as its flag would take it ("512M", "0.5"):
 * 0, or -EINVAL for an option that sets no limit. */
int opt_format_default(const struct al_option *o, char *buf, size_t n);

/* The option's help line, a limit's default filled in (its "@"), into buf. */
void opt_help(const struct al_option *o, char *buf, size_t n);

#endif
