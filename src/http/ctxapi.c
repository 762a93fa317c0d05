/* ctxapi.c — the JSON API's routes for interpreter contexts: each one a code_context call, as the MCP tool would get it. */
#include <jansson.h>
#include <string.h>

#include "http/hx.h"

/* Calls code_context with action on sandbox caps[0] (context caps[1] when given), plus the body's
 * language and context_id for create. */
static void context_call(struct hx_server *s, const struct hx_request *rq, const char *action, char *const caps[2],
			 bool with_id, struct hx_response *rs)
{
	json_t *args = json_pack("{s:s,s:s}", "sandbox_id", caps[0], "action", action);
	if (args && with_id)
		json_object_set_new(args, "context_id", json_string(caps[1]));
	if (args && rq->len) {
		json_t *body = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(body)) {
			json_decref(body);
			json_decref(args);
			hx_error(rs, 400,
				 "the body must be a JSON object: {\"language\": \"python\", \"context_id\": \"...\"}");
			return;
		}
		json_object_update(args, body); /* the schema refuses anything else */
		json_decref(body);
		json_object_set_new(args, "action", json_string(action));
	}
	struct hx_call *c = args ? hx_call_new(s, TL_CONTEXT, args, rq) : NULL;
	if (!c)
		hx_error(rs, 500, "out of memory");
	else
		hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}

void api_ctx_list(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	context_call(s, rq, "list", caps, false, rs);
}

void api_ctx_create(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	context_call(s, rq, "create", caps, false, rs);
}

void api_ctx_restart(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	context_call(s, rq, "restart", caps, true, rs);
}

void api_ctx_delete(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	context_call(s, rq, "delete", caps, true, rs);
}
