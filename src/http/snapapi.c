/* snapapi.c — the JSON API's snapshots: one taken of a sandbox, the caller's listed, one read or
 * deleted; each a code_snapshot_sandbox, code_list_snapshots or code_delete_snapshot call on the
 * one runner (principal, rules, audit). A create from one is POST /v1/sandboxes {"snapshot": ID}. */
#include <stdlib.h>
#include <string.h>

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

/* ---- the approver's: every principal's snapshots, one deleted for its owner ------------------- */

static json_t *all(struct hx_server *s)
{
	return s->o.snapshots ? s->o.snapshots(s->o.sandboxes_ctx) : json_array();
}

/* Approvers only (the route's role): a client sees its own snapshots and nobody else's. */
void api_admin_snapshots(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_t *list = all(s);
	if (!list)
		hx_error(rs, 500, "out of memory");
	else
		hx_json(rs, 200, json_pack("{s:o}", "snapshots", list));
}

/* As api_admin_destroy ends a sandbox: a code_delete_snapshot call made for the owner (the
 * manager's ownership check stays the only one), through the runner, the audit log naming both. */
void api_admin_snapshot_delete(struct hx_server *s, const struct hx_request *rq, char *const caps[2],
			       struct hx_response *rs)
{
	json_t *list = all(s), *v;
	cleanup_free char *owner = NULL;
	size_t i;
	json_array_foreach(list, i, v) {
		const char *id = json_string_value(json_object_get(v, "snapshot_id"));
		const char *who = json_string_value(json_object_get(v, "owner"));
		if (id && who && strcmp(id, caps[0]) == 0) {
			owner = strdup(who);
			break;
		}
	}
	json_decref(list);
	if (!owner) {
		hx_error(rs, 404, "no snapshot \"%.100s\"", caps[0]);
		return;
	}
	json_t *args = json_pack("{s:s}", "snapshot_id", caps[0]);
	struct hx_call *c = args ? hx_call_new(s, TL_DELETE_SNAPSHOT, args, rq) : NULL;
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	if (hx_call_act_for(c, owner) < 0) {
		hx_error(rs, 500, "cannot act for %.100s", owner);
		hx_call_drop(c);
		return;
	}
	hx_log(s, MCP_LOG_NOTICE, "%s deletes %s, a snapshot of %s", rq->who->name, caps[0], owner);
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}
