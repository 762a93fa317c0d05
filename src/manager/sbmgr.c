/* sbmgr.c — the sandbox manager: held sandboxes by id, one worker thread per long operation.
 *
 * Theory of operation
 *
 *   session thread (MCP stdio / HTTP)            worker threads              held sandboxes
 *     create_sandbox ──────────────────────────▶ al_sandbox_create ───────▶ init waits for work
 *     exec / install_package ──────────────────▶ write code, al_job_spawn(attach), al_job_wait
 *                                                  (output → sink->on_output, verdict → on_done)
 *     write_file / read_file / list_files: synchronous, beneath the workspace descriptor (wsfiles.c)
 *     destroy_sandbox: removed from the table at once; freed when its last operation ends
 *
 * Everything shared sits under m->mu: the table, each sandbox's reference count, the counters.
 * An exec holds its sandbox's turn (busy) from writing its code file to its end, so execs of one
 * sandbox take turns (the code file under /workspace/.airlock is theirs in turn) while other
 * sandboxes run in parallel, up to server.max_execs. An exec waiting for its turn or a slot gives
 * up, never to run, when its own wall-clock limit passes (counted from the request), when it is
 * cancelled, when its sandbox is destroyed or when the server stops. A housekeeping thread makes
 * every sandbox (see struct sbm), destroys those idle past server.idle_ttl or older than
 * server.max_lifetime, and keeps the warm pool (server.pool) filled.
 */
#include "sbmgr.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "config/language.h"
#include "config/profile.h"
#include "manager/context.h"
#include "manager/install.h"
#include "manager/quota.h"
#include "manager/wsfiles.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"

#define SBM_DEFAULT_PROFILE "untrusted-code-read"
#define SBM_ID_LEN	    20
#define SBM_CODE_DIR	    ".airlock"
/* A claimed spare is replaced this long after the claim: cloning a sandbox copies the server's
 * page tables and takes a CPU, which would otherwise delay the claim's own answer (measured: a
 * warm create's median 1.3 ms with an immediate refill, 0.23 ms with this delay). */
#define SBM_REFILL_DELAY_MS 5

/* One held sandbox. */
struct sbx {
	struct sbx *next;
	char id[SBM_ID_LEN + 1];
	char owner[SRV_OWNER_MAX]; /* the principal that created or claimed it ("" for a spare) */
	struct al_sandbox *sb;
	char *profile;
	char *net_hosts; /* the allowlist the sandbox was made with ("" when its posture has no proxy) */
	enum al_net_posture net;
	uint64_t exec_timeout_ms; /* limits.timeout of code_create_sandbox: an exec's default wall limit, 0: none */
	uint64_t created_ms, used_ms;
	unsigned refs;		/* the table's (while listed) + each operation's */
	bool listed;		/* in m->list (false once destroyed or expired) */
	bool pooled;		/* a warm spare nobody has asked for yet */
	bool busy;		/* an exec holds this sandbox's turn (under m->mu) */
	struct al_job *running; /* the exec holding the turn, for destroy (under m->mu) */
	struct ctx_set *ctxs;	/* interpreter contexts (context.c), made by the first cell (under m->mu) */
};

struct sbm {
	struct sbm_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC: operations ended, turns and slots freed, a cancel, mkreq done */
	struct sbx *list;
	size_t live;
	unsigned execs, ops; /* running execs; operations of any kind not yet done */
	bool stopping;
	/* The housekeeper makes every sandbox: PR_SET_PDEATHSIG ties a sandbox's init to the thread
	 * that created it, so that thread must live as long as the server (worker threads do not). */
	pthread_t hk;
	bool hk_started;
	pthread_cond_t hk_cv;	  /* wakes the housekeeper: a request queued, a spare claimed, shutdown */
	struct mkreq *queue;	  /* sandboxes to make, oldest first */
	uint64_t refill_after_ms; /* no spare is made before this (now_ms() clock): see SBM_REFILL_DELAY_MS */
	struct sbm_stats st;
	struct mq_table execs_of; /* executions (queued or running) per principal: server.quota.execs */
};

/* A sandbox to make, queued for the housekeeper by a worker that waits on m->cv for done. */
struct mkreq {
	struct mkreq *next;
	const char *profile, *hosts, *image;
	bool network, done;
	const struct srv_limits *lim;
	struct sbx *s;
	int r;
	struct al_error err;
};

enum op_kind {
	OP_CREATE,
	OP_EXEC,
	OP_INSTALL,
	OP_DESTROY,
	OP_CELL,
	OP_CONTEXT
};

struct srv_op {
	struct sbm *m;
	pthread_mutex_t mu;
	enum op_kind kind;
	struct srv_sink sink;
	bool done, released, cancelled;
	struct al_job *job; /* the running job, for cancel */
	/* The request, copied. */
	char *sandbox_id, *language, *code, *profile, *hosts, *manager;
	char owner[SRV_OWNER_MAX]; /* the requesting principal: it may only use its own sandboxes */
	bool counted;		   /* holds one of its principal's executions (m->execs_of) */
	char *image;		   /* create: an image the profile offers (issue 18), or NULL */
	char **packages;
	size_t code_len, npackages;
	uint64_t timeout_ms;
	uint64_t started_ms;	   /* when the request was accepted: a queued exec's wait counts from here */
	char *context_id, *action; /* OP_CELL, OP_CONTEXT */
	int cancel_fd;		   /* OP_CELL: an eventfd m_cancel makes readable, or -1 */
	bool network;
	struct srv_limits limits;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the table ------------------------------------------------------------------------- */

static void sbx_free(struct sbx *s)
{
	if (!s)
		return;
	ctx_set_free(s->ctxs); /* the kernels run in s->sb */
	al_sandbox_destroy(s->sb);
	free(s->profile);
	free(s->net_hosts);
	free(s);
}

/* Drops one reference; the last one destroys the sandbox (outside the lock: it reaps). An
 * operation ending is a use: idle time counts from here, so an exec longer than server.idle_ttl
 * does not leave its sandbox to expire at the next sweep. */
static void sbx_put(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	s->used_ms = now_ms();
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&m->mu);
	if (last)
		sbx_free(s);
}

/* Under m->mu: takes s off the table (its operations keep it until they end). */
static void unlist_locked(struct sbm *m, struct sbx *s)
{
	for (struct sbx **pp = &m->list; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			s->listed = false;
			m->live--;
			m->st.destroyed++;
			if (s->running)
				al_job_kill(s->running);
			ctx_set_kill(s->ctxs);		/* its contexts' kernels too: a running cell ends here */
			pthread_cond_broadcast(&m->cv); /* an exec waiting for its turn in s gives up */
			return;
		}
}

/* The sandbox id, if owner owns it. Another principal's sandbox is "no sandbox", in the very words
 * of an unknown id: an answer must not confirm that an id it may not use exists. */
static struct sbx *sbx_get(struct sbm *m, const char *id, const char *owner, struct al_error *err)
{
	if (!id) { /* a transport without a session sandbox passed none */
		al_err(err, EINVAL, "this call needs a sandbox_id");
		return NULL;
	}
	pthread_mutex_lock(&m->mu);
	struct sbx *s = m->list;
	while (s && (s->pooled || strcmp(s->id, id) != 0 || strcmp(s->owner, owner ? owner : "") != 0))
		s = s->next;
	if (s) {
		s->refs++;
		s->used_ms = now_ms();
	}
	pthread_mutex_unlock(&m->mu);
	if (!s)
		al_err(err, ENOENT, "no sandbox \"%s\" (never created, destroyed, or expired)", id);
	return s;
}

static void make_id(char id[SBM_ID_LEN + 1])
{
	unsigned char r[8] = {0};
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t t = now_ms() ^ (uint64_t)getpid() << 32;
		memcpy(r, &t, sizeof(r));
	}
	snprintf(id, SBM_ID_LEN + 1, "sb-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6],
		 r[7]);
}

/* ---- policies ---------------------------------------------------------------------------- */

/* Whether every host of "a,b,c" list x is in list y. */
static bool hosts_within(const char *x, const char *y)
{
	while (*x) {
		size_t n = strcspn(x, ",");
		bool found = false;
		for (const char *q = y; *q && !found;) {
			size_t k = strcspn(q, ",");
			found = k == n && strncmp(q, x, n) == 0;
			q += k + (q[k] == ',');
		}
		if (!found)
			return false;
		x += n + (x[n] == ',');
	}
	return true;
}

/* Whether two "a,b,c" lists name the same hosts (in any order). */
static bool same_hosts(const char *a, const char *b)
{
	return hosts_within(a, b) && hosts_within(b, a);
}

/* "a,b,c" from the client's domain list (each checked by the allowlist parser later). */
static char *join_hosts(const char *const *v, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	char *s = calloc(1, len);
	size_t off = 0;
	for (size_t i = 0; s && i < n; i++) {
		if (strchr(v[i], ',')) {
			free(s);
			return NULL;
		}
		off += (size_t)snprintf(s + off, len - off, "%s%s", i ? "," : "", v[i]);
	}
	return s;
}

static int set_limit_if(struct al_policy *p, enum al_limit l, uint64_t v, struct al_error *err)
{
	return v ? al_policy_set_limit(p, l, v, err) : 0;
}

/* The creation policy: configuration limits, the profile's posture, the client's knobs; with
 * network, the client's hosts through the egress proxy (the profile's registries stay allowed). */
static int create_policy(struct sbm *m, const char *profile, const char *image, bool network, const char *hosts,
			 const struct srv_limits *lim, struct al_policy **out, enum al_net_posture *net,
			 struct al_error *err)
{
	const struct cfg *c = m->o.cfg;
	const struct cfg_profile *pr = cfg_profile(c, profile);
	if (!pr)
		return al_err(err, ENOENT, "unknown profile \"%s\"", profile);
	if (!pr->namespaces)
		return al_err(err, EPERM, "profile %s has no isolation: the server never runs it", profile);
	struct al_policy *p = NULL;
	int r = al_policy_new(&p);
	if (r < 0)
		return al_err(err, -r, "out of memory");
	r = cfg_apply_limits(&c->limits, p, true, err);
	r = r ?: cfg_apply_profile(c, pr, p, err);
	/* An image changes the system directories only; the posture stays the profile's. */
	if (r == 0 && image)
		r = cfg_profile_image_allowed(pr, image, err) ?: al_policy_set_image(p, image, err);
	r = r ?: set_limit_if(p, AL_LIMIT_MEMORY, lim->memory_bytes, err);
	r = r ?: set_limit_if(p, AL_LIMIT_CPUS, lim->milli_cpus, err);
	r = r ?: set_limit_if(p, AL_LIMIT_PIDS, lim->pids, err);
	r = r ?: set_limit_if(p, AL_LIMIT_DISK, lim->disk_bytes, err);
	/* Every language's host paths: any of them may run in this sandbox later. */
	for (size_t i = 0; r == 0 && i < c->nlanguages; i++)
		for (size_t k = 0; r == 0 && k < c->languages[i].paths.n; k++)
			if (access(c->languages[i].paths.v[k], F_OK) == 0)
				r = al_policy_add_bind(p, c->languages[i].paths.v[k], NULL, false, err);
	if (r == 0 && network) {
		if (p->net != AL_NET_ALLOW)
			r = al_policy_set_network(p, AL_NET_ALLOW, err);
		if (r == 0 && hosts && *hosts)
			r = al_policy_allow_hosts(p, hosts, err);
	}
	if (r < 0) {
		al_policy_free(p);
		return r;
	}
	*net = p->net;
	*out = p;
	return 0;
}

static int make_now(struct sbm *m, const char *profile, const char *image, bool network, const char *hosts,
		    const struct srv_limits *lim, bool pooled, struct sbx **out, struct al_error *err)
{
	struct sbx *s = calloc(1, sizeof(*s));
	if (!s)
		return al_err(err, ENOMEM, "out of memory");
	s->profile = strdup(profile);
	s->net_hosts = strdup(hosts ? hosts : "");
	struct al_policy *p = NULL;
	int r = s->profile && s->net_hosts ? 0 : al_err(err, ENOMEM, "out of memory");
	r = r ?: create_policy(m, profile, image, network, hosts, lim, &p, &s->net, err);
	r = r ?: al_sandbox_create(p, &s->sb, err);
	al_policy_free(p);
	if (r < 0) {
		sbx_free(s);
		return r;
	}
	make_id(s->id);
	s->exec_timeout_ms = lim->timeout_ms;
	s->created_ms = s->used_ms = now_ms();
	s->pooled = pooled;
	*out = s;
	return 0;
}

/* Makes a sandbox on the housekeeper's thread (see struct sbm) and waits for it. */
static int new_sandbox(struct sbm *m, const char *profile, const char *image, bool network, const char *hosts,
		       const struct srv_limits *lim, bool pooled, struct sbx **out, struct al_error *err)
{
	if (m->hk_started && pthread_equal(pthread_self(), m->hk))
		return make_now(m, profile, image, network, hosts, lim, pooled, out, err);
	struct mkreq q = {.profile = profile, .image = image, .hosts = hosts, .network = network, .lim = lim};
	pthread_mutex_lock(&m->mu);
	if (m->stopping) {
		pthread_mutex_unlock(&m->mu);
		return al_err(err, ESHUTDOWN, "the server is shutting down");
	}
	struct mkreq **pp = &m->queue;
	while (*pp)
		pp = &(*pp)->next;
	*pp = &q;
	pthread_cond_signal(&m->hk_cv);
	while (!q.done)
		pthread_cond_wait(&m->cv, &m->mu);
	pthread_mutex_unlock(&m->mu);
	if (q.r < 0 && err)
		*err = q.err;
	*out = q.s;
	return q.r;
}

/* Lists s (with the table's reference) unless the live limit is reached. */
/* How many sandboxes owner holds (listed, not spares). Call with m->mu held. */
static unsigned owned_locked(const struct sbm *m, const char *owner)
{
	unsigned n = 0;
	for (const struct sbx *s = m->list; s; s = s->next)
		n += !s->pooled && strcmp(s->owner, owner) == 0;
	return n;
}

static unsigned quota_sandboxes(const struct sbm *m)
{
	unsigned q = m->o.cfg->server.quota_sandboxes;
	return q ? q : CFG_QUOTA_SANDBOXES;
}

static int over_quota(const struct sbm *m, const char *owner, struct al_error *err)
{
	return al_err(err, EAGAIN, "quota reached: %s holds %u sandboxes (server.quota.sandboxes): destroy one first",
		      owner[0] ? owner : "this client", quota_sandboxes(m));
}

static int list_sandbox(struct sbm *m, struct sbx *s, struct al_error *err)
{
	if (!s)
		return al_err(err, EINVAL, "no sandbox");
	unsigned max = m->o.cfg->server.max_sandboxes;
	pthread_mutex_lock(&m->mu);
	/* One principal filling the table would lock every other one out: each holds its quota. */
	if (!m->stopping && owned_locked(m, s->owner) >= quota_sandboxes(m)) {
		pthread_mutex_unlock(&m->mu);
		return over_quota(m, s->owner, err);
	}
	if (m->stopping || (max && m->live >= max)) {
		pthread_mutex_unlock(&m->mu);
		return m->stopping
			       ? al_err(err, ESHUTDOWN, "the server is shutting down")
			       : al_err(err, EAGAIN, "limit reached: %u live sandboxes (server.max_sandboxes)", max);
	}
	s->refs++;
	s->listed = true;
	s->next = m->list;
	m->list = s;
	m->live++;
	m->st.created++;
	pthread_mutex_unlock(&m->mu);
	return 0;
}

/* A pooled spare of this profile, claimed (NULL if none is ready). */
static void set_owner(struct sbx *s, const char *owner)
{
	snprintf(s->owner, sizeof(s->owner), "%s", owner ? owner : "");
}

/* A warm spare of profile, now owner's (with the caller's reference), or NULL — also when owner
 * holds its quota of sandboxes already (keep: the claim is listed as owner's, not a throwaway; the
 * caller's own make-and-list then answers with the quota's error). */
static struct sbx *claim_pooled(struct sbm *m, const char *profile, const char *owner, bool keep)
{
	pthread_mutex_lock(&m->mu);
	struct sbx *s = keep && owned_locked(m, owner ? owner : "") >= quota_sandboxes(m) ? NULL : m->list;
	while (s && !(s->pooled && strcmp(s->profile, profile) == 0))
		s = s->next;
	if (s) {
		/* Its lifetime (server.max_lifetime) starts now: time as a spare is not the client's. */
		s->pooled = false;
		set_owner(s, owner); /* under the lock: nobody sees it unowned once it is not a spare */
		s->created_ms = s->used_ms = now_ms();
		s->refs++;
	}
	if (s) {
		m->refill_after_ms = now_ms() + SBM_REFILL_DELAY_MS;
		pthread_cond_signal(&m->hk_cv); /* refill, shortly */
	}
	pthread_mutex_unlock(&m->mu);
	return s;
}

/* ---- operations ---------------------------------------------------------------------------- */

static void op_free(struct srv_op *op)
{
	free(op->sandbox_id);
	free(op->language);
	free(op->code);
	free(op->profile);
	free(op->image);
	free(op->hosts);
	free(op->manager);
	free(op->context_id);
	free(op->action);
	if (op->cancel_fd >= 0)
		close(op->cancel_fd);
	for (size_t i = 0; i < op->npackages; i++)
		free(op->packages[i]);
	free(op->packages);
	pthread_mutex_destroy(&op->mu);
	free(op);
}

static struct srv_op *op_new(struct sbm *m, enum op_kind kind, const struct srv_sink *sink)
{
	struct srv_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->m = m;
	op->kind = kind;
	op->sink = *sink;
	op->started_ms = now_ms();
	op->cancel_fd = -1;
	pthread_mutex_init(&op->mu, NULL);
	return op;
}

/* Reports the result; frees op if the session already released it. */
static void op_finish(struct srv_op *op, struct srv_result *res)
{
	struct sbm *m = op->m;
	char owner[SRV_OWNER_MAX];
	bool counted = op->counted;
	memcpy(owner, op->owner, sizeof(owner)); /* op may be freed below */
	op->sink.on_done(op->sink.cookie, res);
	pthread_mutex_lock(&op->mu);
	op->done = true;
	op->job = NULL;
	bool gone = op->released;
	pthread_mutex_unlock(&op->mu);
	if (gone)
		op_free(op);
	pthread_mutex_lock(&m->mu);
	if (counted)
		mq_give(&m->execs_of, owner);
	m->ops--;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static struct srv_result *error_result(int r, const struct al_error *e)
{
	struct srv_result *res = srv_result_new();
	if (res) {
		res->error = r < 0 ? r : -EIO;
		res->err = *e;
	}
	return res;
}

static void output_cb(void *cookie, int stream, const char *data, size_t len)
{
	struct srv_op *op = cookie;
	if (op->sink.on_output)
		op->sink.on_output(op->sink.cookie, stream == 2 ? SRV_STDERR : SRV_STDOUT, data, len);
}

/* Runs policy p (argv set by the caller) in s, streaming output: 0 and *v, or -errno. With network,
 * the sandbox's posture; without, the exec gets a network namespace of its own (lo only, up). */
static int run_in(struct srv_op *op, struct sbx *s, struct al_policy *p, bool network, struct al_verdict **v,
		  struct al_error *err)
{
	struct sbm *m = op->m;
	int r = al_policy_set_sandbox(p, s->sb, err);
	if (r < 0)
		return r;
	if (network && s->net == AL_NET_ALLOW) { /* the proxy variables of the sandbox's posture */
		r = al_policy_set_network(p, AL_NET_ALLOW, err);
		if (r == 0 && *s->net_hosts)
			r = al_policy_allow_hosts(p, s->net_hosts, err);
		if (r < 0)
			return r;
	}
	struct al_spawn_opts so = {.size = sizeof(so), .stdin_fd = -1, .on_output = output_cb, .on_output_cookie = op};
	struct al_job *job = NULL;
	r = al_job_spawn(p, &so, &job, err);
	if (r == 0) {
		pthread_mutex_lock(&m->mu);
		s->running = job;
		/* Destroyed or stopping since the turn was taken: unlist_locked found no job to kill. */
		bool gone = m->stopping || (op->sandbox_id && !s->listed);
		pthread_mutex_unlock(&m->mu);
		pthread_mutex_lock(&op->mu);
		op->job = job;
		if (op->cancelled || gone)
			al_job_kill(job);
		pthread_mutex_unlock(&op->mu);
		r = al_job_wait(job, v, err);
		pthread_mutex_lock(&op->mu);
		op->job = NULL;
		pthread_mutex_unlock(&op->mu);
		pthread_mutex_lock(&m->mu);
		s->running = NULL;
		pthread_mutex_unlock(&m->mu);
		al_job_free(job);
	}
	return r;
}

/* Under m->mu: whether op was cancelled (lock order: m->mu, then op->mu). */
static bool cancelled_locked(struct srv_op *op)
{
	pthread_mutex_lock(&op->mu);
	bool c = op->cancelled;
	pthread_mutex_unlock(&op->mu);
	return c;
}

/*
 * Waits for s's turn and an exec slot (server.max_execs), and takes both: 0, or -errno with err
 * set when the exec must never run: its wall-clock limit wall_ms (AL_UNLIMITED: none) passed
 * since the request was accepted (ETIMEDOUT), it was cancelled, its sandbox was destroyed
 * (persistent sandboxes only: a throwaway one is never listed) or the server stops.
 */
static int exec_turn(struct sbm *m, struct srv_op *op, struct sbx *s, bool persistent, uint64_t wall_ms,
		     struct al_error *err)
{
	if (!s) /* every caller has its sandbox by now; a turn in none is a bug, not a crash */
		return al_err(err, EIO, "no sandbox");
	unsigned max = m->o.cfg->server.max_execs;
	uint64_t deadline = wall_ms == AL_UNLIMITED || wall_ms > UINT64_MAX - op->started_ms ? UINT64_MAX
											     : op->started_ms + wall_ms;
	int r = 0;
	pthread_mutex_lock(&m->mu);
	for (;;) {
		if (m->stopping) {
			r = al_err(err, ESHUTDOWN, "the server is shutting down");
			break;
		}
		if (cancelled_locked(op)) {
			r = al_err(err, ECANCELED, "cancelled before it ran");
			break;
		}
		if (persistent && !s->listed) {
			r = al_err(err, ENOENT,
				   "sandbox %s was destroyed before the execution could start: it never ran", s->id);
			break;
		}
		if (!s->busy && (!max || m->execs < max)) {
			s->busy = true;
			m->execs++;
			m->st.execs_running++;
			break;
		}
		uint64_t now = now_ms();
		if (now >= deadline) {
			char why[96];
			if (s->busy)
				snprintf(why, sizeof(why), "another execution of this sandbox was running");
			else
				snprintf(why, sizeof(why), "every execution slot was taken (server.max_execs %u)", max);
			r = al_err(err, ETIMEDOUT, "timed out after %.1f s waiting to start, so the code never ran: %s",
				   (double)(now - op->started_ms) / 1000.0, why);
			break;
		}
		if (deadline == UINT64_MAX) {
			pthread_cond_wait(&m->cv, &m->mu);
		} else {
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			uint64_t left = deadline - now;
			t.tv_sec += (time_t)(left / 1000);
			t.tv_nsec += (long)(left % 1000) * 1000000L;
			if (t.tv_nsec >= 1000000000L) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&m->cv, &m->mu, &t);
		}
	}
	pthread_mutex_unlock(&m->mu);
	return r;
}

static void exec_turn_done(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	s->busy = false;
	m->execs--;
	m->st.execs_running--;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

/* Where an interpreted language's code file goes: beneath .airlock/, so the client's own main.py
 * stays its own. */
static void code_path(const struct cfg_language *l, char *rel, size_t cap)
{
	snprintf(rel, cap, SBM_CODE_DIR "/%s", l->file);
}

/* The argv and limits of language lang: interpreted languages read their file from
 * /workspace/.airlock (the client's own files stay untouched), with /workspace importable. No side
 * effect: write_code puts the code in, once the exec has its turn. */
static int exec_policy(struct sbm *m, const struct sbx *s, const struct srv_op *op, struct al_policy **out,
		       struct al_error *err)
{
	const struct cfg_language *l = cfg_language(m->o.cfg, op->language);
	if (!l)
		return al_err(err, ENOENT, "unknown language \"%s\"", op->language);
	struct al_policy *p = NULL;
	int r = al_policy_new(&p);
	if (r < 0)
		return al_err(err, -r, "out of memory");
	r = lang_apply(l, op->code, op->code_len, NULL, 0, p, err);
	r = r ?: al_policy_add_env(p, "PYTHONPATH=" AL_WORKSPACE, err);
	r = r ?: cfg_apply_limits(&m->o.cfg->limits, p, true, err);
	r = r ?: set_limit_if(p, AL_LIMIT_WALL_MS, op->timeout_ms ? op->timeout_ms : s->exec_timeout_ms, err);
	char rel[300];
	code_path(l, rel, sizeof(rel));
	for (int i = 0; r == 0 && !l->compile.n && i < p->argc; i++) {
		if (strcmp(p->argv[i], l->file) != 0)
			continue;
		char *a = strdup(rel);
		if (!a) {
			r = al_err(err, ENOMEM, "out of memory");
			break;
		}
		free(p->argv[i]);
		p->argv[i] = a;
		break;
	}
	if (r < 0) {
		al_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

/* The code files of exec_policy's p into s's workspace, through the workspace descriptor as the
 * file API's writes do. Only with s's turn held: the files under .airlock/ are the running exec's. */
static int write_code(struct sbm *m, struct sbx *s, const struct srv_op *op, const struct al_policy *p,
		      struct al_error *err)
{
	const struct cfg_language *l = cfg_language(m->o.cfg, op->language);
	if (!l)
		return al_err(err, ENOENT, "unknown language \"%s\"", op->language);
	char rel[300];
	code_path(l, rel, sizeof(rel));
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(s->sb, &uid, &gid);
	struct ws_cred saved;
	ws_become(uid, gid, &saved);
	/* The code files and their directory are ours: a FIFO or symlink the last exec's code left in
	 * their place is removed (never opened: that could block this thread), so one exec cannot
	 * break the next. */
	int r = ws_clear_special(al_sandbox_workspace(s->sb), SBM_CODE_DIR, uid, gid, err);
	r = r < 0 ? r : 0;
	for (size_t i = 0; r == 0 && i < p->nfiles; i++) {
		const char *dest = l->compile.n ? p->files[i].dest : rel;
		r = ws_clear_special(al_sandbox_workspace(s->sb), dest, uid, gid, err);
		if (r >= 0)
			r = ws_write(al_sandbox_workspace(s->sb), dest, p->files[i].data, p->files[i].len, uid, gid,
				     err);
	}
	ws_restore(&saved);
	return r;
}

/* exec and install: the sandbox named, or a throwaway one made for this call. */
static void *exec_thread(void *arg)
{
	struct srv_op *op = arg;
	struct sbm *m = op->m;
	struct al_error err = {0};
	struct srv_result *res = NULL;
	struct sbx *s = NULL;
	struct al_policy *p = NULL;
	struct al_verdict *v = NULL;
	bool throwaway = !op->sandbox_id, turn = false;
	int r = 0;
	if (throwaway) {
		const char *profile = m->o.default_profile ? m->o.default_profile : SBM_DEFAULT_PROFILE;
		struct srv_limits lim = {0};
		s = op->network ? NULL : claim_pooled(m, profile, op->owner, false);
		if (!s && (r = new_sandbox(m, profile, NULL, op->network, op->hosts, &lim, false, &s, &err)) == 0 &&
		    s) {
			s->refs = 1;
			pthread_mutex_lock(&m->mu);
			m->st.created++;
			m->st.destroyed++; /* counted as it is made: it is never listed */
			pthread_mutex_unlock(&m->mu);
		} else if (s) {
			pthread_mutex_lock(&m->mu);
			unlist_locked(m, s); /* a claimed spare becomes this call's alone */
			s->refs--;
			pthread_mutex_unlock(&m->mu);
		}
	} else if (!(s = sbx_get(m, op->sandbox_id, op->owner, &err))) {
		r = -ENOENT;
	} else if (op->network && s->net != AL_NET_ALLOW) {
		r = al_err(&err, EPERM,
			   "sandbox %s was created without network access: create one with network_enabled", s->id);
	} else if (op->network && *op->hosts && !same_hosts(op->hosts, s->net_hosts)) {
		r = al_err(&err, EPERM,
			   "sandbox %s reaches only the domains it was created with (%s): an exec can use them or no "
			   "network, not others",
			   s->id, *s->net_hosts ? s->net_hosts : "its profile's registries");
	}
	if (r == 0 && !s)
		r = al_err(&err, EIO, "no sandbox");
	if (r == 0 && op->kind == OP_EXEC)
		r = exec_policy(m, s, op, &p, &err);
	if (r == 0 && s && op->kind == OP_INSTALL) {
		struct inst_net net = {.posture = s->net, .hosts = s->net_hosts};
		r = inst_policy(m->o.cfg, op->manager, op->packages, op->npackages, &net, &p, &err);
	}
	if (r == 0 && !p) {
		al_err(&err, EINVAL, "no policy for this operation");
		r = -EINVAL;
	}
	/* Its turn in the sandbox and a slot, within its own wall-clock limit; then its code goes in. */
	if (r == 0)
		turn = (r = exec_turn(m, op, s, !throwaway, al_policy_get_limit(p, AL_LIMIT_WALL_MS), &err)) == 0;
	if (r == 0 && op->kind == OP_EXEC)
		r = write_code(m, s, op, p, &err);
	if (r == 0)
		r = run_in(op, s, p, op->kind == OP_INSTALL || op->network, &v, &err);
	if (turn)
		exec_turn_done(m, s);
	al_policy_free(p);
	if (r == 0 && (res = srv_result_new())) {
		res->verdict = v;
		v = NULL;
		if (!throwaway && !(res->sandbox_id = strdup(s->id))) {
			srv_result_free(res);
			res = NULL;
		}
	} else if (r < 0) {
		res = error_result(r, &err);
	}
	al_verdict_free(v);
	if (s)
		sbx_put(m, s);
	op_finish(op, res);
	return NULL;
}

/* The answer to a create: s's id. s is listed and holds the caller's reference, given up here. */
static struct srv_result *created(struct sbm *m, struct sbx *s)
{
	struct srv_result *res = srv_result_new();
	if (res && !(res->sandbox_id = strdup(s->id))) {
		srv_result_free(res);
		res = NULL;
	}
	pthread_mutex_lock(&m->mu);
	s->refs--; /* the table keeps it */
	pthread_mutex_unlock(&m->mu);
	return res;
}

static void *create_thread(void *arg)
{
	struct srv_op *op = arg;
	struct sbm *m = op->m;
	struct al_error err = {0};
	struct sbx *s = NULL;
	const char *profile = op->profile	     ? op->profile
			      : m->o.default_profile ? m->o.default_profile
						     : SBM_DEFAULT_PROFILE;
	struct srv_limits none = {0};
	bool plain = !op->network && !op->image && memcmp(&op->limits, &none, sizeof(none)) == 0;
	int r = 0;
	if (plain)
		s = claim_pooled(m, profile, op->owner, true); /* listed, with our reference */
	unsigned max = m->o.cfg->server.max_sandboxes;
	pthread_mutex_lock(&m->mu);
	bool full = !s && max && m->live >= max; /* checked again when listed: this spares a build */
	pthread_mutex_unlock(&m->mu);
	if (full)
		r = al_err(&err, EAGAIN, "limit reached: %u live sandboxes (server.max_sandboxes)", max);
	if (!s && !full &&
	    (r = new_sandbox(m, profile, op->image, op->network, op->hosts, &op->limits, false, &s, &err)) == 0 && s) {
		s->refs = 1;		 /* ours; list_sandbox adds the table's */
		set_owner(s, op->owner); /* before it is listed: never visible without its owner */
		if ((r = list_sandbox(m, s, &err)) < 0) {
			sbx_free(s);
			s = NULL;
		}
	}
	op_finish(op, r < 0 || !s ? error_result(r < 0 ? r : -EIO, &err) : created(m, s));
	return NULL;
}

static int start_thread(struct sbm *m, struct srv_op *op, void *(*fn)(void *), struct srv_op **out,
			struct al_error *err)
{
	unsigned qe = m->o.cfg->server.quota_execs ? m->o.cfg->server.quota_execs : CFG_QUOTA_EXECS;
	pthread_mutex_lock(&m->mu);
	if (m->stopping) {
		pthread_mutex_unlock(&m->mu);
		op_free(op);
		return al_err(err, ESHUTDOWN, "the server is shutting down");
	}
	/* Executions a principal has queued or running: one client's flood waits in nobody's way. */
	int q = op->kind == OP_CREATE ? 0 : mq_take(&m->execs_of, op->owner, qe);
	if (q < 0) {
		pthread_mutex_unlock(&m->mu);
		int e = q == -EAGAIN ? al_err(err, EAGAIN,
					      "quota reached: %s runs %u executions at once (server.quota.execs)",
					      op->owner[0] ? op->owner : "this client", qe)
				     : al_err(err, ENOMEM, "out of memory");
		op_free(op);
		return e;
	}
	op->counted = op->kind != OP_CREATE;
	m->ops++;
	pthread_mutex_unlock(&m->mu);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int r = pthread_create(&t, &a, fn, op);
	pthread_attr_destroy(&a);
	if (r != 0) {
		pthread_mutex_lock(&m->mu);
		m->ops--;
		if (op->counted)
			mq_give(&m->execs_of, op->owner);
		pthread_mutex_unlock(&m->mu);
		op_free(op);
		return al_err(err, r, "cannot start a worker thread");
	}
	*out = op;
	return 0;
}

static int m_create(void *ctx, const struct srv_create_req *req, const struct srv_sink *sink, struct srv_op **out,
		    struct al_error *err)
{
	struct sbm *m = ctx;
	struct srv_op *op = op_new(m, OP_CREATE, sink);
	if (!op)
		return al_err(err, ENOMEM, "out of memory");
	op->network = req->network_enabled;
	op->limits = req->limits;
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->profile = req->profile ? strdup(req->profile) : NULL;
	op->image = req->image ? strdup(req->image) : NULL;
	op->hosts = join_hosts(req->allowed_domains, req->n_allowed_domains);
	if ((req->profile && !op->profile) || (req->image && !op->image) || !op->hosts) {
		op_free(op);
		return al_err(err, EINVAL, "bad allowed_domains (a host name may not contain ',')");
	}
	if (req->profile && !cfg_profile(m->o.cfg, req->profile)) {
		op_free(op);
		return al_err(err, ENOENT, "unknown profile \"%s\"", req->profile);
	}
	/* A warm spare is only a table entry away: answered here, without a worker thread (whose
	 * start, stack and malloc arena would cost more than the claim). */
	struct srv_limits none = {0};
	pthread_mutex_lock(&m->mu);
	bool stopping = m->stopping;
	pthread_mutex_unlock(&m->mu);
	struct sbx *s = NULL;
	if (!stopping && !op->network && !op->image && memcmp(&op->limits, &none, sizeof(none)) == 0)
		s = claim_pooled(m,
				 op->profile		? op->profile
				 : m->o.default_profile ? m->o.default_profile
							: SBM_DEFAULT_PROFILE,
				 req->owner, true);
	if (!s)
		return start_thread(m, op, create_thread, out, err);
	op_free(op);
	sink->on_done(sink->cookie, created(m, s));
	*out = NULL;
	return 0;
}

/* A named sandbox that does not exist (or is another principal's) fails the start call itself, as
 * the file operations do: the client gets its 404 at once, not a stream that ends in an error. The
 * worker looks it up again (it may be destroyed meanwhile). */
static int known(struct sbm *m, const char *id, const char *owner, struct al_error *err)
{
	struct sbx *s = id ? sbx_get(m, id, owner, err) : NULL;
	if (id && !s)
		return -ENOENT;
	if (s)
		sbx_put(m, s);
	return 0;
}

/* ---- interpreter contexts (context.c does the work; this is the sandbox's side) ---------------- */

/* Whether an exec request is a cell: in a sandbox, a language with a kernel, not fresh. Cells have
 * no network (a kernel's pid and network namespaces are its own): network_enabled runs fresh. */
static bool cell_wanted(const struct srv_exec_req *req)
{
	return req->sandbox_id && !req->fresh && !req->network_enabled && ctx_language_supported(req->language);
}

/* s's contexts, made on first use: 0, or -ENOMEM. */
static int sbx_contexts(struct sbm *m, struct sbx *s, struct ctx_set **out)
{
	pthread_mutex_lock(&m->mu);
	int r = s->ctxs ? 0 : ctx_set_new(&s->ctxs);
	*out = s->ctxs;
	pthread_mutex_unlock(&m->mu);
	return r;
}

static void *cell_thread(void *arg)
{
	struct srv_op *op = arg;
	struct sbm *m = op->m;
	struct al_error err = {0};
	struct srv_result *res = NULL;
	struct ctx_set *cs = NULL;
	struct sbx *s = sbx_get(m, op->sandbox_id, op->owner, &err);
	int r = !s ? -ENOENT : sbx_contexts(m, s, &cs) < 0 ? al_err(&err, ENOMEM, "out of memory") : 0;
	if (r == 0) {
		struct ctx_env env = {.sb = s->sb, .cfg = m->o.cfg, .timeout_ms = op->timeout_ms ?: s->exec_timeout_ms};
		if (op->kind == OP_CELL) {
			struct ctx_cell_req q = {.language = op->language,
						 .context_id = op->context_id,
						 .code = op->code,
						 .code_len = op->code_len,
						 .cancel_fd = op->cancel_fd,
						 .on_output = output_cb,
						 .cookie = op};
			/* A cell is an exec for the server's limits: it takes the sandbox's turn and a slot
			 * (server.max_execs), waiting at most its own time limit (none set: until cancelled). */
			r = exec_turn(m, op, s, true, env.timeout_ms ? env.timeout_ms : AL_UNLIMITED, &err);
			if (r == 0) {
				r = ctx_run_cell(cs, &env, &q, &res, &err);
				exec_turn_done(m, s);
			}
			/* No kernel for this language in this sandbox (its root lacks the interpreter the
			 * kernel needs, e.g. an image without python3): the default context's cell runs
			 * as a fresh exec instead, as before contexts; a named context is an error. */
			if (r == -ENOEXEC && !op->context_id) {
				sbx_put(m, s);
				op->kind = OP_EXEC;
				return exec_thread(op);
			}
		} else {
			struct srv_context_req q = {.sandbox_id = op->sandbox_id,
						    .action = op->action,
						    .language = op->language,
						    .context_id = op->context_id};
			r = ctx_manage(cs, &env, &q, &res, &err);
		}
	}
	if (r == 0 && !(res->sandbox_id = strdup(s->id)))
		r = al_err(&err, ENOMEM, "out of memory");
	if (r < 0) {
		srv_result_free(res);
		res = error_result(r, &err);
	}
	if (s)
		sbx_put(m, s);
	op_finish(op, res);
	return NULL;
}

static int start_cell(struct sbm *m, struct srv_op *op, const struct srv_exec_req *req, struct srv_op **out,
		      struct al_error *err)
{
	op->kind = OP_CELL;
	op->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	op->context_id = req->context_id ? strdup(req->context_id) : NULL;
	if (op->cancel_fd < 0 || (req->context_id && !op->context_id)) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
	return start_thread(m, op, cell_thread, out, err);
}

static int m_context(void *ctx, const struct srv_context_req *req, const struct srv_sink *sink, struct srv_op **out,
		     struct al_error *err)
{
	struct sbm *m = ctx;
	if (!req->sandbox_id || !req->action)
		return al_err(err, EINVAL, "contexts live in a sandbox: sandbox_id and action are required");
	struct srv_op *op = op_new(m, OP_CONTEXT, sink);
	if (!op)
		return al_err(err, ENOMEM, "out of memory");
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->sandbox_id = strdup(req->sandbox_id);
	op->action = strdup(req->action);
	op->language = req->language ? strdup(req->language) : NULL;
	op->context_id = req->context_id ? strdup(req->context_id) : NULL;
	if (!op->sandbox_id || !op->action || (req->language && !op->language) ||
	    (req->context_id && !op->context_id)) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
	return start_thread(m, op, cell_thread, out, err);
}

static int m_exec(void *ctx, const struct srv_exec_req *req, const struct srv_sink *sink, struct srv_op **out,
		  struct al_error *err)
{
	struct sbm *m = ctx;
	if (!cfg_language(m->o.cfg, req->language))
		return al_err(err, ENOENT, "unknown language \"%s\"", req->language);
	if (known(m, req->sandbox_id, req->owner, err) < 0)
		return -ENOENT;
	struct srv_op *op = op_new(m, OP_EXEC, sink);
	if (!op)
		return al_err(err, ENOMEM, "out of memory");
	op->sandbox_id = req->sandbox_id ? strdup(req->sandbox_id) : NULL;
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->language = strdup(req->language);
	op->code = malloc(req->code_len + 1);
	op->code_len = req->code_len;
	op->timeout_ms = req->timeout_ms;
	op->network = req->network_enabled;
	op->hosts = join_hosts(req->allowed_domains, req->n_allowed_domains);
	if (!op->language || !op->code || (req->sandbox_id && !op->sandbox_id) || !op->hosts) {
		op_free(op);
		return al_err(err, EINVAL, "bad request (out of memory, or a host name with ',')");
	}
	memcpy(op->code, req->code, req->code_len);
	op->code[req->code_len] = 0;
	if (cell_wanted(req))
		return start_cell(m, op, req, out, err);
	if (req->context_id && !req->fresh) { /* named a context it cannot have: say so, never run elsewhere */
		op_free(op);
		return al_err(err, EINVAL,
			      "context_id needs a sandbox_id, a language with contexts (python, javascript, "
			      "shell) and no network_enabled");
	}
	return start_thread(m, op, exec_thread, out, err);
}

static int m_install(void *ctx, const struct srv_install_req *req, const struct srv_sink *sink, struct srv_op **out,
		     struct al_error *err)
{
	struct sbm *m = ctx;
	if (!req->sandbox_id)
		return al_err(err, EINVAL,
			      "install_package needs a sandbox_id (packages live in a sandbox's workspace)");
	if (strcmp(req->manager, "pip") != 0 && strcmp(req->manager, "npm") != 0)
		return al_err(err, EINVAL, "unknown package manager \"%s\" (pip or npm)", req->manager);
	for (size_t i = 0; i < req->n_packages; i++)
		if (!req->packages[i][0] || req->packages[i][0] == '-')
			return al_err(err, EINVAL, "bad package name \"%s\"", req->packages[i]);
	if (known(m, req->sandbox_id, req->owner, err) < 0)
		return -ENOENT;
	struct srv_op *op = op_new(m, OP_INSTALL, sink);
	if (!op)
		return al_err(err, ENOMEM, "out of memory");
	op->sandbox_id = strdup(req->sandbox_id);
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->manager = strdup(req->manager);
	op->packages = calloc(req->n_packages + 1, sizeof(char *));
	bool ok = op->sandbox_id && op->manager && op->packages;
	for (size_t i = 0; ok && i < req->n_packages; i++)
		ok = (op->packages[op->npackages++] = strdup(req->packages[i])) != NULL;
	if (!ok) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
	return start_thread(m, op, exec_thread, out, err);
}

/* The file operations finish in the start call (the contract allows it): *out stays NULL. */
static int m_write(void *ctx, const struct srv_write_req *req, const struct srv_sink *sink, struct srv_op **out,
		   struct al_error *err)
{
	struct sbx *s = sbx_get(ctx, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(s->sb, &uid, &gid);
	struct ws_cred saved;
	ws_become(uid, gid, &saved);
	int r = ws_write(al_sandbox_workspace(s->sb), req->path, req->data, req->len, uid, gid, err);
	ws_restore(&saved);
	sbx_put(ctx, s);
	if (r < 0)
		return r;
	struct srv_result *res = srv_result_new();
	if (res)
		res->bytes = req->len;
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

static int m_read(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		  struct al_error *err)
{
	struct sbx *s = sbx_get(ctx, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	char *data = NULL;
	size_t len = 0;
	int fd = -1;
	uid_t uid;
	gid_t gid;
	struct ws_cred saved;
	al_sandbox_owner(s->sb, &uid, &gid);
	ws_become(uid, gid, &saved);
	/* want_fd: the caller streams the file from the descriptor, in bounded pieces. */
	int r = req->want_fd ? ws_open(al_sandbox_workspace(s->sb), req->path, &fd, &len, err)
			     : ws_read(al_sandbox_workspace(s->sb), req->path, &data, &len, err);
	ws_restore(&saved);
	sbx_put(ctx, s);
	if (r < 0)
		return r;
	struct srv_result *res = srv_result_new();
	if (res) {
		res->data = data;
		res->len = len;
		res->fd = fd;
	} else {
		free(data);
		if (fd >= 0)
			close(fd);
	}
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

static int m_list(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		  struct al_error *err)
{
	struct sbx *s = sbx_get(ctx, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	struct srv_file_entry *e = NULL;
	size_t n = 0;
	uid_t uid;
	gid_t gid;
	struct ws_cred saved;
	al_sandbox_owner(s->sb, &uid, &gid);
	ws_become(uid, gid, &saved);
	int r = ws_list(al_sandbox_workspace(s->sb), req->path, &e, &n, err);
	ws_restore(&saved);
	sbx_put(ctx, s);
	if (r < 0)
		return r;
	struct srv_result *res = srv_result_new();
	if (res) {
		res->entries = e;
		res->n_entries = n;
	} else {
		for (size_t i = 0; i < n; i++)
			free(e[i].name);
		free(e);
	}
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

static int m_destroy(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		     struct al_error *err)
{
	struct sbm *m = ctx;
	struct sbx *s = sbx_get(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	pthread_mutex_lock(&m->mu);
	bool listed = s->listed;
	if (listed) {
		unlist_locked(m, s);
		s->refs--; /* the table's reference */
	}
	pthread_mutex_unlock(&m->mu);
	sbx_put(m, s); /* ours: the last one destroys it (now, unless an exec still ends) */
	if (!listed)
		return al_err(err, ENOENT, "no sandbox \"%s\"", req->sandbox_id);
	struct srv_result *res = srv_result_new();
	if (res && !(res->sandbox_id = strdup(req->sandbox_id))) {
		srv_result_free(res);
		res = NULL;
	}
	sink->on_done(sink->cookie, res);
	*out = NULL;
	return 0;
}

static void m_cancel(void *ctx, struct srv_op *op)
{
	(void)ctx;
	if (!op)
		return;
	pthread_mutex_lock(&op->mu);
	op->cancelled = true;
	if (op->job)
		al_job_kill(op->job);
	if (op->cancel_fd >= 0) /* a cell: interrupted first, its kernel killed only if that fails */
		(void)eventfd_write(op->cancel_fd, 1);
	pthread_mutex_unlock(&op->mu);
	/* An exec waiting for its turn checks cancelled under m->mu: taking it here means the
	 * broadcast cannot fall between that check and its wait. */
	pthread_mutex_lock(&op->m->mu);
	pthread_cond_broadcast(&op->m->cv);
	pthread_mutex_unlock(&op->m->mu);
}

static void m_release(void *ctx, struct srv_op *op)
{
	(void)ctx;
	if (!op)
		return;
	pthread_mutex_lock(&op->mu);
	op->released = true;
	bool done = op->done;
	pthread_mutex_unlock(&op->mu);
	if (done)
		op_free(op);
}

/* The monotonic stamps of the table, on the wall clock (what a client can read). */
static uint64_t unix_ms(uint64_t mono_ms, uint64_t mono_now, uint64_t wall_now)
{
	return wall_now - (mono_now >= mono_ms ? mono_now - mono_ms : 0);
}

/* Only owner's listed sandboxes: a spare (owner "") or another principal's never shows. */
static int m_list_sandboxes(void *ctx, const char *owner, struct srv_sandbox_info **out, size_t *n,
			    struct al_error *err)
{
	struct sbm *m = ctx;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	uint64_t wall_now = (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000, mono_now = now_ms();
	const char *who = owner ? owner : "";
	pthread_mutex_lock(&m->mu);
	size_t k = 0, cap = m->live ? m->live : 1;
	struct srv_sandbox_info *v = calloc(cap, sizeof(*v));
	for (struct sbx *s = m->list; v && s && k < cap; s = s->next) {
		if (s->pooled || strcmp(s->owner, who) != 0)
			continue;
		snprintf(v[k].id, sizeof(v[k].id), "%s", s->id);
		snprintf(v[k].profile, sizeof(v[k].profile), "%s", s->profile);
		v[k].created_unix_ms = unix_ms(s->created_ms, mono_now, wall_now);
		v[k].used_unix_ms = unix_ms(s->used_ms, mono_now, wall_now);
		v[k].busy = s->busy;
		k++;
	}
	pthread_mutex_unlock(&m->mu);
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	*out = v;
	*n = k;
	return 0;
}

void sbm_api(struct sbm *m, struct srv_mgr_api *api)
{
	*api = (struct srv_mgr_api){
		.ctx = m,
		.create_sandbox = m_create,
		.exec = m_exec,
		.install_package = m_install,
		.write_file = m_write,
		.read_file = m_read,
		.list_files = m_list,
		.destroy_sandbox = m_destroy,
		.context = m_context,
		.cancel = m_cancel,
		.release = m_release,
		.list_sandboxes = m_list_sandboxes,
	};
}

/* ---- expiry and the warm pool ------------------------------------------------------------ */

/* One sweep: unlists what expired (returned in *dead, to be put outside the lock). */
static struct sbx *expire_locked(struct sbm *m, uint64_t now)
{
	const struct cfg_server *c = &m->o.cfg->server;
	struct sbx *dead = NULL;
	for (struct sbx *s = m->list, *next; s; s = next) {
		next = s->next;
		bool idle = c->idle_ttl_ms && !s->pooled && s->refs == 1 && now - s->used_ms >= c->idle_ttl_ms;
		bool old = c->max_lifetime_ms && now - s->created_ms >= c->max_lifetime_ms;
		bool died = !al_sandbox_alive(s->sb) && s->refs == 1;
		if (idle || old || died) {
			unlist_locked(m, s);
			m->st.expired++;
			s->next = dead; /* the table's reference moves to the dead list */
			dead = s;
		}
	}
	return dead;
}

static unsigned pooled_locked(struct sbm *m, const char *profile)
{
	unsigned n = 0;
	for (struct sbx *s = m->list; s; s = s->next)
		n += s->pooled && strcmp(s->profile, profile) == 0;
	return n;
}

/* Makes one missing spare, if any is missing: true when it made one (more may be missing). */
static bool refill_one(struct sbm *m)
{
	const struct cfg_server *c = &m->o.cfg->server;
	for (size_t i = 0; i < c->npool; i++) {
		pthread_mutex_lock(&m->mu);
		bool need = !m->stopping && pooled_locked(m, c->pool[i].profile) < c->pool[i].count;
		pthread_mutex_unlock(&m->mu);
		if (!need)
			continue;
		struct sbx *s = NULL;
		struct al_error err = {0};
		struct srv_limits lim = {0};
		if (make_now(m, c->pool[i].profile, NULL, false, NULL, &lim, true, &s, &err) < 0)
			return false; /* the next sweep tries again */
		if (list_sandbox(m, s, &err) < 0) {
			sbx_free(s);
			return false;
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
		q->r = make_now(m, q->profile, q->image, q->network, q->hosts, q->lim, false, &q->s, &q->err);
		pthread_mutex_lock(&m->mu);
		q->done = true;
		pthread_cond_broadcast(&m->cv);
	}
}

static void *housekeeper_main(void *arg)
{
	struct sbm *m = arg;
	pthread_mutex_lock(&m->mu);
	while (!m->stopping) {
		serve_queue_locked(m);
		uint64_t now = now_ms(), wait_ms = 1000;
		bool more = false;
		if (now < m->refill_after_ms) {
			wait_ms = m->refill_after_ms - now;
		} else {
			pthread_mutex_unlock(&m->mu);
			more = refill_one(m);
			pthread_mutex_lock(&m->mu);
		}
		struct sbx *dead = m->stopping ? NULL : expire_locked(m, now_ms());
		if (dead) {
			pthread_mutex_unlock(&m->mu);
			while (dead) {
				struct sbx *next = dead->next;
				sbx_put(m, dead);
				dead = next;
			}
			pthread_mutex_lock(&m->mu);
		}
		if (!more && !m->queue && !m->stopping) {
			struct timespec t;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_sec += (time_t)(wait_ms / 1000);
			t.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
			if (t.tv_nsec >= 1000000000L) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000L;
			}
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

int sbm_new(const struct sbm_opts *o, struct sbm **out, struct al_error *err)
{
	if (!o || o->size < sizeof(struct sbm_opts) || !o->cfg)
		return al_err(err, EINVAL, "sbm_new: bad options");
	struct sbm *m = calloc(1, sizeof(*m));
	if (!m)
		return al_err(err, ENOMEM, "out of memory");
	m->o = *o;
	/* Each sandbox holds about a dozen descriptors here (control socket, workspace, init's
	 * pidfd, cgroup directories, its spare's pidfd, socket and status pipe): the usual soft limit
	 * of 1024 would refuse creates long before server.max_sandboxes. Payloads get their own
	 * limit (--open-files), whatever ours is. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	pthread_mutex_init(&m->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* exec_turn's deadlines */
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&m->hk_cv, NULL);
	const char *dp = o->default_profile ? o->default_profile : SBM_DEFAULT_PROFILE;
	if (!cfg_profile(o->cfg, dp)) {
		sbm_free(m);
		return al_err(err, ENOENT, "unknown default profile \"%s\"", dp);
	}
	if (pthread_create(&m->hk, NULL, housekeeper_main, m) != 0) {
		sbm_free(m);
		return al_err(err, EAGAIN, "cannot start the manager's housekeeping thread");
	}
	m->hk_started = true;
	*out = m;
	return 0;
}

void sbm_stats(struct sbm *m, struct sbm_stats *st)
{
	pthread_mutex_lock(&m->mu);
	*st = m->st;
	st->live = st->pooled = 0;
	for (struct sbx *s = m->list; s; s = s->next)
		*(s->pooled ? &st->pooled : &st->live) += 1;
	pthread_mutex_unlock(&m->mu);
}

void sbm_free(struct sbm *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	pthread_cond_broadcast(&m->cv);
	/* Every sandbox leaves the table (unlisting the head keeps each next pointer, so `all`
	 * still chains them); running execs are killed and end soon. */
	struct sbx *all = m->list;
	while (m->list)
		unlist_locked(m, m->list);
	pthread_cond_signal(&m->hk_cv);
	pthread_mutex_unlock(&m->mu);
	if (m->hk_started)
		pthread_join(m->hk, NULL);
	while (all) {
		struct sbx *next = all->next;
		sbx_put(m, all); /* the table's reference */
		all = next;
	}
	pthread_mutex_lock(&m->mu);
	while (m->ops > 0)
		pthread_cond_wait(&m->cv, &m->mu);
	pthread_mutex_unlock(&m->mu);
	mq_clear(&m->execs_of);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	pthread_cond_destroy(&m->hk_cv);
	free(m);
}

/* One sandbox as the approver's console shows it. Call with m->mu held: s stays listed, and its
 * cgroup is only read (a few small files). */
static json_t *sbx_json(const struct sbx *s, uint64_t now)
{
	struct al_sandbox_usage u;
	bool have = al_sandbox_usage(s->sb, &u) == 0;
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:b,s:o,s:o,s:o}", "id", s->id, "owner", s->owner, "profile",
			 s->profile ? s->profile : "", "network", pol_net_name(s->net), "hosts",
			 s->net_hosts ? s->net_hosts : "", "age_ms", (json_int_t)(now - s->created_ms), "idle_ms",
			 (json_int_t)(now - s->used_ms), "exec_running", s->busy, "cpu_s",
			 have && u.cpu_s >= 0 ? json_real(u.cpu_s) : json_null(), "memory_bytes",
			 have && u.memory_bytes ? json_integer((json_int_t)u.memory_bytes) : json_null(),
			 "peak_memory_bytes",
			 have && u.peak_memory_bytes ? json_integer((json_int_t)u.peak_memory_bytes) : json_null());
}

json_t *sbm_list_all(struct sbm *m)
{
	json_t *list = json_array();
	uint64_t now = now_ms();
	pthread_mutex_lock(&m->mu);
	for (struct sbx *s = m->list; list && s; s = s->next) {
		if (s->pooled || !s->listed)
			continue;
		if (json_array_append_new(list, sbx_json(s, now)) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return list;
}
