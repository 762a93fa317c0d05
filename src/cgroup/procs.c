/* procs.c — cgroupfs file I/O and emptying a cgroup: read cgroup.procs, kill what it lists (or use cgroup.kill), wait. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "util/cleanup.h"

/* ---- small file I/O --------------------------------------------------------------- */

int cg_read_at(int dirfd, const char *file, char *buf, size_t size)
{
	cleanup_close int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (int)len;
}

int cg_read_file(struct cg_files *f, const char *file, char *buf, size_t size)
{
	int i = 0;
	while (i < f->n && strcmp(f->name[i], file) != 0)
		i++;
	if (i == f->n) {
		if (!f->filling || i == CG_FILES_MAX)
			return cg_read_at(f->dirfd, file, buf, size);
		int fd = openat(f->dirfd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
		if (fd < 0)
			return -errno;
		f->name[i] = file;
		f->fd[f->n++] = fd;
	}
	/* These files are a line or a few: one read from the start returns all of it (a seq_file
	 * starts over at offset 0). */
	ssize_t n;
	do
		n = pread(f->fd[i], buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

void cg_files_close(struct cg_files *f)
{
	for (int i = 0; i < f->n; i++)
		close(f->fd[i]);
	f->n = 0;
}

/* cgroupfs takes a value in one write(); a short write would be a kernel oddity. */
int cg_write_at(int dirfd, const char *file, const char *value)
{
	cleanup_close int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t len = strlen(value);
	ssize_t n = write(fd, value, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* cgroup.procs can be long (thousands of pids): parse it in chunks; a number may span two. */
int cg_for_each_pid(int dirfd, int (*fn)(pid_t pid, void *arg), void *arg)
{
	cleanup_close int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	char buf[4096];
	long cur = -1;
	int count = 0, r;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (ssize_t i = 0; i <= n; i++) {
			if (i < n && buf[i] >= '0' && buf[i] <= '9') {
				cur = (cur < 0 ? 0 : cur * 10) + (buf[i] - '0');
				if (cur > INT32_MAX)
					return -EINVAL;
				continue;
			}
			if (i == n && n > 0)
				break; /* end of this chunk, not of the number */
			if (cur > 0) {
				count++;
				if ((r = fn((pid_t)cur, arg)) != 0)
					return r < 0 ? r : count;
			}
			cur = -1;
		}
		if (n == 0)
			return count;
	}
}

static int cg_stop_at_first(pid_t pid, void *arg)
{
	(void)pid;
	(void)arg;
	return 1;
}

int cg_has_procs(int dirfd)
{
	return cg_for_each_pid(dirfd, cg_stop_at_first, NULL);
}

int cg_wait_empty(int dirfd, int timeout_ms)
{
	struct timespec nap = {0, 1000000}; /* 1 ms, doubling up to 32 ms */
	int waited = 0;
	for (;;) {
		int r = cg_has_procs(dirfd);
		if (r == 0 || r == -ENOENT)
			return 0;
		if (waited >= timeout_ms)
			return -EBUSY;
		nanosleep(&nap, NULL);
		waited += (int)(nap.tv_nsec / 1000000);
		if (nap.tv_nsec < 32000000)
			nap.tv_nsec *= 2;
	}
}

/* ---- killing without cgroup.kill -------------------------------------------------- */

#define CG_KILL_BATCH 128

struct cg_batch {
	pid_t pid[CG_KILL_BATCH];
	int pidfd[CG_KILL_BATCH];
	int n;
};

static int cg_collect(pid_t pid, void *arg)
{
	struct cg_batch *b = arg;
	if (b->n == CG_KILL_BATCH)
		return 1;
	b->pid[b->n] = pid;
	b->pidfd[b->n] = (int)syscall(SYS_pidfd_open, pid, 0);
	b->n++;
	return 0;
}

/* A pid read from cgroup.procs may die and be reused by a process outside the job before we
 * signal it. So each pid is pinned with a pidfd first and signalled only if a second read of
 * cgroup.procs still lists it: then the pidfd is the job's process. Without pidfds (before
 * 5.3) the window is the one every pid-based tool has, and pids wrap slowly. */
static int cg_confirm_kill(pid_t pid, void *arg)
{
	struct cg_batch *b = arg;
	for (int i = 0; i < b->n; i++) {
		if (b->pid[i] != pid)
			continue;
		if (b->pidfd[i] >= 0)
			syscall(SYS_pidfd_send_signal, b->pidfd[i], SIGKILL, NULL, 0);
		else
			kill(pid, SIGKILL);
	}
	return 0;
}

static int cg_kill_round(int dirfd)
{
	struct cg_batch b = {.n = 0};
	int r = cg_for_each_pid(dirfd, cg_collect, &b);
	if (r >= 0 && b.n > 0)
		r = cg_for_each_pid(dirfd, cg_confirm_kill, &b);
	for (int i = 0; i < b.n; i++)
		if (b.pidfd[i] >= 0)
			close(b.pidfd[i]);
	return r < 0 ? r : b.n;
}

int cg_kill_once(int dirfd)
{
	return cg_kill_round(dirfd);
}

int cg_kill_dir(int dirfd, int version)
{
	/* cgroup.kill (v2, 5.14+) kills the whole subtree atomically, forks in flight included. */
	if (version == 2 && cg_write_at(dirfd, "cgroup.kill", "1") == 0)
		return cg_wait_empty(dirfd, 100) == 0 ? 0 : -EBUSY;
	/* Else kill what is listed until nothing is: a fork racing the read shows up in the
	 * next round, and killed processes fork no more. v2's freezer (5.2+) stops the race. */
	bool frozen = version == 2 && cg_write_at(dirfd, "cgroup.freeze", "1") == 0;
	int r = -EBUSY;
	for (int round = 0; round < 200; round++) {
		int n = cg_kill_round(dirfd);
		if (n == 0 || n == -ENOENT) {
			r = 0;
			break;
		}
		if (n < 0) {
			r = n;
			break;
		}
		struct timespec nap = {0, round < 10 ? 100000 : 2000000};
		nanosleep(&nap, NULL);
	}
	if (frozen)
		cg_write_at(dirfd, "cgroup.freeze", "0");
	return r;
}
