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
/* The --config FILE given so far (NULL: the lookup), and a command's own --config. */
const char *cli_config_path(void);
int cli_set_config_path(const char *path);
int cli_exec(int argc, char **argv);
int cli_mcp(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_image(int argc, char **argv);
/* The OCI runtime (runc's command line): `airlock oci ...`, or airlock run as airlock-runc. */
int cli_oci(int argc, char **argv);
/* Prints "airlock: <msg>" on stderr and returns AL_EXIT_FAILURE. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
