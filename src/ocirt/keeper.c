/* keeper.c — the container's exit status for its verdict: a small process holds a pidfd of the init from create to the reap.
 *
 * Why a keeper. The container's init is create's child; once create exits it is re-parented to
 * the caller's subreaper (containerd's shim, conmon), which reaps it and reports its status to
 * its own caller: airlock-runc never waits for it, and must not (the runc contract: the pid in
 * --pid-file is the container's process, the shim's child, whose status containerd reports; a
 * forwarding init in between would change what `kill`, `ps` and the exit code see). A pidfd
 * opened before the process exits keeps its exit status readable after whoever reaped it did so
 * (PIDFD_GET_INFO with PIDFD_INFO_EXIT, Linux 6.15; kit/pidfd.c), but only while some process
 * holds that pidfd: the keeper, forked by create, holds the pidfd create got from clone3. (A
 * zombie's status is in /proc/PID/stat until the reap, which delete uses when it comes first;
 * with containerd and conmon the reap always comes first, so that alone would never do.) Only a
 * container whose verdict was asked gets a keeper.
 *
 *   create ── fork ──▶ keeper (its own session; no descriptor but the init's pidfd and an O_PATH
 *                      descriptor of <root>/<id>; in create's cgroup, never the container's)
 *                        poll(pidfd) until POLLHUP (the kernel's wake-up when the init is reaped)
 *                        PIDFD_GET_INFO → <root>/<id>/exit.json (written whole, renamed), exit
 *   delete ── reads exit.json (waiting at most ORT_KEEPER_WAIT_MS while the keeper is about to
 *             write it), or a zombie init's status from /proc, then kills the keeper whatever it
 *             was doing, and removes the directory.
 *
 * So the keeper ends with its container: on its own right after the reap, or at delete (a forced
 * delete, containerd's cleanup after a dead shim) at the latest; it never holds delete up beyond
 * ORT_KEEPER_WAIT_MS, holds no descriptor its callers wait on (the container's stdio, the exec
 * fifo, conmon's pipes), and, out of the container's cgroup, is not one of its processes (`ps`,
 * `kill --all`, pids.current). It is re-parented like the init when create exits, and reaped by
 * the same subreaper (the shim ignores exits of pids it does not know). Where the kernel keeps no
 * exit status (before 6.15) the keeper records why and exits at once: the verdict says exit_code
 * null and that reason, never a guessed value. conmon does the same job by being the container's
 * parent; crun and runc leave the status to their caller altogether.
 */
#include "keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/caps.h"
#include "kit/pidfd.h"
#include "util/cleanup.h"
#include "util/error.h"

const char *ort_end_status(const struct ort_end *end)
{
	return end->known ? al_status_name(end->status) : "stopped";
}

void ort_end_from_wait(int wstatus, struct ort_end *end)
{
	memset(end, 0, sizeof(*end));
	end->known = true;
	if (WIFEXITED(wstatus)) {
		end->status = AL_STATUS_EXITED;
		end->exit_code = WEXITSTATUS(wstatus);
	} else if (WIFSIGNALED(wstatus)) {
		end->status = AL_STATUS_SIGNALED;
		end->signal = WTERMSIG(wstatus);
	} else {
		/* A reaped process has exited or been killed; anything else is not an end. */
		end->known = false;
		snprintf(end->why, sizeof(end->why), "the kernel reported wait status %#x, not an end", wstatus);
	}
}

/* ---- the keeper ------------------------------------------------------------------------------- */

/* fd itself, or a copy of it above the standard descriptors (a caller that started create with
 * one of them closed would have had clone3 put the pidfd there). */
static int above_stdio(int fd)
{
	return fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* Only the two descriptors it needs stay open, so the keeper holds nothing others wait on. */
static void keep_only(int a, int b)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		if (null < 0 || dup2(null, fd) < 0)
			close(fd);
	if (a > b) {
		int t = a;
		a = b;
		b = t;
	}
	if (a > 3)
		close_range(3, (unsigned)a - 1, 0);
	if (b > a + 1)
		close_range((unsigned)a + 1, (unsigned)b - 1, 0);
	close_range((unsigned)b + 1, ~0U, 0);
}

/* The record, whole or not at all (delete reads it as soon as it is there). */
static void record(int dirfd, const char *json)
{
	int fd = openat(dirfd, ORT_EXIT_FILE_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return; /* the directory is gone: delete came first and needs no record */
	size_t len = strlen(json);
	bool ok = write(fd, json, len) == (ssize_t)len;
	close(fd);
	if (ok)
		renameat(dirfd, ORT_EXIT_FILE_TMP, dirfd, ORT_EXIT_FILE);
}

static void record_unknown(int dirfd, const char *why)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "{\"unknown\":\"%s\"}\n", why);
	record(dirfd, buf);
}

/* The keeper's whole life; it allocates nothing it must free, and leaves with _exit. */
static _Noreturn void keeper_main(int pidfd, int dirfd)
{
	/* A session of its own: the terminal's and the caller's process-group signals are the
	 * container's business, not the keeper's. */
	setsid();
	prctl(PR_SET_NAME, "airlock-keeper", 0, 0, 0);
	pidfd = above_stdio(pidfd);
	dirfd = above_stdio(dirfd);
	keep_only(pidfd, dirfd);
	/* Nothing it does needs a privilege (it reads a pidfd it holds and writes into a directory of
	 * its own uid), so a process that may live as long as a container keeps none: best effort,
	 * since an unprivileged create has none to drop. */
	caps_drop_bounding();
	caps_clear();
	caps_no_new_privs();
	int sup = pfd_exit_status_supported();
	if (sup <= 0) {
		record_unknown(
			dirfd,
			sup == 0 ? "this kernel keeps no exit status of a reaped process (PIDFD_INFO_EXIT, "
				   "Linux 6.15)"
				 : "the keeper could not ask the kernel whether it keeps exit statuses (fork failed)");
		_exit(0);
	}
	int st = 0, r;
	struct pollfd p = {.fd = pidfd, .events = 0};
	/* No event asked: poll returns on POLLHUP alone, which the kernel raises when the process
	 * is reaped (POLLIN, raised at its exit, would come before the status is kept). */
	while ((r = pfd_exit_status(pidfd, &st)) == -EAGAIN)
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
	if (r == 0) {
		char buf[64];
		snprintf(buf, sizeof(buf), "{\"wait_status\":%d}\n", st);
		record(dirfd, buf);
	} else {
		record_unknown(dirfd, r == -EOPNOTSUPP ? "the kernel kept no exit status for the container's process"
						       : "reading the container's exit status failed");
	}
	_exit(0);
}

pid_t ort_keeper_start(int init_pidfd, const char *dir, struct al_error *err)
{
	cleanup_close int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return al_err_sys(err, errno, "state directory %s", dir);
	/* A plain fork: create is single-threaded, and the keeper only makes system calls. */
	pid_t pid = fork();
	if (pid == 0)
		keeper_main(init_pidfd, dirfd);
	if (pid < 0)
		return al_err_sys(err, errno, "forking the exit status keeper");
	return pid;
}

void ort_keeper_abort(pid_t keeper)
{
	/* Our own child, not reaped yet: its pid cannot have been reused. */
	if (keeper <= 0)
		return;
	kill(keeper, SIGKILL);
	while (waitpid(keeper, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---- delete's side ------------------------------------------------------------------------------ */

/* The keeper's record: 0 (end filled, known or with its reason), or -ENOENT. */
static int read_record(const char *dir, struct ort_end *end)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/" ORT_EXIT_FILE, dir);
	json_t *o = json_load_file(p, 0, NULL);
	if (!o)
		return -ENOENT;
	json_t *ws = json_object_get(o, "wait_status");
	const char *why = json_string_value(json_object_get(o, "unknown"));
	if (json_is_integer(ws)) {
		ort_end_from_wait((int)json_integer_value(ws), end);
	} else {
		memset(end, 0, sizeof(*end));
		snprintf(end->why, sizeof(end->why), "%s", why ? why : "the keeper's record is malformed");
	}
	json_decref(o);
	return 0;
}

/* Whether the process of pidfd has ended, waiting at most ms for it. */
static bool ended(int pidfd, int ms)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	int r;
	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r != 0;
}

/* The status is not known: say why, from what is left to see. */
static void explain(const struct ort_loaded *st, bool keeper_alive, bool init_zombie, struct ort_end *end)
{
	memset(end, 0, sizeof(*end));
	const char *why = !st->verdict	    ? "no verdict was asked (io.airlock.verdict), so no exit status was kept"
			  : !st->keeper_pid ? "no exit status keeper was recorded at create (an older airlock-runc)"
			  : init_zombie ? "the container's process was not reaped yet by its parent when it was deleted"
			  : keeper_alive ? "the exit status keeper did not record in time"
					 : "the exit status keeper ended without a record (killed?)";
	snprintf(end->why, sizeof(end->why), "%s", why);
}

void ort_keeper_collect(const struct ort_loaded *st, bool killed, struct ort_end *end)
{
	cleanup_close int kfd = st->keeper_pid ? ort_pidfd_checked(st->keeper_pid, st->keeper_start) : -1;
	if (killed) {
		/* delete killed it (SIGKILL to the init, then the cgroup): airlock's doing, as airlock
		 * run's "killed" is, whatever the keeper records after the reap. */
		memset(end, 0, sizeof(*end));
		end->known = true;
		end->status = AL_STATUS_KILLED;
		end->signal = SIGKILL;
	} else if (read_record(st->dir, end) < 0) {
		/* A zombie's reap is its parent's business, which delete does not wait for: the kernel
		 * shows its status in /proc until then. Reaped: the keeper is writing its record now. */
		int ws = 0, zr = ort_zombie_status(st->pid, st->start, &ws);
		if (zr == 0) {
			ort_end_from_wait(ws, end);
		} else {
			bool keeper_alive = kfd >= 0 && zr != -EACCES && !ended(kfd, ORT_KEEPER_WAIT_MS);
			if (read_record(st->dir, end) < 0)
				explain(st, keeper_alive, zr == -EACCES, end);
		}
	}
	if (kfd >= 0)
		pfd_send_signal(kfd, SIGKILL);
}
