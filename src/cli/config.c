/* config.c — `airlock config check|dump`, and the --config FILE that every command accepts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/config.h"
#include "config/options.h"
#include "util/cleanup.h"

static const char config_usage[] =
	"Usage: airlock config check [FILE|-]\n"
	"       airlock config dump [--config FILE]\n"
	"\n"
	"check  validate FILE (- reads standard input; default: the file airlock would use)\n"
	"       merged over the embedded defaults; prints 'ok' or the first error as\n"
	"       FILE:LINE:COLUMN: KEY: problem\n"
	"dump   print the effective configuration (the embedded defaults merged with the\n"
	"       file) as YAML that 'airlock config check -' accepts again\n"
	"\n"
	"The file: --config FILE, else /etc/airlock/config.yaml, else (not as root)\n"
	"$XDG_CONFIG_HOME/airlock/config.yaml (~/.config/airlock/config.yaml). As root, a\n"
	"file or directory that anyone but root could change is refused.\n"
	"Exit status: 0, or 125 when the configuration is refused.\n";

/* --config FILE from the command line; NULL: the lookup. */
static const char *config_file;

/* The option of the table that getopt_long would pick for "--name[=...]" (exact, or an
 * unambiguous prefix), or NULL. */
static const struct al_option *long_option(const char *name, size_t n)
{
	const struct al_option *found = NULL;
	size_t matches = 0;
	for (size_t i = 0; i < al_noptions; i++) {
		if (strncmp(al_options[i].name, name, n) != 0)
			continue;
		if (strlen(al_options[i].name) == n)
			return &al_options[i];
		found = &al_options[i];
		matches++;
	}
	return matches == 1 ? found : NULL;
}

static const struct al_option *short_option(char c)
{
	for (size_t i = 0; i < al_noptions; i++)
		if (al_options[i].short_name == c)
			return &al_options[i];
	return NULL;
}

/* How many arguments the option at a spans (1, or 2 with a separate value), read the way
 * getopt_long reads the option table, so a value is never mistaken for --config. */
static int option_span(const char *a)
{
	if (a[1] == '-') {
		const char *eq = strchr(a + 2, '=');
		const struct al_option *o = long_option(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
		return o && o->kind != OK_FLAG && !eq ? 2 : 1;
	}
	for (const char *c = a + 1; *c; c++) {
		const struct al_option *o = short_option(*c);
		if (o && o->kind != OK_FLAG)
			return c[1] ? 1 : 2;
	}
	return 1;
}

int cli_take_config(int *argc, char **argv, bool among_options)
{
	for (int i = 1; i < *argc;) {
		const char *a = argv[i], *value;
		int take;
		if (strcmp(a, "--config") == 0) {
			if (i + 1 >= *argc)
				return cli_fail("option '--config' needs a value");
			value = argv[i + 1];
			take = 2;
		} else if (strncmp(a, "--config=", 9) == 0) {
			value = a + 9;
			take = 1;
		} else if (!among_options || strcmp(a, "--") == 0 || a[0] != '-' || !a[1]) {
			break; /* the command (or its operands) starts here */
		} else {
			i += option_span(a);
			continue;
		}
		if (config_file)
			return cli_fail("--config given twice");
		if (!*value)
			return cli_fail("--config needs a file name");
		config_file = value;
		/* Remove it (with argv's NULL terminator moved along) so the command never sees it. */
		memmove(&argv[i], &argv[i + take], (size_t)(*argc - i - take + 1) * sizeof(*argv));
		*argc -= take;
	}
	return 0;
}

const char *cli_config_path(void)
{
	return config_file;
}

int cli_set_config_path(const char *path)
{
	if (config_file)
		return cli_fail("--config given twice");
	if (!*path)
		return cli_fail("--config needs a file name");
	config_file = path;
	return 0;
}

/* FILE, "-" (standard input) or, with neither, the effective lookup. */
static int load_for_check(const char *arg, struct cfg **c, struct al_error *e)
{
	if (!arg)
		return cfg_load(config_file, c, e);
	if (strcmp(arg, "-") != 0)
		return cfg_load_file(arg, c, e);
	cleanup_free char *buf = NULL;
	size_t len = 0;
	int r = cfg_read_fd(0, "<stdin>", &buf, &len, e);
	return r < 0 ? r : cfg_load_buffer(buf, len, "<stdin>", c, e);
}

static int config_check(int argc, char **argv)
{
	if (argc > 2)
		return cli_fail("config check: too many arguments (usage: airlock config check [FILE|-])");
	const char *arg = argc == 2 ? argv[1] : NULL;
	if (arg && arg[0] == '-' && arg[1])
		return cli_fail("config check: unknown option '%s'", arg);
	if (arg && config_file)
		return cli_fail("config check: give FILE or --config FILE, not both");
	struct cfg *c = NULL;
	struct al_error e = {0};
	if (load_for_check(arg, &c, &e) < 0)
		return cli_fail("%s", e.msg);
	cfg_free(c);
	puts("ok");
	return fflush(stdout) == 0 ? 0 : AL_EXIT_FAILURE;
}

static int config_dump(int argc, char **argv)
{
	if (argc > 1)
		return cli_fail("config dump: unexpected argument '%s' (usage: airlock config dump [--config FILE])",
				argv[1]);
	struct cfg *c = NULL;
	struct al_error e = {0};
	cleanup_free char *text = NULL;
	size_t len = 0;
	int r = cfg_load(config_file, &c, &e);
	if (r == 0)
		r = cfg_dump(c, &text, &len, &e);
	cfg_free(c);
	if (r < 0)
		return cli_fail("%s", e.msg);
	if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
		return cli_fail("config dump: cannot write the output");
	return 0;
}

int cli_config(int argc, char **argv)
{
	/* --config may come before or after the subcommand: airlock config --config F dump. */
	if (cli_take_config(&argc, argv, true) != 0)
		return AL_EXIT_FAILURE;
	if (argc < 2)
		return fputs(config_usage, stderr), AL_EXIT_FAILURE;
	const char *sub = argv[1];
	if (!strcmp(sub, "help") || !strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return fputs(config_usage, stdout), 0;
	argc--;
	argv++;
	if (cli_take_config(&argc, argv, true) != 0)
		return AL_EXIT_FAILURE;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return fputs(config_usage, stdout), 0;
	if (strcmp(sub, "check") == 0)
		return config_check(argc, argv);
	if (strcmp(sub, "dump") == 0)
		return config_dump(argc, argv);
	return cli_fail("config: unknown subcommand '%s' (expected check or dump)", sub);
}
