/* heldfloor.c — the least an exec in a held sandbox can cost here, against a bare posix_spawn +
 * waitpid: a spare made ahead (an exec init that vforks a payload, which waits for one byte and
 * then execs /bin/true; the init reaps it and writes its status on a pipe), the next spare made
 * while the current exec runs, as airlock's worker thread does; nothing else. With -l, each spare
 * also has what airlock gives every held exec: its own pid and mount namespaces with a fresh
 * /proc, its own cgroups (v1: one directory per hierarchy, limits, the payload moving itself in;
 * v2: born there; removed once the exec is over), no_new_privs and airlock's seccomp filter.
 * bench/floor.sh runs it back to back and with 2 ms pauses (issue 14, part 4: held exec ≤ 1.2x
 * bare fork+exec). Usage: heldfloor EXECS GAP_US [-l]   (root). Prints one line of medians. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit/seccomp_blobs.h"
#include "timing.h"

extern char **environ;

#define NCG 4
static const char *const hier[NCG] = {"memory", "pids", "cpu", "cpuacct"};
static int layers, v2;

struct spare {
	pid_t init;
	int req_w, st_r;
	char cg[NCG][128];
	int ncg;
};

static int write_at(const char *dir, const char *file, const char *s)
{
	char p[192];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	int r = fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	if (fd >= 0)
		close(fd);
	return r;
}

/* The exec's cgroups, as airlock's worker makes them: a directory per hierarchy, its limits. */
static void make_cgroups(struct spare *s, int seq, int *join, int *njoin, int *cgfd)
{
	static const char *const lim[NCG][2] = {{"memory.limit_in_bytes", "536870912"},
						{"pids.max", "256"},
						{"cpu.cfs_quota_us", "100000"},
						{NULL, NULL}};
	*njoin = 0;
	*cgfd = -1;
	for (int i = 0; i < (v2 ? 1 : NCG); i++) {
		if (v2)
			snprintf(s->cg[i], sizeof(s->cg[i]), "/sys/fs/cgroup/heldfloor-%d-%d", (int)getpid(), seq);
		else
			snprintf(s->cg[i], sizeof(s->cg[i]), "/sys/fs/cgroup/%s/heldfloor-%d-%d", hier[i],
				 (int)getpid(), seq);
		if (mkdir(s->cg[i], 0755) < 0) {
			perror(s->cg[i]);
			exit(1);
		}
		s->ncg++;
		if (v2) {
			(void)write_at(s->cg[i], "memory.max", "536870912");
			(void)write_at(s->cg[i], "pids.max", "256");
			*cgfd = open(s->cg[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
			continue;
		}
		if (lim[i][0])
			(void)write_at(s->cg[i], lim[i][0], lim[i][1]);
		char p[192];
		snprintf(p, sizeof(p), "%s/tasks", s->cg[i]);
		join[(*njoin)++] = open(p, O_WRONLY | O_CLOEXEC);
	}
}

static _Noreturn void payload(int req_r, const int *join, int njoin)
{
	for (int i = 0; i < njoin; i++)
		if (write(join[i], "0", 1) != 1)
			_exit(120);
	if (layers) {
		struct sock_fprog prog = {.len = sc_blobs[0].len, .filter = (struct sock_filter *)sc_blobs[0].code};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			_exit(121);
	}
	char b;
	if (read(req_r, &b, 1) != 1)
		_exit(0); /* never used */
	char *av[] = {"/bin/true", NULL};
	execv(av[0], av);
	_exit(127);
}

static struct spare make_spare(int seq)
{
	struct spare s = {.ncg = 0};
	int rq[2], st[2], join[NCG], cgfd = -1;
	volatile int njoin = 0; /* read by the vforked payload */
	if (pipe2(rq, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0)
		exit(1);
	if (layers)
		make_cgroups(&s, seq, join, (int *)&njoin, &cgfd);
	struct clone_args ca = {.exit_signal = SIGCHLD};
	if (layers)
		ca.flags = CLONE_NEWPID | CLONE_NEWNS;
	if (cgfd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (__u64)cgfd;
	}
	pid_t p = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (p == 0) {
		close(rq[1]);
		close(st[0]);
		/* Its own /proc, as an exec init mounts one (private first: nothing goes back to the host). */
		if (layers && (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			       mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0))
			_exit(122);
		pid_t c = vfork(); // NOLINT(clang-analyzer-security.insecureAPI.vfork): as airlock's exec init
		if (c == 0)
			payload(rq[0], join, njoin); // NOLINT(clang-analyzer-unix.Vfork): ends in execve or _exit
		int ws = 0;
		waitpid(c, &ws, 0);
		(void)!write(st[1], &ws, sizeof(ws));
		_exit(0);
	}
	if (p < 0) {
		perror("clone3");
		exit(1);
	}
	for (int i = 0; i < njoin; i++)
		close(join[i]);
	if (cgfd >= 0)
		close(cgfd);
	close(rq[0]);
	close(st[1]);
	s.init = p;
	s.req_w = rq[1];
	s.st_r = st[0];
	return s;
}

static void end_spare(struct spare *s)
{
	close(s->req_w);
	close(s->st_r);
	waitpid(s->init, NULL, 0);
	for (int i = 0; i < s->ncg; i++)
		rmdir(s->cg[i]);
}

struct refill {
	int seq;
	struct spare done, next;
};

static void *refill_main(void *arg)
{
	struct refill *r = arg;
	r->next = make_spare(r->seq);
	if (r->done.init > 0)
		end_spare(&r->done); /* the exec before: its init's exit, its cgroups' removal */
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: heldfloor EXECS GAP_US [-l]\n");
		return 2;
	}
	int n = atoi(argv[1]), gap = atoi(argv[2]);
	layers = argc > 3 && !strcmp(argv[3], "-l");
	v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
	if (n < 1)
		return 2;
	double *bare = calloc((size_t)n, sizeof(double)), *held = calloc((size_t)n, sizeof(double));
	char *av[] = {"/bin/true", NULL};
	for (int i = 0; i < n; i++) {
		if (gap)
			usleep((useconds_t)gap);
		double a = now() * 1e3;
		pid_t p;
		if (posix_spawn(&p, av[0], NULL, NULL, av, environ) != 0)
			return 1;
		waitpid(p, NULL, 0);
		bare[i] = now() * 1e3 - a;
	}
	/* The next spare is made, and the last exec's ended, by a second thread while an exec runs
	 * (airlock's worker); an exec waits for it only when it comes before the spare is ready. */
	struct spare s = make_spare(0), prev = {.init = 0};
	struct refill rf = {.seq = 0};
	pthread_t t = 0;
	for (int i = 0; i < n; i++) {
		if (gap)
			usleep((useconds_t)gap);
		double a = now() * 1e3;
		if (t) {
			pthread_join(t, NULL);
			s = rf.next;
		}
		int ws = -1;
		if (write(s.req_w, "x", 1) != 1)
			return 1;
		rf = (struct refill){.seq = i + 1, .done = prev};
		if (pthread_create(&t, NULL, refill_main, &rf) != 0)
			return 1;
		if (read(s.st_r, &ws, sizeof(ws)) != sizeof(ws) || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
			fprintf(stderr, "heldfloor: the exec failed (wait status %d)\n", ws);
			return 1;
		}
		held[i] = now() * 1e3 - a;
		prev = s;
	}
	pthread_join(t, NULL);
	end_spare(&prev);
	end_spare(&rf.next);
	double b = median(bare, n), h = median(held, n);
	printf("%s, %d us apart: bare %.3f ms, held exec %.3f ms (%.2fx)\n", layers ? "every layer" : "no layer", gap,
	       b, h, h / b);
	return 0;
}
