/* test_policy.c — unit tests for the policy object's validation and environment building (src/policy/policy.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "policy/policy.h"
#include "util/cleanup.h"

/* A scratch directory with a marker file (removed only if the marker is there), a
 * regular file and a subdirectory: real sources for bind tests. */
#define MARKER ".airlock-test-marker"
static char fixture[64];
static char fixture_file[128];
static char fixture_sub[128];

static int fixture_setup(void **state)
{
	snprintf(fixture, sizeof(fixture), "/tmp/al-test-policy.XXXXXX");
	if (!mkdtemp(fixture))
		return -1;
	char marker[128];
	snprintf(marker, sizeof(marker), "%s/" MARKER, fixture);
	snprintf(fixture_file, sizeof(fixture_file), "%s/file", fixture);
	snprintf(fixture_sub, sizeof(fixture_sub), "%s/sub", fixture);
	FILE *f = fopen(marker, "we");
	if (!f)
		return -1;
	fclose(f);
	f = fopen(fixture_file, "we");
	if (!f)
		return -1;
	fclose(f);
	return mkdir(fixture_sub, 0755);
}

static int fixture_teardown(void **state)
{
	char marker[128];
	snprintf(marker, sizeof(marker), "%s/" MARKER, fixture);
	/* Remove only what we made, and only in a directory we marked: never rm -r. */
	if (access(marker, F_OK) != 0)
		return 0;
	unlink(fixture_file);
	rmdir(fixture_sub);
	unlink(marker);
	rmdir(fixture);
	return 0;
}

static int policy_setup(void **state)
{
	struct al_policy *p = NULL;
	if (al_policy_new(&p) < 0)
		return -1;
	*state = p;
	return 0;
}

static int policy_teardown(void **state)
{
	al_policy_free(*state);
	return 0;
}

static size_t strv_len(char **v)
{
	size_t n = 0;
	while (v[n])
		n++;
	return n;
}

/* The number of entries in v that start with "NAME=". */
static size_t strv_count_name(char **v, const char *name)
{
	size_t n = 0, len = strlen(name);
	for (; *v; v++)
		if (strncmp(*v, name, len) == 0 && (*v)[len] == '=')
			n++;
	return n;
}

static const char *strv_get(char **v, const char *name)
{
	size_t len = strlen(name);
	for (; *v; v++)
		if (strncmp(*v, name, len) == 0 && (*v)[len] == '=')
			return *v + len + 1;
	return NULL;
}

/* ---- defaults and limits ---------------------------------------------------------- */

static void defaults_match_spec(void **state)
{
	struct al_policy *p = *state;
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_WALL_MS), 30000);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_CPU_MS), AL_UNLIMITED);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_OUTPUT), 1ULL << 20);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_DISK), 1ULL << 30);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_NOFILE), 1024);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_FSIZE), 1ULL << 30);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_AS), AL_UNLIMITED);
	assert_int_equal(p->id_base, AL_DEFAULT_ID_BASE);
	assert_int_equal(p->id_base, 1879048192u);
	assert_int_equal(p->nenv, 0);
	assert_int_equal(p->nbinds, 0);
	assert_null(p->workdir);
}

static void set_limit_ok(struct al_policy *p, enum al_limit which, uint64_t v)
{
	struct al_error err = {0};
	int r = al_policy_set_limit(p, which, v, &err);
	if (r != 0)
		fail_msg("set_limit(%d, %llu) = %d (%s)", (int)which, (unsigned long long)v, r, err.msg);
	assert_int_equal(al_policy_get_limit(p, which), v);
}

/* A refused value must leave the previous one in place. */
static void set_limit_bad(struct al_policy *p, enum al_limit which, uint64_t v, int code)
{
	struct al_error err = {0};
	uint64_t before = al_policy_get_limit(p, which);
	int r = al_policy_set_limit(p, which, v, &err);
	if (r != code)
		fail_msg("set_limit(%d, %llu) = %d, want %d", (int)which, (unsigned long long)v, r, code);
	assert_int_equal(err.code, code);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(al_policy_get_limit(p, which), before);
}

static void limit_times(void **state)
{
	struct al_policy *p = *state;
	set_limit_bad(p, AL_LIMIT_WALL_MS, 0, -EINVAL);
	set_limit_ok(p, AL_LIMIT_WALL_MS, 1);
	set_limit_ok(p, AL_LIMIT_WALL_MS, AL_UNLIMITED);
	set_limit_bad(p, AL_LIMIT_CPU_MS, 0, -EINVAL);
	set_limit_ok(p, AL_LIMIT_CPU_MS, 1500);
	set_limit_ok(p, AL_LIMIT_CPU_MS, AL_UNLIMITED);
}

static void limit_output(void **state)
{
	struct al_policy *p = *state;
	/* The supervisor holds this much per stream in memory: unlimited must be refused. */
	set_limit_bad(p, AL_LIMIT_OUTPUT, AL_UNLIMITED, -ERANGE);
	set_limit_bad(p, AL_LIMIT_OUTPUT, (1ULL << 30) + 1, -ERANGE);
	set_limit_ok(p, AL_LIMIT_OUTPUT, 1ULL << 30);
	set_limit_ok(p, AL_LIMIT_OUTPUT, 0);
	set_limit_ok(p, AL_LIMIT_OUTPUT, 64);
}

static void limit_disk(void **state)
{
	struct al_policy *p = *state;
	set_limit_bad(p, AL_LIMIT_DISK, AL_UNLIMITED, -ERANGE);
	set_limit_bad(p, AL_LIMIT_DISK, 4095, -ERANGE);
	set_limit_bad(p, AL_LIMIT_DISK, 0, -ERANGE);
	set_limit_ok(p, AL_LIMIT_DISK, 4096);
	set_limit_ok(p, AL_LIMIT_DISK, 8ULL << 30);
}

static void limit_nofile(void **state)
{
	struct al_policy *p = *state;
	set_limit_bad(p, AL_LIMIT_NOFILE, 15, -ERANGE);
	set_limit_bad(p, AL_LIMIT_NOFILE, (1 << 20) + 1, -ERANGE);
	set_limit_bad(p, AL_LIMIT_NOFILE, AL_UNLIMITED, -ERANGE);
	set_limit_ok(p, AL_LIMIT_NOFILE, 16);
	set_limit_ok(p, AL_LIMIT_NOFILE, 1 << 20);
}

static void limit_rlimits(void **state)
{
	struct al_policy *p = *state;
	set_limit_bad(p, AL_LIMIT_FSIZE, 0, -EINVAL);
	set_limit_ok(p, AL_LIMIT_FSIZE, 1);
	set_limit_ok(p, AL_LIMIT_FSIZE, AL_UNLIMITED);
	/* Below 16M not even the loader maps libc: refused, not a SIGSEGV in the payload. */
	set_limit_bad(p, AL_LIMIT_AS, 0, -ERANGE);
	set_limit_bad(p, AL_LIMIT_AS, 1, -ERANGE);
	set_limit_bad(p, AL_LIMIT_AS, (16ULL << 20) - 1, -ERANGE);
	set_limit_ok(p, AL_LIMIT_AS, 16ULL << 20);
	set_limit_ok(p, AL_LIMIT_AS, 256ULL << 20);
	set_limit_ok(p, AL_LIMIT_AS, AL_UNLIMITED);
	set_limit_bad(p, AL_LIMIT_NPROC, 0, -EINVAL);
	set_limit_ok(p, AL_LIMIT_NPROC, 64);
}

static void limit_unknown(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	assert_int_equal(al_policy_set_limit(p, AL_LIMIT__COUNT, 1, &err), -EINVAL);
	assert_int_equal(al_policy_set_limit(p, (enum al_limit) - 1, 1, &err), -EINVAL);
	assert_int_equal(al_policy_set_limit(p, (enum al_limit)1000, 1, NULL), -EINVAL);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT__COUNT), 0);
	assert_int_equal(al_policy_get_limit(p, (enum al_limit) - 1), 0);
}

/* ---- argv and cwd ------------------------------------------------------------------ */

static void argv_validation(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	const char *none[] = {NULL};
	const char *empty[] = {"", NULL};
	const char *cmd[] = {"/bin/echo", "hi", NULL};
	assert_int_equal(al_policy_set_argv(p, 0, none, &err), -EINVAL);
	assert_int_equal(al_policy_set_argv(p, 1, empty, &err), -EINVAL);
	assert_int_equal(al_policy_set_argv(p, 1, NULL, &err), -EINVAL);
	assert_int_equal(al_policy_set_argv(p, 2, cmd, &err), 0);
	assert_int_equal(p->argc, 2);
	assert_string_equal(p->argv[0], "/bin/echo");
	assert_string_equal(p->argv[1], "hi");
	assert_null(p->argv[2]);
	assert_true(p->argv[0] != cmd[0]); /* copied, not borrowed */
	/* Setting it again replaces, without leaking the old vector (checked under ASan). */
	assert_int_equal(al_policy_set_argv(p, 1, cmd, &err), 0);
	assert_int_equal(p->argc, 1);
	assert_null(p->argv[1]);
}

static void cwd_validation(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	assert_int_equal(al_policy_set_cwd(p, "/workspace/src", &err), 0);
	assert_string_equal(p->cwd, "/workspace/src");
	assert_int_equal(al_policy_set_cwd(p, "workspace", &err), -EINVAL);
	assert_int_equal(al_policy_set_cwd(p, "/workspace/../etc", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--cwd"));
	assert_string_equal(p->cwd, "/workspace/src");
}

/* ---- environment ------------------------------------------------------------------- */

static void env_set_and_validate(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	assert_int_equal(al_policy_add_env(p, "FOO=bar", &err), 0);
	assert_int_equal(al_policy_add_env(p, "_under=1", &err), 0);
	assert_int_equal(al_policy_add_env(p, "MixedCase9=", &err), 0); /* empty value is a value */
	assert_int_equal(al_policy_add_env(p, "EQ=a=b=c", &err), 0);	/* '=' in the value */
	assert_int_equal(p->nenv, 4);
	assert_string_equal(p->env[0], "FOO=bar");
	assert_string_equal(p->env[2], "MixedCase9=");
	assert_string_equal(p->env[3], "EQ=a=b=c");

	static const char *const bad[] = {
		"", "=x", "1FOO=x", "9", "FO-O=x", "FO O=x", "FOO.BAR=x", "FÖO=x", "FOO\n=x", "$FOO=x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		int r = al_policy_add_env(p, bad[i], &err);
		if (r != -EINVAL)
			fail_msg("add_env(\"%s\") = %d, want -EINVAL", bad[i], r);
		assert_non_null(strstr(err.msg, "--env"));
	}
	assert_int_equal(p->nenv, 4);
}

static void env_override(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	assert_int_equal(al_policy_add_env(p, "FOO=1", &err), 0);
	assert_int_equal(al_policy_add_env(p, "FOOBAR=x", &err), 0); /* a longer name is another variable */
	assert_int_equal(al_policy_add_env(p, "FO=y", &err), 0);     /* and so is a prefix */
	assert_int_equal(al_policy_add_env(p, "FOO=2", &err), 0);
	assert_int_equal(p->nenv, 3);
	assert_string_equal(p->env[0], "FOO=2"); /* replaced in place */
	assert_string_equal(p->env[1], "FOOBAR=x");
	assert_string_equal(p->env[2], "FO=y");
	assert_int_equal(al_policy_add_env(p, "FO=z", &err), 0);
	assert_int_equal(p->nenv, 3);
	assert_string_equal(p->env[2], "FO=z");
	assert_string_equal(p->env[0], "FOO=2");
}

static void env_pass_through(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	assert_int_equal(setenv("AL_TEST_PASS", "from host", 1), 0);
	assert_int_equal(setenv("AL_TEST_EMPTY", "", 1), 0);
	unsetenv("AL_TEST_UNSET");

	assert_int_equal(al_policy_add_env(p, "AL_TEST_PASS", &err), 0);
	assert_int_equal(p->nenv, 1);
	assert_string_equal(p->env[0], "AL_TEST_PASS=from host");

	/* Set but empty is still set: it passes through as an empty value. */
	assert_int_equal(al_policy_add_env(p, "AL_TEST_EMPTY", &err), 0);
	assert_int_equal(p->nenv, 2);
	assert_string_equal(p->env[1], "AL_TEST_EMPTY=");

	/* An unset variable is not an error and adds nothing (not even "NAME="). */
	assert_int_equal(al_policy_add_env(p, "AL_TEST_UNSET", &err), 0);
	assert_int_equal(p->nenv, 2);

	/* The value is taken when added: later host changes do not leak in. */
	assert_int_equal(setenv("AL_TEST_PASS", "changed", 1), 0);
	assert_string_equal(p->env[0], "AL_TEST_PASS=from host");

	/* A pass-through replaces an earlier explicit setting of the same name, and vice versa. */
	assert_int_equal(al_policy_add_env(p, "AL_TEST_PASS=explicit", &err), 0);
	assert_int_equal(p->nenv, 2);
	assert_string_equal(p->env[0], "AL_TEST_PASS=explicit");
	assert_int_equal(al_policy_add_env(p, "AL_TEST_PASS", &err), 0);
	assert_int_equal(p->nenv, 2);
	assert_string_equal(p->env[0], "AL_TEST_PASS=changed");

	unsetenv("AL_TEST_PASS");
	unsetenv("AL_TEST_EMPTY");
}

static void envp_base(void **state)
{
	struct al_policy *p = *state;
	char **envp = pol_build_envp(p);
	assert_non_null(envp);
	assert_int_equal(strv_len(envp), 6);
	assert_string_equal(strv_get(envp, "PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	assert_string_equal(strv_get(envp, "HOME"), "/workspace");
	assert_string_equal(strv_get(envp, "LANG"), "C.UTF-8");
	assert_string_equal(strv_get(envp, "USER"), "user");
	assert_string_equal(strv_get(envp, "LOGNAME"), "user");
	assert_string_equal(strv_get(envp, "TMPDIR"), "/tmp");
	pol_free_strv(envp);
}

static void envp_not_inherited(void **state)
{
	/* The host environment is never inherited: a variable set here is absent there. */
	struct al_policy *p = *state;
	const char *home = getenv("HOME");
	char *saved_home = home ? strdup(home) : NULL;
	assert_int_equal(setenv("AL_TEST_SECRET", "hunter2", 1), 0);
	assert_int_equal(setenv("HOME", "/root-of-host", 1), 0);
	char **envp = pol_build_envp(p);
	assert_non_null(envp);
	assert_null(strv_get(envp, "AL_TEST_SECRET"));
	assert_string_equal(strv_get(envp, "HOME"), "/workspace");
	for (char **e = envp; *e; e++)
		assert_null(strstr(*e, "hunter2"));
	pol_free_strv(envp);
	unsetenv("AL_TEST_SECRET");
	if (saved_home)
		setenv("HOME", saved_home, 1);
	else
		unsetenv("HOME");
	free(saved_home);
}

static void envp_policy_overrides_base(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	assert_int_equal(al_policy_add_env(p, "HOME=/elsewhere", &err), 0);
	assert_int_equal(al_policy_add_env(p, "LANG=en_US.UTF-8", &err), 0);
	assert_int_equal(al_policy_add_env(p, "PATHX=not-path", &err), 0); /* must not replace PATH */
	assert_int_equal(al_policy_add_env(p, "EXTRA=1", &err), 0);
	char **envp = pol_build_envp(p);
	assert_non_null(envp);
	/* 6 base - 2 overridden + 4 policy entries; each name exactly once. */
	assert_int_equal(strv_len(envp), 8);
	assert_int_equal(strv_count_name(envp, "HOME"), 1);
	assert_int_equal(strv_count_name(envp, "LANG"), 1);
	assert_int_equal(strv_count_name(envp, "PATH"), 1);
	assert_string_equal(strv_get(envp, "HOME"), "/elsewhere");
	assert_string_equal(strv_get(envp, "LANG"), "en_US.UTF-8");
	assert_string_equal(strv_get(envp, "PATHX"), "not-path");
	assert_string_equal(strv_get(envp, "PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	assert_string_equal(strv_get(envp, "EXTRA"), "1");
	assert_string_equal(strv_get(envp, "USER"), "user");
	pol_free_strv(envp);
}

static void envp_image_fills_in(void **state)
{
	/* An image's Env fills in only what nothing else set: airlock's own PATH, HOME, USER and
	 * --env win over it; its other variables come through, a proxy variable never does. */
	struct al_policy *p = *state;
	struct al_error err = {0};
	static const char *const env[] = {"PATH=/image/bin",	     "HOME=/image-home", "USER=root",  "MARKER=one",
					  "https_proxy=http://evil", "FOO=bar",		 "MARKER=two", "GIVEN=image"};
	struct img_ref *ref = calloc(1, sizeof(*ref));
	assert_non_null(ref);
	ref->lock_fd = -1;
	ref->env = calloc(AL_ARRAY_SIZE(env) + 1, sizeof(char *));
	assert_non_null(ref->env);
	for (size_t i = 0; i < AL_ARRAY_SIZE(env); i++)
		assert_non_null(ref->env[i] = strdup(env[i]));
	p->image = ref; /* al_policy_free releases it */
	assert_int_equal(al_policy_add_env(p, "GIVEN=flag", &err), 0);
	char **envp = pol_build_envp(p);
	assert_non_null(envp);
	/* 6 base + GIVEN + MARKER + FOO; each name exactly once. */
	assert_int_equal(strv_len(envp), 9);
	assert_string_equal(strv_get(envp, "PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	assert_string_equal(strv_get(envp, "HOME"), "/workspace");
	assert_string_equal(strv_get(envp, "USER"), "user");
	assert_string_equal(strv_get(envp, "GIVEN"), "flag");
	assert_int_equal(strv_count_name(envp, "MARKER"), 1);
	assert_string_equal(strv_get(envp, "MARKER"), "two");
	assert_string_equal(strv_get(envp, "FOO"), "bar");
	assert_null(strv_get(envp, "https_proxy"));
	pol_free_strv(envp);
}

/* ---- paths inside ------------------------------------------------------------------ */

static void inside_path_accepts(void **state)
{
	static const char *const ok[] = {
		"/",	 "/a",	   "/a/b",  "/a/b/",	"//a//b", "/workspace", "/a/...",
		"/a/.b", "/a/..b", "/a/b.", "/.hidden", "/a/b..", "/a b/c",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct al_error err = {0};
		int r = pol_check_inside_path(ok[i], &err);
		if (r != 0)
			fail_msg("pol_check_inside_path(\"%s\") = %d (%s), want 0", ok[i], r, err.msg);
	}
}

static void inside_path_rejects(void **state)
{
	static const char *const bad[] = {
		"",	"a",	 "a/b",	   "./a",     "../a",	  "/.",	     "/..",	 "/./a", "/../a",
		"/a/.", "/a/..", "/a/./b", "/a/../b", "/a/..//b", "/a/b/./", "/a/b/../", "//..", "/a//.//b",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct al_error err = {0};
		int r = pol_check_inside_path(bad[i], &err);
		if (r != -EINVAL)
			fail_msg("pol_check_inside_path(\"%s\") = %d, want -EINVAL", bad[i], r);
		assert_true(err.msg[0] != '\0');
	}
	struct al_error err = {0};
	assert_int_equal(pol_check_inside_path(NULL, &err), -EINVAL);
}

static void inside_path_too_long(void **state)
{
	char *long_path = malloc(PATH_MAX + 2);
	assert_non_null(long_path);
	long_path[0] = '/';
	memset(long_path + 1, 'a', PATH_MAX);
	long_path[PATH_MAX + 1] = '\0';
	struct al_error err = {0};
	assert_int_equal(pol_check_inside_path(long_path, &err), -ENAMETOOLONG);
	long_path[PATH_MAX - 1] = '\0'; /* strlen PATH_MAX - 1: fits with its NUL */
	assert_int_equal(pol_check_inside_path(long_path, &err), 0);
	free(long_path);
}

/* ---- binds ------------------------------------------------------------------------- */

static void bind_ok(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	int r = al_policy_add_bind(p, fixture_sub, "/data", false, &err);
	if (r != 0)
		fail_msg("add_bind(%s, /data) = %d (%s)", fixture_sub, r, err.msg);
	assert_int_equal(p->nbinds, 1);
	assert_string_equal(p->binds[0].dest, "/data");
	assert_false(p->binds[0].writable);
	assert_true(p->binds[0].is_dir);
	assert_true(p->binds[0].src[0] == '/');

	/* A file source, read-write, with a non-canonical source path that must be canonicalised. */
	char dotted[256];
	snprintf(dotted, sizeof(dotted), "%s/./sub/../file", fixture);
	assert_int_equal(al_policy_add_bind(p, dotted, "/workspace/input.txt", true, &err), 0);
	assert_int_equal(p->nbinds, 2);
	assert_true(p->binds[1].writable);
	assert_false(p->binds[1].is_dir);
	char *real = realpath(fixture_file, NULL);
	assert_non_null(real);
	assert_string_equal(p->binds[1].src, real);
	free(real);
}

static void bind_default_dest(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	assert_int_equal(al_policy_add_bind(p, fixture_sub, NULL, false, &err), 0);
	char *real = realpath(fixture_sub, NULL);
	assert_non_null(real);
	assert_string_equal(p->binds[0].dest, real);
	free(real);
}

static void bind_missing_source(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	char missing[256];
	snprintf(missing, sizeof(missing), "%s/does-not-exist", fixture);
	assert_int_equal(al_policy_add_bind(p, missing, "/data", false, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "--ro"));
	assert_non_null(strstr(err.msg, "does-not-exist"));
	assert_int_equal(al_policy_add_bind(p, missing, "/data", true, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "--rw"));
	assert_int_equal(al_policy_add_bind(p, "", "/data", false, &err), -EINVAL);
	assert_int_equal(al_policy_add_bind(p, NULL, "/data", false, &err), -EINVAL);
	assert_int_equal(p->nbinds, 0);
}

static void bind_bad_dest(void **state)
{
	struct al_policy *p = *state;
	static const char *const bad[] = {"data", "", "/data/../etc", "/./data", "/data/."};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct al_error err = {0};
		int r = al_policy_add_bind(p, fixture_sub, bad[i], false, &err);
		if (r != -EINVAL)
			fail_msg("add_bind(dest \"%s\") = %d, want -EINVAL", bad[i], r);
		assert_non_null(strstr(err.msg, "--ro"));
	}
	assert_int_equal(p->nbinds, 0);
}

static void bind_reserved_dest(void **state)
{
	struct al_policy *p = *state;
	static const char *const reserved[] = {
		"/",	"/proc", "/proc/",    "/proc///", "/proc/sys",	"/proc/self/ns",
		"/dev", "/dev/", "/dev/null", "/dev/pts", "/etc",	"/etc/",
		"/usr", "/usr/", "/tmp",      "/tmp/",	  "/workspace", "/workspace/",
	};
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		for (int w = 0; w < 2; w++) {
			struct al_error err = {0};
			int r = al_policy_add_bind(p, fixture_sub, reserved[i], w, &err);
			if (r != -EINVAL)
				fail_msg("add_bind(dest \"%s\", %s) = %d, want -EINVAL", reserved[i], w ? "rw" : "ro",
					 r);
			assert_non_null(strstr(err.msg, "reserved"));
		}
	}
	assert_int_equal(p->nbinds, 0);

	/* Names that merely start like a reserved one are ordinary destinations. */
	static const char *const fine[] = {"/procfs", "/devices", "/etcetera", "/usrdata", "/tmpdir", "/workspaces"};
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		struct al_error err = {0};
		int r = al_policy_add_bind(p, fixture_sub, fine[i], false, &err);
		if (r != 0)
			fail_msg("add_bind(dest \"%s\") = %d (%s), want 0", fine[i], r, err.msg);
	}
	assert_int_equal(p->nbinds, sizeof(fine) / sizeof(fine[0]));
}

/* pol_check_inside_path accepts repeated slashes, so "//proc" names /proc inside the
 * sandbox just as "/proc" does; the reserved-destination check must see through it. */
static void bind_reserved_dest_repeated_slash(void **state)
{
	struct al_policy *p = *state;
	static const char *const reserved[] = {"//proc", "//proc/sys", "/proc//sys", "//dev//null",
					       "//usr",	 "//etc",      "//tmp",	     "//workspace"};
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		struct al_error err = {0};
		int r = al_policy_add_bind(p, fixture_sub, reserved[i], true, &err);
		if (r != -EINVAL)
			fail_msg(
				"add_bind(dest \"%s\") = %d, want -EINVAL (reserved path reached through repeated '/')",
				reserved[i], r);
	}
}

/* ---- hostname and id base ---------------------------------------------------------- */

static void hostname_validation(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	char name64[65], name63[64];
	memset(name64, 'a', 64);
	name64[64] = '\0';
	memset(name63, 'b', 63);
	name63[63] = '\0';

	static const char *const ok[] = {"airlock", "a", "box-1", "job.example.org", "UPPER"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int r = al_policy_set_hostname(p, ok[i], &err);
		if (r != 0)
			fail_msg("set_hostname(\"%s\") = %d (%s)", ok[i], r, err.msg);
		assert_string_equal(p->hostname, ok[i]);
	}
	assert_int_equal(al_policy_set_hostname(p, name63, &err), 0);
	assert_string_equal(p->hostname, name63);

	static const char *const bad[] = {"", "a b", "a_b", "a/b", "a;b", "bo\xc3\xaete", "a\nb", "$(id)"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		int r = al_policy_set_hostname(p, bad[i], &err);
		if (r != -EINVAL)
			fail_msg("set_hostname(\"%s\") = %d, want -EINVAL", bad[i], r);
		assert_non_null(strstr(err.msg, "--hostname"));
	}
	assert_int_equal(al_policy_set_hostname(p, name64, &err), -EINVAL);
	assert_string_equal(p->hostname, name63); /* unchanged by the refusals */
}

static void id_base_bounds(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	const uint32_t max = 0xFFFFFFFEu - AL_IDS_PER_SANDBOX; /* keeps (uid_t)-1 and -2 unmapped */

	assert_int_equal(al_policy_set_id_base(p, 0, &err), -ERANGE); /* would map host root */
	assert_int_equal(p->id_base, AL_DEFAULT_ID_BASE);
	assert_int_equal(al_policy_set_id_base(p, max + 1, &err), -ERANGE);
	assert_int_equal(al_policy_set_id_base(p, UINT32_MAX, &err), -ERANGE);
	assert_int_equal(al_policy_set_id_base(p, UINT32_MAX - 10, &err), -ERANGE);
	assert_non_null(strstr(err.msg, "--id-base"));
	assert_int_equal(p->id_base, AL_DEFAULT_ID_BASE);

	assert_int_equal(al_policy_set_id_base(p, 1, &err), 0);
	assert_int_equal(p->id_base, 1);
	assert_int_equal(al_policy_set_id_base(p, max, &err), 0);
	assert_int_equal(p->id_base, max);
	assert_int_equal(al_policy_set_id_base(p, 100000, &err), 0);
	assert_int_equal(p->id_base, 100000);
}

static void workdir_validation(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	char missing[256];
	snprintf(missing, sizeof(missing), "%s/nope", fixture);
	assert_int_equal(al_policy_set_workdir(p, missing, &err), -ENOENT);
	assert_int_equal(al_policy_set_workdir(p, fixture_file, &err), -ENOTDIR);
	assert_null(p->workdir);
	assert_int_equal(al_policy_set_workdir(p, fixture_sub, &err), 0);
	char *real = realpath(fixture_sub, NULL);
	assert_non_null(real);
	assert_string_equal(p->workdir, real);
	free(real);
}

/* The languages' configuration is shown; a place of secrets, or one holding one, never is. */
static void etc_view(void **state)
{
	struct al_policy *p = *state;
	struct al_error err = {0};
	static const char *const ok[] = {"/etc/php",	  "/etc/fonts",	    "/etc/python3.*",	"/etc/java-*",
					 "/etc/perl/Net", "/etc/ssl/certs", "/etc/matplotlibrc"};
	static const char *const secret[] = {
		"/etc/shadow",	    "/etc/gshadow",	"/etc/ssh",	  "/etc/ssh/sshd_config",
		"/etc/ssl",	    "/etc/ssl/private", "/etc/ssl/priv*", "/etc/s*",
		"/etc/*",	    "/etc/sudoers.d/x", "/etc/pip.conf",  "/etc/npmrc",
		"/etc/resolv.conf", "/etc/network",	"/etc/apt",	  "/etc/perl"};
	static const char *const bad[] = {"/etc", "/etc/", "/usr/lib", "etc/php", "/etc/../root", "/etc/php/", "/etcx"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(ok); i++)
		assert_int_equal(pol_add_etc(p, ok[i], &err), 0);
	assert_int_equal(pol_add_etc(p, "/etc/php", &err), 0); /* once */
	assert_int_equal(p->netc, AL_ARRAY_SIZE(ok));
	for (size_t i = 0; i < AL_ARRAY_SIZE(secret); i++) {
		assert_int_equal(pol_add_etc(p, secret[i], &err), -EPERM);
		assert_non_null(strstr(err.msg, "secrets"));
	}
	for (size_t i = 0; i < AL_ARRAY_SIZE(bad); i++)
		assert_int_equal(pol_add_etc(p, bad[i], &err), -EINVAL);
	assert_int_equal(p->netc, AL_ARRAY_SIZE(ok));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, policy_setup, policy_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(defaults_match_spec),
		T(limit_times),
		T(limit_output),
		T(limit_disk),
		T(limit_nofile),
		T(limit_rlimits),
		T(limit_unknown),
		T(argv_validation),
		T(cwd_validation),
		T(env_set_and_validate),
		T(env_override),
		T(env_pass_through),
		T(envp_base),
		T(envp_not_inherited),
		T(envp_policy_overrides_base),
		T(envp_image_fills_in),
		T(inside_path_accepts),
		T(inside_path_rejects),
		T(inside_path_too_long),
		T(bind_ok),
		T(bind_default_dest),
		T(bind_missing_source),
		T(bind_bad_dest),
		T(bind_reserved_dest),
		T(bind_reserved_dest_repeated_slash),
		T(hostname_validation),
		T(id_base_bounds),
		T(workdir_validation),
		T(etc_view),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}
