/* test_secrets.c — unit tests of src/network/secrets.c: the spec parser (all or nothing, the value
 * never in an error), placeholders, and the substitution that must happen toward a secret's own
 * hosts and never toward any other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "network/secrets.h"

#define VALUE "sk-test-0123456789abcdef"

static struct al_secrets *one(const char *spec)
{
	struct al_secrets *s = NULL;
	struct al_error err = {0};
	assert_int_equal(al_secrets_new(&s), 0);
	if (al_secrets_add(s, spec, &err) != 0)
		fail_msg("al_secrets_add(%s): %s", spec, err.msg);
	return s;
}

static void placeholder_shape(void **state)
{
	(void)state;
	setenv("AL_TEST_SECRET", VALUE, 1);
	struct al_secrets *s = one("API_KEY,env=AL_TEST_SECRET,hosts=api.example.com");
	assert_int_equal(al_secrets_count(s), 1);
	assert_string_equal(al_secret_name(s, 0), "API_KEY");
	const char *ph = al_secret_placeholder(s, 0);
	const char prefix[] = "airlock-secret:API_KEY:";
	assert_memory_equal(ph, prefix, sizeof(prefix) - 1);
	assert_int_equal(strlen(ph), sizeof(prefix) - 1 + 32);
	assert_null(strstr(ph, VALUE));
	/* Two lists never share a placeholder: it is random, not derived from the value. */
	struct al_secrets *t = one("API_KEY,env=AL_TEST_SECRET,hosts=api.example.com");
	assert_string_not_equal(ph, al_secret_placeholder(t, 0));
	al_secrets_unref(t);
	al_secrets_unref(s);
}

static void only_toward_its_hosts(void **state)
{
	(void)state;
	setenv("AL_TEST_SECRET", VALUE, 1);
	struct al_secrets *s = one("API_KEY,env=AL_TEST_SECRET,hosts=api.example.com|*.models.test");
	char req[256];
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n", al_secret_placeholder(s, 0));
	assert_true(al_secrets_for(s, "api.example.com", 443));
	assert_true(al_secrets_for(s, "eu.models.test", 443));
	assert_false(al_secrets_for(s, "evil.example.com", 443));
	assert_false(al_secrets_for(s, "api.example.com.evil.test", 443));

	char *out = NULL;
	size_t n = 0;
	uint32_t used = 0;
	assert_int_equal(al_secrets_apply(s, "api.example.com", 443, false, req, strlen(req), &out, &n, &used), 0);
	assert_non_null(out);
	assert_non_null(memmem(out, n, "Bearer " VALUE "\r\n", strlen("Bearer " VALUE "\r\n")));
	assert_null(memmem(out, n, "airlock-secret:", 15));
	assert_int_not_equal(used, 0);
	assert_true(al_secrets_seen(s, used, out, n));
	assert_true(al_secrets_longest(s, used) >= strlen(VALUE));
	al_secrets_wipe(out, n);
	free(out);

	/* Another host: nothing changes, the placeholder goes as it is. */
	out = NULL;
	used = 0;
	assert_int_equal(al_secrets_apply(s, "evil.example.com", 443, false, req, strlen(req), &out, &n, &used), 0);
	assert_null(out);
	assert_int_equal(used, 0);
	al_secrets_unref(s);
}

static void body_only_when_asked(void **state)
{
	(void)state;
	setenv("AL_TEST_SECRET", VALUE, 1);
	struct al_secrets *hdr = one("K,env=AL_TEST_SECRET,hosts=api.example.com");
	struct al_secrets *body = one("K,env=AL_TEST_SECRET,hosts=api.example.com,body");
	char *out = NULL;
	size_t n = 0;
	uint32_t used = 0;
	const char *ph = al_secret_placeholder(hdr, 0);
	assert_int_equal(al_secrets_apply(hdr, "api.example.com", 443, true, ph, strlen(ph), &out, &n, &used), 0);
	assert_null(out);
	ph = al_secret_placeholder(body, 0);
	assert_int_equal(al_secrets_apply(body, "api.example.com", 443, true, ph, strlen(ph), &out, &n, &used), 0);
	assert_non_null(out);
	assert_int_equal(n, strlen(VALUE));
	assert_memory_equal(out, VALUE, n);
	al_secrets_wipe(out, n);
	free(out);
	al_secrets_unref(hdr);
	al_secrets_unref(body);
}

static void from_a_file(void **state)
{
	(void)state;
	char path[] = "/tmp/al-test-secret.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, VALUE "\n", strlen(VALUE) + 1), (ssize_t)strlen(VALUE) + 1);
	close(fd);
	char spec[128];
	snprintf(spec, sizeof(spec), "F,file=%s,hosts=api.example.com", path);
	struct al_secrets *s = one(spec);
	unlink(path);
	const char *ph = al_secret_placeholder(s, 0);
	char *out = NULL;
	size_t n = 0;
	uint32_t used = 0;
	assert_int_equal(al_secrets_apply(s, "api.example.com", 443, false, ph, strlen(ph), &out, &n, &used), 0);
	assert_non_null(out);
	/* One trailing newline dropped. */
	assert_int_equal(n, strlen(VALUE));
	assert_memory_equal(out, VALUE, n);
	al_secrets_wipe(out, n);
	free(out);
	al_secrets_unref(s);
}

/* Bad specs fail whole, and the message never holds the value. */
static void bad_specs(void **state)
{
	(void)state;
	setenv("AL_TEST_SECRET", VALUE, 1);
	static const char *const bad[] = {
		"",
		"K",
		"K,env=AL_TEST_SECRET",					/* no hosts */
		"K,hosts=api.example.com",				/* no source */
		"K,env=AL_NO_SUCH_VARIABLE_X,hosts=a.test",		/* unset */
		"K,env=AL_TEST_SECRET,hosts=",				/* empty hosts */
		"K,env=AL_TEST_SECRET,hosts=GET a.test/x",		/* a rule, not a host */
		"1K,env=AL_TEST_SECRET,hosts=a.test",			/* not an environment name */
		"K,env=AL_TEST_SECRET,file=/etc/hostname,hosts=a.test", /* two sources */
		"K,file=/nonexistent/secret,hosts=a.test",
		"K,env=AL_TEST_SECRET,hosts=a.test,bogus",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct al_secrets *s = NULL;
		struct al_error err = {0};
		assert_int_equal(al_secrets_new(&s), 0);
		if (al_secrets_add(s, bad[i], &err) == 0)
			fail_msg("accepted: '%s'", bad[i]);
		assert_true(err.msg[0] != 0);
		assert_null(strstr(err.msg, VALUE));
		assert_int_equal(al_secrets_count(s), 0);
		al_secrets_unref(s);
	}
}

/* A secret as the configuration gives it: its value from the file itself, hosts one per entry,
 * errors named after the configuration's key and never holding the value. */
static void from_the_configuration(void **state)
{
	(void)state;
	const char *hosts[] = {"api.example.com", "*.models.test"};
	struct al_secret_src src = {.what = "secrets.model",
				    .name = "MODEL_KEY",
				    .kind = AL_SECRET_VALUE,
				    .ref = VALUE,
				    .ref_len = strlen(VALUE),
				    .hosts = hosts,
				    .nhosts = 2};
	struct al_secrets *s = NULL;
	struct al_error err = {0};
	assert_int_equal(al_secrets_new(&s), 0);
	assert_int_equal(al_secrets_add_src(s, &src, &err), 0);
	assert_string_equal(al_secret_name(s, 0), "MODEL_KEY");
	assert_true(al_secrets_for(s, "eu.models.test", 443));
	char req[256], *out = NULL;
	size_t n = 0;
	uint32_t used = 0;
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nX-Key: %s\r\n\r\n", al_secret_placeholder(s, 0));
	assert_int_equal(al_secrets_apply(s, "api.example.com", 443, false, req, strlen(req), &out, &n, &used), 0);
	assert_non_null(out);
	assert_non_null(strstr(out, "X-Key: " VALUE "\r\n"));
	al_secrets_wipe(out, n);
	free(out);
	/* The same variable twice, and bad values: refused, named by the configuration's key. */
	assert_true(al_secrets_add_src(s, &src, &err) < 0);
	assert_non_null(strstr(err.msg, "secrets.model: the variable MODEL_KEY is given twice"));
	static const char *const bad_values[] = {"", "a\r\nX-Injected: 1", "tab\there"};
	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		struct al_secret_src b = src;
		b.name = "OTHER";
		b.ref = bad_values[i];
		b.ref_len = strlen(bad_values[i]);
		err = (struct al_error){0};
		assert_true(al_secrets_add_src(s, &b, &err) < 0);
		assert_non_null(strstr(err.msg, "secrets.model: the value"));
		assert_null(strstr(err.msg, bad_values[i][0] ? bad_values[i] : "\x01"));
	}
	struct al_secret_src b = src;
	const char *rule[] = {"GET api.example.com/v1/"};
	b.name = "OTHER";
	b.hosts = rule;
	b.nhosts = 1;
	assert_true(al_secrets_add_src(s, &b, &err) < 0);
	assert_non_null(strstr(err.msg, "names and ports only"));
	b.nhosts = 0;
	assert_true(al_secrets_add_src(s, &b, &err) < 0);
	assert_non_null(strstr(err.msg, "hosts are required"));
	assert_int_equal(al_secrets_count(s), 1);
	al_secrets_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(placeholder_shape),
		cmocka_unit_test(only_toward_its_hosts),
		cmocka_unit_test(body_only_when_asked),
		cmocka_unit_test(from_a_file),
		cmocka_unit_test(bad_specs),
		cmocka_unit_test(from_the_configuration),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
