/* risk.c — first-match classification of requests by the configured rules, with every pattern match bounded in steps, memory and time. */
#include "risk/risk.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/cleanup.h"
#include "util/error.h"

/* What one classification shares between its pattern matches. */
struct matcher {
	pcre2_match_context *mc;
	pcre2_match_data *md;
	struct timespec deadline;
};

enum {
	HOLDS = 1,
	FAILS = 0,
	UNDECIDED = -ETIME
};

static bool past(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec || (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* The callout every compiled pattern starts with: it runs at each start position tried, so a
 * subject that makes the matcher try a million positions stops at the deadline. A non-zero
 * negative return ends the whole match with that code. */
static int on_callout(pcre2_callout_block *cb, void *data)
{
	(void)cb;
	return past(data) ? PCRE2_ERROR_CALLOUT : 0;
}

static int matcher_init(struct matcher *m)
{
	*m = (struct matcher){0};
	m->deadline = al_deadline_ts(CLOCK_MONOTONIC, RISK_BUDGET_MS);
	/* One slot: only "did it match" matters, and pcre2_match says so (0) when slots run out. */
	m->md = pcre2_match_data_create(1, NULL);
	m->mc = pcre2_match_context_create(NULL);
	if (!m->md || !m->mc)
		return -ENOMEM;
	pcre2_set_match_limit(m->mc, RISK_MATCH_LIMIT);
	pcre2_set_depth_limit(m->mc, RISK_DEPTH_LIMIT);
	pcre2_set_heap_limit(m->mc, RISK_HEAP_LIMIT_KIB);
	pcre2_set_callout(m->mc, on_callout, &m->deadline);
	return 0;
}

static void matcher_free(struct matcher *m)
{
	pcre2_match_data_free(m->md);
	pcre2_match_context_free(m->mc);
}

static int match_string(struct matcher *m, const pcre2_code *re, const json_t *s)
{
	/* The deadline also covers patterns the start-of-match optimisation never enters. */
	if (past(&m->deadline))
		return UNDECIDED;
	/* json_string_length, not strlen: "x\u0000rm -rf /" must be searched past the NUL. */
	int rc = pcre2_match(re, (PCRE2_SPTR)json_string_value(s), json_string_length(s), 0, 0, m->md, m->mc);
	if (rc >= 0)
		return HOLDS;
	if (rc == PCRE2_ERROR_NOMATCH)
		return FAILS;
	/* Match, depth or heap limit, the deadline, or anything else: not decided. */
	return rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : UNDECIDED;
}

static int matches(struct matcher *m, const pcre2_code *re, const json_t *v)
{
	if (json_is_string(v))
		return match_string(m, re, v);
	if (!json_is_array(v))
		return FAILS;
	for (size_t i = 0; i < json_array_size(v); i++) {
		const json_t *it = json_array_get(v, i);
		int r = json_is_string(it) ? match_string(m, re, it) : FAILS;
		if (r != FAILS)
			return r;
	}
	return FAILS;
}

/* Numbers compare by value (1 == 1.0, which json_equal denies); everything else exactly. */
static bool scalar_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

static int cond_holds(struct matcher *m, const struct cfg_cond *k, const json_t *args)
{
	const json_t *v = json_is_object(args) ? json_object_get(args, k->param) : NULL;
	if (!v)
		return FAILS;
	if (k->op == CFG_COND_EQUALS)
		return scalar_equal(v, k->equals) ? HOLDS : FAILS;
	if (!m->mc) {
		int r = matcher_init(m);
		if (r < 0)
			return r;
	}
	return matches(m, k->re, v);
}

static bool names_tool(const struct cfg_rule *rule, const char *tool)
{
	for (size_t i = 0; i < rule->tools.n; i++)
		if (strcmp(rule->tools.v[i], "*") == 0 || (tool && strcmp(rule->tools.v[i], tool) == 0))
			return true;
	return false;
}

/* HOLDS when tool and every condition match, FAILS, UNDECIDED or -ENOMEM. Conditions are
 * checked in order and stop at the first that fails, so a cheap equals put first spares the
 * patterns after it. */
static int rule_matches(struct matcher *m, const struct cfg_rule *rule, const char *tool, const json_t *args)
{
	if (!names_tool(rule, tool))
		return FAILS;
	for (size_t i = 0; i < rule->nwhen; i++) {
		int r = cond_holds(m, &rule->when[i], args);
		if (r != HOLDS)
			return r;
	}
	return HOLDS;
}

static uint64_t timeout_of(const struct cfg *c, const struct cfg_rule *rule)
{
	return rule && rule->timeout ? rule->timeout_ms : c->approval.default_timeout_ms;
}

static void decide(const struct cfg *c, const struct cfg_rule *rule, struct risk_decision *out)
{
	*out = (struct risk_decision){
		.level = rule ? rule->risk : c->approval.default_risk,
		.rule = rule ? rule->name : RISK_DEFAULT_RULE,
		.timeout_ms = timeout_of(c, rule),
		.needs_approval = rule ? rule->require_approval : c->approval.default_risk >= CFG_RISK_HIGH,
	};
}

/* Fail closed: what could not be decided is treated as the worst case. */
static void undecided(const struct cfg *c, const struct cfg_rule *rule, struct risk_decision *out)
{
	*out = (struct risk_decision){.level = CFG_RISK_CRITICAL,
				      .rule = rule ? rule->name : RISK_DEFAULT_RULE,
				      .timeout_ms = timeout_of(c, rule),
				      .needs_approval = true,
				      .undecided = true};
}

int risk_classify(const struct cfg *c, const char *tool, const json_t *args, struct risk_decision *out,
		  struct al_error *err)
{
	if (c->job_only) /* no rules loaded: classifying with none would decide by omission */
		return al_err(err, EINVAL, "risk: the configuration was loaded without its rules (cfg_load_job)");
	if (!c->rules_compiled) /* a pattern never compiled would never match: decide by omission too */
		return al_err(err, EINVAL, "risk: the rules' patterns were not compiled (cfg_rules_compile)");
	struct matcher m = {0};
	int r = FAILS;
	size_t i = 0;
	for (; i < c->nrules && r == FAILS; i++)
		r = rule_matches(&m, &c->rules[i], tool, args);
	matcher_free(&m);
	const struct cfg_rule *rule = r == FAILS ? NULL : &c->rules[i - 1];
	if (r == HOLDS || r == FAILS) {
		decide(c, rule, out);
		return 0;
	}
	undecided(c, rule, out);
	if (r == -ENOMEM)
		return al_err(err, ENOMEM, "risk: out of memory while matching rule %s", rule->name);
	return 0;
}

/* Adds [a, b) to the sorted list out[0..*n), merging what overlaps or touches. */
static void add_mark(struct risk_mark *out, size_t max, size_t *n, size_t a, size_t b)
{
	size_t i = 0;
	while (i < *n && out[i].end < a)
		i++;
	if (i < *n && out[i].start <= b) { /* overlaps: grow it, then swallow those it now reaches */
		out[i].start = a < out[i].start ? a : out[i].start;
		out[i].end = b > out[i].end ? b : out[i].end;
		size_t k = i + 1;
		while (k < *n && out[k].start <= out[i].end) {
			out[i].end = out[k].end > out[i].end ? out[k].end : out[i].end;
			k++;
		}
		memmove(out + i + 1, out + k, (*n - k) * sizeof(*out));
		*n -= k - i - 1;
		return;
	}
	if (*n == max)
		return; /* enough marks to show: the rest are still in the code, in full */
	memmove(out + i + 1, out + i, (*n - i) * sizeof(*out));
	out[i] = (struct risk_mark){a, b};
	(*n)++;
}

/* Every match of re in s, left to right, while the bounds allow. */
static void mark_all(struct matcher *m, const pcre2_code *re, const json_t *s, struct risk_mark *out, size_t max,
		     size_t *n)
{
	const char *text = json_string_value(s);
	size_t len = json_string_length(s), at = 0;
	while (at <= len && *n < max && !past(&m->deadline)) {
		if (pcre2_match(re, (PCRE2_SPTR)text, len, at, 0, m->md, m->mc) < 0)
			return;
		const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
		if (ov[1] > ov[0])
			add_mark(out, max, n, ov[0], ov[1]);
		at = ov[1] > at ? ov[1] : at + 1; /* an empty match moves on by one */
	}
}

int risk_marks(const struct cfg *c, const char *rule, const json_t *args, const char *param, struct risk_mark *out,
	       size_t max, size_t *n)
{
	*n = 0;
	const json_t *s = json_is_object(args) ? json_object_get(args, param) : NULL;
	const struct cfg_rule *r = NULL;
	for (size_t i = 0; rule && i < c->nrules && !r; i++)
		if (strcmp(c->rules[i].name, rule) == 0)
			r = &c->rules[i];
	if (!r || !json_is_string(s) || !max)
		return 0;
	if (!c->rules_compiled)
		return -EINVAL;
	struct matcher m = {0};
	int rc = 0;
	for (size_t i = 0; i < r->nwhen && rc == 0; i++) {
		const struct cfg_cond *k = &r->when[i];
		if (k->op != CFG_COND_MATCHES || strcmp(k->param, param) != 0)
			continue;
		if (!m.mc)
			rc = matcher_init(&m);
		if (rc == 0)
			mark_all(&m, k->re, s, out, max, n);
	}
	matcher_free(&m);
	return rc;
}

enum approval_verdict approval_auto(const struct cfg_approval *policy, const struct risk_decision *d)
{
	/* deny_above is a ceiling: not even a rule that needs no approval passes it. */
	if (policy->deny_above != CFG_RISK_NONE && d->level > policy->deny_above)
		return APPROVAL_DENY;
	if (!d->needs_approval)
		return APPROVAL_APPROVE;
	/* CFG_RISK_NONE is below every level: nothing is approved without asking. */
	if (d->level <= policy->auto_approve_up_to)
		return APPROVAL_APPROVE;
	/* Nobody to ask means nobody will answer: the timeout's denial, now. */
	return policy->channel_bits ? APPROVAL_ASK : APPROVAL_DENY;
}

const char *approval_by_name(enum approval_by by)
{
	static const char *const names[APPROVAL_BY__COUNT] = {
		[APPROVAL_BY_AUTO] = "auto",
		[APPROVAL_BY_ELICITATION] = "elicitation",
		[APPROVAL_BY_HTTP] = "http",
		[APPROVAL_BY_TERMINAL] = "terminal",
		[APPROVAL_BY_TIMEOUT] = "timeout",
		[APPROVAL_BY_RULE] = "rule",
		[APPROVAL_BY_UNAVAILABLE] = "unavailable",
		[APPROVAL_BY_CANCELLED] = "cancelled",
	};
	return (unsigned)by < APPROVAL_BY__COUNT ? names[by] : "?";
}

const char *approval_verdict_name(enum approval_verdict v)
{
	switch (v) {
	case APPROVAL_APPROVE:
		return "approve";
	case APPROVAL_DENY:
		return "deny";
	case APPROVAL_ASK:
		return "ask";
	}
	return "?";
}
