/* main.c — entry point of the airlock command: dispatch to a subcommand. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/audit.h"
#include "cli/cli.h"

static const char usage[] =
	"Usage: airlock [--config FILE] COMMAND [OPTIONS]\n"
	"\n"
	"Run code nobody should trust, and report exactly what happened.\n"
	"\n"
	"Commands:\n"
	"  run [OPTIONS] -- CMD [ARG...]   run one command in a fresh sandbox\n"
	"  exec --lang LANG (-c CODE|FILE|-) [OPTIONS] [ARG...]\n"
	"                                   run code in a language, under a profile\n"
	"  check [--json]                   show what this host can enforce\n"
	"  config check [FILE|-]            validate a configuration file\n"
	"  config dump                      print the effective configuration as YAML\n"
	"  audit tail|grep ...              read the server's audit log\n"
	"  image import|build|ls|inspect|rm|gc  images: OCI imports, Debian builds ('airlock image help')\n"
	"  mcp [--profile P] [--audit FILE] serve MCP on stdin/stdout (persistent sandboxes)\n"
	"  serve [--http ADDR] ...          serve sandboxes over HTTP: MCP, JSON API, approvals\n"
	"  oci COMMAND ...                  an OCI runtime for containerd (also as airlock-runc)\n"
	"  help                             show this help\n"
	"  version                          show the version\n"
	"\n"
	"Run 'airlock run --help' for the run options.\n"
	"\n"
	"--config FILE (before the command, or among its options) reads FILE instead of\n"
	"/etc/airlock/config.yaml or ~/.config/airlock/config.yaml; see 'airlock config help'.\n"
	"\n"
	"Exit status of 'airlock run':\n"
	"  N        the command's own exit status\n"
	"  128+N    the command was killed by signal N\n"
	"  124      the wall-clock limit (--time) was reached; everything was killed\n"
	"  125      airlock itself failed (bad input, or isolation could not be set up);\n"
	"           the command never ran\n";

int cli_fail(const char *fmt, ...)
{
	va_list ap;
	fputs("airlock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return AL_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	/* Named airlock-runc (the link the build makes), airlock is an OCI runtime and nothing else:
	 * containerd's shim calls it with runc's arguments. */
	const char *base = strrchr(argv[0], '/');
	if (strcmp(base ? base + 1 : argv[0], "airlock-runc") == 0)
		return cli_oci(argc, argv);
	if (cli_take_config(&argc, argv, false) != 0)
		return AL_EXIT_FAILURE;
	if (argc < 2)
		return fputs(usage, stderr), AL_EXIT_FAILURE;
	const char *cmd = argv[1];
	if (strcmp(cmd, "run") == 0)
		return cli_run(argc - 1, argv + 1);
	if (strcmp(cmd, "check") == 0)
		return cli_check(argc - 1, argv + 1);
	if (strcmp(cmd, "exec") == 0)
		return cli_exec(argc - 1, argv + 1);
	if (strcmp(cmd, "config") == 0)
		return cli_config(argc - 1, argv + 1);
	if (strcmp(cmd, "audit") == 0)
		return cli_audit(argc - 1, argv + 1);
	if (strcmp(cmd, "image") == 0)
		return cli_image(argc - 1, argv + 1);
	if (strcmp(cmd, "mcp") == 0)
		return cli_mcp(argc - 1, argv + 1);
	if (strcmp(cmd, "serve") == 0)
		return cli_serve(argc - 1, argv + 1);
	if (strcmp(cmd, "oci") == 0)
		return cli_oci(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return fputs(usage, stdout), 0;
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version"))
		return puts("airlock " AIRLOCK_VERSION), 0;
	return cli_fail("unknown command '%s' (try 'airlock help')", cmd);
}
