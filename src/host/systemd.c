/* systemd.c — a delegated cgroup from the user's own systemd manager: a transient scope with Delegate=yes holding airlock, as systemd cgroup drivers ask for one.
 *
 * An ordinary user on cgroup v2 usually sits in a cgroup it may not manage (a login session's
 * scope, a service's cgroup), while its systemd user manager owns a delegated subtree
 * (user@UID.service). Asking that manager for a transient scope with Delegate=yes and our own
 * pid in it — what `systemd-run --user --scope -p Delegate=yes` does for a command, and what
 * runc's, crun's and podman's systemd drivers do for a container — moves us into a cgroup this
 * user owns, with the controllers the manager was given. From there the cgroup module carries
 * on exactly as in any delegated cgroup (cg_v2.c). The manager drops the scope once it is empty
 * (CollectMode=inactive-or-failed), so nothing outlives airlock.
 *
 * The request itself (sd-bus) is the airlock-scope program beside airlock (src/scope/main.c):
 * libsystemd has no static library and the airlock binary is static. This file finds it, runs
 * it with a bounded wait and reads its one line of answer. Safe: the program runs as us, with
 * our environment (the bus addresses are in it), and can move only what this user owns.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/host.h"
#include "util/cleanup.h"
#include "util/error.h"

/* Above the program's own 10 s bound on the request: it reports its timeout itself. */
#define HOST_SCOPE_WAIT_MS 15000

static int host_ms_left(const struct timespec *end)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms = (end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

int host_run_capture(char *const argv[], char *const envp[], int timeout_ms, char *out, size_t size)
{
	out[0] = 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		al_close_pair(p);
		return -e;
	}
	if (pid == 0) { /* only async-signal-safe calls until execve */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (dup2(p[1], 1) < 0 || (null >= 0 && (dup2(null, 0) < 0 || dup2(null, 2) < 0)))
			_exit(127);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(p[1]);
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	size_t n = 0;
	bool late = false;
	for (;;) {
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		int k = poll(&pfd, 1, host_ms_left(&end));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			late = k == 0;
			break;
		}
		char scratch[256];
		char *dst = n < size - 1 ? out + n : scratch; /* past the buffer: drained, not kept */
		size_t room = n < size - 1 ? size - 1 - n : sizeof(scratch);
		ssize_t r = read(p[0], dst, room);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (dst != scratch)
			n += (size_t)r;
	}
	close(p[0]);
	if (late)
		kill(pid, SIGKILL);
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	out[n] = 0;
	if (late)
		return -ETIMEDOUT;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* The program beside our own executable (as `airlock serve` finds airlock-serve). */
static int host_scope_prog(char *prog, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -errno;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	if (snprintf(prog, size, "%s/airlock-scope", self) >= (int)size)
		return -ENAMETOOLONG;
	return access(prog, X_OK) == 0 ? 0 : -errno;
}

/* Runs airlock-scope VERB; its first line in line. 0 on success, 1 on a refusal it explained,
 * -errno when it could not run at all (line then says why). */
static int host_scope_run(const char *verb, char *line, size_t size)
{
	extern char **environ;
	char prog[PATH_MAX + 16] = "";
	int r = host_scope_prog(prog, sizeof(prog));
	if (r < 0) {
		snprintf(line, size, "no airlock-scope beside airlock (%s): built without libsystemd?", strerror(-r));
		return r;
	}
	char arg[16];
	snprintf(arg, sizeof(arg), "%s", verb);
	char *argv[] = {prog, arg, NULL};
	r = host_run_capture(argv, environ, HOST_SCOPE_WAIT_MS, line, size);
	line[strcspn(line, "\n")] = 0;
	if (r == -ETIMEDOUT)
		snprintf(line, size, "no answer within %d s", HOST_SCOPE_WAIT_MS / 1000);
	else if (r < 0)
		snprintf(line, size, "cannot run airlock-scope: %s", strerror(-r));
	else if (r > 1 || (r == 1 && !line[0]))
		snprintf(line, size, "airlock-scope %s failed (status %d)", verb, r);
	return r < 0 ? r : r == 0 ? 0 : 1;
}

int host_systemd_scope(char *unit, size_t size, struct al_error *err)
{
	char line[AL_ERROR_MAX];
	int r = host_scope_run("start", line, sizeof(line));
	if (r == 0) {
		snprintf(unit, size, "%s", line);
		return 0;
	}
	return al_err(err, r < 0 ? -r : EPERM, "user systemd: %s", line);
}

bool host_systemd_probe(const struct host_cgroups *hc, char *detail, size_t size)
{
	if (geteuid() == 0) {
		snprintf(detail, size, "not used as root (root's cgroups are the host's)");
		return false;
	}
	char root[256] = "", manager[200];
	cleanup_close int fd = hc->v2.mounted ? open(hc->v2.mount, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd >= 0)
		(void)host_read_small(fd, "cgroup.controllers", root, sizeof(root));
	unsigned limits = (1u << HOST_CG_MEMORY) | (1u << HOST_CG_PIDS) | (1u << HOST_CG_CPU);
	if (!host_cg_scope_gain(hc, root, limits)) {
		snprintf(detail, size, "a scope would hold no controller: %s",
			 hc->v2.mounted ? "cgroup2 has none here (they are v1's)" : "no cgroup2 mount");
		return false;
	}
	if (host_scope_run("probe", manager, sizeof(manager)) != 0) {
		snprintf(detail, size, "%s", manager);
		return false;
	}
	snprintf(detail, size, "%s; asked for a Delegate=yes scope when our cgroup cannot hold a limit", manager);
	return true;
}

unsigned host_cg_scope_gain(const struct host_cgroups *hc, const char *root_controllers, unsigned missing)
{
	/* A scope is a cgroup v2 unit: only controllers the unified hierarchy has at its root can be
	 * delegated in it. On a hybrid host they are bound to v1 and the root lists none. */
	if (!hc->v2.mounted)
		return 0;
	unsigned gain = 0;
	for (int c = 0; c < HOST_CG__COUNT; c++)
		if ((missing & (1u << c)) && host_cg_list_has(root_controllers, host_cg_ctrl_name(c)))
			gain |= 1u << c;
	return gain;
}
