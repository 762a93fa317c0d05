/* payload.c — the payload's side, from fork to execve, in DESIGN.md's order: setsid, stdio and no
 * other descriptor, rlimits, no capabilities, the sandbox uid, no_new_privs, Landlock, seccomp last.
 *
 * A held sandbox keeps a spare payload (hold.c) that takes every step not depending on the request
 * ahead of time, seccomp included, then waits on a socket for argv, environment, cwd and its
 * descriptors: an exec then costs a message, a chdir and the execve. Nothing here allocates. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "airlock/airlock.h"
#include "kit/caps.h"
#include "backend/monitor.h"
#include "cgroup/cgroup.h"
#include "child.h"
#include "execmsg.h"
#include "kit/pty.h"
#include "kit/rawsys.h"
#include "kit/rlimits.h"
#include "util/fdpass.h"

#define CHILD_FAIL_EXIT 126

/* A step that failed, reported once the status pipe is known (a spare learns it with the request). */
struct pl_fail {
	enum nat_stage stage;
	int err;
	const char *what;
};

static int fail(struct pl_fail *f, enum nat_stage stage, int err, const char *what)
{
	*f = (struct pl_fail){.stage = stage, .err = err, .what = what};
	return -1;
}

/* fd's number, moved above AL_CODE_FD when it is that one (O_CLOEXEC kept). */
static int off_code_fd(int fd)
{
	return fd == AL_CODE_FD ? fcntl(fd, F_DUPFD_CLOEXEC, AL_CODE_FD + 1) : fd;
}

static void setup_stdio(const struct nat_child *c, int code_fd)
{
	int in = c->stdin_fd;
	if (in < 0 && (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		nat_die(c, NS_STDIO, errno, "/dev/null");
	if (dup2(in, 0) < 0 || dup2(c->stdout_fd, 1) < 0 || dup2(c->stderr_fd, 2) < 0)
		nat_die(c, NS_STDIO, errno, "dup2");
	/* Close every inherited descriptor but the status pipe and the Landlock ruleset,
	 * which close themselves at exec (O_CLOEXEC) or before it, and the program's text. */
	int keep[3] = {c->status_fd, c->landlock_fd, code_fd};
	if (mon_close_all_but(keep, code_fd >= 0 ? 3 : 2) < 0)
		nat_die(c, NS_STDIO, errno, "close_range");
}

/* The program's text at AL_CODE_FD, inherited by the exec (dup2 clears O_CLOEXEC); the status pipe
 * or the ruleset, when either holds that number, moves out of its way first. */
static void place_code(struct nat_child *c, int code_fd)
{
	if (code_fd < 0 || code_fd == AL_CODE_FD) {
		if (code_fd == AL_CODE_FD && fcntl(code_fd, F_SETFD, 0) < 0)
			nat_die(c, NS_STDIO, errno, "the program's descriptor");
		return;
	}
	int st = off_code_fd(c->status_fd), ll = off_code_fd(c->landlock_fd);
	if (st < 0 || (c->landlock_fd >= 0 && ll < 0))
		nat_die(c, NS_STDIO, errno, "moving a descriptor off fd 3");
	c->status_fd = st; /* the old number is overwritten just below */
	c->landlock_fd = ll;
	if (dup2(code_fd, AL_CODE_FD) < 0)
		nat_die(c, NS_STDIO, errno, "the program's descriptor");
	close(code_fd);
}

/*
 * --tty: a pty of the sandbox's own devpts, opened by the payload as its own user (so the slave is
 * the payload's, as a login's terminal is its user's). The master goes to the supervisor over sock
 * and is closed here; the slave becomes stdin, stdout and stderr (setup_stdio), then the
 * controlling terminal (take_terminal). Safe: nothing of the host's terminals is reachable from
 * this devpts, and the supervisor only ever reads and writes the master; TIOCSTI and TIOCLINUX stay
 * refused by the filter (seccomp.c), so the job cannot push input into anything through it.
 */
static int open_terminal(struct nat_child *c, int sock, struct pl_fail *f)
{
	int m, s;
	const char *what;
	int r = pty_open(c->tty_cols, c->tty_rows, &m, &s, &what);
	if (r < 0)
		return fail(f, NS_TTY, -r, what);
	r = al_send_fd(sock, m, 't');
	close(m);
	if (r < 0) {
		close(s);
		return fail(f, NS_TTY, -r, "handing the terminal's master to the supervisor");
	}
	c->stdin_fd = c->stdout_fd = c->stderr_fd = s;
	return 0;
}

/* After setup_stdio, in a session of our own (setsid) that has no terminal yet: the pty on fd 0
 * becomes its controlling terminal, so job control works (a shell's process groups, ^C, ^Z). */
static void take_terminal(const struct nat_child *c)
{
	int r = c->tty ? pty_make_controlling(0) : 0;
	if (r < 0)
		nat_die(c, NS_TTY, -r, "the controlling terminal (TIOCSCTTY)");
}

/* execvp with the sandbox's PATH (execvpe would search the supervisor's). */
static int exec_in_path(const struct nat_child *c)
{
	const char *file = c->argv[0];
	if (strchr(file, '/')) {
		execve(file, c->argv, c->envp);
		return errno;
	}
	char buf[PATH_MAX];
	int err = ENOENT;
	size_t flen = strlen(file);
	for (const char *p = c->path; *p;) {
		const char *e = strchrnul(p, ':');
		size_t dlen = (size_t)(e - p);
		if (dlen + 1 + flen < sizeof(buf)) {
			memcpy(buf, p, dlen);
			buf[dlen] = '/';
			memcpy(buf + dlen + 1, file, flen + 1);
			execve(buf, c->argv, c->envp);
			if (errno != ENOENT && errno != ENOTDIR)
				err = errno; /* like execvp: report EACCES rather than a later ENOENT */
		}
		p = *e ? e + 1 : e;
	}
	return err;
}

/* rlimits, the bounding set, the uid switch, no capabilities left, no_new_privs. */
static int drop_privileges(const struct nat_child *c, struct pl_fail *f)
{
	int r = rl_apply(c->limits);
	if (r < 0)
		return fail(f, NS_RLIMIT, -r, NULL);
	/* Bounding and ambient sets go while we still hold CAP_SETPCAP; the uid switch
	 * then empties the rest, and caps_clear makes sure of it in the single-id mode.
	 * (An unprivileged fallback never had CAP_SETPCAP, nor any capability to bound.) */
	if ((r = caps_drop_bounding()) < 0 && !(c->fallback && r == -EPERM))
		return fail(f, NS_CAPS, -r, "bounding set");
	if (c->drop_groups && raw_setgroups_none() < 0)
		return fail(f, NS_SETUID, errno, "setgroups");
	if (raw_setresgid(c->run_gid, c->run_gid, c->run_gid) < 0 ||
	    raw_setresuid(c->run_uid, c->run_uid, c->run_uid) < 0)
		return fail(f, NS_SETUID, errno, NULL);
	if ((r = caps_clear()) < 0)
		return fail(f, NS_CAPS, -r, "capset");
	if ((r = caps_no_new_privs()) < 0)
		return fail(f, NS_NNP, -r, NULL);
	return 0;
}

/* Landlock, then seccomp: from here on only execve (and a spare's last few calls) run, so the
 * filter need not allow our own setup. */
static int restrict_self(const struct nat_child *c, const char *what, struct pl_fail *f)
{
	umask(022);
	int r;
	if (c->landlock_fd >= 0 && (r = ll_restrict(c->landlock_fd)) < 0)
		return fail(f, NS_LANDLOCK, -r, "landlock_restrict_self");
	if (c->seccomp && c->seccomp->prog.len && (r = sc_load(c->seccomp)) < 0)
		return fail(f, NS_SECCOMP, -r, what);
	return 0;
}

_Noreturn void nat_payload_main(const struct nat_child *init_c)
{
	struct nat_child pc = *init_c, *c = &pc; /* our copy: a terminal replaces the stdio pipes */
	/* A new session: no controlling terminal, so TIOCSTI cannot push input to ours; with --tty
	 * the sandbox's own pty becomes this session's terminal (take_terminal). */
	if (setsid() < 0)
		nat_die(c, NS_SETSID, errno, NULL);
	mon_reset_signals();
	struct pl_fail f = {0};
	/* The terminal is opened as the payload's user: the privileges go first. */
	if (c->tty && (drop_privileges(c, &f) < 0 || open_terminal(c, c->tty_sock, &f) < 0))
		nat_die(c, f.stage, f.err, f.what);
	setup_stdio(c, -1);
	take_terminal(c);
	if (!c->tty && drop_privileges(c, &f) < 0)
		nat_die(c, f.stage, f.err, f.what);
	if (chdir(c->cwd) < 0)
		nat_die(c, NS_CHDIR, errno, c->cwd);
	if (restrict_self(c, c->argv[0], &f) < 0)
		nat_die(c, f.stage, f.err, f.what);
	nat_die(c, NS_EXEC, exec_in_path(c), c->argv[0]);
}

_Noreturn void nat_spare_payload(struct nat_child *c, int sock)
{
	struct pl_fail f = {0};
	/* /dev/null now: after Landlock it may not be openable, and most requests have no stdin. */
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0)
		fail(&f, NS_STDIO, errno, "/dev/null");
	if (setsid() < 0 && !f.stage)
		fail(&f, NS_SETSID, errno, NULL);
	/* No mon_reset_signals: every disposition is the default and nothing is blocked, as the
	 * sandbox's init left them for its exec inits (nat_hold_main), and the exec init's SIGCHLD
	 * is back to the default before it forked us (spare_init_main). */
	int keep[4] = {sock, null_fd, c->landlock_fd, c->status_fd};
	if (mon_close_all_but(keep, 4) < 0 && !f.stage)
		fail(&f, NS_STDIO, errno, "close_range");
	if (!f.stage && drop_privileges(c, &f) == 0)
		restrict_self(c, "seccomp filter", &f);
	/* Static: init's stack is small, and this process is a copy of init's memory anyway. */
	static char buf[NX_MAX_MSG];
	static struct nx_view v;
	int fds[CG_JOIN_MAX], nfds = 0;
	ssize_t n;
	for (;;) {
		n = al_recv_msg(sock, buf, sizeof(buf), fds, CG_JOIN_MAX, &nfds, true);
		if (n <= 0)
			_exit(0); /* never used: the sandbox (or this spare) is going away */
		struct nx_join j;
		if (n != (ssize_t)sizeof(j) || nfds > CG_JOIN_MAX)
			break;
		memcpy(&j, buf, sizeof(j));
		if (j.magic != NX_JOIN_MAGIC)
			break;
		/* This exec's cgroup (v1): we move ourselves in, the only thread of the only process
		 * that will run the request (our exec init waits in vfork until our execve). */
		int r = cg_join_self(fds, nfds);
		if (r < 0 && !f.stage)
			fail(&f, NS_CGROUP, -r, "the exec's cgroups (writing 0 to tasks)");
	}
	/* Only the manager holds the other end; anything malformed is not ours to run. */
	int dr = nx_decode(buf, (size_t)n, &v);
	int want = 2 + !!(v.flags & NX_STDIN) + !!(v.flags & NX_CODE); /* NX_TTY: none for stdin */
	if (dr < 0 || nfds != want)
		nat_die(c, NS_STDIO, EPROTO, "exec request");
	c->stdout_fd = fds[0];
	c->stderr_fd = fds[1];
	c->stdin_fd = (v.flags & NX_STDIN) ? fds[2] : null_fd;
	int code_fd = (v.flags & NX_CODE) ? fds[want - 1] : -1;
	c->argv = v.argv;
	c->envp = v.envp;
	c->path = nx_env_path(v.envp);
	c->cwd = v.cwd;
	c->tty = v.flags & NX_TTY;
	c->tty_cols = v.cols;
	c->tty_rows = v.rows;
	if (f.stage || (c->tty && open_terminal(c, sock, &f) < 0))
		nat_die(c, f.stage, f.err, f.what);
	setup_stdio(c, code_fd); /* also closes the socket and /dev/null */
	take_terminal(c);	 /* our setsid above made a session without one */
	place_code(c, code_fd);
	if (chdir(c->cwd) < 0)
		nat_die(c, NS_CHDIR, errno, c->cwd);
	nat_die(c, NS_EXEC, exec_in_path(c), c->argv[0]);
}
