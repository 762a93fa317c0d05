/* snapapi.c — the JSON API's snapshots: one taken of a sandbox, the caller's listed, one read or
 * deleted; each a code_snapshot_sandbox, code_list_snapshots or code_delete_snapshot call on the
 * one runner (principal, rules, audit). A create from one is POST /v1/sandboxes {"snapshot": ID}. */
#include <stdlib.h>

#include "http/hx.h"
#include "util/cleanup.h"

/* The tool's structuredContent with status (201 for a snapshot taken), or with one=true the one
 * snapshot a list by id holds. */
static void answer(struct hx_call *c, const struct srv_result *r, struct hx_response *rs, int status, bool one)
{
	json_t *full = tl_result(hx_call_tool(c), hx_call_args(c), r);
	json_t *sc = json_object_get(full, "structuredContent");
	if (sc && one)
		sc = json_array_get(json_object_get(sc, "snapshots"), 0);
	if (sc)
		hx_json(rs, status, json_incref(sc));
	else
		hx_error(rs, 500, "out of memory");
	json_decref(full);
}

static void taken(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	answer(c, r, rs, 201, false);
}

static void listed(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	answer(c, r, rs, 200, false);
}

static void found(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	answer(c, r, rs, 200, true);
}

static void run(struct hx_server *s, const struct hx_request *rq, enum tl_id tool, json_t *args, hx_ok_fn ok,
		struct hx_response *rs)
{
	struct hx_call *c = args ? hx_call_new(s, tool, args, rq) : NULL; /* takes args, even when it fails */
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, ok, rs);
}

/* {"name"?, "metadata"?}: a snapshot of sandbox caps[0], the caller's (another's is 404). */
void api_snapshot(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_error_t jerr;
	json_t *args = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &jerr) : json_object();
	if (!json_is_object(args)) {
		json_decref(args);
		hx_error(rs, 400, "the body must be a JSON object: {\"name\": NAME, \"metadata\": {...}}");
		return;
	}
	/* The path names the sandbox; a body's own sandbox_id cannot point elsewhere. */
	if (json_object_set_new(args, "sandbox_id", json_string(caps[0])) < 0) {
		json_decref(args);
		hx_error(rs, 500, "out of memory");
		return;
	}
	run(s, rq, TL_SNAPSHOT, args, taken, rs);
}

void api_snapshots(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	run(s, rq, TL_LIST_SNAPSHOTS, json_object(), listed, rs);
}

void api_snapshot_info(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	run(s, rq, TL_LIST_SNAPSHOTS, json_pack("{s:s}", "snapshot_id", caps[0]), found, rs);
}

void api_snapshot_delete(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	run(s, rq, TL_DELETE_SNAPSHOT, json_pack("{s:s}", "snapshot_id", caps[0]), hx_ok_structured, rs);
}
