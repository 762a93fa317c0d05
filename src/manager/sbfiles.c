/* sbfiles.c — the workspace file operations of a held sandbox: beneath its workspace descriptor,
 * as the sandbox user (wsfiles.c, wsops.c, wstar.c), answered in the start call (the contract
 * allows it: *out stays NULL). */
#include "manager/sbmint.h"

#include <errno.h>
#include <unistd.h>

#include "manager/wsfiles.h"
#include "util/error.h"

enum file_op {
	FILE_WRITE,
	FILE_READ,
	FILE_LIST,
	FILE_OTHER, /* stat, mkdir, move, remove */
};

struct file_call {
	enum file_op op;
	const char *sandbox_id, *owner, *path;
	const struct srv_write_req *write; /* FILE_WRITE */
	bool want_fd;			   /* FILE_READ: the open file rather than its bytes */
	const struct srv_file_req *other;  /* FILE_OTHER */
};

static int write_op(int ws, const struct srv_write_req *w, uid_t uid, gid_t gid, struct srv_result *res,
		    struct al_error *err)
{
	if (!w->spooled) {
		res->bytes = w->len;
		return ws_write(ws, w->path, w->data, w->len, uid, gid, err);
	}
	if (w->archive)
		return ws_untar(ws, w->path, w->spool_fd, uid, gid, &res->bytes, err);
	off_t size = lseek(w->spool_fd, 0, SEEK_END);
	res->bytes = size > 0 ? (uint64_t)size : 0;
	return ws_commit(ws, w->path, w->spool_fd, uid, gid, err);
}

static int other_op(int ws, const struct srv_file_req *o, uid_t uid, gid_t gid, struct srv_result *res,
		    struct al_error *err)
{
	bool made = false;
	int r;
	switch (o->action) {
	case SRV_FILE_STAT:
		return ws_stat(ws, o->path, uid, gid, &res->stat, err);
	case SRV_FILE_MKDIR:
		r = ws_mkdir(ws, o->path, uid, gid, &made, err);
		res->bytes = made;
		return r;
	case SRV_FILE_MOVE:
		return ws_move(ws, o->path, o->to, o->no_replace, err);
	case SRV_FILE_REMOVE:
		return ws_remove(ws, o->path, o->recursive, &res->bytes, err);
	}
	return al_err(err, EINVAL, "no such file operation");
}

/* Runs c in its sandbox as the sandbox user; the answer goes to sink, the result's fields filled
 * by the workspace call itself. */
static int file_call(struct sbm *m, const struct file_call *c, const struct srv_sink *sink, struct srv_op **out,
		     struct al_error *err)
{
	struct srv_result *res = srv_result_new();
	if (!res)
		return al_err(err, ENOMEM, "out of memory");
	/* Reading or changing files is a use: a paused sandbox is resumed first (its programs see the
	 * change as it happens). A listing or a stat only looks. */
	bool use =
		c->op == FILE_WRITE || c->op == FILE_READ || (c->op == FILE_OTHER && c->other->action != SRV_FILE_STAT);
	struct sbx *s = use ? sbx_use(m, c->sandbox_id, c->owner, &res->resumed, err)
			    : sbx_get(m, c->sandbox_id, c->owner, err);
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
		r = write_op(ws, c->write, uid, gid, res, err);
		break;
	case FILE_READ: /* want_fd: the caller streams the file from the descriptor, in bounded pieces */
		r = c->want_fd ? ws_open(ws, c->path, &res->fd, &res->len, err)
			       : ws_read(ws, c->path, &res->data, &res->len, err);
		break;
	case FILE_LIST:
		r = ws_list(ws, c->path, &res->entries, &res->n_entries, err);
		break;
	case FILE_OTHER:
		r = other_op(ws, c->other, uid, gid, res, err);
		break;
	}
	ws_restore(&saved);
	/* What the call wrote is on disk before it is answered; if it cannot be (no room left in the
	 * state directory), the answer says so rather than that it is kept. */
	struct al_error se = {0};
	if ((c->op == FILE_WRITE || (c->op == FILE_OTHER && c->other->action != SRV_FILE_STAT)) &&
	    sbp_sync_checked(m, s, &se) < 0 && r >= 0)
		r = al_err(err, se.code < 0 ? -se.code : EIO,
			   "the change was made in sandbox %s, but could not be kept in the state directory (%s): "
			   "it is lost if the server stops before a later call keeps it",
			   s->id, se.msg);
	/* Ended meanwhile (its lifetime, a destroy): what was written is gone, and the caller is told. */
	char why[AL_ERROR_MAX / 2];
	const char *kw = NULL;
	if (life_ended(m, s, why, sizeof(why), &kw))
		r = al_err(err, ENOENT, "%s while this call ran", why);
	if (use)
		sbx_unuse(m, s);
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
	struct file_call c = {
		.op = FILE_WRITE, .sandbox_id = req->sandbox_id, .owner = req->owner, .path = req->path, .write = req};
	return file_call(ctx, &c, sink, out, err);
}

int sbm_read_file(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		  struct al_error *err)
{
	struct file_call c = {.op = FILE_READ,
			      .sandbox_id = req->sandbox_id,
			      .owner = req->owner,
			      .path = req->path,
			      .want_fd = req->want_fd};
	return file_call(ctx, &c, sink, out, err);
}

int sbm_list_files(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		   struct al_error *err)
{
	struct file_call c = {.op = FILE_LIST, .sandbox_id = req->sandbox_id, .owner = req->owner, .path = req->path};
	return file_call(ctx, &c, sink, out, err);
}

int sbm_file_op(void *ctx, const struct srv_file_req *req, const struct srv_sink *sink, struct srv_op **out,
		struct al_error *err)
{
	struct file_call c = {
		.op = FILE_OTHER, .sandbox_id = req->sandbox_id, .owner = req->owner, .path = req->path, .other = req};
	return file_call(ctx, &c, sink, out, err);
}

/* The spool is made as the sandbox user, beneath its workspace: its size counts against the
 * sandbox's disk limit from the first byte, and the server holds none of it in memory. */
int sbm_open_upload(void *ctx, const char *owner, const char *sandbox_id, const char *path, int *fd,
		    struct al_error *err)
{
	struct sbm *m = ctx;
	if (path && *path) {
		int r = ws_check_write_path(path, err);
		if (r < 0)
			return r;
	}
	struct sbx *s = sbx_get(m, sandbox_id, owner, err);
	if (!s)
		return -ENOENT;
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(s->sb, &uid, &gid);
	struct ws_cred saved;
	ws_become(uid, gid, &saved);
	int r = ws_spool(al_sandbox_workspace(s->sb), uid, gid, err);
	ws_restore(&saved);
	sbx_put(m, s);
	if (r < 0)
		return r;
	*fd = r;
	return 0;
}
