/* fuzz_secrets.c — fuzz target for secrets by reference: the --secret spec parser (all or
 * nothing, a placeholder of the fixed shape, messages that never show the value) and substitution
 * over a request the input writes ("@P" stands for the placeholder): the value only toward a host
 * the secret may go to, never toward another, and no placeholder left where it was put in. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "network/secrets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

#define VALUE "FUZZVALUE-5e1f0a9c"
#define HOST  "api.fuzz.test"

/* The spec, then after the first newline a request; "@P" in it becomes the placeholder. */
static char *request_of(const char *in, size_t n, const char *ph, size_t *len)
{
	size_t pl = strlen(ph), cap = n * (pl + 1) + 1, o = 0;
	char *out = malloc(cap);
	CHECK(out);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && in[i] == '@' && in[i + 1] == 'P') {
			memcpy(out + o, ph, pl), o += pl, i++;
			continue;
		}
		out[o++] = in[i];
	}
	out[o] = 0;
	*len = o;
	return out;
}

static void substitute(const struct al_secrets *s, const char *req, size_t len, const char *host)
{
	const char *ph = al_secret_placeholder(s, 0);
	bool may = al_secrets_for(s, host, 443), has = memmem(req, len, ph, strlen(ph)) != NULL;
	for (int body = 0; body < 2; body++) {
		char *out = NULL;
		size_t ol = 0;
		uint32_t used = 0;
		CHECK(al_secrets_apply(s, host, 443, body, req, len, &out, &ol, &used) == 0);
		if (!may || !has) { /* elsewhere, or nothing to put in: unchanged */
			CHECK(!out && used == 0);
			continue;
		}
		if (!out) { /* a body, where the secret allows headers only */
			CHECK(body && used == 0);
			continue;
		}
		CHECK(used == 1 && out[ol] == 0); /* terminated, whatever NULs the request holds */
		CHECK(!memmem(out, ol, ph, strlen(ph)));
		CHECK(al_secrets_seen(s, used, out, ol)); /* the value (of whatever source) is in */
		al_secrets_wipe(out, ol);
		free(out);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	if (!init) {
		setenv("AL_FUZZ_SECRET", VALUE, 1);
		setenv("AL_FUZZ_CRLF", "a\r\nb", 1);
		init = true;
	}
	if (size > 8192)
		return 0;
	char *in = malloc(size + 1);
	CHECK(in);
	memcpy(in, data, size);
	in[size] = 0;
	char *nl = memchr(in, '\n', size);
	size_t rest = nl ? size - (size_t)(nl + 1 - in) : 0;
	if (nl)
		*nl = 0;
	struct al_secrets *s = NULL;
	struct al_error err = {0};
	CHECK(al_secrets_new(&s) == 0);
	int r = strlen(in) == (nl ? (size_t)(nl - in) : size) ? al_secrets_add(s, in, &err) : -EINVAL;
	if (r == 0) {
		CHECK(al_secrets_count(s) == 1);
		const char *ph = al_secret_placeholder(s, 0), *name = al_secret_name(s, 0);
		char want[AL_SECRET_NAME_MAX + 20];
		snprintf(want, sizeof(want), "airlock-secret:%s:", name);
		CHECK(strncmp(ph, want, strlen(want)) == 0 && strlen(ph) == strlen(want) + 32);
		CHECK(!strstr(ph, VALUE));
		size_t len = 0;
		char *req = request_of(nl ? nl + 1 : in + size, rest, ph, &len);
		substitute(s, req, len, HOST);
		substitute(s, req, len, "elsewhere.fuzz.test");
		free(req);
		/* The same variable again is refused, and the list is unchanged. */
		err = (struct al_error){0};
		CHECK(al_secrets_add(s, in, &err) < 0 && al_secrets_count(s) == 1);
	} else if (r != -EINVAL || err.code) {
		CHECK(r < 0 && err.code == r && al_secrets_count(s) == 0);
	}
	if (err.code) {
		CHECK(memchr(err.msg, 0, sizeof(err.msg)) != NULL);
		CHECK(strncmp(err.msg, "--secret", 8) == 0);
		/* (Unless the spec itself spells it: messages may quote the spec.) */
		CHECK(!strstr(err.msg, VALUE) || strstr(in, VALUE));
	}
	al_secrets_unref(s);
	free(in);
	return 0;
}
