/* sblife.c — a held sandbox's lifetime and labels: create's lifetime and metadata checked, the
 * owner's set_timeout, the deadlines the housekeeper expires it at, and why it ended, in words, for
 * the calls it cut short and for its owner's later calls. */
#include "manager/sbmint.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/text.h"

unsigned sbm_running_in(const struct sbx *s)
{
	/* Under m->mu: its execs, cells and background processes running now. */
	return s->nrun;
}

/* A duration in seconds as a person writes it ("3 s", "0.5 s"). */
static void seconds_words(uint64_t ms, char *buf, size_t cap)
{
	snprintf(buf, cap, "%g s", (double)ms / 1000.0);
}

/* The server's max_lifetime as the operator wrote it ("1h"), or in seconds. */
static void cap_words(const struct sbm *m, char *buf, size_t cap)
{
	const struct cfg_server *c = &m->o.cfg->server;
	if (c->max_lifetime && *c->max_lifetime)
		snprintf(buf, cap, "%s", c->max_lifetime);
	else
		seconds_words(c->max_lifetime_ms, buf, cap);
}

/* What happened to s, after its id: "reached its lifetime (3 s) and was destroyed". */
static void end_phrase(const struct sbm *m, const struct sbx *s, enum sbx_end why, char *buf, size_t cap)
{
	char d[48];
	const struct cfg_server *c = &m->o.cfg->server;
	switch (why) {
	case SBX_END_LIFETIME:
		seconds_words(s->lifetime_ms, d, sizeof(d));
		snprintf(buf, cap, "reached its lifetime (%s) and was destroyed", d);
		return;
	case SBX_END_MAX_LIFETIME:
		cap_words(m, d, sizeof(d));
		snprintf(buf, cap, "reached the server's max_lifetime (%s) and was destroyed", d);
		return;
	case SBX_END_IDLE:
		snprintf(buf, cap, "was idle longer than the server's idle_ttl (%s) and was destroyed",
			 c->idle_ttl ? c->idle_ttl : "?");
		return;
	case SBX_END_DIED:
		snprintf(buf, cap, "ended: its init died");
		return;
	case SBX_END_OWNER:
		snprintf(buf, cap, "was destroyed by its owner");
		return;
	case SBX_END_APPROVER:
		snprintf(buf, cap, "was destroyed by an approver (%s)", s->end_by[0] ? s->end_by : "?");
		return;
	case SBX_END_STOPPING:
		snprintf(buf, cap, "was destroyed: the server is stopping");
		return;
	case SBX_END_UNWANTED:
		snprintf(buf, cap, "was destroyed: its create was cancelled while it was made");
		return;
	case SBX_LIVE:
		break;
	}
	snprintf(buf, cap, "is live");
}

static const char *end_keyword(enum sbx_end why)
{
	switch (why) {
	case SBX_END_LIFETIME:
		return "lifetime";
	case SBX_END_MAX_LIFETIME:
		return "max_lifetime";
	case SBX_END_IDLE:
		return "idle_ttl";
	case SBX_END_DIED:
		return "died";
	case SBX_END_OWNER:
	case SBX_END_UNWANTED:
		return "destroyed";
	case SBX_END_APPROVER:
		return "destroyed_by_approver";
	case SBX_END_STOPPING:
		return "server_stopping";
	case SBX_LIVE:
		break;
	}
	return NULL;
}

void sbx_end_locked(struct sbm *m, struct sbx *s, enum sbx_end why, const char *by)
{
	if (!s->listed)
		return;
	s->end = why;
	snprintf(s->end_by, sizeof(s->end_by), "%s", by ? by : "");
	/* A spare has no owner to tell; a client's sandbox is remembered for its owner only (another
	 * principal asking about the id still gets the unknown id's answer: sbx_get). */
	if (s->owner[0] && !s->pooled) {
		struct sbx_gone *g = &m->gone[m->gone_next++ % SBM_GONE_MAX];
		snprintf(g->id, sizeof(g->id), "%s", s->id);
		snprintf(g->owner, sizeof(g->owner), "%s", s->owner);
		end_phrase(m, s, why, g->why, sizeof(g->why));
	}
	sbx_unlist_locked(m, s);
}

bool life_gone_locked(const struct sbm *m, const char *id, const char *owner, char *why, size_t cap)
{
	/* Newest first: an id is random, but a stale entry must never answer for a newer end. */
	for (unsigned i = 0; i < SBM_GONE_MAX; i++) {
		const struct sbx_gone *g = &m->gone[(m->gone_next + SBM_GONE_MAX - 1 - i) % SBM_GONE_MAX];
		if (g->id[0] && strcmp(g->id, id) == 0 && strcmp(g->owner, owner) == 0) {
			snprintf(why, cap, "no sandbox \"%s\": it %s", id, g->why);
			return true;
		}
	}
	return false;
}

/* Its own end as the clock stands: paused (and not lifetime_runs_paused), the end moves on with
 * the time, as the resume will move it (sbpause.c). */
static uint64_t own_end_locked(const struct sbx *s, uint64_t now)
{
	if (!s->ends_ms || !s->paused || s->lifetime_runs_paused || now <= s->clock_stop_ms)
		return s->ends_ms;
	return s->ends_ms + (now - s->clock_stop_ms);
}

uint64_t life_ends_locked(const struct sbm *m, const struct sbx *s)
{
	uint64_t max = m->o.cfg->server.max_lifetime_ms;
	uint64_t cap = max ? s->created_ms + max : 0, own = own_end_locked(s, sbm_now_ms());
	if (own && (!cap || own < cap))
		return own;
	return cap;
}

static void lower(uint64_t *next, uint64_t t)
{
	if (t && t < *next)
		*next = t;
}

enum sbx_end life_expiry_locked(const struct sbm *m, const struct sbx *s, uint64_t now, uint64_t *next)
{
	const struct cfg_server *c = &m->o.cfg->server;
	uint64_t cap = c->max_lifetime_ms ? s->created_ms + c->max_lifetime_ms : 0;
	/* Paused: its own lifetime stands still (unless it runs while paused) and it is never idle;
	 * the server's max_lifetime runs on. Being paused or resumed right now: the next sweep. */
	bool stopped = s->paused && !s->lifetime_runs_paused;
	if (s->changing)
		return SBX_LIVE;
	/* Its own lifetime first when it is the earlier end: the words name what the owner chose. */
	if (!stopped && s->ends_ms && now >= s->ends_ms && (!cap || s->ends_ms <= cap))
		return SBX_END_LIFETIME;
	if (cap && now >= cap)
		return SBX_END_MAX_LIFETIME;
	/* Idle: never while an operation holds it (refs), so an idle end never cuts a call short. */
	if (c->idle_ttl_ms && !s->pooled && !s->paused && s->refs == 1 && now - s->used_ms >= c->idle_ttl_ms)
		return SBX_END_IDLE;
	if (s->sb && !al_sandbox_alive(s->sb) && s->refs == 1) /* paused to disk: no init to die */
		return SBX_END_DIED;
	if (!stopped)
		lower(next, s->ends_ms);
	lower(next, cap);
	/* idle_ttl's sweep comes every second (the housekeeper's default wait). */
	return SBX_LIVE;
}

bool life_ended_locked(const struct sbm *m, const struct sbx *s, char *why, size_t cap, const char **reason)
{
	/* A throwaway sandbox is never listed, so never ended by name: only a stop ends it early. */
	enum sbx_end e = s->end != SBX_LIVE ? s->end : m->stopping ? SBX_END_STOPPING : SBX_LIVE;
	if (e == SBX_LIVE)
		return false;
	char phrase[160];
	end_phrase(m, s, e, phrase, sizeof(phrase));
	snprintf(why, cap, "sandbox %s %s", s->id, phrase);
	*reason = end_keyword(e);
	return true;
}

bool life_ended(struct sbm *m, const struct sbx *s, char *why, size_t cap, const char **reason)
{
	pthread_mutex_lock(&m->mu);
	bool e = life_ended_locked(m, s, why, cap, reason);
	pthread_mutex_unlock(&m->mu);
	return e;
}

int life_mark_result(struct srv_result *res, const char *why, const char *reason)
{
	struct al_verdict *v = res->verdict;
	/* The end killed what ran: the namespace's init, so a held exec reports its init gone (a
	 * setup error with the sandbox's words) and a cell its kernel lost. Said as what it is, a
	 * kill, the reason beside it; an outcome of the program's own (an exit, a timeout, an OOM)
	 * that came first stays as it was. */
	if (v &&
	    (v->status == AL_STATUS_SETUP_ERROR || v->status == AL_STATUS_SIGNALED || v->status == AL_STATUS_KILLED)) {
		v->status = AL_STATUS_SIGNALED;
		v->signal = SIGKILL;
		v->exit_code = 0;
		memset(&v->setup, 0, sizeof(v->setup));
	}
	free(res->ended);
	if (asprintf(&res->ended, "%s while this call ran", why) < 0) {
		res->ended = NULL;
		return -ENOMEM;
	}
	res->ended_reason = reason;
	return 0;
}

/* ---- create and set_timeout ------------------------------------------------------------------- */

static bool meta_key_ok(const char *k)
{
	size_t n = strlen(k);
	return n >= 1 && n <= SRV_META_KEY_MAX &&
	       strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") == n;
}

/* The labels as a JSON object's text (keys sorted): 0 and *out, or -errno with err naming the key. */
static int meta_json(const struct srv_create_req *req, char **out, struct al_error *err)
{
	if (req->n_metadata > SRV_META_MAX)
		return al_err(err, EINVAL, "metadata: at most %d keys (%zu given)", SRV_META_MAX, req->n_metadata);
	json_t *o = json_object();
	int r = o ? 0 : al_err(err, ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < req->n_metadata; i++) {
		const char *k = req->metadata_keys[i], *v = req->metadata_values[i];
		size_t vn = v ? strlen(v) : 0;
		if (!meta_key_ok(k))
			r = al_err(err, EINVAL, "metadata: bad key \"%.80s\" (1-%d bytes of A-Z a-z 0-9 . _ - /)", k,
				   SRV_META_KEY_MAX);
		else if (!v || vn > SRV_META_VALUE_MAX || !txt_utf8_valid(v, vn))
			r = al_err(err, EINVAL, "metadata: the value of \"%s\" must be UTF-8 text of at most %d bytes",
				   k, SRV_META_VALUE_MAX);
		else if (json_object_set_new(o, k, json_string(v)) < 0)
			r = al_err(err, ENOMEM, "out of memory");
	}
	char *text = r == 0 ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (r == 0 && !text)
		r = al_err(err, ENOMEM, "out of memory");
	*out = text;
	return r;
}

int life_check_create(const struct sbm *m, const struct srv_create_req *req, char **meta, struct al_error *err)
{
	*meta = NULL;
	uint64_t cap = m->o.cfg->server.max_lifetime_ms;
	/* Refused rather than clamped: a caller who asked for more than it can have is told at once,
	 * with the cap, instead of finding its sandbox gone earlier than it planned. */
	if (cap && req->lifetime_ms > cap) {
		char a[48], c[48];
		seconds_words(req->lifetime_ms, a, sizeof(a));
		cap_words(m, c, sizeof(c));
		return al_err(err, EINVAL, "lifetime: %s is above the server's max_lifetime (%s): ask for at most %g",
			      a, c, (double)cap / 1000.0);
	}
	return req->n_metadata ? meta_json(req, meta, err) : 0;
}

void life_apply_create(struct sbm *m, struct sbx *s, struct srv_op *op)
{
	pthread_mutex_lock(&m->mu);
	s->lifetime_ms = op->lifetime_ms;
	s->ends_ms = op->lifetime_ms ? s->created_ms + op->lifetime_ms : 0;
	s->auto_pause = op->auto_pause;
	s->lifetime_runs_paused = op->lifetime_runs_paused;
	free(s->meta_json);
	s->meta_json = op->meta_json; /* the sandbox's now */
	op->meta_json = NULL;
	pthread_cond_signal(&m->hk_cv); /* its deadline may be the housekeeper's next */
	pthread_mutex_unlock(&m->mu);
}

/* The offset is read once (sbm_new): a sandbox's created_at stays the same in every answer,
 * whatever the two clocks' readings between them. */
uint64_t sbm_wall_ms(const struct sbm *m, uint64_t t)
{
	return (uint64_t)((int64_t)t + m->wall_offset_ms);
}

/* Under m->mu: the new end of s, lifetime_ms from now, within the server's cap: 0, or -EINVAL. */
static int set_end_locked(struct sbm *m, struct sbx *s, uint64_t lifetime_ms, struct al_error *err)
{
	uint64_t max = m->o.cfg->server.max_lifetime_ms, now = sbm_now_ms();
	if (!s->listed)
		return al_err(err, ENOENT, "no sandbox \"%s\" (never created, destroyed, or expired)", s->id);
	if (max && now + lifetime_ms > s->created_ms + max) {
		char a[48], c[48];
		seconds_words(lifetime_ms, a, sizeof(a));
		cap_words(m, c, sizeof(c));
		uint64_t left = s->created_ms + max > now ? s->created_ms + max - now : 0;
		return al_err(err, EINVAL,
			      "lifetime: %s from now would outlive the server's max_lifetime (%s from the sandbox's "
			      "creation): ask for at most %llu",
			      a, c, (unsigned long long)(left / 1000));
	}
	s->ends_ms = now + lifetime_ms;
	s->lifetime_ms = lifetime_ms;
	pthread_cond_signal(&m->hk_cv); /* a shorter end than it waits for */
	return 0;
}

int sbm_set_timeout(void *ctx, const struct srv_timeout_req *req, const struct srv_sink *sink, struct srv_op **out,
		    struct al_error *err)
{
	struct sbm *m = ctx;
	if (!req->lifetime_ms)
		return al_err(err, EINVAL, "lifetime: must be greater than 0");
	struct sbx *s = sbx_get(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	struct srv_result *res = srv_result_new();
	if (!res || !(res->sandbox_id = strdup(s->id))) {
		srv_result_free(res);
		sbx_put(m, s);
		return al_err(err, ENOMEM, "out of memory");
	}
	uint64_t ends = 0;
	pthread_mutex_lock(&m->mu);
	int r = set_end_locked(m, s, req->lifetime_ms, err);
	if (r == 0)
		ends = life_ends_locked(m, s);
	pthread_mutex_unlock(&m->mu);
	if (r == 0)
		sbp_save(m, s); /* its new end, kept */
	sbx_put(m, s);
	if (r < 0) {
		srv_result_free(res);
		return r;
	}
	res->ends_unix_ms = ends ? sbm_wall_ms(m, ends) : 0;
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

int sbm_end_note(struct sbm *m, const struct sbx *s, int r, struct al_error *err, struct srv_result *res)
{
	char why[AL_ERROR_MAX / 2];
	const char *kw = NULL;
	if (!life_ended(m, s, why, sizeof(why), &kw))
		return r;
	if (r < 0) /* what failed failed because the sandbox went: that is the answer */
		return al_err(err, ENOENT, "%s while this call ran", why);
	if (res && life_mark_result(res, why, kw) < 0)
		return al_err(err, ENOMEM, "out of memory");
	return 0;
}
