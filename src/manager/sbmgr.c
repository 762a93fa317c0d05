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
 * Execs of one sandbox run side by side (each reads its program from a sealed descriptor of its
 * own), up to server.max_execs_per_sandbox at once counting cells and background processes
 * (sbprocs.c), past which a call is refused at once; foreground work of every sandbox together
 * waits for one of server.max_execs slots. A cell waits for the previous cell of its context. An
 * exec waiting for a slot gives up, never to run, when its own wall-clock limit passes (counted
 * from the request), when it is cancelled, when its sandbox is destroyed or when the server stops. A housekeeping thread makes
 * every sandbox (see struct sbm), destroys those idle past server.idle_ttl, older than
 * server.max_lifetime or past their own lifetime (sblife.c: a call they cut short says why), and
 * keeps the warm pool (server.pool) filled.
 */
#include "manager/sbmint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "manager/persist.h"
#include "network/secrets.h"
#include "network/tlsca.h"
#include "policy/policy.h"
#include "util/error.h"
uint64_t sbm_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the table ------------------------------------------------------------------------- */

void sbx_free(struct sbx *s)
{
	if (!s)
		return;
	ctx_set_free(s->ctxs); /* the kernels run in s->sb */
	sbproc_free_all(s);
	sbp_release(s); /* kept (the server stops) or removed from disk, before its workspace goes */
	al_sandbox_destroy(s->sb);
	al_secrets_unref(s->secrets); /* the last reference (its proxy's went with it) wipes the values */
	tca_unref(s->tls_ca);
	free(s->profile);
	free(s->net_hosts);
	free(s->pool_image);
	free(s->root);
	free(s->meta_json);
	json_decref(s->ctx_names);
	json_decref(s->layers);
	free(s->port_tokens);
	free(s);
}

/* Drops one reference; the last one destroys the sandbox (outside the lock: it reaps). An
 * operation ending is a use: idle time counts from here, so an exec longer than server.idle_ttl
 * does not leave its sandbox to expire at the next sweep. */
void sbx_put(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	s->used_ms = sbm_now_ms();
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&m->mu);
	if (last)
		sbx_free(s);
}

/* Under m->mu: takes s off the table (its operations keep it until they end). */
void sbx_unlist_locked(struct sbm *m, struct sbx *s)
{
	for (struct sbx **pp = &m->list; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			s->listed = false;
			m->live--;
			m->st.destroyed++;
			for (struct sbrun *run = s->runs; run; run = run->next)
				al_job_kill(run->job);
			sbproc_kill_all_locked(s);
			ctx_set_kill(s->ctxs); /* its contexts' kernels too: a running cell ends here */
			/* Paused: what was just killed dies only once thawed (v1), and the calls that wait
			 * for it hold the sandbox; the rest ends with it (al_sandbox_destroy). */
			if (s->frozen && al_sandbox_resume(s->sb, NULL) == 0)
				s->frozen = false;
			pthread_cond_broadcast(&m->cv); /* an exec waiting for its turn in s gives up */
			return;
		}
}

/* The sandbox id, if owner owns it. Another principal's sandbox is "no sandbox", in the very words
 * of an unknown id: an answer must not confirm that an id it may not use exists. */
struct sbx *sbx_get(struct sbm *m, const char *id, const char *owner, struct al_error *err)
{
	struct sbx *s = sbx_find(m, id, owner, err);
	if (s && sbx_back(m, s, NULL, err) < 0) {
		sbx_put(m, s);
		return NULL;
	}
	return s;
}

struct sbx *sbx_find(struct sbm *m, const char *id, const char *owner, struct al_error *err)
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
		s->used_ms = sbm_now_ms();
	}
	/* One that ended lately is named, with why, to its owner only (life_gone_locked matches the
	 * owner): to anyone else it stays the unknown id below. */
	char gone[AL_ERROR_MAX];
	bool ended = !s && life_gone_locked(m, id, owner ? owner : "", gone, sizeof(gone));
	pthread_mutex_unlock(&m->mu);
	/* Until sandboxes survive a restart: one of ours from before it is said to be lost, to its owner
	 * only (to anyone else it is unknown, as above). */
	const char *was = m->o.lost ? json_string_value(json_object_get(m->o.lost, id)) : NULL;
	const json_t *held = json_object_get(m->held_back, id);
	const char *held_owner = json_string_value(json_object_get(held, "owner"));
	if (ended)
		al_err(err, ENOENT, "%s", gone);
	else if (!s && held_owner && strcmp(held_owner, owner ? owner : "") == 0)
		al_err(err, ENOENT, "sandbox %s is kept in %s, but this server could not bring it back: %s", id,
		       pst_path(m->pst), json_string_value(json_object_get(held, "why")));
	else if (!s && was && strcmp(was, owner ? owner : "") == 0)
		al_err(err, ENOENT, "sandbox %s was lost when the server restarted (its processes and files are gone)",
		       id);
	else if (!s)
		al_err(err, ENOENT, "no sandbox \"%s\" (never created, destroyed, or expired)", id);
	return s;
}

/* Each idle sandbox holds about 24 descriptors here on a hybrid host (bench/density.sh: control
 * socket, workspace, init's pidfd, its job's pipes, timer and epoll, a directory per cgroup
 * hierarchy of the sandbox and of its code's cgroup, the seven counters of the latter and the
 * sandbox's own pids.events, which each exec reads), so the usual soft limit of 1024 refuses
 * creates long before server.max_sandboxes, and a hard limit of 20000 at ~830. The soft limit goes
 * to the hard one, and as root (CAP_SYS_RESOURCE) both to the kernel's fs.nr_open, up to what
 * max_sandboxes needs. Payloads get their own limit (--open-files), whatever ours is. */
static void raise_nofile_to(rlim_t want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (want > rl.rlim_max) {
		struct rlimit up = {want, want};
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static rlim_t nr_open(void)
{
	char buf[32] = "";
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	unsigned long long n = strtoull(buf, NULL, 10);
	return n ? (rlim_t)n : 1048576;
}

static void make_id(char id[SBM_ID_LEN + 1])
{
	unsigned char r[8] = {0};
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t t = sbm_now_ms() ^ (uint64_t)getpid() << 32;
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
bool hosts_same(const char *a, const char *b)
{
	return hosts_within(a, b) && hosts_within(b, a);
}

/* "a,b,c" from the client's domain list (each checked by the allowlist parser later). */
char *hosts_join(const char *const *v, size_t n)
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

/* How many host entries the profile's registries name (0 for a profile without an allowlist). */
static size_t profile_hosts(const struct cfg *c, const struct cfg_profile *pr)
{
	size_t n = 0;
	for (size_t i = 0; pr->net == AL_NET_ALLOW && i < pr->registries.n; i++) {
		const struct cfg_registry *reg = cfg_registry(c, pr->registries.v[i]);
		n += reg ? reg->hosts.n : 0;
	}
	return n;
}

int sbm_network_check(const struct sbm *m, const char *profile, bool network, const char *hosts, struct al_error *err)
{
	const struct cfg_profile *pr = profile ? cfg_profile(m->o.cfg, profile) : NULL;
	if (!network || (hosts && *hosts) || !pr || profile_hosts(m->o.cfg, pr) > 0)
		return 0;
	return al_err(err, EINVAL,
		      "network_enabled: profile %s allows no host (it names no registry with hosts) and the request "
		      "names no allowed_domains, so nothing could be reached; name the hosts in allowed_domains, or "
		      "use a profile whose network lists registries",
		      profile);
}

int sbm_set_limit_if(struct al_policy *p, enum al_limit l, uint64_t v, struct al_error *err)
{
	return v ? al_policy_set_limit(p, l, v, err) : 0;
}

/* The creation policy: configuration limits, the profile's posture, the client's knobs; with
 * network, the client's hosts through the egress proxy (the profile's registries stay allowed). */
/* The workspace over layers: each layer's files, the top first. */
static int add_layers(struct sbm *m, struct al_policy *p, const json_t *layers, struct al_error *err)
{
	size_t i;
	const json_t *v;
	int r = json_array_size(layers) && !m->pst ? al_err(err, ENOTSUP, "layers need a state directory") : 0;
	json_array_foreach(layers, i, v) {
		char path[PATH_MAX];
		if (r == 0 &&
		    pst_layer_path(m->pst, json_string_value(v) ? json_string_value(v) : "", path, sizeof(path)) < 0)
			r = al_err(err, EINVAL, "bad layer id in a sandbox's record");
		r = r ?: al_policy_add_ws_layer(p, path, err);
	}
	return r;
}

static int create_policy(struct sbm *m, const char *owner, const char *profile, const char *image, bool network,
			 const char *hosts, const struct srv_limits *lim, const json_t *layers, struct al_policy **out,
			 enum al_net_posture *net, struct al_error *err)
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
	/* The profile's secrets: those of every principal, and the owner's own (a spare has none). */
	r = r ?: cfg_apply_profile(c, pr, owner && *owner ? owner : NULL, p, err);
	/* An image changes the system directories only; the posture stays the profile's. */
	if (r == 0 && image)
		r = cfg_profile_image_allowed(pr, image, err) ?: al_policy_set_image(p, image, err);
	r = r ?: sbm_set_limit_if(p, AL_LIMIT_MEMORY, lim->memory_bytes, err);
	r = r ?: sbm_set_limit_if(p, AL_LIMIT_CPUS, lim->milli_cpus, err);
	r = r ?: sbm_set_limit_if(p, AL_LIMIT_PIDS, lim->pids, err);
	r = r ?: sbm_set_limit_if(p, AL_LIMIT_DISK, lim->disk_bytes, err);
	/* Every language's host paths: any of them may run in this sandbox later. */
	for (size_t i = 0; r == 0 && i < c->nlanguages; i++)
		for (size_t k = 0; r == 0 && k < c->languages[i].paths.n; k++)
			if (access(c->languages[i].paths.v[k], F_OK) == 0)
				r = al_policy_add_bind(p, c->languages[i].paths.v[k], NULL, false, err);
	r = r ?: cfg_apply_etc(c, p, err);
	r = r ?: add_layers(m, p, layers, err);
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

/* Descriptors one more sandbox may take while it is made and held (bench/density.sh: ~30 held). */
#define SBM_FDS_PER_SANDBOX 64

/* Whether the server's descriptor limit has room for one more sandbox. Past it, its setup fails
 * in whichever step opens a file first, in words that name that step (a cgroup controller "not
 * writable"), not the limit: refused here instead. The lowest free descriptor is about how many
 * are open (the kernel hands out the lowest). */
static int room_for_descriptors(struct sbm *m, struct al_error *err)
{
	struct rlimit rl;
	int fd = open("/", O_PATH | O_CLOEXEC);
	int e = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    (e == 0 && (rlim_t)fd + SBM_FDS_PER_SANDBOX < rl.rlim_cur))
		return 0;
	pthread_mutex_lock(&m->mu);
	unsigned n = 0;
	for (const struct sbx *s = m->list; s; s = s->next)
		n++;
	pthread_mutex_unlock(&m->mu);
	return al_err(err, EAGAIN,
		      "the server's descriptor limit (%llu open files) has no room for another sandbox beside its %u "
		      "(each holds about 25): raise it (LimitNOFILE=, ulimit -n) or lower server.max_sandboxes",
		      (unsigned long long)rl.rlim_cur, n);
}

int sbx_make_now(struct sbm *m, const char *owner, const char *profile, const char *image, bool network,
		 const char *hosts, const struct srv_limits *lim, const json_t *layers, bool pooled, struct sbx **out,
		 struct al_error *err)
{
	int fr = room_for_descriptors(m, err);
	if (fr < 0)
		return fr;
	struct sbx *s = calloc(1, sizeof(*s));
	if (!s)
		return al_err(err, ENOMEM, "out of memory");
	s->profile = strdup(profile);
	s->net_hosts = strdup(hosts ? hosts : "");
	s->pool_image = image ? strdup(image) : NULL;
	struct al_policy *p = NULL;
	int r = s->profile && s->net_hosts && (!image || s->pool_image) ? 0 : al_err(err, ENOMEM, "out of memory");
	if (r == 0 && json_array_size(layers) && !(s->layers = json_deep_copy(layers)))
		r = al_err(err, ENOMEM, "out of memory");
	sbx_set_owner(s, owner);
	r = r ?: create_policy(m, owner, profile, image, network, hosts, lim, layers, &p, &s->net, err);
	r = r ?: al_sandbox_create(p, &s->sb, err);
	if (r == 0 && p) {
		s->secrets = al_secrets_ref(pol_secrets(p));
		s->tls_ca = pol_tls_ca(p) ? tca_ref(pol_tls_ca(p)) : NULL;
		s->m = m;
		s->lim = *lim;
		s->network = network;
		s->disk_bytes = al_policy_get_limit(p, AL_LIMIT_DISK);
		/* The image's tree (the store keeps it while a sandbox uses it): what a language's
		 * program is looked up in (lang_program). */
		if (pol_rootfs(p) && !(s->root = strdup(pol_rootfs(p))))
			r = al_err(err, ENOMEM, "out of memory");
	}
	if (r == 0 && al_policy_image_digest(p)) { /* the client's image or the profile's, as resolved */
		const char *name = al_policy_image_name(p);
		snprintf(s->image, sizeof(s->image), "%s", name ? name : al_policy_image_digest(p));
		snprintf(s->image_digest, sizeof(s->image_digest), "%s", al_policy_image_digest(p));
	}
	al_policy_free(p);
	if (r < 0) {
		sbx_free(s);
		return r;
	}
	make_id(s->id);
	s->exec_timeout_ms = lim->timeout_ms;
	s->created_ms = s->used_ms = sbm_now_ms();
	s->pooled = pooled;
	*out = s;
	return 0;
}

const char *sbx_image_ref(const struct sbx *s, char *buf)
{
	if (!s->image_digest[0])
		return s->pool_image;
	if (!s->image[0] || strcmp(s->image, s->image_digest) == 0)
		snprintf(buf, SBX_IMAGE_REF, "%s", s->image_digest);
	else
		snprintf(buf, SBX_IMAGE_REF, "%s@%s", s->image, s->image_digest);
	return buf;
}

int sbx_new(struct sbm *m, const char *owner, const char *profile, const char *image, bool network, const char *hosts,
	    const struct srv_limits *lim, bool pooled, struct sbx **out, struct al_error *err)
{
	if (m->hk_started && pthread_equal(pthread_self(), m->hk))
		return sbx_make_now(m, owner, profile, image, network, hosts, lim, NULL, pooled, out, err);
	return sbx_new_layered(m, owner, profile, image, network, hosts, lim, NULL, out, err);
}

/* Makes a sandbox on the housekeeper's thread (see struct sbm) and waits for it. */
int sbx_new_layered(struct sbm *m, const char *owner, const char *profile, const char *image, bool network,
		    const char *hosts, const struct srv_limits *lim, const json_t *layers, struct sbx **out,
		    struct al_error *err)
{
	if (m->hk_started && pthread_equal(pthread_self(), m->hk))
		return sbx_make_now(m, owner, profile, image, network, hosts, lim, layers, false, out, err);
	struct mkreq q = {.owner = owner,
			  .profile = profile,
			  .image = image,
			  .hosts = hosts,
			  .network = network,
			  .lim = lim,
			  .layers = layers};
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

/* How many sandboxes owner holds (listed, not spares). Call with m->mu held. */
unsigned sbm_owned_locked(const struct sbm *m, const char *owner)
{
	unsigned n = 0;
	for (const struct sbx *s = m->list; s; s = s->next)
		n += !s->pooled && strcmp(s->owner, owner) == 0;
	return n;
}

unsigned sbm_quota_sandboxes(const struct sbm *m)
{
	unsigned q = m->o.cfg->server.quota_sandboxes;
	return q ? q : CFG_QUOTA_SANDBOXES;
}

uint64_t sbm_disk_owned_locked(const struct sbm *m, const char *owner)
{
	uint64_t n = 0;
	for (const struct sbx *s = m->list; s; s = s->next)
		n += !s->pooled && strcmp(s->owner, owner) == 0 ? s->disk_bytes : 0;
	return n;
}

/* The bytes quota counts disk limits, not what is written: each is a hard limit (the workspace's
 * size-capped tmpfs), so what a principal's sandboxes keep in the state directory stays within the
 * quota whatever they write, and a refusal comes before anything is made, never after a write. */
int sbm_quota_check_locked(const struct sbm *m, const char *owner, unsigned more, uint64_t disk, struct al_error *err)
{
	const char *who = owner[0] ? owner : "this client";
	unsigned held = sbm_owned_locked(m, owner), max = sbm_quota_sandboxes(m);
	if (held + more > max)
		return al_err(err, EAGAIN,
			      "quota reached: %s holds %u sandboxes, and %u more would pass server.quota.sandboxes "
			      "(%u): destroy one first",
			      who, held, more, max);
	uint64_t cap = m->o.cfg->server.quota_sandbox_bytes, has = sbm_disk_owned_locked(m, owner);
	if (!cap || cap == AL_UNLIMITED || has + disk <= cap)
		return 0;
	return al_err(err, EAGAIN,
		      "quota reached: %s's sandboxes may store %llu MiB (their disk limits), and %llu MiB more "
		      "would pass server.quota.sandbox_bytes (%llu MiB): destroy one first, or ask for a smaller "
		      "disk_mb",
		      who, (unsigned long long)(has >> 20), (unsigned long long)(disk >> 20),
		      (unsigned long long)(cap >> 20));
}

/* Lists s (with the table's reference) unless the live limit is reached. */
int sbx_list(struct sbm *m, struct sbx *s, struct al_error *err)
{
	if (!s)
		return al_err(err, EINVAL, "no sandbox");
	unsigned max = m->o.cfg->server.max_sandboxes;
	pthread_mutex_lock(&m->mu);
	/* One principal filling the table would lock every other one out: each holds its quota. */
	int q = m->stopping ? 0 : sbm_quota_check_locked(m, s->owner, 1, s->disk_bytes, err);
	if (q < 0) {
		pthread_mutex_unlock(&m->mu);
		return q;
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

void sbx_set_owner(struct sbx *s, const char *owner)
{
	snprintf(s->owner, sizeof(s->owner), "%s", owner ? owner : "");
}

/* ---- operations ---------------------------------------------------------------------------- */

void op_free(struct srv_op *op)
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
	for (size_t i = 0; op->env && op->env[i]; i++)
		free(op->env[i]);
	free(op->env);
	free(op->cwd);
	free(op->stdin_data);
	free(op->meta_json);
	free(op->snap_name);
	if (op->layers && op->m->pst)
		pst_layers_unref(op->m->pst, op->layers);
	json_decref(op->layers);
	if (op->cancel_fd >= 0)
		close(op->cancel_fd);
	for (size_t i = 0; i < op->npackages; i++)
		free(op->packages[i]);
	free(op->packages);
	pthread_mutex_destroy(&op->mu);
	free(op);
}

struct srv_op *op_new(struct sbm *m, enum op_kind kind, const struct srv_sink *sink)
{
	struct srv_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->m = m;
	op->kind = kind;
	op->sink = *sink;
	op->started_ms = sbm_now_ms();
	op->cancel_fd = -1;
	pthread_mutex_init(&op->mu, NULL);
	return op;
}

/* Reports the result; frees op if the session already released it. */
void op_finish(struct srv_op *op, struct srv_result *res)
{
	struct sbm *m = op->m;
	char owner[SRV_OWNER_MAX];
	bool counted = op->counted;
	memcpy(owner, op->owner, sizeof(owner)); /* op may be freed below */
	if (res && op->resumed)
		res->resumed = true; /* its sandbox was paused: the call resumed it first */
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

void op_end(struct srv_op *op, struct sbx *s, int r, const struct al_error *err, struct srv_result *res)
{
	if (r < 0) {
		srv_result_free(res);
		res = op_error_result(r, err);
	}
	/* What the call wrote is on disk before its result is sent; if it cannot be, the result says so
	 * rather than let the caller believe it kept. */
	struct al_error se = {0};
	bool syncs = s && op->kind != OP_PROCESS && op->kind != OP_WATCH && op->kind != OP_CONTEXT;
	if (syncs && sbp_sync_checked(op->m, s, &se) < 0 && res && !res->error && !res->not_kept &&
	    asprintf(&res->not_kept,
		     "what this call changed in sandbox %s could not be kept in the state directory (%s): it is lost "
		     "if the server stops before a later call keeps it",
		     s->id, se.msg) < 0)
		res->not_kept = NULL;
	if (s && op->inuse)
		sbx_unuse(op->m, s);
	op->inuse = false;
	if (s)
		sbx_put(op->m, s);
	op_finish(op, res);
}

struct srv_result *op_error_result(int r, const struct al_error *e)
{
	struct srv_result *res = srv_result_new();
	if (res) {
		res->error = r < 0 ? r : -EIO;
		res->err = *e;
	}
	return res;
}

void op_output_cb(void *cookie, int stream, const char *data, size_t len)
{
	struct srv_op *op = cookie;
	if (op->sink.on_output)
		op->sink.on_output(op->sink.cookie, stream == 2 ? SRV_STDERR : SRV_STDOUT, data, len);
}

int op_start_thread(struct sbm *m, struct srv_op *op, void *(*fn)(void *), struct srv_op **out, struct al_error *err)
{
	unsigned qe = m->o.cfg->server.quota_execs ? m->o.cfg->server.quota_execs : CFG_QUOTA_EXECS;
	pthread_mutex_lock(&m->mu);
	if (m->stopping) {
		pthread_mutex_unlock(&m->mu);
		op_free(op);
		return al_err(err, ESHUTDOWN, "the server is shutting down");
	}
	/* Executions a principal has queued or running: one client's flood waits in nobody's way. */
	/* A reader of a background process's output, or a watch, runs nothing: not an execution of the quota. */
	bool execution = op->kind != OP_CREATE && op->kind != OP_PROCESS && op->kind != OP_WATCH;
	int q = !execution ? 0 : mq_take(&m->execs_of, op->owner, qe);
	if (q < 0) {
		pthread_mutex_unlock(&m->mu);
		int e = q == -EAGAIN ? al_err(err, EAGAIN,
					      "quota reached: %s runs %u executions at once (server.quota.execs)",
					      op->owner[0] ? op->owner : "this client", qe)
				     : al_err(err, ENOMEM, "out of memory");
		op_free(op);
		return e;
	}
	op->counted = execution;
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
	uint64_t ends = life_ends_locked(m, s);
	pthread_mutex_unlock(&m->mu);
	if (res)
		res->ends_unix_ms = ends ? sbm_wall_ms(m, ends) : 0;
	return res;
}

/* Whether profile offers image (as a cold create would check it): only then may a spare of that
 * image be claimed. The refusal itself comes from the cold path's own check. */
static bool image_offered(struct sbm *m, const char *profile, const char *image)
{
	const struct cfg_profile *pr = cfg_profile(m->o.cfg, profile);
	struct al_error e = {0};
	return pr && cfg_profile_image_allowed(pr, image, &e) == 0;
}

/* The disk limit a cold create of profile with lim would get (as create_policy sets it): the
 * bytes quota is checked with it before a sandbox is built. */
static uint64_t create_disk(struct sbm *m, const char *profile, const struct srv_limits *lim)
{
	if (lim->disk_bytes)
		return lim->disk_bytes;
	const struct cfg_profile *pr = cfg_profile(m->o.cfg, profile);
	struct al_policy *p = NULL;
	if (al_policy_new(&p) < 0)
		return 0;
	struct al_error e = {0};
	int r = cfg_apply_limits(&m->o.cfg->limits, p, true, &e);
	if (r == 0 && pr)
		r = cfg_apply_limits(&pr->limits, p, true, &e);
	uint64_t disk = r == 0 ? al_policy_get_limit(p, AL_LIMIT_DISK) : 0; /* the build names the error */
	al_policy_free(p);
	return disk;
}

/* A claimed spare kept on disk (sbp_keep): on a refusal it is destroyed, and the caller's
 * reference with it. */
static int keep_claimed(struct sbm *m, struct sbx *s, struct al_error *err)
{
	int r = sbp_keep(m, s, err);
	if (r == 0)
		return 0;
	pthread_mutex_lock(&m->mu);
	if (s->listed) {
		sbx_end_locked(m, s, SBX_END_UNWANTED, NULL);
		s->refs--; /* the table's */
	}
	pthread_mutex_unlock(&m->mu);
	sbx_put(m, s);
	return r;
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
	bool plain = !op->network && !op->layers && memcmp(&op->limits, &none, sizeof(none)) == 0;
	int r = 0;
	/* A spare of the profile on the same image (server.pool): the image was checked against the
	 * profile's offer when the pool was configured, so a claim grants nothing the request could not. */
	if (plain && (!op->image || image_offered(m, profile, op->image)))
		s = sbm_claim_pooled(m, profile, op->image, op->owner, true); /* listed, with our reference */
	if (s)
		life_apply_create(m, s, op);
	if (s && (r = keep_claimed(m, s, &err)) < 0)
		s = NULL;
	unsigned max = m->o.cfg->server.max_sandboxes;
	pthread_mutex_lock(&m->mu);
	bool full = !s && r == 0 && max && m->live >= max; /* checked again when listed: this spares a build */
	pthread_mutex_unlock(&m->mu);
	if (full)
		r = al_err(&err, EAGAIN, "limit reached: %u live sandboxes (server.max_sandboxes)", max);
	/* The quota too, checked again when listed: a refused sandbox is never built, nor seen in the
	 * state directory. */
	uint64_t disk = !s && r == 0 ? create_disk(m, profile, &op->limits) : 0;
	if (!s && r == 0) {
		pthread_mutex_lock(&m->mu);
		r = sbm_quota_check_locked(m, op->owner, 1, disk, &err);
		pthread_mutex_unlock(&m->mu);
		full = r < 0;
	}
	if (!s && !full && r == 0 &&
	    (r = sbx_new_layered(m, op->owner, profile, op->image, op->network, op->hosts, &op->limits, op->layers, &s,
				 &err)) == 0 &&
	    s) {
		s->refs = 1;		     /* ours; list_sandbox adds the table's */
		sbx_set_owner(s, op->owner); /* before it is listed: never visible without its owner */
		life_apply_create(m, s, op); /* and its lifetime: never listed without its end */
		/* And kept on disk before anyone can write in it: a refusal makes nothing. */
		if ((r = sbp_keep(m, s, &err)) < 0 || (r = sbx_list(m, s, &err)) < 0) {
			sbx_free(s);
			s = NULL;
		}
	}
	pthread_mutex_lock(&op->mu);
	bool unwanted = op->cancelled || op->released;
	pthread_mutex_unlock(&op->mu);
	if (s && unwanted) {
		/* Nobody will take it: the caller cancelled or released the create while it was made (an
		 * MCP session that ended meanwhile). Destroyed now, rather than left listed to expire
		 * unused under its owner's quota. */
		pthread_mutex_lock(&m->mu);
		if (s->listed) {
			sbx_end_locked(m, s, SBX_END_UNWANTED, NULL);
			s->refs--; /* the table's */
		}
		pthread_mutex_unlock(&m->mu);
		sbx_put(m, s); /* ours, the last */
		s = NULL;
		r = al_err(&err, ECANCELED, "cancelled while the sandbox was made: it was destroyed");
	}
	op_finish(op, r < 0 || !s ? op_error_result(r < 0 ? r : -EIO, &err) : created(m, s));
	return NULL;
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
	op->lifetime_ms = req->lifetime_ms;
	op->auto_pause = req->auto_pause;
	op->lifetime_runs_paused = req->lifetime_runs_paused;
	/* Refused before anything is made: a bad lifetime or label creates nothing. */
	int lr = life_check_create(m, req, &op->meta_json, err);
	if (lr < 0) {
		op_free(op);
		return lr;
	}
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->profile = req->profile ? strdup(req->profile) : NULL;
	/* NAME@sha256:<hex> opens that content whatever NAME names: only what the server made itself
	 * names an image so (sbx_image_ref); a client's would reach content its profile never offered. */
	if (req->image && strstr(req->image, "@sha256:")) {
		op_free(op);
		return al_err(err, EINVAL, "image '%.80s': name an image by its name or by its sha256: digest",
			      req->image);
	}
	op->image = req->image ? strdup(req->image) : NULL;
	op->hosts = hosts_join(req->allowed_domains, req->n_allowed_domains);
	if ((req->profile && !op->profile) || (req->image && !op->image) || !op->hosts) {
		op_free(op);
		return al_err(err, EINVAL, "bad allowed_domains (a host name may not contain ',')");
	}
	if (req->profile && !cfg_profile(m->o.cfg, req->profile)) {
		op_free(op);
		return al_err(err, ENOENT, "unknown profile \"%s\"", req->profile);
	}
	/* From a snapshot: its files, and what it was made with where the request says nothing. */
	if (req->snapshot && (lr = sbs_for_create(m, op, req->snapshot, err)) < 0) {
		op_free(op);
		return lr;
	}
	/* A warm spare is only a table entry away: answered here, without a worker thread (whose
	 * start, stack and malloc arena would cost more than the claim). */
	struct srv_limits none = {0};
	pthread_mutex_lock(&m->mu);
	bool stopping = m->stopping;
	pthread_mutex_unlock(&m->mu);
	struct sbx *s = NULL;
	const char *profile = op->profile	     ? op->profile
			      : m->o.default_profile ? m->o.default_profile
						     : SBM_DEFAULT_PROFILE;
	/* Accepted, such a sandbox would only fail later, at each connection. */
	if (sbm_network_check(m, profile, op->network, op->hosts, err) < 0) {
		op_free(op);
		return -EINVAL;
	}
	if (!stopping && !op->network && !op->layers && memcmp(&op->limits, &none, sizeof(none)) == 0 &&
	    (!op->image || image_offered(m, profile, op->image)))
		s = sbm_claim_pooled(m, profile, op->image, req->owner, true);
	if (!s)
		return op_start_thread(m, op, create_thread, out, err);
	life_apply_create(m, s, op);
	int kr = keep_claimed(m, s, err);
	if (kr < 0) {
		op_free(op);
		return kr;
	}
	op_free(op);
	sink->on_done(sink->cookie, created(m, s));
	*out = NULL;
	return 0;
}

/* A named sandbox that does not exist (or is another principal's) fails the start call itself, as
 * the file operations do: the client gets its 404 at once, not a stream that ends in an error. The
 * worker looks it up again (it may be destroyed meanwhile). */
int sbx_known(struct sbm *m, const char *id, const char *owner, struct al_error *err)
{
	struct sbx *s = id ? sbx_find(m, id, owner, err) : NULL;
	if (id && !s)
		return -ENOENT;
	if (s)
		sbx_put(m, s);
	return 0;
}

static int m_destroy(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		     struct al_error *err)
{
	struct sbm *m = ctx;
	struct sbx *s = sbx_find(m, req->sandbox_id, req->owner, err); /* one paused to disk: not made again */
	if (!s)
		return -ENOENT;
	pthread_mutex_lock(&m->mu);
	bool listed = s->listed;
	if (listed) {
		/* The approver's name is only words for the owner's later calls: the ownership check
		 * above (sbx_get with the owner's name) stays the only one. */
		sbx_end_locked(m, s, req->by_approver ? SBX_END_APPROVER : SBX_END_OWNER, req->by_approver);
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

void sbm_api(struct sbm *m, struct srv_mgr_api *api)
{
	*api = (struct srv_mgr_api){
		.ctx = m,
		.create_sandbox = m_create,
		.exec = sbm_exec,
		.install_package = sbm_install,
		.install_check = sbm_install_check,
		.write_file = sbm_write_file,
		.read_file = sbm_read_file,
		.list_files = sbm_list_files,
		.destroy_sandbox = m_destroy,
		.context = sbm_context,
		.cancel = m_cancel,
		.release = m_release,
		.list_sandboxes = sbm_list_sandboxes,
		.process = sbm_process,
		.file_op = sbm_file_op,
		.open_upload = sbm_open_upload,
		.set_timeout = sbm_set_timeout,
		.fork = sbm_fork,
		.sandbox_info = sbm_sandbox_info,
		.port_connect = sbm_port_connect,
		.list_ports = sbm_list_ports,
		.port_token = sbm_port_token,
		.watch = sbm_watch,
		.pause_sandbox = sbm_pause,
		.resume_sandbox = sbm_resume,
		.snapshot = sbm_snapshot,
	};
}

int sbm_new(const struct sbm_opts *o, struct sbm **out, struct al_error *err)
{
	if (!o || o->size < sizeof(struct sbm_opts) || !o->cfg)
		return al_err(err, EINVAL, "sbm_new: bad options");
	struct sbm *m = calloc(1, sizeof(*m));
	if (!m)
		return al_err(err, ENOMEM, "out of memory");
	m->o = *o;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	m->wall_offset_ms = ((int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000) - (int64_t)sbm_now_ms();
	rlim_t want = (rlim_t)o->cfg->server.max_sandboxes * 48 + 4096, top = nr_open();
	raise_nofile_to(want < top ? want : top);
	pthread_mutex_init(&m->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* exec_turn's deadlines */
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&m->hk_cv, NULL);
	pthread_mutex_init(&m->snap_mu, NULL);
	const char *dp = o->default_profile ? o->default_profile : SBM_DEFAULT_PROFILE;
	if (!cfg_profile(o->cfg, dp)) {
		sbm_free(m);
		return al_err(err, ENOENT, "unknown default profile \"%s\"", dp);
	}
	/* A secret whose variable is unset or whose file is unreadable is told now, not at a create. */
	int cr = cfg_secrets_check(o->cfg, err);
	if (cr < 0) {
		sbm_free(m);
		return cr;
	}
	if (pthread_create(&m->hk, NULL, sbm_housekeeper, m) != 0) {
		sbm_free(m);
		return al_err(err, EAGAIN, "cannot start the manager's housekeeping thread");
	}
	m->hk_started = true;
	int r = sbp_open(m, o->state_dir, err);
	if (r < 0) {
		sbm_free(m);
		return r;
	}
	*out = m;
	return 0;
}

void sbm_stats(struct sbm *m, struct sbm_stats *st)
{
	pthread_mutex_lock(&m->mu);
	*st = m->st;
	st->live = st->pooled = 0;
	for (struct sbx *s = m->list; s; s = s->next) {
		*(s->pooled ? &st->pooled : &st->live) += 1;
		st->paused += s->paused;
	}
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
		sbx_end_locked(m, m->list, SBX_END_STOPPING, NULL);
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
	json_decref(m->snaps); /* their layers stay on disk with their records */
	json_decref(m->held_back);
	pthread_mutex_destroy(&m->snap_mu);
	pst_close(m->pst);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	pthread_cond_destroy(&m->hk_cv);
	free(m);
}
