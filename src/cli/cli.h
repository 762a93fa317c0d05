/* cli.h — the airlock command's subcommands; they parse and report, the library does the work. */
#ifndef AL_CLI_CLI_H
#define AL_CLI_CLI_H

/* Exit codes of airlock itself (the payload's own code otherwise; 128+N for signal N). */
enum {
	AL_EXIT_TIMEOUT = 124,
	AL_EXIT_FAILURE = 125, /* airlock failed; the payload never ran */
};

int cli_run(int argc, char **argv);
int cli_check(int argc, char **argv);
/* Prints "airlock: <msg>" on stderr and returns AL_EXIT_FAILURE. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
