/* ocichild.c — the OCI backends' monitor and the runtime's exec: everything between clone3 and execve. Allocates
 * nothing, formats nothing; failures become one nat_record on the status pipe. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "kit/net.h"
#include "bundle.h"
#include "util/cleanup.h"

#define OCI_FAIL_EXIT 126

static _Noreturn void die(const struct oci_child *c, enum nat_stage stage, int err, const char *what)
{
	nat_send(c->status_fd, NK_ERROR, stage, err, 0, what);
	_exit(OCI_FAIL_EXIT);
}

/* The runtime's pid, for the SIGTERM handler (the supervisor's kill_signal). */
static volatile pid_t runtime_pid;

/* The deadline or the end of the supervisor: the runtime is pid 1 of its pid namespace, so
 * SIGKILL to it ends every process of the sandbox (gVisor's sentry and gofer too). */
static void on_term(int sig)
{
	(void)sig;
	if (runtime_pid > 0)
		kill(runtime_pid, SIGKILL);
	else
		_exit(OCI_FAIL_EXIT);
}

/* The runtime's surroundings, made by the monitor for itself and its one child:
 *  - an ordinary caller gets a user namespace in which it is 0 (so crun and runsc run as
 *    "root" of it, and map the sandbox user to hostID 0 there: the caller);
 *  - a mount namespace, private, for the runtime's own /proc and the cgroup mask: the runtime's
 *    alone (exec_runtime), never the monitor's. A runtime killed while it sets the container up
 *    leaves mounts over the bundle in its namespace; had the monitor shared it, those would make
 *    its removal of the bundle directory fail (EBUSY), leaving the directory on the host;
 *  - a pid namespace whose pid 1 is the runtime: when the runtime ends, the kernel kills
 *    everything else of the job, containers and gVisor's processes included;
 *  - for the egress proxy, a network namespace with lo up whose listening socket goes to
 *    the supervisor; the container keeps it (it asks for no network namespace of its own). */
static void surroundings(const struct oci_child *c)
{
	int flags = CLONE_NEWPID | (c->proxy_sock >= 0 ? CLONE_NEWNET : 0), r;
	if (!c->root) {
		if (unshare(CLONE_NEWUSER | flags) < 0)
			die(c, NS_CREDS, errno, "a user namespace for the runtime");
		bool in_maps;
		if ((r = mon_map_self(0, (unsigned)c->uid, (unsigned)c->gid, &in_maps)) < 0)
			die(c, NS_CREDS, -r,
			    in_maps ? "the id maps of the runtime's namespace" : "/proc/self/setgroups");
	} else if (unshare(flags) < 0) {
		die(c, NS_CREDS, errno, "namespaces for the runtime");
	}
	if (c->proxy_sock < 0)
		return;
	const char *what = "lo";
	if ((r = net_lo_up()) < 0 || (r = mon_hand_proxy_socket(c->proxy_sock, c->capture, &what)) < 0)
		die(c, NS_NET, -r, what);
}

/* Pid 1's mounts, in the private mount namespace: a /proc of the new pid namespace (the
 * runtime reads /proc/PID of its children), and on a hybrid host an empty read-only tmpfs
 * over the cgroup2 hierarchy, which crun refuses to start beside v1 controllers. The job's
 * cgroups are airlock's (the supervisor placed the monitor in them); the runtimes are told
 * to manage none, so hiding the hierarchy from them takes nothing away. */
static void runtime_mounts(const struct oci_child *c)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die(c, NS_PROPAGATION, errno, "/");
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die(c, NS_PROC, errno, "/proc for the runtime");
	if (c->mask_unified && mount("tmpfs", "/sys/fs/cgroup/unified", "tmpfs",
				     MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k") < 0)
		die(c, NS_TMPFS, errno, "/sys/fs/cgroup/unified");
}

/* 0, 1, 2 for the runtime (and the container); with airlock-init, its record's pipe as fd
 * AI_RECORD_FD, inheritable (crun --preserve-fds=1 hands it on). *c is the caller's copy: the
 * status pipe moves out of the way when it sits where a standard or preserved fd goes. */
static void runtime_fds(struct oci_child *c)
{
	int in = c->stdin_fd;
	if (in < 0 && (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		die(c, NS_STDIO, errno, "/dev/null");
	int top = c->init_w >= 0 ? AI_RECORD_FD : 2;
	if (c->status_fd <= top) {
		int fd = fcntl(c->status_fd, F_DUPFD_CLOEXEC, top + 1);
		if (fd < 0)
			die(c, NS_STDIO, errno, "F_DUPFD");
		c->status_fd = fd; /* the old number is overwritten or closed below */
	}
	if (c->init_w >= 0 && c->init_w <= 2) {
		int fd = fcntl(c->init_w, F_DUPFD_CLOEXEC, top + 1);
		if (fd < 0)
			die(c, NS_STDIO, errno, "F_DUPFD");
		c->init_w = fd;
	}
	if (dup2(in, 0) < 0 || dup2(c->stdout_fd, 1) < 0 || dup2(c->stderr_fd, 2) < 0)
		die(c, NS_STDIO, errno, "dup2");
	if (c->init_w >= 0) {
		if (c->init_w == AI_RECORD_FD ? fcntl(AI_RECORD_FD, F_SETFD, 0) < 0 : dup2(c->init_w, AI_RECORD_FD) < 0)
			die(c, NS_STDIO, errno, "the init's record pipe");
		c->init_w = AI_RECORD_FD;
	}
	/* The status pipe stays O_CLOEXEC: it is ours, not the runtime's. */
	int keep[] = {c->status_fd, c->init_w};
	if (mon_close_all_but(keep, AL_ARRAY_SIZE(keep)) < 0)
		die(c, NS_STDIO, errno, "close_range");
}

/* Pid 1 of the new pid namespace: dies with the monitor, then becomes the runtime. */
static _Noreturn void exec_runtime(const struct oci_child *parent, int alive_r)
{
	struct oci_child copy = *parent, *c = &copy;
	mon_reset_signals();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		_exit(OCI_FAIL_EXIT);
	/* getppid() is 0 for a pid namespace's init: the monitor holds the write end of this
	 * pipe, so a hang-up means it died before the parent-death signal was armed. */
	struct pollfd pf = {.fd = alive_r, .events = POLLIN};
	if (poll(&pf, 1, 0) != 0)
		_exit(OCI_FAIL_EXIT);
	close(alive_r);
	/* Our own mount namespace (see surroundings): the user namespace it is made in, if any, is
	 * the monitor's, in which we hold every capability. */
	if (unshare(CLONE_NEWNS) < 0)
		die(c, NS_PROPAGATION, errno, "a mount namespace for the runtime");
	runtime_mounts(c);
	runtime_fds(c);
	/* Also covers the runtime's own exec; the container gets noNewPrivileges anyway. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(c, NS_NNP, errno, NULL);
	/* The runtime makes mount points and /dev with its default modes less the umask: 022, as
	 * the native init's layout has, whatever the caller's (process.user.umask sets the payload's). */
	umask(022);
	static char *const empty_env[] = {NULL};
	execve(c->argv[0], c->argv, empty_env);
	die(c, NS_FORK, errno, c->argv[0]);
}

/* Removes the tree at dirfd/name without allocating and without crossing mounts (there are
 * none on the host side: the runtime's mounts live in its own namespace). Depth-limited:
 * the bundle and the runtimes' state are shallow. */
// NOLINTNEXTLINE(misc-no-recursion): bounded by depth; no allocation allowed here, so no explicit stack
static void remove_at(int dirfd, const char *name, int depth)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno != EISDIR || depth > 16)
		return;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		char buf[4096];
		long n;
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
			for (long off = 0; off < n;) {
				struct dirent64 *d = (struct dirent64 *)(buf + off);
				off += d->d_reclen;
				if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
					remove_at(fd, d->d_name, depth + 1);
			}
		close(fd);
	}
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* The runtime's log says why it failed before the payload ran (crun: JSON lines). */
static bool runtime_error(const struct oci_child *c, char *msg, size_t size)
{
	int fd = open(c->log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	static char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 && oci_log_error(buf, (size_t)n, msg, size);
}

/* airlock-init's record (ainit.c): every writer is gone once the runtime, pid 1 of its pid
 * namespace, has been reaped, so this never blocks. */
static bool init_record(const struct oci_child *c, int32_t rec[2])
{
	if (c->init_r < 0)
		return false;
	ssize_t n;
	do
		n = read(c->init_r, rec, 2 * sizeof(rec[0]));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)(2 * sizeof(rec[0]));
}

static _Noreturn void report(const struct oci_child *c, int ws)
{
	char msg[1024]; /* classified whole; nat_send keeps its end-user part short */
	int32_t rec[2];
	if (init_record(c, rec)) {
		/* The payload's own end, as the native init sees it: no 128+N folding. */
		if (rec[0] == AI_EXITED)
			nat_send(c->status_fd, NK_EXITED, NS_NONE, 0, rec[1], NULL);
		else
			ai_record_send(c->status_fd, rec, c->cmd);
	} else if (c->cmd_absent && WIFEXITED(ws) && WEXITSTATUS(ws) == 127) {
		/* runsc's airlock-init could not exec a command its tree lacks: said on stderr as a
		 * shell would, now also what every other backend reports. */
		nat_send(c->status_fd, NK_ERROR, NS_EXEC, ENOENT, 0, c->cmd);
	} else if (WIFEXITED(ws) && WEXITSTATUS(ws) != 0 && runtime_error(c, msg, sizeof(msg))) {
		/* The runtime refused before the command ran: a setup error, not the payload's status. */
		/* crun: "executable file `X` not found", "open executable: ..."; runsc: "failed to load X: ..." */
		bool exec = strstr(msg, "executable") || strstr(msg, "failed to load");
		int e = strcasestr(msg, "no such file") || strstr(msg, "not found") ? ENOENT
			: strcasestr(msg, "permission denied")			    ? EACCES
										    : EINVAL;
		/* runsc nests its context ("running container: starting container: ..."): the last part says why */
		const char *why = msg;
		for (const char *p = strstr(msg, ": "); p && strlen(p + 2) > 40; p = strstr(p + 2, ": "))
			why = p + 2;
		/* the stage names the kernel feature in the message: a mount the runtime could not make
		 * is a bind's, anything else the start of the payload */
		enum nat_stage st = exec ? NS_EXEC : strstr(msg, "mount") ? NS_BIND : NS_FORK;
		nat_send(c->status_fd, NK_ERROR, st, e, 0, exec ? c->cmd : why);
	} else if (WIFEXITED(ws)) {
		nat_send(c->status_fd, NK_EXITED, NS_NONE, 0, oci_wstatus(WEXITSTATUS(ws)), NULL);
	} else {
		/* The runtime itself was killed (the deadline, the OOM killer): so was the sandbox. */
		nat_send(c->status_fd, NK_EXITED, NS_NONE, 0, ws, NULL);
	}
	remove_at(AT_FDCWD, c->tmp, 0);
	_exit(0);
}

_Noreturn void oci_monitor_main(const struct oci_child *c)
{
	/* The supervisor's end is the job's end: SIGTERM (also its death's, armed by mon_start) runs
	 * the handler, which kills the runtime. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	/* A copy of the supervisor, whose front end blocks its stop signals (SIGTERM among them)
	 * to take them in order: the monitor must take its own at once. */
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &term, NULL);
	int keep[] = {c->sync_fd,   c->status_fd,  c->stdin_fd, c->stdout_fd,
		      c->stderr_fd, c->proxy_sock, c->init_r,	c->init_w};
	if (mon_close_all_but(keep, AL_ARRAY_SIZE(keep)) < 0)
		die(c, NS_STDIO, errno, "close_range");
	char go;
	if (read(c->sync_fd, &go, 1) != 1)
		_exit(OCI_FAIL_EXIT); /* the supervisor gave up; it reports why and removes the directory */
	close(c->sync_fd);
	signal(SIGPIPE, SIG_IGN); /* a supervisor that stops reading must not kill the monitor */
	surroundings(c);
	int alive[2];
	if (pipe2(alive, O_CLOEXEC) < 0)
		die(c, NS_FORK, errno, "pipe");
	/* A raw clone, not fork(): glibc's fork runs atfork handlers and takes malloc's locks,
	 * which another thread of the supervisor may have held when we were cloned. */
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0)
		die(c, NS_FORK, errno, c->argv[0]);
	if (pid == 0) {
		close(alive[1]);
		exec_runtime(c, alive[0]);
	}
	runtime_pid = pid;
	close(alive[0]);
	close(c->stdout_fd);
	close(c->stderr_fd);
	if (c->stdin_fd >= 0)
		close(c->stdin_fd);
	if (c->proxy_sock >= 0)
		close(c->proxy_sock);
	if (c->init_w >= 0)
		close(c->init_w); /* so the record's pipe ends when the container does */
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	report(c, ws);
}
