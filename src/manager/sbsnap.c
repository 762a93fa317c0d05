/* sbsnap.c — snapshots: a sandbox's workspace frozen into a read-only layer of the state directory
 * (persist.h), named, listed and deleted by its owner, that outlives the sandbox; a create names
 * one, and the new sandbox's workspace is an overlay over its layers (as a fork's child is).
 *
 * What a snapshot holds: the workspace's files (what was written and installed into it), as the
 * sandbox's mirror had them after a sync at the snapshot. Not its processes, their memory, nor its
 * interpreter contexts: a sandbox made from it starts none of them.
 *
 * Each snapshot's record (DIR/.snapshots/<id>.json) names the layers it stands on and holds a
 * reference on each (pst_layers_ref), as a sandbox standing on them does: a layer outlives the
 * sandbox it was frozen from while a snapshot names it, and goes with the last of the sandboxes
 * and snapshots on it. The record is on disk before the snapshot is answered; a deletion removes
 * it (durably) before the layers are let go. Without a state directory there is nowhere to keep a
 * layer: every snapshot call that would keep or use one is refused, and nothing is made.
 *
 * The table (m->snaps) and every change of it are under m->snap_mu, held while a snapshot is made
 * (freeze, quota, record): two snapshots of one principal can never both pass its quota. */
#include "manager/sbmint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config/config.h"
#include "manager/persist.h"
#include "manager/wsmirror.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

#define SNAP_VERSION 1
/* What a snapshot adds to the state directory beside its hard links (its record, its layer's
 * directories), asked of the room the kept sandboxes have not been promised. */
#define SNAP_ROOM (1ULL << 20)

static int no_store(const struct sbm *m, struct al_error *err)
{
	if (m->pst_broken) {
		if (err)
			*err = m->pst_err;
		return m->pst_err.code < 0 ? m->pst_err.code : -EIO;
	}
	if (!m->pst)
		return al_err(err, ENOTSUP,
			      "snapshots need a state directory to keep their files, and this server runs with "
			      "--state-dir none (server.state_dir): nothing was made");
	return 0;
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static uint64_t num(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* Under snap_mu: owner's snapshot id, or NULL (another principal's is nobody's to this one). */
static json_t *find_locked(struct sbm *m, const char *owner, const char *id)
{
	json_t *rec = id ? json_object_get(m->snaps, id) : NULL;
	const char *o = str(rec, "owner");
	return rec && o && strcmp(o, owner ? owner : "") == 0 ? rec : NULL;
}

/* Under snap_mu: how many snapshots owner keeps, and their bytes together. */
static unsigned owned_locked(struct sbm *m, const char *owner, uint64_t *bytes)
{
	unsigned n = 0;
	*bytes = 0;
	const char *id;
	json_t *rec;
	json_object_foreach(m->snaps, id, rec) {
		const char *o = str(rec, "owner");
		if (o && strcmp(o, owner) == 0) {
			n++;
			*bytes += num(rec, "bytes");
		}
	}
	return n;
}

/* The snapshot as its owner sees it (no owner, no layers: the server's own). */
static json_t *public_of(const json_t *rec)
{
	const json_t *name = json_object_get(rec, "name"), *image = json_object_get(rec, "image");
	return json_pack("{s:s,s:O,s:I,s:I,s:I,s:s,s:s,s:O,s:O}", "snapshot_id", str(rec, "id"), "name",
			 name ? name : json_null(), "created_unix_ms", (json_int_t)num(rec, "created_unix_ms"), "bytes",
			 (json_int_t)num(rec, "bytes"), "entries", (json_int_t)num(rec, "entries"), "sandbox_id",
			 str(rec, "sandbox_id") ? str(rec, "sandbox_id") : "", "profile",
			 str(rec, "profile") ? str(rec, "profile") : "", "image", image ? image : json_null(),
			 "metadata",
			 json_object_get(rec, "metadata") ? json_object_get(rec, "metadata") : json_object());
}

/* Finishes a synchronous call: o (stolen) as the answer, or r's error. */
static int answer(const struct srv_sink *sink, struct srv_op **out, json_t *o, struct al_error *err)
{
	struct srv_result *res = srv_result_new();
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!res || !text) {
		srv_result_free(res);
		free(text);
		return al_err(err, ENOMEM, "out of memory");
	}
	res->snapshot_json = text;
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

/* ---- making one ------------------------------------------------------------------------------ */

static void snap_id(char id[32])
{
	unsigned char rnd[8] = {0};
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		for (size_t i = 0; i < sizeof(rnd); i++) /* never reached on Linux >= 3.17 for 8 bytes */
			rnd[i] = (unsigned char)(sbm_now_ms() >> (i * 8));
	snprintf(id, 32, "snap-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5],
		 rnd[6], rnd[7]);
}

/* The record of a snapshot of s standing on layers, of st's files. */
static json_t *record_of(struct sbm *m, const struct srv_op *op, const struct sbx *s, const char *id, json_t *layers,
			 const struct wsm_stats *st)
{
	json_t *meta = json_loads(op->meta_json ? op->meta_json : "{}", 0, NULL);
	char ref[SBX_IMAGE_REF];
	const char *image = sbx_image_ref(s, ref);
	return json_pack("{s:i,s:s,s:o,s:s,s:s,s:I,s:I,s:I,s:s,s:o,s:{s:I,s:I,s:I,s:I,s:I},s:o,s:O}", "version",
			 SNAP_VERSION, "id", id, "name", op->snap_name ? json_string(op->snap_name) : json_null(),
			 "owner", op->owner, "sandbox_id", s->id, "created_unix_ms",
			 (json_int_t)sbm_wall_ms(m, sbm_now_ms()), "bytes", (json_int_t)st->stored, "entries",
			 (json_int_t)st->entries, "profile", s->profile, "image",
			 image ? json_string(image) : json_null(), "limits", "memory_bytes",
			 (json_int_t)s->lim.memory_bytes, "milli_cpus", (json_int_t)s->lim.milli_cpus, "pids",
			 (json_int_t)s->lim.pids, "disk_bytes", (json_int_t)s->lim.disk_bytes, "timeout_ms",
			 (json_int_t)s->lim.timeout_ms, "metadata", meta ? meta : json_object(), "layers", layers);
}

/* Under snap_mu: owner may keep one more snapshot of bytes (the count checked before the freeze,
 * the bytes after it, when they are known). */
static int quota_ok(struct sbm *m, const char *owner, uint64_t more, bool counting, struct al_error *err)
{
	const struct cfg_server *c = &m->o.cfg->server;
	unsigned max = c->quota_snapshots ? c->quota_snapshots : CFG_QUOTA_SNAPSHOTS;
	uint64_t cap = c->quota_snapshot_bytes == AL_UNLIMITED ? 0 : c->quota_snapshot_bytes, bytes = 0;
	unsigned n = owned_locked(m, owner, &bytes);
	const char *who = owner[0] ? owner : "this client";
	if (counting && n >= max)
		return al_err(err, EAGAIN,
			      "quota reached: %s keeps %u snapshots (server.quota.snapshots): delete one first", who,
			      max);
	uint64_t would = bytes + more;
	if (!counting && cap && would > cap)
		return al_err(
			err, EAGAIN,
			"quota reached: %s's snapshots would hold %llu bytes, more than server.quota.snapshot_bytes "
			"(%llu): delete one first",
			who, (unsigned long long)would, (unsigned long long)cap);
	return 0;
}

/* Under snap_mu: the snapshot of s made, kept and listed; *rec its record (the table's). */
static int make_locked(struct sbm *m, struct srv_op *op, struct sbx *s, json_t **rec, struct al_error *err)
{
	int r = quota_ok(m, op->owner, 0, true, err);
	if (r == 0 && !s->box)
		r = al_err(err, ENOTSUP, "sandbox %s is not kept in the state directory: it cannot be snapshotted",
			   s->id);
	json_t *layers = NULL;
	struct wsm_stats st = {0};
	/* Synced first: what its background processes wrote since its last call is in it. */
	r = r ?: sbp_freeze(m, s, SNAP_ROOM, "this snapshot (its record and directories)", &layers, &st, err);
	r = r ?: quota_ok(m, op->owner, st.stored, false, err);
	char id[32];
	snap_id(id);
	json_t *o = r == 0 ? record_of(m, op, s, id, layers, &st) : NULL;
	if (r == 0 && !o)
		r = al_err(err, ENOMEM, "out of memory");
	/* On disk before it is listed or answered: a snapshot its owner was told of outlives any crash. */
	r = r ?: pst_snap_save(m->pst, id, o, err);
	if (r == 0)
		sbp_pin_image(m, id, s->image_digest, true);
	if (r == 0 && json_object_set(m->snaps, id, o) < 0) {
		(void)pst_snap_remove(m->pst, id, NULL);
		r = al_err(err, ENOMEM, "out of memory");
	}
	json_decref(o);
	if (r < 0 && layers) { /* the references sbp_freeze took for it: a refused snapshot holds nothing */
		sbp_unfreeze(s, layers);
		pst_layers_unref(m->pst, layers);
	}
	json_decref(layers);
	*rec = r == 0 ? json_object_get(m->snaps, id) : NULL;
	return r;
}

static void *snap_thread(void *arg)
{
	struct srv_op *op = arg;
	struct sbm *m = op->m;
	struct al_error err = {0};
	struct srv_result *res = NULL;
	struct sbx *s = sbx_get(m, op->sandbox_id, op->owner, &err);
	int r = s ? 0 : -ENOENT;
	json_t *rec = NULL, *o = NULL;
	pthread_mutex_lock(&m->snap_mu);
	r = r ?: make_locked(m, op, s, &rec, &err);
	o = r == 0 ? public_of(rec) : NULL;
	pthread_mutex_unlock(&m->snap_mu);
	if (r == 0 && (!o || !(res = srv_result_new()) || !(res->snapshot_json = json_dumps(o, JSON_COMPACT))))
		r = al_err(&err, ENOMEM, "out of memory");
	json_decref(o);
	if (r == 0)
		fprintf(stderr, "airlock serve: snapshot %s of sandbox %s taken for %s\n", str(rec, "id"), s->id,
			op->owner[0] ? op->owner : "(none)");
	/* The sandbox's files were only read (and synced by the freeze): nothing more to sync. */
	if (s)
		sbx_put(m, s);
	op_end(op, NULL, r, &err, res);
	return NULL;
}

static int start_create(struct sbm *m, const struct srv_snapshot_req *req, const struct srv_sink *sink,
			struct srv_op **out, struct al_error *err)
{
	if (!req->sandbox_id)
		return al_err(err, EINVAL, "a snapshot needs the sandbox_id of the sandbox to snapshot");
	int r = no_store(m, err);
	r = r ?: sbx_known(m, req->sandbox_id, req->owner, err);
	if (r < 0)
		return r;
	size_t nl = req->name ? strlen(req->name) : 0;
	if (req->name && (nl == 0 || nl > SRV_SNAP_NAME_MAX || !txt_utf8_valid(req->name, nl)))
		return al_err(err, EINVAL, "name: 1 to %d bytes of UTF-8 text", SRV_SNAP_NAME_MAX);
	/* Its labels checked as a create's, before anything is frozen. */
	struct srv_create_req cq = {.owner = req->owner,
				    .metadata_keys = req->metadata_keys,
				    .metadata_values = req->metadata_values,
				    .n_metadata = req->n_metadata};
	char *meta = NULL;
	if ((r = life_check_create(m, &cq, &meta, err)) < 0)
		return r;
	struct srv_op *op = op_new(m, OP_SNAPSHOT, sink);
	if (!op) {
		free(meta);
		return al_err(err, ENOMEM, "out of memory");
	}
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->meta_json = meta;
	op->sandbox_id = strdup(req->sandbox_id);
	op->snap_name = req->name ? strdup(req->name) : NULL;
	if (!op->sandbox_id || (req->name && !op->snap_name)) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
	return op_start_thread(m, op, snap_thread, out, err);
}

/* ---- the others: finished in the start call ---------------------------------------------------- */

static int snap_list(struct sbm *m, const char *owner, const struct srv_sink *sink, struct srv_op **out,
		     struct al_error *err)
{
	json_t *a = json_array();
	pthread_mutex_lock(&m->snap_mu);
	const char *id;
	json_t *rec;
	json_object_foreach(m->snaps, id, rec) {
		const char *o = str(rec, "owner");
		if (a && o && strcmp(o, owner) == 0 && json_array_append_new(a, public_of(rec)) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	pthread_mutex_unlock(&m->snap_mu);
	return answer(sink, out, a ? json_pack("{s:o}", "snapshots", a) : NULL, err);
}

json_t *sbm_snapshots_all(struct sbm *m)
{
	json_t *a = json_array();
	pthread_mutex_lock(&m->snap_mu);
	const char *id;
	json_t *rec;
	json_object_foreach(m->snaps, id, rec) {
		json_t *o = a ? public_of(rec) : NULL;
		if (o && json_object_set_new(o, "owner", json_string(str(rec, "owner") ? str(rec, "owner") : "")) < 0) {
			json_decref(o);
			o = NULL;
		}
		if (a && (!o || json_array_append_new(a, o) < 0)) {
			json_decref(a);
			a = NULL;
		}
	}
	pthread_mutex_unlock(&m->snap_mu);
	return a;
}

static int snap_get(struct sbm *m, const char *owner, const char *id, const struct srv_sink *sink, struct srv_op **out,
		    struct al_error *err)
{
	pthread_mutex_lock(&m->snap_mu);
	json_t *rec = find_locked(m, owner, id);
	json_t *o = rec ? public_of(rec) : NULL;
	pthread_mutex_unlock(&m->snap_mu);
	if (!rec)
		return al_err(err, ENOENT, "no snapshot \"%s\"", id ? id : "");
	return answer(sink, out, o ? json_pack("{s:[o]}", "snapshots", o) : NULL, err);
}

static int snap_delete(struct sbm *m, const char *owner, const char *id, const struct srv_sink *sink,
		       struct srv_op **out, struct al_error *err)
{
	pthread_mutex_lock(&m->snap_mu);
	json_t *rec = find_locked(m, owner, id);
	int r = rec ? 0 : al_err(err, ENOENT, "no snapshot \"%s\"", id ? id : "");
	/* Its record off the disk first: a crash after it leaves only a layer nobody names. */
	r = r ?: pst_snap_remove(m->pst, id, err);
	json_t *layers = r == 0 ? json_incref(json_object_get(rec, "layers")) : NULL;
	if (r == 0)
		json_object_del(m->snaps, id);
	pthread_mutex_unlock(&m->snap_mu);
	if (r < 0)
		return r;
	/* The last of the sandboxes and snapshots standing on a layer removes it. */
	if (layers)
		pst_layers_unref(m->pst, layers);
	json_decref(layers);
	return answer(sink, out, json_pack("{s:s,s:b}", "snapshot_id", id, "deleted", 1), err);
}

int sbm_snapshot(void *ctx, const struct srv_snapshot_req *req, const struct srv_sink *sink, struct srv_op **out,
		 struct al_error *err)
{
	struct sbm *m = ctx;
	const char *owner = req->owner ? req->owner : "";
	switch (req->action) {
	case SRV_SNAP_CREATE:
		return start_create(m, req, sink, out, err);
	case SRV_SNAP_LIST:
		return snap_list(m, owner, sink, out, err); /* none without a state directory: an empty list */
	case SRV_SNAP_GET:
		return snap_get(m, owner, req->snapshot_id, sink, out, err);
	case SRV_SNAP_DELETE:
		return no_store(m, err) ?: snap_delete(m, owner, req->snapshot_id, sink, out, err);
	}
	return al_err(err, EINVAL, "unknown snapshot action");
}

/* ---- a create from one ----------------------------------------------------------------------- */

int sbs_for_create(struct sbm *m, struct srv_op *op, const char *id, struct al_error *err)
{
	int r = no_store(m, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&m->snap_mu);
	json_t *rec = find_locked(m, op->owner, id);
	json_t *layers = rec ? json_deep_copy(json_object_get(rec, "layers")) : NULL;
	const json_t *lim = json_object_get(rec, "limits");
	const char *profile = str(rec, "profile"), *image = str(rec, "image");
	if (!rec)
		r = al_err(err, ENOENT, "no snapshot \"%s\"", id);
	else if (!json_array_size(layers))
		r = al_err(err, EINVAL, "snapshot %s's record names no layer", id);
	/* Referenced while the sandbox is made: a deletion meanwhile cannot take its files away. */
	else if (pst_layers_ref(m->pst, layers) < 0)
		r = al_err(err, ENOMEM, "out of memory");
	if (r == 0 && !op->profile && profile && !(op->profile = strdup(profile)))
		r = -ENOMEM;
	/* The snapshot's image only with its profile: another profile offers its own images. */
	if (r == 0 && !op->image && image && strcmp(op->profile ? op->profile : "", profile ? profile : "") == 0 &&
	    !(op->image = strdup(image)))
		r = -ENOMEM;
	pthread_mutex_unlock(&m->snap_mu);
	if (r < 0) {
		if (r == -ENOMEM)
			al_err(err, ENOMEM, "out of memory");
		json_decref(layers);
		return r;
	}
	op->layers = layers; /* op_free lets the references go */
	struct srv_limits *l = &op->limits;
	l->memory_bytes = l->memory_bytes ? l->memory_bytes : num(lim, "memory_bytes");
	l->milli_cpus = l->milli_cpus ? l->milli_cpus : (uint32_t)num(lim, "milli_cpus");
	l->pids = l->pids ? l->pids : (uint32_t)num(lim, "pids");
	l->disk_bytes = l->disk_bytes ? l->disk_bytes : num(lim, "disk_bytes");
	l->timeout_ms = l->timeout_ms ? l->timeout_ms : num(lim, "timeout_ms");
	return 0;
}

/* ---- after a restart ------------------------------------------------------------------------- */

void sbs_load(struct sbm *m)
{
	struct al_error err = {0};
	json_t *recs = NULL;
	pthread_mutex_lock(&m->snap_mu);
	if (!m->snaps)
		m->snaps = json_object();
	if (m->snaps && pst_snap_list(m->pst, &recs, &err) < 0)
		fprintf(stderr, "airlock serve: %s\n", err.msg);
	size_t i;
	json_t *rec;
	json_array_foreach(recs, i, rec) {
		const char *id = str(rec, "id"), *owner = str(rec, "owner");
		const json_t *layers = json_object_get(rec, "layers");
		/* Its layers held whatever else it says: nothing a record names is removed. */
		if (pst_layers_ref(m->pst, layers) < 0) {
			fprintf(stderr, "airlock serve: snapshot %s: out of memory\n", id ? id : "(no id)");
			continue;
		}
		/* A record from another version, or incomplete: not offered, left on disk as it is. */
		if (!id || !owner || !json_array_size(layers) || !str(rec, "profile"))
			fprintf(stderr, "airlock serve: snapshot %s: its record is incomplete: left as it is\n",
				id ? id : "(no id)");
		else if (json_object_set(m->snaps, id, rec) < 0)
			fprintf(stderr, "airlock serve: snapshot %s: out of memory\n", id);
	}
	pthread_mutex_unlock(&m->snap_mu);
	json_decref(recs);
}
