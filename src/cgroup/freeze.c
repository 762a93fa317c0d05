/* freeze.c — the cgroup freezer: a job's processes paused in place and resumed, and a keeper that never lets a frozen job outlive its server.
 *
 * Which freezer
 *   v2  cgroup.freeze of the job's cgroup (core since Linux 5.2; hierarchical: every exec's cgroup
 *       beneath it is frozen with it); done when cgroup.events says "frozen 1". A fatal signal
 *       still kills a frozen v2 task.
 *   v1  freezer.state of the job's cgroup in the freezer hierarchy (host_cg_choose puts it there
 *       when the job's other controllers are all v1, as on this hybrid host); "FROZEN" once read
 *       back so. The exec cgroups are not made in it (cg_create_child): every process of the
 *       sandbox is the job cgroup's own there. A frozen v1 task does not die of SIGKILL until it
 *       is thawed: whoever kills a frozen job thaws it right after (cg_thaw_killed).
 *
 * The keeper (v1 and v2)
 *   A paused sandbox's init cannot act on its parent's death (it is frozen), and on v1 nothing
 *   frozen dies: a server killed while a sandbox is paused would leave it frozen forever. So a
 *   sandbox's first pause starts a keeper — a forked process of the server's, in the server's cgroups (never the
 *   job's), in a session of its own (a kill of the server's process group leaves it to do its job),
 *   holding no descriptor but a pidfd of the server and the job's cgroup directories. It waits
 *   for the server to end (the pidfd polls readable); then it kills every process of the job,
 *   thaws it, waits for it to be empty, removes the v1 freezer cgroup (its processes were all
 *   there) and exits. It stays through resumes (it would end a running sandbox as its init's
 *   parent-death signal does) until the sandbox is destroyed, which stops it (SIGKILL, reaped):
 *   a fork and a reap on every pause and resume cost a third of a pause. It allocates nothing after
 *   the fork (the server is threaded).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "kit/pidfd.h"
#include "util/cleanup.h"
#include "util/error.h"

/* The job's hierarchy that freezes (its directory fd and version), or -ENOTSUP. */
static int freezer_dir(const struct cg_job *cg, int *version)
{
	for (int i = 0; cg && i < cg_nhier(cg); i++) {
		int fd = cg_hier_fd(cg, i, version);
		if (fd >= 0 && (cg_hier_ctrls(cg, i) & CG_BIT(HOST_CG_FREEZER)))
			return fd;
	}
	return -ENOTSUP;
}

int cg_freezer(const struct cg_job *cg)
{
	int version = 0;
	return freezer_dir(cg, &version) >= 0 ? version : 0;
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* v2: until cgroup.events says "frozen want", woken by its change notification (POLLPRI). */
static int v2_wait(int dirfd, bool want, int timeout_ms)
{
	cleanup_close int fd = openat(dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	int64_t end = now_ms() + timeout_ms;
	for (;;) {
		char buf[256];
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			return -errno;
		buf[n] = '\0';
		uint64_t frozen = 0;
		if (cg_parse_keyed(buf, "frozen", &frozen) < 0)
			return -ENOTSUP; /* before Linux 5.2: no freezer on v2 */
		if ((frozen != 0) == want)
			return 0;
		int64_t left = end - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = {.fd = fd, .events = POLLPRI};
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
	}
}

/* v1: freezer.state read back until it says state; the kernel moves it on as it is read. */
static int v1_wait(int dirfd, const char *state, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	struct timespec nap = {0, 200000}; /* 0.2 ms, doubling up to 16 ms */
	for (;;) {
		char buf[32];
		int n = cg_read_at(dirfd, "freezer.state", buf, sizeof(buf));
		if (n < 0)
			return n;
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, state) == 0)
			return 0;
		if (now_ms() >= end)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 16000000)
			nap.tv_nsec *= 2;
	}
}

static int set_state(int dirfd, int version, bool freeze)
{
	if (version == 2)
		return cg_write_at(dirfd, "cgroup.freeze", freeze ? "1" : "0");
	return cg_write_at(dirfd, "freezer.state", freeze ? "FROZEN" : "THAWED");
}

static int wait_state(int dirfd, int version, bool freeze, int timeout_ms)
{
	return version == 2 ? v2_wait(dirfd, freeze, timeout_ms)
			    : v1_wait(dirfd, freeze ? "FROZEN" : "THAWED", timeout_ms);
}

int cg_freeze(struct cg_job *cg, bool freeze, int timeout_ms, struct al_error *err)
{
	int version = 0, fd = freezer_dir(cg, &version);
	if (fd < 0)
		return al_err(err, ENOTSUP, "no cgroup freezer for this sandbox (%s)", cg_freezer_why(cg));
	int r = set_state(fd, version, freeze);
	if (r < 0)
		return al_err_sys(err, -r, "cgroup freezer: writing %s",
				  version == 2 ? "cgroup.freeze" : "freezer.state");
	if ((r = wait_state(fd, version, freeze, timeout_ms)) == 0)
		return 0;
	/* Not frozen in time (a task sleeping in the kernel, uninterruptibly): never left half
	 * frozen — thawed back, and the pause refused. */
	if (freeze)
		(void)set_state(fd, version, false);
	if (r == -ETIMEDOUT)
		return al_err(err, ETIMEDOUT, "the sandbox's processes did not %s within %d ms",
			      freeze ? "freeze" : "thaw", timeout_ms);
	return al_err_sys(err, -r, "cgroup freezer: reading its state");
}

void cg_thaw_dir(int dirfd)
{
	/* Whichever file the directory has: a v2 cgroup or a v1 freezer one (stale.c, keepers). */
	if (cg_write_at(dirfd, "cgroup.freeze", "0") == -ENOENT)
		(void)cg_write_at(dirfd, "freezer.state", "THAWED");
}

/* Every process of the freezer's cgroup sent SIGKILL, then thawed: a thawed one runs nothing of its
 * own, it dies. v2 kills frozen tasks (cgroup.kill, which empties the whole subtree); a frozen v1
 * task only dies once thawed, so one round of signals (it cannot fork meanwhile), then the thaw. */
static void kill_then_thaw(int fd, int version)
{
	if (version == 2)
		cg_kill_dir(fd, 2);
	else
		cg_kill_once(fd);
	(void)set_state(fd, version, false);
}

void cg_thaw_killed(struct cg_job *cg)
{
	int version = 0, fd = freezer_dir(cg, &version);
	if (fd >= 0)
		kill_then_thaw(fd, version);
}

/* ---- the keeper ----------------------------------------------------------------------------- */

struct cg_keeper {
	pid_t pid;
	int pidfd;
};

/* In the keeper: every descriptor but keep[0..n) closed (sorted ascending). */
static void keep_only(const int *keep, int n)
{
	int from = 3;
	for (int i = 0; i < n; i++) {
		if (keep[i] > from)
			syscall(SYS_close_range, from, keep[i] - 1, 0);
		if (keep[i] >= from)
			from = keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0);
}

static void sort_fds(int *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

/* The keeper's life: no allocation, no formatting (forked from a threaded process). */
static _Noreturn void keeper_main(pid_t server, int fzfd, int version, int parent_fd, const char *name, const int *dirs,
				  const int *versions, int n)
{
	int keep[CG_JOIN_MAX + 2], nk = 0;
	for (int i = 0; i < n; i++)
		keep[nk++] = dirs[i];
	if (parent_fd >= 0)
		keep[nk++] = parent_fd;
	int sfd = (int)syscall(SYS_pidfd_open, server, 0);
	if (sfd < 0 || getppid() != server)
		sfd = -1; /* the server is gone already: clean up at once */
	else
		keep[nk++] = sfd;
	sort_fds(keep, nk);
	keep_only(keep, nk);
	setsid();
	prctl(PR_SET_NAME, "airlock-keeper", 0, 0, 0);
	/* Only SIGKILL (the resume's) ends it before its job is done; the server's handlers are not
	 * its own. */
	struct sigaction ign = {.sa_handler = SIG_IGN};
	const int quiet[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < AL_ARRAY_SIZE(quiet); i++)
		sigaction(quiet[i], &ign, NULL);
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	struct pollfd pf = {.fd = sfd, .events = POLLIN};
	while (sfd >= 0 && poll(&pf, 1, -1) < 0 && errno == EINTR)
		;
	/* The server ended with the job frozen: kill, thaw, wait, remove. */
	kill_then_thaw(fzfd, version);
	for (int i = 0; i < n; i++)
		cg_kill_dir(dirs[i], versions[i]);
	for (int i = 0; i < n; i++)
		cg_wait_empty(dirs[i], 2000);
	if (version == 1)
		(void)unlinkat(parent_fd, name, AT_REMOVEDIR);
	_exit(0);
}

int cg_keeper_start(struct cg_job *cg, struct cg_keeper **out, struct al_error *err)
{
	*out = NULL;
	int version = 0, fzfd = freezer_dir(cg, &version);
	if (fzfd < 0)
		return al_err(err, ENOTSUP, "no cgroup freezer for this sandbox");
	int dirs[CG_JOIN_MAX], versions[CG_JOIN_MAX], n = 0, fz_parent = -1;
	for (int i = 0; i < cg_nhier(cg) && n < CG_JOIN_MAX; i++) {
		int v = 0, fd = cg_hier_fd(cg, i, &v);
		if (fd < 0)
			continue;
		dirs[n] = fd;
		versions[n++] = v;
		if (fd == fzfd && fz_parent < 0)
			fz_parent = cg_hier_parent_open(cg, i);
	}
	struct cg_keeper *k = calloc(1, sizeof(*k));
	if (!k) {
		if (fz_parent >= 0)
			close(fz_parent);
		return al_err(err, ENOMEM, "out of memory");
	}
	pid_t server = getpid();
	k->pid = pfd_clone3(0, &k->pidfd, -1);
	if (k->pid == 0)
		keeper_main(server, fzfd, version, fz_parent, cg_name(cg), dirs, versions, n);
	if (fz_parent >= 0)
		close(fz_parent); /* the keeper's copy is its own */
	if (k->pid < 0) {
		int e = -k->pid;
		free(k);
		return al_err_sys(err, e, "starting the paused sandbox's keeper");
	}
	*out = k;
	return 0;
}

void cg_keeper_stop(struct cg_keeper *k)
{
	if (!k)
		return;
	siginfo_t si;
	struct rusage ru;
	pfd_send_signal(k->pidfd, SIGKILL);
	pfd_wait(k->pidfd, &si, &ru, WEXITED);
	close(k->pidfd);
	free(k);
}
