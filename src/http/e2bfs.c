/* e2bfs.c — envd's filesystem on the manager's files API: the filesystem.Filesystem Connect calls (Stat, MakeDir, Move, ListDir, Remove, WatchDir; the polling watchers are e2bwatch.c's), /files download and upload, /health; and E2B's paths (/home/user) as the workspace's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/e2b.h"
#include "util/cleanup.h"
#include "util/text.h"

#define LIST_MAX_ENTRIES 10000 /* ListDir with a depth: entries at most, over every level */
#define LIST_MAX_DEPTH	 16
#define FORM_MAX_PARTS	 64
#define WATCH_PING_MS	 15000

static const char *header(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, name) : NULL;
}

static const char *query(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_QUERY, name) : NULL;
}

/* ---- paths ------------------------------------------------------------------------------------ */

/* "prefix" or "prefix/..." at the start of path: what follows ("" or "x/y"), else NULL. */
static const char *under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(path, prefix, n) != 0 || (path[n] && path[n] != '/'))
		return NULL;
	return path[n] ? path + n + 1 : path + n;
}

char *e2b_path_in(const char *path, char *why, size_t cap)
{
	const char *rel = path;
	if (path[0] == '/') {
		rel = under(path, E2B_HOME);
		if (!rel)
			rel = under(path, "/workspace");
	} else if (path[0] == '~' && (!path[1] || path[1] == '/')) {
		rel = path + 1 + (path[1] == '/');
	}
	if (!rel) {
		/* The sandbox's files the server reaches are its workspace's: E2B's home directory. */
		snprintf(why, cap, "%.200s: outside the workspace (airlock's files API reaches " E2B_HOME " only)",
			 path);
		return NULL;
	}
	while (*rel == '/')
		rel++;
	char *out = strdup(rel);
	size_t n = out ? strlen(out) : 0;
	while (n && out[n - 1] == '/')
		out[--n] = 0;
	if (out && strcmp(out, ".") == 0)
		out[0] = 0;
	return out;
}

char *e2b_path_out(const char *rel)
{
	char *out = NULL;
	while (rel && rel[0] == '.' && rel[1] == '/')
		rel += 2;
	bool root = !rel || !*rel || strcmp(rel, ".") == 0;
	return asprintf(&out, "%s%s%s", E2B_HOME, root ? "" : "/", root ? "" : rel) < 0 ? NULL : out;
}

/* The manager's name for the workspace-relative rel: "." for the workspace itself. */
static const char *mgr_path(const char *rel)
{
	return *rel ? rel : ".";
}

/* ---- one call on the manager --------------------------------------------------------------------- */

static json_t *call(struct hx_server *s, const struct hx_request *rq, enum tl_id tool, json_t *args,
		    struct hx_response *rs)
{
	struct hx_call *c = args ? hx_call_new(s, tool, args, rq) : NULL;
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return NULL;
	}
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
	if (rs->status != 200)
		return NULL;
	json_t *out = json_loadb(rs->body, rs->len, 0, NULL);
	hx_response_clear(rs);
	if (!out)
		hx_error(rs, 500, "out of memory");
	return out;
}

static json_t *file_op(struct hx_server *s, const struct hx_request *rq, const char *id, const char *action,
		       const char *rel, struct hx_response *rs)
{
	return call(s, rq, TL_FILE,
		    json_pack("{s:s,s:s,s:s}", "sandbox_id", id, "action", action, "path", mgr_path(rel)), rs);
}

static const char *file_type(const char *kind)
{
	return !kind				? "FILE_TYPE_UNSPECIFIED"
	       : strcmp(kind, "file") == 0	? "FILE_TYPE_FILE"
	       : strcmp(kind, "directory") == 0 ? "FILE_TYPE_DIRECTORY"
	       : strcmp(kind, "symlink") == 0	? "FILE_TYPE_SYMLINK"
						: "FILE_TYPE_UNSPECIFIED";
}

static const char *base_name(const char *rel)
{
	const char *slash = strrchr(rel, '/');
	return slash ? slash + 1 : *rel ? rel : "user";
}

/* "-rw-r--r--" of a mode and its kind, as Go's fs.FileMode prints it (envd's permissions). */
static void permissions(unsigned mode, const char *kind, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	bool dir = kind && strcmp(kind, "directory") == 0, link = kind && strcmp(kind, "symlink") == 0;
	out[0] = "-dL"[dir ? 1 : link ? 2 : 0];
	for (int i = 0; i < 9; i++) {
		bool on = mode & (1u << (8 - i));
		out[1 + i] = (on ? rwx : "---------")[i];
	}
	out[10] = 0;
}

/* A code_file stat answer as envd's EntryInfo. */
static json_t *entry_of_stat(const char *rel, const json_t *st)
{
	const char *kind = json_string_value(json_object_get(st, "type"));
	const char *mode_text = json_string_value(json_object_get(st, "mode"));
	unsigned mode = mode_text ? (unsigned)strtoul(mode_text, NULL, 8) : 0;
	char perms[11];
	permissions(mode, kind, perms);
	cleanup_free char *path = e2b_path_out(rel);
	json_t *e = json_pack("{s:s,s:s,s:s,s:I,s:i,s:s,s:s,s:s}", "name", base_name(rel), "type", file_type(kind),
			      "path", path ? path : E2B_HOME, "size", json_integer_value(json_object_get(st, "size")),
			      "mode", (int)mode, "permissions", perms, "owner", "user", "group", "user");
	json_t *mtime = json_object_get(st, "mtime"), *target = json_object_get(st, "link_target");
	if (e && json_is_string(mtime))
		json_object_set(e, "modifiedTime", mtime);
	if (e && json_is_string(target))
		json_object_set(e, "symlinkTarget", target);
	return e;
}

/* {"entry": EntryInfo} of rel, after a call that changed it. */
static void entry_answer(struct hx_server *s, const struct hx_request *rq, const char *id, const char *rel,
			 struct hx_response *rs)
{
	json_t *st = file_op(s, rq, id, "stat", rel, rs);
	if (!st) {
		cx_from_api(rs, NULL);
		return;
	}
	json_t *e = entry_of_stat(rel, st);
	json_decref(st);
	cx_unary_ok(rs, e ? json_pack("{s:o}", "entry", e) : NULL);
}

/* ---- filesystem.Filesystem ------------------------------------------------------------------------ */

/* The request's message and its path member as a workspace-relative path; NULL with rs filled. */
static json_t *message_path(const struct hx_request *rq, const char *key, char **rel, struct hx_response *rs)
{
	char why[256];
	json_t *msg = NULL;
	*rel = NULL;
	if (cx_parse_request(false, rq->body, rq->len, &msg, why, sizeof(why)) < 0) {
		cx_unary_error(rs, "invalid_argument", "%s", why);
		return NULL;
	}
	const char *path = json_string_value(json_object_get(msg, key));
	*rel = path ? e2b_path_in(path, why, sizeof(why)) : NULL;
	if (!*rel) {
		cx_unary_error(rs, path ? "permission_denied" : "invalid_argument", "%s",
			       path ? why : "the path is required");
		json_decref(msg);
		return NULL;
	}
	return msg;
}

static void fs_stat(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	cleanup_free char *rel = NULL;
	json_t *msg = message_path(rq, "path", &rel, rs);
	json_decref(msg);
	if (msg)
		entry_answer(s, rq, id, rel, rs);
}

static void fs_mkdir(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	cleanup_free char *rel = NULL;
	json_t *msg = message_path(rq, "path", &rel, rs);
	json_decref(msg);
	if (!msg)
		return;
	json_t *r = file_op(s, rq, id, "mkdir", rel, rs);
	if (!r) {
		cx_from_api(rs, NULL);
		return;
	}
	bool made = json_is_true(json_object_get(r, "created"));
	json_decref(r);
	if (!made) { /* envd's answer for a directory that is there (the SDK's makeDir: false) */
		cx_unary_error(rs, "already_exists", "%s: already exists", rel);
		return;
	}
	entry_answer(s, rq, id, rel, rs);
}

static void fs_move(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	cleanup_free char *from = NULL, *to = NULL;
	json_t *msg = message_path(rq, "source", &from, rs);
	if (!msg)
		return;
	char why[256];
	const char *dest = json_string_value(json_object_get(msg, "destination"));
	to = dest ? e2b_path_in(dest, why, sizeof(why)) : NULL;
	json_decref(msg);
	if (!to) {
		cx_unary_error(rs, "invalid_argument", "%s", dest ? why : "the destination is required");
		return;
	}
	json_t *r = call(s, rq, TL_FILE,
			 json_pack("{s:s,s:s,s:s,s:s}", "sandbox_id", id, "action", "move", "path", mgr_path(from),
				   "to", mgr_path(to)),
			 rs);
	if (!r) {
		cx_from_api(rs, NULL);
		return;
	}
	json_decref(r);
	entry_answer(s, rq, id, to, rs);
}

static void fs_remove(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	cleanup_free char *rel = NULL;
	json_t *msg = message_path(rq, "path", &rel, rs);
	json_decref(msg);
	if (!msg)
		return;
	json_t *r = call(s, rq, TL_FILE,
			 json_pack("{s:s,s:s,s:s,s:b}", "sandbox_id", id, "action", "remove", "path", mgr_path(rel),
				   "recursive", 1),
			 rs);
	if (r)
		cx_unary_ok(rs, json_object());
	else
		cx_from_api(rs, NULL);
	json_decref(r);
}

/* Appends rel's entries (and, depth > 1, those of its directories) to out. */
/* NOLINTNEXTLINE(misc-no-recursion): bounded by depth (at most LIST_MAX_DEPTH) */
static int list_into(struct hx_server *s, const struct hx_request *rq, const char *id, const char *rel, unsigned depth,
		     json_t *out, struct hx_response *rs)
{
	json_t *r = call(s, rq, TL_LIST_FILES, json_pack("{s:s,s:s}", "sandbox_id", id, "path", mgr_path(rel)), rs);
	if (!r)
		return -1;
	size_t i;
	json_t *e;
	int rc = 0;
	json_array_foreach(json_object_get(r, "entries"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name")),
			   *kind = json_string_value(json_object_get(e, "type"));
		if (!name || json_array_size(out) >= LIST_MAX_ENTRIES)
			continue;
		cleanup_free char *child = NULL;
		if (asprintf(&child, "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
			rc = -1;
			break;
		}
		cleanup_free char *path = e2b_path_out(child);
		char perms[11];
		permissions(0, kind, perms);
		json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:O,s:s,s:s}", "name", name, "type", file_type(kind),
						     "path", path ? path : "", "size", json_object_get(e, "size"),
						     "owner", "user", "group", "user"));
		if (depth > 1 && kind && strcmp(kind, "directory") == 0 &&
		    (rc = list_into(s, rq, id, child, depth - 1, out, rs)) < 0)
			break;
	}
	json_decref(r);
	return rc;
}

static void fs_list(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	cleanup_free char *rel = NULL;
	json_t *msg = message_path(rq, "path", &rel, rs);
	if (!msg)
		return;
	json_int_t depth = json_integer_value(json_object_get(msg, "depth"));
	json_decref(msg);
	json_t *out = json_array();
	if (!out) {
		cx_unary_error(rs, "internal", "out of memory");
		return;
	}
	if (list_into(s, rq, id, rel,
		      depth < 1		       ? 1
		      : depth > LIST_MAX_DEPTH ? LIST_MAX_DEPTH
					       : (unsigned)depth,
		      out, rs) < 0) {
		json_decref(out);
		cx_from_api(rs, NULL);
		return;
	}
	hx_response_clear(rs);
	rs->status = 200;
	cx_from_api(rs, json_pack("{s:o}", "entries", out));
}

/* ---- WatchDir: a code_watch stream as envd's events ----------------------------------------------- */

struct wstream {
	char rel[4096]; /* the watched directory, workspace-relative ("" : the workspace) */
};

static int envelope_out(json_t *steal, unsigned flags, char **out, size_t *n)
{
	struct cx_buf b = {0};
	int r = steal ? cx_envelope(&b, flags, steal) : -ENOMEM;
	json_decref(steal);
	*out = b.p;
	*n = b.len;
	return r;
}

static int ws_begin(void *ctx, char **out, size_t *n)
{
	return envelope_out(json_pack("{s:{}}", "start"), 0, out, n);
}

static int ws_keepalive(void *ctx, char **out, size_t *n)
{
	return envelope_out(json_pack("{s:{}}", "keepalive"), 0, out, n);
}

static const char *event_type(const char *t)
{
	static const char *const map[][2] = {{"create", "EVENT_TYPE_CREATE"},
					     {"write", "EVENT_TYPE_WRITE"},
					     {"remove", "EVENT_TYPE_REMOVE"},
					     {"rename", "EVENT_TYPE_RENAME"},
					     {"chmod", "EVENT_TYPE_CHMOD"}};
	for (size_t i = 0; t && i < AL_ARRAY_SIZE(map); i++)
		if (strcmp(t, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

int e2b_fs_event(const char *dir, const json_t *ev, json_t **out)
{
	const char *type = event_type(json_string_value(json_object_get(ev, "type")));
	const char *path = json_string_value(json_object_get(ev, "path"));
	*out = NULL;
	if (!type || !path)
		return 0; /* an overflow: envd has no word for it */
	/* An event's name is relative to the watched directory, as envd's. */
	size_t dl = strlen(dir);
	const char *rel = dl && strncmp(path, dir, dl) == 0 && path[dl] == '/' ? path + dl + 1 : path;
	*out = json_pack("{s:s,s:s}", "name", rel, "type", type);
	return *out ? 0 : -ENOMEM;
}

static int ws_event(void *ctx, const char *name, const json_t *ev, char **out, size_t *n)
{
	struct wstream *w = ctx;
	*out = NULL;
	*n = 0;
	if (strcmp(name, "event") == 0) {
		json_t *fe = NULL;
		int r = e2b_fs_event(w->rel, ev, &fe);
		if (r < 0 || !fe)
			return r;
		return envelope_out(json_pack("{s:o}", "filesystem", fe), 0, out, n);
	}
	struct cx_buf b = {0};
	int r = 0;
	if (strcmp(name, "error") == 0) {
		int status = (int)json_integer_value(json_object_get(ev, "status"));
		const char *msg = json_string_value(json_object_get(ev, "error"));
		r = cx_end_stream(&b, cx_code_of_status(status ? status : 500), msg ? msg : "the watch failed");
	} else if (strcmp(name, "result") == 0) {
		r = cx_end_stream(&b, NULL, NULL);
	}
	*out = b.p;
	*n = b.len;
	return r;
}

static const struct hx_framing wstream_framing = {
	.type = "application/connect+json",
	.begin = ws_begin,
	.event = ws_event,
	.keepalive = ws_keepalive,
	.keepalive_ms = WATCH_PING_MS,
	.free = free,
};

static void stream_error(struct hx_response *rs, const char *code, const char *msg)
{
	struct cx_buf b = {0};
	hx_response_clear(rs);
	if (cx_end_stream(&b, code, msg) < 0) {
		free(b.p);
		hx_error(rs, 500, "out of memory");
		return;
	}
	rs->status = 200;
	rs->type = "application/connect+json";
	rs->body = b.p;
	rs->len = b.len;
}

static void fs_watch(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	char why[256];
	json_t *msg = NULL;
	if (cx_parse_request(true, rq->body, rq->len, &msg, why, sizeof(why)) < 0) {
		stream_error(rs, "invalid_argument", why);
		return;
	}
	const char *path = json_string_value(json_object_get(msg, "path"));
	cleanup_free char *rel = path ? e2b_path_in(path, why, sizeof(why)) : NULL;
	bool recursive = json_is_true(json_object_get(msg, "recursive"));
	json_decref(msg);
	struct wstream *w = rel ? calloc(1, sizeof(*w)) : NULL;
	json_t *args = w ? json_pack("{s:s,s:s,s:b,s:b}", "sandbox_id", id, "path", mgr_path(rel), "recursive",
				     recursive, "follow", 1)
			 : NULL;
	struct hx_call *c = args ? hx_call_new(s, TL_WATCH, args, rq) : NULL;
	if (!c) {
		free(w);
		stream_error(rs, rel ? "internal" : "invalid_argument",
			     rel    ? "out of memory"
			     : path ? why
				    : "path is required");
		return;
	}
	snprintf(w->rel, sizeof(w->rel), "%s", rel);
	hx_call_framing(c, &wstream_framing, w);
	hx_call_stream(c, false, rs);
	if (!rs->ops) {
		json_t *b = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
		snprintf(why, sizeof(why), "%s", json_string_value(json_object_get(b, "error")) ?: "the watch failed");
		json_decref(b);
		stream_error(rs, cx_code_of_status(rs->status), why);
	}
}

void e2b_filesystem(struct hx_server *s, const struct hx_request *rq, const char *id, const char *method,
		    struct hx_response *rs)
{
	static const struct {
		const char *name;
		void (*fn)(struct hx_server *, const struct hx_request *, const char *, struct hx_response *);
	} methods[] = {
		{"Stat", fs_stat},
		{"MakeDir", fs_mkdir},
		{"Move", fs_move},
		{"ListDir", fs_list},
		{"Remove", fs_remove},
		{"WatchDir", fs_watch},
		{"CreateWatcher", e2b_watcher_create},
		{"GetWatcherEvents", e2b_watcher_events},
		{"RemoveWatcher", e2b_watcher_remove},
	};
	for (size_t i = 0; i < AL_ARRAY_SIZE(methods); i++)
		if (strcmp(method, methods[i].name) == 0) {
			methods[i].fn(s, rq, id, rs);
			return;
		}
	cx_unary_error(rs, "unimplemented", "filesystem.Filesystem/%.64s: no such method", method);
}

/* ---- /files ---------------------------------------------------------------------------------------- */

/* envd's REST error body: {"code": STATUS, "message": "..."}. */
static void rest_from_api(struct hx_response *rs)
{
	if (rs->status < 300)
		return;
	json_t *body = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	char text[AL_ERROR_MAX + 64];
	snprintf(text, sizeof(text), "%s", json_string_value(json_object_get(body, "error")) ?: "the request failed");
	json_decref(body);
	int status = rs->status;
	hx_response_clear(rs);
	hx_json(rs, status, json_pack("{s:i,s:s}", "code", status, "message", text));
}

static void rest_fail(struct hx_response *rs, int status, const char *msg)
{
	hx_response_clear(rs);
	hx_json(rs, status, json_pack("{s:i,s:s}", "code", status, "message", msg));
}

static void download(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	char why[256];
	const char *path = query(rq, "path");
	cleanup_free char *rel = path ? e2b_path_in(path, why, sizeof(why)) : NULL;
	if (!rel) {
		rest_fail(rs, 400, path ? why : "the path argument is required");
		return;
	}
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", id);
	char *caps[2] = {sid, rel};
	api_read(s, rq, caps, rs);
	rest_from_api(rs);
}

/* Writes one file's bytes (a part of the form, or the whole octet-stream body) to rel. */
static int upload_one(struct hx_server *s, const struct hx_request *rq, const char *id, char *rel, const char *data,
		      size_t len, json_t *answer, struct hx_response *rs)
{
	struct hx_request sub = *rq;
	sub.body = data;
	sub.len = len;
	sub.spooled = false;
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", id);
	char *caps[2] = {sid, rel};
	api_write(s, &sub, caps, rs);
	if (rs->status != 200)
		return -1;
	hx_response_clear(rs);
	cleanup_free char *path = e2b_path_out(rel);
	json_array_append_new(
		answer, json_pack("{s:s,s:s,s:s}", "path", path ? path : "", "name", base_name(rel), "type", "file"));
	return 0;
}

static void upload(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	char why[256];
	const char *path = query(rq, "path"), *type = header(rq, "Content-Type");
	json_t *answer = json_array();
	if (!answer) {
		rest_fail(rs, 500, "out of memory");
		return;
	}
	if (type && strncasecmp(type, "application/octet-stream", 24) == 0) {
		cleanup_free char *rel = path ? e2b_path_in(path, why, sizeof(why)) : NULL;
		if (!rel)
			rest_fail(rs, 400, path ? why : "the path argument is required");
		else if (upload_one(s, rq, id, rel, rq->body ? rq->body : "", rq->len, answer, rs) == 0)
			hx_json(rs, 200, json_incref(answer));
		rest_from_api(rs);
		json_decref(answer);
		return;
	}
	struct e2b_part parts[FORM_MAX_PARTS];
	cleanup_free char *names = malloc(65536);
	int n = names ? e2b_form_parse(type, rq->body ? rq->body : "", rq->len, parts, FORM_MAX_PARTS, names, 65536,
				       why, sizeof(why))
		      : -ENOMEM;
	if (n < 0) {
		rest_fail(rs, names ? 400 : 500, names ? why : "out of memory");
		json_decref(answer);
		return;
	}
	int r = 0;
	for (int i = 0; r == 0 && i < n; i++) {
		/* One file: the path argument names it; several: each part's file name does. */
		const char *name = n == 1 && path ? path : parts[i].filename;
		cleanup_free char *rel = name ? e2b_path_in(name, why, sizeof(why)) : NULL;
		if (!rel) {
			rest_fail(rs, 400, name ? why : "a part without a file name (and no path argument)");
			r = -1;
			break;
		}
		r = upload_one(s, rq, id, rel, parts[i].data, parts[i].len, answer, rs);
	}
	if (r == 0)
		hx_json(rs, 200, json_incref(answer));
	json_decref(answer);
	rest_from_api(rs);
}

void e2b_files(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	if (strcmp(rq->method, "GET") == 0)
		download(s, rq, id, rs);
	else if (strcmp(rq->method, "POST") == 0)
		upload(s, rq, id, rs);
	else
		rest_fail(rs, 405, "GET or POST /files");
}

void e2b_envd(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	const char *path = rq->path ? rq->path : "";
	if (strcmp(path, "/health") == 0) {
		rs->status = 204; /* the request passed the sandbox's access check: it is there */
		return;
	}
	if (strcmp(path, "/files") == 0) {
		e2b_files(s, rq, id, rs);
		return;
	}
	bool post = strcmp(rq->method, "POST") == 0;
	if (post && strncmp(path, "/process.Process/", 17) == 0) {
		e2b_process(s, rq, id, path + 17, rs);
		return;
	}
	if (post && strncmp(path, "/filesystem.Filesystem/", 23) == 0) {
		e2b_filesystem(s, rq, id, path + 23, rs);
		return;
	}
	rest_fail(rs, 404, "no such envd route");
}
