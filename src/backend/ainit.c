/* ainit.c — airlock-init (ainit.h): the payload's last steps inside crun, runsc or bwrap, and the backends' side of it.
 *
 * Why a pid 1 of our own under crun: the first process of a pid namespace is its init, and the
 * kernel drops every signal that init has no handler for when it comes from inside the namespace —
 * SIGKILL and SIGABRT from raise() or abort() included. Run as pid 1 itself, a payload that kills
 * itself would carry on, and orphans would never be reaped. Docker's --init (tini) exists for
 * this; the native backend and bwrap have an init of their own. crun has none, so the init forks
 * the payload, reaps everything, and writes the payload's exact wait status (or why the command
 * could not be executed) to fd AI_RECORD_FD, which crun passes through (--preserve-fds=1) to the
 * monitor (ocichild.c). No 128+N folding, so a payload that exits 137 is not mistaken for one
 * killed by SIGKILL.
 *
 * How it is entered: a constructor, as runc's nsenter enters its C code before the Go runtime:
 * when argv[0] is exactly AI_PATH, and the process is pid 1 or was asked to --exec, it never
 * returns to main(). Nothing here is a privilege: it runs as the sandbox user, after the tool has
 * set up everything (namespaces, no capabilities, no_new_privs, airlock's seccomp filter), and does
 * only what the payload could do itself.
 *
 * The job's rlimits (--rlimit) are the payload's: set just before its execve, so the init keeps
 * the runtime's own (a sanitized build of this binary reserves terabytes of address space and
 * could not start under --address-space). Nothing is lost by that: RLIMIT_AS, FSIZE, NOFILE and
 * CPU are per process, and the init only waits; RLIMIT_NPROC counts the processes of the uid, the
 * init included, whoever holds the limit, and only the payload's forks are checked against it.
 * RLIMIT_CORE 0 alone stays on the init too (crun: process.rlimits, bundle.c; bwrap: bwchild.c):
 * no core of it is ever written, whatever the host's core_pattern. The Landlock ruleset is built
 * before the rlimits (its opens do not count against --nofile) and enforced after them, as the
 * native payload does.
 *
 * --exec under runsc (only when the policy has files): gVisor cannot bind a file inside the
 * /workspace tmpfs (its mount point would be made a directory), so the init copies each file
 * from the read-only OCI_FILES_PATH into place — as the sandbox user, into the tmpfs capped by
 * --disk, as the native init writes them — sets the rlimits and execs the payload itself: no
 * fork and no record (runsc passes no descriptor but 0, 1, 2), the payload stays gVisor's pid 1
 * as without files, and a failure is a line on stderr and exit 127 (exec) or 125 (setup).
 *
 * --exec --record FD under bwrap: bwrap's pid 1 stays the namespace's init and reaper (it closes
 * every descriptor but stdio, so FD is the init's alone); the init builds the ruleset, sets the
 * rlimits, restricts itself and execs the payload, which keeps the init's pid, so bwrap's
 * --json-status-fd reports the payload's exit as before. A failure before the exec is a record
 * on FD (exit 127 or 125), which the monitor reports as bwrap's own failures were (bwchild.c);
 * FD is close-on-exec, so the payload never holds it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/ainit.h"
#include "kit/channel.h"
#include "kit/fsplan.h"
#include "kit/landlock.h"
#include "util/error.h"

static void put_record_to(int fd, int kind, int value)
{
	int32_t rec[2] = {kind, value};
	ssize_t w;
	do
		w = write(fd, rec, sizeof(rec));
	while (w < 0 && errno == EINTR);
}

static void put_record(int kind, int value)
{
	put_record_to(AI_RECORD_FD, kind, value);
}

/* What the container's init exits with (crun's exit code, used only if the record is lost). */
static int folded(int ws)
{
	return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

/* The init's argv, parsed without allocating (it runs before main, in any sandbox). */
struct init_args {
	struct {
		int res;
		struct rlimit rl;
	} rl[AI_MAX_RLIMITS];
	size_t nrl;
	bool landlock; /* --landlock-set given: spec and rules below */
	struct ll_spec spec;
	struct ll_path rules[AI_MAX_LANDLOCK];
	bool exec;
	int record;   /* --record FD, else -1 */
	char **files; /* nfiles triples SRC DEST MODE */
	size_t nfiles;
	char **cmd;
};

static bool parse_u64(const char *s, char end, const char **next, uint64_t *v)
{
	char *e;
	errno = 0;
	unsigned long long x = strtoull(s, &e, 10);
	if (errno || e == s || *e != end || s[0] == '-')
		return false;
	*v = x;
	*next = e + 1;
	return true;
}

/* "RES:SOFT:HARD", decimal: ai_argv writes them, nothing else does. */
static bool parse_rlimit(const char *s, int *res, struct rlimit *rl)
{
	uint64_t r, soft, hard;
	if (!parse_u64(s, ':', &s, &r) || !parse_u64(s, ':', &s, &soft) || !parse_u64(s, 0, &s, &hard) ||
	    r >= RLIM_NLIMITS || soft > hard)
		return false;
	*res = (int)r;
	rl->rlim_cur = soft;
	rl->rlim_max = hard;
	return true;
}

/* "FLAGS-": t deny_tcp, s scope, w writes_only (ai_argv writes it, nothing else does). */
static int parse_landlock_set(const char *s, struct init_args *a)
{
	a->landlock = true;
	a->spec.paths = a->rules;
	for (; *s && *s != '-'; s++) {
		if (*s == 't')
			a->spec.deny_tcp = true;
		else if (*s == 's')
			a->spec.scope = true;
		else if (*s == 'w')
			a->spec.writes_only = true;
		else
			return -1;
	}
	return *s == '-' && !s[1] ? 0 : -1;
}

/* "w:PATH", "r?:PATH": writable or not, optional or not, an absolute path (borrowed from argv). */
static int parse_landlock_rule(const char *s, struct ll_path *l)
{
	if (*s != 'w' && *s != 'r')
		return -1;
	l->writable = *s++ == 'w';
	l->optional = *s == '?';
	if (l->optional)
		s++;
	if (*s++ != ':' || *s != '/')
		return -1;
	l->path = s;
	return 0;
}

/* The options in their one order, then "--" and the command; EINVAL or ERANGE for anything else. */
static int parse_args(char **argv, struct init_args *a)
{
	size_t i = 1;
	for (; argv[i] && strcmp(argv[i], "--rlimit") == 0; i += 2) {
		if (a->nrl == AI_MAX_RLIMITS)
			return ERANGE;
		if (!argv[i + 1] || !parse_rlimit(argv[i + 1], &a->rl[a->nrl].res, &a->rl[a->nrl].rl))
			return EINVAL;
		a->nrl++;
	}
	if (argv[i] && strcmp(argv[i], "--landlock-set") == 0) {
		if (!argv[i + 1] || parse_landlock_set(argv[i + 1], a) < 0)
			return EINVAL;
		for (i += 2; argv[i] && strcmp(argv[i], "--landlock") == 0; i += 2)
			if (!argv[i + 1] || a->spec.npaths == AI_MAX_LANDLOCK ||
			    parse_landlock_rule(argv[i + 1], &a->rules[a->spec.npaths++]) < 0)
				return EINVAL;
	}
	if (argv[i] && strcmp(argv[i], "--exec") == 0) {
		a->exec = true;
		if (argv[++i] && strcmp(argv[i], "--record") == 0) {
			uint64_t fd;
			const char *end;
			if (!argv[i + 1] || !parse_u64(argv[i + 1], 0, &end, &fd) || fd < 3 || fd > INT32_MAX)
				return EINVAL;
			a->record = (int)fd;
			i += 2;
		}
		a->files = &argv[i];
		for (; argv[i] && strcmp(argv[i], "--file") == 0; i += 4, a->nfiles++)
			if (!argv[i + 1] || !argv[i + 2] || !argv[i + 3])
				return EINVAL;
	}
	if (!argv[i] || strcmp(argv[i], "--") != 0 || !argv[i + 1])
		return EINVAL;
	a->cmd = &argv[i + 1];
	return 0;
}

static int set_rlimits(const struct init_args *a)
{
	for (size_t i = 0; i < a->nrl; i++)
		if (setrlimit(a->rl[i].res, &a->rl[i].rl) < 0)
			return errno;
	return 0;
}

static int copy_fd(int in, int out)
{
	char buf[16384];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? errno : EIO;
			off += w;
		}
	}
}

/* SRC (read-only, the bundle's) to a new file DEST of the sandbox user's with octal MODE. */
static int copy_file(char *const f[3])
{
	char *e;
	unsigned long mode = strtoul(f[2], &e, 8);
	if (*e || e == f[2] || mode > 07777)
		return EINVAL;
	int in = open(f[0], O_RDONLY | O_CLOEXEC), out = -1, r = 0;
	if (in < 0 || (out = open(f[1], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		r = errno;
	if (r == 0)
		r = copy_fd(in, out);
	/* the mode exactly, whatever the umask, as the native init writes it */
	if (r == 0 && fchmod(out, (mode_t)mode) < 0)
		r = errno;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return r;
}

static void say(const char *what, const char *arg, int e)
{
	const char *parts[] = {"airlock-init: ", what, arg ? " " : "", arg ? arg : "", ": ", strerror(e), "\n"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		ssize_t w = write(2, parts[i], strlen(parts[i]));
		(void)w;
	}
}

/* --exec's failure: a record where one was asked for (bwrap), else a line on stderr (runsc). */
static _Noreturn void exec_fail(const struct init_args *a, int kind, const char *what, const char *arg, int e)
{
	if (a->record >= 0)
		put_record_to(a->record, kind, e);
	else
		say(what, arg, e);
	_exit(kind == AI_EXEC_FAILED ? 127 : AI_FAIL);
}

/* --exec: files, the ruleset, rlimits, Landlock, then the payload in place of the init. */
static _Noreturn void exec_main(const struct init_args *a)
{
	/* The record's descriptor never reaches the payload: close-on-exec before anything else. */
	if (a->record >= 0 && fcntl(a->record, F_SETFD, FD_CLOEXEC) < 0)
		_exit(AI_FAIL);
	for (size_t i = 0; i < a->nfiles; i++) {
		int e = copy_file(&a->files[4 * i + 1]);
		if (e) {
			say("writing", a->files[4 * i + 2], e); /* runsc's files: no record there */
			_exit(AI_FAIL);
		}
	}
	int ruleset = -1;
	if (a->landlock) {
		struct ll_result res;
		ruleset = ll_build(&a->spec, &res);
		if (ruleset < 0)
			exec_fail(a, AI_LANDLOCK_FAILED, "building the Landlock ruleset", NULL, -ruleset);
	}
	int e = set_rlimits(a);
	if (e)
		exec_fail(a, AI_RLIMIT_FAILED, "setting resource limits", NULL, e);
	/* After the rlimits, as the native payload: the tool's no_new_privs lets us restrict ourselves. */
	int r = ruleset >= 0 ? ll_restrict(ruleset) : 0;
	if (r < 0)
		exec_fail(a, AI_LANDLOCK_FAILED, "enforcing the Landlock ruleset", NULL, -r);
	execvp(a->cmd[0], a->cmd);
	exec_fail(a, AI_EXEC_FAILED, "cannot execute", a->cmd[0], errno);
}

/* The payload's side of the fork: its rlimits, its session, its command. A failure goes to the
 * init as a record of its own through ex (close-on-exec: nothing arrives once execve worked). */
static _Noreturn void child_main(const struct init_args *a, int ex, int ruleset)
{
	int32_t rec[2] = {AI_RLIMIT_FAILED, set_rlimits(a)};
	/* After the rlimits, as the native payload: crun's no_new_privs lets us restrict ourselves. */
	int r = rec[1] == 0 && ruleset >= 0 ? ll_restrict(ruleset) : 0;
	if (r < 0) {
		rec[0] = AI_LANDLOCK_FAILED;
		rec[1] = -r;
	}
	if (rec[1] == 0) {
		setsid(); /* no controlling terminal, as the native payload */
		execvp(a->cmd[0], a->cmd);
		rec[0] = AI_EXEC_FAILED;
		rec[1] = errno;
	}
	ssize_t w = write(ex, rec, sizeof(rec));
	(void)w;
	_exit(127);
}

static _Noreturn void init_main(char **argv)
{
	struct init_args a;
	memset(&a, 0, sizeof(a));
	a.record = -1;
	int e = parse_args(argv, &a);
	if (e == 0 && a.exec)
		exec_main(&a);
	if (getpid() != 1) { /* entered for --exec, but the arguments are not an init's */
		say("arguments", NULL, e);
		_exit(AI_FAIL);
	}
	/* Not dumpable: /proc/1/fd (the record's pipe) stays out of the payload's reach, although
	 * both run as the same user. Close-on-exec: the payload never inherits it. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || fcntl(AI_RECORD_FD, F_SETFD, FD_CLOEXEC) < 0)
		_exit(AI_FAIL);
	if (e) {
		put_record(AI_RLIMIT_FAILED, e);
		_exit(AI_FAIL);
	}
	/* The ruleset is built here, where every path of the container exists (as the native init
	 * builds it after pivot_root), and enforced by the payload alone. */
	int ruleset = -1;
	if (a.landlock) {
		struct ll_result res;
		ruleset = ll_build(&a.spec, &res);
		if (ruleset < 0) {
			put_record(AI_LANDLOCK_FAILED, -ruleset);
			_exit(AI_FAIL);
		}
	}
	int ex[2];
	if (pipe2(ex, O_CLOEXEC) < 0)
		_exit(AI_FAIL);
	pid_t pid = fork();
	if (pid < 0) {
		put_record(AI_EXEC_FAILED, errno);
		_exit(AI_FAIL);
	}
	if (pid == 0) {
		close(ex[0]);
		child_main(&a, ex[1], ruleset);
	}
	close(ex[1]);
	if (ruleset >= 0)
		close(ruleset);
	int32_t rec[2];
	ssize_t n;
	do
		n = read(ex[0], rec, sizeof(rec));
	while (n < 0 && errno == EINTR);
	close(ex[0]);
	if (n == (ssize_t)sizeof(rec)) {
		put_record(rec[0], rec[1]);
		_exit(AI_FAIL);
	}
	/* Reap every process of the container until the payload itself ends; the rest die with
	 * the pid namespace when this init exits, as under the native backend's init. */
	for (;;) {
		int ws;
		pid_t w = waitpid(-1, &ws, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			_exit(AI_FAIL);
		if (w == pid) {
			put_record(AI_EXITED, ws);
			_exit(folded(ws));
		}
	}
}

/* Is "--exec" among the init's options (before "--")? */
static bool wants_exec(char **argv)
{
	for (size_t i = 1; argv[i] && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--exec") == 0)
			return true;
	return false;
}

/* glibc passes argc, argv and envp to the executable's constructors. Priority 101: before
 * any other constructor of the binary. */
__attribute__((constructor(101))) static void ai_enter(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc >= 3 && strcmp(argv[0], AI_PATH) == 0 && strncmp(argv[1], "--", 2) == 0 &&
	    (getpid() == 1 || wants_exec(argv)))
		init_main(argv);
}

/* ---- the backends' side: what starts the init ------------------------------------------- */

const char *ai_path(void)
{
	return AI_PATH;
}

size_t ai_rlimits(const uint64_t *limits, struct ai_rlimit out[AI_MAX_RLIMITS])
{
	static const struct {
		const char *type;
		int res;
		enum al_limit lim;
	} map[AI_MAX_RLIMITS] = {
		{"RLIMIT_CORE", RLIMIT_CORE, AL_LIMIT__COUNT},	{"RLIMIT_CPU", RLIMIT_CPU, AL_LIMIT_CPU_MS},
		{"RLIMIT_FSIZE", RLIMIT_FSIZE, AL_LIMIT_FSIZE}, {"RLIMIT_NOFILE", RLIMIT_NOFILE, AL_LIMIT_NOFILE},
		{"RLIMIT_AS", RLIMIT_AS, AL_LIMIT_AS},		{"RLIMIT_NPROC", RLIMIT_NPROC, AL_LIMIT_NPROC},
	};
	size_t n = 0;
	for (size_t i = 0; i < AI_MAX_RLIMITS; i++) {
		uint64_t soft = 0, hard = 0;
		if (map[i].lim != AL_LIMIT__COUNT) {
			uint64_t v = limits[map[i].lim];
			if (v == AL_UNLIMITED && map[i].lim != AL_LIMIT_FSIZE)
				continue;
			soft = hard = v;
			if (map[i].lim == AL_LIMIT_CPU_MS) {
				soft = (v + 999) / 1000; /* SIGXCPU, then SIGKILL a second later */
				hard = soft + 1;
			}
		}
		struct rlimit cur;
		if (getrlimit(map[i].res, &cur) == 0 && hard > cur.rlim_max)
			hard = cur.rlim_max;
		if (soft > hard)
			soft = hard;
		out[n++] = (struct ai_rlimit){.type = map[i].type, .resource = map[i].res, .soft = soft, .hard = hard};
	}
	return n;
}

int ai_landlock(const struct al_policy *p, struct ll_spec *spec, struct ll_path **paths, int *abi, struct al_error *err)
{
	int v = ll_abi();
	*abi = 0;
	if (v > LL_ABI_MAX)
		v = LL_ABI_MAX;
	if (!p->landlock || v == 0)
		return 0;
	size_t n = 0;
	int r = fs_landlock_spec(p, spec, paths, &n);
	if (r < 0)
		return al_err(err, -r, "setup: Landlock rules: out of memory");
	if (n > AI_MAX_LANDLOCK)
		return al_err(err, E2BIG, "setup: %zu Landlock rules, more than airlock-init takes (%d)", n,
			      AI_MAX_LANDLOCK);
	/* Every rule optional: the tool's layout lacks some of the native one (no /dev/pts without a
	 * terminal), and a rule left out grants nothing, so a missing path only takes access away. */
	for (size_t i = 0; i < n; i++)
		(*paths)[i].optional = true;
	/* The native init reaches the mqueue root with a detached mount (fsopen), which the filter
	 * the tool loads before airlock-init runs may kill: the backend mounts the namespace's mqueue
	 * at /dev/mqueue instead, a path of the layout's rules (bundle.c, bwargs.c). */
	spec->mqueue = false;
	*abi = v;
	return 0;
}

int ai_argv(const struct ai_opts *o, int (*push)(void *ctx, const char *s), void *ctx)
{
	char buf[96];
	int r = push(ctx, AI_PATH);
	for (size_t i = 0; r == 0 && i < o->nrlimits; i++) {
		snprintf(buf, sizeof(buf), "%d:%llu:%llu", o->rlimits[i].resource,
			 (unsigned long long)o->rlimits[i].soft, (unsigned long long)o->rlimits[i].hard);
		r = push(ctx, "--rlimit") ?: push(ctx, buf);
	}
	const struct ll_spec *l = o->landlock;
	if (r == 0 && l) {
		snprintf(buf, sizeof(buf), "%s%s%s-", l->deny_tcp ? "t" : "", l->scope ? "s" : "",
			 l->writes_only ? "w" : "");
		r = push(ctx, "--landlock-set") ?: push(ctx, buf);
	}
	for (size_t i = 0; r == 0 && l && i < l->npaths; i++) {
		char rule[PATH_MAX + 4];
		const struct ll_path *lp = &l->paths[i];
		if (snprintf(rule, sizeof(rule), "%s%s:%s", lp->writable ? "w" : "r", lp->optional ? "?" : "",
			     lp->path) >= (int)sizeof(rule))
			return -ENAMETOOLONG;
		r = push(ctx, "--landlock") ?: push(ctx, rule);
	}
	if (r == 0 && o->exec)
		r = push(ctx, "--exec");
	if (r == 0 && o->exec && o->record_fd >= 0) {
		snprintf(buf, sizeof(buf), "%d", o->record_fd);
		r = push(ctx, "--record") ?: push(ctx, buf);
	}
	return r;
}

int ai_binary(char *path, size_t size, struct al_error *err)
{
	ssize_t n = readlink("/proc/self/exe", path, size - 1);
	if (n < 0 || n >= (ssize_t)size - 1)
		return al_err_sys(err, n < 0 ? errno : ENAMETOOLONG, "setup: the airlock binary for airlock-init");
	path[n] = 0;
	static const char deleted[] = " (deleted)";
	size_t len = (size_t)n;
	if (len >= sizeof(deleted) - 1 && strcmp(path + len - (sizeof(deleted) - 1), deleted) == 0)
		return al_err(err, ENOENT,
			      "setup: the airlock binary %s was replaced or removed while running; airlock-init "
			      "needs it",
			      path);
	return 0;
}

void ai_record_send(int status_fd, const int32_t rec[2], const char *cmd)
{
	if (rec[0] == AI_EXEC_FAILED)
		nat_send(status_fd, NK_ERROR, NS_EXEC, rec[1], 0, cmd);
	else if (rec[0] == AI_RLIMIT_FAILED)
		nat_send(status_fd, NK_ERROR, NS_RLIMIT, rec[1], 0, NULL);
	else if (rec[0] == AI_LANDLOCK_FAILED)
		nat_send(status_fd, NK_ERROR, NS_LANDLOCK, rec[1], 0, "ruleset");
	else
		nat_send(status_fd, NK_ERROR, NS_FORK, EPROTO, 0, "airlock-init sent an unknown record");
}
