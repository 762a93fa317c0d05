/* sbfork.c — fork: new sandboxes of the caller's, each made as a create makes one (the parent's
 * profile, image, network and limits) and given the parent's workspace as it is now. From there
 * the children and the parent diverge: each has its own tmpfs, its own disk limit, its own mirror
 * on disk. What runs in the parent (processes, contexts) is not copied: only files.
 *
 * With a state directory nothing is copied: the parent's mirror (synced first) is frozen once into
 * a layer (hard links: a mirror's file is replaced, never written in place), and every child's
 * workspace is an overlay over it (and over the layers the parent itself stands on), its upper
 * layer the child's own size-capped tmpfs, so the disk limit holds as before. A fork's time then
 * grows with the parent's number of files (one link each, once per fork), not with their bytes
 * nor with the number of children. bench/README.md has the figures.
 *
 * Without one (--state-dir none), the copy is wsmirror's restore walk (it never follows a link the sandbox made, and makes each
 * entry as the sandbox user, so the child's files are its own): from the parent's mirror, which the
 * child's mirror shares by hard links (a mirror's file is replaced, never written in place), or,
 * when sandboxes are not kept, from the parent's live workspace. A child is kept on disk before it
 * is listed, as a create's is: the fork's answer names only children whose files are durable. */
#include "manager/sbmint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager/persist.h"
#include "manager/wsmirror.h"
#include "util/cleanup.h"
#include "util/error.h"

/* One child of parent p: made, owned, given its lifetime and labels, filled, kept, listed; *out
 * with the caller's reference, or -errno (nothing of it left). */
static int fork_one(struct sbm *m, struct srv_op *op, struct sbx *p, const json_t *layers, struct wsm_stats *st,
		    struct sbx **out, struct al_error *err)
{
	*out = NULL;
	pthread_mutex_lock(&m->mu);
	/* Refused before a sandbox is built: the table would refuse it after (sbx_list). */
	int q = sbm_quota_check_locked(m, op->owner, 1, p->disk_bytes, err);
	cleanup_free char *meta = op->meta_json ? strdup(op->meta_json) : p->meta_json ? strdup(p->meta_json) : NULL;
	uint64_t lifetime = op->lifetime_ms ? op->lifetime_ms : p->lifetime_ms;
	pthread_mutex_unlock(&m->mu);
	if (q < 0)
		return q;
	if ((op->meta_json || p->meta_json) && !meta)
		return al_err(err, ENOMEM, "out of memory");
	struct sbx *c = NULL;
	char ref[SBX_IMAGE_REF];
	int r = sbx_new_layered(m, op->owner, p->profile, sbx_image_ref(p, ref), p->network, p->net_hosts, &p->lim,
				layers, &c, err);
	if (r < 0)
		return r;
	c->refs = 1;
	sbx_set_owner(c, op->owner);
	struct srv_op life = {.lifetime_ms = lifetime, .meta_json = steal_ptr(meta)};
	life_apply_create(m, c, &life);
	/* Kept, then filled: its files are on disk before anyone is told of it. */
	r = sbp_keep(m, c, err);
	if (r == 0 && !layers)
		r = sbp_fork_files(m, p, c, st, err);
	if (r == 0)
		r = sbx_list(m, c, err);
	if (r < 0) {
		sbx_free(c);
		return r;
	}
	*out = c;
	return 0;
}

static json_t *child_json(struct sbm *m, struct sbx *c)
{
	pthread_mutex_lock(&m->mu);
	uint64_t ends = life_ends_locked(m, c);
	pthread_mutex_unlock(&m->mu);
	return json_pack("{s:s,s:I}", "sandbox_id", c->id, "ends_unix_ms",
			 (json_int_t)(ends ? sbm_wall_ms(m, ends) : 0));
}

static void *fork_thread(void *arg)
{
	struct srv_op *op = arg;
	struct sbm *m = op->m;
	struct al_error err = {0};
	struct srv_result *res = NULL;
	struct sbx *p = sbx_get(m, op->sandbox_id, op->owner, &err);
	int r = p ? 0 : -ENOENT;
	json_t *kids = json_array(), *layers = NULL;
	struct wsm_stats st = {0}, frozen = {0};
	if (r == 0 && !kids)
		r = al_err(&err, ENOMEM, "out of memory");
	/* The quotas for all the children at once, before anything is frozen: a fork past them makes
	 * none (a fork racing another call of the same principal may still stop part way: below). */
	if (r == 0) {
		pthread_mutex_lock(&m->mu);
		r = sbm_quota_check_locked(m, op->owner, op->count, p->disk_bytes * op->count, &err);
		pthread_mutex_unlock(&m->mu);
	}
	/* Once for every child: they all stand on the same layer. */
	if (r == 0)
		r = sbp_freeze(m, p, p->disk_bytes * op->count, "this fork (its children's disk limits)", &layers,
			       &frozen, &err);
	/* One by one: a child that cannot be made (a quota, the disk) ends the fork, and the children
	 * made before it stay, named in the error, so nothing made is left unknown to its owner. */
	for (unsigned i = 0; r == 0 && i < op->count; i++) {
		struct sbx *c = NULL;
		struct wsm_stats one = {0};
		r = fork_one(m, op, p, layers, &one, &c, &err);
		if (r == 0 && c) {
			st.entries = layers ? frozen.entries : one.entries;
			st.bytes += one.bytes;
			json_array_append_new(kids, child_json(m, c));
			pthread_mutex_lock(&m->mu);
			c->refs--; /* the table keeps it */
			pthread_mutex_unlock(&m->mu);
		}
	}
	if (r < 0 && json_array_size(kids)) {
		cleanup_free char *made = json_dumps(kids, JSON_COMPACT);
		char why[AL_ERROR_MAX];
		memcpy(why, err.msg, sizeof(why));
		al_err(&err, -r, "%s; made before it: %s", why, made ? made : "(out of memory)");
	}
	if (r == 0 && !(res = srv_result_new()))
		r = al_err(&err, ENOMEM, "out of memory");
	if (r == 0 && res) {
		json_t *o = json_pack("{s:O,s:I,s:I,s:b}", "sandboxes", kids, "entries", (json_int_t)st.entries,
				      "bytes", (json_int_t)st.bytes, "layered", layers != NULL);
		res->sandboxes_json = o ? json_dumps(o, JSON_COMPACT) : NULL;
		res->sandbox_id = strdup(p->id);
		json_decref(o);
		if (!res->sandboxes_json || !res->sandbox_id)
			r = al_err(&err, ENOMEM, "out of memory");
	}
	json_decref(kids);
	/* The children hold their own references: a fork that made none leaves the layer to go. */
	if (layers && !json_array_size(kids))
		sbp_unfreeze(p, layers);
	if (layers)
		pst_layers_unref(m->pst, layers);
	json_decref(layers);
	/* The parent's files were only read: nothing of it to sync (op_end syncs what a call may have
	 * changed, and a fork changes nothing there). */
	if (p)
		sbx_put(m, p);
	op_end(op, NULL, r, &err, res);
	return NULL;
}

int sbm_fork(void *ctx, const struct srv_fork_req *req, const struct srv_sink *sink, struct srv_op **out,
	     struct al_error *err)
{
	struct sbm *m = ctx;
	if (!req->sandbox_id)
		return al_err(err, EINVAL, "fork needs the sandbox_id of the sandbox to fork");
	if (req->count < 1 || req->count > SRV_FORK_MAX)
		return al_err(err, EINVAL, "count: %u is not 1 to %d", req->count, SRV_FORK_MAX);
	int r = sbx_known(m, req->sandbox_id, req->owner, err);
	if (r < 0)
		return r;
	/* The labels and the lifetime checked as a create's, before anything is made. */
	struct srv_create_req cq = {.owner = req->owner,
				    .lifetime_ms = req->lifetime_ms,
				    .metadata_keys = req->metadata_keys,
				    .metadata_values = req->metadata_values,
				    .n_metadata = req->n_metadata};
	char *meta = NULL;
	if ((r = life_check_create(m, &cq, &meta, err)) < 0)
		return r;
	struct srv_op *op = op_new(m, OP_FORK, sink);
	if (!op) {
		free(meta);
		return al_err(err, ENOMEM, "out of memory");
	}
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->sandbox_id = strdup(req->sandbox_id);
	op->count = req->count;
	op->lifetime_ms = req->lifetime_ms;
	op->meta_json = meta;
	if (!op->sandbox_id) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
	return op_start_thread(m, op, fork_thread, out, err);
}
