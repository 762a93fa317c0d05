/* oci.c — `airlock oci …` and `airlock-runc …`: the runc command line containerd's shim and podman call (parses and reports only). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ocirt/runtime.h"
#include "ocirt/spec.h"
#include "util/cleanup.h"
#include "util/text.h"

/* runc's exit status for every failure of its own. */
#define OCI_EXIT_FAILURE 1

static const char oci_usage[] =
	"Usage: airlock oci [GLOBAL OPTIONS] COMMAND [OPTIONS] ID   (also: airlock-runc ...)\n"
	"\n"
	"An OCI runtime (runc's command line) that confines every container as airlock does.\n"
	"\n"
	"Global options: --root DIR (default " ORT_DEFAULT_ROOT "), --log FILE, --log-format text|json,\n"
	"  --debug (ignored); --systemd-cgroup is refused (cgroupfs only).\n"
	"\n"
	"Commands:\n"
	"  create --bundle DIR [--pid-file F] [--console-socket S] ID\n"
	"  start ID | state ID | kill [--all] ID [SIGNAL] | delete [--force] ID\n"
	"  exec --process JSON [--detach] [--pid-file F] [--console-socket S] ID\n"
	"  ps [--format table|json] ID | events --stats ID | update --resources FILE|- ID\n"
	"  pause ID | resume ID | list | features | --version\n"
	"\n"
	"Annotations: io.airlock.profile=untrusted-code-read (default)|untrusted-code-write|none,\n"
	"  io.airlock.net=none|pod|host, io.airlock.seccomp=default|config-only (profile none),\n"
	"  io.airlock.verdict=/path (a JSON record written when the container is deleted).\n";

struct oci_global {
	const char *root;
	const char *log;
	bool log_json;
};

static struct oci_global g;

static void log_line(const char *level, const char *msg)
{
	if (!g.log)
		return;
	FILE *f = fopen(g.log, "ae");
	if (!f)
		return;
	if (g.log_json) {
		char t[TXT_RFC3339_MAX];
		txt_rfc3339_now(0, t);
		json_t *o = json_pack("{s:s,s:s,s:s}", "level", level, "msg", msg, "time", t);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (s)
			fprintf(f, "%s\n", s);
		free(s);
		json_decref(o);
	} else {
		fprintf(f, "level=%s msg=\"%s\"\n", level, msg);
	}
	fclose(f);
}

static int oci_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int oci_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "airlock-runc: %s\n", msg);
	log_line("error", msg);
	return OCI_EXIT_FAILURE;
}

/* What failed without failing the command (a poststart or poststop hook). */
static void oci_warn(const char *msg)
{
	fprintf(stderr, "airlock-runc: warning: %s\n", msg);
	log_line("warning", msg);
}

static int report(int r, const struct al_error *e)
{
	return r < 0 ? oci_fail("%s", e->msg[0] ? e->msg : strerror(-r)) : 0;
}

/* The one positional argument every command takes. */
static const char *need_id(int argc, char **argv)
{
	return optind < argc ? argv[optind] : NULL;
}

#define NEED_ID(id)                                                               \
	do {                                                                      \
		if (!(id))                                                        \
			return oci_fail("%s: a container id is needed", argv[0]); \
	} while (0)

static int cmd_create(const struct ort_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {{"bundle", required_argument, NULL, 'b'},
					     {"pid-file", required_argument, NULL, 'p'},
					     {"console-socket", required_argument, NULL, 'c'},
					     {"no-pivot", no_argument, NULL, 'n'},
					     {"no-new-keyring", no_argument, NULL, 'k'},
					     {"preserve-fds", required_argument, NULL, 'f'},
					     {0}};
	struct ort_create_opts o = {.bundle = "."};
	int ch;
	while ((ch = getopt_long(argc, argv, "+b:", opts, NULL)) != -1) {
		if (ch == 'b')
			o.bundle = optarg;
		else if (ch == 'p')
			o.pid_file = optarg;
		else if (ch == 'c')
			o.console_socket = optarg;
		else if (ch == 'n')
			return oci_fail("create --no-pivot is refused: the container always gets pivot_root");
		else if (ch == 'f' && strcmp(optarg, "0") != 0)
			return oci_fail("create --preserve-fds is not supported");
		else if (ch == '?')
			return OCI_EXIT_FAILURE;
	}
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	cleanup_free char *bundle = realpath(o.bundle, NULL);
	if (!bundle)
		return oci_fail("bundle %s: %s", o.bundle, strerror(errno));
	o.bundle = bundle;
	struct al_error e = {0};
	return report(ort_create(c, id, &o, &e), &e);
}

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"HUP", SIGHUP},	{"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
		     {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}, {"WINCH", SIGWINCH},
		     {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"ABRT", SIGABRT}, {"TSTP", SIGTSTP}};
	char *end;
	long n = strtol(s, &end, 10);
	if (*s && !*end)
		return n > 0 && n < NSIG ? (int)n : -1;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].name, s) == 0)
			return names[i].sig;
	return -1;
}

static int cmd_kill(const struct ort_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {{"all", no_argument, NULL, 'a'}, {0}};
	bool all = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "+a", opts, NULL)) != -1) {
		if (ch == 'a')
			all = true;
		else
			return OCI_EXIT_FAILURE;
	}
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	int sig = optind + 1 < argc ? parse_signal(argv[optind + 1]) : SIGTERM;
	if (sig < 0)
		return oci_fail("kill: unknown signal %s", argv[optind + 1]);
	struct al_error e = {0};
	return report(ort_kill(c, id, sig, all, &e), &e);
}

static int cmd_delete(const struct ort_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {{"force", no_argument, NULL, 'f'}, {0}};
	bool force = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "+f", opts, NULL)) != -1) {
		if (ch == 'f')
			force = true;
		else
			return OCI_EXIT_FAILURE;
	}
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	struct al_error e = {0};
	int r = ort_delete(c, id, force, &e);
	/* runc: a forced delete of a container that is not there is not an error. */
	if (r == -ENOENT && force)
		return 0;
	return report(r, &e);
}

static int cmd_simple(const struct ort_ctx *c, int argc, char **argv)
{
	optind = 1;
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	struct al_error e = {0};
	const char *cmd = argv[0];
	if (strcmp(cmd, "start") == 0)
		return report(ort_start(c, id, &e), &e);
	if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0)
		return report(ort_pause(c, id, cmd[0] == 'p', &e), &e);
	char *json = NULL;
	int r = ort_state(c, id, &json, &e);
	if (r == 0)
		puts(json);
	free(json);
	return report(r, &e);
}

static int cmd_ps(const struct ort_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {{"format", required_argument, NULL, 'f'}, {0}};
	bool json = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "+f:", opts, NULL)) != -1) {
		if (ch == 'f' && (strcmp(optarg, "json") == 0 || strcmp(optarg, "table") == 0))
			json = optarg[0] == 'j';
		else
			return oci_fail("ps: --format table|json");
	}
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	pid_t *pids = NULL;
	size_t n = 0;
	struct al_error e = {0};
	int r = ort_ps(c, id, &pids, &n, &e);
	if (r < 0)
		return report(r, &e);
	if (json) {
		putchar('[');
		for (size_t i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)pids[i]);
		puts("]");
	} else {
		puts("PID");
		for (size_t i = 0; i < n; i++)
			printf("%d\n", (int)pids[i]);
	}
	free(pids);
	return 0;
}

static int cmd_events(const struct ort_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{"stats", no_argument, NULL, 's'}, {"interval", required_argument, NULL, 'i'}, {0}};
	bool stats = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "+s", opts, NULL)) != -1) {
		if (ch == 's')
			stats = true;
		else if (ch != 'i')
			return OCI_EXIT_FAILURE;
	}
	if (!stats)
		return oci_fail("events: only --stats is supported (one reading)");
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	char *json = NULL;
	struct al_error e = {0};
	int r = ort_stats(c, id, &json, &e);
	if (r == 0)
		puts(json);
	free(json);
	return report(r, &e);
}

static char *read_all(const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
	if (!f)
		return NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	char buf[4096];
	size_t n;
	while (m && (n = fread(buf, 1, sizeof(buf), f)) > 0 && len < (1u << 20))
		fwrite(buf, 1, n, m);
	if (f != stdin)
		fclose(f);
	if (m)
		fclose(m);
	return text;
}

static int cmd_update(const struct ort_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {{"resources", required_argument, NULL, 'r'}, {0}};
	const char *file = NULL;
	int ch;
	while ((ch = getopt_long(argc, argv, "+r:", opts, NULL)) != -1) {
		if (ch == 'r')
			file = optarg;
		else
			return oci_fail("update: only --resources FILE|- is supported");
	}
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	if (!file)
		return oci_fail("update: --resources FILE|- is needed");
	cleanup_free char *text = read_all(file);
	if (!text)
		return oci_fail("update: reading %s: %s", file, strerror(errno));
	struct al_error e = {0};
	return report(ort_update(c, id, text, &e), &e);
}

static int cmd_exec(const struct ort_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {{"process", required_argument, NULL, 'p'},
					     {"detach", no_argument, NULL, 'd'},
					     {"pid-file", required_argument, NULL, 'f'},
					     {"console-socket", required_argument, NULL, 'c'},
					     {"tty", no_argument, NULL, 't'},
					     {0}};
	struct ort_exec_opts o = {0};
	int ch;
	while ((ch = getopt_long(argc, argv, "+p:dt", opts, NULL)) != -1) {
		if (ch == 'p')
			o.process = optarg;
		else if (ch == 'd')
			o.detach = true;
		else if (ch == 'f')
			o.pid_file = optarg;
		else if (ch == 'c')
			o.console_socket = optarg;
		else if (ch != 't')
			return OCI_EXIT_FAILURE;
	}
	const char *id = need_id(argc, argv);
	NEED_ID(id);
	if (!o.process)
		return oci_fail("exec: --process FILE is needed (the command-line form is not supported)");
	int code = 0;
	struct al_error e = {0};
	int r = ort_exec(c, id, &o, &code, &e);
	return r < 0 ? report(r, &e) : code;
}

static int cmd_list(const struct ort_ctx *c)
{
	char **ids = NULL;
	struct al_error e = {0};
	int r = ort_list(c, &ids, &e);
	if (r < 0)
		return report(r, &e);
	printf("%-24s %-8s %s\n", "ID", "PID", "STATUS");
	for (size_t i = 0; ids[i]; i++) {
		const char *status;
		pid_t pid;
		if (ort_status(c, ids[i], &status, &pid, &e) == 0)
			printf("%-24s %-8d %s\n", ids[i], strcmp(status, "stopped") ? (int)pid : 0, status);
		free(ids[i]);
	}
	free(ids);
	return 0;
}

static int cmd_features(void)
{
	json_t *caps = json_array();
	for (int i = 0; ort_cap_name(i); i++)
		json_array_append_new(caps, json_string(ort_cap_name(i)));
	json_t *f = json_pack("{s:s,s:s,s:[],s:[sssssssssssssssssssssss],s:{s:[sssssss],s:o,s:{s:b,s:b,s:b},s:{s:b,s:["
			      "sssssss],s:[ss]},"
			      "s:{s:b},s:{s:b}},s:{s:s,s:s,s:s,s:s}}",
			      "ociVersionMin", "1.0.0", "ociVersionMax", "1.1.0", "hooks", "mountOptions", "ro", "rw",
			      "nosuid", "suid", "nodev", "dev", "noexec", "exec", "bind", "rbind", "private",
			      "rprivate", "slave", "rslave", "relatime", "norelatime", "strictatime", "noatime",
			      "atime", "sync", "async", "unbindable", "runbindable", "linux", "namespaces", "pid",
			      "network", "ipc", "uts", "mount", "user", "cgroup", "capabilities", caps, "cgroup", "v1",
			      1, "v2", 1, "systemd", 0, "seccomp", "enabled", 1, "actions", "SCMP_ACT_ALLOW",
			      "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
			      "SCMP_ACT_TRAP", "SCMP_ACT_LOG", "archs", "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "apparmor",
			      "enabled", 0, "selinux", "enabled", 0, "annotations", "io.airlock.profile",
			      "untrusted-code-read|untrusted-code-write|none", "io.airlock.net", "none|pod|host",
			      "io.airlock.seccomp", "default|config-only", "io.airlock.verdict", "/path");
	char *s = f ? json_dumps(f, JSON_INDENT(2)) : NULL;
	if (s)
		puts(s);
	free(s);
	json_decref(f);
	return s ? 0 : OCI_EXIT_FAILURE;
}

static int parse_global(int argc, char **argv)
{
	static const struct option opts[] = {{"root", required_argument, NULL, 'r'},
					     {"log", required_argument, NULL, 'l'},
					     {"log-format", required_argument, NULL, 'F'},
					     {"systemd-cgroup", no_argument, NULL, 's'},
					     {"debug", no_argument, NULL, 'd'},
					     {"rootless", required_argument, NULL, 'R'},
					     {"criu", required_argument, NULL, 'C'},
					     {"help", no_argument, NULL, 'h'},
					     {"version", no_argument, NULL, 'v'},
					     {0}};
	g.root = ORT_DEFAULT_ROOT;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			g.root = optarg;
			break;
		case 'l':
			g.log = optarg;
			break;
		case 'F':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0)
				return oci_fail("--log-format: text or json");
			g.log_json = optarg[0] == 'j';
			break;
		case 's':
			return oci_fail("--systemd-cgroup is not supported: airlock-runc manages cgroupfs paths itself "
					"(set SystemdCgroup = false for this runtime)");
		case 'h':
			fputs(oci_usage, stdout);
			return -1;
		case 'v':
			puts("airlock-runc version " AIRLOCK_VERSION "\nspec: 1.0.2");
			return -1;
		case 'd':
		case 'R':
		case 'C':
			break;
		default:
			return OCI_EXIT_FAILURE;
		}
	}
	return 0;
}

int cli_oci(int argc, char **argv)
{
	int r = parse_global(argc, argv);
	if (r != 0)
		return r < 0 ? 0 : r;
	if (optind >= argc)
		return fputs(oci_usage, stderr), OCI_EXIT_FAILURE;
	argc -= optind;
	argv += optind;
	optind = 1;
	struct ort_ctx c = {.root = g.root, .warn = oci_warn};
	const char *cmd = argv[0];
	if (strcmp(cmd, "create") == 0)
		return cmd_create(&c, argc, argv);
	if (strcmp(cmd, "kill") == 0)
		return cmd_kill(&c, argc, argv);
	if (strcmp(cmd, "delete") == 0)
		return cmd_delete(&c, argc, argv);
	if (!strcmp(cmd, "start") || !strcmp(cmd, "state") || !strcmp(cmd, "pause") || !strcmp(cmd, "resume"))
		return cmd_simple(&c, argc, argv);
	if (strcmp(cmd, "exec") == 0)
		return cmd_exec(&c, argc, argv);
	if (strcmp(cmd, "ps") == 0)
		return cmd_ps(&c, argc, argv);
	if (strcmp(cmd, "events") == 0)
		return cmd_events(&c, argc, argv);
	if (strcmp(cmd, "update") == 0)
		return cmd_update(&c, argc, argv);
	if (strcmp(cmd, "list") == 0)
		return cmd_list(&c);
	if (strcmp(cmd, "features") == 0)
		return cmd_features();
	if (strcmp(cmd, "help") == 0)
		return fputs(oci_usage, stdout), 0;
	return oci_fail("unknown command '%s' (run, checkpoint and restore are not supported)", cmd);
}
