/* risk.h — classifies each request to the server (LOW … CRITICAL) by the configuration's rules, and decides what the approval policy can decide alone. */
#ifndef AL_RISK_RISK_H
#define AL_RISK_RISK_H

/*
 * Order: rules are tried in the order the configuration lists them (a file's `rules:` replaces
 * the defaults' list whole, so the order is exactly the one written). The first rule whose
 * `tools` include the request's tool (or is "*") and whose conditions all hold decides the
 * level, the approval timeout and whether approval is needed. Put narrow rules before broad
 * ones: the defaults list "code with network" and the dangerous-pattern rules before the
 * catch-all "any code execution". No rule matches: approval.default_risk, with
 * approval.default_timeout and approval required from HIGH up, under the name "(default)".
 *
 * Conditions look at top-level keys of the tool's arguments (an object):
 *  - equals: the argument equals the JSON scalar (numbers by value: 1 equals 1.0; strings
 *    exactly, case included);
 *  - matches: the PCRE2 pattern is found anywhere in the string argument, the whole string
 *    (embedded NULs included, nothing truncated); in a list argument, in any of its strings;
 *    other types never match;
 *  - a missing argument satisfies no condition (so `equals: null` needs an explicit null).
 *
 * Bounds (the arguments are hostile; the patterns are the operator's, and may be careless):
 * every pcre2_match runs with a match limit, a depth limit and a heap limit, which bound the
 * backtracking at one start position; the patterns carry a callout at their start
 * (config/server.c) that checks a deadline shared by all patterns of one classification, which
 * bounds the number of start positions tried. A condition that cannot be decided within these
 * bounds makes the request CRITICAL with approval required (`undecided`): input that exhausts
 * the matcher must never lower its own risk.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "airlock/airlock.h"
#include "config/config.h"

#define RISK_MATCH_LIMIT    1000000 /* backtracking steps of one pattern at one start position */
#define RISK_DEPTH_LIMIT    5000    /* nested backtracking frames */
#define RISK_HEAP_LIMIT_KIB 16384   /* backtracking memory of one match */
#define RISK_BUDGET_MS	    500	    /* all patterns of one classification together */
#define RISK_DEFAULT_RULE   "(default)"

struct risk_decision {
	enum cfg_risk level;
	const char *rule;    /* the deciding rule's name (owned by the cfg), or RISK_DEFAULT_RULE */
	uint64_t timeout_ms; /* how long a human may take to answer; silence past it is a denial */
	bool needs_approval;
	bool undecided; /* a pattern of rule hit a bound: CRITICAL, approval needed, whatever rule says */
};

/*
 * Classifies a call of tool with args (a JSON object, or NULL for none) by c's rules. Returns 0
 * with *out filled; -ENOMEM (err set) leaves *out CRITICAL and undecided, so a caller that
 * ignores the error still fails closed. -EINVAL: c cannot classify (loaded by cfg_load_job, or
 * its patterns not compiled by cfg_rules_compile). Thread-safe: c is only read.
 */
int risk_classify(const struct cfg *c, const char *tool, const json_t *args, struct risk_decision *out,
		  struct al_error *err);

/* A byte range [start, end) of a string argument that a rule's pattern matched. */
struct risk_mark {
	size_t start, end;
};

#define RISK_MARKS_MAX 16

/*
 * Where the `matches` conditions of the rule named rule (on param) find their pattern in the
 * string argument args[param]: up to max ranges into its UTF-8 bytes, in order and merged where
 * they overlap; *n gets how many (0: the rule has no pattern on param, or none matched). Each
 * pattern's matches are sought from left to right, under the same bounds as risk_classify: what
 * a bound cut short is simply not marked (the classification already treated it as a match).
 * 0, -ENOMEM, or -EINVAL when c's patterns were not compiled (cfg_rules_compile). Thread-safe.
 */
int risk_marks(const struct cfg *c, const char *rule, const json_t *args, const char *param, struct risk_mark *out,
	       size_t max, size_t *n);

enum approval_verdict {
	APPROVAL_APPROVE, /* run it, nobody asked */
	APPROVAL_DENY,	  /* refuse it, nobody asked */
	APPROVAL_ASK,	  /* a human must answer on one of policy->channels within d->timeout_ms */
};

/*
 * What the policy decides without a human: above deny_above, deny (whatever the rule says);
 * no approval needed, approve; needed and at or below auto_approve_up_to, approve; else ask,
 * or deny when the policy lists no channel to ask on.
 */
enum approval_verdict approval_auto(const struct cfg_approval *policy, const struct risk_decision *d);

/* Who decided, as the audit log names it. */
enum approval_by {
	APPROVAL_BY_AUTO,	 /* the approval policy, nobody asked: auto_approve_up_to, deny_above */
	APPROVAL_BY_ELICITATION, /* the MCP client's user */
	APPROVAL_BY_HTTP,	 /* POST /v1/approvals/{id} */
	APPROVAL_BY_TERMINAL,	 /* the prompt of an interactive `airlock mcp` */
	APPROVAL_BY_TIMEOUT,	 /* nobody, in time: a denial */
	APPROVAL_BY_RULE,	 /* the matching rule needs no approval: allowed */
	APPROVAL_BY_UNAVAILABLE, /* approval needed, but no channel could ask anybody: a denial */
	APPROVAL_BY_CANCELLED,	 /* the client cancelled (or went away, or the server stopped) while asking */
	APPROVAL_BY__COUNT,
};
const char *approval_by_name(enum approval_by by);
const char *approval_verdict_name(enum approval_verdict v);

#endif
