/* exec.c — `airlock exec --lang LANG (-c CODE | FILE | -) [ARG...]`: the code is written into
 * the workspace and run with the language's interpreter, under a profile (by default the
 * strictest shipped one), with the same verdict as `airlock run`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/front.h"
#include "config/language.h"
#include "config/profile.h"
#include "util/cleanup.h"

#define EXEC_MAX_CODE ((size_t)16 << 20)

static void print_help(void)
{
	printf("Usage: airlock exec --lang LANG (-c CODE | FILE | -) [OPTIONS] [ARG...]\n"
	       "       airlock exec --list\n\n"
	       "Write CODE (or FILE, or standard input with -) into the sandbox's workspace and run\n"
	       "it with LANG's interpreter, under --profile (default " CFG_DEFAULT_EXEC_PROFILE "):\n"
	       "the profile fixes the posture; flags may change only resource knobs and the rootfs.\n"
	       "Languages and profiles come from the configuration (airlock config dump).\n\n"
	       "Options:\n");
	front_print_options(true);
	printf("\nThe verdict and exit status are those of 'airlock run'.\n");
}

/* Reads all of fd (at most EXEC_MAX_CODE). */
static int slurp(int fd, const char *name, char **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	for (ssize_t r = 1; buf && r > 0;) {
		if (n == cap && (cap *= 2) > EXEC_MAX_CODE + 1) {
			free(buf);
			return cli_fail("%s: larger than %zu MiB", name, EXEC_MAX_CODE >> 20);
		}
		char *m = n == cap / 2 && cap > 65536 ? realloc(buf, cap) : buf;
		if (!m) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = m;
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno != EINTR) {
			int e = errno;
			free(buf);
			return cli_fail("%s: %s", name, strerror(e));
		}
		n += r > 0 ? (size_t)r : 0;
	}
	if (!buf)
		return cli_fail("out of memory");
	*out = buf;
	*len = n;
	return 0;
}

/* The code from -c, FILE or "-"; *args_at is where the program's own arguments start. */
static int load_code(struct front *f, int argc, char **argv, int first, char **code, size_t *len, int *args_at)
{
	const char *src = first < argc ? argv[first] : NULL;
	*args_at = first;
	if (f->code) {
		*len = strlen(f->code);
		*code = strdup(f->code);
		return *code ? 0 : cli_fail("out of memory");
	}
	if (!src)
		return cli_fail("exec: no code given: -c CODE, a FILE, or - for standard input");
	*args_at = first + 1;
	if (strcmp(src, "-") == 0)
		return slurp(0, "standard input", code, len);
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_fail("exec: cannot read '%s': %s", src, strerror(errno));
	int r = slurp(fd, src, code, len);
	close(fd);
	return r;
}

static int list_languages(const struct cfg *c, const struct al_policy *p)
{
	for (size_t i = 0; i < c->nlanguages; i++) {
		const struct cfg_language *l = &c->languages[i];
		char buf[512];
		const char *why;
		bool ok = lang_available(l, p, buf, sizeof(buf), &why);
		printf("%-12s %-10s %s\n", l->name, ok ? "available" : "missing", ok ? buf : why);
	}
	return 0;
}

static int known_languages(const struct cfg *c, const char *name)
{
	char known[512] = "";
	for (size_t i = 0; i < c->nlanguages; i++)
		snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
			 c->languages[i].name);
	return cli_fail("exec: unknown language '%s' (known: %s)", name, known);
}

static int exec_job(struct front *f, int argc, char **argv, int first)
{
	const struct cfg_language *l = cfg_language(f->cfg, f->lang);
	if (!l)
		return known_languages(f->cfg, f->lang);
	if (f->code && first < argc && strcmp(argv[first], "-") != 0 && access(argv[first], F_OK) == 0)
		return cli_fail("exec: give the code once: -c CODE or FILE '%s', not both", argv[first]);
	cleanup_free char *code = NULL;
	size_t len = 0;
	int args_at, r = load_code(f, argc, argv, first, &code, &len, &args_at);
	if (r != 0)
		return r;
	/* Code read from standard input leaves nothing there for the program. */
	bool stdin_used = !f->code && strcmp(argv[first], "-") == 0;
	struct al_error e = {0};
	if (lang_apply(l, NULL, code, len, argv + args_at, (size_t)(argc - args_at), f->policy, &e) < 0)
		return cli_fail("%s", e.msg);
	if (stdin_used)
		f->stdin_null = true;
	return front_run(f);
}

int cli_exec(int argc, char **argv)
{
	struct front f = {.command = "exec"};
	int first = front_parse(&f, argc, argv, print_help), rc;
	if (first < 0)
		rc = first == -1000 ? 0 : -first;
	else if (!f.list && !f.lang)
		rc = cli_fail("exec: --lang LANG is required (see 'airlock exec --list')");
	else if ((rc = front_build(&f, CFG_DEFAULT_EXEC_PROFILE)) == 0)
		rc = f.list ? list_languages(f.cfg, f.policy) : exec_job(&f, argc, argv, first);
	front_free(&f);
	return rc;
}
