/* bwchild.c — the bwrap backend's monitor and bwrap's exec: everything between clone3 and execve. Allocates
 * nothing, formats nothing; failures become one nat_record on the status pipe. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "kit/net.h"
#include "bwrap.h"
#include "util/cleanup.h"
#include "util/fsutil.h"

#define BW_FAIL_EXIT 126

static _Noreturn void die(const struct bw_child *c, enum nat_stage stage, int err, const char *what)
{
	nat_send(c->status_fd, NK_ERROR, stage, err, 0, what);
	_exit(BW_FAIL_EXIT);
}

/* bwrap gets stdio, its status pipe and the descriptors named on its command line, which
 * lose O_CLOEXEC here: nothing else of the supervisor's reaches it or the sandbox. */
static void bwrap_fds(const struct bw_child *c)
{
	int in = c->stdin_fd;
	if (in < 0 && (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		die(c, NS_STDIO, errno, "/dev/null");
	if (dup2(in, 0) < 0 || dup2(c->stdout_fd, 1) < 0 || dup2(c->err_w, 2) < 0)
		die(c, NS_STDIO, errno, "dup2");
	int keep[BW_MAX_PASS + 3] = {c->json_w, c->status_fd, c->proxy_sock};
	size_t n = 3;
	for (size_t i = 0; i < c->npass && n < AL_ARRAY_SIZE(keep); i++)
		keep[n++] = c->pass_fds[i];
	if (mon_close_all_but(keep, n) < 0)
		die(c, NS_STDIO, errno, "close_range");
	/* The status pipe and the proxy socket stay O_CLOEXEC: they are ours, not bwrap's. */
	for (size_t i = 0; i < n; i++)
		if (keep[i] != c->status_fd && keep[i] != c->proxy_sock && keep[i] >= 0 &&
		    fcntl(keep[i], F_SETFD, 0) < 0)
			die(c, NS_STDIO, errno, "fcntl");
}

/* An ordinary user makes the network namespace inside a user namespace of its own that maps
 * only itself (so bwrap, its child, still runs as the caller and maps the sandbox user to it). */
static void own_userns(const struct bw_child *c)
{
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		die(c, NS_NET, errno, "a network namespace for the egress proxy");
	bool in_maps;
	int r = mon_map_self(uid, uid, gid, &in_maps);
	if (r < 0)
		die(c, NS_CREDS, -r, in_maps ? "the id maps of the egress proxy's namespace" : "/proc/self/setgroups");
}

/* The allowlist posture: the proxy's listening socket must live in the job's network
 * namespace, and bwrap gives no way to reach into the one it makes. So the namespace is made
 * here, lo raised, the socket handed to the supervisor, and bwrap runs inside it. As root the
 * namespace belongs to the host's user namespace, where the payload holds nothing. */
static void proxy_netns(const struct bw_child *c)
{
	if (c->proxy_sock < 0)
		return;
	if (!c->drop_ids)
		own_userns(c);
	else if (unshare(CLONE_NEWNET) < 0)
		die(c, NS_NET, errno, "a network namespace for the egress proxy");
	const char *what = "lo";
	int r = net_lo_up();
	if (r < 0 || (r = mon_hand_proxy_socket(c->proxy_sock, c->capture, &what)) < 0)
		die(c, NS_NET, -r, what);
	close(c->proxy_sock);
}

/* bwrap's process: identity first, inherited by bwrap and the sandbox. The job's rlimits are the
 * payload's, set by airlock-init just before its exec (ainit.c says why); only RLIMIT_CORE 0 is
 * everyone's here, so neither bwrap nor the init ever dumps core. */
static _Noreturn void exec_bwrap(const struct bw_child *c, pid_t monitor)
{
	mon_reset_signals();
	bwrap_fds(c);
	const struct rlimit no_core = {0, 0};
	if (setrlimit(RLIMIT_CORE, &no_core) < 0)
		die(c, NS_RLIMIT, errno, NULL);
	proxy_netns(c);
	/* As root, bwrap would map the sandbox user to host root. Running it as the
	 * unprivileged id_base+1000 instead, bwrap maps the sandbox user to that uid: whatever
	 * escapes the sandbox is an unprivileged host user with no groups. Raw system calls:
	 * glibc's wrappers would broadcast the change to the supervisor's threads, which exist
	 * only in its copy of memory here (we are a raw clone, single-threaded). */
	if (c->drop_ids &&
	    (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, c->run_gid, c->run_gid, c->run_gid) < 0 ||
	     syscall(SYS_setresuid, c->run_uid, c->run_uid, c->run_uid) < 0))
		die(c, NS_SETUID, errno, "bwrap's uid");
	/* bwrap sets no_new_privs itself; set here it also covers bwrap's own exec. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(c, NS_NNP, errno, NULL);
	/* After the uid switch (which clears it): bwrap dies with the monitor, and its
	 * --die-with-parent takes the sandbox along. */
	if (!mon_tie_to(monitor, SIGKILL))
		_exit(BW_FAIL_EXIT);
	/* bwrap makes its directories and files with its own default modes (0755, 0644 where no
	 * --perms says otherwise) less the umask, and the payload inherits the umask: 022, as the
	 * native payload has, whatever the caller's (077 would leave /etc unreadable, 000 writable). */
	umask(022);
	static char *const empty_env[] = {NULL};
	execve(BW_PATH, c->argv, empty_env);
	die(c, NS_FORK, errno, "exec " BW_PATH);
}

/* The JSON reports are tiny; when the buffer fills, the older half goes (the exit code,
 * written last, is what matters). */
static void keep_json(char *json, size_t size, size_t *len, const char *buf, size_t n)
{
	if (n > size / 2) {
		buf += n - size / 2;
		n = size / 2;
	}
	if (*len + n > size) {
		memmove(json, json + *len - size / 2, size / 2);
		*len = size / 2;
	}
	memcpy(json + *len, buf, n);
	*len += n;
}

struct bw_seen {
	char json[1024];
	size_t json_len;
	struct bw_errscan scan;
	size_t scanned; /* stderr bytes the scanner saw */
	bool copy_only; /* splice refused: read and write instead */
	bool out_gone;	/* the job's stderr pipe refused a write */
};

/* bwrap's own messages are short and come before the command starts: once this much of
 * stderr went by, the command ran, and the rest moves pipe to pipe without a copy. */
#define BW_SCAN_MAX 65536

/* One readiness of bwrap's stderr; false at its end. */
static bool relay_err(const struct bw_child *c, struct bw_seen *seen)
{
	if (seen->scanned >= BW_SCAN_MAX && !seen->copy_only && !seen->out_gone) {
		ssize_t n = splice(c->err_r, NULL, c->stderr_fd, NULL, 1 << 20, 0);
		if (n >= 0 || errno == EINTR || errno == EAGAIN)
			return n != 0;
		seen->out_gone = errno == EPIPE;
		seen->copy_only = !seen->out_gone;
	}
	char buf[16384];
	ssize_t n = read(c->err_r, buf, sizeof(buf));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	if (seen->scanned < BW_SCAN_MAX) {
		bw_errscan_feed(&seen->scan, buf, (size_t)n);
		seen->scanned += (size_t)n;
	}
	/* Once the supervisor stopped reading (EPIPE), the rest is drained and dropped. */
	if (!seen->out_gone)
		seen->out_gone = al_write_all(c->stderr_fd, buf, (size_t)n) < 0;
	return true;
}

static bool relay_json(const struct bw_child *c, struct bw_seen *seen)
{
	char buf[512];
	ssize_t n = read(c->json_r, buf, sizeof(buf));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n > 0)
		keep_json(seen->json, sizeof(seen->json), &seen->json_len, buf, (size_t)n);
	return n > 0;
}

/* Until bwrap and the sandbox are gone: bwrap's stderr to the job's (remembering bwrap's own
 * messages), its JSON status to a buffer. */
static void relay(const struct bw_child *c, struct bw_seen *seen)
{
	struct pollfd pf[2] = {{.fd = c->json_r, .events = POLLIN}, {.fd = c->err_r, .events = POLLIN}};
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			if (!(i == 0 ? relay_json(c, seen) : relay_err(c, seen))) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
	}
	bw_errscan_end(&seen->scan);
}

/* As a subreaper the monitor inherits the sandbox's pid 1 when bwrap exits: reaping every
 * descendant means the sandbox is gone, and their CPU time counts in our rusage. */
static int reap_all(pid_t bwrap)
{
	int ws, bwrap_ws = -1;
	for (;;) {
		pid_t w = waitpid(-1, &ws, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return bwrap_ws;
		if (w == bwrap)
			bwrap_ws = ws;
	}
}

/* airlock-init's record, if it failed before the payload's exec: every writer is reaped by now
 * (bwrap's pid 1 closed its copy at once, the init's was close-on-exec), so this never blocks. */
static bool init_record(const struct bw_child *c, int32_t rec[2])
{
	ssize_t n;
	do
		n = read(c->rec_r, rec, 2 * sizeof(rec[0]));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)(2 * sizeof(rec[0]));
}

static _Noreturn void report(const struct bw_child *c, const struct bw_seen *seen, int bwrap_ws)
{
	int code;
	int32_t rec[2];
	if (init_record(c, rec))
		/* The command never ran: a setup failure, as bwrap's own exec failures were. */
		ai_record_send(c->status_fd, rec, c->cmd);
	else if (bw_json_exit_code(seen->json, seen->json_len, &code))
		nat_send(c->status_fd, NK_EXITED, NS_NONE, 0, bw_wstatus(code), NULL);
	else if (bwrap_ws >= 0 && WIFSIGNALED(bwrap_ws))
		/* bwrap itself was killed (the OOM killer, a kill from outside): so was the sandbox */
		nat_send(c->status_fd, NK_EXITED, NS_NONE, 0, bwrap_ws, NULL);
	else if (seen->scan.last[0]) {
		/* The payload never ran (bwrap reports its exit code only after the exec), so every
		 * "bwrap: " line on stderr was bwrap's own. */
		enum nat_stage stage;
		int err;
		bw_classify(seen->scan.last, &stage, &err);
		nat_send(c->status_fd, NK_ERROR, stage, err, 0, stage == NS_EXEC ? c->cmd : seen->scan.last);
	} else {
		nat_send(c->status_fd, NK_ERROR, NS_FORK, EPROTO, 0, "bwrap ended without reporting the command's end");
	}
	_exit(0);
}

/* Set by SIGTERM (the supervisor's kill, or its death): from then on every child is killed. */
static volatile sig_atomic_t stopping;

/* SIGKILL to every child of ours, from a signal handler: no allocation, no formatting. */
static void kill_children(void)
{
	int saved = errno;
	char buf[4096];
	int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	long pid = 0;
	for (const char *p = buf;; p++) {
		if (*p >= '0' && *p <= '9') {
			pid = pid * 10 + (*p - '0');
			continue;
		}
		if (pid > 0)
			kill((pid_t)pid, SIGKILL);
		pid = 0;
		if (!*p)
			break;
	}
	errno = saved;
}

/* bwrap's --die-with-parent is armed by bwrap itself, some time after its start: killing bwrap
 * before then would orphan the sandbox's pid 1. So a stop kills our children, and as a subreaper
 * we inherit bwrap's orphans the moment bwrap dies, before the SIGCHLD that says so arrives: each
 * SIGCHLD then kills them too. No parent-death signal has to be armed in time for this to hold. */
static void on_signal(int sig)
{
	if (sig == SIGTERM)
		stopping = 1;
	if (stopping)
		kill_children();
}

static void take_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	/* A copy of the supervisor, whose front end blocks its own stop signals. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

_Noreturn void bw_monitor_main(const struct bw_child *c)
{
	/* The supervisor's end (its kill, or its death: SIGTERM, armed by mon_start) is the job's
	 * end: see on_signal. */
	take_stop_signals();
	int keep[BW_MAX_PASS + 11] = {c->sync_fd, c->status_fd, c->stdin_fd, c->stdout_fd,  c->stderr_fd, c->json_r,
				      c->json_w,  c->err_r,	c->err_w,    c->proxy_sock, c->rec_r};
	size_t n = 11;
	for (size_t i = 0; i < c->npass && n < AL_ARRAY_SIZE(keep); i++)
		keep[n++] = c->pass_fds[i];
	if (mon_close_all_but(keep, n) < 0)
		die(c, NS_STDIO, errno, "close_range");
	char go;
	if (read(c->sync_fd, &go, 1) != 1)
		_exit(BW_FAIL_EXIT); /* the supervisor gave up; it reports why */
	close(c->sync_fd);
	signal(SIGPIPE, SIG_IGN); /* a supervisor that stops reading must not kill the monitor */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* A raw clone, not fork(): glibc's fork runs atfork handlers and takes malloc's locks,
	 * which another thread of the supervisor may have held when we were cloned. */
	pid_t self = getpid(), pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0)
		die(c, NS_FORK, errno, "bwrap");
	if (pid == 0)
		exec_bwrap(c, self);
	/* A stop that came before bwrap existed found no child to kill: bwrap goes now. (One after
	 * the clone finds it among our children.) */
	if (stopping)
		kill_children();
	/* The monitor keeps only the read ends and the job's stderr (for the relay). */
	close(c->json_w);
	close(c->err_w);
	close(c->stdout_fd);
	if (c->stdin_fd >= 0)
		close(c->stdin_fd);
	if (c->proxy_sock >= 0)
		close(c->proxy_sock);
	for (size_t i = 0; i < c->npass; i++)
		close(c->pass_fds[i]);
	struct bw_seen seen;
	memset(&seen, 0, sizeof(seen));
	relay(c, &seen);
	close(c->stderr_fd);
	report(c, &seen, reap_all(pid));
}
