/* fuzz_config.c — fuzz target for the config loader: each input is one YAML file merged over the defaults; what loads must dump, load back and dump the same (unless it writes a secret's value, whose redacted dump must be refused). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Either success, or -errno with a terminated message and nothing handed out. */
static void check(int r, const struct al_error *err, const struct cfg *c)
{
	if (r > 0 || (r < 0 && (err->code != r || !memchr(err->msg, 0, sizeof(err->msg)) || c)))
		abort();
}

/* What loaded is valid: its limits apply to a policy through the option table without error. */
static void apply_all(const struct cfg *c)
{
	struct al_policy *p = NULL;
	struct al_error err = {0};
	if (al_policy_new(&p) < 0)
		return;
	if (cfg_apply_limits(&c->limits, p, true, &err) < 0)
		abort();
	for (size_t i = 0; i < c->nprofiles; i++)
		if (cfg_apply_limits(&c->profiles[i].limits, p, false, &err) < 0)
			abort();
	al_policy_free(p);
}

static void dump_or_die(const struct cfg *c, char **out, size_t *len)
{
	struct al_error err = {0};
	if (cfg_dump(c, out, len, &err) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg *c = NULL, *again = NULL;
	struct al_error err = {0};
	int r = cfg_load_buffer((const char *)data, size, "fuzz.yaml", &c, &err);
	check(r, &err, c);
	if (r < 0)
		return 0;
	apply_all(c);
	char *first = NULL, *second = NULL;
	size_t n1 = 0, n2 = 0;
	dump_or_die(c, &first, &n1);
	err = (struct al_error){0};
	r = cfg_load_buffer(first, n1, "dump.yaml", &again, &err);
	/* A secret's value is dumped as CFG_SECRET_REDACTED, which a load refuses: such a dump must
	 * not load back (the round trip holds for every other configuration). */
	bool value = false;
	for (size_t i = 0; i < c->nsecrets; i++)
		value |= c->secrets[i].kind == CFG_SECRET_VALUE;
	if (value && r != -EFBIG && r != -E2BIG &&
	    (r != -EINVAL || !strstr(err.msg, "the mark `airlock config dump` writes")))
		abort();
	if (value)
		r = -EINVAL;
	/* A dump spells out every default, so a file near the size or node bound may dump past it:
	 * that is the bound working, not a round-trip failure. Any other refusal is a bug. */
	if (r < 0 && r != -EFBIG && r != -E2BIG && !value)
		abort();
	if (r == 0) {
		dump_or_die(again, &second, &n2);
		if (n1 != n2 || memcmp(first, second, n1) != 0)
			abort();
	}
	free(first);
	free(second);
	cfg_free(again);
	cfg_free(c);
	return 0;
}
