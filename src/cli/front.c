/* front.c — the shared front end of `airlock run` and `airlock exec`.
 *
 * Order matters and is fixed: the configuration's limits (defaults), then the profile's posture
 * and limits, then the flags in the order given. A flag that would widen the profile's posture
 * is refused (config/profile.c), so a caller can turn resource knobs but never loosen a profile.
 */
#include "cli/front.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/tty.h"
#include "config/language.h"
#include "config/profile.h"
#include "config/units.h"
#include "util/error.h"
#include "util/cleanup.h"

/* Options that only airlock exec takes. */
static bool exec_only(enum opt_id id)
{
	return id == OPT_LANG || id == OPT_CODE || id == OPT_LIST;
}

void front_print_options(bool exec)
{
	for (size_t i = 0; i < al_noptions; i++) {
		const struct al_option *o = &al_options[i];
		if (exec_only(o->id) && !exec)
			continue;
		char flag[64], shortf[8] = "    ";
		if (o->short_name)
			snprintf(shortf, sizeof(shortf), "-%c, ", o->short_name);
		snprintf(flag, sizeof(flag), "%s--%s%s%s", shortf, o->name, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
		char help[512];
		opt_help(o, help, sizeof(help));
		printf("  %-34s %s\n", flag, help);
	}
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

/* Options about the front end itself; 0 or an exit status (reported). */
static int front_option(struct front *f, const struct al_option *o, const char *arg)
{
	if (exec_only(o->id) && strcmp(f->command, "exec") != 0)
		return cli_fail("--%s is an option of 'airlock exec'", o->name);
	enum opt_id id = o->id;
	if (id == OPT_JSON) {
		f->json = true;
	} else if (id == OPT_STREAM) {
		if (strcmp(arg, "live") != 0 && strcmp(arg, "capture") != 0)
			return cli_fail("--stream: expected 'live' or 'capture', not '%s'", arg);
		f->stream = strcmp(arg, "live") == 0 ? AL_STREAM_LIVE : AL_STREAM_CAPTURE;
	} else if (id == OPT_RESULT_FD) {
		char *end;
		errno = 0;
		long fd = strtol(arg, &end, 10);
		if (errno || *end || end == arg || fd < 0 || fd > 1 << 20 || fcntl((int)fd, F_GETFD) < 0)
			return cli_fail("--result-fd: '%s' is not an open file descriptor", arg);
		f->result_fd = (int)fd;
	} else if (id == OPT_RESULT_FILE) {
		f->result_file = arg;
	} else if (id == OPT_CONFIG) {
		return cli_set_config_path(arg);
	} else if (id == OPT_PROFILE) {
		if (f->profile)
			return cli_fail("--profile given twice");
		f->profile = arg;
	} else if (id == OPT_LANG) {
		f->lang = arg;
	} else if (id == OPT_CODE) {
		if (f->code)
			return cli_fail("-c given twice");
		f->code = arg;
	} else if (id == OPT_LIST) {
		f->list = true;
	} else if (id == OPT_TTY) {
		f->tty = true;
	} else {
		return cli_fail("internal: unhandled option --%s", o->name);
	}
	return 0;
}

int front_parse(struct front *f, int argc, char **argv, void (*help)(void))
{
	struct option longs[128];
	char shorts[128];
	build_getopt(longs, shorts);
	f->stream = f->result_fd = -1;
	if (!(f->flags = calloc((size_t)argc, sizeof(*f->flags))))
		return -cli_fail("out of memory");
	opterr = 0;
	optind = 1;
	for (;;) {
		int idx = -1, c = getopt_long(argc, argv, shorts, longs, &idx);
		if (c == -1)
			break;
		if (c == '?')
			return -cli_fail("unknown option '%s' (see 'airlock %s --help')", argv[optind - 1], f->command);
		if (c == ':')
			return -cli_fail("option '%s' needs a value", argv[optind - 1]);
		const struct al_option *o = c >= 1000 ? &al_options[c - 1000] : by_short(c);
		if (!o)
			return -cli_fail("unknown option '-%c'", c);
		if (o->id == OPT_HELP) {
			help();
			return -1000;
		}
		if (o->policy)
			f->flags[f->nflags++] = (struct front_flag){o, optarg};
		else if (front_option(f, o, optarg) != 0)
			return -AL_EXIT_FAILURE;
	}
	/* -t was --time before it was --tty (as docker's): a duration right after it was meant as one. */
	uint64_t ms;
	if (f->tty && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9' &&
	    al_parse_duration_ms(argv[optind], &ms, NULL) == 0)
		return -cli_fail("-t is --tty (a terminal) now: for a time limit of %s, say --time %s", argv[optind],
				 argv[optind]);
	return optind;
}

static int apply_profile(struct front *f, const char *name, struct al_error *e)
{
	const struct cfg_profile *pr = cfg_profile(f->cfg, name);
	if (!pr) {
		char known[512] = "";
		for (size_t i = 0; i < f->cfg->nprofiles; i++)
			snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
				 f->cfg->profiles[i].name);
		return cli_fail("unknown profile '%s' (known: %s)", name, known);
	}
	if (cfg_apply_profile(f->cfg, pr, NULL, f->policy, e) < 0)
		return cli_fail("%s", e->msg);
	for (size_t i = 0; i < f->nflags; i++)
		if (cfg_profile_allows(pr, f->flags[i].o, f->flags[i].arg, e) < 0)
			return cli_fail("%s", e->msg);
	if (!pr->namespaces)
		fprintf(stderr,
			"airlock: WARNING: profile %s: NO ISOLATION. The command runs with the host's filesystem and "
			"network (local development only).\n",
			pr->name);
	return 0;
}

#define TTY_OUTPUT_LIMIT (1ULL << 30)

/* A terminal's programs need its type, as docker -t gives it: ours when it is a plain terminfo name
 * (the one variable of our environment a -t job gets, and only its value's name), else xterm. */
static int tty_term(struct al_policy *p, struct al_error *e)
{
	const char *t = getenv("TERM");
	bool plain = t && *t && strlen(t) < 64 &&
		     strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "0123456789.+-_") == strlen(t);
	char spec[80];
	snprintf(spec, sizeof(spec), "TERM=%s", plain ? t : "xterm");
	return al_policy_add_env(p, spec, e);
}

int front_build(struct front *f, const char *default_profile)
{
	struct al_error e = {0};
	if (al_policy_new(&f->policy) < 0)
		return cli_fail("out of memory");
	if (cfg_load_job(cli_config_path(), &f->cfg, &e) < 0)
		return cli_fail("%s", e.msg);
	if (cfg_apply_limits(&f->cfg->limits, f->policy, true, &e) < 0 || cfg_apply_etc(f->cfg, f->policy, &e) < 0)
		return cli_fail("%s", e.msg);
	/* A terminal session is shown live and nothing of it is kept in memory: the output limit then
	 * only ends the display, which at the 1 MiB default a long session reaches. Its default for -t
	 * is the largest the supervisor takes; a profile's or a flag's value still wins. */
	if (f->tty && al_policy_set_limit(f->policy, AL_LIMIT_OUTPUT, TTY_OUTPUT_LIMIT, &e) < 0)
		return cli_fail("%s", e.msg);
	const char *profile = f->profile ? f->profile : default_profile;
	if (profile && apply_profile(f, profile, &e) != 0)
		return AL_EXIT_FAILURE;
	if (f->tty && tty_term(f->policy, &e) < 0) /* before the flags: an --env TERM=... wins */
		return cli_fail("%s", e.msg);
	for (size_t i = 0; i < f->nflags; i++)
		if (opt_apply(f->policy, f->flags[i].o, f->flags[i].arg, &e) < 0)
			return cli_fail("%s", e.msg);
	return 0;
}

static int emit(const struct front *f, const struct al_verdict *v, int result_file_fd)
{
	int fds[2] = {f->result_fd, result_file_fd};
	/* Nobody takes it (human mode, no --result-fd or --result-file): the JSON is not built on
	 * the way from the job's end to our exit (0.08 M instructions). */
	if (!f->json && fds[0] < 0 && fds[1] < 0) {
		fflush(stdout);
		return 0;
	}
	cleanup_free char *js = NULL;
	struct al_error e = {0};
	if (al_verdict_to_json(v, &js, &e) < 0)
		return cli_fail("%s", e.msg);
	if (f->json)
		printf("%s\n", js);
	fflush(stdout);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			dprintf(fds[i], "%s\n", js);
	return 0;
}

/* The signals that stop a job in order (killed, verdict written, cleaned up, exit 128+N) rather
 * than end the supervisor where it stands. They stay blocked from here to the exit, so none can
 * land between two steps; the sandbox's payload unblocks everything before it runs. A closed
 * output pipe is one of them: `airlock run -- yes | head -1` ends as promptly as bare `yes`. */
static int block_stop_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		/* One the caller chose to ignore stays ignored (nohup, a shell's background job). */
		if (sigaction(sigs[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
			sigaddset(&set, sigs[i]);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd >= 0 && fd <= 2) { /* never one of the standard descriptors (al_spawn_opts.stop_fd) */
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = hi;
	}
	return fd;
}

/* Best-effort limits: the defaults the host could not enforce, named on stderr in every mode. */
static void report_not_applied(const struct al_verdict *v)
{
	if (!v->limits_not_applied)
		return;
	char names[96] = "";
	for (int l = 0; l < AL_LIMIT__COUNT; l++)
		if (v->limits_not_applied & (1u << l))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "",
				 al_limit_name((enum al_limit)l));
	fprintf(stderr, "airlock: WARNING: best-effort limits: NOT applied (no delegated cgroup for them): %s\n",
		names);
}

/* In human mode the job's stdout stays its own; what airlock did to the job goes to stderr. */
static void report_end(const struct al_verdict *v, const struct al_policy *p)
{
	char sig[32] = "";
	if (v->signal)
		snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(v->signal) ? sigabbrev_np(v->signal) : "?");
	if (v->status == AL_STATUS_KILLED && v->signal != SIGPIPE) /* a closed pipe is no news, as in a shell */
		fprintf(stderr, "airlock: stopped by %s: the job was killed\n", sig);
	else if (v->status == AL_STATUS_TIMEOUT)
		fprintf(stderr, "airlock: killed at the %g s time limit\n",
			(double)al_policy_get_limit(p, AL_LIMIT_WALL_MS) / 1000.0);
	else if (v->status == AL_STATUS_OOM)
		fprintf(stderr, "airlock: killed by the out-of-memory killer at the memory limit\n");
	if (v->pids_limit_hit)
		fprintf(stderr, "airlock: the process limit (--pids) was reached: a fork failed\n");
	if ((v->out.truncated || v->err.truncated) &&
	    v->status != AL_STATUS_KILLED) /* a stopped job's output is cut anyway */
		fprintf(stderr, "airlock: output truncated at the output limit (%s%s%s)\n",
			v->out.truncated ? "stdout" : "", v->out.truncated && v->err.truncated ? ", " : "",
			v->err.truncated ? "stderr" : "");
	if (v->seccomp_killed)
		fprintf(stderr, "airlock: the command was killed by the seccomp filter (a forbidden system call)\n");
}

/* One job to its end, with -t inside our terminal in raw mode (cli/tty.c): false with e set when
 * it could not be run. Our terminal's modes are back before this returns, on every path, so the
 * verdict is printed on a terminal as it was. */
static bool run_job(struct front *f, struct al_spawn_opts *so, struct al_verdict **v, struct al_error *e)
{
	struct al_job *job = NULL;
	struct ftty t;
	if (f->tty) {
		int r = ftty_begin(&t, &so->tty_cols, &so->tty_rows);
		if (r < 0) {
			ftty_end(&t);
			al_err(e, -r, "--tty: %s",
			       r == -ENOTTY ? "standard input is not a terminal (run it from one, "
					      "or without -t)"
					    : strerror(-r));
			return false;
		}
		so->tty = true;
		so->stdin_fd = -1; /* our terminal is never the sandbox's: its input goes through the relay */
	}
	bool ok = al_job_spawn(f->policy, so, &job, e) == 0;
	int r = ok && f->tty ? ftty_relay(&t, job) : 0;
	if (r < 0) {
		ok = false;
		al_err(e, -r, "--tty: the input relay: %s", strerror(-r));
	}
	/* Leftovers of dead supervisors are swept while the sandbox's init builds its root: this
	 * process would only wait then, and the sweep (a read of the cgroup hierarchies and, on the
	 * backends that make bundle directories, of /tmp) left the start's critical path. Ours are
	 * alive, so never taken for stale. */
	al_cleanup_stale(f->policy);
	ok = ok && al_job_wait(job, v, e) == 0 && *v;
	if (f->tty)
		ftty_end(&t); /* before the job goes: the relay borrows its terminal */
	/* Nothing of the job is left (processes, cgroups, directories) before anything is printed:
	 * a reader that never takes the verdict cannot hold them. */
	al_job_free(job);
	return ok;
}

int front_run(struct front *f)
{
	struct al_verdict *v = NULL;
	struct al_error e = {0};
	int rfd = -1, rc;
	if (f->tty && f->stream == AL_STREAM_CAPTURE)
		return cli_fail("--tty shows the terminal as it goes: not with --stream capture");
	if (f->result_file && (rfd = open(f->result_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return cli_fail("--result-file '%s': %s", f->result_file, strerror(errno));
	/* A terminal is shown as it goes (its stderr is empty). */
	int mode = f->tty ? AL_STREAM_LIVE : f->stream >= 0 ? f->stream : f->json ? AL_STREAM_CAPTURE : AL_STREAM_LIVE;
	int stop_fd = block_stop_signals();
	if (stop_fd < 0) {
		if (rfd >= 0)
			close(rfd);
		return cli_fail("cannot take the stop signals (signalfd): %s", strerror(errno));
	}
	struct al_spawn_opts so = {.size = sizeof(so),
				   .stdin_fd = 0,
				   .stdout_mode = mode,
				   .stderr_mode = mode,
				   .stdout_live_fd = 1,
				   .stderr_live_fd = 2,
				   .stop_fd = stop_fd};
	if (f->stdin_null || fcntl(0, F_GETFD) < 0)
		so.stdin_fd = -1;
	bool ok = run_job(f, &so, &v, &e);
	if (!ok) {
		struct al_verdict fail = {.status = AL_STATUS_SETUP_ERROR,
					  .backend = al_backend_name(al_policy_get_backend(f->policy)),
					  .setup = e};
		emit(f, &fail, rfd);
		rc = cli_fail("%s", e.msg);
	} else {
		emit(f, v, rfd);
		report_not_applied(v);
		if (v->status == AL_STATUS_SETUP_ERROR)
			cli_fail("%s", v->setup.msg);
		else if (!f->json)
			report_end(v, f->policy);
		rc = al_verdict_exit_code(v);
	}
	if (rfd >= 0)
		close(rfd);
	close(stop_fd);
	al_verdict_free(v);
	return rc;
}

void front_free(struct front *f)
{
	free(f->flags);
	cfg_free(f->cfg);
	al_policy_free(f->policy);
}
