/* sbfiles.c — the workspace file operations of a held sandbox: beneath its workspace descriptor,
 * as the sandbox user (wsfiles.c), answered in the start call (the contract allows it: *out stays
 * NULL). */
#include "manager/sbmint.h"

#include <errno.h>

#include "manager/wsfiles.h"
#include "util/error.h"

enum file_op {
	FILE_WRITE,
	FILE_READ,
	FILE_LIST
};

struct file_call {
	enum file_op op;
	const char *sandbox_id, *owner, *path;
	const void *data; /* FILE_WRITE */
	size_t len;
	bool want_fd; /* FILE_READ: the open file rather than its bytes */
};

/* Runs c in its sandbox as the sandbox user; the answer goes to sink, the result's fields filled
 * by the workspace call itself. */
static int file_call(struct sbm *m, const struct file_call *c, const struct srv_sink *sink, struct srv_op **out,
		     struct al_error *err)
{
	struct srv_result *res = srv_result_new();
	if (!res)
		return al_err(err, ENOMEM, "out of memory");
	struct sbx *s = sbx_get(m, c->sandbox_id, c->owner, err);
	if (!s) {
		srv_result_free(res);
		return -ENOENT;
	}
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(s->sb, &uid, &gid);
	int ws = al_sandbox_workspace(s->sb), r = -EINVAL;
	struct ws_cred saved;
	ws_become(uid, gid, &saved);
	switch (c->op) {
	case FILE_WRITE:
		r = ws_write(ws, c->path, c->data, c->len, uid, gid, err);
		res->bytes = c->len;
		break;
	case FILE_READ: /* want_fd: the caller streams the file from the descriptor, in bounded pieces */
		r = c->want_fd ? ws_open(ws, c->path, &res->fd, &res->len, err)
			       : ws_read(ws, c->path, &res->data, &res->len, err);
		break;
	case FILE_LIST:
		r = ws_list(ws, c->path, &res->entries, &res->n_entries, err);
		break;
	}
	ws_restore(&saved);
	/* Ended meanwhile (its lifetime, a destroy): what was written is gone, and the caller is told. */
	char why[AL_ERROR_MAX / 2];
	const char *kw = NULL;
	if (life_ended(m, s, why, sizeof(why), &kw))
		r = al_err(err, ENOENT, "%s while this call ran", why);
	sbx_put(m, s);
	if (r < 0) {
		srv_result_free(res);
		return r;
	}
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

int sbm_write_file(void *ctx, const struct srv_write_req *req, const struct srv_sink *sink, struct srv_op **out,
		   struct al_error *err)
{
	struct file_call c = {FILE_WRITE, req->sandbox_id, req->owner, req->path, req->data, req->len, false};
	return file_call(ctx, &c, sink, out, err);
}

int sbm_read_file(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		  struct al_error *err)
{
	struct file_call c = {FILE_READ, req->sandbox_id, req->owner, req->path, NULL, 0, req->want_fd};
	return file_call(ctx, &c, sink, out, err);
}

int sbm_list_files(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		   struct al_error *err)
{
	struct file_call c = {FILE_LIST, req->sandbox_id, req->owner, req->path, NULL, 0, false};
	return file_call(ctx, &c, sink, out, err);
}
