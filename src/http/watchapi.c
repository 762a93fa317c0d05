/* watchapi.c — the JSON API's directory watch: GET /v1/sandboxes/{id}/watch[/{dir}], a code_watch call streamed as NDJSON lines or SSE events. */
#include <jansson.h>
#include <string.h>

#include "http/hx.h"

/* Until the client leaves or the sandbox ends: each event one line ({"event": {...}}), the last
 * line the watch's summary (why it ended). ?recursive=true|false (default false, as E2B's
 * watch_dir). The path is checked by the manager before the stream begins: a bad one is a 4xx. */
void api_watch(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	const char *rec = rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, "recursive") : NULL;
	if (rec && strcmp(rec, "true") != 0 && strcmp(rec, "false") != 0) {
		hx_error(rs, 400, "recursive must be true or false");
		return;
	}
	json_t *args = json_pack("{s:s,s:s,s:b,s:b}", "sandbox_id", caps[0], "path", caps[1] ? caps[1] : "",
				 "recursive", rec && strcmp(rec, "true") == 0, "follow", 1);
	if (!args) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_stream_tool(s, rq, TL_WATCH, args, rs);
}
