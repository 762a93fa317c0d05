/* files.c — the JSON API's files routes beyond read and list: stat, mkdir, move, remove, and uploads streamed to the workspace (a file, a tar archive). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/e2b.h"
#include "http/hx.h"
#include "util/text.h"
#include "util/cleanup.h"

/* A body of at most this many bytes is read back from its spool into code_write_file's content,
 * so the risk rules and the audit digest see the bytes, as they always did over both transports;
 * a bigger one is a code_upload call, whose arguments carry its size and SHA-256. */
#define HX_INSPECT_MAX ((size_t)1 << 20)

static void run(struct hx_server *s, const struct hx_request *rq, enum tl_id tool, json_t *args, hx_ok_fn ok, int spool,
		struct hx_response *rs)
{
	struct hx_call *c = args ? hx_call_new(s, tool, args, rq) : NULL;
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	if (spool >= 0)
		hx_call_spool(c, spool);
	hx_call_run(c, NULL, 0, ok, rs);
}

static const char *query(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, name) : NULL;
}

/* ---- uploads -------------------------------------------------------------------------------- */

int hx_upload_begin(struct hx_server *s, const struct hx_request *rq, int *fd, struct hx_response *rs)
{
	const struct srv_mgr_api *m = s->o.mgr;
	if (!m->open_upload || e2b_claims(s, rq, NULL))
		return 0; /* an E2B upload (/files) is a form read into memory (e2bfs.c) */
	char *caps[2];
	bool archive = false;
	int r = hx_upload_route(rq->method, rq->path, caps, &archive, rs);
	if (r <= 0)
		return r;
	const char *owner = rq->who->name[0] ? rq->who->name : "anonymous";
	struct al_error err = {0};
	/* The owner check and the path's check come before any byte is read: a wrong id or path is
	 * answered at once (a client sending Expect: 100-continue sends nothing). */
	r = m->open_upload(m->ctx, owner, caps[0], archive ? NULL : caps[1], fd, &err);
	free(caps[0]);
	free(caps[1]);
	if (r < 0) {
		hx_error(rs, hx_status_of_errno(r), "%s", err.msg[0] ? err.msg : "the upload cannot start");
		return -1;
	}
	return 1;
}

/* The upload failed while its body came (the disk limit, an I/O error): nothing was written. */
static bool spool_failed(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	if (!rq->spool_error)
		return false;
	if (rq->spool_error == -ENOSPC || rq->spool_error == -EDQUOT)
		hx_error(rs, 507, "the workspace is full (its --disk limit) after %llu bytes: nothing was written",
			 (unsigned long long)rq->spool_bytes);
	else if (rq->spool_error == -EFBIG)
		hx_error(rs, 413, "the upload is over the limit of %zu bytes: nothing was written", hx_upload_limit(s));
	else
		hx_error(rs, 500, "writing the upload: %s: nothing was written", strerror(-rq->spool_error));
	return true;
}

static json_t *upload_args(const char *id, const char *path, const char *kind, const struct hx_request *rq)
{
	return json_pack("{s:s,s:s,s:s,s:I,s:s}", "sandbox_id", id, "path", path ? path : "", "kind", kind, "size",
			 (json_int_t)rq->spool_bytes, "sha256", rq->spool_sha256);
}

/* code_write_file's arguments from the spool's bytes (at most HX_INSPECT_MAX), as api_write makes them. */
static json_t *inspect_args(const char *id, const char *path, int fd, size_t len)
{
	cleanup_free char *data = malloc(len + 1);
	if (!data || pread(fd, data, len, 0) != (ssize_t)len)
		return NULL;
	bool text = txt_utf8_valid(data, len) && !memchr(data, 0, len);
	cleanup_free char *b64 = text ? NULL : txt_base64_encode(data, len);
	json_t *content = text ? json_stringn(data, len) : (b64 ? json_string(b64) : NULL);
	return content ? json_pack("{s:s,s:s,s:o,s:s}", "sandbox_id", id, "path", path, "content", content, "encoding",
				   text ? "utf-8" : "base64")
		       : NULL;
}

static void written(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	const char *path = json_string_value(json_object_get(hx_call_args(c), "path"));
	hx_json(rs, 200,
		hx_resumed(json_pack("{s:s,s:I}", "path", path ? path : "", "bytes", (json_int_t)r->bytes), r));
}

void api_write_spooled(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	if (spool_failed(s, rq, rs))
		return;
	bool small = rq->spool_bytes <= HX_INSPECT_MAX;
	json_t *args = small ? inspect_args(caps[0], caps[1], rq->spool_fd, (size_t)rq->spool_bytes)
			     : upload_args(caps[0], caps[1], "file", rq);
	run(s, rq, small ? TL_WRITE_FILE : TL_UPLOAD, args, written, rq->spool_fd, rs);
}

static void unpacked(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	const char *path = json_string_value(json_object_get(hx_call_args(c), "path"));
	hx_json(rs, 200,
		hx_resumed(json_pack("{s:s,s:I}", "path", path && *path ? path : "/", "members", (json_int_t)r->bytes),
			   r));
}

void api_archive(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	if (!rq->spooled) {
		hx_error(rs, 501, "this server takes archives only as streamed uploads");
		return;
	}
	if (spool_failed(s, rq, rs))
		return;
	run(s, rq, TL_UPLOAD, upload_args(caps[0], caps[1], "archive", rq), unpacked, rq->spool_fd, rs);
}

/* ---- stat, mkdir, move, remove -------------------------------------------------------------- */

static json_t *file_args(const char *id, const char *action, const char *path)
{
	return json_pack("{s:s,s:s,s:s}", "sandbox_id", id, "action", action, "path", path && *path ? path : "/");
}

void api_stat(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	run(s, rq, TL_FILE, file_args(caps[0], "stat", caps[1]), hx_ok_structured, -1, rs);
}

static void made(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	const char *path = json_string_value(json_object_get(hx_call_args(c), "path"));
	hx_json(rs, r->bytes ? 201 : 200,
		hx_resumed(json_pack("{s:s,s:b}", "path", path ? path : "", "created", r->bytes != 0), r));
}

void api_mkdir(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	run(s, rq, TL_FILE, file_args(caps[0], "mkdir", caps[1]), made, -1, rs);
}

/* A boolean query argument: absent is dflt; 1 and sets *v, or 0 with rs holding the 400. */
static int flag(const struct hx_request *rq, const char *name, bool dflt, bool *v, struct hx_response *rs)
{
	const char *q = query(rq, name);
	*v = dflt;
	if (!q)
		return 1;
	if (strcmp(q, "true") == 0 || strcmp(q, "1") == 0)
		*v = true;
	else if (strcmp(q, "false") == 0 || strcmp(q, "0") == 0)
		*v = false;
	else {
		hx_error(rs, 400, "%s: true or false, not \"%.64s\"", name, q);
		return 0;
	}
	return 1;
}

void api_remove(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	bool recursive;
	if (!flag(rq, "recursive", false, &recursive, rs))
		return;
	json_t *args = file_args(caps[0], "remove", caps[1]);
	if (args && recursive && json_object_set_new(args, "recursive", json_true()) < 0) {
		json_decref(args);
		args = NULL;
	}
	run(s, rq, TL_FILE, args, hx_ok_structured, -1, rs);
}

/* {"from", "to", "overwrite"}: code_file's move, whose schema checks the rest. */
void api_move(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	json_error_t jerr;
	json_t *body = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!json_is_object(body)) {
		json_decref(body);
		hx_error(rs, 400, "the body must be a JSON object {\"from\": ..., \"to\": ..., \"overwrite\": true}");
		return;
	}
	const char *key;
	json_t *v;
	json_object_foreach(body, key, v) {
		if (strcmp(key, "from") != 0 && strcmp(key, "to") != 0 && strcmp(key, "overwrite") != 0) {
			hx_error(rs, 400, "invalid request: unknown property \"%.64s\" (from, to, overwrite)", key);
			json_decref(body);
			return;
		}
	}
	json_t *from = json_object_get(body, "from");
	if (!json_is_string(from)) {
		json_decref(body);
		hx_error(rs, 400, "invalid request: \"from\" (a string) is required");
		return;
	}
	json_t *args = json_pack("{s:s,s:s,s:O}", "sandbox_id", caps[0], "action", "move", "path", from);
	json_t *to = json_object_get(body, "to"), *ow = json_object_get(body, "overwrite");
	if (args &&
	    ((to && json_object_set(args, "to", to) < 0) || (ow && json_object_set(args, "overwrite", ow) < 0))) {
		json_decref(args);
		args = NULL;
	}
	json_decref(body);
	run(s, rq, TL_FILE, args, hx_ok_structured, -1, rs);
}
