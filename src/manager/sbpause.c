/* sbpause.c — a held sandbox paused in place and resumed: its state (running|paused), who paused it
 * and when, its lifetime clock stopped meanwhile, auto_pause at idle_ttl or its lifetime's end, and
 * the resume that every call needing the sandbox makes first.
 *
 * Paused means every process of the sandbox is frozen by the cgroup freezer (al_sandbox_pause):
 * background processes and interpreter kernels included, their memory kept, no CPU used; a resume
 * thaws them where they were. A pause is refused (EBUSY) while a call holds the sandbox in the
 * foreground — an exec, a cell, a file or process call, a port connection being made (inuse) — so
 * nothing a client waits for is frozen under it; background processes are what it freezes. Calls
 * that only look (info, lists, a process's output captured so far, watch) find it paused and leave
 * it so. A pause or resume runs outside m->mu (the freezer takes milliseconds, its keeper a fork):
 * changing marks it under way and every other pause, resume or use waits for it on m->cv.
 *
 * The lifetime clock: paused, a sandbox's own lifetime stops (what was left is kept: its end moves
 * by the time it was paused) unless it was made with lifetime_runs_paused; the server's
 * max_lifetime always runs (the operator's cap on what any sandbox holds), and a paused sandbox is
 * never idle-expired. With auto_pause, idle_ttl or its own lifetime pause it instead of destroying
 * it (E2B's autoPause); paused at its lifetime's end, its lifetime starts again at the resume.
 * After a restart of the server a paused sandbox comes back paused, with its files (its processes
 * are gone, as every sandbox's are): not frozen, since nothing runs in it, and resumed by its first
 * use all the same.
 *
 * Paused to disk (to_disk): the sandbox's files are synced to its mirror and its record saved, and
 * its held sandbox is released — every process ended (background processes, interpreter kernels,
 * their memory), its cgroup, namespaces and tmpfs gone; it stays listed, paused, under its id and
 * within its owner's quotas. The first call that needs it (sbx_get), or a resume, makes a new held
 * sandbox as it was made and fills its workspace from the mirror (sbp_remake): its files and
 * metadata are what was kept, and the answers say so; its contexts' first cells say their state
 * was lost, as after a restart. Refused (EBUSY) while any call holds it, a watch included: nothing
 * a client waits on loses its sandbox under it. Memory checkpoints (CRIU) are not made here. */
#include "manager/sbmint.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/text.h"

/* Under m->mu: until no pause or resume of s is under way. */
static void wait_steady_locked(struct sbm *m, struct sbx *s)
{
	while (s->changing)
		pthread_cond_wait(&m->cv, &m->mu);
}

/* Under m->mu, s->changing set by the caller: s paused (frozen) by by. The lock is dropped while the
 * freezer works. */
static int pause_locked(struct sbm *m, struct sbx *s, const char *by, struct al_error *err)
{
	pthread_mutex_unlock(&m->mu);
	int r = al_sandbox_pause(s->sb, err);
	pthread_mutex_lock(&m->mu);
	/* Destroyed meanwhile: what its end killed must be able to die (sbx_unlist_locked). */
	if (r == 0 && !s->listed) {
		(void)al_sandbox_resume(s->sb, NULL);
		return al_err(err, ENOENT, "sandbox %s was destroyed while it was paused", s->id);
	}
	if (r == 0) {
		s->paused = s->frozen = true;
		s->paused_ms = s->clock_stop_ms = sbm_now_ms();
		snprintf(s->paused_by, sizeof(s->paused_by), "%s", by);
	}
	return r;
}

/* Under m->mu, s->changing set: s thawed (when frozen), its lifetime clock going again. */
static int resume_locked(struct sbm *m, struct sbx *s, struct al_error *err)
{
	int r = 0;
	if (s->frozen) {
		pthread_mutex_unlock(&m->mu);
		r = al_sandbox_resume(s->sb, err);
		pthread_mutex_lock(&m->mu);
	}
	if (r < 0)
		return r;
	uint64_t now = sbm_now_ms();
	if (s->lifetime_restart && s->lifetime_ms)
		s->ends_ms = now + s->lifetime_ms; /* auto-paused at its end: a new lifetime from here */
	else if (s->ends_ms && !s->lifetime_runs_paused && now > s->clock_stop_ms)
		s->ends_ms += now - s->clock_stop_ms; /* the time paused did not count */
	s->paused = s->frozen = s->lifetime_restart = false;
	s->paused_by[0] = '\0';
	s->used_ms = now;		/* idle from the resume on */
	pthread_cond_signal(&m->hk_cv); /* its deadlines are back */
	return 0;
}

/* Under m->mu: whether a call that needs s running holds it; err names it. */
static bool held_locked(const struct sbx *s, struct al_error *err)
{
	if (!s->inuse && !s->runs)
		return false;
	al_err(err, EBUSY,
	       "sandbox %s is running %u call%s in the foreground (an exec, a cell, a file or process call): a pause "
	       "would freeze what its client waits for; pause it once %s ended",
	       s->id, s->inuse ? s->inuse : 1, s->inuse > 1 ? "s" : "", s->inuse > 1 ? "they have" : "it has");
	return true;
}

struct sbx *sbx_use(struct sbm *m, const char *id, const char *owner, bool *resumed, struct al_error *err)
{
	struct sbx *s = sbx_get(m, id, owner, err);
	return s && sbx_wake(m, s, resumed, err) == 0 ? s : NULL;
}

int sbx_wake(struct sbm *m, struct sbx *s, bool *resumed, struct al_error *err)
{
	pthread_mutex_lock(&m->mu);
	wait_steady_locked(m, s);
	int r = 0;
	bool woke = false;
	if (s->paused && s->listed) {
		s->changing = true;
		r = resume_locked(m, s, err);
		s->changing = false;
		pthread_cond_broadcast(&m->cv);
		woke = r == 0;
	}
	if (r == 0)
		s->inuse++;
	pthread_mutex_unlock(&m->mu);
	if (woke && resumed)
		*resumed = true; /* (never cleared here: a call may ask twice, its first answer stands) */
	if (woke)
		sbp_save(m, s); /* running again, on disk too */
	if (r < 0) {
		al_err_prefix(err, "sandbox %s is paused and could not be resumed", s->id);
		sbx_put(m, s);
	}
	return r;
}

void sbx_unuse(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	if (s->inuse)
		s->inuse--;
	pthread_mutex_unlock(&m->mu);
}

void sbx_unuse_put(struct sbm *m, struct sbx *s)
{
	sbx_unuse(m, s);
	sbx_put(m, s);
}

/* ---- the calls ------------------------------------------------------------------------------ */

/* The answer of pause and resume: the state as it is now. */
static char *state_json(struct sbm *m, struct sbx *s, const char *freezer, double took_ms, bool changed, bool from_disk)
{
	pthread_mutex_lock(&m->mu);
	bool paused = s->paused, disk = s->on_disk;
	uint64_t at = s->paused_ms;
	char by[sizeof(s->paused_by)];
	memcpy(by, s->paused_by, sizeof(by));
	pthread_mutex_unlock(&m->mu);
	json_t *o =
		json_pack("{s:s,s:s,s:o,s:o,s:o,s:f,s:b}", "sandbox_id", s->id, "state", paused ? "paused" : "running",
			  "paused_at", paused ? txt_json_time(sbm_wall_ms(m, at)) : json_null(), "paused_by",
			  paused ? json_string(by) : json_null(), "freezer",
			  freezer ? json_string(freezer) : json_null(), "took_ms", took_ms, "changed", changed);
	/* Which state was kept: all of it in place; to disk (and back), its files and metadata only. */
	const char *released = disk || from_disk ? "its processes and their memory (background processes, "
						   "interpreter contexts' state) ended at the pause to disk"
						 : NULL;
	if (o && (json_object_set_new(o, "on_disk", json_boolean(disk)) < 0 ||
		  json_object_set_new(o, "kept",
				      json_string(disk || from_disk ? "files and metadata"
								    : "everything: files, processes, memory")) < 0 ||
		  json_object_set_new(o, "released", released ? json_string(released) : json_null()) < 0)) {
		json_decref(o);
		o = NULL;
	}
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

/* Who a pause is by, in the record and the answers: the owner, or an approver acting for it. */
static void by_words(const struct srv_pause_req *req, char *buf, size_t cap)
{
	if (req->by_approver)
		snprintf(buf, cap, "approver %s", req->by_approver);
	else
		snprintf(buf, cap, "owner");
}

static int finish(struct sbm *m, struct sbx *s, const struct srv_sink *sink, double took_ms, bool changed, bool resume,
		  bool from_disk, struct srv_op **out, struct al_error *err)
{
	const char *why = NULL;
	const char *freezer = s->sb ? al_sandbox_freezer(s->sb, &why) : NULL;
	struct srv_result *res = srv_result_new();
	if (res) {
		res->sandbox_id = strdup(s->id);
		res->state_json = state_json(m, s, freezer, took_ms, changed, from_disk);
		res->resumed = changed && resume;
	}
	if (changed)
		sbp_save(m, s); /* its state (and lifetime clock) kept */
	sbx_put(m, s);
	if (!res || !res->sandbox_id || !res->state_json) {
		srv_result_free(res);
		return al_err(err, ENOMEM, "out of memory");
	}
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

static uint64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

static double ms_since(uint64_t t0_us)
{
	return (double)(now_us() - t0_us) / 1000.0;
}

/* Under m->mu: why s cannot go to disk now (err set), or 0. */
static int disk_refused_locked(struct sbm *m, const struct sbx *s, struct al_error *err)
{
	if (!s->listed)
		return al_err(err, ENOENT, "no sandbox \"%s\" (never created, destroyed, or expired)", s->id);
	if (!s->box)
		return al_err(err, ENOTSUP,
			      "sandbox %s is not kept in a state directory (this server runs with --state-dir "
			      "none): it can be paused in place only",
			      s->id);
	if (held_locked(s, err))
		return -EBUSY;
	/* The table's reference, ours and one per background process (each ended here): any other is
	 * a call under way (a fork, a snapshot, a look at a process), which must not lose the sandbox
	 * under it. */
	if (s->refs > 2 + sbm_running_in(s) || s->nwatches)
		return al_err(err, EBUSY,
			      "sandbox %s is in use by another call or a watch: pause it to disk once that has "
			      "ended",
			      s->id);
	(void)m;
	return 0;
}

/* Under m->mu: until s's background processes (killed) have ended, at most 10 s. */
static int wait_procs_locked(struct sbm *m, struct sbx *s, struct al_error *err)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 10;
	while (sbm_running_in(s) > 0)
		if (pthread_cond_timedwait(&m->cv, &m->mu, &until) == ETIMEDOUT && sbm_running_in(s) > 0)
			return al_err(err, EBUSY, "sandbox %s: its background processes did not end within 10 s",
				      s->id);
	return 0;
}

static int to_disk(struct sbm *m, struct sbx *s, const char *by, const struct srv_sink *sink, uint64_t t0,
		   struct srv_op **out, struct al_error *err)
{
	pthread_mutex_lock(&m->mu);
	wait_steady_locked(m, s);
	bool already = s->on_disk;
	int r = already ? 0 : disk_refused_locked(m, s, err);
	if (r == 0 && !already) {
		s->changing = true;
		/* Its files on disk first: where they cannot be (no room left), nothing is released. */
		pthread_mutex_unlock(&m->mu);
		r = sbp_sync_checked(m, s, err);
		pthread_mutex_lock(&m->mu);
		if (r < 0)
			al_err_prefix(err, "sandbox %s was not paused to disk: its files could not be kept", s->id);
	}
	if (r == 0 && !already) {
		if (!s->paused) { /* paused from now: its lifetime clock stops as a pause's does */
			s->paused = true;
			s->paused_ms = s->clock_stop_ms = sbm_now_ms();
			snprintf(s->paused_by, sizeof(s->paused_by), "%s", by);
		}
		/* Thawed first: a frozen process dies only once it runs again (v1). */
		if (s->frozen) {
			pthread_mutex_unlock(&m->mu);
			(void)al_sandbox_resume(s->sb, NULL);
			pthread_mutex_lock(&m->mu);
			s->frozen = false;
		}
		sbproc_kill_all_locked(s);
		r = wait_procs_locked(m, s, err);
	}
	pthread_mutex_unlock(&m->mu);
	if (r == 0 && !already) {
		sbp_contexts_lost(m, s); /* their kernels end, their names stay */
		/* Its files as they are now, what its processes wrote last included; if they cannot all
		 * be kept, it stays held (paused, its processes ended) rather than lose them. */
		r = sbp_sync_checked(m, s, err);
		if (r < 0)
			al_err_prefix(err,
				      "sandbox %s: its processes ended, but its files could not be kept, so it stays "
				      "held (paused)",
				      s->id);
	}
	if (r == 0 && !already) {
		pthread_mutex_lock(&m->mu);
		struct al_sandbox *sb = s->sb;
		s->sb = NULL;
		s->on_disk = true;
		pthread_mutex_unlock(&m->mu);
		al_sandbox_destroy(sb); /* what is left of it: its init, cgroup, namespaces, tmpfs */
		fprintf(stderr,
			"airlock serve: sandbox %s of %s paused to disk by %s: its processes and memory released\n",
			s->id, s->owner[0] ? s->owner : "(none)", by);
	}
	if (!already) {
		pthread_mutex_lock(&m->mu);
		s->changing = false;
		pthread_cond_broadcast(&m->cv);
		pthread_mutex_unlock(&m->mu);
	}
	if (r < 0) {
		sbx_put(m, s);
		return r;
	}
	return finish(m, s, sink, ms_since(t0), !already, false, false, out, err);
}

int sbx_back(struct sbm *m, struct sbx *s, bool *back, struct al_error *err)
{
	pthread_mutex_lock(&m->mu);
	wait_steady_locked(m, s);
	bool go = s->on_disk && s->listed;
	if (go)
		s->changing = true;
	pthread_mutex_unlock(&m->mu);
	if (!go)
		return 0;
	struct al_sandbox *sb = NULL;
	int r = sbp_remake(m, s, &sb, err);
	pthread_mutex_lock(&m->mu);
	if (r == 0 && s->listed) {
		s->sb = sb; /* held again, paused (not frozen: nothing runs in it yet) */
		sb = NULL;
		s->on_disk = false;
		s->frozen = false;
	}
	s->changing = false;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	al_sandbox_destroy(sb); /* destroyed meanwhile */
	if (r < 0)
		al_err_prefix(err, "sandbox %s is paused to disk and could not be made again", s->id);
	else if (back)
		*back = true;
	if (r == 0)
		sbp_save(m, s);
	return r;
}

int sbm_pause(void *ctx, const struct srv_pause_req *req, const struct srv_sink *sink, struct srv_op **out,
	      struct al_error *err)
{
	struct sbm *m = ctx;
	struct sbx *s = sbx_find(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	char by[sizeof(s->paused_by)];
	by_words(req, by, sizeof(by));
	uint64_t t0 = now_us();
	if (req->to_disk)
		return to_disk(m, s, by, sink, t0, out, err);
	pthread_mutex_lock(&m->mu);
	/* Paused to disk already: paused, with nothing to freeze. */
	wait_steady_locked(m, s);
	int r = 0;
	bool changed = false;
	if (!s->listed)
		r = al_err(err, ENOENT, "no sandbox \"%s\" (never created, destroyed, or expired)", s->id);
	else if (!s->paused && !held_locked(s, err)) {
		s->changing = true;
		r = pause_locked(m, s, by, err);
		changed = r == 0;
		s->changing = false;
		pthread_cond_broadcast(&m->cv);
	} else if (!s->paused) {
		r = -EBUSY;
	}
	pthread_mutex_unlock(&m->mu);
	if (r < 0) {
		sbx_put(m, s);
		return r;
	}
	return finish(m, s, sink, ms_since(t0), changed, false, false, out, err);
}

int sbm_resume(void *ctx, const struct srv_pause_req *req, const struct srv_sink *sink, struct srv_op **out,
	       struct al_error *err)
{
	struct sbm *m = ctx;
	struct sbx *s = sbx_find(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	uint64_t t0 = now_us();
	bool back = false;
	if (sbx_back(m, s, &back, err) < 0) {
		sbx_put(m, s);
		return -EIO;
	}
	pthread_mutex_lock(&m->mu);
	wait_steady_locked(m, s);
	int r = 0;
	bool changed = false;
	if (!s->listed)
		r = al_err(err, ENOENT, "no sandbox \"%s\" (never created, destroyed, or expired)", s->id);
	else if (s->paused) {
		s->changing = true;
		r = resume_locked(m, s, err);
		changed = r == 0;
		s->changing = false;
		pthread_cond_broadcast(&m->cv);
	}
	pthread_mutex_unlock(&m->mu);
	if (r < 0) {
		sbx_put(m, s);
		return r;
	}
	return finish(m, s, sink, ms_since(t0), changed || back, true, back, out, err);
}

/* ---- auto_pause ----------------------------------------------------------------------------- */

bool pause_instead_locked(struct sbm *m, struct sbx *s, enum sbx_end why, struct sbx **list)
{
	(void)m;
	if (!s->auto_pause || s->paused || s->changing || s->pooled)
		return false;
	if (why != SBX_END_IDLE && why != SBX_END_LIFETIME)
		return false;
	/* A call in the foreground (an exec at its lifetime's end): not frozen under its client, nor
	 * destroyed; it is paused at a sweep after the call (the housekeeper's next, within a second). */
	if (s->inuse || s->runs)
		return true;
	s->changing = true; /* not swept again meanwhile */
	s->lifetime_restart = why == SBX_END_LIFETIME;
	snprintf(s->paused_by, sizeof(s->paused_by), "%s", why == SBX_END_IDLE ? "idle_ttl" : "lifetime");
	s->refs++;
	s->pause_next = *list;
	*list = s;
	return true;
}

void pause_list(struct sbm *m, struct sbx *list)
{
	while (list) {
		struct sbx *s = list, *next = s->pause_next;
		struct al_error err = {0};
		pthread_mutex_lock(&m->mu);
		char by[sizeof(s->paused_by)];
		memcpy(by, s->paused_by, sizeof(by));
		bool restart = s->lifetime_restart;
		/* Its own end passed: paused with it stopped, it would end again at the resume. */
		int r = s->listed ? pause_locked(m, s, by, &err) : 0;
		if (r == 0 && restart)
			s->ends_ms = 0;
		s->lifetime_restart = r == 0 && restart;
		s->changing = false;
		pthread_cond_broadcast(&m->cv);
		bool ended = false;
		if (r < 0)
			s->paused_by[0] = '\0';
		if (r < 0 && s->listed) {
			/* No freezer here: it ends as it would have without auto_pause. */
			fprintf(stderr, "airlock serve: sandbox %s: auto_pause failed, so it ends: %s\n", s->id,
				err.msg);
			sbx_end_locked(m, s, strcmp(by, "idle_ttl") == 0 ? SBX_END_IDLE : SBX_END_LIFETIME, NULL);
			m->st.expired++;
			ended = true;
		}
		pthread_mutex_unlock(&m->mu);
		if (r == 0)
			sbp_save(m, s);
		if (ended)
			sbx_put(m, s); /* the table's */
		sbx_put(m, s);
		list = next;
	}
}
