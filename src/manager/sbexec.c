/* sbexec.c — executions and package installs in a held sandbox (or a throwaway one): the policy
 * (with the call's env, cwd and stdin), a place in the sandbox and an execution slot, the program
 * as a sealed descriptor, the job streamed to the caller's sink (or, in the background, handed to
 * sbprocs.c). */
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
int exec_in_sandbox(struct sbx *s, struct al_policy *p, bool network, struct al_error *err)
{
	int r = al_policy_set_sandbox(p, s->sb, err);
	if (r < 0)
		return r;
	if (network && s->net == AL_NET_ALLOW) { /* the proxy variables of the sandbox's posture */
		/* First: the sandbox's own CA and placeholders, not new ones its proxy would not know. */
		pol_share_tls(p, s->tls_ca, s->secrets);
		r = al_policy_set_network(p, AL_NET_ALLOW, err);
		if (r == 0 && *s->net_hosts)
			r = al_policy_allow_hosts(p, s->net_hosts, err);
	}
	return r;
}

static int run_in(struct srv_op *op, struct sbx *s, struct al_policy *p, bool network, int code_fd, int stdin_fd,
		  struct al_verdict **v, struct al_error *err)
{
	struct sbm *m = op->m;
	int r = exec_in_sandbox(s, p, network, err);
	if (r < 0)
		return r;
	struct al_spawn_opts so = {.size = sizeof(so),
				   .stdin_fd = stdin_fd,
				   .on_output = op_output_cb,
				   .on_output_cookie = op,
				   .code_fd = code_fd};
	struct al_job *job = NULL;
	r = al_job_spawn(p, &so, &job, err);
	if (r == 0) {
		struct sbrun run = {.job = job};
		pthread_mutex_lock(&m->mu);
		run.next = s->runs;
		/* Listed only while this frame lives: taken off below, under the same lock, before return. */
		// cppcheck-suppress autoVariables ; unlisted before this function returns
		s->runs = &run;
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
		for (struct sbrun **pp = &s->runs; *pp; pp = &(*pp)->next)
			if (*pp == &run) {
				*pp = run.next;
				break;
			}
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

/* server.max_execs_per_sandbox, or its default in a configuration made before it. */
static unsigned per_sandbox(const struct sbm *m)
{
	unsigned n = m->o.cfg->server.max_execs_per_sandbox;
	return n ? n : 16;
}

/*
 * Takes a place among s's running work, refused at once past server.max_execs_per_sandbox
 * (EBUSY: what runs there is the caller's own, waiting would only hide it), and with slot waits
 * for an exec slot (server.max_execs) and takes it: 0, or -errno with err set when the exec must
 * never run: its wall-clock limit wall_ms (AL_UNLIMITED: none) passed since the request was
 * accepted (ETIMEDOUT), it was cancelled, its sandbox was destroyed (persistent sandboxes only:
 * a throwaway one is never listed) or the server stops.
 */
int exec_turn(struct sbm *m, struct srv_op *op, struct sbx *s, bool persistent, bool slot, uint64_t wall_ms,
	      struct al_error *err)
{
	if (!s) /* every caller has its sandbox by now; a turn in none is a bug, not a crash */
		return al_err(err, EIO, "no sandbox");
	unsigned max = slot ? m->o.cfg->server.max_execs : 0, per = per_sandbox(m);
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
			char why[AL_ERROR_MAX / 2];
			const char *kw = NULL;
			if (!life_ended_locked(m, s, why, sizeof(why), &kw))
				snprintf(why, sizeof(why), "sandbox %s was destroyed", s->id);
			r = al_err(err, ENOENT, "%s before the execution could start: it never ran", why);
			break;
		}
		if (s->nrun >= per) {
			r = al_err(
				err, EBUSY,
				"sandbox %s already runs %u executions and processes (server.max_execs_per_sandbox): "
				"wait for one to end, or kill a background process; the code never ran",
				s->id, s->nrun);
			break;
		}
		if (!max || m->execs < max) {
			s->nrun++;
			if (slot) {
				m->execs++;
				m->st.execs_running++;
			}
			break;
		}
		uint64_t now = sbm_now_ms();
		if (now >= deadline) {
			r = al_err(err, ETIMEDOUT,
				   "timed out after %.1f s waiting to start, so the code never ran: every execution "
				   "slot was taken (server.max_execs %u)",
				   (double)(now - op->started_ms) / 1000.0, max);
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

void exec_turn_done(struct sbm *m, struct sbx *s, bool slot)
{
	pthread_mutex_lock(&m->mu);
	s->nrun--;
	if (slot) {
		m->execs--;
		m->st.execs_running--;
	}
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
int exec_policy(struct sbm *m, const struct sbx *s, const struct srv_op *op, struct al_policy **out,
		struct al_error *err)
{
	const struct cfg_language *l = cfg_language(m->o.cfg, op->language);
	if (!l)
		return al_err(err, ENOENT, "unknown language \"%s\"", op->language);
	struct al_policy *p = NULL;
	int r = al_policy_new(&p);
	if (r < 0)
		return al_err(err, -r, "out of memory");
	r = lang_apply(l, s->root ? s->root : "", op->code, op->code_len, NULL, 0, p, err);
	r = r ?: al_policy_add_env(p, "PYTHONPATH=" AL_WORKSPACE, err);
	/* A program read from /dev/fd/3 resolves require() from /dev/fd: the workspace's packages
	 * (npm installs them into /workspace/node_modules) are found through NODE_PATH instead. */
	r = r ?: al_policy_add_env(p, "NODE_PATH=" AL_WORKSPACE "/node_modules", err);
	r = r ?: cfg_apply_limits(&m->o.cfg->limits, p, true, err);
	/* A background process lives until it ends or is killed: only a limit it was given ends it,
	 * and its output is counted and kept by its process (sbprocs.c), not by the job. */
	r = r
		    ?: sbm_set_limit_if(p, AL_LIMIT_WALL_MS,
					op->timeout_ms	 ? op->timeout_ms
					: op->background ? AL_UNLIMITED
							 : s->exec_timeout_ms,
					err);
	/* Relayed to the process's buffer up to the most a job counts (its verdict keeps none of it). */
	if (r == 0 && op->background)
		r = al_policy_set_limit(p, AL_LIMIT_OUTPUT, (uint64_t)1 << 30, err);
	/* A terminal says what it is, as `airlock run -t` does; before the call's env, so its TERM wins. */
	if (r == 0 && op->pty_cols)
		r = al_policy_add_env(p, "TERM=xterm-256color", err);
	for (size_t i = 0; r == 0 && op->env && op->env[i]; i++)
		r = al_policy_add_env(p, op->env[i], err);
	if (r == 0 && op->cwd)
		r = al_policy_set_cwd(p, op->cwd, err);
	if (r == 0 && pol_argv_replace(p, l->file, AL_CODE_PATH) < 0)
		r = al_err(err, ENOMEM, "out of memory");
	if (r < 0) {
		al_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

/* An exec's cwd: one of the workspace must be a directory there, looked up as the sandbox's user
 * beneath the workspace; any other (/tmp, /) is the sandbox's own to have, and a missing one fails
 * the exec's chdir before anything runs (a setup error naming it). */
static int cwd_check(struct sbx *s, const char *cwd, struct al_error *err)
{
	if (cwd[0] == '/' && strcmp(cwd, AL_WORKSPACE) != 0 &&
	    strncmp(cwd, AL_WORKSPACE "/", sizeof(AL_WORKSPACE)) != 0)
		return 0;
	uid_t uid;
	gid_t gid;
	al_sandbox_owner(s->sb, &uid, &gid);
	struct ws_cred saved;
	ws_become(uid, gid, &saved);
	int r = ws_dir(al_sandbox_workspace(s->sb), cwd, err);
	ws_restore(&saved);
	return r;
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
		if (!s &&
		    (r = sbx_new(m, op->owner, profile, NULL, op->network, op->hosts, &lim, false, &s, &err)) == 0 &&
		    s) {
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
	} else if (!(s = sbx_use(m, op->sandbox_id, op->owner, &op->resumed, &err))) {
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
	op->inuse = s && !throwaway; /* op_end lets go of the hold */
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
	if (r == 0 && s && op->cwd)
		r = cwd_check(s, op->cwd, &err);
	/* Its place in the sandbox and (a foreground exec) a slot, within its own wall-clock limit;
	 * then its code goes in. */
	bool slot = !op->background;
	if (r == 0)
		turn = (r = exec_turn(m, op, s, !throwaway, slot, al_policy_get_limit(p, AL_LIMIT_WALL_MS), &err)) == 0;
	cleanup_close int code_fd = -1;
	if (r == 0 && op->kind == OP_EXEC && (code_fd = al_code_memfd(op->code, op->code_len)) < 0)
		r = al_err_sys(&err, -code_fd, "setup: the program's sealed copy");
	if (r == 0 && op->background) { /* answered at once; the process holds the place from here */
		/* Held until it is started (op_end lets go): a pause then freezes it with the rest. */
		sbproc_start(op, s, p, code_fd);
		return NULL;
	}
	/* Its standard input, as the program's text: a sealed copy nothing in the sandbox can change. */
	cleanup_close int in_fd = -1;
	if (r == 0 && op->stdin_data && (in_fd = al_code_memfd(op->stdin_data, op->stdin_len)) < 0)
		r = al_err_sys(&err, -in_fd, "setup: the program's standard input");
	if (r == 0)
		r = run_in(op, s, p, op->kind == OP_INSTALL || op->network, code_fd, in_fd, &v, &err);
	if (turn)
		exec_turn_done(m, s, slot);
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
	if (s && (r == 0 || turn))
		r = sbm_end_note(m, s, r, &err, res);
	op_end(op, s, r, &err, res);
	return NULL;
}

/* An exec's environment: at most this many entries and bytes (names and values), within the
 * exec request's own bound (execmsg.h NX_MAX_MSG, which argv and the base environment share). */
#define EXEC_ENV_MAX	   256
#define EXEC_ENV_MAX_BYTES ((size_t)32 << 10)
#define EXEC_STDIN_MAX	   ((size_t)16 << 20)

/* What the request adds to its run, checked before anything starts: 0, or -errno with err. */
static int run_request_check(const struct srv_exec_req *req, struct al_error *err)
{
	if (req->background && !req->sandbox_id)
		return al_err(err, EINVAL,
			      "a background process needs a sandbox_id: it lives in a sandbox, between calls");
	if (req->keep_stdin && !req->background)
		return al_err(err, EINVAL, "keep_stdin is for background processes (a foreground exec takes stdin)");
	if ((req->pty_cols || req->pty_rows) &&
	    (req->pty_cols < 1 || req->pty_cols > SRV_PTY_MAX || req->pty_rows < 1 || req->pty_rows > SRV_PTY_MAX))
		return al_err(err, EINVAL, "pty: cols and rows must be 1 to %d (got %u x %u)", SRV_PTY_MAX,
			      req->pty_cols, req->pty_rows);
	if (req->pty_cols && !req->background)
		return al_err(err, EINVAL, "a pty session is a background process: pty needs background");
	if (req->pty_cols && req->stdin_data)
		return al_err(err, EINVAL,
			      "a pty session reads its terminal: send input with the process's stdin, not the "
			      "exec's stdin");
	if (req->n_env > EXEC_ENV_MAX)
		return al_err(err, E2BIG, "env has %zu entries, at most %u", req->n_env, EXEC_ENV_MAX);
	size_t bytes = 0;
	for (size_t i = 0; i < req->n_env; i++) {
		const char *e = req->env[i], *eq = strchr(e, '=');
		if (!eq || !pol_env_name_ok(e, (size_t)(eq - e)))
			return al_err(err, EINVAL,
				      "env: \"%.*s\" is not a variable name (letters, digits, _; not a digit first)",
				      eq ? (int)(eq - e > 64 ? 64 : eq - e) : 64, e);
		bytes += strlen(e) + 1;
	}
	if (bytes > EXEC_ENV_MAX_BYTES)
		return al_err(err, E2BIG, "env holds %zu bytes, at most %zu", bytes, EXEC_ENV_MAX_BYTES);
	if (req->stdin_len > EXEC_STDIN_MAX)
		return al_err(err, E2BIG,
			      "stdin holds %zu bytes, at most %zu (a background process takes more through its stdin)",
			      req->stdin_len, EXEC_STDIN_MAX);
	if (req->cwd && (!*req->cwd || strlen(req->cwd) > 4096 || strstr(req->cwd, "\xc0\x80")))
		return al_err(err, EINVAL, "cwd must be a path of 1 to 4096 bytes");
	return 0;
}

/* Copies the request's run (env, cwd relative to the workspace made absolute, stdin): 0 or -ENOMEM. */
static int copy_run(struct srv_op *op, const struct srv_exec_req *req)
{
	op->background = req->background;
	op->keep_stdin = req->keep_stdin;
	op->pty_cols = req->pty_cols;
	op->pty_rows = req->pty_rows;
	if (req->n_env) {
		if (!(op->env = calloc(req->n_env + 1, sizeof(char *))))
			return -ENOMEM;
		for (size_t i = 0; i < req->n_env; i++)
			if (!(op->env[i] = strdup(req->env[i])))
				return -ENOMEM;
	}
	if (req->cwd && asprintf(&op->cwd, "%s%s", req->cwd[0] == '/' ? "" : AL_WORKSPACE "/", req->cwd) < 0) {
		op->cwd = NULL;
		return -ENOMEM;
	}
	if (req->stdin_data) {
		if (!(op->stdin_data = malloc(req->stdin_len ? req->stdin_len : 1)))
			return -ENOMEM;
		memcpy(op->stdin_data, req->stdin_data, req->stdin_len);
		op->stdin_len = req->stdin_len;
	}
	return 0;
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
	int r = run_request_check(req, err);
	if (r < 0)
		return r;
	if (sbx_known(m, req->sandbox_id, req->owner, err) < 0)
		return -ENOENT;
	struct srv_op *op = op_new(m, OP_EXEC, sink);
	if (!op)
		return al_err(err, ENOMEM, "out of memory");
	if (copy_run(op, req) < 0) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
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
	/* A throwaway sandbox with network and nothing allowed: refused now (sbm_network_check). */
	const char *profile = m->o.default_profile ? m->o.default_profile : SBM_DEFAULT_PROFILE;
	if (!req->sandbox_id && sbm_network_check(m, profile, op->network, op->hosts, err) < 0) {
		op_free(op);
		return -EINVAL;
	}
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
