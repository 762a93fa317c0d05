/* run.c — `airlock run`: flags (and optionally a profile) into a policy, one job, its verdict and exit code. */
#include <stdio.h>

#include "airlock/airlock.h"
#include "cli/cli.h"
#include "cli/front.h"

static void print_help(void)
{
	printf("Usage: airlock run [OPTIONS] [--] CMD [ARG...]\n\n"
	       "Run CMD in a fresh sandbox: new user, pid, mount, net, ipc, uts and cgroup\n"
	       "namespaces, a read-only root, no network, no capabilities, an unprivileged uid.\n"
	       "With --profile NAME the profile fixes the posture and only resource knobs may be\n"
	       "changed by flags. With --image NAME and no CMD, the image's Entrypoint and Cmd run.\n\n"
	       "Options:\n");
	front_print_options(false);
	printf("\nSizes: 512, 64K, 1.5M, 2G. Durations: 10 (seconds), 250ms, 10s, 2m, 1h.\n"
	       "Exit status: CMD's own; 128+N if killed by signal N; 124 on timeout;\n"
	       "125 if airlock failed (then CMD never ran).\n");
}

/* CMD from the command line, else the image's Entrypoint and Cmd (--image with no command). */
static int set_command(struct front *f, int argc, const char *const *argv, struct al_error *e)
{
	const char *const *def = al_policy_image_argv(f->policy);
	int n = 0;
	while (argc <= 0 && def && def[n])
		n++;
	if (argc <= 0 && !n)
		return cli_fail("no command given (usage: airlock run [OPTIONS] -- CMD [ARG...])");
	int r = al_policy_set_argv(f->policy, argc > 0 ? argc : n, argc > 0 ? argv : def, e);
	/* The image's WorkingDir and User; what is not applied is said, never silently dropped. */
	char note[512];
	r = r ?: al_policy_image_config(f->policy, note, sizeof(note), e);
	if (r == 0 && note[0])
		fprintf(stderr, "airlock: %s\n", note);
	return r;
}

int cli_run(int argc, char **argv)
{
	struct front f = {.command = "run"};
	int cmd = front_parse(&f, argc, argv, print_help), rc;
	struct al_error e = {0};
	if (cmd < 0)
		rc = cmd == -1000 ? 0 : -cmd;
	else if ((rc = front_build(&f, NULL)) == 0 &&
		 (rc = set_command(&f, argc - cmd, (const char *const *)argv + cmd, &e)) == 0)
		rc = front_run(&f);
	else if (rc < 0)
		rc = cli_fail("%s", e.msg);
	front_free(&f);
	return rc;
}
