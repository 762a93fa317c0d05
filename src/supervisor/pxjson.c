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
	return o;
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
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
	json_decref(o);
	return s;
}
