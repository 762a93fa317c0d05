/* sbpool.c — the warm pool, expiry and the housekeeping thread that makes every sandbox (see
 * struct sbm): spares claimed and refilled, idle and old sandboxes destroyed. */
#include "manager/sbmint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config/profile.h"
#include "util/clock.h"
#include "util/error.h"

/* Whether s was made for profile on image (NULL: on the profile's own root). */
static bool same_kind(const struct sbx *s, const char *profile, const char *image)
{
	if (strcmp(s->profile, profile) != 0)
		return false;
	return image ? s->pool_image && strcmp(s->pool_image, image) == 0 : !s->pool_image;
}

/* A warm spare of profile (on image, or on its own root), now owner's (with the caller's reference), or NULL — also when owner
 * holds its quota of sandboxes or of their bytes already (keep: the claim is listed as owner's, not a throwaway; the
 * caller's own make-and-list then answers with the quota's error). */
struct sbx *sbm_claim_pooled(struct sbm *m, const char *profile, const char *image, const char *owner, bool keep)
{
	/* A spare was made for nobody: it lacks the secrets given to this owner alone. */
	if (cfg_profile_has_personal_secrets(m->o.cfg, cfg_profile(m->o.cfg, profile), owner))
		return NULL;
	pthread_mutex_lock(&m->mu);
	struct sbx *s = m->list;
	while (s && !(s->pooled && same_kind(s, profile, image)))
		s = s->next;
	if (s && keep && sbm_quota_check_locked(m, owner ? owner : "", 1, s->disk_bytes, NULL) < 0)
		s = NULL;
	if (s) {
		/* Its lifetime (server.max_lifetime) starts now: time as a spare is not the client's. */
		s->pooled = false;
		sbx_set_owner(s, owner); /* under the lock: nobody sees it unowned once it is not a spare */
		s->created_ms = s->used_ms = sbm_now_ms();
		s->refs++;
	}
	if (s) {
		m->refill_after_ms = sbm_now_ms() + SBM_REFILL_DELAY_MS;
		pthread_cond_signal(&m->hk_cv); /* refill, shortly */
	}
	pthread_mutex_unlock(&m->mu);
	return s;
}

/* ---- expiry and the warm pool ------------------------------------------------------------ */

/* One sweep: unlists what expired (returned in *dead, to be put outside the lock), each with why
 * (the words its calls and its owner get); *next: the earliest deadline still ahead. */
static struct sbx *expire_locked(struct sbm *m, uint64_t now, uint64_t *next, struct sbx **pause)
{
	struct sbx *dead = NULL;
	for (struct sbx *s = m->list, *nx; s; s = nx) {
		nx = s->next;
		enum sbx_end why = life_expiry_locked(m, s, now, next);
		if (why != SBX_LIVE && pause_instead_locked(m, s, why, pause))
			continue; /* auto_pause: paused below, outside the lock */
		if (why != SBX_LIVE) {
			sbx_end_locked(m, s, why, NULL);
			m->st.expired++;
			s->next = dead; /* the table's reference moves to the dead list */
			dead = s;
		}
	}
	return dead;
}

static unsigned pooled_locked(struct sbm *m, const struct cfg_pool *pool)
{
	unsigned n = 0;
	for (struct sbx *s = m->list; s; s = s->next)
		n += s->pooled && same_kind(s, pool->profile, pool->image);
	return n;
}

/* Makes one missing spare, if any is missing: true when it made one (more may be missing). An
 * entry that cannot be made now (its image removed, the server full) does not keep the entries
 * after it empty: they are tried in the same sweep; the failed one waits for the next. */
static bool refill_one(struct sbm *m)
{
	const struct cfg_server *c = &m->o.cfg->server;
	for (size_t i = 0; i < c->npool; i++) {
		pthread_mutex_lock(&m->mu);
		bool need = !m->stopping && pooled_locked(m, &c->pool[i]) < c->pool[i].count;
		pthread_mutex_unlock(&m->mu);
		if (!need)
			continue;
		struct sbx *s = NULL;
		struct al_error err = {0};
		struct srv_limits lim = {0};
		if (sbx_make_now(m, NULL, c->pool[i].profile, c->pool[i].image, false, NULL, &lim, NULL, true, &s,
				 &err) < 0)
			continue; /* the next sweep tries again */
		if (sbx_list(m, s, &err) < 0) {
			sbx_free(s);
			continue;
		}
		return true;
	}
	return false;
}

/* Under m->mu: makes the queued sandboxes (the lock is dropped while each is made). */
static void serve_queue_locked(struct sbm *m)
{
	while (m->queue) {
		struct mkreq *q = m->queue;
		m->queue = q->next;
		pthread_mutex_unlock(&m->mu);
		q->r = sbx_make_now(m, q->owner, q->profile, q->image, q->network, q->hosts, q->lim, q->layers, false,
				    &q->s, &q->err);
		pthread_mutex_lock(&m->mu);
		q->done = true;
		pthread_cond_broadcast(&m->cv);
	}
}

void *sbm_housekeeper(void *arg)
{
	struct sbm *m = arg;
	pthread_mutex_lock(&m->mu);
	while (!m->stopping) {
		serve_queue_locked(m);
		uint64_t now = sbm_now_ms(), wait_ms = 1000;
		bool more = false;
		if (now < m->refill_after_ms) {
			wait_ms = m->refill_after_ms - now;
		} else {
			pthread_mutex_unlock(&m->mu);
			more = refill_one(m);
			pthread_mutex_lock(&m->mu);
		}
		uint64_t next = UINT64_MAX;
		struct sbx *pause = NULL;
		struct sbx *dead = m->stopping ? NULL : expire_locked(m, sbm_now_ms(), &next, &pause);
		if (dead || pause) {
			pthread_mutex_unlock(&m->mu);
			while (dead) {
				struct sbx *nd = dead->next;
				sbx_put(m, dead);
				dead = nd;
			}
			pause_list(m, pause);
			pthread_mutex_lock(&m->mu);
		}
		/* A lifetime ends on time, not at the next one-second sweep. */
		now = sbm_now_ms();
		if (next != UINT64_MAX)
			wait_ms = next > now ? (next - now < wait_ms ? next - now : wait_ms) : 0;
		if (!more && !m->queue && !m->stopping && wait_ms) {
			struct timespec t = al_deadline_ts(CLOCK_REALTIME, wait_ms);
			pthread_cond_timedwait(&m->hk_cv, &m->mu, &t);
		}
	}
	/* Shutdown: whoever still waits for a sandbox gets none. */
	while (m->queue) {
		struct mkreq *q = m->queue;
		m->queue = q->next;
		q->r = al_err(&q->err, ESHUTDOWN, "the server is shutting down");
		q->done = true;
	}
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return NULL;
}
