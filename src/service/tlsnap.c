/* tlsnap.c — the snapshot tools: a sandbox's files kept as a named snapshot that outlives it
 * (code_snapshot_sandbox), the caller's snapshots (code_list_snapshots), one deleted
 * (code_delete_snapshot); a sandbox is made from one by code_create_sandbox's snapshot. */
#include "service/tlsnap.h"

#include <errno.h>
#include <stdlib.h>

#include "service/tools.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

#define SNAPSHOT_ID_PROP(what) \
	"\"snapshot_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"description\":\"" what "\"}"

const char tl_snapshot_input[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"The sandbox to "
	"snapshot. Omit it to snapshot this session's own sandbox.\"},"
	"\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"A name for the "
	"snapshot (shown in lists; not unique).\"},"
	"\"metadata\":{\"type\":\"object\",\"maxProperties\":64,\"propertyNames\":{\"minLength\":1,"
	"\"maxLength\":64},\"additionalProperties\":{\"type\":\"string\",\"maxLength\":512},\"description\":"
	"\"Labels of the snapshot.\"}},"
	"\"additionalProperties\":false}";

#define SNAPSHOT_OBJECT                                                                                            \
	"{\"type\":\"object\",\"properties\":{\"snapshot_id\":{\"type\":\"string\"},\"id\":{\"type\":\"string\"}," \
	"\"name\":{\"type\":[\"string\",\"null\"]},\"created_at\":{\"type\":\"string\"},\"bytes\":{\"type\":"      \
	"\"integer\",\"minimum\":0,\"description\":\"File data its own layer holds: what it added to the "         \
	"server's disk (files it shares with the layers its sandbox stood on are not counted again).\"},"          \
	"\"entries\":{\"type\":\"integer\",\"minimum\":0},\"sandbox_id\":{\"type\":\"string\",\"description\":"    \
	"\"The sandbox it was taken of.\"},\"profile\":{\"type\":\"string\"},\"image\":{\"type\":[\"string\","     \
	"\"null\"]},\"metadata\":{\"type\":\"object\"}},\"required\":[\"snapshot_id\",\"id\",\"created_at\","      \
	"\"bytes\",\"sandbox_id\"]}"

const char tl_snapshot_output[] = SNAPSHOT_OBJECT;

const char tl_snapshots_input[] = "{\"type\":\"object\",\"properties\":{" SNAPSHOT_ID_PROP(
	"Only this snapshot (an unknown one is an error).") "},\"additionalProperties\":false}";

const char tl_snapshots_output[] = "{\"type\":\"object\",\"properties\":{\"snapshots\":{\"type\":\"array\","
				   "\"items\":" SNAPSHOT_OBJECT "}},\"required\":[\"snapshots\"]}";

const char tl_snapshot_delete_input[] = "{\"type\":\"object\",\"properties\":{" SNAPSHOT_ID_PROP(
	"The snapshot to delete.") "},\"required\":[\"snapshot_id\"],\"additionalProperties\":false}";

const char tl_snapshot_delete_output[] =
	"{\"type\":\"object\",\"properties\":{\"snapshot_id\":{\"type\":\"string\"},\"deleted\":{\"type\":"
	"\"boolean\"}},\"required\":[\"snapshot_id\",\"deleted\"]}";

static int start(const struct srv_mgr_api *m, struct srv_snapshot_req *req, const struct srv_sink *sink,
		 struct srv_op **op, struct al_error *err)
{
	if (!m->snapshot)
		return al_err(err, ENOTSUP, "this server keeps no snapshots");
	return m->snapshot(m->ctx, req, sink, op, err);
}

int tl_snapshot_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		      struct srv_op **op, struct al_error *err)
{
	struct srv_snapshot_req req = {.owner = owner,
				       .action = SRV_SNAP_CREATE,
				       .sandbox_id = tl_str_arg(args, "sandbox_id"),
				       .name = tl_str_arg(args, "name")};
	cleanup_free const char **keys = NULL;
	cleanup_free const char **values = NULL;
	if (tl_metadata_args(json_object_get(args, "metadata"), &keys, &values, &req.n_metadata) < 0)
		return al_err(err, ENOMEM, "out of memory");
	req.metadata_keys = keys;
	req.metadata_values = values;
	return start(m, &req, sink, op, err);
}

int tl_snapshots_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		       struct srv_op **op, struct al_error *err)
{
	const char *id = tl_str_arg(args, "snapshot_id");
	struct srv_snapshot_req req = {.owner = owner, .action = id ? SRV_SNAP_GET : SRV_SNAP_LIST, .snapshot_id = id};
	return start(m, &req, sink, op, err);
}

int tl_snapshot_delete_start(const struct srv_mgr_api *m, const json_t *args, const char *owner,
			     const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	struct srv_snapshot_req req = {
		.owner = owner, .action = SRV_SNAP_DELETE, .snapshot_id = tl_str_arg(args, "snapshot_id")};
	return start(m, &req, sink, op, err);
}

/* One snapshot as the API shows it: its id twice (id, as the sandboxes' answers have it), its
 * creation as created_at. */
static void api_times(json_t *o)
{
	const json_t *id = json_object_get(o, "snapshot_id");
	json_int_t at = json_integer_value(json_object_get(o, "created_unix_ms"));
	if (!json_is_string(id))
		return;
	json_object_set_new(o, "id", json_string(json_string_value(id)));
	json_object_set_new(o, "created_at", txt_json_time(at > 0 ? (uint64_t)at : 0));
	json_object_del(o, "created_unix_ms");
}

json_t *tl_snapshot_result(const json_t *args, const struct srv_result *r, bool *is_error)
{
	(void)is_error;
	json_t *o = r->snapshot_json ? json_loads(r->snapshot_json, 0, NULL) : NULL;
	if (!o)
		return json_pack("{s:[]}", "snapshots");
	json_t *list = json_object_get(o, "snapshots");
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v) {
		api_times(v);
	}
	if (!list)
		api_times(o);
	(void)args;
	return o;
}
