/* tlfork.c — the code_fork_sandbox tool: new sandboxes with a copy of one sandbox's files, to
 * branch an agent's work (E2B's fork, Daytona's forks). */
#include "service/tlfork.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "service/tools.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

const char tl_fork_input[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"The sandbox to "
	"fork. Omit it to fork this session's own sandbox.\"},"
	"\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":16,\"default\":1,\"description\":\"How many "
	"new sandboxes.\"},"
	"\"lifetime\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"Seconds each new sandbox "
	"lives (default: the forked sandbox's lifetime, counted from the fork), within the server's "
	"max_lifetime.\"},"
	"\"metadata\":{\"type\":\"object\",\"maxProperties\":64,\"propertyNames\":{\"minLength\":1,"
	"\"maxLength\":64},\"additionalProperties\":{\"type\":\"string\",\"maxLength\":512},\"description\":"
	"\"Labels of the new sandboxes (default: the forked sandbox's).\"}},"
	"\"additionalProperties\":false}";

const char tl_fork_output[] =
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\",\"description\":\"The sandbox "
	"forked.\"},\"sandboxes\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\"},\"ends_at\":{\"type\":[\"string\",\"null\"]}},\"required\":["
	"\"sandbox_id\"]}},\"entries\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Files, "
	"directories and links each new sandbox got.\"},\"bytes\":{\"type\":\"integer\",\"minimum\":0,"
	"\"description\":\"Bytes of file data copied, all new sandboxes together (0 when layered).\"},"
	"\"layered\":{\"type\":\"boolean\",\"description\":\"The new sandboxes stand on one frozen "
	"layer of the files instead of a copy.\"}},"
	"\"required\":[\"sandbox_id\",\"sandboxes\"]}";

int tl_fork_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		  struct srv_op **op, struct al_error *err)
{
	if (!m->fork)
		return al_err(err, ENOTSUP, "this server cannot fork sandboxes");
	const json_t *count = json_object_get(args, "count"), *life = json_object_get(args, "lifetime");
	struct srv_fork_req req = {.owner = owner,
				   .sandbox_id = json_string_value(json_object_get(args, "sandbox_id")),
				   .count = count ? (unsigned)json_integer_value(count) : 1,
				   .lifetime_ms = life ? (uint64_t)ceil(json_number_value(life) * 1000.0) : 0};
	cleanup_free const char **keys = NULL;
	cleanup_free const char **values = NULL;
	if (tl_metadata_args(json_object_get(args, "metadata"), &keys, &values, &req.n_metadata) < 0)
		return al_err(err, ENOMEM, "out of memory");
	req.metadata_keys = keys;
	req.metadata_values = values;
	return m->fork(m->ctx, &req, sink, op, err);
}

json_t *tl_fork_result(const json_t *args, const struct srv_result *r, bool *is_error)
{
	(void)is_error;
	json_t *o = r->sandboxes_json ? json_loads(r->sandboxes_json, 0, NULL) : NULL;
	const char *id = r->sandbox_id ? r->sandbox_id : json_string_value(json_object_get(args, "sandbox_id"));
	if (!o)
		return json_pack("{s:s,s:[]}", "sandbox_id", id ? id : "", "sandboxes");
	/* The manager's wall-clock ends as the API's times (as create's ends_at). */
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(o, "sandboxes"), i, c) {
		json_int_t ends = json_integer_value(json_object_get(c, "ends_unix_ms"));
		json_object_set_new(c, "ends_at", ends > 0 ? txt_json_time((uint64_t)ends) : json_null());
		json_object_del(c, "ends_unix_ms");
	}
	json_object_set_new(o, "sandbox_id", json_string(id ? id : ""));
	return o;
}
