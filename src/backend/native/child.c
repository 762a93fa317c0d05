/* child.c — init and payload: everything between clone3 and execve. Allocates nothing, formats nothing;
 * a failure becomes one nat_record on the status pipe and _exit. */
#include "backend/monitor.h"
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "kit/caps.h"
#include "kit/channel.h"
#include "kit/mnt.h"
#include "kit/net.h"
#include "policy/policy.h"
#include "kit/rawsys.h"
#include "kit/rlimits.h"
#include "util/fdpass.h"

#define CHILD_FAIL_EXIT 126

_Noreturn void nat_die(const struct nat_child *c, enum nat_stage stage, int err, const char *what)
{
	nat_send(c->status_fd, NK_ERROR, stage, err, 0, what);
	_exit(CHILD_FAIL_EXIT);
}

/* init starts with a copy of every descriptor of the supervisor (which may be a library
 * user with descriptors of its own): keep only the five it needs. */
static void close_inherited(const struct nat_child *c)
{
	int keep[8] = {c->sync_fd,    c->status_fd, c->stdin_fd,
		       c->stdout_fd,  c->stderr_fd, c->plan ? c->plan->sendfd_sock : -1,
		       c->proxy_sock, c->ctl_sock};
	if (mon_close_all_but(keep, 8) < 0)
		nat_die(c, NS_STDIO, errno, "close_range");
}

/* The payload's Landlock ruleset, built by init once the sandbox's paths exist; mq_fd (or -1)
 * is the IPC namespace's mqueue mount for its rule (see build_root). */
static void build_landlock(struct nat_child *c, int mq_fd)
{
	if (!c->landlock)
		return;
	struct ll_result res;
	int fd = ll_build_mq(c->landlock, mq_fd, &res);
	if (fd < 0)
		nat_die(c, NS_LANDLOCK, -fd, res.failed_path ? res.failed_path : "ruleset");
	c->landlock_fd = fd;
}

/* The egress proxy's socket is made here, in the sandbox's network namespace, and served by
 * the supervisor from the host's: no veth, no route, no helper process. */
static void start_proxy_socket(struct nat_child *c)
{
	const char *what;
	int r = mon_hand_proxy_socket(c->proxy_sock, c->capture, &what);
	if (r < 0)
		nat_die(c, NS_NET, -r, what);
	close(c->proxy_sock);
	c->proxy_sock = -1;
}

/* The job's network namespace is made beside init rather than by the supervisor's clone3: making
 * one (its per-namespace sysctl tables, registering lo) is ~0.36 ms of that clone3's ~0.52 ms here,
 * and init needs it only once its root is built. So a helper makes it, and brings lo up, on the
 * other CPU while init opens its sources, waits for its id maps and builds the root. The helper
 * shares init's memory and descriptor table (CLONE_VM | CLONE_FILES: no copy of a supervisor-sized
 * address space to make or to tear down), runs on a stack of its own, and only makes system calls
 * (the only state of ours it can touch is errno, and only when it fails, which fails the start).
 * Being init's child, it is in the job's user namespace, so the namespace it makes is owned by that
 * user namespace exactly as clone3's was; init joins it (setns) after pivot_root, before anything
 * that uses the network (the proxy's socket) and before the payload exists. */
static char netns_stack[16384] __attribute__((aligned(16)));
static int netns_result = -EINPROGRESS; /* the helper's answer: a namespace descriptor or -errno */

static int netns_helper(void *arg)
{
	(void)arg;
	__atomic_store_n(&netns_result, net_new_ns_lo_up(), __ATOMIC_RELEASE);
	return 0;
}

/* Returns the helper's pid, or 0 when the posture has no network namespace of its own. */
static pid_t netns_start(const struct nat_child *c)
{
	if (!c->lo_up)
		return 0;
	/* Its exit must leave a zombie to wait for, whatever disposition we inherited. */
	signal(SIGCHLD, SIG_DFL);
	pid_t pid = clone(netns_helper, netns_stack + sizeof(netns_stack), CLONE_VM | CLONE_FILES | SIGCHLD, NULL);
	if (pid < 0)
		nat_die(c, NS_NET, errno, "starting the network namespace's helper");
	return pid;
}

static void netns_join(const struct nat_child *c, pid_t helper)
{
	if (helper <= 0)
		return;
	int st;
	pid_t w;
	while ((w = waitpid(helper, &st, __WALL)) < 0 && errno == EINTR)
		;
	if (w != helper)
		nat_die(c, NS_NET, errno, "waiting for the network namespace's helper");
	int fd = __atomic_load_n(&netns_result, __ATOMIC_ACQUIRE);
	if (fd < 0)
		nat_die(c, NS_NET, fd == -EINPROGRESS ? ECHILD : -fd, "a network namespace with lo up");
	if (setns(fd, CLONE_NEWNET) < 0)
		nat_die(c, NS_NET, errno, "joining the network namespace");
	close(fd);
}

static void build_root(struct nat_child *c, pid_t netns_helper_pid)
{
	struct mnt_fail f = {0};
	/* The mqueue mount for Landlock's rule is made before the root and goes with the old root
	 * (mnt_enter_root): one RCU grace period fewer on the way to the payload. */
	int mq = c->landlock && c->landlock->mqueue ? ll_mqueue_mount() : -1;
	int rootfd = mnt_enter_root(c->staging, mq, &f);
	if (rootfd < 0 || mnt_apply(c->plan, rootfd, &f) < 0)
		nat_die(c, f.stage, f.err, f.what);
	close(rootfd);
	if (c->plan->sendfd_sock >= 0)
		close(c->plan->sendfd_sock);
	if (mnt_pivot(&f) < 0)
		nat_die(c, f.stage, f.err, f.what);
	if (sethostname(c->hostname, strlen(c->hostname)) < 0)
		nat_die(c, NS_HOSTNAME, errno, c->hostname);
	netns_join(c, netns_helper_pid);
	if (c->proxy_sock >= 0)
		start_proxy_socket(c);
	mnt_close_sources(c->plan);
	build_landlock(c, mq);
	if (mq >= 0)
		close(mq);
}

/* Forks the payload; init keeps only the status pipe (the output pipes are the payload's). */
static pid_t start_payload(const struct nat_child *c)
{
	/* Not dumpable: the payload (same uid in single-id mode) cannot ptrace init. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGCHLD, SIG_DFL);
	pid_t pid = raw_fork();
	if (pid < 0)
		nat_die(c, NS_FORK, errno, NULL);
	if (pid == 0)
		nat_payload_main(c); /* resets every signal disposition */
	close(c->stdout_fd);
	close(c->stderr_fd);
	if (c->stdin_fd >= 0)
		close(c->stdin_fd);
	/* The payload holds its own copy for its terminal's master: once it is gone, without having
	 * sent one, the supervisor's wait for it ends (native.c, take_terminal). */
	if (c->tty_sock >= 0)
		close(c->tty_sock);
	return pid;
}

/* init is a copy of the supervisor, so /proc/1/cmdline would show the job airlock's own
 * command line (host paths, --env values). Overwrite it in place: the kernel reads cmdline from
 * this memory (arg_start..arg_end, fields 48-49 of /proc/self/stat). Best effort, no allocation. */
static void hide_cmdline(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the comm field may hold blanks */
	unsigned long v[2] = {0, 0};
	for (int field = 2; p && *p && field < 49;) {
		p = strchr(p, ' ');
		if (!p)
			return;
		field++;
		p++;
		if (field >= 48)
			v[field - 48] = strtoul(p, NULL, 10);
	}
	if (v[0] == 0 || v[1] <= v[0] || v[1] - v[0] > (1ul << 20))
		return;
	static const char name[] = "airlock-init";
	size_t len = v[1] - v[0];
	/* The area's last byte stays 0: without it the kernel reads the command line on into the
	 * environment (as for setproctitle), and ps showed "airlock-initHOME=/root" where the
	 * supervisor's own was shorter ("airlock mcp"); the name is cut to fit instead. */
	size_t k = len - 1 < sizeof(name) - 1 ? len - 1 : sizeof(name) - 1;
	memset((void *)v[0], 0, len);  /* NOLINT(performance-no-int-to-ptr): the kernel's own address */
	memcpy((void *)v[0], name, k); /* NOLINT(performance-no-int-to-ptr) */
}

/* Waits until the supervisor has moved us into the job's cgroups (it does so while we build the
 * root, see native.c), then starts the cgroup namespace, so the job sees its own cgroup as the
 * root. Before the payload's fork: the payload is born in every cgroup, under every limit. */
static void join_cgroups(const struct nat_child *c)
{
	char tag;
	int fds[CG_JOIN_MAX];
	int n = al_recv_fds(c->sync_fd, fds, CG_JOIN_MAX, &tag, true);
	if (n < 0 || tag != 'c')
		_exit(CHILD_FAIL_EXIT); /* the supervisor gave up (a cgroup failed); it reports why */
	if (c->sync_fd != c->tty_sock)	/* else the payload's way to send its terminal (start_payload) */
		close(c->sync_fd);
	/* v1: we are alone (the network helper is reaped) and have one thread, so moving this
	 * thread moves the job; the files are closed before anything of the payload runs. */
	int r = cg_join_self(fds, n);
	if (r < 0)
		nat_die(c, NS_CGROUP, -r, "the job's cgroups (writing 0 to tasks)");
	if (unshare(CLONE_NEWCGROUP) < 0)
		nat_die(c, NS_CGROUPNS, errno, NULL);
}

/* The job's own cgroups, read-only at /sys/fs/cgroup: only now, inside the cgroup namespace
 * whose root is the job's cgroup, does a cgroup mount show that cgroup and nothing above it
 * (cgroup/view.c). Whatever the kernel refuses is left out, never fatal. Landlock needs no rule
 * of its own: its rule for / lets the payload read there and grants no write. */
static void show_cgroups(const struct nat_child *c)
{
	if (c->plan->cgroup_view)
		(void)cg_view_mount(&c->cgview, FS_CGROUP_VIEW);
}

_Noreturn void nat_child_main(struct nat_child *c)
{
	/* If the supervisor dies, init dies, and with it every process of the namespace. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* Every directory, file and tmpfs of the layout states its mode (fsplan.c, mnt.c): the
	 * caller's umask (077 in hardened units) must not strip them, or the payload could not
	 * read /etc. The payload sets its own umask (payload.c). */
	umask(0);
	close_inherited(c);
	pid_t netns_pid = netns_start(c);
	hide_cmdline();
	struct mnt_fail f = {0};
	/* Sources are opened now, with the caller's access rights, before becoming sandbox root. */
	if (mnt_open_sources(c->plan, &f) < 0)
		nat_die(c, f.stage, f.err, f.what);
	char go;
	if (read(c->sync_fd, &go, 1) != 1)
		_exit(CHILD_FAIL_EXIT); /* the supervisor gave up; it reports why */
	int r = uns_enter(&c->map);
	if (r < 0)
		nat_die(c, NS_CREDS, -r, NULL);
	/* Becoming sandbox root changed our credentials, and the kernel clears the parent-death
	 * signal on such a change: arm it again. A supervisor that died in between is caught by
	 * the lifeline (nat_reap_payload), which does not depend on it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	build_root(c, netns_pid);
	join_cgroups(c);
	show_cgroups(c);
	if (c->ctl_sock >= 0)
		nat_hold_main(c); /* a held sandbox: payloads come one request at a time */
	nat_run_payload(c);
}

_Noreturn void nat_run_payload(struct nat_child *c)
{
	nat_reap_payload(c, start_payload(c));
}

static void on_sigchld(int sig)
{
	(void)sig; /* only to interrupt ppoll */
}

/* The lifeline: only the supervisor holds the read end of the status pipe, so our write end
 * reports POLLERR once it is gone, however it went (SIGKILL, a crash, a re-parent): unlike the
 * parent-death signal, no credential change, setsid or exec of ours can disarm it. */
static bool supervisor_gone(int status_fd, const sigset_t *wait_mask)
{
	struct pollfd pfd = {.fd = status_fd, .events = 0};
	int n = ppoll(&pfd, 1, NULL, wait_mask);
	return n > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL));
}

/* The payload is reaped: whatever it left behind in our pid namespace is killed and reaped too
 * before its status goes out, so that a reader of the status record (a held sandbox's exec is over
 * when it arrives) knows nothing of the job runs any more, without waiting for our own exit (the
 * teardown of our address space, 0.2-0.4 ms here, had been on every held exec's path). Every process
 * of the namespace descends from us, its orphans reparented to us: so no child (ECHILD) means none
 * is left, and one kill(-1) reaches them all (the kernel refuses a fork whose parent has a fatal
 * signal pending, so none escapes it). Only as pid 1: kill(-1) anywhere else would reach far more. */
static void empty_pidns(void)
{
	if (getpid() != 1)
		return; /* the kernel empties the namespace at our exit, as before */
	bool killed = false;
	for (;;) {
		pid_t w = waitpid(-1, NULL, __WALL | (killed ? 0 : WNOHANG));
		if (w > 0 || (w < 0 && errno == EINTR))
			continue;
		if (w < 0)
			return; /* ECHILD: nothing else lives in the namespace */
		kill(-1, SIGKILL);
		killed = true;
	}
}

_Noreturn void nat_reap_payload(const struct nat_child *c, pid_t pid)
{
	/* SIGCHLD stays blocked except inside ppoll, so no exit slips between a wait4 and the
	 * wait for the next event. */
	sigset_t chld, wait_mask;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &wait_mask);
	sigdelset(&wait_mask, SIGCHLD);
	struct sigaction sa = {.sa_handler = on_sigchld};
	sigaction(SIGCHLD, &sa, NULL);
	for (;;) {
		int st;
		struct rusage ru;
		pid_t w;
		while ((w = wait4(-1, &st, WNOHANG, &ru)) > 0) {
			if (w != pid)
				continue; /* an orphan of the payload's: reaped, so its pid is free */
			empty_pidns();
			nat_send_exit(c->status_fd, st, &ru);
			_exit(0);
		}
		if (w < 0 && errno != EINTR)
			nat_die(c, NS_FORK, errno, "waitpid");
		if (supervisor_gone(c->status_fd, &wait_mask))
			_exit(0); /* nobody to report to: our exit ends every process of the namespace */
	}
}

/* ---- the fallback without namespaces ------------------------------------------------- */

/* Kills every descendant: as a subreaper, init inherits each orphan, so what is not its
 * child now becomes its child once its parent is reaped. Loops until none is left. */
static void fb_kill_descendants(void)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
		ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		if (len <= 0)
			break;
		buf[len] = 0;
		for (char *p = buf; *p;) {
			long pid = strtol(p, &p, 10);
			if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
				n++;
			while (*p == ' ' || *p == '\n')
				p++;
		}
		for (int i = 0; i < n; i++)
			waitpid(-1, NULL, 0);
	}
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

_Noreturn void nat_fallback_main(struct nat_child *c)
{
	/* SIGTERM, not SIGKILL, on the supervisor's death (armed by fb_start): init must outlive the kill long
	 * enough to take every descendant with it (there is no pid namespace to do it). Both
	 * signals stay blocked and are taken with sigwaitinfo, so none can slip between a
	 * check and a wait; the payload unblocks everything (reset_signals). */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* Its own session: a terminal's ^C must not kill init and orphan the job. */
	setsid();
	close_inherited(c);
	char go;
	if (read(c->sync_fd, &go, 1) != 1)
		_exit(CHILD_FAIL_EXIT);
	close(c->sync_fd);
	build_landlock(c, -1);
	pid_t pid = start_payload(c);
	for (;;) {
		if (sigwaitinfo(&set, NULL) == SIGTERM) {
			fb_kill_descendants();
			_exit(0);
		}
		int st;
		pid_t w;
		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			if (w != pid)
				continue;
			fb_kill_descendants();
			nat_send(c->status_fd, NK_EXITED, NS_NONE, 0, st, NULL);
			_exit(0);
		}
	}
}
