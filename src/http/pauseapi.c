/* pauseapi.c — the JSON API's pause and resume of a sandbox in place: the owner's routes and the approver's, each a code_pause_sandbox or code_resume_sandbox call on the one runner. */
#include <stdlib.h>
#include <string.h>

#include "http/hx.h"
#include "util/cleanup.h"

/* The call's arguments: the sandbox, and for a pause ?to_disk=true (or false); NULL with rs set
 * on a bad value. */
static json_t *args_of(const struct hx_request *rq, const char *id, enum tl_id tool, struct hx_response *rs)
{
	const char *d = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, "to_disk") : NULL;
	if (d && (tool != TL_PAUSE || (strcmp(d, "true") != 0 && strcmp(d, "false") != 0))) {
		hx_error(rs, 400, "to_disk: true or false, and on a pause only");
		return NULL;
	}
	json_t *args = json_pack("{s:s}", "sandbox_id", id);
	if (args && d && json_object_set_new(args, "to_disk", json_boolean(strcmp(d, "true") == 0)) < 0) {
		json_decref(args);
		args = NULL;
	}
	if (!args)
		hx_error(rs, 500, "out of memory");
	return args;
}

/* The owner's own sandbox caps[0] (another principal's is 404, as an unknown id: the manager's
 * ownership check). The body is ignored: the path (and ?to_disk) names everything. */
static void owner_call(struct hx_server *s, const struct hx_request *rq, const char *id, enum tl_id tool,
		       struct hx_response *rs)
{
	json_t *args = args_of(rq, id, tool, rs);
	if (!args)
		return;
	struct hx_call *c = args ? hx_call_new(s, tool, args, rq) : NULL; /* takes args */
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}

void api_pause(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	owner_call(s, rq, caps[0], TL_PAUSE, rs);
}

void api_resume(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	owner_call(s, rq, caps[0], TL_RESUME, rs);
}

/* An approver pauses or resumes another principal's sandbox, as api_admin_destroy ends one: the
 * call is made for the owner (its ownership check stays the only one), the audit log names both. */
static void admin_call(struct hx_server *s, const struct hx_request *rq, const char *id, enum tl_id tool,
		       struct hx_response *rs)
{
	cleanup_free char *owner = hx_sandbox_owner(s, id);
	if (!owner) {
		hx_error(rs, 404, "no sandbox \"%.100s\" (never created, destroyed, or expired)", id);
		return;
	}
	json_t *args = args_of(rq, id, tool, rs);
	if (!args)
		return;
	struct hx_call *c = hx_call_new(s, tool, args, rq);
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	if (hx_call_act_for(c, owner) < 0) {
		hx_error(rs, 500, "cannot act for %.100s", owner);
		hx_call_drop(c);
		return;
	}
	hx_log(s, MCP_LOG_NOTICE, "%s %s %s, a sandbox of %s", rq->who->name, tool == TL_PAUSE ? "pauses" : "resumes",
	       id, owner);
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}

void api_admin_pause(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	admin_call(s, rq, caps[0], TL_PAUSE, rs);
}

void api_admin_resume(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	admin_call(s, rq, caps[0], TL_RESUME, rs);
}
