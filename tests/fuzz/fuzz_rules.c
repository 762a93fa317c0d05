/* fuzz_rules.c — fuzz target for risk rules: an input starting with '{' or '[' is a tool's arguments, classified by the shipped rules for every tool; anything else is the body of a `rules:` section, loaded, round-tripped and used to classify the input itself as code. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "risk/risk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What every decision must be, whatever the input. */
static void check_decision(const struct cfg *c, const struct risk_decision *d)
{
	if (d->level < CFG_RISK_LOW || d->level > CFG_RISK_CRITICAL || !d->rule || !d->rule[0] || d->timeout_ms == 0)
		abort();
	/* A bound hit fails closed. */
	if (d->undecided && (d->level != CFG_RISK_CRITICAL || !d->needs_approval))
		abort();
	enum approval_verdict v = approval_auto(&c->approval, d);
	if (v != APPROVAL_APPROVE && v != APPROVAL_DENY && v != APPROVAL_ASK)
		abort();
}

static void classify_all(const struct cfg *c, const json_t *args)
{
	for (size_t i = 0; i <= cfg_ntools; i++) {
		struct risk_decision d;
		struct al_error err = {0};
		if (risk_classify(c, i < cfg_ntools ? cfg_tools[i] : "unknown_tool", args, &d, &err) < 0 &&
		    err.code != -ENOMEM)
			abort();
		check_decision(c, &d);
	}
}

static void fuzz_args(const uint8_t *data, size_t size)
{
	static struct cfg *defaults;
	struct al_error err = {0};
	if (!defaults && (cfg_load_defaults(&defaults, &err) < 0 || cfg_rules_compile(defaults, &err) < 0))
		abort();
	json_t *args = json_loadb((const char *)data, size, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
	if (args)
		classify_all(defaults, args);
	json_decref(args);
}

static void round_trip(const struct cfg *c)
{
	char *first = NULL, *second = NULL;
	size_t n1 = 0, n2 = 0;
	struct cfg *again = NULL;
	struct al_error err = {0};
	if (cfg_dump(c, &first, &n1, &err) < 0 || cfg_load_buffer(first, n1, "dump.yaml", &again, &err) < 0 ||
	    cfg_dump(again, &second, &n2, &err) < 0 || n1 != n2 || memcmp(first, second, n1) != 0)
		abort();
	free(first);
	free(second);
	cfg_free(again);
}

static void fuzz_rules(const uint8_t *data, size_t size)
{
	static const char head[] = "version: 1\nrules:\n";
	char *yaml = malloc(sizeof(head) + size);
	if (!yaml)
		return;
	memcpy(yaml, head, sizeof(head) - 1);
	memcpy(yaml + sizeof(head) - 1, data, size);
	struct cfg *c = NULL;
	struct al_error err = {0};
	int r = cfg_load_buffer(yaml, sizeof(head) - 1 + size, "fuzz.yaml", &c, &err);
	free(yaml);
	if (r < 0 ? err.code != r || !memchr(err.msg, 0, sizeof(err.msg)) || c : !c)
		abort();
	if (r < 0)
		return;
	for (size_t i = 0; i < c->nrules; i++)
		if (!c->rules[i].name || !c->rules[i].tools.n || c->rules[i].risk < CFG_RISK_LOW)
			abort();
	round_trip(c);
	/* A pattern the load accepted always compiles for matching. */
	if (cfg_rules_compile(c, &err) < 0) {
		if (err.code != -ENOMEM)
			abort();
		cfg_free(c);
		return;
	}
	/* The input itself as code (not necessarily UTF-8: the matcher must cope) and as a parameter. */
	json_t *args = json_pack("{s:o, s:o, s:b}", "code", json_stringn_nocheck((const char *)data, size), "manager",
				 json_string("pip"), "network_enabled", size & 1);
	if (args)
		classify_all(c, args);
	json_decref(args);
	cfg_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 0 && (data[0] == '{' || data[0] == '['))
		fuzz_args(data, size);
	else
		fuzz_rules(data, size);
	return 0;
}
