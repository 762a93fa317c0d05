/* test_held.c — held sandboxes through the library: each exec runs in a spare payload made ahead
 * of time (hold.c, payload.c). Results, stdin, failures to start, the spare replaced when it dies,
 * no descriptor or process left behind. Real sandboxes: runs as root or where user namespaces are
 * allowed (the integration tests cover the server on top). */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "airlock/airlock.h"

struct fixture {
	struct al_sandbox *sb;
};

static int setup(void **state)
{
	static struct fixture f;
	struct al_policy *p = NULL;
	struct al_error e = {0};
	assert_int_equal(al_policy_new(&p), 0);
	int r = al_sandbox_create(p, &f.sb, &e);
	al_policy_free(p);
	if (r < 0) {
		fprintf(stderr, "test_held: cannot create a sandbox here: %s\n", e.msg);
		return -1;
	}
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	al_sandbox_destroy(f->sb);
	return 0;
}

/* Runs argv in sb with stdin_fd (-1: none) and network posture net (-1: the default); the verdict,
 * or NULL with *msg set when the spawn is refused. */
static struct al_verdict *run_net(struct al_sandbox *sb, int net, const char *const *argv, char *msg, size_t cap)
{
	struct al_policy *p = NULL;
	struct al_error e = {0};
	int argc = 0;
	while (argv[argc])
		argc++;
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_policy_set_argv(p, argc, argv, &e), 0);
	assert_int_equal(al_policy_set_sandbox(p, sb, &e), 0);
	if (net >= 0)
		assert_int_equal(al_policy_set_network(p, (enum al_net_posture)net, &e), 0);
	struct al_job *j = NULL;
	struct al_verdict *v = NULL;
	if (al_job_spawn(p, NULL, &j, &e) < 0) {
		snprintf(msg, cap, "%.400s", e.msg);
		al_policy_free(p);
		return NULL;
	}
	if (al_job_wait(j, &v, &e) < 0)
		fail_msg("wait: %s", e.msg);
	al_job_free(j);
	al_policy_free(p);
	return v;
}

/* Runs argv in sb with stdin_fd (-1: none); the verdict. */
static struct al_verdict *run(struct al_sandbox *sb, int stdin_fd, const char *cwd, const char *const *argv)
{
	struct al_policy *p = NULL;
	struct al_error e = {0};
	int argc = 0;
	while (argv[argc])
		argc++;
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_policy_set_argv(p, argc, argv, &e), 0);
	assert_int_equal(al_policy_set_sandbox(p, sb, &e), 0);
	if (cwd)
		assert_int_equal(al_policy_set_cwd(p, cwd, &e), 0);
	struct al_spawn_opts o = {.size = sizeof(o), .stdin_fd = stdin_fd};
	struct al_job *j = NULL;
	struct al_verdict *v = NULL;
	if (al_job_spawn(p, &o, &j, &e) < 0)
		fail_msg("spawn: %s", e.msg);
	if (al_job_wait(j, &v, &e) < 0)
		fail_msg("wait: %s", e.msg);
	al_job_free(j);
	al_policy_free(p);
	return v;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Our descriptors once the next spare is ready: after an exec a thread takes the spare's and
 * makes its cgroup's (attach.c), so the count settles shortly after (polled, 2 s at most). */
static int settled_fds(void)
{
	int last = count_fds(), same = 0;
	for (int tries = 0; tries < 200 && same < 5; tries++) {
		usleep(10000);
		int n = count_fds();
		same = n == last ? same + 1 : 0;
		last = n;
	}
	return last;
}

/* Polls until we hold want descriptors again (5 s at most): an ended exec's cgroup and pidfd are
 * released once its exec init is gone, which may wait for a grace period (slow in an emulated VM).
 * Returns the last count. */
static int fds_back_to(int want)
{
	int n = count_fds();
	for (int tries = 0; tries < 500 && n != want; tries++) {
		usleep(10000);
		n = count_fds();
	}
	return n;
}

/* Every descendant of pid, depth first, into out[]; returns how many. */
static int descendants(pid_t pid, pid_t *out, int cap, int n)
{
	char path[320];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, de->d_name);
		FILE *fp = fopen(path, "re");
		int c;
		while (fp && fscanf(fp, "%d", &c) == 1 && n < cap) {
			out[n++] = c;
			n = descendants(c, out, cap, n);
		}
		if (fp)
			fclose(fp);
	}
	if (d)
		closedir(d);
	return n;
}

static void test_results(void **state)
{
	struct fixture *f = *state;
	struct al_verdict *v =
		run(f->sb, -1, NULL, (const char *const[]){"/bin/sh", "-c", "echo hi; echo err >&2; exit 3", NULL});
	assert_int_equal(v->status, AL_STATUS_EXITED);
	assert_int_equal(v->exit_code, 3);
	assert_string_equal(v->out.data, "hi\n");
	assert_string_equal(v->err.data, "err\n");
	al_verdict_free(v);
	/* The payload is confined as in a one-shot sandbox: unprivileged uid, no_new_privs, no caps. */
	v = run(f->sb, -1, NULL,
		(const char *const[]){"/bin/sh", "-c", "id -u; grep -E '^(NoNewPrivs|CapEff)' /proc/self/status; pwd",
				      NULL});
	assert_int_equal(v->exit_code, 0);
	assert_string_equal(v->out.data, "1000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n/workspace\n");
	al_verdict_free(v);
	/* Files persist between execs; the cwd of the request is honoured. */
	v = run(f->sb, -1, NULL, (const char *const[]){"/bin/sh", "-c", "mkdir -p d && echo kept > d/f", NULL});
	assert_int_equal(v->exit_code, 0);
	al_verdict_free(v);
	v = run(f->sb, -1, "/workspace/d", (const char *const[]){"/bin/cat", "f", NULL});
	assert_int_equal(v->exit_code, 0);
	assert_string_equal(v->out.data, "kept\n");
	al_verdict_free(v);
}

static void test_stdin(void **state)
{
	struct fixture *f = *state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	close(p[1]);
	struct al_verdict *v = run(f->sb, p[0], NULL, (const char *const[]){"/bin/cat", NULL});
	close(p[0]);
	assert_int_equal(v->exit_code, 0);
	assert_string_equal(v->out.data, "abc");
	al_verdict_free(v);
	/* Without one, stdin is /dev/null. */
	v = run(f->sb, -1, NULL, (const char *const[]){"/bin/sh", "-c", "cat; readlink /proc/self/fd/0", NULL});
	assert_string_equal(v->out.data, "/dev/null\n");
	al_verdict_free(v);
}

static void test_failures(void **state)
{
	struct fixture *f = *state;
	/* A command that does not exist and a cwd that does not exist: a setup error naming it, the
	 * same as a one-shot sandbox; the sandbox keeps working. */
	struct al_verdict *v = run(f->sb, -1, NULL, (const char *const[]){"/no/such/cmd", NULL});
	assert_int_equal(v->status, AL_STATUS_SETUP_ERROR);
	assert_non_null(strstr(v->setup.msg, "/no/such/cmd"));
	al_verdict_free(v);
	v = run(f->sb, -1, "/workspace/missing", (const char *const[]){"/bin/true", NULL});
	assert_int_equal(v->status, AL_STATUS_SETUP_ERROR);
	assert_non_null(strstr(v->setup.msg, "/workspace/missing"));
	al_verdict_free(v);
	v = run(f->sb, -1, NULL, (const char *const[]){"/bin/true", NULL});
	assert_int_equal(v->status, AL_STATUS_EXITED);
	assert_int_equal(v->exit_code, 0);
	al_verdict_free(v);
}

/* A spare is made after each exec: a sandbox holds its init and at most one spare (exec init +
 * payload) between execs, and no descriptor of ours is spent per exec. A spare killed from outside
 * (as an OOM kill would) is replaced on the next exec. */
static void test_spare(void **state)
{
	struct fixture *f = *state;
	struct al_verdict *v = run(f->sb, -1, NULL, (const char *const[]){"/bin/true", NULL});
	al_verdict_free(v);
	int fds = settled_fds();
	for (int i = 0; i < 30; i++) {
		v = run(f->sb, -1, NULL, (const char *const[]){"/bin/sh", "-c", "sleep 100 & exit 0", NULL});
		assert_int_equal(v->exit_code, 0);
		al_verdict_free(v);
	}
	assert_int_equal(fds_back_to(fds), fds);
	pid_t d[64];
	int n = 0;
	for (int tries = 0; tries < 200; tries++) { /* the spare is made just after the exec is handed over */
		n = descendants(getpid(), d, 64, 0);
		if (n == 3)
			break;
		usleep(10000);
	}
	assert_int_equal(n, 3); /* init, the spare's exec init, its payload: the sleeps are gone */
	/* Kill the waiting payload: the next exec still runs. */
	assert_int_equal(kill(d[2], SIGKILL), 0);
	usleep(50000);
	v = run(f->sb, -1, NULL, (const char *const[]){"/bin/sh", "-c", "echo ok", NULL});
	assert_int_equal(v->status, AL_STATUS_EXITED);
	assert_string_equal(v->out.data, "ok\n");
	al_verdict_free(v);
}

/* Polls until pid has want descendants (2 s at most); how many it has. */
static int wait_descendants(int want)
{
	pid_t d[64];
	int n = 0;
	for (int tries = 0; tries < 200; tries++) {
		if ((n = descendants(getpid(), d, 64, 0)) == want)
			break;
		usleep(10000);
	}
	return n;
}

/* Destroying the sandbox ends its init and its spare; the other sandbox is untouched. */
static void test_destroy(void **state)
{
	(void)state;
	int n0 = wait_descendants(3); /* the fixture's sandbox: init and its spare */
	assert_int_equal(n0, 3);
	struct al_policy *p = NULL;
	struct al_error e = {0};
	struct al_sandbox *sb = NULL;
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_sandbox_create(p, &sb, &e), 0);
	al_policy_free(p);
	struct al_verdict *v = run(sb, -1, NULL, (const char *const[]){"/bin/true", NULL});
	al_verdict_free(v);
	assert_int_equal(wait_descendants(n0 + 3), n0 + 3);
	al_sandbox_destroy(sb);
	assert_int_equal(wait_descendants(n0), n0);
}

/* Names of the cgroups this process made (airlock-<pid>-...), found under /sys/fs/cgroup: how many
 * distinct ones lie inside another of ours (an exec's or a spare's, inside its sandbox's), and
 * whether top (a sandbox's name, or NULL) is among them at any depth. */
struct cg_census {
	char prefix[32];
	char inner[64][64];
	int ninner;
	const char *top;
	bool top_seen;
};

static void census_walk(struct cg_census *c, const char *dir, int depth, bool inside)
{
	DIR *d = depth < 8 ? opendir(dir) : NULL;
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		size_t len = strlen(de->d_name);
		bool ours = strncmp(de->d_name, c->prefix, strlen(c->prefix)) == 0 && len < sizeof(c->inner[0]);
		if (ours && c->top && strcmp(de->d_name, c->top) == 0)
			c->top_seen = true;
		if (ours && inside) {
			int i = 0;
			while (i < c->ninner && strcmp(c->inner[i], de->d_name) != 0)
				i++;
			if (i == c->ninner && c->ninner < 64)
				memcpy(c->inner[c->ninner++], de->d_name, len + 1);
		}
		char sub[4096];
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		census_walk(c, sub, depth + 1, inside || ours);
	}
	if (d)
		closedir(d);
}

static void census(struct cg_census *c, const char *top)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->prefix, sizeof(c->prefix), "airlock-%d-", (int)getpid());
	c->top = top;
	census_walk(c, "/sys/fs/cgroup", 0, false);
}

/* Each exec's own cgroup is removed soon after it ends (by the sandbox's worker, once its exec init
 * is gone), none piles up across execs, and none is left once the sandbox goes. */
static void test_exec_cgroups(void **state)
{
	(void)state;
	struct al_policy *p = NULL;
	struct al_error e = {0};
	struct al_sandbox *sb = NULL;
	struct cg_census start, before, c;
	census(&start, NULL);
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_sandbox_create(p, &sb, &e), 0);
	al_policy_free(p);
	/* The sandbox's code's own cgroup (its memory limit's, beneath the sandbox's) is there from
	 * the start, with no spare yet: one more inner cgroup, wherever there are ours. */
	census(&before, NULL);
	assert_true(before.ninner == start.ninner + 1 || (before.ninner == 0 && start.ninner == 0));
	for (int i = 0; i < 12; i++) {
		struct al_verdict *v =
			run(sb, -1, NULL, (const char *const[]){"/bin/sh", "-c", "sleep 100 & exit 0", NULL});
		assert_int_equal(v->exit_code, 0);
		al_verdict_free(v);
	}
	/* The new sandbox's name: one of ours not there before. */
	census(&c, NULL);
	if (c.ninner == 0 && before.ninner == 0) {
		fprintf(stderr, "test_held: no cgroup of ours here (no delegation): nothing to count\n");
		al_sandbox_destroy(sb);
		return;
	}
	/* At most one inner cgroup per sandbox that has had an exec: its ready spare's. */
	for (int tries = 0; tries < 300 && c.ninner > before.ninner + 1; tries++) {
		usleep(10000);
		census(&c, NULL);
	}
	assert_int_equal(c.ninner, before.ninner + 1);
	char spare_cg[64] = ""; /* the one that was not there before */
	for (int i = 0; i < c.ninner; i++) {
		bool old = false;
		for (int k = 0; k < before.ninner; k++)
			old |= strcmp(before.inner[k], c.inner[i]) == 0;
		if (!old)
			snprintf(spare_cg, sizeof(spare_cg), "%s", c.inner[i]);
	}
	assert_true(spare_cg[0]);
	al_sandbox_destroy(sb);
	census(&c, spare_cg);
	assert_false(c.top_seen);		  /* the spare's cgroup went with its sandbox */
	assert_int_equal(c.ninner, start.ninner); /* and so did the code's */
}

/* A sandbox made with a network posture (allow: its proxy listens on 127.0.0.1:3128 in the
 * sandbox's namespace): an exec asking for it shares that namespace; an exec without gets one of
 * its own holding only lo, up ("none"); more than the sandbox has is refused. */
static void test_network(void **state)
{
	(void)state;
	struct al_policy *p = NULL;
	struct al_error e = {0};
	struct al_sandbox *sb = NULL;
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_policy_allow_hosts(p, "example.invalid", &e), 0);
	assert_int_equal(al_sandbox_create(p, &sb, &e), 0);
	al_policy_free(p);
	/* connect() to the proxy's port, then a server of the exec's own on 127.0.0.1 and ::1: the
	 * proxy answers in the sandbox's namespace only (0); in the exec's own namespace the port is
	 * refused (111: lo up; an lo down would say 101, unreachable) and its own echo works. */
	const char *const probe[] = {
		"/bin/sh", "-c",
		"readlink /proc/self/ns/net; python3 -c '"
		"import socket\n"
		"try: socket.create_connection((\"127.0.0.1\", 3128), 2).close(); print(0)\n"
		"except OSError as e: print(e.errno)\n"
		"for fam, host in ((socket.AF_INET, \"127.0.0.1\"), (socket.AF_INET6, \"::1\")):\n"
		"    s = socket.socket(fam); s.bind((host, 0)); s.listen()\n"
		"    c = socket.create_connection((host, s.getsockname()[1]), 2); a, _ = s.accept()\n"
		"    c.sendall(b\"x\"); print(fam, a.recv(1).decode())'",
		NULL};
	char msg[512] = "", with[2][256], without[2][256];
	for (int i = 0; i < 2; i++) {
		struct al_verdict *v = run_net(sb, AL_NET_ALLOW, probe, msg, sizeof(msg));
		assert_non_null(v);
		assert_int_equal(v->exit_code, 0);
		snprintf(with[i], sizeof(with[i]), "%s", v->out.data);
		assert_non_null(strstr(v->enforced_json, "\"network\":\"allow\""));
		al_verdict_free(v);
		v = run_net(sb, -1, probe, msg, sizeof(msg));
		assert_non_null(v);
		assert_int_equal(v->exit_code, 0);
		snprintf(without[i], sizeof(without[i]), "%s", v->out.data);
		assert_non_null(strstr(v->enforced_json, "\"network\":\"none\""));
		assert_non_null(strstr(v->enforced_json, "\"loopback\":\"up\""));
		al_verdict_free(v);
	}
	assert_string_equal(with[0], with[1]);		      /* the sandbox's namespace, both times */
	assert_non_null(strstr(with[0], "\n0\n"));	      /* the proxy's port answers */
	assert_non_null(strstr(without[0], "\n111\n"));	      /* ECONNREFUSED: lo up, no proxy there */
	assert_non_null(strstr(without[0], "\n2 x\n10 x\n")); /* its own echo, IPv4 and IPv6 */
	/* Not the sandbox's namespace (two execs' own namespaces may share an inode number: the
	 * first is gone before the second is made, and the kernel reuses the number). */
	assert_string_not_equal(without[0], with[0]);
	assert_string_not_equal(without[1], with[0]);
	assert_null(run_net(sb, AL_NET_HOST, probe, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "made with network allow"));
	al_sandbox_destroy(sb);
}

/* Runs argv with a terminal of cols x rows (in sb, or a fresh sandbox when sb is NULL), resized to
 * 120 x 40 and then given input; the verdict. */
static struct al_verdict *run_tty(struct al_sandbox *sb, uint16_t cols, uint16_t rows, const char *input,
				  const char *const *argv)
{
	struct al_policy *p = NULL;
	struct al_error e = {0};
	int argc = 0;
	while (argv[argc])
		argc++;
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_policy_set_argv(p, argc, argv, &e), 0);
	if (sb)
		assert_int_equal(al_policy_set_sandbox(p, sb, &e), 0);
	struct al_spawn_opts o = {.size = sizeof(o), .stdin_fd = -1, .tty = true, .tty_cols = cols, .tty_rows = rows};
	struct al_job *j = NULL;
	struct al_verdict *v = NULL;
	if (al_job_spawn(p, &o, &j, &e) < 0)
		fail_msg("spawn: %s", e.msg);
	int m = al_job_tty(j);
	assert_true(m > 2);
	assert_int_equal(al_job_resize(j, 0, 40), -EINVAL);
	assert_int_equal(al_job_resize(j, 120, 40), 0);
	if (input)
		assert_int_equal(write(m, input, strlen(input)), (ssize_t)strlen(input));
	if (al_job_wait(j, &v, &e) < 0)
		fail_msg("wait: %s", e.msg);
	al_job_free(j);
	al_policy_free(p);
	return v;
}

/* A terminal of the sandbox's own devpts: stdio and controlling terminal, its size as given and as
 * resized, its input from the master, one stream (stderr empty); in a held sandbox and a fresh one. */
static void test_tty(void **state)
{
	struct fixture *f = *state;
	const char *const size[] = {"/bin/sh", "-c", "exec 2>&1; stty size </dev/tty; echo err >&2", NULL};
	const char *const probe[] = {
		"/bin/sh", "-c",
		"read x; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo isatty; tty; stty size; echo \"got:$x\"; "
		"exec 3</dev/tty && echo ctty; stat -c %U /proc/self/fd/0 >&2",
		NULL};
	struct al_sandbox *sbs[] = {f->sb, NULL};
	for (int i = 0; i < 2; i++) {
		/* Its first size is the one asked for (read before the resize and the input arrive:
		 * /bin/sh reads no input here, and ends before the resize only when it is quick). */
		struct al_verdict *v =
			run_tty(sbs[i], 90, 25, NULL, (const char *const[]){"/bin/sh", "-c", "stty size", NULL});
		assert_int_equal(v->exit_code, 0);
		assert_true(strstr(v->out.data, "25 90") || strstr(v->out.data, "40 120"));
		al_verdict_free(v);
		v = run_tty(sbs[i], 90, 25, NULL, size);
		assert_int_equal(v->exit_code, 0);
		assert_non_null(strstr(v->out.data, "err"));
		assert_int_equal(v->err.bytes, 0);
		al_verdict_free(v);
		v = run_tty(sbs[i], 90, 25, "hello\n", probe);
		assert_int_equal(v->exit_code, 0);
		const char *o = v->out.data;
		assert_non_null(strstr(o, "hello\r\n")); /* echoed by the sandbox's line discipline */
		assert_non_null(strstr(o, "isatty\r\n/dev/pts/"));
		assert_non_null(strstr(o, "40 120\r\ngot:hello\r\nctty\r\n"));
		assert_non_null(strstr(o, "\r\nuser\r\n")); /* the slave is the payload's user's */
		al_verdict_free(v);
	}
	/* Its input comes through the terminal only; a job without one has none. */
	struct al_policy *p = NULL;
	struct al_error e = {0};
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(al_policy_set_argv(p, 1, (const char *const[]){"/bin/true", NULL}, &e), 0);
	struct al_spawn_opts o = {.size = sizeof(o), .stdin_fd = 0, .tty = true};
	struct al_job *j = NULL;
	assert_int_equal(al_job_spawn(p, &o, &j, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "al_job_tty"));
	o = (struct al_spawn_opts){.size = sizeof(o), .stdin_fd = -1};
	assert_int_equal(al_job_spawn(p, &o, &j, &e), 0);
	assert_int_equal(al_job_tty(j), -ENOTTY);
	assert_int_equal(al_job_resize(j, 80, 24), -ENOTTY);
	al_job_free(j);
	al_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_results), cmocka_unit_test(test_stdin),	cmocka_unit_test(test_failures),
		cmocka_unit_test(test_spare),	cmocka_unit_test(test_destroy), cmocka_unit_test(test_exec_cgroups),
		cmocka_unit_test(test_network), cmocka_unit_test(test_tty),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
