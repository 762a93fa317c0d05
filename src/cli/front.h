/* front.h — what `airlock run` and `airlock exec` share: flags collected from the one option
 * table, the policy built in a fixed order (configuration, profile, flags), one job, its verdict. */
#ifndef AL_CLI_FRONT_H
#define AL_CLI_FRONT_H

#include <stdbool.h>

#include "airlock/airlock.h"
#include "config/config.h"
#include "config/options.h"

struct front_flag {
	const struct al_option *o;
	const char *arg;
};

struct front {
	const char *command; /* "run" or "exec", for messages */
	/* reporting */
	bool json;
	int stream; /* -1: default */
	int result_fd;
	const char *result_file;
	/* what to build */
	const char *profile;	  /* --profile, or NULL */
	struct front_flag *flags; /* policy options, applied after the profile, in order */
	size_t nflags;
	/* exec only */
	const char *lang, *code;
	bool list;
	bool stdin_null; /* the job gets /dev/null as stdin (its code came from ours) */
	bool tty;	 /* -t: a terminal of the sandbox's own, relayed to ours (cli/tty.c) */
	/* built */
	struct cfg *cfg;
	struct al_policy *policy;
};

/* Parses argv's options (getopt over the option table); returns the index of the first operand,
 * or -exit_code (-1000: exit 0, help was printed by help()). */
int front_parse(struct front *f, int argc, char **argv, void (*help)(void));
/* Loads the configuration and builds the policy: its limits, then the profile (default_profile
 * when none was named; may be NULL), then the flags (refused where the profile forbids them). */
int front_build(struct front *f, const char *default_profile);
/* Runs the policy's job and reports it; returns airlock's exit status. */
int front_run(struct front *f);
void front_free(struct front *f);
/* The option table as help text. */
void front_print_options(bool exec);

#endif
