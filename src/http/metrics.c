/* metrics.c — counters of what passes through the HTTP layer, rendered in the Prometheus text format. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/hx.h"

/* Exec latency buckets, seconds (the wall time the verdict reports). */
static const double buckets[HX_LATENCY_BUCKETS] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120};
/* Sandbox creation, seconds from the request's arrival to its answer: a warm pool's claim is
 * well under a millisecond, a cold create several. */
static const double create_buckets[HX_CREATE_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
							 0.05,	 0.1,	0.25,	1,     5};

static const char *const exec_names[HX_EXEC__COUNT] = {
	[HX_EXEC_EXITED] = "exited",	       [HX_EXEC_SIGNALED] = "signaled",
	[HX_EXEC_TIMEOUT] = "timeout",	       [HX_EXEC_OUTPUT_LIMIT] = "output-limit",
	[HX_EXEC_SETUP_ERROR] = "setup-error", [HX_EXEC_OOM] = "oom",
	[HX_EXEC_DENIED] = "denied",	       [HX_EXEC_FAILED] = "failed",
	[HX_EXEC_CANCELLED] = "cancelled",     [HX_EXEC_INVALID] = "invalid",
};

static void add(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

static uint64_t get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void hx_metrics_request(struct hx_metrics *m, int status)
{
	int cls = status / 100;
	add(&m->requests[cls >= 1 && cls <= 5 ? cls - 1 : 5], 1);
}

void hx_metrics_approval(struct hx_metrics *m, enum srv_gate_outcome o)
{
	if ((unsigned)o <= SRV_GATE_ABANDONED)
		add(&m->approvals[o], 1);
}

static enum hx_exec_kind exec_kind(const struct srv_call_end *e)
{
	const struct al_verdict *v = e->result ? e->result->verdict : NULL;
	if (v && !e->result->error) {
		switch (v->status) {
		case AL_STATUS_EXITED:
			return HX_EXEC_EXITED;
		case AL_STATUS_SIGNALED:
			return HX_EXEC_SIGNALED;
		case AL_STATUS_TIMEOUT:
			return HX_EXEC_TIMEOUT;
		case AL_STATUS_OUTPUT_LIMIT:
			return HX_EXEC_OUTPUT_LIMIT;
		case AL_STATUS_SETUP_ERROR:
			return HX_EXEC_SETUP_ERROR;
		case AL_STATUS_OOM:
			return HX_EXEC_OOM;
		case AL_STATUS_KILLED: /* the server's execs have no stop signal: a cancel */
			return HX_EXEC_CANCELLED;
		}
	}
	switch (e->status) {
	case SRV_CALL_DENIED:
		return HX_EXEC_DENIED;
	case SRV_CALL_CANCELLED:
		return HX_EXEC_CANCELLED;
	case SRV_CALL_INVALID:
		return HX_EXEC_INVALID;
	case SRV_CALL_OK:
	case SRV_CALL_PROGRAM_FAILED:
	case SRV_CALL_REQUEST_FAILED:
		break;
	}
	return HX_EXEC_FAILED;
}

/* The proxy's own counters travel in the verdict (proxy_json: {"allowed":N,"denied":N,...}). */
static void count_proxy(struct hx_metrics *m, const struct al_verdict *v)
{
	if (!v || !v->proxy_json)
		return;
	json_t *p = json_loads(v->proxy_json, 0, NULL);
	json_int_t allowed = json_integer_value(json_object_get(p, "allowed"));
	json_int_t denied = json_integer_value(json_object_get(p, "denied"));
	if (allowed > 0)
		add(&m->proxy_allowed, (uint64_t)allowed);
	if (denied > 0)
		add(&m->proxy_denied, (uint64_t)denied);
	json_decref(p);
}

void hx_metrics_end(struct hx_metrics *m, const struct srv_call_end *e)
{
	int tool = tl_lookup(e->tool);
	if (tool >= 0)
		add(&m->calls[tool], 1);
	if (tool == TL_CREATE_SANDBOX && e->status == SRV_CALL_OK) {
		uint64_t us = e->duration_us ? e->duration_us : e->duration_ms * 1000;
		size_t b = 0;
		while (b < HX_CREATE_BUCKETS && (double)us / 1e6 > create_buckets[b])
			b++;
		add(&m->create[b], 1);
		add(&m->create_count, 1);
		add(&m->create_sum_us, us);
	}
	if (tool != TL_EXECUTE)
		return;
	add(&m->execs[exec_kind(e)], 1);
	const struct al_verdict *v = e->result && !e->result->error ? e->result->verdict : NULL;
	if (!v)
		return;
	count_proxy(m, v);
	double s = v->wall_s > 0 ? v->wall_s : 0;
	size_t b = 0;
	while (b < HX_LATENCY_BUCKETS && s > buckets[b])
		b++;
	add(&m->latency[b], 1);
	add(&m->latency_count, 1);
	add(&m->latency_sum_us, (uint64_t)(s * 1e6));
}

/* ---- rendering ------------------------------------------------------------------------------ */

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
	for (int pass = 0; pass < 2 && !t->failed; pass++) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if (t->buf && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)n;
		char *grown = realloc(t->buf, cap);
		if (!grown) {
			t->failed = true;
			return;
		}
		t->buf = grown;
		t->cap = cap;
	}
}

static void help(struct text *t, const char *name, const char *type, const char *what)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, what, name, type);
}

/* A Prometheus histogram from per-bucket counts (n bounds, then +Inf). */
static void histogram(struct text *t, const char *name, const char *what, const double *bounds, int n, uint64_t *counts,
		      uint64_t *count, uint64_t *sum_us)
{
	help(t, name, "histogram", what);
	uint64_t cum = 0;
	for (int i = 0; i <= n; i++) {
		cum += get(&counts[i]);
		if (i < n)
			put(t, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
		else
			put(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
	}
	put(t, "%s_sum %.6f\n", name, (double)get(sum_us) / 1e6);
	put(t, "%s_count %llu\n", name, (unsigned long long)get(count));
}

char *hx_metrics_render(struct hx_server *s, size_t *len)
{
	struct hx_metrics *m = &s->metrics;
	struct http_stats st = {0};
	if (s->o.stats)
		s->o.stats(s->o.stats_ctx, &st);
	struct text t = {0};
	help(&t, "airlock_sandboxes_live", "gauge", "Persistent sandboxes that exist now.");
	put(&t, "airlock_sandboxes_live %llu\n", (unsigned long long)st.sandboxes_live);
	help(&t, "airlock_sandboxes_pooled", "gauge", "Warm sandboxes waiting in the pool.");
	put(&t, "airlock_sandboxes_pooled %llu\n", (unsigned long long)st.sandboxes_pooled);
	help(&t, "airlock_sandboxes_paused", "gauge", "Persistent sandboxes paused in place now.");
	put(&t, "airlock_sandboxes_paused %llu\n", (unsigned long long)st.sandboxes_paused);
	help(&t, "airlock_execs_running", "gauge", "Executions running now.");
	put(&t, "airlock_execs_running %llu\n", (unsigned long long)st.execs_running);
	help(&t, "airlock_mcp_sessions", "gauge", "MCP sessions open over HTTP.");
	put(&t, "airlock_mcp_sessions %zu\n", hx_sessions_count(s));

	help(&t, "airlock_execs_total", "counter", "Executions that ended, by how (HTTP API and MCP over HTTP).");
	for (int i = 0; i < HX_EXEC__COUNT; i++)
		put(&t, "airlock_execs_total{status=\"%s\"} %llu\n", exec_names[i],
		    (unsigned long long)get(&m->execs[i]));

	histogram(&t, "airlock_exec_duration_seconds", "Wall-clock time of executions that ran.", buckets,
		  HX_LATENCY_BUCKETS, m->latency, &m->latency_count, &m->latency_sum_us);
	histogram(&t, "airlock_sandbox_create_seconds",
		  "Sandboxes created (code_create_sandbox, POST /v1/sandboxes): request to answer, a warm pool's claim "
		  "included.",
		  create_buckets, HX_CREATE_BUCKETS, m->create, &m->create_count, &m->create_sum_us);

	help(&t, "airlock_proxy_decisions_total", "counter", "Egress proxy decisions of finished executions.");
	put(&t, "airlock_proxy_decisions_total{decision=\"allowed\"} %llu\n",
	    (unsigned long long)get(&m->proxy_allowed));
	put(&t, "airlock_proxy_decisions_total{decision=\"denied\"} %llu\n", (unsigned long long)get(&m->proxy_denied));

	help(&t, "airlock_approvals_total", "counter", "Approval gate outcomes, by outcome.");
	for (int o = 0; o <= SRV_GATE_ABANDONED; o++)
		put(&t, "airlock_approvals_total{outcome=\"%s\"} %llu\n",
		    srv_gate_outcome_name((enum srv_gate_outcome)o), (unsigned long long)get(&m->approvals[o]));

	help(&t, "airlock_tool_calls_total", "counter", "Tool calls that ended, by tool.");
	for (int i = 0; i < TL__COUNT; i++)
		put(&t, "airlock_tool_calls_total{tool=\"%s\"} %llu\n", tl_name((enum tl_id)i),
		    (unsigned long long)get(&m->calls[i]));

	help(&t, "airlock_http_requests_total", "counter", "HTTP requests answered, by status class.");
	static const char *const classes[HX_STATUS_CLASSES] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};
	for (int i = 0; i < HX_STATUS_CLASSES; i++)
		put(&t, "airlock_http_requests_total{code=\"%s\"} %llu\n", classes[i],
		    (unsigned long long)get(&m->requests[i]));
	struct srv_gate_health h = {0};
	if (s->o.gate && s->o.gate->health)
		s->o.gate->health(s->o.gate->ctx, &h);
	help(&t, "airlock_audit_failures_total", "counter", "Audit records that could not be written.");
	put(&t, "airlock_audit_failures_total %llu\n", (unsigned long long)h.audit_failures);
	help(&t, "airlock_audit_degraded", "gauge", "1 while the audit log cannot be written (calls are refused).");
	put(&t, "airlock_audit_degraded %d\n", h.degraded ? 1 : 0);
	help(&t, "airlock_mcp_sessions_opened_total", "counter", "MCP sessions initialized over HTTP.");
	put(&t, "airlock_mcp_sessions_opened_total %llu\n", (unsigned long long)get(&m->sessions_opened));
	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf;
}
