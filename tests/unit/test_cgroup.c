/* test_cgroup.c — the cgroup module: pure helpers always; as root, real job cgroups that must enforce and account. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "skip.h"

#include "cgroup/cgroup.h"

#define MiB (1024ULL * 1024ULL)

/* ---- pure helpers ----------------------------------------------------------------- */

static void test_name_roundtrip(void **state)
{
	(void)state;
	char buf[64];
	pid_t owner = 0;
	assert_int_equal(cg_name_format(buf, sizeof(buf), 4242, 7, 0xdeadbeefu),
			 (int)strlen("airlock-4242-7-deadbeef"));
	assert_string_equal(buf, "airlock-4242-7-deadbeef");
	assert_int_equal(cg_name_parse(buf, &owner), 0);
	assert_int_equal(owner, 4242);
	assert_int_equal(cg_name_format(buf, sizeof(buf), 1, 0, 0x1u), (int)strlen("airlock-1-0-00000001"));
	assert_int_equal(cg_name_parse(buf, &owner), 0);
	assert_int_equal(owner, 1);
	assert_int_equal(cg_name_format(buf, 10, 4242, 7, 0), -ENAMETOOLONG);
}

static void test_name_rejects(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"airlock.jobs",
		"airlock.self",
		"airlock-",
		"airlock-12-3-",
		"airlock-0-3-deadbeef",
		"airlock-12-3-deadbee",
		"airlock-12-3-deadbeef0",
		"airlock-12-3-DEADBEEF",
		"airlock-012-3-deadbeef",
		"airlock--3-deadbeef",
		"airlock-12-deadbeef",
		"xairlock-1-2-deadbeef",
		"airlock-99999999999-1-deadbeef",
		"airlock- 12-3-deadbeef",
		"airlock-+12-3-deadbeef",
		"airlock-12-3-deadbeeg",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid_t owner = -1;
		if (cg_name_parse(bad[i], &owner) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_int_equal(owner, -1);
	}
}

static void test_cpu_max(void **state)
{
	(void)state;
	char buf[32];
	uint64_t q = 0;
	assert_int_equal(cg_cpu_quota_us(500, &q), 0);
	assert_int_equal(q, 50000);
	assert_true(cg_cpu_max_format(500, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "50000 100000");
	cg_cpu_max_format(1000, buf, sizeof(buf));
	assert_string_equal(buf, "100000 100000");
	cg_cpu_max_format(2500, buf, sizeof(buf));
	assert_string_equal(buf, "250000 100000");
	cg_cpu_max_format(10, buf, sizeof(buf));
	assert_string_equal(buf, "1000 100000");
	cg_cpu_max_format(AL_UNLIMITED, buf, sizeof(buf));
	assert_string_equal(buf, "max 100000");
	/* Below the kernel's 1 ms quota: refused, never rounded up to more CPU than asked. */
	assert_int_equal(cg_cpu_max_format(9, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cg_cpu_max_format(0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cg_cpu_quota_us(UINT64_MAX / 2, &q), -EINVAL);
	assert_int_equal(cg_cpu_max_format(500, buf, 8), -ENAMETOOLONG);
}

static void test_parse_keyed(void **state)
{
	(void)state;
	uint64_t v = 99;
	/* oom_kill must not match oom_kill_disable (v1 memory.oom_control). */
	const char *oc = "oom_kill_disable 1\nunder_oom 0\noom_kill 3\n";
	assert_int_equal(cg_parse_keyed(oc, "oom_kill", &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(cg_parse_keyed(oc, "oom_kill_disable", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(cg_parse_keyed("a 1\nb 2", "b", &v), 0); /* no trailing newline */
	assert_int_equal(v, 2);
	assert_int_equal(cg_parse_keyed("a 1\n", "b", &v), -ENOENT);
	assert_int_equal(cg_parse_keyed("", "b", &v), -ENOENT);
	assert_int_equal(cg_parse_keyed("b x\n", "b", &v), -EINVAL);
	assert_int_equal(cg_parse_keyed("b 12x\n", "b", &v), -EINVAL);
	assert_int_equal(cg_parse_keyed("b -1\n", "b", &v), -EINVAL);
	assert_int_equal(cg_parse_keyed("b 18446744073709551616\n", "b", &v), -EINVAL);
	assert_int_equal(cg_parse_keyed("bb 1\nb 5\n", "b", &v), 0);
	assert_int_equal(v, 5);
}

static void test_parse_cpu_stat(void **state)
{
	(void)state;
	/* Linux 6.1 with the cpu controller enabled. */
	const char *s = "usage_usec 2500000\nuser_usec 1500000\nsystem_usec 1000000\nnr_periods 20\n"
			"nr_throttled 10\nthrottled_usec 500000\nnr_bursts 0\nburst_usec 0\n";
	double u = 0, sy = 0;
	assert_int_equal(cg_parse_cpu_stat(s, &u, &sy), 0);
	assert_true(u > 1.4999 && u < 1.5001);
	assert_true(sy > 0.9999 && sy < 1.0001);
	assert_int_equal(cg_parse_cpu_stat("usage_usec 1\nuser_usec 1\n", &u, &sy), -ENOENT);
}

static void test_parse_cpuacct_stat(void **state)
{
	(void)state;
	double u = 0, sy = 0;
	assert_int_equal(cg_parse_cpuacct_stat("user 150\nsystem 50\n", 100, &u, &sy), 0);
	assert_true(u > 1.4999 && u < 1.5001);
	assert_true(sy > 0.4999 && sy < 0.5001);
	assert_int_equal(cg_parse_cpuacct_stat("user 150\nsystem 50\n", 0, &u, &sy), -EINVAL);
	assert_int_equal(cg_parse_cpuacct_stat("user 150\n", 100, &u, &sy), -ENOENT);
}

static void test_split_cpu(void **state)
{
	(void)state;
	double u = -1, sy = -1;
	cg_split_cpu(1.0, 0.3, 0.1, &u, &sy);
	assert_true(u > 0.7499 && u < 0.7501);
	assert_true(sy > 0.2499 && sy < 0.2501);
	cg_split_cpu(0.5, 0, 0, &u, &sy); /* too short to be sampled */
	assert_true(u > 0.4999 && u < 0.5001);
	assert_true(sy == 0);
}

static void test_parse_memory(void **state)
{
	(void)state;
	uint64_t n = 0;
	assert_int_equal(cg_parse_memory_events("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n", &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(cg_parse_memory_events("low 0\nhigh 0\nmax 0\noom 0\n", &n), -ENOENT); /* before 4.13 */
	assert_int_equal(cg_parse_oom_control("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(cg_parse_oom_control("oom_kill_disable 0\nunder_oom 0\n", &n), -ENOENT);
	bool hit = true;
	assert_int_equal(cg_parse_pids_events("max 0\n", &hit), 0);
	assert_false(hit);
	assert_int_equal(cg_parse_pids_events("max 5\n", &hit), 0);
	assert_true(hit);
}

static void test_parse_proc_start(void **state)
{
	(void)state;
	uint64_t t = 0;
	/* comm with spaces and a ')' of its own; starttime (field 22) is 777. */
	const char *s = "1234 (a b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 777 1000 50 "
			"18446744073709551615\n";
	assert_int_equal(cg_parse_proc_start(s, &t), 0);
	assert_int_equal(t, 777);
	assert_int_equal(cg_parse_proc_start("1234 (x) S 1 2 3\n", &t), -EINVAL);
	assert_int_equal(cg_parse_proc_start("no parenthesis", &t), -EINVAL);
	/* Other fields by number: 3 is the state letter (not a number), 4 the parent, 24 the last here. */
	assert_int_equal(cg_parse_proc_field(s, 4, &t), 0);
	assert_int_equal(t, 1);
	assert_int_equal(cg_parse_proc_field(s, 24, &t), 0);
	assert_int_equal(t, 50);
	assert_int_equal(cg_parse_proc_field(s, 3, &t), -EINVAL);
	assert_int_equal(cg_parse_proc_field(s, 26, &t), -EINVAL);
	/* Our own: started after boot, not in the future. */
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_int_equal(cg_parse_proc_start(buf, &t), 0);
	struct timespec up;
	clock_gettime(CLOCK_BOOTTIME, &up);
	assert_true(t <= (uint64_t)(up.tv_sec + 1) * (uint64_t)sysconf(_SC_CLK_TCK));
}

static void test_started_before(void **state)
{
	(void)state;
	/* Boot at 1000, started 5 s later (500 ticks at 100 Hz). */
	assert_true(cg_started_before(500, 100, 1000, 1010));
	assert_true(cg_started_before(500, 100, 1000, 1003));  /* within btime's slack */
	assert_false(cg_started_before(500, 100, 1000, 1002)); /* a later process reusing the pid */
	assert_true(cg_started_before(500, 0, 1000, 0));       /* unknown clock: never call it dead */
}

/* ---- live: root only, on this host (v1) and in the v2 VM ---------------------------- */

/* The live cases make real cgroups under the host's hierarchies: root only. */
#define NEED_LIVE()                                                                   \
	do {                                                                          \
		if (geteuid() != 0)                                                   \
			AL_SKIP("not root: the live cgroup cases make real cgroups"); \
	} while (0)

struct snap {
	char path[HOST_CG__COUNT][PATH_MAX];
};

static void snap_paths(const struct cg_job *cg, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		const char *p = cg_job_path(cg, c);
		if (p)
			snprintf(s->path[c], sizeof(s->path[c]), "%s", p);
	}
}

static void assert_gone(const struct snap *s)
{
	for (int c = 0; c < HOST_CG__COUNT; c++)
		if (s->path[c][0] && access(s->path[c], F_OK) == 0)
			fail_msg("%s is still there", s->path[c]);
}

static void assert_present(const struct snap *s)
{
	for (int c = 0; c < HOST_CG__COUNT; c++)
		if (s->path[c][0] && access(s->path[c], F_OK) != 0)
			fail_msg("%s is gone", s->path[c]);
}

static struct cg_job *make_job(uint64_t mem, uint64_t pids, uint64_t cpu)
{
	struct cg_limits lim = {.memory_bytes = mem, .pids = pids, .cpu_millis = cpu};
	lim.need_memory = mem != AL_UNLIMITED;
	lim.need_pids = pids != AL_UNLIMITED;
	lim.need_cpu = cpu != AL_UNLIMITED;
	struct cg_job *cg = NULL;
	struct al_error err = {0};
	int r = cg_create(&lim, &cg, &err);
	if (r < 0)
		fail_msg("cg_create: %s", err.msg);
	assert_non_null(cg);
	const char *v = cg_version_name(cg);
	print_message("job cgroup: %s, memory at %s\n", v, cg_job_path(cg, HOST_CG_MEMORY));
	/* CLONE_INTO_CGROUP only when everything is on v2. */
	assert_true((cg_clone_fd(cg) >= 0) == (strcmp(v, "v2") == 0));
	return cg;
}

/* Forks a child that waits until it is in the job's cgroup, then runs fn: what the supervisor
 * does with init. Moved in by pid before its release (cg_attach), or, self_join (v1), joining
 * itself once released (cg_join_fds, cg_join_self: init's way), after which it must hold none of
 * the files (exit 11 if it does). */
static pid_t spawn_joined(struct cg_job *cg, int (*fn)(void *), void *arg, bool self_join)
{
	int go[2], fds[CG_JOIN_MAX], n = 0;
	struct al_error err = {0};
	if (self_join && (n = cg_join_fds(cg, fds, &err)) < 0)
		fail_msg("cg_join_fds: %s", err.msg);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char b;
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(100);
		if (self_join && cg_join_self(fds, n) < 0)
			_exit(10);
		for (int i = 0; i < n; i++)
			if (fcntl(fds[i], F_GETFD) != -1 || errno != EBADF)
				_exit(11);
		_exit(fn(arg));
	}
	close(go[0]);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	if (!self_join && cg_attach(cg, pid, &err) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("cg_attach: %s", err.msg);
	}
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	return pid;
}

static pid_t spawn_in(struct cg_job *cg, int (*fn)(void *), void *arg)
{
	return spawn_joined(cg, fn, arg, false);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Touches every page through a volatile pointer, so the compiler cannot drop the stores. */
static void touch(char *m, size_t size, char v)
{
	for (size_t o = 0; o < size; o += 4096)
		((volatile char *)m)[o] = v;
}

static double cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Spins for seconds of wall time (what a throttled job experiences). */
static void spin(double seconds)
{
	double end = now_s() + seconds;
	volatile unsigned long x = 0;
	while (now_s() < end)
		x++;
}

/* Burns seconds of CPU time, however long that takes on a loaded host. */
static void burn(double seconds)
{
	double end = cpu_s() + seconds;
	volatile unsigned long x = 0;
	while (cpu_s() < end)
		x++;
}

/* A few children, each allocating and touching 4 MiB and burning 30 ms of CPU. */
static int basic_payload(void *arg)
{
	(void)arg;
	alarm(10);
	for (int i = 0; i < 4; i++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			char *m = malloc(4 * MiB);
			if (!m)
				_exit(2);
			touch(m, 4 * MiB, 1);
			burn(0.03);
			_exit(((volatile char *)m)[4096] == 1 ? 0 : 3);
		}
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	return bad ? 4 : 0;
}

/* basic_payload in cg (moved in by pid, or joining itself): its counters hold what it used. */
static void run_basic(struct cg_job *cg, bool self_join)
{
	pid_t pid = spawn_joined(cg, basic_payload, NULL, self_join);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	struct cg_usage u;
	assert_int_equal(cg_usage(cg, &u), 0);
	print_message("cpu %.3f+%.3f s, peak %llu, oom %llu, pids hit %d, v%d\n", u.user_s, u.system_s,
		      (unsigned long long)u.peak_memory_bytes, (unsigned long long)u.oom_kills, u.pids_limit_hit,
		      u.version);
	assert_true(u.user_s + u.system_s >= 0.11); /* four children burned 30 ms each */
	assert_true(u.user_s + u.system_s < 5.0);
	assert_true(u.peak_memory_bytes >= 4 * MiB); /* at least one child's 4 MiB */
	assert_true(u.peak_memory_bytes <= 64 * MiB);
	assert_int_equal(u.oom_kills, 0);
	assert_false(u.pids_limit_hit);
	assert_true(u.memory_limited && u.pids_limited && u.cpu_limited);
	assert_true(u.version == 1 || u.version == 2);
}

static void test_live_basic(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_job *cg = make_job(64 * MiB, 16, 500);
	struct snap s;
	snap_paths(cg, &s);
	assert_present(&s);
	run_basic(cg, false);
	cg_destroy(cg);
	assert_gone(&s);
	cg_destroy(NULL);
}

/* v1: a process joins the job's cgroups itself (cg_join_fds, cg_join_self: writing "0" to each
 * hierarchy's tasks), as init does; the cgroups' own counters then hold what it and its children
 * used. v2 refuses (threads cannot move between v2 domains: a lone v2 hierarchy is joined at
 * birth instead). */
static void test_live_join_self(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_job *cg = make_job(64 * MiB, 16, 500);
	if (!cg_joins_self(cg)) {
		int fds[CG_JOIN_MAX];
		struct al_error err = {0};
		assert_int_equal(cg_join_fds(cg, fds, &err), -EINVAL);
		cg_destroy(cg);
		return;
	}
	run_basic(cg, true);
	cg_destroy(cg);
}

/* cg_plan names the job's directories and makes none; cg_make makes them (once); a job moved in
 * (cg_attach) must be made first, and one born inside has no CLONE_INTO_CGROUP fd before it is. */
static void test_live_plan_then_make(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_limits lim = {.memory_bytes = 64 * MiB, .pids = 16, .cpu_millis = 500};
	lim.need_memory = lim.need_pids = lim.need_cpu = true;
	struct cg_job *cg = NULL;
	struct al_error err = {0};
	if (cg_plan(&lim, &cg, &err) < 0)
		fail_msg("cg_plan: %s", err.msg);
	assert_non_null(cg);
	struct snap s;
	snap_paths(cg, &s);
	assert_true(s.path[HOST_CG_MEMORY][0] && s.path[HOST_CG_PIDS][0] && s.path[HOST_CG_CPU][0]);
	assert_gone(&s); /* planned: named, not made */
	assert_int_equal(cg_clone_fd(cg), -1);
	assert_false(cg_make_failed(cg));
	assert_int_equal(cg_attach(cg, getpid(), &err), -EINVAL); /* nothing to move into yet */
	if (cg_make(cg, &err) < 0)
		fail_msg("cg_make: %s", err.msg);
	assert_present(&s);
	assert_int_equal(cg_make(cg, &err), 0); /* made once */
	assert_true((cg_clone_fd(cg) >= 0) == cg_clone_into(cg));
	cg_destroy(cg);
	assert_gone(&s);
	/* A plan that is never made (a refusal before the spawn) leaves nothing either. */
	assert_int_equal(cg_plan(&lim, &cg, &err), 0);
	snap_paths(cg, &s);
	cg_destroy(cg);
	assert_gone(&s);
}

struct bomb_report {
	int forked, err;
};

/* Forks until refused (at most 64: a guard should pids.max not hold), reports, then waits. */
static int fork_bomb(void *arg)
{
	int fd = *(int *)arg;
	struct rlimit nproc = {4096, 4096}; /* a second guard when not root (root ignores it) */
	setrlimit(RLIMIT_NPROC, &nproc);
	alarm(5);
	struct bomb_report rep = {0, 0};
	for (int i = 0; i < 64; i++) {
		pid_t p = fork();
		if (p < 0) {
			rep.err = errno;
			break;
		}
		if (p == 0) {
			alarm(5); /* alarms are not inherited */
			pause();
			_exit(0);
		}
		rep.forked++;
	}
	if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		return 1;
	pause();
	return 0;
}

static void test_live_fork_bomb(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_job *cg = make_job(AL_UNLIMITED, 16, AL_UNLIMITED);
	struct snap s;
	snap_paths(cg, &s);
	int rp[2];
	assert_int_equal(pipe2(rp, O_CLOEXEC), 0);
	pid_t pid = spawn_in(cg, fork_bomb, &rp[1]);
	close(rp[1]);
	struct bomb_report rep = {-1, 0};
	assert_int_equal(read(rp[0], &rep, sizeof(rep)), (ssize_t)sizeof(rep));
	close(rp[0]);
	print_message("forked %d, then %s\n", rep.forked, strerror(rep.err));
	assert_int_equal(rep.err, EAGAIN);
	assert_int_equal(rep.forked, 15); /* 16 with the bomb itself */
	struct cg_usage u;
	assert_int_equal(cg_usage(cg, &u), 0);
	assert_true(u.pids_limit_hit);
	assert_true(u.pids_limited);
	assert_int_equal(cg_kill(cg), 0);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	cg_destroy(cg);
	assert_gone(&s);
}

/* Allocates 1 MiB at a time, touching every page, up to 256 MiB (a guard). */
static int memory_bomb(void *arg)
{
	(void)arg;
	alarm(5);
	for (int i = 0; i < 256; i++) {
		char *m = malloc(MiB);
		if (!m)
			return 2;
		touch(m, MiB, (char)(i + 1));
	}
	return 3; /* the limit did not hold */
}

static void test_live_memory_bomb(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_job *cg = make_job(64 * MiB, 64, AL_UNLIMITED);
	struct snap s;
	snap_paths(cg, &s);
	pid_t pid = spawn_in(cg, memory_bomb, NULL);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFSIGNALED(st))
		fail_msg("the memory bomb exited with %d", WEXITSTATUS(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	struct cg_usage u;
	assert_int_equal(cg_usage(cg, &u), 0);
	print_message("peak %llu, oom kills %llu\n", (unsigned long long)u.peak_memory_bytes,
		      (unsigned long long)u.oom_kills);
	assert_true(u.oom_kills >= 1);
	assert_true(u.memory_limited);
	assert_true(u.peak_memory_bytes >= 48 * MiB);
	assert_true(u.peak_memory_bytes <= 64 * MiB + MiB);
	cg_destroy(cg);
	assert_gone(&s);
}

struct spin_arg {
	double secs;
	int fd; /* the spinner reports the CPU time it saw itself use */
};

static int spinner(void *arg)
{
	struct spin_arg *a = arg;
	spin(a->secs);
	double used = cpu_s();
	return write(a->fd, &used, sizeof(used)) == (ssize_t)sizeof(used) ? 0 : 1;
}

static int burner(void *arg)
{
	(void)arg;
	spin(30); /* killed long before */
	return 0;
}

/* CPU ticks (user + system) of pid, from /proc/<pid>/stat. */
static uint64_t ticks_of(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = 0;
	uint64_t u = 0, s = 0;
	assert_int_equal(cg_parse_proc_field(buf, 14, &u), 0);
	assert_int_equal(cg_parse_proc_field(buf, 15, &s), 0);
	return u + s;
}

/* A held sandbox's freezer (lim.freezer): frozen, a spinner uses no CPU; thawed, it spins again; a
 * frozen job is killed and thawed (cg_thaw_killed) and dies. */
static void test_live_freeze(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_limits lim = {
		.memory_bytes = AL_UNLIMITED, .pids = AL_UNLIMITED, .cpu_millis = AL_UNLIMITED, .freezer = true};
	struct cg_job *cg = NULL;
	struct al_error err = {0};
	if (cg_create(&lim, &cg, &err) < 0)
		fail_msg("cg_create: %s", err.msg);
	if (!cg_freezer(cg)) {
		print_message("no freezer here: %s\n", cg_freezer_why(cg));
		assert_int_equal(cg_freeze(cg, true, 100, &err), -ENOTSUP);
		cg_destroy(cg);
		return;
	}
	pid_t pid = spawn_in(cg, burner, NULL);
	assert_int_equal(cg_freeze(cg, true, 2000, &err), 0);
	uint64_t t0 = ticks_of(pid);
	usleep(300000);
	assert_int_equal(ticks_of(pid), t0);
	assert_int_equal(cg_freeze(cg, false, 2000, &err), 0);
	usleep(300000);
	assert_true(ticks_of(pid) > t0);
	assert_int_equal(cg_freeze(cg, true, 2000, &err), 0);
	cg_thaw_killed(cg);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	cg_destroy(cg);
}

static void test_live_cpu(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_job *cg = make_job(AL_UNLIMITED, AL_UNLIMITED, 500);
	struct snap s;
	snap_paths(cg, &s);
	int rp[2];
	assert_int_equal(pipe2(rp, O_CLOEXEC), 0);
	struct spin_arg a = {.secs = 1.0, .fd = rp[1]};
	double t0 = now_s();
	pid_t pid = spawn_in(cg, spinner, &a);
	close(rp[1]);
	double self = -1;
	assert_int_equal(read(rp[0], &self, sizeof(self)), (ssize_t)sizeof(self));
	close(rp[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	double wall = now_s() - t0;
	struct cg_usage u;
	assert_int_equal(cg_usage(cg, &u), 0);
	double cpu = u.user_s + u.system_s, ratio = cpu / wall;
	print_message("cpu %.3f s (the spinner saw %.3f) over %.3f s wall: %.2f\n", cpu, self, wall, ratio);
	assert_true(u.cpu_limited);
	/* Unlimited it would be ~1.0 on an idle host; a loaded host only lowers it. */
	assert_true(ratio < 0.65);
	/* The accounting saw the spin (the cgroup also counts the fork and exit). */
	assert_true(cpu >= self * 0.9 && cpu <= self * 1.1 + 0.02);
	cg_destroy(cg);
	assert_gone(&s);
}

/* As nobody, this host's cgroups are root's: nothing is required → no cgroup; memory required → a
 * refusal that names the controller. */
static void test_unprivileged_refusal(void **state)
{
	(void)state;
	NEED_LIVE();
	int ep[2];
	assert_int_equal(pipe2(ep, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ep[0]);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(10);
		struct cg_limits none = {
			.memory_bytes = AL_UNLIMITED, .pids = AL_UNLIMITED, .cpu_millis = AL_UNLIMITED};
		struct cg_job *cg = (struct cg_job *)1;
		struct al_error err = {0};
		if (cg_create(&none, &cg, &err) != 0 || cg != NULL)
			_exit(11);
		struct cg_limits need = {.memory_bytes = 64 * MiB,
					 .pids = AL_UNLIMITED,
					 .cpu_millis = AL_UNLIMITED,
					 .need_memory = true};
		if (cg_create(&need, &cg, &err) >= 0 || cg != NULL)
			_exit(12);
		(void)!write(ep[1], err.msg, strlen(err.msg));
		_exit(0);
	}
	close(ep[1]);
	char msg[AL_ERROR_MAX + 1] = "";
	ssize_t n = read(ep[0], msg, AL_ERROR_MAX);
	close(ep[0]);
	if (n > 0)
		msg[n] = '\0';
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	print_message("%s\n", msg);
	const char *want = "cgroup memory: no writable v1 or v2 memory controller for this user";
	assert_true(strncmp(msg, want, strlen(want)) == 0);
}

/* A job whose owner died is removed (its process killed); a live owner's job is not. */
static int stale_owner(void *arg)
{
	(void)arg;
	return 0;
}

static int orphan(void *arg)
{
	(void)arg;
	alarm(10);
	pause();
	return 0;
}

static void test_live_stale(void **state)
{
	(void)state;
	NEED_LIVE();
	struct cg_job *mine = make_job(64 * MiB, AL_UNLIMITED, AL_UNLIMITED);
	struct snap live_snap, dead_snap;
	snap_paths(mine, &live_snap);
	/* A supervisor that crashes: it creates a job, puts a process in it, and dies. */
	int pp[2];
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	pid_t owner = fork();
	assert_true(owner >= 0);
	if (owner == 0) {
		struct cg_limits lim = {.memory_bytes = 64 * MiB, .pids = 8, .cpu_millis = AL_UNLIMITED};
		struct cg_job *cg = NULL;
		if (cg_create(&lim, &cg, NULL) < 0 || !cg)
			_exit(1);
		struct snap s;
		snap_paths(cg, &s);
		pid_t o = fork();
		if (o == 0)
			_exit(orphan(NULL));
		if (o < 0 || cg_attach(cg, o, NULL) < 0)
			_exit(2);
		(void)!write(pp[1], &s, sizeof(s));
		_exit(stale_owner(NULL)); /* no cg_destroy: the crash */
	}
	int st;
	assert_int_equal(waitpid(owner, &st, 0), owner);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(read(pp[0], &dead_snap, sizeof(dead_snap)), (ssize_t)sizeof(dead_snap));
	close(pp[0]);
	close(pp[1]);
	assert_present(&dead_snap);
	cg_cleanup_stale();
	assert_gone(&dead_snap);
	assert_present(&live_snap);
	cg_destroy(mine);
	assert_gone(&live_snap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_roundtrip),
		cmocka_unit_test(test_name_rejects),
		cmocka_unit_test(test_cpu_max),
		cmocka_unit_test(test_parse_keyed),
		cmocka_unit_test(test_parse_cpu_stat),
		cmocka_unit_test(test_parse_cpuacct_stat),
		cmocka_unit_test(test_split_cpu),
		cmocka_unit_test(test_parse_memory),
		cmocka_unit_test(test_parse_proc_start),
		cmocka_unit_test(test_started_before),
		cmocka_unit_test(test_live_basic),
		cmocka_unit_test(test_live_join_self),
		cmocka_unit_test(test_live_plan_then_make),
		cmocka_unit_test(test_live_fork_bomb),
		cmocka_unit_test(test_live_memory_bomb),
		cmocka_unit_test(test_live_cpu),
		cmocka_unit_test(test_live_freeze),
		cmocka_unit_test(test_unprivileged_refusal),
		cmocka_unit_test(test_live_stale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
