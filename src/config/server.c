/* server.c — the configuration of `airlock serve`: risk rules (regexes compiled here, once), approval policy, audit log and server limits. */
#include "config/config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/conv.h"
#include "config/profile.h"
#include "config/units.h"
#include "util/cleanup.h"
#include "util/error.h"

#define MAX_CONDS	64			   /* conditions of one rule */
#define MAX_TIMEOUT_MS	(24ULL * 3600 * 1000)	   /* an approval nobody answers within a day will not come */
#define MAX_LIFETIME_MS (30ULL * 24 * 3600 * 1000) /* idle_ttl and max_lifetime: a month */
#define MAX_POOL	64			   /* ready sandboxes of one profile */
#define MAX_CELL_IMAGES (32ULL << 20)		   /* server.cell_image_limit */
#define MIN_ROTATE	(64ULL << 10)		   /* a smaller log would rotate every few records */

/* How every pattern is compiled: at load (a file's, to refuse a bad one) and for matching. */
#define REGEX_OPTIONS	 (PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C)
#define REGEX_NEST_LIMIT 64 /* parentheses: bounds the compiler's recursion */

static const char *const risk_names[CFG_RISK__COUNT] = {"LOW", "MEDIUM", "HIGH", "CRITICAL"};

const char *cfg_risk_name(enum cfg_risk r)
{
	if (r == CFG_RISK_NONE)
		return "none";
	return (unsigned)r < CFG_RISK__COUNT ? risk_names[r] : "?";
}

const char *const cfg_tools[] = {
	"code_execute",
	"code_install_package",
	"code_write_file",
	"code_read_file",
	"code_list_files",
	"code_destroy_sandbox",
	"code_create_sandbox",
	"code_context",
	"code_file",
	"code_upload", /* the JSON API's streamed uploads: size and sha256, not content */
	"code_process",
	"code_set_sandbox_timeout",
	"code_watch",
	"code_fork_sandbox",
	"code_pause_sandbox",
	"code_resume_sandbox",
	"code_snapshot_sandbox",
	"code_list_snapshots",
	"code_delete_snapshot",
};
const size_t cfg_ntools = AL_ARRAY_SIZE(cfg_tools);

static const char *const channel_names[CFG_CHAN__COUNT] = {
	[CFG_CHAN_ELICITATION] = "elicitation",
	[CFG_CHAN_HTTP] = "http",
	[CFG_CHAN_TERMINAL] = "terminal",
};

const char *cfg_channel_name(enum cfg_channel ch)
{
	return (unsigned)ch < CFG_CHAN__COUNT ? channel_names[ch] : "?";
}

/* ---- freeing ------------------------------------------------------------------------ */

static void rule_free(struct cfg_rule *r)
{
	free(r->name);
	conv_strv_free(&r->tools);
	for (size_t i = 0; i < r->nwhen; i++) {
		free(r->when[i].param);
		json_decref(r->when[i].equals);
		free(r->when[i].pattern);
		pcre2_code_free(r->when[i].re);
	}
	free(r->when);
	free(r->timeout);
}

void cfg_manager_free(struct cfg *c)
{
	for (size_t i = 0; i < c->nrules; i++)
		rule_free(&c->rules[i]);
	free(c->rules);
	free(c->approval.default_timeout);
	conv_strv_free(&c->approval.channels);
	free(c->audit.path);
	free(c->audit.rotate_size);
	free(c->server.idle_ttl);
	free(c->server.max_lifetime);
	free(c->server.request_timeout);
	for (size_t i = 0; i < c->server.npool; i++) {
		free(c->server.pool[i].profile);
		free(c->server.pool[i].image);
	}
	free(c->server.pool);
	free(c->server.http_listen);
	free(c->server.http_token_file);
	free(c->server.http_approver_token_file);
	free(c->server.http_e2b_domain);
	free(c->server.socket);
	free(c->server.state_dir);
	free(c->server.approver_uids);
	free(c->server.cell_image_limit);
}

/* ---- shared value parsers ------------------------------------------------------------ */

static int oom(struct conv *c)
{
	return al_err(c->err, ENOMEM, "out of memory");
}

/* A finite, positive duration of at most max_ms; the text is kept as written. */
static int duration(struct conv *c, const struct cfg_node *v, const char *path, uint64_t max_ms, char **text,
		    uint64_t *ms)
{
	struct al_error e = {0};
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && al_parse_duration_ms(v->text, ms, &e) < 0)
		return conv_bad(c->err, -e.code, v->mark, path, "%s", e.msg);
	/* "none" parses as unlimited: a timeout or a lifetime must end. */
	if (r == 0 && (*ms == AL_UNLIMITED || *ms > max_ms))
		return conv_bad(c->err, ERANGE, v->mark, path, "'%.32s' must be a duration of at most %llu hours",
				v->text, (unsigned long long)(max_ms / 3600000));
	return r ?: conv_copy_str(c, v, path, text);
}

/* A count between lo and hi ("none" is not a count here). */
static int count(struct conv *c, const struct cfg_node *v, const char *path, uint64_t lo, uint64_t hi, unsigned *out)
{
	struct al_error e = {0};
	uint64_t n = 0;
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && al_parse_count(v->text, UINT64_MAX - 1, &n, &e) < 0)
		return conv_bad(c->err, -e.code, v->mark, path, "%s", e.msg);
	if (r == 0 && (n < lo || n > hi))
		return conv_bad(c->err, ERANGE, v->mark, path, "'%.32s' must be a number between %llu and %llu",
				v->text, (unsigned long long)lo, (unsigned long long)hi);
	if (r == 0)
		*out = (unsigned)n;
	return r;
}

/* LOW ... CRITICAL, and "none" where a threshold may be off. */
static int risk_level(struct conv *c, const struct cfg_node *v, const char *path, bool none_ok, enum cfg_risk *out)
{
	static const char *const with_none[] = {"LOW", "MEDIUM", "HIGH", "CRITICAL", "none"};
	int r = conv_pick(c, v, path, with_none, none_ok ? 5 : 4);
	if (r >= 0)
		*out = r == 4 ? CFG_RISK_NONE : (enum cfg_risk)r;
	return r < 0 ? r : 0;
}

/* ---- conditions ------------------------------------------------------------------------ */

static int c_param(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && !v->text[0])
		r = conv_bad(c->err, EINVAL, v->mark, path, "an empty parameter name");
	return r ?: conv_copy_str(c, v, path, &((struct cfg_cond *)obj)->param);
}

/* A plain scalar JSON reads as a number is one; anything else plain or quoted is a string. */
static json_t *plain_number(const char *text)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	if (j && !json_is_number(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* equals: a JSON scalar. Unquoted true, false, null (~) and numbers keep their JSON type, so
 * `equals: true` matches the boolean and `equals: "true"` the string. */
static int c_equals(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_cond *k = obj;
	if (v->kind != CFG_SCALAR)
		return conv_bad(c->err, EINVAL, v->mark, path,
				"expected a string, number, true, false or null, not a %s",
				v->kind == CFG_MAP ? "mapping" : "list");
	json_t *j = NULL;
	if (cfg_node_is_null(v))
		j = json_null();
	else if (v->plain && (!strcmp(v->text, "true") || !strcmp(v->text, "false")))
		j = json_boolean(v->text[0] == 't');
	else if (!v->plain || !(j = plain_number(v->text)))
		j = json_string(v->text); /* libyaml hands out valid UTF-8 only */
	if (!j)
		return oom(c);
	json_decref(k->equals);
	k->equals = j;
	k->op = CFG_COND_EQUALS;
	return 0;
}

static int regex_error(struct conv *c, const struct cfg_node *v, const char *path, int code, size_t offset)
{
	PCRE2_UCHAR msg[120];
	if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
		snprintf((char *)msg, sizeof(msg), "error %d", code);
	return conv_bad(c->err, EINVAL, v->mark, path, "invalid regex at offset %zu: %s", offset, (const char *)msg);
}

/* The pattern as written, compiled alone so that errors point into what the operator wrote:
 * the validation every load does (the compiled form is freed; cfg_rules_compile makes the one
 * that is used). */
static int validate(struct conv *c, const struct cfg_node *v, const char *path)
{
	int code = 0;
	PCRE2_SIZE off = 0;
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	if (!cc)
		return oom(c);
	pcre2_set_parens_nest_limit(cc, REGEX_NEST_LIMIT);
	pcre2_code *alone = pcre2_compile((PCRE2_SPTR)v->text, strlen(v->text), REGEX_OPTIONS, &code, &off, cc);
	pcre2_compile_context_free(cc);
	int r = alone ? 0 : regex_error(c, v, path, code, off);
	pcre2_code_free(alone);
	return r;
}

static int c_matches(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_cond *k = obj;
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && !v->text[0])
		r = conv_bad(c->err, EINVAL, v->mark, path,
			     "an empty pattern matches every string: say what to look for");
	if (r == 0 && strlen(v->text) > CFG_REGEX_MAX)
		r = conv_bad(c->err, E2BIG, v->mark, path, "a pattern of more than %d bytes", CFG_REGEX_MAX);
	/* (*LIMIT_MATCH=...), (*UTF) and friends must open a pattern: ours opens with the callout. */
	if (r == 0 && strncmp(v->text, "(*", 2) == 0)
		r = conv_bad(c->err, EINVAL, v->mark, path,
			     "options such as (*UTF) are not accepted: airlock sets them");
	/* The embedded defaults' patterns (known by their marks' file, the one cfg_defaults_name
	 * object, which no file's name can be) are proven by the unit tests that compile them; a
	 * file's are compiled here, so that every command that loads it refuses a bad one. */
	if (r == 0 && v->mark.file != cfg_defaults_name)
		r = validate(c, v, path);
	k->op = CFG_COND_MATCHES;
	return r ?: conv_copy_str(c, v, path, &k->pattern);
}

static int conv_cond(struct conv *c, const struct cfg_node *v, const char *path, struct cfg_cond *k)
{
	static const struct field fields[] = {{"param", c_param}, {"equals", c_equals}, {"matches", c_matches}};
	int r = conv_fields(c, v, path, fields, AL_ARRAY_SIZE(fields), k);
	if (r == 0 && !k->param)
		r = conv_bad(c->err, EINVAL, v->mark, path, "needs a param");
	if (r == 0 && !k->equals == !k->pattern)
		r = conv_bad(c->err, EINVAL, v->mark, path,
			     k->pattern ? "give equals or matches, not both" : "needs equals or matches");
	return r;
}

/* ---- rules ------------------------------------------------------------------------------ */

static int r_name(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	r = r ?: conv_check_name(c, v->text, v->mark, path);
	return r ?: conv_copy_str(c, v, path, &((struct cfg_rule *)obj)->name);
}

static int check_tool(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	if (strcmp(it->text, "*") == 0)
		return 0;
	for (size_t i = 0; i < cfg_ntools; i++)
		if (strcmp(it->text, cfg_tools[i]) == 0)
			return 0;
	return conv_bad(c->err, EINVAL, it->mark, ipath,
			"unknown tool '%.64s' (expected \"*\" or one of code_execute, "
			"code_install_package, code_write_file, code_read_file, code_list_files, code_destroy_sandbox, "
			"code_create_sandbox)",
			it->text);
}

static int r_tools(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_rule *rule = obj;
	int r = conv_strv(c, v, path, &rule->tools, check_tool, NULL);
	if (r == 0 && rule->tools.n == 0)
		r = conv_bad(c->err, EINVAL, v->mark, path, "an empty list of tools: the rule would never apply");
	for (size_t i = 0; r == 0 && rule->tools.n > 1 && i < rule->tools.n; i++)
		if (strcmp(rule->tools.v[i], "*") == 0)
			r = conv_bad(c->err, EINVAL, v->ents[i].value->mark, path,
				     "\"*\" already names every tool: give it alone");
	return r;
}

static int r_when(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_rule *rule = obj;
	int r = conv_want(c, v, CFG_SEQ, path);
	if (r == 0 && v->n > MAX_CONDS)
		return conv_bad(c->err, E2BIG, v->mark, path, "more than %d conditions", MAX_CONDS);
	if (r == 0 && v->n && !(rule->when = calloc(v->n, sizeof(*rule->when))))
		return oom(c);
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		char ipath[PATH_BUF + 16];
		conv_index(ipath, path, i);
		rule->nwhen = i + 1;
		r = conv_cond(c, v->ents[i].value, ipath, &rule->when[i]);
	}
	return r;
}

static int r_risk(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return risk_level(c, v, path, false, &((struct cfg_rule *)obj)->risk);
}

static int r_timeout(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_rule *rule = obj;
	return duration(c, v, path, MAX_TIMEOUT_MS, &rule->timeout, &rule->timeout_ms);
}

static int r_require(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_rule *rule = obj;
	rule->require_approval_set = true;
	return conv_bool(c, v, path, &rule->require_approval);
}

static int conv_rule(struct conv *c, const struct cfg_node *v, const char *path, struct cfg_rule *rule)
{
	static const struct field fields[] = {
		{"name", r_name},
		{"tools", r_tools},
		{"when", r_when},
		{"risk", r_risk},
		{"approval_timeout", r_timeout},
		{"require_approval", r_require},
	};
	rule->risk = CFG_RISK_NONE;
	int r = conv_fields(c, v, path, fields, AL_ARRAY_SIZE(fields), rule);
	const char *missing = !rule->name		    ? "a name"
			      : !rule->tools.n		    ? "tools"
			      : rule->risk == CFG_RISK_NONE ? "a risk"
							    : NULL;
	if (r == 0 && missing)
		r = conv_bad(c->err, EINVAL, v->mark, path, "needs %s", missing);
	/* Who must approve is the rule's call; unsaid, only HIGH and CRITICAL wait for a human. */
	if (r == 0 && !rule->require_approval_set)
		rule->require_approval = rule->risk >= CFG_RISK_HIGH;
	return r;
}

/* Names identify rules in the audit log and in decisions: two rules may not share one. */
static int unique_names(struct conv *c, const struct cfg_node *v, const char *path)
{
	const struct cfg_rule *rules = c->cfg->rules;
	for (size_t i = 1; i < c->cfg->nrules; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(rules[i].name, rules[j].name) == 0) {
				const struct cfg_node *name = cfg_node_get(v->ents[i].value, "name");
				char ipath[PATH_BUF + 16];
				snprintf(ipath, sizeof(ipath), "%s[%zu].name", path, i);
				return conv_bad(c->err, EINVAL, name->mark, ipath,
						"'%.64s' is also the name of rules[%zu]", rules[i].name, j);
			}
	return 0;
}

int conv_rules(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SEQ, path);
	if (r == 0 && v->n > CFG_MAX_ENTRIES)
		return conv_bad(c->err, E2BIG, v->mark, path, "more than %d rules", CFG_MAX_ENTRIES);
	if (r == 0 && v->n && !(c->cfg->rules = calloc(v->n, sizeof(struct cfg_rule))))
		return oom(c);
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		char ipath[PATH_BUF + 16];
		conv_index(ipath, path, i);
		c->cfg->nrules = i + 1;
		r = conv_rule(c, v->ents[i].value, ipath, &c->cfg->rules[i]);
	}
	return r ?: unique_names(c, v, path);
}

/* Compiles k's pattern for matching, with the deadline callout in front. The callout item
 * matches the empty string, so it changes no match; in front of a top-level alternation it
 * belongs to the first branch, which every start position tries first, so it still runs at
 * each of them. */
static int compile_cond(struct cfg_cond *k, pcre2_compile_context *cc, const char *rule, size_t i, struct al_error *err)
{
	cleanup_free char *wrapped = NULL;
	if (asprintf(&wrapped, "(?C%d)%s", CFG_REGEX_CALLOUT, k->pattern) < 0)
		return al_err(err, ENOMEM, "out of memory");
	int code = 0;
	PCRE2_SIZE off = 0;
	k->re = pcre2_compile((PCRE2_SPTR)wrapped, PCRE2_ZERO_TERMINATED, REGEX_OPTIONS, &code, &off, cc);
	if (k->re)
		return 0;
	if (code == PCRE2_ERROR_HEAP_FAILED)
		return al_err(err, ENOMEM, "out of memory");
	/* Only an embedded default can get here (a file's patterns were compiled at load), and
	 * test_risk compiles those: still said in full, never skipped. */
	PCRE2_UCHAR msg[120];
	if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
		snprintf((char *)msg, sizeof(msg), "error %d", code);
	return al_err(err, EINVAL, "rules: %s: when[%zu].matches: invalid regex: %s", rule, i, (const char *)msg);
}

int cfg_rules_compile(struct cfg *c, struct al_error *err)
{
	if (c->rules_compiled)
		return 0;
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	if (!cc)
		return al_err(err, ENOMEM, "out of memory");
	pcre2_set_parens_nest_limit(cc, REGEX_NEST_LIMIT);
	int r = 0;
	for (size_t i = 0; r == 0 && i < c->nrules; i++)
		for (size_t j = 0; r == 0 && j < c->rules[i].nwhen; j++) {
			struct cfg_cond *k = &c->rules[i].when[j];
			if (k->op == CFG_COND_MATCHES && !k->re)
				r = compile_cond(k, cc, c->rules[i].name, j, err);
		}
	pcre2_compile_context_free(cc);
	c->rules_compiled = r == 0;
	return r;
}

/* ---- approval --------------------------------------------------------------------------- */

static int a_default_risk(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return risk_level(c, v, path, false, &c->cfg->approval.default_risk);
}

static int a_default_timeout(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_approval *a = &c->cfg->approval;
	return duration(c, v, path, MAX_TIMEOUT_MS, &a->default_timeout, &a->default_timeout_ms);
}

static int a_auto(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return risk_level(c, v, path, true, &c->cfg->approval.auto_approve_up_to);
}

static int a_deny(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return risk_level(c, v, path, true, &c->cfg->approval.deny_above);
}

static int check_channel(struct conv *c, const struct cfg_node *it, const char *ipath, void *obj)
{
	struct cfg_approval *a = &c->cfg->approval;
	int r = conv_pick(c, it, ipath, channel_names, CFG_CHAN__COUNT);
	if (r >= 0 && (a->channel_bits & (1u << r)))
		return conv_bad(c->err, EINVAL, it->mark, ipath, "'%s' is listed twice", it->text);
	if (r >= 0)
		a->channel_bits |= 1u << r;
	return r < 0 ? r : 0;
}

static int a_channels(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	c->cfg->approval.channel_bits = 0;
	return conv_strv(c, v, path, &c->cfg->approval.channels, check_channel, NULL);
}

int conv_approval(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	static const struct field fields[] = {
		{"default_risk", a_default_risk}, {"default_timeout", a_default_timeout},
		{"auto_approve_up_to", a_auto},	  {"deny_above", a_deny},
		{"channels", a_channels},
	};
	struct cfg_approval *a = &c->cfg->approval;
	/* Unsaid: every unmatched request is HIGH, nothing is decided without a human. */
	a->default_risk = CFG_RISK_HIGH;
	a->auto_approve_up_to = a->deny_above = CFG_RISK_NONE;
	int r = conv_fields(c, v, path, fields, AL_ARRAY_SIZE(fields), NULL);
	if (r == 0 && !a->default_timeout)
		r = conv_bad(c->err, EINVAL, v->mark, path, "needs a default_timeout");
	/* Approving up to a level that is also denied would leave the outcome to code order. */
	if (r == 0 && a->deny_above != CFG_RISK_NONE && a->auto_approve_up_to > a->deny_above)
		r = conv_bad(c->err, EINVAL, v->mark, path, "auto_approve_up_to (%s) is above deny_above (%s)",
			     cfg_risk_name(a->auto_approve_up_to), cfg_risk_name(a->deny_above));
	return r;
}

/* ---- audit ------------------------------------------------------------------------------- */

static int au_path(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	r = r ?: conv_host_path(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &c->cfg->audit.path);
}

static int au_fsync(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_bool(c, v, path, &c->cfg->audit.fsync);
}

static int au_rotate(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_audit *a = &c->cfg->audit;
	struct al_error e = {0};
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && al_parse_size(v->text, &a->rotate_bytes, &e) < 0)
		return conv_bad(c->err, -e.code, v->mark, path, "%s", e.msg);
	if (r == 0 && a->rotate_bytes < MIN_ROTATE)
		return conv_bad(c->err, ERANGE, v->mark, path, "'%.32s' must be at least 64K (or none: never rotate)",
				v->text);
	return r ?: conv_copy_str(c, v, path, &a->rotate_size);
}

static int au_keep(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 1000, &c->cfg->audit.keep);
}

int conv_audit(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	static const struct field fields[] = {
		{"path", au_path}, {"fsync", au_fsync}, {"rotate_size", au_rotate}, {"keep", au_keep}};
	int r = conv_fields(c, v, path, fields, AL_ARRAY_SIZE(fields), NULL);
	if (r == 0 && (!c->cfg->audit.rotate_size || !c->cfg->audit.keep))
		r = conv_bad(c->err, EINVAL, v->mark, path, "needs %s", !c->cfg->audit.keep ? "keep" : "rotate_size");
	return r;
}

/* ---- server ------------------------------------------------------------------------------- */

static int s_max_sandboxes(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 65536, &c->cfg->server.max_sandboxes);
}

static int s_max_execs(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 4096, &c->cfg->server.max_execs);
}

static int s_max_execs_per_sandbox(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 1024, &c->cfg->server.max_execs_per_sandbox);
}

static int q_sessions(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 4096, &c->cfg->server.quota_sessions);
}

static int q_sandboxes(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 65536, &c->cfg->server.quota_sandboxes);
}

static int q_execs(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 4096, &c->cfg->server.quota_execs);
}

static int q_connections(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 4096, &c->cfg->server.quota_connections);
}

static int q_snapshots(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 1, 65536, &c->cfg->server.quota_snapshots);
}

static int q_bytes(struct conv *c, const struct cfg_node *v, const char *path, uint64_t *out)
{
	struct al_error e = {0};
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && al_parse_size(v->text, out, &e) < 0)
		return conv_bad(c->err, -e.code, v->mark, path, "%s", e.msg);
	return r;
}

/* What a principal's snapshots hold on the state directory's disk, together ("none": no cap). */
static int q_snapshot_bytes(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return q_bytes(c, v, path, &c->cfg->server.quota_snapshot_bytes);
}

/* What a principal's sandboxes may store, together: the sum of their disk limits, each a hard
 * limit, so the bound holds before anything is written ("none": no cap). */
static int q_sandbox_bytes(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return q_bytes(c, v, path, &c->cfg->server.quota_sandbox_bytes);
}

/* Per principal: one client filling the server's tables locks every other client out. */
static int s_quota(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	static const struct field fields[] = {
		{"sessions", q_sessions},	   {"sandboxes", q_sandboxes}, {"execs", q_execs},
		{"connections", q_connections},	   {"snapshots", q_snapshots}, {"snapshot_bytes", q_snapshot_bytes},
		{"sandbox_bytes", q_sandbox_bytes}};
	return conv_fields(c, v, path, fields, AL_ARRAY_SIZE(fields), NULL);
}

static int s_idle_ttl(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_server *s = &c->cfg->server;
	return duration(c, v, path, MAX_LIFETIME_MS, &s->idle_ttl, &s->idle_ttl_ms);
}

static int s_max_lifetime(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_server *s = &c->cfg->server;
	return duration(c, v, path, MAX_LIFETIME_MS, &s->max_lifetime, &s->max_lifetime_ms);
}

/* Figures a cell returns travel base64 in one result frame and one answer: bounded well below
 * the kernel's frame limit (64 MiB) and the server's memory per call. */
static int s_cell_image_limit(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_server *s = &c->cfg->server;
	struct al_error e = {0};
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && al_parse_size(v->text, &s->cell_image_bytes, &e) < 0)
		return conv_bad(c->err, -e.code, v->mark, path, "%s", e.msg);
	if (r == 0 && (s->cell_image_bytes == AL_UNLIMITED || s->cell_image_bytes > MAX_CELL_IMAGES))
		return conv_bad(c->err, ERANGE, v->mark, path, "'%.32s' must be a size of at most 32M", v->text);
	return r ?: conv_copy_str(c, v, path, &s->cell_image_limit);
}

/* A client trickling a request holds a connection thread: each request gets this long to arrive. */
static int s_request_timeout(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_server *s = &c->cfg->server;
	int r = duration(c, v, path, 3600ULL * 1000, &s->request_timeout, &s->request_timeout_ms);
	if (r == 0 && s->request_timeout_ms < 1000)
		r = conv_bad(c->err, ERANGE, v->mark, path, "'%.32s' must be at least 1s", v->text);
	return r;
}

static int pool_entry(struct conv *c, const struct cfg_entry *e, const char *sub, size_t i)
{
	struct cfg_pool *p = &c->cfg->server.pool[i];
	if (!(p->profile = strdup(e->key)))
		return oom(c);
	c->cfg->server.npool = i + 1;
	if (!cfg_profile(c->cfg, e->key))
		return conv_bad(c->err, ENOENT, e->key_mark, sub, "no profile '%.64s' in profiles", e->key);
	return count(c, e->value, sub, 0, MAX_POOL, &p->count);
}

static int pl_profile(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_pool *p = obj;
	int r = conv_copy_str(c, v, path, &p->profile);
	if (r == 0 && !cfg_profile(c->cfg, p->profile))
		r = conv_bad(c->err, ENOENT, v->mark, path, "no profile '%.64s' in profiles", p->profile);
	return r;
}

static int pl_image(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return conv_copy_str(c, v, path, &((struct cfg_pool *)obj)->image);
}

static int pl_count(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 0, MAX_POOL, &((struct cfg_pool *)obj)->count);
}

/* The list form, [{profile, image, count}]: spares of a profile on one of its images (the map
 * form, {PROFILE: COUNT}, has no room for an image). */
static int pool_item(struct conv *c, const struct cfg_node *it, const char *ipath, size_t i)
{
	static const struct field fields[] = {{"profile", pl_profile}, {"image", pl_image}, {"count", pl_count}};
	struct cfg_pool *p = &c->cfg->server.pool[i];
	c->cfg->server.npool = i + 1;
	int r = conv_fields(c, it, ipath, fields, AL_ARRAY_SIZE(fields), p);
	if (r == 0 && !p->profile)
		r = conv_bad(c->err, EINVAL, it->mark, ipath, "needs profile");
	const struct cfg_profile *pr = r == 0 ? cfg_profile(c->cfg, p->profile) : NULL;
	struct al_error e = {0};
	/* The image is checked as a client's would be: only what the profile offers is pooled. */
	if (pr && p->image && cfg_profile_image_allowed(pr, p->image, &e) < 0)
		r = conv_bad(c->err, EPERM, it->mark, ipath, "%s", e.msg);
	for (size_t k = 0; r == 0 && k < i; k++) {
		const struct cfg_pool *q = &c->cfg->server.pool[k];
		if (q->profile && p->profile && strcmp(q->profile, p->profile) == 0 &&
		    (q->image == p->image || (q->image && p->image && strcmp(q->image, p->image) == 0)))
			r = conv_bad(c->err, EEXIST, it->mark, ipath,
				     "profile '%.64s' is pooled twice on the same root", p->profile);
	}
	return r;
}

static int s_pool(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = v->kind == CFG_SEQ ? 0 : conv_want(c, v, CFG_MAP, path);
	if (r == 0 && v->n && !(c->cfg->server.pool = calloc(v->n, sizeof(struct cfg_pool))))
		return oom(c);
	if (r < 0 || v->kind != CFG_SEQ)
		return r ?: conv_named(c, v, path, pool_entry);
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		char ipath[128];
		snprintf(ipath, sizeof(ipath), "%.80s[%zu]", path, i);
		r = conv_want(c, v->ents[i].value, CFG_MAP, ipath) ?: pool_item(c, v->ents[i].value, ipath, i);
	}
	return r;
}

/* "HOST:PORT" or "[IPV6]:PORT"; *loopback when HOST can only be reached from this machine. */
static bool parse_listen(const char *s, bool *loopback)
{
	char host[256];
	const char *colon;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(host))
			return false;
		snprintf(host, sizeof(host), "%.*s", (int)(close - s - 1), s + 1);
		struct in6_addr a6;
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return false;
		*loopback = IN6_IS_ADDR_LOOPBACK(&a6);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host) || memchr(s, ':', (size_t)(colon - s)))
			return false;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
		if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != strlen(host))
			return false;
		struct in_addr a4;
		*loopback = strcmp(host, "localhost") == 0 ||
			    (inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127);
	}
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	return colon[1] >= '0' && colon[1] <= '9' && !*end && errno == 0 && port >= 1 && port <= 65535;
}

static int h_listen(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	bool loopback = false;
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && !parse_listen(v->text, &loopback))
		r = conv_bad(c->err, EINVAL, v->mark, path, "'%.64s' is not HOST:PORT or [IPV6]:PORT", v->text);
	*(bool *)obj = loopback;
	return r ?: conv_copy_str(c, v, path, &c->cfg->server.http_listen);
}

static int h_token_file(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	r = r ?: conv_host_path(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &c->cfg->server.http_token_file);
}

static int h_approver_token_file(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	r = r ?: conv_host_path(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &c->cfg->server.http_approver_token_file);
}

/* A DNS name (letters, digits, '-' and '.', no empty label): the Host suffix of E2B's sandbox URLs. */
static int h_e2b_domain(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	const char *t = r == 0 ? v->text : "";
	size_t n = strlen(t);
	if (r == 0 && (n == 0 || n > 200 || t[0] == '.' || t[0] == '-' || t[n - 1] == '.' || strstr(t, "..") ||
		       strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != n))
		r = conv_bad(c->err, EINVAL, v->mark, path, "'%.64s' is not a domain name", t);
	return r ?: conv_copy_str(c, v, path, &c->cfg->server.http_e2b_domain);
}

/* TCP always needs tokens (a missing client token file is generated on first start, see
 * airlock serve): there is no listener without an identity to check. */
/* An eighth of them may be unauthenticated at once (http/server.c): a client that opens 64 at a
 * time (64 concurrent SDK calls) needs 512. */
static int h_max_connections(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	return count(c, v, path, 16, 65536, &c->cfg->server.http_max_connections);
}

static int s_http(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	static const struct field fields[] = {
		{"listen", h_listen},
		{"token_file", h_token_file},
		{"approver_token_file", h_approver_token_file},
		{"e2b_domain", h_e2b_domain},
		{"max_connections", h_max_connections},
	};
	bool loopback = true;
	return conv_fields(c, v, path, fields, AL_ARRAY_SIZE(fields), &loopback);
}

static int s_socket(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && strcmp(v->text, "none") != 0)
		r = conv_host_path(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &c->cfg->server.socket);
}

static int s_state_dir(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	int r = conv_want(c, v, CFG_SCALAR, path);
	if (r == 0 && strcmp(v->text, "none") != 0)
		r = conv_host_path(c, v, path, NULL);
	return r ?: conv_copy_str(c, v, path, &c->cfg->server.state_dir);
}

static int s_approver_uids(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	struct cfg_server *s = &c->cfg->server;
	int r = conv_want(c, v, CFG_SEQ, path);
	if (r < 0)
		return r;
	free(s->approver_uids);
	s->napprover_uids = 0;
	if (!(s->approver_uids = calloc(v->n + 1, sizeof(unsigned))))
		return oom(c);
	for (size_t i = 0; i < v->n; i++) {
		char ipath[128];
		snprintf(ipath, sizeof(ipath), "%.80s[%zu]", path, i);
		const struct cfg_node *it = v->ents[i].value;
		if ((r = conv_want(c, it, CFG_SCALAR, ipath)) < 0)
			return r;
		char *end;
		errno = 0;
		unsigned long uid = strtoul(it->text, &end, 10);
		if (!*it->text || *end || errno || it->text[0] == '-' || uid >= 0xffffffffUL)
			return conv_bad(c->err, EINVAL, it->mark, ipath, "'%.32s' is not a uid", it->text);
		s->approver_uids[s->napprover_uids++] = (unsigned)uid;
	}
	return 0;
}

int conv_server(struct conv *c, const struct cfg_node *v, const char *path, void *obj)
{
	static const struct field fields[] = {
		{"max_sandboxes", s_max_sandboxes},
		{"max_execs", s_max_execs},
		{"max_execs_per_sandbox", s_max_execs_per_sandbox},
		{"idle_ttl", s_idle_ttl},
		{"max_lifetime", s_max_lifetime},
		{"request_timeout", s_request_timeout},
		{"pool", s_pool},
		{"http", s_http},
		{"socket", s_socket},
		{"state_dir", s_state_dir},
		{"approver_uids", s_approver_uids},
		{"quota", s_quota},
		{"cell_image_limit", s_cell_image_limit},
	};
	struct cfg_server *s = &c->cfg->server;
	int r = conv_fields(c, v, path, fields, AL_ARRAY_SIZE(fields), NULL);
	const char *missing = !s->max_sandboxes	 ? "max_sandboxes"
			      : !s->max_execs	 ? "max_execs"
			      : !s->idle_ttl	 ? "idle_ttl"
			      : !s->max_lifetime ? "max_lifetime"
						 : NULL;
	if (r == 0 && missing)
		return conv_bad(c->err, EINVAL, v->mark, path, "needs %s", missing);
	uint64_t pooled = 0;
	for (size_t i = 0; i < s->npool; i++)
		pooled += s->pool[i].count;
	/* Pooled sandboxes are live ones: a pool the limit cannot hold would never fill. */
	if (r == 0 && pooled > s->max_sandboxes)
		r = conv_bad(c->err, ERANGE, v->mark, path,
			     "the pool holds %llu sandboxes, more than max_sandboxes (%u)", (unsigned long long)pooled,
			     s->max_sandboxes);
	return r;
}
