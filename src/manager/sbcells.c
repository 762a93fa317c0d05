/* sbcells.c — interpreter contexts, the sandbox's side: an exec that is a cell, and the context
 * actions, run on a worker thread with the sandbox's turn; context.c runs the kernels. */
#include "manager/sbmint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "manager/context.h"
#include "util/error.h"

/* ---- interpreter contexts (context.c does the work; this is the sandbox's side) ---------------- */

/* Whether an exec request is a cell: in a sandbox, a language with a kernel, not fresh. Cells have
 * no network (a kernel's pid and network namespaces are its own): network_enabled runs fresh. */
bool sbm_cell_wanted(const struct srv_exec_req *req)
{
	/* What shapes one process's run (its environment, directory, input, a life of its own) asks
	 * for a process of its own: a cell is a turn of the context's kernel, which has its own. */
	bool own_run = req->background || req->n_env || req->cwd || req->stdin_data;
	return req->sandbox_id && !req->fresh && !own_run && !req->network_enabled &&
	       ctx_language_supported(req->language);
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
	/* A cell or a context's change needs its kernels running; a list only looks. */
	op->inuse = op->kind == OP_CELL || !op->action || strcmp(op->action, "list") != 0;
	struct sbx *s = op->inuse ? sbx_use(m, op->sandbox_id, op->owner, &op->resumed, &err)
				  : sbx_get(m, op->sandbox_id, op->owner, &err);
	op->inuse = op->inuse && s;
	int r = !s ? -ENOENT : sbx_contexts(m, s, &cs) < 0 ? al_err(&err, ENOMEM, "out of memory") : 0;
	if (r == 0) {
		struct ctx_env env = {.sb = s->sb, .cfg = m->o.cfg, .timeout_ms = op->timeout_ms ?: s->exec_timeout_ms};
		if (op->kind == OP_CELL) {
			struct ctx_cell_req q = {.language = op->language,
						 .context_id = op->context_id,
						 .code = op->code,
						 .code_len = op->code_len,
						 .cancel_fd = op->cancel_fd,
						 .on_output = op_output_cb,
						 .cookie = op};
			/* A cell is an exec for the server's limits: it takes the sandbox's turn and a slot
			 * (server.max_execs), waiting at most its own time limit (none set: until cancelled). */
			r = exec_turn(m, op, s, true, true, env.timeout_ms ? env.timeout_ms : AL_UNLIMITED, &err);
			if (r == 0) {
				r = ctx_run_cell(cs, &env, &q, &res, &err);
				exec_turn_done(m, s, true);
				/* Its lifetime (or a destroy) killed the kernel mid-cell: said in words. */
				r = sbm_end_note(m, s, r, &err, res);
			}
			/* No kernel for this language in this sandbox (its root lacks the interpreter the
			 * kernel needs, e.g. an image without python3): the default context's cell runs
			 * as a fresh exec instead, as before contexts; a named context is an error. */
			if (r == -ENOTSUP && !op->context_id) {
				sbx_unuse_put(m, s);
				op->inuse = false;
				op->kind = OP_EXEC;
				return exec_thread(op);
			}
			/* A named context's missing interpreter is the request's to fix (another image,
			 * another language): a 400, not a server failure. */
			if (r == -ENOTSUP)
				r = -EINVAL;
		} else {
			struct srv_context_req q = {.sandbox_id = op->sandbox_id,
						    .action = op->action,
						    .language = op->language,
						    .context_id = op->context_id};
			r = ctx_manage(cs, &env, &q, &res, &err);
			if (r == -ENOTSUP)
				r = -EINVAL; /* as for a cell: the request's to fix */
		}
	}
	if (r == 0 && !(res->sandbox_id = strdup(s->id)))
		r = al_err(&err, ENOMEM, "out of memory");
	if (s)
		sbp_contexts(m, s); /* a context made or deleted is in the record before the answer */
	op_end(op, s, r, &err, res);
	return NULL;
}

int sbm_start_cell(struct sbm *m, struct srv_op *op, const struct srv_exec_req *req, struct srv_op **out,
		   struct al_error *err)
{
	op->kind = OP_CELL;
	op->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	op->context_id = req->context_id ? strdup(req->context_id) : NULL;
	if (op->cancel_fd < 0 || (req->context_id && !op->context_id)) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
	return op_start_thread(m, op, cell_thread, out, err);
}

int sbm_context(void *ctx, const struct srv_context_req *req, const struct srv_sink *sink, struct srv_op **out,
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
	return op_start_thread(m, op, cell_thread, out, err);
}
