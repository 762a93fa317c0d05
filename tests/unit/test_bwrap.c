/* test_bwrap.c — unit tests for the bwrap backend's pure parts: refusals, the argv plan, bwrap's reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/bwrap/bwrap.h"
#include "backend/capability.h"
#include "kit/landlock.h"
#include "policy/policy.h"

/* ---- helpers ---------------------------------------------------------------------- */

static struct al_policy *policy(const char *cmd)
{
	struct al_policy *p = NULL;
	assert_int_equal(al_policy_new(&p), 0);
	const char *argv[] = {cmd, "arg one"};
	assert_int_equal(al_policy_set_argv(p, 2, argv, NULL), 0);
	return p;
}

/* The argv for p, with made-up descriptor numbers (file i gets 100 + i), showing view (or NULL). */
static void build_view(struct bw_argv *a, const struct al_policy *p, int seccomp, const struct cg_view *view)
{
	struct fs_plan plan = {0};
	struct fs_host host;
	plan.sendfd_sock = -1;
	fs_host_probe(&host, &plan, p);
	assert_int_equal(fs_plan_build(&plan, p, &host, NULL), 0);
	int *files = calloc(plan.n + 1, sizeof(*files));
	assert_non_null(files);
	for (size_t i = 0; i < plan.n; i++)
		files[i] = plan.ops[i].kind == FS_FILE ? 100 + (int)i : -1;
	struct ai_rlimit rl[AI_MAX_RLIMITS];
	struct ai_opts init = {.rlimits = rl, .nrlimits = ai_rlimits(p->limits, rl), .exec = true, .record_fd = 44};
	struct bw_fds fds = {
		.file_fds = files, .seccomp = seccomp, .json = 42, .init_bin = 43, .init = &init, .cgview = view};
	struct al_error err = {0};
	assert_int_equal(bw_argv_build(a, p, &plan, &fds, true, &err), 0);
	free(files);
	fs_plan_free(&plan);
	assert_null(a->v[a->n]);
}

static void build(struct bw_argv *a, const struct al_policy *p, int seccomp)
{
	build_view(a, p, seccomp, NULL);
}

/* Index of the word sequence w0 w1 ... (NULL-terminated) in a, or -1. */
static int find(const struct bw_argv *a, ...)
{
	const char *w[8];
	size_t n = 0;
	va_list ap;
	va_start(ap, a);
	for (const char *s; n < 8 && (s = va_arg(ap, const char *));)
		w[n++] = s;
	va_end(ap);
	for (size_t i = 0; i + n <= a->n; i++) {
		size_t k = 0;
		while (k < n && strcmp(a->v[i + k], w[k]) == 0)
			k++;
		if (k == n)
			return (int)i;
	}
	return -1;
}

static bool contains_substr(const struct bw_argv *a, const char *s)
{
	for (size_t i = 0; i < a->n; i++)
		if (strstr(a->v[i], s))
			return true;
	return false;
}

/* The job's cgroups: v1 hierarchies bound read-only each at /sys/fs/cgroup/<controllers> (a link
 * per controller of a co-mounted one), a v2-only job's one at /sys/fs/cgroup itself; all before
 * the root turns read-only; none when the policy binds something beneath /sys. */
static void argv_cgview(void **state)
{
	(void)state;
	struct cg_view v1 = {.n = 2,
			     .h = {{.version = 1, .name = "memory", .path = "/cg/memory/job"},
				   {.version = 1,
				    .name = "cpu,cpuacct",
				    .links = {"cpu", "cpuacct"},
				    .nlinks = 2,
				    .path = "/cg/cpu,cpuacct/job"}}};
	struct al_policy *p = policy("/bin/true");
	struct bw_argv a;
	build_view(&a, p, -1, &v1);
	int mem = find(&a, "--ro-bind", "/cg/memory/job", "/sys/fs/cgroup/memory", NULL);
	assert_true(mem > find(&a, "--dir", "/sys/fs/cgroup", NULL));
	assert_true(find(&a, "--ro-bind", "/cg/cpu,cpuacct/job", "/sys/fs/cgroup/cpu,cpuacct", NULL) > mem);
	assert_true(find(&a, "--symlink", "cpu,cpuacct", "/sys/fs/cgroup/cpu", NULL) > mem);
	assert_true(find(&a, "--symlink", "cpu,cpuacct", "/sys/fs/cgroup/cpuacct", NULL) > mem);
	assert_true(find(&a, "--remount-ro", "/", NULL) > mem);
	bw_argv_free(&a);
	struct cg_view v2 = {.n = 1, .whole = true, .h = {{.version = 2, .name = "unified", .path = "/cg/job"}}};
	build_view(&a, p, -1, &v2);
	assert_true(find(&a, "--ro-bind", "/cg/job", "/sys/fs/cgroup", NULL) >= 0);
	bw_argv_free(&a);
	/* A bind at /sys/x: /sys is the policy's, no view, no /sys/fs/cgroup. */
	assert_int_equal(al_policy_add_bind(p, "/usr", "/sys/x", false, NULL), 0);
	build_view(&a, p, -1, &v1);
	assert_int_equal(find(&a, "--ro-bind", "/cg/memory/job", "/sys/fs/cgroup/memory", NULL), -1);
	assert_false(contains_substr(&a, "/sys/fs/cgroup"));
	bw_argv_free(&a);
	al_policy_free(p);
}

/* ---- refusals --------------------------------------------------------------------- */

/* The bwrap backend's refusal: its capability table against the policy's plan. */
static int bw_refuse(const struct al_policy *p, bool root, bool cgroupns, struct al_error *err)
{
	struct pol_plan pl;
	pol_plan_build(p, root, &pl);
	struct be_host host = {.cgroupns = cgroupns, .landlock_abi = LL_ABI_MAX};
	return be_refuse(&be_bwrap_caps, p, &pl, &host, err);
}

static void refuse_ok(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	assert_int_equal(bw_refuse(p, false, true, NULL), 0);
	assert_int_equal(bw_refuse(p, true, true, NULL), 0);
	/* Landlock is the host kernel's, applied by airlock-init: required, it holds where the
	 * kernel has it, and is refused by name where it does not */
	assert_int_equal(al_policy_require(p, "landlock", NULL), 0);
	assert_int_equal(bw_refuse(p, false, true, NULL), 0);
	struct pol_plan pl;
	pol_plan_build(p, false, &pl);
	struct be_host old = {.cgroupns = true, .landlock_abi = 0};
	struct al_error err = {0};
	assert_true(be_refuse(&be_bwrap_caps, p, &pl, &old, &err) < 0);
	assert_non_null(strstr(err.msg, "landlock"));
	al_policy_free(p);
}

static void refuse_each(void **state)
{
	(void)state;
	struct {
		const char *what, *token;
	} cases[] = {
		{"subids", "subids"},	 {"fallback", "fallback"},
		{"disk", "--disk"},	 {"cgroupns", "cgroup namespaces"},
		{"idbase", "--id-base"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct al_policy *p = policy("/bin/true");
		const char *w = cases[i].what;
		bool cgroupns = true;
		if (!strcmp(w, "subids"))
			p->subids = true;
		else if (!strcmp(w, "fallback"))
			assert_int_equal(al_policy_allow_fallback(p, true, NULL), 0);
		else if (!strcmp(w, "disk")) {
			assert_int_equal(al_policy_set_workdir(p, "/tmp", NULL), 0);
			assert_int_equal(al_policy_set_limit(p, AL_LIMIT_DISK, 8 << 20, NULL), 0);
		} else if (!strcmp(w, "cgroupns")) {
			assert_int_equal(al_policy_require(p, "cgroupns", NULL), 0);
			cgroupns = false;
		} else if (!strcmp(w, "idbase"))
			p->id_base = 1u << 20;
		struct al_error err = {0};
		assert_true(bw_refuse(p, false, cgroupns, &err) < 0);
		if (!strstr(err.msg, cases[i].token))
			fail_msg("refusal for %s does not name '%s': %s", w, cases[i].token, err.msg);
		al_policy_free(p);
	}
}

/* ---- the argv --------------------------------------------------------------------- */

/* An image's User (policy/image.c sets run_uid/run_gid): bwrap maps its one id there, and the
 * plan gives that user the workspace and the policy's files (a group 0 included). */
static void argv_image_user(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	p->run_uid = 1001;
	p->run_gid = 0;
	assert_int_equal(al_policy_add_file(p, "/workspace/main.sh", "x", 1, 0644, NULL), 0);
	struct bw_argv a;
	build(&a, p, -1);
	assert_true(find(&a, "--uid", "1001", "--gid", "0", NULL) > 0);
	bw_argv_free(&a);
	struct fs_plan plan = {0};
	struct fs_host host;
	plan.sendfd_sock = -1;
	fs_host_probe(&host, &plan, p);
	assert_int_equal(fs_plan_build(&plan, p, &host, NULL), 0);
	bool ws = false, file = false;
	for (size_t i = 0; i < plan.n; i++) {
		const struct fs_op *o = &plan.ops[i];
		ws = ws ||
		     (o->kind == FS_TMPFS && strcmp(o->dest, "workspace") == 0 && strstr(o->text, "uid=1001,gid=0"));
		file = file || (o->kind == FS_CHOWN && strcmp(o->dest, "workspace/main.sh") == 0 && o->owner == 1001 &&
				o->group == 0);
	}
	assert_true(ws);
	assert_true(file);
	fs_plan_free(&plan);
	al_policy_free(p);
}

static void argv_default(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	struct bw_argv a;
	build(&a, p, 7);
	assert_string_equal(a.v[0], BW_PATH);
	assert_true(find(&a, "--unshare-user", NULL) > 0);
	assert_true(find(&a, "--unshare-net", NULL) > 0);
	assert_true(find(&a, "--unshare-cgroup", NULL) > 0);
	assert_true(find(&a, "--disable-userns", NULL) > 0);
	assert_true(find(&a, "--die-with-parent", NULL) > 0);
	assert_true(find(&a, "--new-session", NULL) > 0);
	assert_true(find(&a, "--uid", "1000", "--gid", "1000", NULL) > 0);
	assert_true(find(&a, "--hostname", "airlock", NULL) > 0);
	assert_true(find(&a, "--clearenv", "--setenv", "PATH", NULL) > 0);
	assert_true(find(&a, "--ro-bind", "/usr", "/usr", NULL) > 0);
	assert_true(find(&a, "--proc", "/proc", NULL) > 0);
	assert_true(find(&a, "--dev", "/dev", NULL) > 0);
	assert_true(find(&a, "--remount-ro", "/dev", NULL) > find(&a, "--dev", "/dev", NULL));
	assert_true(find(&a, "--perms", "1777", "--tmpfs", "/tmp", NULL) > 0);
	assert_true(find(&a, "--perms", "0755", "--tmpfs", "/workspace", NULL) > 0);
	assert_true(find(&a, "--size", "1073741824", "--perms", "1777", "--tmpfs", "/dev/shm", NULL) > 0);
	assert_true(find(&a, "--chdir", "/workspace", NULL) > 0);
	assert_true(find(&a, "--seccomp", "7", NULL) > 0);
	assert_true(find(&a, "--json-status-fd", "42", NULL) > 0);
	/* the generated /etc files come from memfds, read-only */
	int at = find(&a, "--ro-bind-data", NULL);
	assert_true(at > 1);
	assert_string_equal(a.v[at - 2], "--perms");
	assert_true(find(&a, "/etc/passwd", NULL) > at);
	/* the root goes read-only last, after every mount and airlock-init's read-only bind; bwrap's
	 * command follows "--": airlock-init, which execs the payload's after its own "--" */
	int ro = find(&a, "--remount-ro", "/", NULL), dd = find(&a, "--", NULL);
	assert_true(ro > find(&a, "--tmpfs", "/workspace", NULL));
	assert_true(ro > find(&a, "--ro-bind-fd", "43", AI_PATH, NULL));
	assert_true(dd > ro);
	assert_int_equal((int)a.cmd_at, dd);
	assert_string_equal(a.v[dd + 1], AI_PATH);
	int rec = find(&a, "--exec", "--record", "44", "--", NULL);
	assert_true(rec > dd);
	assert_true(find(&a, "--rlimit", NULL) > dd);
	assert_string_equal(a.v[rec + 4], "/bin/true");
	assert_string_equal(a.v[rec + 5], "arg one");
	assert_int_equal((int)a.n, rec + 6);
	/* nothing of /dev's own setup is repeated: --dev made it */
	assert_int_equal(find(&a, "/dev/null", NULL), -1);
	assert_false(contains_substr(&a, "/dev/pts"));
	bw_argv_free(&a);
	al_policy_free(p);
}

static void argv_variants(void **state)
{
	(void)state;
	struct al_policy *p = policy("sh");
	assert_int_equal(al_policy_set_network(p, AL_NET_HOST, NULL), 0);
	assert_int_equal(al_policy_set_seccomp(p, AL_SECCOMP_OFF, NULL), 0);
	assert_int_equal(al_policy_set_workdir(p, "/tmp", NULL), 0);
	assert_int_equal(al_policy_add_bind(p, "/usr/share", "/data", false, NULL), 0);
	assert_int_equal(al_policy_add_bind(p, "/usr/lib", "/rw", true, NULL), 0);
	assert_int_equal(al_policy_set_hostname(p, "box", NULL), 0);
	assert_int_equal(al_policy_set_cwd(p, "/data", NULL), 0);
	struct bw_argv a;
	build(&a, p, -1);
	assert_int_equal(find(&a, "--unshare-net", NULL), -1);
	assert_int_equal(find(&a, "--seccomp", NULL), -1);
	assert_true(find(&a, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf", NULL) > 0);
	/* no overlay in bwrap 0.8: the workdir itself, read-write; nothing of the staging */
	assert_true(find(&a, "--bind", "/tmp", "/workspace", NULL) > 0);
	assert_false(contains_substr(&a, "/.airlock/"));
	assert_int_equal(find(&a, "--tmpfs", "/workspace", NULL), -1);
	assert_true(find(&a, "--ro-bind", "/usr/share", "/data", NULL) > 0);
	assert_true(find(&a, "--bind", "/usr/lib", "/rw", NULL) > 0);
	assert_true(find(&a, "--hostname", "box", NULL) > 0);
	assert_true(find(&a, "--chdir", "/data", NULL) > 0);
	bw_argv_free(&a);
	al_policy_free(p);
}

/* The egress proxy's network namespace is made before bwrap runs: bwrap must not make one. */
static void argv_proxy(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	assert_int_equal(al_policy_allow_hosts(p, "pypi.org", NULL), 0);
	assert_int_equal(bw_refuse(p, false, true, NULL), 0);
	struct bw_argv a;
	build(&a, p, 3);
	assert_int_equal(find(&a, "--unshare-net", NULL), -1);
	assert_true(find(&a, "--setenv", "HTTPS_PROXY", NULL) > 0);
	bw_argv_free(&a);
	al_policy_free(p);
}

/* The policy's own files (airlock exec's code) are the sandbox user's, writable, in the
 * workspace tmpfs: --file, not a read-only bind. */
static void argv_files(void **state)
{
	(void)state;
	struct al_policy *p = policy("python3");
	assert_int_equal(al_policy_add_file(p, "/workspace/main.py", "print(1)\n", 9, 0755, NULL), 0);
	assert_int_equal(al_policy_add_file(p, "/workspace/empty", "", 0, 0644, NULL), 0);
	struct bw_argv a;
	build(&a, p, -1);
	int at = find(&a, "/workspace/main.py", NULL);
	assert_true(at > 4);
	assert_string_equal(a.v[at - 4], "--perms");
	assert_string_equal(a.v[at - 3], "0755");
	assert_string_equal(a.v[at - 2], "--file");
	at = find(&a, "/workspace/empty", NULL);
	assert_true(at > 4);
	assert_string_equal(a.v[at - 2], "--file");
	/* after the workspace tmpfs they land in */
	assert_true(at > find(&a, "--tmpfs", "/workspace", NULL));
	/* the generated /etc files stay read-only binds */
	at = find(&a, "/etc/passwd", NULL);
	assert_string_equal(a.v[at - 2], "--ro-bind-data");
	bw_argv_free(&a);
	/* into a --workdir they would land on the host: refused */
	assert_int_equal(al_policy_set_workdir(p, "/tmp", NULL), 0);
	struct al_error err = {0};
	assert_true(bw_refuse(p, false, true, &err) < 0);
	assert_non_null(strstr(err.msg, "--workdir"));
	al_policy_free(p);
}

/* --rootfs: the system directories come from the tree, the rest of the view is the same. */
static void argv_rootfs(void **state)
{
	(void)state;
	char root[] = "/tmp/al-test-bwrap.XXXXXX", usr[64], bin[64];
	assert_non_null(mkdtemp(root));
	snprintf(usr, sizeof(usr), "%s/usr", root);
	snprintf(bin, sizeof(bin), "%s/bin", root);
	assert_int_equal(mkdir(usr, 0755), 0);
	assert_int_equal(symlink("usr/bin", bin), 0);
	struct al_policy *p = policy("/bin/true");
	int r = al_policy_set_rootfs(p, root, NULL);
	struct bw_argv a = {0};
	if (r == 0)
		build(&a, p, -1);
	unlink(bin);
	rmdir(usr);
	rmdir(root);
	assert_int_equal(r, 0);
	assert_true(find(&a, "--ro-bind", usr, "/usr", NULL) > 0);
	assert_true(find(&a, "--symlink", "usr/bin", "/bin", NULL) > 0);
	assert_int_equal(find(&a, "--ro-bind", "/usr", "/usr", NULL), -1);
	assert_int_equal(find(&a, "/lib64", NULL), -1); /* the tree has none */
	bw_argv_free(&a);
	al_policy_free(p);
}

/* ---- bwrap's reports -------------------------------------------------------------- */

static void json_exit_code(void **state)
{
	(void)state;
	int code = -1;
	const char *both = "{ \"child-pid\": 12, \"cgroup-namespace\": 4026532182 }\n{ \"exit-code\": 7 }\n";
	assert_true(bw_json_exit_code(both, strlen(both), &code));
	assert_int_equal(code, 7);
	const char *setup_only = "{ \"child-pid\": 12 }\n";
	assert_false(bw_json_exit_code(setup_only, strlen(setup_only), &code));
	const char *cut = "{ \"exit-code\": ";
	assert_false(bw_json_exit_code(cut, strlen(cut), &code));
	const char *big = "{ \"exit-code\": 300 }";
	assert_false(bw_json_exit_code(big, strlen(big), &code));
	const char *zero = "{\"exit-code\":0}";
	assert_true(bw_json_exit_code(zero, strlen(zero), &code));
	assert_int_equal(code, 0);
	/* only the first n bytes count */
	assert_false(bw_json_exit_code(both, 30, &code));
}

static void wstatus(void **state)
{
	(void)state;
	int ws = bw_wstatus(0);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	ws = bw_wstatus(255);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 255);
	ws = bw_wstatus(128);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 128);
	ws = bw_wstatus(137);
	assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	ws = bw_wstatus(159);
	assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSYS);
	ws = bw_wstatus(193);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 193);
}

static void errscan(void **state)
{
	(void)state;
	struct bw_errscan s;
	memset(&s, 0, sizeof(s));
	const char *a = "payload says bwrap: no\nbwr", *b = "ap: execvp x: No such file or directory\nmore\n";
	bw_errscan_feed(&s, a, strlen(a));
	assert_string_equal(s.last, "");
	bw_errscan_feed(&s, b, strlen(b));
	assert_string_equal(s.last, "execvp x: No such file or directory");
	const char *c = "bwrap: Can't chdir to /nope: No such file or directory";
	bw_errscan_feed(&s, c, strlen(c));
	bw_errscan_end(&s);
	assert_string_equal(s.last, "Can't chdir to /nope: No such file or directory");
	/* a long line is kept truncated, and never overruns */
	char longline[600];
	memset(longline, 'x', sizeof(longline));
	memcpy(longline, "bwrap: ", 7);
	longline[sizeof(longline) - 1] = '\n';
	bw_errscan_feed(&s, longline, sizeof(longline));
	assert_int_equal(strlen(s.last), sizeof(s.cur) - 1 - 7);
}

static void classify(void **state)
{
	(void)state;
	static const struct {
		const char *msg;
		enum nat_stage stage;
		int err;
	} cases[] = {
		{"execvp /nonexistent/prog: No such file or directory", NS_EXEC, ENOENT},
		{"execvp /etc: Permission denied", NS_EXEC, EACCES},
		{"Can't find source path /root/x: Permission denied", NS_OPEN_SOURCE, EACCES},
		{"Can't chdir to /nope: No such file or directory", NS_CHDIR, ENOENT},
		{"Can't mount proc on /newroot/proc: Operation not permitted", NS_PROC, EPERM},
		{"Can't bind mount /oldroot/a on /newroot/b: Read-only file system", NS_BIND, EROFS},
		{"No permissions to create a new namespace, likely because ...", NS_CREDS, EINVAL},
		{"Unknown option --disable-userns", NS_FORK, EINVAL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum nat_stage st;
		int e;
		bw_classify(cases[i].msg, &st, &e);
		if (st != cases[i].stage || e != cases[i].err)
			fail_msg("'%s': stage %d errno %d, want %d %d", cases[i].msg, st, e, cases[i].stage,
				 cases[i].err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(refuse_ok),	  cmocka_unit_test(refuse_each),     cmocka_unit_test(argv_default),
		cmocka_unit_test(argv_variants),  cmocka_unit_test(argv_files),	     cmocka_unit_test(argv_rootfs),
		cmocka_unit_test(argv_proxy),	  cmocka_unit_test(argv_image_user), cmocka_unit_test(argv_cgview),
		cmocka_unit_test(json_exit_code), cmocka_unit_test(wstatus),	     cmocka_unit_test(errscan),
		cmocka_unit_test(classify),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
