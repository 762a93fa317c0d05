/* tlpause.c — code_pause_sandbox and code_resume_sandbox: a sandbox's processes frozen in place and thawed, through the one call runner like every tool. */
#include "service/tlpause.h"

#include <errno.h>

#include "util/error.h"

const char tl_pause_input[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"A sandbox made by "
	"code_create_sandbox.\"},"
	"\"to_disk\":{\"type\":\"boolean\",\"description\":\"Pause to disk: its files and metadata stay in the "
	"server's state directory, its processes and their memory are released (ended); a resume or its next call "
	"makes it again under the same id, with its files only.\"}},"
	"\"required\":[\"sandbox_id\"],\"additionalProperties\":false}";

const char tl_resume_input[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"A sandbox made by "
	"code_create_sandbox.\"}},"
	"\"required\":[\"sandbox_id\"],\"additionalProperties\":false}";

const char tl_pause_output[] =
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"state\":{\"type\":\"string\","
	"\"enum\":[\"running\",\"paused\"]},\"paused_at\":{\"type\":[\"string\",\"null\"],\"description\":\"Since "
	"when (RFC 3339), while paused.\"},\"paused_by\":{\"type\":[\"string\",\"null\"]},\"freezer\":{\"type\":"
	"[\"string\",\"null\"],\"description\":\"The cgroup freezer used: v2 or v1.\"},\"took_ms\":{\"type\":"
	"\"number\"},\"changed\":{\"type\":\"boolean\",\"description\":\"Whether this call changed the state "
	"(false: it was so already).\"},\"resumed\":{\"type\":\"boolean\"},\"on_disk\":{\"type\":\"boolean\","
	"\"description\":\"Paused to disk: its processes and memory released, its files kept.\"},\"kept\":{\"type\":"
	"\"string\",\"description\":\"What state was kept: files (to disk: files and metadata, no processes nor "
	"memory), or everything (in place).\"},\"released\":{\"type\":[\"string\",\"null\"]}},"
	"\"required\":[\"sandbox_id\",\"state\"]}";

static int start(const struct srv_mgr_api *m, bool resume, const json_t *args, const char *owner,
		 const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	int (*fn)(void *, const struct srv_pause_req *, const struct srv_sink *, struct srv_op **, struct al_error *) =
		resume ? m->resume_sandbox : m->pause_sandbox;
	if (!fn)
		return al_err(err, ENOTSUP, "this server cannot pause sandboxes");
	struct srv_pause_req req = {.owner = owner,
				    .sandbox_id = json_string_value(json_object_get(args, "sandbox_id")),
				    .to_disk = !resume && json_is_true(json_object_get(args, "to_disk"))};
	return fn(m->ctx, &req, sink, op, err);
}

int tl_pause_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		   struct srv_op **op, struct al_error *err)
{
	return start(m, false, args, owner, sink, op, err);
}

int tl_resume_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		    struct srv_op **op, struct al_error *err)
{
	return start(m, true, args, owner, sink, op, err);
}

json_t *tl_pause_result(const json_t *args, const struct srv_result *r, bool *is_error)
{
	(void)is_error;
	json_t *o = r->state_json ? json_loads(r->state_json, 0, NULL) : NULL;
	const char *id = json_string_value(json_object_get(args, "sandbox_id"));
	return o ? o : json_pack("{s:s,s:s}", "sandbox_id", id ? id : "", "state", "running");
}
