/* probe.c — a static test payload: each invocation does one harmless thing and reports it. */
/*
 * Output contract (read by tests/lib.sh and the tests in tests/integration):
 *   - Results are "key=value" lines on stdout. Failures of the requested operation
 *     print "OP=ENAME" (the errno name, e.g. "connect=ENETUNREACH") and exit 1.
 *   - Exit 0: the operation succeeded.  Exit 1: it failed with the errno shown.
 *     Exit 2: usage error (message on stderr).  Exit 3: something impossible happened
 *     (e.g. "raise" returned).  "exit N" exits N; "raise SIG" dies of SIG.
 *   - "read" and "env"/"getenv" print the raw content on success, so tests can compare.
 *   - "write" creates or truncates: aim it only at sandbox paths or the tests' temp dirs.
 *     To ask whether a host file could be written, use "writable", which never writes.
 * The probe links statically so it runs in a sandbox that has no libc of its own, and
 * uses numeric addresses only (no NSS in a static binary).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_FAILED	1
#define EXIT_USAGE	2
#define EXIT_IMPOSSIBLE 3

#define UNUSED __attribute__((unused))

extern char **environ;

static const char *errname(int e)
{
	static char buf[32];
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

/* Report a failed operation as "OP=ENAME" and return the matching exit code. */
static int failed(const char *op, int e)
{
	printf("%s=%s\n", op, errname(e));
	return EXIT_FAILED;
}

static int usage(const char *msg)
{
	fprintf(stderr, "al-probe: %s\n", msg);
	return EXIT_USAGE;
}

/* Parse a non-negative decimal integer; -1 on junk. */
static long long parse_num(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -1;
	return v;
}

static void nap(double seconds)
{
	struct timespec ts;
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int parse_addr(const char *host, const char *port, struct sockaddr_in *sa)
{
	long long p = parse_num(port);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (p < 0 || p > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -1;
	sa->sin_port = htons((unsigned short)p);
	return 0;
}

/* status: identity, privileges and namespace-visible facts of this process. */
static int cmd_status(void)
{
	static const char *const keys[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"};
	gid_t groups[256];
	char buf[PATH_MAX];
	int n = getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);

	printf("uid=%u\ngid=%u\neuid=%u\negid=%u\n", (unsigned)getuid(), (unsigned)getgid(), (unsigned)geteuid(),
	       (unsigned)getegid());
	printf("groups=");
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", (unsigned)groups[i]);
	printf("\n");

	FILE *f = fopen("/proc/self/status", "re");
	if (f) {
		char line[512];
		while (fgets(line, sizeof(line), f)) {
			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
				size_t len = strlen(keys[k]);
				if (strncmp(line, keys[k], len) != 0 || line[len] != ':')
					continue;
				char *v = line + len + 1;
				v += strspn(v, " \t");
				v[strcspn(v, "\n")] = '\0';
				printf("%s=%s\n", keys[k], v);
			}
		}
		fclose(f);
	} else {
		printf("proc_status=%s\n", errname(errno));
	}
	printf("pid=%d\nppid=%d\nsid=%d\npgid=%d\n", (int)getpid(), (int)getppid(), (int)getsid(0), (int)getpgrp());
	if (gethostname(buf, sizeof(buf)) == 0)
		printf("hostname=%s\n", buf);
	else
		printf("hostname=%s\n", errname(errno));
	if (getcwd(buf, sizeof(buf)))
		printf("cwd=%s\n", buf);
	else
		printf("cwd=%s\n", errname(errno));
	return 0;
}

/* connect HOST PORT: TCP connect (3 s timeout); on success sends one line so a
 * listener outside can prove bytes arrived. */
static int cmd_connect(const char *host, const char *port)
{
	struct sockaddr_in sa;
	struct timeval tv = {.tv_sec = 3, .tv_usec = 0};
	static const char hello[] = "al-probe hello\n";

	if (parse_addr(host, port, &sa) < 0)
		return usage("connect: HOST must be a numeric IPv4 address, PORT 0..65535");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return failed("socket", errno);
	/* SO_SNDTIMEO bounds connect() on Linux, so a black hole cannot hang the test. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return failed("connect", e);
	}
	if (write(fd, hello, sizeof(hello) - 1) < 0) {
		int e = errno;
		close(fd);
		return failed("send", e);
	}
	close(fd);
	printf("connect=OK\n");
	return 0;
}

/* udp-send HOST PORT: one datagram. */
static int cmd_udp_send(const char *host, const char *port)
{
	struct sockaddr_in sa;
	static const char hello[] = "al-probe datagram\n";

	if (parse_addr(host, port, &sa) < 0)
		return usage("udp-send: HOST must be a numeric IPv4 address, PORT 0..65535");
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return failed("socket", errno);
	if (sendto(fd, hello, sizeof(hello) - 1, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return failed("udp-send", e);
	}
	close(fd);
	printf("udp-send=OK\n");
	return 0;
}

/* read PATH: copy the file to stdout. */
static int cmd_read(const char *path)
{
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return failed("read", errno);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
	}
	int e = errno;
	close(fd);
	if (n < 0)
		return failed("read", e);
	return 0;
}

/* write PATH DATA: create or truncate PATH and write DATA (no newline added). */
static int cmd_write(const char *path, const char *data)
{
	size_t len = strlen(data);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return failed("write", errno);
	ssize_t n = write(fd, data, len);
	int e = errno;
	if (close(fd) < 0 && n >= 0)
		return failed("write", errno);
	if (n < 0)
		return failed("write", e);
	if ((size_t)n != len)
		return failed("write", EIO);
	printf("write=OK\n");
	return 0;
}

/* writable PATH: would a write be allowed? Never modifies anything, so it is safe to
 * aim at host files: a directory gets access(W_OK) (EROFS for a read-only mount takes
 * precedence over permissions); anything else is opened O_WRONLY|O_APPEND without
 * O_CREAT or O_TRUNC and closed without writing a byte. */
static int cmd_writable(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return failed("writable", errno);
	if (S_ISDIR(st.st_mode)) {
		if (access(path, W_OK) < 0)
			return failed("writable", errno);
	} else {
		int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return failed("writable", errno);
		close(fd);
	}
	printf("writable=OK\n");
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* ls DIR: entry names, sorted, one per line ("." and ".." left out). */
static int cmd_ls(const char *path)
{
	char *names[4096];
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir(path);
	if (!d)
		return failed("ls", errno);
	while ((de = readdir(d)) && n < sizeof(names) / sizeof(names[0])) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", names[i]);
		free(names[i]);
	}
	return 0;
}

/* pids: numeric entries of /proc, sorted numerically, one per line. */
static int cmd_pids(void)
{
	long long pids[4096];
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");
	if (!d)
		return failed("pids", errno);
	while ((de = readdir(d)) && n < sizeof(pids) / sizeof(pids[0])) {
		long long v = parse_num(de->d_name);
		if (v > 0)
			pids[n++] = v;
	}
	closedir(d);
	qsort(pids, n, sizeof(pids[0]), cmp_ll);
	for (size_t i = 0; i < n; i++)
		printf("%lld\n", pids[i]);
	return 0;
}

/* kill PID SIG: one kill(2); reports the result. */
static int cmd_kill(const char *pid, const char *sig)
{
	long long p = parse_num(pid), s = parse_num(sig);
	if (p <= 0 || p > INT_MAX || s < 0 || s > 64)
		return usage("kill: PID must be > 0, SIG 0..64");
	if (kill((pid_t)p, (int)s) < 0)
		return failed("kill", errno);
	printf("kill=OK\n");
	return 0;
}

static int cmd_env(void)
{
	for (char **e = environ; *e; e++)
		printf("%s\n", *e);
	return 0;
}

static int cmd_getenv(const char *name)
{
	const char *v = getenv(name);
	if (!v) {
		printf("getenv=UNSET\n");
		return EXIT_FAILED;
	}
	printf("%s\n", v);
	return 0;
}

/* raise SIG: die of SIG with default disposition, whatever was inherited. */
static int cmd_raise(const char *sig)
{
	long long s = parse_num(sig);
	sigset_t set;
	if (s <= 0 || s > 64)
		return usage("raise: SIG 1..64");
	fflush(stdout);
	signal((int)s, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, (int)s);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise((int)s);
	nap(0.5); /* a stopped or ignored signal lands here */
	fprintf(stderr, "al-probe: still alive after signal %lld\n", s);
	return EXIT_IMPOSSIBLE;
}

/* flood BYTES [FD]: write BYTES of printable lines to FD (default 1) in 64 KiB chunks;
 * a closed reader (EPIPE) ends it quietly. */
static int cmd_flood(const char *bytes, const char *fdarg)
{
	static char chunk[65536];
	long long left = parse_num(bytes), fd = fdarg ? parse_num(fdarg) : 1;
	if (left < 0 || fd < 0 || fd > INT_MAX)
		return usage("flood: BYTES and FD must be non-negative integers");
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (char)((i % 64 == 63) ? '\n' : 'a' + (int)(i % 26));
	signal(SIGPIPE, SIG_IGN);
	while (left > 0) {
		size_t want = left < (long long)sizeof(chunk) ? (size_t)left : sizeof(chunk);
		ssize_t n = write((int)fd, chunk, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE)
			return 0;
		if (n < 0) {
			fprintf(stderr, "al-probe: flood: %s\n", errname(errno));
			return EXIT_FAILED;
		}
		left -= n;
	}
	return 0;
}

/* daemon MARKER SECONDS [FOREGROUND_SECONDS]: setsid + double fork; the grandchild
 * names itself MARKER (comm; MARKER is also in its cmdline), ignores every catchable
 * signal, keeps stdout/stderr open (so a supervisor waiting for EOF would hang) and
 * sleeps SECONDS. The foreground process prints the daemon's pid as it sees it, then
 * sleeps FOREGROUND_SECONDS (default 0) and exits 0. Tests look for MARKER in the
 * host's /proc to prove nothing outlived the job. */
static int cmd_daemon(const char *marker, const char *secs, const char *fg)
{
	double s = strtod(secs, NULL), fgs = fg ? strtod(fg, NULL) : 0;
	int p[2];
	pid_t child, gc = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return failed("pipe", errno);
	fflush(stdout);
	child = fork();
	if (child < 0)
		return failed("fork", errno);
	if (child == 0) {
		close(p[0]);
		setsid();
		pid_t g = fork();
		if (g < 0)
			_exit(EXIT_FAILED);
		if (g > 0)
			_exit(0);
		/* grandchild: the daemon */
		for (int sig = 1; sig < 32; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_IGN);
		prctl(PR_SET_NAME, marker, 0, 0, 0);
		gc = getpid();
		if (write(p[1], &gc, sizeof(gc)) != (ssize_t)sizeof(gc))
			_exit(EXIT_FAILED);
		close(p[1]);
		nap(s);
		_exit(0);
	}
	close(p[1]);
	waitpid(child, NULL, 0);
	ssize_t n = read(p[0], &gc, sizeof(gc));
	close(p[0]);
	if (n != (ssize_t)sizeof(gc))
		return failed("daemon", ECHILD);
	printf("daemon=%d\n", (int)gc);
	fflush(stdout);
	nap(fgs);
	return 0;
}

/* forkloop N [SECONDS]: fork N children that each sleep SECONDS (default 30), then
 * wait for them. Reports how many forks succeeded and the first error. */
static int cmd_forkloop(const char *count, const char *secs)
{
	long long n = parse_num(count), made = 0;
	double s = secs ? strtod(secs, NULL) : 30;
	int err = 0;
	if (n < 0)
		return usage("forkloop: N must be a non-negative integer");
	fflush(stdout);
	for (; made < n; made++) {
		pid_t c = fork();
		if (c < 0) {
			err = errno;
			break;
		}
		if (c == 0) {
			nap(s);
			_exit(0);
		}
	}
	printf("forked=%lld\n", made);
	if (err)
		printf("fork=%s\n", errname(err));
	fflush(stdout);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return err ? EXIT_FAILED : 0;
}

/* maxrss REPORT CMD [ARGS...]: run CMD as a child and write its wait4() ru_maxrss
 * ("maxrss_kib=N") and "exit=N" or "signal=N" to the file REPORT. The high-water mark
 * survives exec, so the measuring parent must be small: this static probe is, unlike
 * python or a shell (a forked python child starts with python's RSS). */
static int cmd_maxrss(const char *report, char **argv)
{
	struct rusage ru;
	int status;
	pid_t c = fork();
	if (c < 0)
		return failed("fork", errno);
	if (c == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(c, &status, 0, &ru) < 0)
		return failed("wait4", errno);
	FILE *f = fopen(report, "we");
	if (!f)
		return failed("maxrss", errno);
	fprintf(f, "maxrss_kib=%ld\n", ru.ru_maxrss);
	if (WIFEXITED(status))
		fprintf(f, "exit=%d\n", WEXITSTATUS(status));
	else
		fprintf(f, "signal=%d\n", WTERMSIG(status));
	return fclose(f) == 0 ? 0 : failed("maxrss", errno);
}

static const char help[] = "usage: al-probe COMMAND [ARGS]\n"
			   "  status | pids | env | getenv NAME\n"
			   "  connect HOST PORT | udp-send HOST PORT\n"
			   "  read PATH | write PATH DATA | writable PATH | ls DIR\n"
			   "  kill PID SIG | exit N | raise SIG | sleep SECONDS [MARKER...]\n"
			   "  flood BYTES [FD] | daemon MARKER SECONDS [FOREGROUND_SECONDS] | forkloop N [SECONDS]\n"
			   "  maxrss REPORT CMD [ARGS...]\n";

/* Adapters from the argument vector to each command, for the dispatch table. */
static int run_status(UNUSED char **a, UNUSED int n)
{
	return cmd_status();
}
static int run_connect(UNUSED char **a, UNUSED int n)
{
	return cmd_connect(a[0], a[1]);
}
static int run_udp_send(UNUSED char **a, UNUSED int n)
{
	return cmd_udp_send(a[0], a[1]);
}
static int run_read(UNUSED char **a, UNUSED int n)
{
	return cmd_read(a[0]);
}
static int run_write(UNUSED char **a, UNUSED int n)
{
	return cmd_write(a[0], a[1]);
}
static int run_writable(UNUSED char **a, UNUSED int n)
{
	return cmd_writable(a[0]);
}
static int run_ls(UNUSED char **a, UNUSED int n)
{
	return cmd_ls(a[0]);
}
static int run_pids(UNUSED char **a, UNUSED int n)
{
	return cmd_pids();
}
static int run_kill(UNUSED char **a, UNUSED int n)
{
	return cmd_kill(a[0], a[1]);
}
static int run_env(UNUSED char **a, UNUSED int n)
{
	return cmd_env();
}
static int run_getenv(UNUSED char **a, UNUSED int n)
{
	return cmd_getenv(a[0]);
}
static int run_raise(UNUSED char **a, UNUSED int n)
{
	return cmd_raise(a[0]);
}
static int run_flood(UNUSED char **a, UNUSED int n)
{
	return cmd_flood(a[0], n > 1 ? a[1] : NULL);
}
static int run_forkloop(UNUSED char **a, UNUSED int n)
{
	return cmd_forkloop(a[0], n > 1 ? a[1] : NULL);
}
static int run_maxrss(UNUSED char **a, UNUSED int n)
{
	return cmd_maxrss(a[0], a + 1);
}

static int run_daemon(UNUSED char **a, UNUSED int n)
{
	return cmd_daemon(a[0], a[1], n > 2 ? a[2] : NULL);
}

static int run_exit(UNUSED char **a, UNUSED int n)
{
	long long v = parse_num(a[0]);
	return v < 0 || v > 255 ? usage("exit: N must be 0..255") : (int)v;
}

/* sleep SECONDS [MARKER...]: extra arguments only make the process findable. */
static int run_sleep(UNUSED char **a, UNUSED int n)
{
	nap(strtod(a[0], NULL));
	return 0;
}

static const struct {
	const char *name;
	int min_args;
	int (*run)(char **args, int nargs);
} commands[] = {
	{"status", 0, run_status}, {"connect", 2, run_connect},	  {"udp-send", 2, run_udp_send},
	{"read", 1, run_read},	   {"write", 2, run_write},	  {"writable", 1, run_writable},
	{"ls", 1, run_ls},	   {"pids", 0, run_pids},	  {"kill", 2, run_kill},
	{"env", 0, run_env},	   {"getenv", 1, run_getenv},	  {"exit", 1, run_exit},
	{"raise", 1, run_raise},   {"sleep", 1, run_sleep},	  {"flood", 1, run_flood},
	{"daemon", 2, run_daemon}, {"forkloop", 1, run_forkloop}, {"maxrss", 2, run_maxrss},
};

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(cmd, commands[i].name) != 0)
			continue;
		if (argc - 2 < commands[i].min_args) {
			fputs(help, stderr);
			return usage("missing arguments");
		}
		return commands[i].run(argv + 2, argc - 2);
	}
	fputs(help, stderr);
	return usage(*cmd ? "unknown command" : "missing command");
}
