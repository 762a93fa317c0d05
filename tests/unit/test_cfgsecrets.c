/* test_cfgsecrets.c — unit tests of the configuration's secrets (src/config/secrets.c): the section
 * and a profile's list load strictly, a profile's network must allow each secret's hosts, a dump
 * never holds a value (and its mark is refused back), and a policy gets exactly the secrets of its
 * principal, placeholders only in the job's environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "config/profile.h"
#include "network/secrets.h"
#include "policy/policy.h"
#include "util/cleanup.h"

#define VALUE "sk-config-value-0123456789"
#define ENVV  "sk-from-the-environment-42"

/* Two registries, a shared secret written in the file, one for token:alice from the environment. */
#define HEAD                                             \
	"version: 1\n"                                   \
	"network:\n"                                     \
	"  registries:\n"                                \
	"    models: [api.model.test, \"*.llm.test\"]\n" \
	"    other: [other.test]\n"                      \
	"secrets:\n"                                     \
	"  SHARED:\n"                                    \
	"    value: " VALUE "\n"                         \
	"    hosts: [api.model.test]\n"                  \
	"  alice-key:\n"                                 \
	"    variable: MODEL_KEY\n"                      \
	"    env: AL_TEST_CFG_SECRET\n"                  \
	"    hosts: [\"*.llm.test\"]\n"                  \
	"    body: true\n"                               \
	"    principals: [\"token:alice\", \"uid:1000\"]\n"

#define GOOD                           \
	HEAD "profiles:\n"             \
	     "  agent:\n"              \
	     "    network: [models]\n" \
	     "    secrets: [SHARED, alice-key]\n"

static struct cfg *load(const char *yaml, struct al_error *err)
{
	struct cfg *c = NULL;
	*err = (struct al_error){0};
	if (cfg_load_buffer(yaml, strlen(yaml), "t.yaml", &c, err) < 0)
		return NULL;
	return c;
}

static void test_good(void **state)
{
	(void)state;
	struct al_error err;
	struct cfg *c = load(GOOD, &err);
	if (!c)
		fail_msg("%s", err.msg);
	assert_int_equal(c->nsecrets, 2);
	const struct cfg_secret *s = cfg_secret(c, "SHARED");
	assert_non_null(s);
	assert_string_equal(s->variable, "SHARED"); /* the name, when no variable is given */
	assert_int_equal(s->kind, CFG_SECRET_VALUE);
	assert_false(s->body);
	assert_int_equal(s->principals.n, 0);
	s = cfg_secret(c, "alice-key");
	assert_string_equal(s->variable, "MODEL_KEY");
	assert_int_equal(s->kind, CFG_SECRET_ENV);
	assert_string_equal(s->ref, "AL_TEST_CFG_SECRET");
	assert_true(s->body);
	assert_int_equal(s->principals.n, 2);
	const struct cfg_profile *pr = cfg_profile(c, "agent");
	assert_int_equal(pr->secrets.n, 2);
	assert_true(cfg_profile_has_personal_secrets(c, pr, "token:alice"));
	assert_false(cfg_profile_has_personal_secrets(c, pr, "token:bob"));
	assert_false(cfg_profile_has_personal_secrets(c, pr, NULL));
	cfg_free(c);
}

struct bad {
	const char *yaml, *where, *what;
};

static void test_bad(void **state)
{
	(void)state;
	static const struct bad bad[] = {
		/* a profile's network must allow every host of each secret */
		{HEAD "profiles: {p: {network: [other], secrets: [SHARED]}}\n", "16:44",
		 "profiles.p.secrets[0]: secret SHARED may go to api.model.test, which the profile's network"},
		{HEAD "profiles: {p: {network: none, secrets: [SHARED]}}\n", "16:41",
		 "a secret goes only through the egress proxy"},
		{HEAD "profiles: {p: {secrets: [SHARED]}}\n", "16:26", "a secret goes only through the egress proxy"},
		{HEAD "profiles: {p: {network: [models], secrets: [nope]}}\n", "16:45",
		 "profiles.p.secrets[0]: no secret 'nope'"},
		{HEAD "profiles: {p: {network: [models], secrets: [SHARED, SHARED]}}\n", "16:53", "listed twice"},
		/* a wildcard secret host needs a wildcard entry, not one name beneath it */
		{"version: 1\nnetwork: {registries: {r: [a.llm.test]}}\n"
		 "secrets: {K: {value: v, hosts: [\"*.llm.test\"]}}\nprofiles: {p: {network: [r], secrets: [K]}}\n",
		 "4:40", "secret K may go to *.llm.test"},
		/* two secrets filling one variable for one principal */
		{"version: 1\nnetwork: {registries: {r: [a.test]}}\nsecrets:\n"
		 "  A: {value: v, hosts: [a.test]}\n  b: {variable: A, value: w, hosts: [a.test], principals: "
		 "[uid:1]}\n"
		 "profiles: {p: {network: [r], secrets: [A, b]}}\n",
		 "6:43", "secrets A and b both fill A for one principal"},
		/* the section's own rules */
		{"version: 1\nsecrets: {K: {hosts: [a.test]}}\n", "2:14",
		 "secrets.K: needs one of env, file and value"},
		{"version: 1\nsecrets: {K: {value: v}}\n", "2:14", "secrets.K: needs hosts"},
		{"version: 1\nsecrets: {K: {value: v, env: X, hosts: [a.test]}}\n", "2:22",
		 "secrets.K.value: give exactly one of"},
		{"version: 1\nsecrets: {K: {value: (redacted), hosts: [a.test]}}\n", "2:22",
		 "the mark `airlock config dump`"},
		{"version: 1\nsecrets: {K: {value: \"a\\nb\", hosts: [a.test]}}\n", "2:22", "a control character"},
		{"version: 1\nsecrets: {K: {env: 1X, hosts: [a.test]}}\n", "2:20", "not an environment variable name"},
		{"version: 1\nsecrets: {K: {file: rel/path, hosts: [a.test]}}\n", "2:21", "must be an absolute path"},
		{"version: 1\nsecrets: {K: {value: v, hosts: [\"GET a.test/x\"]}}\n", "2:33",
		 "and port only, one per list item"},
		{"version: 1\nsecrets: {K: {value: v, hosts: []}}\n", "2:32", "at least one host"},
		{"version: 1\nsecrets: {K: {value: v, hosts: [a.test], principals: [alice]}}\n", "2:55",
		 "'alice' is not a principal"},
		{"version: 1\nsecrets: {K: {value: v, hosts: [a.test], principals: [\"uid:01\"]}}\n", "2:55",
		 "is not a principal"},
		{"version: 1\nsecrets: {K: {value: v, hosts: [a.test], principals: []}}\n", "2:54",
		 "give the secret to nobody"},
		{"version: 1\nsecrets: {k-1: {value: v, hosts: [a.test]}}\n", "2:11",
		 "must be an environment variable name"},
		{"version: 1\nsecrets: {K: {value: v, hosts: [a.test], bogus: 1}}\n", "2:42",
		 "secrets.K.bogus: unknown key"},
		{"version: 1\nnetwork: {upstream-ca: ca.pem}\n", "2:24", "network.upstream-ca"},
	};
	int failures = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct al_error err;
		struct cfg *c = load(bad[i].yaml, &err);
		char where[32];
		snprintf(where, sizeof(where), "t.yaml:%s: ", bad[i].where);
		if (c) {
			print_error("case %zu should fail:\n%s\n", i, bad[i].yaml);
			failures++;
		} else if (!strstr(err.msg, where) || !strstr(err.msg, bad[i].what)) {
			print_error("case %zu: want '%s' and '%s', got '%s'\n", i, where, bad[i].what, err.msg);
			failures++;
		} else if (strstr(err.msg, VALUE)) {
			print_error("case %zu: the message holds the value: '%s'\n", i, err.msg);
			failures++;
		}
		cfg_free(c);
	}
	assert_int_equal(failures, 0);
}

static void test_dump(void **state)
{
	(void)state;
	struct al_error err;
	struct cfg *c = load(GOOD, &err);
	assert_non_null(c);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(cfg_dump(c, &text, &len, &err), 0);
	cfg_free(c);
	assert_null(strstr(text, VALUE));
	assert_non_null(strstr(text, "value: " CFG_SECRET_REDACTED));
	assert_non_null(strstr(text, "env: AL_TEST_CFG_SECRET")); /* a source by name is no secret */
	assert_non_null(strstr(text, "secrets: [SHARED, alice-key]"));
	/* The dump loads back only once the value is written again: its mark is refused. */
	assert_null(load(text, &err));
	assert_non_null(strstr(err.msg, "secrets.SHARED.value"));
	free(text);
	/* Without a value written in it, a dump round-trips. */
	const char *env_only = "version: 1\nnetwork: {registries: {r: [a.test]}, upstream-ca: /etc/ca.pem}\n"
			       "secrets: {K: {env: X, hosts: [a.test]}}\nprofiles: {p: {network: [r], secrets: [K]}}\n";
	c = load(env_only, &err);
	assert_non_null(c);
	assert_int_equal(cfg_dump(c, &text, &len, &err), 0);
	cfg_free(c);
	assert_non_null(strstr(text, "upstream-ca: /etc/ca.pem"));
	c = load(text, &err);
	if (!c)
		fail_msg("the dump does not load: %s\n%s", err.msg, text);
	char *again = NULL;
	assert_int_equal(cfg_dump(c, &again, &len, &err), 0);
	assert_string_equal(text, again);
	cfg_free(c);
	free(text);
	free(again);
}

/* The variables of p's secrets, ","-joined. */
static void names_of(const struct al_policy *p, char *out, size_t cap)
{
	const struct al_secrets *s = pol_secrets(p);
	out[0] = 0;
	for (size_t i = 0; i < al_secrets_count(s); i++)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", al_secret_name(s, i));
}

static struct al_policy *for_principal(const struct cfg *c, const char *who, char *names, size_t cap)
{
	struct al_policy *p = NULL;
	struct al_error err = {0};
	assert_int_equal(al_policy_new(&p), 0);
	if (cfg_apply_profile(c, cfg_profile(c, "agent"), who, p, &err) < 0)
		fail_msg("%s", err.msg);
	names_of(p, names, cap);
	return p;
}

static void test_per_principal(void **state)
{
	(void)state;
	setenv("AL_TEST_CFG_SECRET", ENVV, 1);
	struct al_error err;
	struct cfg *c = load(GOOD, &err);
	assert_non_null(c);
	assert_int_equal(cfg_secrets_check(c, &err), 0);
	char names[256];
	struct al_policy *p = for_principal(c, "token:alice", names, sizeof(names));
	assert_string_equal(names, "SHARED,MODEL_KEY");
	/* The job's environment: placeholders, never a value. */
	char **env = pol_build_envp(p);
	assert_non_null(env);
	bool model = false;
	for (size_t i = 0; env[i]; i++) {
		assert_null(strstr(env[i], VALUE));
		assert_null(strstr(env[i], ENVV));
		model |= strncmp(env[i], "MODEL_KEY=airlock-secret:MODEL_KEY:", 35) == 0;
	}
	assert_true(model);
	for (size_t i = 0; env[i]; i++)
		free(env[i]);
	free(env);
	al_policy_free(p);
	al_policy_free(for_principal(c, "uid:1000", names, sizeof(names)));
	assert_string_equal(names, "SHARED,MODEL_KEY");
	al_policy_free(for_principal(c, "token:bob", names, sizeof(names)));
	assert_string_equal(names, "SHARED");
	al_policy_free(for_principal(c, NULL, names, sizeof(names))); /* the command line: nobody's own */
	assert_string_equal(names, "SHARED");
	/* A variable the server cannot read: told at its start, naming the source, not a value. */
	unsetenv("AL_TEST_CFG_SECRET");
	assert_true(cfg_secrets_check(c, &err) < 0);
	assert_non_null(strstr(err.msg, "secrets.alice-key: env=AL_TEST_CFG_SECRET is not set"));
	cfg_free(c);
}

/* A file that writes a value is as secret as the value: readable by group or others, refused. */
static void file_mode(void **state)
{
	(void)state;
	/* A directory of its own: as root, the file's directory must be writable by root alone. */
	char dir[] = "/tmp/test_cfgsecrets.XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, GOOD, strlen(GOOD)), (ssize_t)strlen(GOOD));
	close(fd);
	struct cfg *c = NULL;
	struct al_error err = {0};
	int r = 0;
	assert_int_equal(chmod(path, 0600), 0);
	r = cfg_load_file(path, &c, &err);
	if (r != 0)
		fail_msg("%s", err.msg);
	cfg_free(c);
	c = NULL;
	assert_int_equal(chmod(path, 0644), 0);
	assert_true(cfg_load_file(path, &c, &err) < 0);
	assert_null(c);
	assert_non_null(
		strstr(err.msg, "secrets.SHARED writes its value in this file, which group or others may read"));
	assert_null(strstr(err.msg, VALUE));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),	      cmocka_unit_test(test_bad),  cmocka_unit_test(test_dump),
		cmocka_unit_test(test_per_principal), cmocka_unit_test(file_mode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
