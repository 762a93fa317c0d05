/* run.c — `airlock run`: parse the flags into a policy, run one job, report its verdict and exit code. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/airlock.h"
#include "cli/cli.h"
#include "config/options.h"
#include "util/cleanup.h"

struct run_opts {
	bool json;
	int stream; /* -1: default */
	int result_fd;
	const char *result_file;
};

static void print_help(void)
{
	printf("Usage: airlock run [OPTIONS] [--] CMD [ARG...]\n\n"
	       "Run CMD in a fresh sandbox: new user, pid, mount, net, ipc, uts and cgroup\n"
	       "namespaces, a read-only root, no network, no capabilities, an unprivileged uid.\n\n"
	       "Options:\n");
	for (size_t i = 0; i < al_noptions; i++) {
		const struct al_option *o = &al_options[i];
		char flag[64], shortf[8] = "    ";
		if (o->short_name)
			snprintf(shortf, sizeof(shortf), "-%c, ", o->short_name);
		snprintf(flag, sizeof(flag), "%s--%s%s%s", shortf, o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
		printf("  %-34s %s\n", flag, o->help);
	}
	printf("\nSizes: 512, 64K, 1.5M, 2G. Durations: 10 (seconds), 250ms, 10s, 2m, 1h.\n"
	       "Exit status: CMD's own; 128+N if killed by signal N; 124 on timeout;\n"
	       "125 if airlock failed (then CMD never ran).\n");
}

/* getopt_long's tables, built from the one option table. */
static void build_getopt(struct option *longs, char *shorts)
{
	size_t k = 0;
	*shorts++ = '+'; /* stop at the command */
	*shorts++ = ':'; /* report a missing argument distinctly */
	for (size_t i = 0; i < al_noptions; i++) {
		const struct al_option *o = &al_options[i];
		bool arg = o->kind != OK_FLAG;
		longs[k++] = (struct option){o->name, arg ? required_argument : no_argument, NULL, 1000 + (int)i};
		if (o->short_name) {
			*shorts++ = o->short_name;
			if (arg)
				*shorts++ = ':';
		}
	}
	longs[k] = (struct option){0};
	*shorts = 0;
}

static const struct al_option *by_short(int c)
{
	for (size_t i = 0; i < al_noptions; i++)
		if (al_options[i].short_name == c)
			return &al_options[i];
	return NULL;
}

static int front_option(struct run_opts *ro, const struct al_option *o, const char *arg)
{
	switch (o->id) {
	case OPT_JSON:
		ro->json = true;
		return 0;
	case OPT_STREAM:
		if (strcmp(arg, "live") != 0 && strcmp(arg, "capture") != 0)
			return cli_fail("--stream: expected 'live' or 'capture', not '%s'", arg);
		ro->stream = strcmp(arg, "live") == 0 ? AL_STREAM_LIVE : AL_STREAM_CAPTURE;
		return 0;
	case OPT_RESULT_FD: {
		char *end;
		errno = 0;
		long fd = strtol(arg, &end, 10);
		if (errno || *end || end == arg || fd < 0 || fd > 1 << 20 || fcntl((int)fd, F_GETFD) < 0)
			return cli_fail("--result-fd: '%s' is not an open file descriptor", arg);
		ro->result_fd = (int)fd;
		return 0;
	}
	case OPT_RESULT_FILE:
		ro->result_file = arg;
		return 0;
	case OPT_CONFIG:
		return 0; /* taken out of argv and applied before parsing (cli_run_config) */
	case OPT_TIME: case OPT_CPU_TIME: case OPT_OUTPUT_LIMIT: case OPT_DISK: case OPT_OPEN_FILES:
	case OPT_FILE_SIZE: case OPT_ADDRESS_SPACE: case OPT_WORKDIR: case OPT_RO: case OPT_RW:
	case OPT_ENV: case OPT_HOSTNAME: case OPT_CWD: case OPT_ID_BASE: case OPT_HELP: case OPT__COUNT:
	case OPT_MEMORY: case OPT_PIDS: case OPT_CPUS: case OPT_SECCOMP: case OPT_LANDLOCK: case OPT_REQUIRE: case OPT_FALLBACK: case OPT_SUBIDS: case OPT_NET:
	case OPT_ALLOW_PRIVATE: case OPT_PROXY_HOSTS: case OPT_PROXY_HTTP: case OPT_PROXY_CONNS: case OPT_PROXY_IDLE: case OPT_BROKER:
	case OPT_CHECKOUT: case OPT_CHECKOUT_MODE: case OPT_KEEP_CHANGES: case OPT_BACKEND:
		break;
	}
	return cli_fail("internal: unhandled option --%s", o->name);
}

/* Parses flags into p and ro; returns the index of the command, or -exit_code. */
static int parse(int argc, char **argv, struct al_policy *p, struct run_opts *ro)
{
	struct option longs[128];
	char shorts[128];
	build_getopt(longs, shorts);
	opterr = 0;
	optind = 1;
	for (;;) {
		int idx = -1, c = getopt_long(argc, argv, shorts, longs, &idx);
		if (c == -1)
			break;
		if (c == '?')
			return -cli_fail("unknown option '%s' (see 'airlock run --help')", argv[optind - 1]);
		if (c == ':')
			return -cli_fail("option '%s' needs a value", argv[optind - 1]);
		const struct al_option *o = c >= 1000 ? &al_options[c - 1000] : by_short(c);
		if (!o)
			return -cli_fail("unknown option '-%c'", c);
		if (o->id == OPT_HELP) {
			print_help();
			return -1000; /* exit 0 */
		}
		struct al_error e = {0};
		if (o->policy ? opt_apply(p, o, optarg, &e) < 0 : front_option(ro, o, optarg) != 0)
			return o->policy ? -cli_fail("%s", e.msg) : -AL_EXIT_FAILURE;
	}
	if (optind >= argc)
		return -cli_fail("no command given (usage: airlock run [OPTIONS] -- CMD [ARG...])");
	return optind;
}

static int emit(const struct run_opts *ro, const struct al_verdict *v, int result_file_fd)
{
	cleanup_free char *js = NULL;
	struct al_error e = {0};
	if (al_verdict_to_json(v, &js, &e) < 0)
		return cli_fail("%s", e.msg);
	if (ro->json)
		printf("%s\n", js);
	fflush(stdout);
	int fds[2] = {ro->result_fd, result_file_fd};
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			dprintf(fds[i], "%s\n", js);
	return 0;
}

int cli_run(int argc, char **argv)
{
	struct al_policy *p = NULL;
	if (al_policy_new(&p) < 0)
		return cli_fail("out of memory");
	/* --config FILE, then the configuration's limits: the defaults that the flags override. */
	if (cli_run_config(&argc, argv, p) != 0) {
		al_policy_free(p);
		return AL_EXIT_FAILURE;
	}
	struct run_opts ro = {.stream = -1, .result_fd = -1};
	int cmd = parse(argc, argv, p, &ro), rc = AL_EXIT_FAILURE, rfd = -1;
	struct al_job *job = NULL;
	struct al_verdict *v = NULL;
	struct al_error e = {0};
	if (cmd < 0) {
		rc = cmd == -1000 ? 0 : -cmd;
		goto out;
	}
	if (al_policy_set_argv(p, argc - cmd, (const char *const *)argv + cmd, &e) < 0) {
		rc = cli_fail("%s", e.msg);
		goto out;
	}
	if (ro.result_file && (rfd = open(ro.result_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		rc = cli_fail("--result-file '%s': %s", ro.result_file, strerror(errno));
		goto out;
	}
	int mode = ro.stream >= 0 ? ro.stream : ro.json ? AL_STREAM_CAPTURE : AL_STREAM_LIVE;
	struct al_spawn_opts so = {.size = sizeof(so), .stdin_fd = 0, .stdout_mode = mode, .stderr_mode = mode,
				   .stdout_live_fd = 1, .stderr_live_fd = 2};
	signal(SIGPIPE, SIG_IGN); /* a closed stdout must not kill the supervisor mid-job */
	al_cleanup_stale();
	if (fcntl(0, F_GETFD) < 0)
		so.stdin_fd = -1;
	if (al_job_spawn(p, &so, &job, &e) < 0 || al_job_wait(job, &v, &e) < 0) {
		struct al_verdict fail = {.status = AL_STATUS_SETUP_ERROR, .backend = al_backend_name(al_policy_get_backend(p)), .setup = e};
		emit(&ro, &fail, rfd);
		rc = cli_fail("%s", e.msg);
		goto out;
	}
	emit(&ro, v, rfd);
	if (v->status == AL_STATUS_SETUP_ERROR)
		cli_fail("%s", v->setup.msg);
	rc = al_verdict_exit_code(v);
out:
	if (rfd >= 0)
		close(rfd);
	al_verdict_free(v);
	al_job_free(job);
	al_policy_free(p);
	return rc;
}
