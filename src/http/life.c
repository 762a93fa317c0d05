/* life.c — the JSON API's routes for a sandbox's info and lifetime: the caller's list (filtered by
 * metadata), one sandbox's info, and its timeout (a code_set_sandbox_timeout call). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/hx.h"
#include "util/cleanup.h"
#include "util/text.h"

/* The owner as the runner names it when the calls created its sandboxes (op.c, runner.c: no name
 * is "anonymous"). */
static const char *owner_of(const struct hx_request *rq)
{
	return rq->who->name[0] ? rq->who->name : "anonymous";
}

static json_t *sandbox_json(const struct srv_sandbox_info *i)
{
	json_t *meta = json_loads(i->metadata_json ? i->metadata_json : "{}", 0, NULL);
	bool cpu = i->have_usage && i->cpu_s >= 0;
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:i,s:b}", "id", i->id, "sandbox_id",
			 i->id, "state", i->state, "profile", i->profile, "image", i->image, "network", i->network,
			 "created_at", txt_json_time(i->created_unix_ms), "ends_at",
			 i->ends_unix_ms ? txt_json_time(i->ends_unix_ms) : json_null(), "last_used_at",
			 txt_json_time(i->used_unix_ms), "metadata", meta ? meta : json_object(), "cpu_s",
			 cpu ? json_real(i->cpu_s) : json_null(), "memory_bytes",
			 i->have_usage && i->memory_bytes ? json_integer((json_int_t)i->memory_bytes) : json_null(),
			 "peak_memory_bytes",
			 i->have_usage && i->peak_memory_bytes ? json_integer((json_int_t)i->peak_memory_bytes)
							       : json_null(),
			 "processes", (int)i->processes, "busy", i->busy);
}

/* sandbox_json plus its pause: paused_at, paused_by (null while running), auto_pause. */
static json_t *info_json(const struct srv_sandbox_info *i)
{
	json_t *o = sandbox_json(i);
	bool paused = i->paused_unix_ms != 0;
	/* image_digest: what a kept sandbox comes back on, whatever its image's name names later. */
	if (o && (json_object_set_new(o, "image_digest",
				      i->image_digest[0] ? json_string(i->image_digest) : json_null()) < 0 ||
		  json_object_set_new(o, "paused_at", paused ? txt_json_time(i->paused_unix_ms) : json_null()) < 0 ||
		  json_object_set_new(o, "paused_by", paused ? json_string(i->paused_by) : json_null()) < 0 ||
		  json_object_set_new(o, "auto_pause", json_boolean(i->auto_pause)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- the metadata filter ------------------------------------------------------------------ */

/* The labels a listed sandbox must carry, from ?metadata=k%3Dv%26k2%3Dv2 (E2B's encoding: one
 * argument holding a URL-encoded k=v&k=v string) and ?metadata.k=v; error: why it is refused. */
struct filter {
	json_t *want;
	char error[160];
};

/* One k=v piece of E2B's string, each side URL-encoded again (form encoding: '+' is a space). */
static int add_pair(struct filter *f, char *pair)
{
	char *eq = strchr(pair, '=');
	if (!eq || eq == pair) {
		snprintf(f->error, sizeof(f->error), "metadata filter: \"%.60s\" is not key=value", pair);
		return -EINVAL;
	}
	*eq = 0;
	char *parts[2] = {pair, eq + 1};
	for (int k = 0; k < 2; k++) {
		for (char *c = parts[k]; *c; c++)
			if (*c == '+')
				*c = ' ';
		size_t n = hx_unescape(parts[k]);
		/* %00 became C0 80 (hx_unescape), which is not UTF-8: refused with any other bad byte. */
		if (!txt_utf8_valid(parts[k], n)) {
			snprintf(f->error, sizeof(f->error), "metadata filter: \"%.60s\" is not UTF-8 text", parts[k]);
			return -EINVAL;
		}
	}
	return json_object_set_new(f->want, parts[0], json_string(parts[1])) < 0 ? -ENOMEM : 0;
}

static int add_encoded(struct filter *f, const char *value)
{
	cleanup_free char *copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	int r = 0;
	char *save = NULL;
	for (char *p = strtok_r(copy, "&", &save); r == 0 && p; p = strtok_r(NULL, "&", &save))
		r = add_pair(f, p);
	return r;
}

static int filter_arg(void *arg, const char *key, const char *value)
{
	struct filter *f = arg;
	int r = 0;
	if (strcmp(key, "metadata") == 0)
		r = add_encoded(f, value);
	else if (strncmp(key, "metadata.", 9) == 0 && key[9])
		r = json_object_set_new(f->want, key + 9, json_string(value)) < 0 ? -ENOMEM : 0;
	else if (strncmp(key, "metadata.", 9) == 0) {
		snprintf(f->error, sizeof(f->error), "metadata filter: \"metadata.\" names no key");
		r = -EINVAL;
	}
	if (r == 0 && json_object_size(f->want) > SRV_META_MAX) {
		snprintf(f->error, sizeof(f->error), "metadata filter: at most %d keys", SRV_META_MAX);
		r = -EINVAL;
	}
	return r;
}

static int filter_parse(const struct hx_request *rq, struct filter *f)
{
	f->want = json_object();
	if (!f->want)
		return -ENOMEM;
	if (rq->each_query)
		return rq->each_query(rq->lookup_ctx, filter_arg, f);
	const char *v = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, "metadata") : NULL;
	return v ? filter_arg(f, "metadata", v) : 0;
}

/* Whether the labels hold every wanted key with its value. */
static bool filter_match(const struct filter *f, const json_t *meta)
{
	const char *key;
	json_t *v;
	json_object_foreach(f->want, key, v) {
		const json_t *have = json_object_get(meta, key);
		if (!have || !json_equal(have, v))
			return false;
	}
	return true;
}

/* ---- routes ------------------------------------------------------------------------------- */

int hx_sandboxes_filtered(struct hx_server *s, const struct hx_request *rq, struct srv_sandbox_info **out, size_t *nout,
			  struct hx_response *rs)
{
	const struct srv_mgr_api *m = s->o.mgr;
	*out = NULL;
	*nout = 0;
	if (!m->list_sandboxes) {
		hx_error(rs, 501, "this manager cannot list sandboxes");
		return 1;
	}
	struct filter f = {0};
	int r = filter_parse(rq, &f);
	if (r < 0) {
		json_decref(f.want);
		if (r == -EINVAL)
			hx_error(rs, 400, "%s", f.error);
		else
			hx_error(rs, 500, "out of memory");
		return 1;
	}
	struct srv_sandbox_info *v = NULL;
	size_t n = 0;
	struct al_error err = {0};
	/* The caller's own sandboxes only: the manager lists no other principal's. */
	if (m->list_sandboxes(m->ctx, owner_of(rq), &v, &n, &err) < 0) {
		json_decref(f.want);
		hx_error(rs, 500, "%s", err.msg[0] ? err.msg : "out of memory");
		return 1;
	}
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *meta = json_loads(v[i].metadata_json ? v[i].metadata_json : "{}", 0, NULL);
		bool keep = filter_match(&f, meta);
		json_decref(meta);
		if (keep)
			v[kept++] = v[i];
		else
			srv_sandbox_infos_free(&v[i], 1);
	}
	json_decref(f.want);
	*out = v;
	*nout = kept;
	return 0;
}

void api_sandboxes(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	struct srv_sandbox_info *v = NULL;
	size_t n = 0;
	if (hx_sandboxes_filtered(s, rq, &v, &n, rs))
		return;
	json_t *list = json_array();
	for (size_t i = 0; list && i < n; i++)
		if (json_array_append_new(list, info_json(&v[i])) < 0) {
			json_decref(list);
			list = NULL;
		}
	srv_sandbox_infos_free(v, n);
	free(v);
	if (!list)
		hx_error(rs, 500, "out of memory");
	else
		hx_json(rs, 200, json_pack("{s:o}", "sandboxes", list));
}

/* Read-only and synchronous, as the list: not a tool call (nothing runs, nothing changes). */
void api_sandbox_info(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	const struct srv_mgr_api *m = s->o.mgr;
	if (!m->sandbox_info) {
		hx_error(rs, 501, "this manager cannot describe a sandbox");
		return;
	}
	struct srv_sandbox_info i;
	struct al_error err = {0};
	int r = m->sandbox_info(m->ctx, owner_of(rq), caps[0], &i, &err);
	if (r < 0) {
		hx_error(rs, hx_status_of_errno(r), "%s", err.msg[0] ? err.msg : "no such sandbox");
		return;
	}
	json_t *o = info_json(&i);
	srv_sandbox_infos_free(&i, 1);
	if (!o)
		hx_error(rs, 500, "out of memory");
	else
		hx_json(rs, 200, o);
}

/* A tool call on sandbox caps[0] with the request's JSON object (none: {}) as its arguments. */
static void call_on(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs,
		    enum tl_id tool, const char *shape)
{
	json_error_t jerr;
	json_t *args = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &jerr) : json_object();
	if (!json_is_object(args)) {
		json_decref(args);
		hx_error(rs, 400, "the body must be a JSON object: %s", shape);
		return;
	}
	/* The path names the sandbox; a body's own sandbox_id cannot point elsewhere. */
	if (json_object_set_new(args, "sandbox_id", json_string(caps[0])) < 0) {
		json_decref(args);
		hx_error(rs, 500, "out of memory");
		return;
	}
	struct hx_call *c = hx_call_new(s, tool, args, rq); /* takes args, even when it fails */
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}

/* {"lifetime": S}: a code_set_sandbox_timeout call (principal, rules, audit) on sandbox caps[0]. */
void api_timeout(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	call_on(s, rq, caps, rs, TL_SET_TIMEOUT, "{\"lifetime\": SECONDS}");
}

/* {"count": N, "lifetime": S, "metadata": {...}}: a code_fork_sandbox call on sandbox caps[0]. */
void api_fork(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	call_on(s, rq, caps, rs, TL_FORK, "{\"count\": N, \"lifetime\": SECONDS, \"metadata\": {...}}");
}
