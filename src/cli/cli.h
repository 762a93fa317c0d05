/* cli.h — the airlock command's subcommands; they parse and report, the library does the work. */
#ifndef AL_CLI_CLI_H
#define AL_CLI_CLI_H

#include <stdbool.h>

/* Exit codes of airlock itself (the payload's own code otherwise; 128+N for signal N). */
enum {
	AL_EXIT_TIMEOUT = 124,
	AL_EXIT_FAILURE = 125, /* airlock failed; the payload never ran */
};

int cli_run(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_config(int argc, char **argv);

struct al_policy;
/* Takes "--config FILE" / "--config=FILE" out of argv[1..] (among the option table's options
 * when among_options, else only leading ones) and remembers it. 0, or AL_EXIT_FAILURE (reported). */
int cli_take_config(int *argc, char **argv, bool among_options);
/* For `airlock run`: takes --config from its options, loads the configuration and applies its
 * limits to p as the defaults that flags override. 0, or AL_EXIT_FAILURE (reported). */
int cli_run_config(int *argc, char **argv, struct al_policy *p);
/* Prints "airlock: <msg>" on stderr and returns AL_EXIT_FAILURE. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
