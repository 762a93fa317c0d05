/* pxjson.c — the egress proxy's part of the verdict: counters and one record per connection. */
#include <jansson.h>
#include <stdlib.h>

#include "job.h"

static const char *kind_name(enum px_kind k)
{
	switch (k) {
	case PXK_CONNECT:
		return "connect";
	case PXK_HTTP:
		return "http";
	case PXK_BROKER:
		return "broker";
	case PXK_CAPTURE:
		return "capture";
	case PXK_DNS:
		return "dns";
	case PXK_INVALID:
		break;
	}
	return "invalid";
}

static const char *decision_name(enum px_decision d)
{
	switch (d) {
	case PXD_ALLOWED:
		return "allowed";
	case PXD_DENIED:
		return "denied";
	case PXD_ERROR:
		break;
	}
	return "error";
}

/* How the job reached airlock: its proxy variables, or the capture (resolver and listeners). */
static const char *via_name(enum px_kind k)
{
	return k == PXK_CAPTURE || k == PXK_DNS ? "capture" : "proxy";
}

/* What airlock saw of TLS: a tunnel's bytes pass through unread (so its rule can only be by name
 * and port); the broker makes the upstream's TLS itself, as does terminated TLS (tls_airlock, the
 * record's own flag); plain HTTP has none. */
static json_t *tls_name(enum px_kind k)
{
	switch (k) {
	case PXK_CONNECT:
	case PXK_CAPTURE:
		return json_string("passthrough");
	case PXK_BROKER:
		return json_string("airlock");
	case PXK_HTTP:
		return json_string("none");
	case PXK_DNS:
	case PXK_INVALID:
		break;
	}
	return json_null();
}

static json_t *opt_str(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

static json_t *record_json(const struct px_record *r)
{
	json_t *o =
		json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:i,s:I,s:I,s:f,s:f}", "kind", kind_name(r->kind), "decision",
			  decision_name(r->decision), "host", opt_str(r->host), "port",
			  r->port ? json_integer(r->port) : json_null(), "address", opt_str(r->addr), "reason",
			  opt_str(r->reason), "status", r->status, "bytes_up", (json_int_t)r->bytes_up, "bytes_down",
			  (json_int_t)r->bytes_down, "start_s", r->start_s, "duration_s", r->duration_s);
	if (o && r->kind == PXK_BROKER)
		json_object_set_new(o, "broker", opt_str(r->broker));
	if (o) {
		json_object_set_new(o, "via", json_string(via_name(r->kind)));
		json_object_set_new(o, "tls", r->tls_airlock ? json_string("airlock") : tls_name(r->kind));
		/* What airlock saw of the request, where it saw one (terminated TLS, plain HTTP). */
		json_object_set_new(o, "method", opt_str(r->method));
		json_object_set_new(o, "path", opt_str(r->path));
		json_object_set_new(o, "rule", opt_str(r->rule));
		if (r->sha256[0])
			json_object_set_new(o, "sha256", json_string(r->sha256));
	}
	return o;
}

/* The capture's part: null when it was not served. */
static json_t *capture_json(const struct px *px, const struct px_stats *st)
{
	const uint16_t *ports;
	size_t n = px_capture(px, &ports);
	if (n == 0)
		return json_null();
	json_t *pl = json_array();
	for (size_t i = 0; pl && i + 1 < n; i++)
		json_array_append_new(pl, json_integer(ports[i]));
	return json_pack("{s:s,s:s,s:o,s:I,s:I,s:I,s:I}", "dns", AL_DNS_ADDR ":53", "addresses", "127.18.0.0/16",
			 "ports", pl ? pl : json_array(), "queries", (json_int_t)st->dns_queries, "nxdomain",
			 (json_int_t)st->dns_nxdomain, "malformed", (json_int_t)st->dns_malformed, "names",
			 (json_int_t)st->dns_names);
}

char *jv_proxy_json(const struct al_job *j)
{
	if (!j->px)
		return NULL;
	size_t n;
	const struct px_record *recs = px_records(j->px, &n);
	struct px_stats st = px_get_stats(j->px);
	json_t *list = json_array();
	for (size_t i = 0; list && i < n; i++)
		json_array_append_new(list, record_json(&recs[i]));
	json_t *o = json_pack("{s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "listen", "127.0.0.1:3128", "served",
			      j->proxy_served, "connections", (json_int_t)st.connections, "allowed",
			      (json_int_t)st.allowed, "denied", (json_int_t)st.denied, "errors", (json_int_t)st.errors,
			      "malformed", (json_int_t)st.malformed, "over_limit", (json_int_t)st.over_limit,
			      "unfinished", (json_int_t)st.unfinished, "records_dropped",
			      (json_int_t)st.records_dropped, "records", list ? list : json_array());
	if (o)
		json_object_set_new(o, "capture", capture_json(j->px, &st));
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
	json_decref(o);
	return s;
}
