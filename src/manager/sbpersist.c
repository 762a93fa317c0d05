/* sbpersist.c — sandboxes that outlive the server: each client's sandbox has a record and a mirror
 * of its workspace in the state directory (persist.h); a call that may have changed its files syncs
 * the mirror before its result is sent; a stop of the server keeps them all (a last sync, the time
 * of the stop); the next server with the same directory makes each again, under the same id for
 * the same owner, with its files, metadata and the lifetime it had left.
 *
 * What does not survive: processes and interpreter contexts (their memory); the record names the
 * contexts, so the first cell of each after the restart says its state was lost. What the clock does: a
 * graceful stop stops a sandbox's lifetime clock until the restart; after a crash, the time the
 * server was down counts (its end is a wall-clock time). */
#include "manager/sbmint.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "manager/context.h"
#include "manager/persist.h"
#include "manager/wsmirror.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"

static uint64_t wall_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The pause part of the record (sbpause.c): its state, since when and by whom, create's options,
 * and where its lifetime clock stopped (wall clock; 0 while it runs). Under m->mu. */
static json_t *pause_record_locked(struct sbm *m, const struct sbx *s)
{
	bool stopped = s->paused && !s->lifetime_runs_paused;
	return json_pack("{s:s,s:b,s:I,s:s,s:b,s:b,s:b,s:I}", "state", s->paused ? "paused" : "running", "on_disk",
			 s->on_disk, "paused_unix_ms", (json_int_t)(s->paused ? sbm_wall_ms(m, s->paused_ms) : 0),
			 "paused_by", s->paused ? s->paused_by : "", "auto_pause", s->auto_pause,
			 "lifetime_runs_paused", s->lifetime_runs_paused, "lifetime_restart", s->lifetime_restart,
			 "clock_stopped_unix_ms", (json_int_t)(stopped ? sbm_wall_ms(m, s->clock_stop_ms) : 0));
}

static json_t *record_of(struct sbm *m, struct sbx *s, uint64_t stopped_unix_ms)
{
	pthread_mutex_lock(&m->mu);
	uint64_t ends = s->ends_ms ? sbm_wall_ms(m, s->ends_ms) : 0, lifetime = s->lifetime_ms;
	json_t *ctxs = s->ctx_names ? json_incref(s->ctx_names) : json_array();
	json_t *pause = pause_record_locked(m, s);
	pthread_mutex_unlock(&m->mu);
	/* The layers its workspace stands on: its mirror holds only what it changed above them. */
	if (pause && json_object_set_new(pause, "layers", s->layers ? json_incref(s->layers) : json_array()) < 0) {
		json_decref(pause);
		pause = NULL;
	}
	json_t *meta = json_loads(s->meta_json ? s->meta_json : "{}", 0, NULL);
	char ref[SBX_IMAGE_REF];
	json_t *rec = json_pack("{s:i,s:s,s:s,s:s,s:s?,s:b,s:s,s:{s:I,s:I,s:I,s:I,s:I},s:I,s:o,s:o,s:I,s:I,s:I,s:I}",
				"version", 1, "id", s->id, "owner", s->owner, "profile", s->profile, "image",
				sbx_image_ref(s, ref), "network", s->network, "hosts", s->net_hosts ? s->net_hosts : "",
				"limits", "memory_bytes", (json_int_t)s->lim.memory_bytes, "milli_cpus",
				(json_int_t)s->lim.milli_cpus, "pids", (json_int_t)s->lim.pids, "disk_bytes",
				(json_int_t)s->lim.disk_bytes, "timeout_ms", (json_int_t)s->lim.timeout_ms,
				"disk_limit", (json_int_t)s->disk_bytes, "metadata", meta ? meta : json_object(),
				"contexts", ctxs ? ctxs : json_array(), "created_unix_ms",
				(json_int_t)sbm_wall_ms(m, s->created_ms), "ends_unix_ms", (json_int_t)ends,
				"lifetime_ms", (json_int_t)lifetime, "stopped_unix_ms", (json_int_t)stopped_unix_ms);
	if (rec && (!pause || json_object_update(rec, pause) < 0)) {
		json_decref(rec);
		rec = NULL;
	}
	json_decref(pause);
	return rec;
}

static void save(struct sbm *m, struct sbx *s, uint64_t stopped)
{
	struct al_error err = {0};
	json_t *rec = record_of(m, s, stopped);
	if (!rec || pst_box_save(s->box, rec, &err) < 0)
		fprintf(stderr, "airlock serve: sandbox %s: %s\n", s->id, rec ? err.msg : "out of memory");
	json_decref(rec);
}

void sbp_pin_image(struct sbm *m, const char *id, const char *digest, bool snapshot)
{
	char holder[PATH_MAX];
	struct al_error err = {0};
	if (!m->pst || !digest || !*digest)
		return;
	int r = pst_record_path(m->pst, id, snapshot, holder, sizeof(holder));
	r = r < 0 ? al_err(&err, -r, "a path too long") : pol_image_pin(digest, id, holder, &err);
	if (r < 0) /* said, not fatal: only a removal of the image while no server runs is not stopped */
		fprintf(stderr, "airlock serve: %s: the image store does not keep its image %s for it: %s\n", id,
			digest, err.msg);
}

int sbp_keep(struct sbm *m, struct sbx *s, struct al_error *err)
{
	if (m->pst_broken) {
		if (err)
			*err = m->pst_err;
		return m->pst_err.code < 0 ? m->pst_err.code : -EIO;
	}
	if (!m->pst || s->box)
		return 0;
	struct pst_box *b = NULL;
	int r = pst_box_make(m->pst, s->id, s->disk_bytes, &b, err);
	if (r < 0)
		return r;
	s->box = b;
	json_t *rec = record_of(m, s, 0);
	r = pst_box_layers(b, s->layers, err);
	r = r ?: rec ? pst_box_save(b, rec, err) : al_err(err, ENOMEM, "out of memory");
	json_decref(rec);
	if (r < 0) {
		pst_box_close(b, true);
		s->box = NULL;
	} else {
		sbp_pin_image(m, s->id, s->image_digest, false);
	}
	return r;
}

void sbp_save(struct sbm *m, struct sbx *s)
{
	if (s->box)
		save(m, s, 0);
}

void sbp_contexts(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	struct ctx_set *cs = s->box ? s->ctxs : NULL;
	pthread_mutex_unlock(&m->mu);
	if (!cs)
		return;
	unsigned gen = 0;
	json_t *names = ctx_set_names(cs, &gen);
	pthread_mutex_lock(&m->mu);
	bool changed = names && (gen != s->ctx_gen || !s->ctx_names);
	if (changed) {
		json_decref(s->ctx_names);
		s->ctx_names = names;
		s->ctx_gen = gen;
		names = NULL;
	}
	pthread_mutex_unlock(&m->mu);
	json_decref(names);
	if (changed)
		save(m, s, 0);
}

int sbp_sync_checked(struct sbm *m, struct sbx *s, struct al_error *err)
{
	(void)m;
	if (!s->box || !s->sb) /* not kept; or paused to disk: synced when it was, nothing runs there since */
		return 0;
	struct al_error e = {0};
	/* Over layers, what it changed is its upper layer, all the mirror keeps. */
	int ws = s->layers ? al_sandbox_upper(s->sb) : al_sandbox_workspace(s->sb);
	int r = pst_box_sync(s->box, ws, NULL, &e);
	if (r < 0) {
		fprintf(stderr, "airlock serve: sandbox %s: %s\n", s->id, e.msg);
		if (err)
			*err = e;
	}
	return r;
}

void sbp_sync(struct sbm *m, struct sbx *s)
{
	(void)sbp_sync_checked(m, s, NULL);
}

int sbp_fork_files(struct sbm *m, struct sbx *p, struct sbx *c, struct wsm_stats *st, struct al_error *err)
{
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(c->sb, &uid, &gid);
	if (!p->box || !c->box) {
		int r = wsm_copy(al_sandbox_workspace(p->sb), al_sandbox_workspace(c->sb), uid, gid, st, err);
		if (r == 0)
			sbp_sync(m, c);
		return r;
	}
	/* The parent's mirror brought up to date (what its background processes wrote since its last
	 * call), then shared: the child's mirror links its files, and the workspace is filled from
	 * there, so nothing is written to disk but directories and links. */
	sbp_sync(m, p);
	int r = pst_box_seed(c->box, p->box, err);
	return r ?: pst_box_restore(c->box, al_sandbox_workspace(c->sb), uid, gid, st, err);
}

int sbp_freeze(struct sbm *m, struct sbx *s, uint64_t room, const char *what, json_t **layers, struct wsm_stats *st,
	       struct al_error *err)
{
	*layers = NULL;
	if (!s->box)
		return 0;
	/* Refused before anything is frozen: a call the state directory cannot hold makes no layer. */
	int r = pst_room(m->pst, room, what, err);
	if (r < 0)
		return r;
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(s->sb, &uid, &gid);
	/* Up to date first: what its background processes wrote since its last call is in it. */
	sbp_sync(m, s);
	char id[PST_LAYER_ID];
	r = pst_layer_freeze(s->box, uid, gid, id, st, err);
	json_t *a = r < 0 ? NULL : json_array();
	if (r == 0 && (!a || json_array_append_new(a, json_string(id)) < 0 ||
		       (s->layers && json_array_extend(a, s->layers) < 0) || pst_layers_ref(m->pst, a) < 0)) {
		json_decref(a);
		return al_err(err, ENOMEM, "out of memory");
	}
	*layers = a;
	return r;
}

void sbp_unfreeze(struct sbx *s, const json_t *layers)
{
	if (s->box && layers)
		pst_layer_forget(s->box, json_string_value(json_array_get(layers, 0)));
}

void sbp_release(struct sbx *s)
{
	if (!s->box)
		return;
	bool keep = s->end == SBX_END_STOPPING;
	if (keep) {
		sbp_sync(s->m, s);
		save(s->m, s, wall_now_ms());
	}
	pst_box_close(s->box, !keep);
	s->box = NULL;
}

/* ---- bringing them back ------------------------------------------------------------------- */

static uint64_t num(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Its lifetime left (ms; 0: none), or -1 when it ran out while the server was down. Paused, its
 * clock stood still from its pause on (clock_stopped_unix_ms), whatever the server did after. */
static int64_t left(const json_t *rec)
{
	uint64_t ends = num(rec, "ends_unix_ms"), stopped = num(rec, "stopped_unix_ms");
	uint64_t clock = num(rec, "clock_stopped_unix_ms");
	if (!ends)
		return 0;
	uint64_t from = clock ? clock : stopped ? stopped : wall_now_ms();
	return ends > from ? (int64_t)(ends - from) : -1;
}

/* The pause part of rec onto s, brought back: paused, not frozen (nothing runs in it yet); its
 * lifetime clock stopped from now, as it was. */
static void pause_restore(struct sbm *m, struct sbx *s, const json_t *rec)
{
	const char *state = str(rec, "state"), *by = str(rec, "paused_by");
	uint64_t now = sbm_now_ms(), at = num(rec, "paused_unix_ms"), wall = wall_now_ms();
	s->auto_pause = json_is_true(json_object_get(rec, "auto_pause"));
	s->lifetime_runs_paused = json_is_true(json_object_get(rec, "lifetime_runs_paused"));
	if (!state || strcmp(state, "paused") != 0)
		return;
	s->paused = true;
	s->frozen = false;
	s->lifetime_restart = json_is_true(json_object_get(rec, "lifetime_restart"));
	s->paused_ms = at && wall > at && now > wall - at ? now - (wall - at) : now;
	s->clock_stop_ms = now;
	snprintf(s->paused_by, sizeof(s->paused_by), "%s", by ? by : "owner");
	(void)m;
}

/* Makes the sandbox rec describes again, its workspace filled from b: 0, or -errno (err). */
/* The contexts the sandbox had, made again without kernels (ctx_set_lost); names that are not
 * (a record from another version) are passed over. */
static int lost_contexts(struct sbx *s, const json_t *names, bool to_disk, struct al_error *err)
{
	if (!json_array_size(names))
		return 0;
	if (ctx_set_new(&s->ctxs) < 0)
		return al_err(err, ENOMEM, "out of memory");
	size_t i;
	const json_t *c;
	json_array_foreach(names, i, c)
		if (ctx_set_lost(s->ctxs, str(c, "context_id"), str(c, "language"), to_disk) == -ENOMEM)
			return al_err(err, ENOMEM, "out of memory");
	s->ctx_names = ctx_set_names(s->ctxs, &s->ctx_gen);
	return 0;
}

void sbp_contexts_lost(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	struct ctx_set *old = s->ctxs;
	json_t *names = s->ctx_names ? json_incref(s->ctx_names) : NULL;
	s->ctxs = NULL;
	pthread_mutex_unlock(&m->mu);
	ctx_set_free(old); /* their kernels end here, with what they held in memory */
	struct sbx t = {0};
	struct al_error err = {0};
	if (lost_contexts(&t, names, true, &err) < 0)
		fprintf(stderr, "airlock serve: sandbox %s: its contexts: %s\n", s->id, err.msg);
	json_decref(names);
	pthread_mutex_lock(&m->mu);
	s->ctxs = t.ctxs;
	if (t.ctx_names) {
		json_decref(s->ctx_names);
		s->ctx_names = t.ctx_names;
		s->ctx_gen = t.ctx_gen;
	}
	pthread_mutex_unlock(&m->mu);
}

int sbp_remake(struct sbm *m, struct sbx *s, struct al_sandbox **sb, struct al_error *err)
{
	struct sbx *t = NULL;
	/* As it was made (sbx_make_now): its profile, image (the same content, by digest), network and
	 * limits, over its layers. */
	char ref[SBX_IMAGE_REF];
	int r = sbx_new_layered(m, s->owner, s->profile, sbx_image_ref(s, ref), s->network, s->net_hosts, &s->lim,
				s->layers, &t, err);
	if (r < 0)
		return r;
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(t->sb, &uid, &gid);
	struct wsm_stats st;
	r = pst_box_restore(s->box, al_sandbox_workspace(t->sb), uid, gid, &st, err);
	if (r == 0) {
		*sb = t->sb;
		t->sb = NULL;
		/* The new sandbox's CA and placeholders are what its environment names: an exec with
		 * network must get those (s's old ones go with t). */
		struct tls_ca *ca = s->tls_ca;
		struct al_secrets *sec = s->secrets;
		s->tls_ca = t->tls_ca;
		s->secrets = t->secrets;
		t->tls_ca = ca;
		t->secrets = sec;
		fprintf(stderr, "airlock serve: sandbox %s of %s is back from disk (%llu entries, %llu bytes)\n", s->id,
			s->owner[0] ? s->owner : "(none)", (unsigned long long)st.entries,
			(unsigned long long)st.bytes);
	}
	sbx_free(t); /* its shell: what it was made with is s's too */
	return r;
}

static int remake(struct sbm *m, struct pst_box *b, const json_t *rec, struct sbx **out, struct al_error *err)
{
	const json_t *l = json_object_get(rec, "limits");
	struct srv_limits lim = {.memory_bytes = num(l, "memory_bytes"),
				 .milli_cpus = (uint32_t)num(l, "milli_cpus"),
				 .pids = (uint32_t)num(l, "pids"),
				 .disk_bytes = num(l, "disk_bytes"),
				 .timeout_ms = num(l, "timeout_ms")};
	const char *profile = str(rec, "profile"), *id = str(rec, "id"), *owner = str(rec, "owner");
	if (!profile || !id || !owner || strlen(id) > SBM_ID_LEN)
		return al_err(err, EINVAL, "its record is incomplete");
	struct sbx *s = NULL;
	const json_t *layers = json_object_get(rec, "layers");
	int r = sbx_new_layered(m, owner, profile, str(rec, "image"), json_is_true(json_object_get(rec, "network")),
				str(rec, "hosts"), &lim, json_array_size(layers) ? layers : NULL, &s, err);
	if (r < 0)
		return r;
	snprintf(s->id, sizeof(s->id), "%s", id);
	sbx_set_owner(s, owner);
	cleanup_free char *meta = json_dumps(json_object_get(rec, "metadata"), JSON_COMPACT);
	free(s->meta_json);
	s->meta_json = meta && strcmp(meta, "{}") != 0 ? steal_ptr(meta) : NULL;
	int64_t rest = left(rec);
	uint64_t now = sbm_now_ms(), stopped = num(rec, "stopped_unix_ms"), born = num(rec, "created_unix_ms");
	uint64_t age =
		born && (stopped ? stopped : wall_now_ms()) > born ? (stopped ? stopped : wall_now_ms()) - born : 0;
	s->created_ms = now > age ? now - age : 0;
	s->ends_ms = rest > 0 ? now + (uint64_t)rest : 0;
	s->lifetime_ms = num(rec, "lifetime_ms");
	pause_restore(m, s, rec);
	/* Paused to disk, it stays so: made (which tells whether this configuration still can), then
	 * released again; its next call makes it again from its files (sbx_back). */
	bool disk = s->paused && json_is_true(json_object_get(rec, "on_disk"));
	r = lost_contexts(s, json_object_get(rec, "contexts"), disk, err);
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(s->sb, &uid, &gid);
	struct wsm_stats st = {0};
	/* Filled even so: the restore is what counts the bytes its mirror holds (the state
	 * directory's room, its stored_bytes). */
	r = r ?: pst_box_restore(b, al_sandbox_workspace(s->sb), uid, gid, &st, err);
	if (r == 0 && disk) {
		al_sandbox_destroy(s->sb);
		s->sb = NULL;
		s->on_disk = true;
	}
	if (r == 0) {
		s->box = b;
		const char *how = disk ? ", paused to disk" : s->paused ? ", paused" : "";
		fprintf(stderr, "airlock serve: sandbox %s of %s is back%s (%llu entries, %llu bytes)\n", s->id,
			s->owner[0] ? s->owner : "(none)", how, (unsigned long long)st.entries,
			(unsigned long long)st.bytes);
	}
	if (r < 0) {
		sbx_free(s);
		return r;
	}
	*out = s;
	return 0;
}

static void bring_back(struct sbm *m, const char *id)
{
	struct al_error err = {0};
	struct pst_box *b = NULL;
	json_t *rec = NULL;
	int r = pst_box_open(m->pst, id, 0, &b, &rec, &err);
	/* Its layers are held from here, whether it comes back or stays on disk for a later server. */
	r = r ?: pst_box_layers(b, json_object_get(rec, "layers"), &err);
	if (r == 0 && left(rec) < 0) {
		fprintf(stderr, "airlock serve: sandbox %s reached its lifetime while the server was down: removed\n",
			id);
		pst_box_close(b, true);
		json_decref(rec);
		return;
	}
	struct sbx *s = NULL;
	r = r ?: remake(m, b, rec, &s, &err);
	r = r ?: sbx_list(m, s, &err);
	if (r < 0) {
		/* Nothing is lost: its state stays on disk for a server that can make it. */
		fprintf(stderr, "airlock serve: sandbox %s could not be brought back (its state stays in %s): %s\n", id,
			pst_path(m->pst), err.msg);
		/* Its owner is told why on each call that names it, rather than that it is unknown. */
		if (!m->held_back)
			m->held_back = json_object();
		const char *owner = json_string_value(json_object_get(rec, "owner"));
		if (m->held_back && owner)
			json_object_set_new(m->held_back, id, json_pack("{s:s,s:s}", "owner", owner, "why", err.msg));
		if (s)
			s->box = NULL; /* b is closed below, kept on disk */
		sbx_free(s);
		pst_box_close(b, false);
	} else if (s) {
		save(m, s, 0); /* from now on a crash counts from here */
		sbp_pin_image(m, s->id, s->image_digest, false);
	}
	json_decref(rec);
}

int sbp_open(struct sbm *m, const char *dir, struct al_error *err)
{
	if (!dir)
		return 0;
	struct al_error e = {0};
	int r = pst_open(dir, &m->pst, &e);
	json_t *ids = NULL;
	r = r ?: pst_list(m->pst, &ids, &e);
	if (r == -EBUSY) { /* another server's: two cannot share sandboxes */
		if (err)
			*err = e;
		return r;
	}
	if (r < 0) {
		/* Nowhere to keep sandboxes (read-only, no room, not ours): the server serves, and every
		 * create is refused with this reason rather than made as if it would be kept. */
		al_err(&m->pst_err, -r,
		       "%s: no sandbox can be kept, so none is made (choose another --state-dir, or "
		       "--state-dir none for sandboxes that end with the server)",
		       e.msg);
		m->pst_broken = true;
		fprintf(stderr, "airlock serve: %s\n", m->pst_err.msg);
		return 0;
	}
	/* The snapshots first: their layers are held before anything could remove one. */
	sbs_load(m);
	size_t i;
	json_t *v;
	json_array_foreach(ids, i, v) {
		bring_back(m, json_string_value(v));
	}
	json_decref(ids);
	int gone = pst_layers_gc(m->pst);
	if (gone > 0)
		fprintf(stderr, "airlock serve: %d layer%s that nothing stands on removed\n", gone,
			gone == 1 ? "" : "s");
	return 0;
}
