/* serve.c — `airlock serve`: runs airlock-serve from airlock's own directory (the HTTP server
 * links libmicrohttpd, which this static binary cannot; see src/serve/main.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int cli_serve(int argc, char **argv)
{
	char self[PATH_MAX], prog[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return cli_fail("serve: cannot find airlock's own path: %s", strerror(errno));
	self[n] = 0;
	char *slash = strrchr(self, '/');
	*slash = 0;
	snprintf(prog, sizeof(prog), "%s/airlock-serve", self);
	/* argv[0] "serve" becomes the program; a --config given before the command is passed on. */
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	if (!args)
		return cli_fail("out of memory");
	int k = 0;
	args[k++] = prog;
	if (cli_config_path()) {
		args[k++] = "--config";
		args[k++] = strdup(cli_config_path());
	}
	for (int i = 1; i < argc; i++)
		args[k++] = argv[i];
	execv(prog, args);
	int e = errno;
	free(args);
	return cli_fail("serve: cannot run %s: %s (it is built and installed beside airlock)", prog, strerror(e));
}
