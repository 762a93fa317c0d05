/* sbexec.c — executions and package installs in a held sandbox (or a throwaway one): the policy,
 * the sandbox's turn and an execution slot, the code file written beneath /workspace/.airlock, the
 * job streamed to the caller's sink. */
#include "manager/sbmint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/language.h"
#include "manager/install.h"
#include "manager/wsfiles.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/error.h"

/* Runs policy p (argv set by the caller) in s, streaming output: 0 and *v, or -errno. With network,
 * the sandbox's posture; without, the exec gets a network namespace of its own (lo only, up). */
static int run_in(struct srv_op *op, struct sbx *s, struct al_policy *p, bool network, int code_fd,
		  struct al_verdict **v, struct al_error *err)
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
	struct al_spawn_opts so = {
		.size = sizeof(so), .stdin_fd = -1, .on_output = op_output_cb, .on_output_cookie = op, .code_fd = code_fd};
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
int exec_turn(struct sbm *m, struct srv_op *op, struct sbx *s, bool persistent, uint64_t wall_ms, struct al_error *err)
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
		uint64_t now = sbm_now_ms();
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
			struct timespec t = al_deadline_ts(CLOCK_MONOTONIC, deadline - now);
			pthread_cond_timedwait(&m->cv, &m->mu, &t);
		}
	}
	pthread_mutex_unlock(&m->mu);
	return r;
}

void exec_turn_done(struct sbm *m, struct sbx *s)
{
	pthread_mutex_lock(&m->mu);
	s->busy = false;
	m->execs--;
	m->st.execs_running--;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

/*
 * The argv and limits of language lang, with /workspace importable. An interpreted language reads
 * its program from AL_CODE_PATH, a sealed memfd (code_fd) that nothing in the sandbox can change:
 * never from a file of the workspace, which other code of this sandbox (a thread a cell left
 * running, a background process) could swap between the server's write and the interpreter's open,
 * so that what ran was not what was approved. A compiled language is refused (sbm_exec): its
 * compiler reads its source and writes the binary it runs by path, where that code could swap
 * either. No side effect.
 */
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
	/* A program read from /dev/fd/3 resolves require() from /dev/fd: the workspace's packages
	 * (npm installs them into /workspace/node_modules) are found through NODE_PATH instead. */
	r = r ?: al_policy_add_env(p, "NODE_PATH=" AL_WORKSPACE "/node_modules", err);
	r = r ?: cfg_apply_limits(&m->o.cfg->limits, p, true, err);
	r = r ?: sbm_set_limit_if(p, AL_LIMIT_WALL_MS, op->timeout_ms ? op->timeout_ms : s->exec_timeout_ms, err);
	for (int i = 0; r == 0 && i < p->argc; i++) {
		if (strcmp(p->argv[i], l->file) != 0)
			continue;
		char *a = strdup(AL_CODE_PATH);
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

/* exec and install: the sandbox named, or a throwaway one made for this call. */
void *exec_thread(void *arg)
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
		s = op->network ? NULL : sbm_claim_pooled(m, profile, NULL, op->owner, false);
		if (!s && (r = sbx_new(m, profile, NULL, op->network, op->hosts, &lim, false, &s, &err)) == 0 && s) {
			s->refs = 1;
			pthread_mutex_lock(&m->mu);
			m->st.created++;
			m->st.destroyed++; /* counted as it is made: it is never listed */
			pthread_mutex_unlock(&m->mu);
		} else if (s) {
			pthread_mutex_lock(&m->mu);
			sbx_unlist_locked(m, s); /* a claimed spare becomes this call's alone */
			s->refs--;
			pthread_mutex_unlock(&m->mu);
		}
	} else if (!(s = sbx_get(m, op->sandbox_id, op->owner, &err))) {
		r = -ENOENT;
	} else if (op->network && s->net != AL_NET_ALLOW) {
		r = al_err(&err, EPERM,
			   "sandbox %s was created without network access: create one with network_enabled", s->id);
	} else if (op->network && *op->hosts && !hosts_same(op->hosts, s->net_hosts)) {
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
	cleanup_close int code_fd = -1;
	if (r == 0 && op->kind == OP_EXEC && (code_fd = al_code_memfd(op->code, op->code_len)) < 0)
		r = al_err_sys(&err, -code_fd, "setup: the program's sealed copy");
	if (r == 0)
		r = run_in(op, s, p, op->kind == OP_INSTALL || op->network, code_fd, &v, &err);
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
	}
	al_verdict_free(v);
	op_end(op, s, r, &err, res);
	return NULL;
}

int sbm_exec(void *ctx, const struct srv_exec_req *req, const struct srv_sink *sink, struct srv_op **out,
	     struct al_error *err)
{
	struct sbm *m = ctx;
	const struct cfg_language *l = cfg_language(m->o.cfg, req->language);
	if (!l)
		return al_err(err, ENOENT, "unknown language \"%s\"", req->language);
	if (l->compile.n) /* see exec_policy */
		return al_err(err, EINVAL,
			      "language \"%s\" compiles its code in the workspace, where other code of a held sandbox "
			      "could change the source or the binary before it runs: not offered by the service",
			      req->language);
	if (sbx_known(m, req->sandbox_id, req->owner, err) < 0)
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
	op->hosts = hosts_join(req->allowed_domains, req->n_allowed_domains);
	if (!op->language || !op->code || (req->sandbox_id && !op->sandbox_id) || !op->hosts) {
		op_free(op);
		return al_err(err, EINVAL, "bad request (out of memory, or a host name with ',')");
	}
	memcpy(op->code, req->code, req->code_len);
	op->code[req->code_len] = 0;
	if (sbm_cell_wanted(req))
		return sbm_start_cell(m, op, req, out, err);
	if (req->context_id && !req->fresh) { /* named a context it cannot have: say so, never run elsewhere */
		op_free(op);
		return al_err(err, EINVAL,
			      "context_id needs a sandbox_id, a language with contexts (python, javascript, "
			      "shell) and no network_enabled");
	}
	return op_start_thread(m, op, exec_thread, out, err);
}

int sbm_install_check(void *ctx, const struct srv_install_req *req, struct al_error *err)
{
	struct sbm *m = ctx;
	if (!req->sandbox_id)
		return 0; /* sbm_install says what is wrong */
	struct sbx *s = sbx_get(m, req->sandbox_id, req->owner, err);
	if (!s)
		return -ENOENT;
	struct inst_net net = {.posture = s->net, .hosts = s->net_hosts ? s->net_hosts : ""};
	int r = inst_check_route(req->manager, req->packages, req->n_packages, &net, err);
	sbx_put(m, s);
	return r;
}

int sbm_install(void *ctx, const struct srv_install_req *req, const struct srv_sink *sink, struct srv_op **out,
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
	if (sbx_known(m, req->sandbox_id, req->owner, err) < 0)
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
	return op_start_thread(m, op, exec_thread, out, err);
}
