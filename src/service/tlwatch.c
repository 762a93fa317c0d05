/* tlwatch.c — the code_watch tool: a directory of a sandbox's workspace watched for a while (MCP) or as a stream (the JSON API). */
#include "service/tlwatch.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

const char tl_watch_input[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"A sandbox made by "
	"code_create_sandbox. Omit it to use this session's own sandbox.\"},"
	"\"path\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"A directory beneath the workspace "
	"(default: the workspace itself). Symbolic links are never followed.\"},"
	"\"recursive\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Also every directory beneath "
	"it, including those made while it is watched.\"},"
	"\"wait\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":60,\"description\":\"Seconds to watch "
	"(default 10); the answer lists the events seen meanwhile (create, write, remove, rename, chmod, "
	"overflow).\"},"
	"\"follow\":{\"type\":\"boolean\",\"description\":\"Without wait: watch until the call is cancelled, each "
	"event streamed as it comes.\"}},"
	"\"additionalProperties\":false}";

const char tl_watch_output[] =
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
	"\"recursive\":{\"type\":\"boolean\"},\"event_count\":{\"type\":\"integer\",\"minimum\":0},"
	"\"coalesced\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Writes of a path merged into one "
	"write event.\"},\"overflows\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Times the kernel's "
	"event queue overflowed (events were lost).\"},\"watched_dirs\":{\"type\":\"integer\",\"minimum\":0},"
	"\"dir_limit_reached\":{\"type\":\"boolean\"},\"ended\":{\"type\":\"string\",\"description\":\"Why the "
	"watch ended: timeout, cancelled, removed (the directory went), or the sandbox's end (destroyed, "
	"lifetime, ...).\"},\"message\":{\"type\":\"string\"},\"events\":{\"type\":\"array\",\"items\":{"
	"\"type\":\"object\",\"properties\":{\"type\":{\"type\":\"string\",\"enum\":[\"create\",\"write\","
	"\"remove\",\"rename\",\"chmod\",\"overflow\"]},\"path\":{\"type\":\"string\"},\"is_dir\":{\"type\":"
	"\"boolean\"},\"from\":{\"type\":\"string\"},\"to\":{\"type\":\"string\"}},\"required\":[\"type\","
	"\"path\"]}},\"events_left_out\":{\"type\":\"integer\",\"minimum\":0}},"
	"\"required\":[\"path\",\"ended\"]}";

int tl_watch_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		   struct srv_op **op, struct al_error *err)
{
	if (!m->watch)
		return al_err(err, ENOTSUP, "this server has no directory watch");
	const json_t *wait = json_object_get(args, "wait");
	bool follow = json_is_true(json_object_get(args, "follow"));
	double secs = wait ? json_number_value(wait) : follow ? 0 : TL_WATCH_DEFAULT_S;
	struct srv_watch_req req = {.owner = owner,
				    .sandbox_id = json_string_value(json_object_get(args, "sandbox_id")),
				    .path = json_string_value(json_object_get(args, "path")),
				    .recursive = json_is_true(json_object_get(args, "recursive")),
				    .wait_ms = (uint64_t)ceil(secs * 1000.0),
				    /* A follow to the end is a stream (its events are the stream's); a bounded
				     * watch answers with what it saw. */
				    .collect = !(follow && !wait)};
	return m->watch(m->ctx, &req, sink, op, err);
}

json_t *tl_watch_result(const json_t *args, const struct srv_result *r, bool *is_error)
{
	(void)args;
	(void)is_error;
	json_t *o = r->watch_json ? json_loads(r->watch_json, 0, NULL) : NULL;
	return o ? o : json_pack("{s:s,s:s}", "path", ".", "ended", "unknown");
}
