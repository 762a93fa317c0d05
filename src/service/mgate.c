/* mgate.c — every tool call is classified by the configured risk rules; the approval policy allows,
 * denies, or asks a human (the session does the asking); a call that may run first gets its durable
 * start record (or is refused), and when any call ends, one more audit record. */
#include "service/mgate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/error.h"

#include "risk/risk.h"

static void g_check(void *ctx, const char *tool, const json_t *args, struct srv_gate_decision *out)
{
	struct mgate *g = ctx;
	struct risk_decision d;
	struct al_error err = {0};
	memset(out, 0, sizeof(*out));
	if (risk_classify(g->cfg, tool, args, &d, &err) < 0) {
		out->verdict = SRV_GATE_DENY;
		snprintf(out->reason, sizeof(out->reason), "the risk rules could not classify the request: %.180s",
			 err.msg);
		return;
	}
	enum approval_verdict v = approval_auto(&g->cfg->approval, &d);
	out->timeout_ms = d.timeout_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)d.timeout_ms;
	/* A denial says which part of the policy made it: the ceiling, or nobody to ask above what
	 * the operator lets run unasked (--approve auto=LEVEL, deny). */
	const struct cfg_approval *a = &g->cfg->approval;
	bool ceiling = a->deny_above != CFG_RISK_NONE && d.level > a->deny_above;
	char why[96] = "";
	if (v == APPROVAL_DENY && ceiling)
		snprintf(why, sizeof(why), ": above the approval policy's deny_above");
	else if (v == APPROVAL_DENY)
		snprintf(why, sizeof(why), ": nobody to ask, and the approval policy approves %s%s unasked",
			 a->auto_approve_up_to == CFG_RISK_NONE ? "nothing" : "up to ",
			 a->auto_approve_up_to == CFG_RISK_NONE ? "" : cfg_risk_name(a->auto_approve_up_to));
	snprintf(out->reason, sizeof(out->reason), "risk %s (rule %s)%s", cfg_risk_name(d.level), d.rule, why);
	out->verdict = v == APPROVAL_APPROVE ? SRV_GATE_ALLOW : v == APPROVAL_DENY ? SRV_GATE_DENY : SRV_GATE_ASK;
	/* A human will be asked: show them what the rule's pattern found. Best effort: without marks
	 * the code is still shown whole. */
	struct risk_mark m[SRV_GATE_MARKS_MAX];
	size_t n = 0;
	if (out->verdict == SRV_GATE_ASK && risk_marks(g->cfg, d.rule, args, "code", m, SRV_GATE_MARKS_MAX, &n) == 0)
		for (size_t i = 0; i < n; i++)
			out->marks[out->nmarks++] = (struct srv_mark){m[i].start, m[i].end};
}

static const char *status_name(enum srv_call_status s)
{
	switch (s) {
	case SRV_CALL_OK:
		return "ok";
	case SRV_CALL_PROGRAM_FAILED:
		return "program_failed";
	case SRV_CALL_REQUEST_FAILED:
		return "error";
	case SRV_CALL_DENIED:
		return "denied";
	case SRV_CALL_CANCELLED:
		return "cancelled";
	case SRV_CALL_INVALID:
		return "invalid";
	}
	return "?";
}

/* Who decided, for the audit log: the rule, the policy, a human on one channel, or the clock. d is
 * the call's classification (NULL when it could not be repeated). */
static enum approval_by by_of(enum srv_gate_outcome approval, enum srv_gate_by by, const struct risk_decision *d)
{
	switch (approval) {
	case SRV_GATE_ALLOWED:
		return d && !d->needs_approval ? APPROVAL_BY_RULE : APPROVAL_BY_AUTO;
	case SRV_GATE_DENIED:
		return APPROVAL_BY_AUTO;
	case SRV_GATE_APPROVED:
	case SRV_GATE_DECLINED:
		switch (by) {
		case SRV_BY_ELICITATION:
			return APPROVAL_BY_ELICITATION;
		case SRV_BY_HTTP:
			return APPROVAL_BY_HTTP;
		case SRV_BY_TERMINAL:
			return APPROVAL_BY_TERMINAL;
		case SRV_BY_NOBODY:
			break;
		}
		return APPROVAL_BY_AUTO;
	case SRV_GATE_TIMED_OUT:
		return APPROVAL_BY_TIMEOUT;
	case SRV_GATE_UNAVAILABLE:
		return APPROVAL_BY_UNAVAILABLE;
	case SRV_GATE_ABANDONED:
		return APPROVAL_BY_CANCELLED;
	}
	return APPROVAL_BY_AUTO;
}

static void g_finished(void *ctx, const struct srv_call_end *end)
{
	struct mgate *g = ctx;
	if (!g->log)
		return;
	struct risk_decision d;
	struct al_error err = {0};
	bool classified = json_is_object(end->args) && risk_classify(g->cfg, end->tool, end->args, &d, &err) == 0;
	const char *peer = end->peer ? end->peer : g->peer;
	const json_t *sid = json_is_object(end->args) ? json_object_get(end->args, "sandbox_id") : NULL;
	const char *sandbox = json_is_string(sid)		       ? json_string_value(sid)
			      : end->result && end->result->sandbox_id ? end->result->sandbox_id
								       : NULL;
	json_t *res = NULL, *proxy = NULL;
	const struct al_verdict *v = end->result ? end->result->verdict : NULL;
	if (v) {
		res = json_pack("{s:s,s:i,s:f,s:f,s:f,s:I,s:I,s:I}", "status", al_status_name(v->status), "exit_code",
				v->exit_code, "wall_s", v->wall_s, "user_s", v->user_s, "system_s", v->system_s,
				"peak_rss_kib", (json_int_t)v->peak_rss_kib, "stdout_bytes", (json_int_t)v->out.bytes,
				"stderr_bytes", (json_int_t)v->err.bytes);
		json_t *px = v->proxy_json ? json_loads(v->proxy_json, 0, NULL) : NULL;
		proxy = json_incref(json_object_get(px, "records")); /* the array audit.h promises */
		json_decref(px);
	}
	enum audit_decision dec = !end->decided ? AUDIT_NOT_DECIDED
				  : (end->approval == SRV_GATE_ALLOWED || end->approval == SRV_GATE_APPROVED)
					  ? AUDIT_APPROVED
					  : AUDIT_DENIED;
	struct audit_record rec = {
		.event = end->call_id ? AUDIT_EVENT_END : AUDIT_EVENT_CALL,
		.call_id = end->call_id,
		.transport = end->transport ? end->transport : g->transport,
		.peer = peer,
		.principal = end->principal ? end->principal : peer,
		.sandbox = sandbox,
		.tool = end->tool,
		.params = end->args,
		.risk = classified ? &d : NULL,
		.decision = dec,
		.by = by_of(end->approval, end->by, classified ? &d : NULL),
		.approver = end->approver,
		.on_behalf_of = end->on_behalf_of,
		.status = status_name(end->status),
		.client_left = end->client_left,
		.duration_ms = end->duration_ms,
		.resources = res,
		.proxy = proxy,
	};
	/* Best effort: the call already ran (its start record is durable) or never will. A failure is
	 * counted by the log and shows in audit_health; the call's answer stands. */
	(void)audit_write(g->log, &rec, &err);
	json_decref(res);
	json_decref(proxy);
}

/* AUDIT GATE: the start record is written and synced before the call runs; if it cannot be,
 * the call does not run (DESIGN.md: "without a durable audit record nothing runs"). */
static int g_admit(void *ctx, struct srv_call_start *st, struct al_error *err)
{
	struct mgate *g = ctx;
	st->call_id[0] = 0;
	if (!g->log)
		return 0; /* the operator configured no audit log: nothing to be durable in */
	struct risk_decision d;
	struct al_error e = {0};
	bool classified = json_is_object(st->args) && risk_classify(g->cfg, st->tool, st->args, &d, &e) == 0;
	const json_t *sid = json_is_object(st->args) ? json_object_get(st->args, "sandbox_id") : NULL;
	const char *peer = st->peer ? st->peer : g->peer;
	char id[SRV_CALL_ID_MAX];
	snprintf(id, sizeof(id), "%s-%llu", g->id_prefix,
		 (unsigned long long)__atomic_add_fetch(&g->next_id, 1, __ATOMIC_RELAXED));
	struct audit_record rec = {
		.event = AUDIT_EVENT_START,
		.call_id = id,
		.transport = st->transport ? st->transport : g->transport,
		.peer = peer,
		.principal = st->principal ? st->principal : peer,
		.sandbox = json_string_value(sid),
		.tool = st->tool,
		.params = st->args,
		.risk = classified ? &d : NULL,
		.decision = AUDIT_APPROVED,
		.by = by_of(st->approval, st->by, classified ? &d : NULL),
		.approver = st->approver,
		.on_behalf_of = st->on_behalf_of,
		.status = "started",
	};
	int r = audit_write(g->log, &rec, &e);
	if (r < 0)
		return al_err(err, -r, "refused: the audit log cannot record the call (%s)", e.msg);
	snprintf(st->call_id, sizeof(st->call_id), "%s", id);
	return 0;
}

static void g_health(void *ctx, struct srv_gate_health *out)
{
	struct mgate *g = ctx;
	struct audit_health h = {0};
	if (!g->log)
		return;
	audit_health(g->log, &h);
	out->degraded = h.degraded;
	out->audit_failures = h.failures;
	if (h.degraded)
		snprintf(out->reason, sizeof(out->reason), "the audit log cannot be written: %.200s", h.reason);
}

void mgate_init(struct mgate *g, struct srv_gate *out)
{
	uint32_t rnd = 0;
	/* The prefix tells this server's call ids from an earlier run's (a counter restarts at 1). */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint32_t)time(NULL) ^ (uint32_t)getpid();
	snprintf(g->id_prefix, sizeof(g->id_prefix), "%08x", rnd);
	g->next_id = 0;
	*out = (struct srv_gate){
		.ctx = g, .check = g_check, .finished = g_finished, .admit = g_admit, .health = g_health};
}

void mgate_channels(const struct cfg_approval *a, enum cfg_channel other, struct mgate_channels *out)
{
	size_t at_elicit = SIZE_MAX, at_other = SIZE_MAX;
	for (size_t i = 0; i < a->channels.n; i++) {
		if (at_elicit == SIZE_MAX && strcmp(a->channels.v[i], cfg_channel_name(CFG_CHAN_ELICITATION)) == 0)
			at_elicit = i;
		if (at_other == SIZE_MAX && strcmp(a->channels.v[i], cfg_channel_name(other)) == 0)
			at_other = i;
	}
	*out = (struct mgate_channels){
		.elicitation = at_elicit != SIZE_MAX,
		.other = at_other != SIZE_MAX,
		.other_first = at_other < at_elicit,
	};
}

/* ---- --approve: one table for airlock mcp and airlock serve ------------------------------------ */

static const struct approve_name {
	const char *name, *alias;
	enum cfg_channel ch;
	const char *help; /* lines after the first are indented to the help column */
} approve_names[] = {
	{"elicitation", "elicit", CFG_CHAN_ELICITATION, "the client's user (MCP elicitation)"},
	{"terminal", "tty", CFG_CHAN_TERMINAL,
	 "a prompt on the controlling terminal (/dev/tty; never\n"
	 "stdin or stdout); refused without one"},
	{"http", "queue", CFG_CHAN_HTTP,
	 "a reviewer: GET /v1/approvals and POST /v1/approvals/{id}\n"
	 "(approver credentials; the console at /console)"},
};

static const struct approve_name *approve_lookup(const char *s, size_t n, enum cfg_channel other)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(approve_names); i++) {
		const struct approve_name *a = &approve_names[i];
		if (a->ch != CFG_CHAN_ELICITATION && a->ch != other)
			continue;
		if ((strlen(a->name) == n && strncmp(s, a->name, n) == 0) ||
		    (strlen(a->alias) == n && strncmp(s, a->alias, n) == 0))
			return a;
	}
	return NULL;
}

static int approve_level(const char *s, enum cfg_risk *out)
{
	for (int r = CFG_RISK_LOW; r <= CFG_RISK_CRITICAL; r++)
		if (strcasecmp(s, cfg_risk_name((enum cfg_risk)r)) == 0) {
			*out = (enum cfg_risk)r;
			return 0;
		}
	return -EINVAL;
}

int mgate_approve_parse(const char *arg, enum cfg_channel other, struct mgate_approve *m, char msg[MGATE_MSG_MAX])
{
	*m = (struct mgate_approve){.given = true};
	if (strcmp(arg, "deny") == 0)
		return 0;
	if (strncmp(arg, "auto=", 5) == 0) {
		m->auto_level_set = true;
		if (approve_level(arg + 5, &m->auto_level) == 0)
			return 0;
		snprintf(msg, MGATE_MSG_MAX,
			 "--approve auto=LEVEL: LEVEL is LOW, MEDIUM, HIGH or CRITICAL, not '%.40s'", arg + 5);
		return -EINVAL;
	}
	if (!*arg) {
		snprintf(msg, MGATE_MSG_MAX, "--approve: empty mode");
		return -EINVAL;
	}
	for (const char *p = arg; *p;) {
		size_t n = strcspn(p, ",");
		const struct approve_name *a = approve_lookup(p, n, other);
		if (!a) {
			snprintf(msg, MGATE_MSG_MAX,
				 "--approve: unknown mode '%.*s' (elicitation, %s, auto=LEVEL, deny)",
				 (int)(n > 40 ? 40 : n), p, cfg_channel_name(other));
			return -EINVAL;
		}
		if (a->ch == CFG_CHAN_ELICITATION) {
			m->elicitation = true;
		} else {
			m->other_first = m->other_first || !m->elicitation; /* listed first */
			m->other = true;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

void mgate_approve_apply(const struct mgate_approve *m, enum cfg_channel other, struct cfg_approval *a,
			 struct mgate_channels *out)
{
	if (!m->given) {
		mgate_channels(a, other, out);
		return;
	}
	*out = (struct mgate_channels){.elicitation = m->elicitation, .other = m->other, .other_first = m->other_first};
	/* Nobody to ask (auto=LEVEL, deny): the policy decides alone, denying what it cannot approve
	 * (risk.c: no channel is a denial). The operator's flag is the policy; no caller approves
	 * its own call. */
	a->channel_bits = (m->elicitation ? 1u << CFG_CHAN_ELICITATION : 0) | (m->other ? 1u << other : 0);
	if (m->auto_level_set)
		a->auto_approve_up_to = m->auto_level;
}

/* Appends to buf[0..cap) at *n, clamped: the text stays terminated when it does not fit. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
	if (*n >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *n, cap - *n, fmt, ap);
	va_end(ap);
	*n = w < 0 ? cap : *n + (size_t)w;
}

void mgate_approve_help(enum cfg_channel other, int col, char *buf, size_t cap)
{
	const char *oname = cfg_channel_name(other);
	const int sub = col + 14; /* a mode's explanation */
	size_t n = 0;
	if (cap)
		buf[0] = 0;
	append(buf, cap, &n, "  %-*swho approves a call the risk rules put to a human:\n", col - 2, "--approve MODE");
	for (size_t i = 0; i < AL_ARRAY_SIZE(approve_names); i++) {
		const struct approve_name *a = &approve_names[i];
		if (a->ch != CFG_CHAN_ELICITATION && a->ch != other)
			continue;
		const char *nl = strchr(a->help, '\n');
		int first = (int)(nl ? (size_t)(nl - a->help) : strlen(a->help));
		append(buf, cap, &n, "%*s%-13s %.*s\n", col, "", a->name, first, a->help);
		if (nl)
			append(buf, cap, &n, "%*s%s\n", sub, "", nl + 1);
	}
	append(buf, cap, &n, "%*selicitation,%s / %s,elicitation: the first one\n", col, "", oname, oname);
	append(buf, cap, &n, "%*sthat can ask (elicitation only if the client declared it)\n", sub, "");
	append(buf, cap, &n, "%*sauto=LEVEL    nobody: approved up to LEVEL (LOW, MEDIUM, HIGH,\n", col, "");
	append(buf, cap, &n, "%*sCRITICAL), denied above; audited as approval.by=auto\n", sub, "");
	append(buf, cap, &n, "%*sdeny          nobody: denied\n", col, "");
	append(buf, cap, &n, "%*sDefault: the configuration's approval.channels, in order\n", col, "");
}
