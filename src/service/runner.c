/* runner.c — one tool call from validation to its audit record, the same for every transport (see runner.h). */
#include "service/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"

struct svc_call {
	const struct svc_runner *rn;
	enum tl_id tool;
	json_t *args;
	struct svc_principal who; /* name: points into who_name */
	char who_name[96];
	char *peer;
	uint64_t started_us;
	const struct svc_port *port;
	void *owner;
	/* The approval (decided: the rules, or a human, gave their outcome). */
	struct srv_gate_decision d;
	bool decided;
	enum srv_gate_outcome approval;
	enum srv_gate_by by;
	bool begun, ended;
	/* The manager's operation. */
	const void *raw;
	size_t raw_len;
	bool want_fd;
	int spool_fd; /* svc_call_spool: the upload's file, borrowed (-1: none) */
	struct srv_op *op;
	bool running, cancelled;
	bool client_left;	       /* svc_call_client_left: the client's connection closed before the answer */
	char call_id[SRV_CALL_ID_MAX]; /* its audit start record's, once admitted ("" before) */
	char approver[96];	       /* the principal who answered an ASK ("" : none named) */
	char for_owner[96];	       /* svc_call_act_for: whose sandbox an approver acts on ("" : its own) */
	const char *transport;	       /* svc_call_set_transport (static), or NULL: the runner's */
};

static uint64_t monotonic_us(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_us(const struct svc_runner *rn)
{
	return rn->now_us ? rn->now_us(rn->now_ctx) : monotonic_us(NULL);
}

struct svc_call *svc_call_new(const struct svc_runner *rn, enum tl_id tool, json_t *args,
			      const struct svc_principal *who, const char *peer)
{
	struct svc_call *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->peer = peer ? strdup(peer) : NULL;
	if (peer && !c->peer) {
		free(c);
		return NULL;
	}
	c->rn = rn;
	c->tool = tool;
	c->spool_fd = -1;
	c->args = json_incref(args);
	c->who = who ? *who : (struct svc_principal){.kind = SVC_PRINCIPAL_ANONYMOUS, .uid = (uid_t)-1};
	snprintf(c->who_name, sizeof(c->who_name), "%s", c->who.name ? c->who.name : "anonymous");
	c->who.name = c->who_name;
	c->started_us = now_us(rn);
	return c;
}

void svc_call_free(struct svc_call *c)
{
	if (!c)
		return;
	if (c->begun && !c->ended)
		svc_call_end(c, SRV_CALL_CANCELLED, NULL, NULL);
	/* manager/api.h: release may come before on_done; the manager keeps its handle until both. */
	if (c->running && c->op && c->rn->mgr->release)
		c->rn->mgr->release(c->rn->mgr->ctx, c->op);
	json_decref(c->args);
	free(c->peer);
	free(c);
}

/* ---- the end ---------------------------------------------------------------------------------- */

void svc_call_end(struct svc_call *c, enum srv_call_status status, const struct srv_result *res, const char *msg)
{
	if (c->ended)
		return;
	c->ended = true;
	uint64_t us = now_us(c->rn) - c->started_us;
	struct srv_call_end e = {
		.tool = tl_name(c->tool),
		.args = c->args,
		.status = status,
		.decided = c->decided,
		.approval = c->approval,
		.by = c->by,
		.transport = c->transport ? c->transport : c->rn->transport,
		.peer = c->peer,
		.principal = c->who.name,
		.approver = c->approver[0] ? c->approver : NULL,
		.on_behalf_of = c->for_owner[0] ? c->for_owner : NULL,
		.call_id = c->call_id[0] ? c->call_id : NULL,
		.duration_ms = us / 1000,
		.duration_us = us,
		.result = res,
		.message = msg,
		.client_left = c->client_left,
	};
	/* AFTER END: the one place where every call, however it ended, reaches the audit log. */
	const struct srv_gate *g = c->rn->gate;
	if (g && g->finished)
		g->finished(g->ctx, &e);
	const struct svc_observer *o = c->rn->observer;
	if (o && o->ended)
		o->ended(o->ctx, &e);
}

static enum svc_step refuse(struct svc_call *c, struct svc_refusal *ref, enum srv_call_status status, int error,
			    const char *text)
{
	*ref = (struct svc_refusal){.status = status, .approval = c->approval, .error = error};
	snprintf(ref->text, sizeof(ref->text), "%s", text);
	svc_call_end(c, status, NULL, text);
	return SVC_REFUSED;
}

/* ---- validation --------------------------------------------------------------------------------- */

int svc_call_validate(struct svc_call *c, struct svc_refusal *ref)
{
	char why[SCH_MSG_MAX];
	int r = tl_check_args(c->rn->cat, c->tool, c->args, why);
	if (r == 0)
		return 0;
	if (r == -ENOMEM)
		refuse(c, ref, SRV_CALL_REQUEST_FAILED, -ENOMEM, "out of memory");
	else
		refuse(c, ref, SRV_CALL_INVALID, -EINVAL, why);
	return r == -ENOMEM ? -ENOMEM : -EINVAL;
}

/* ---- running ------------------------------------------------------------------------------------ */

void svc_call_payload(struct svc_call *c, const void *raw, size_t len, bool want_fd)
{
	c->raw = raw;
	c->raw_len = len;
	c->want_fd = want_fd;
}

void svc_call_spool(struct svc_call *c, int fd)
{
	c->spool_fd = fd;
}

int svc_call_set_sandbox(struct svc_call *c, const char *id)
{
	json_t *args = json_copy(c->args); /* shallow: the caller's object stays as it sent it */
	if (!args || json_object_set_new(args, "sandbox_id", json_string(id)) < 0) {
		json_decref(args);
		return -ENOMEM;
	}
	json_decref(c->args);
	c->args = args;
	return 0;
}

static int start_op(struct svc_call *c, const struct srv_sink *sink, struct al_error *err)
{
	const struct srv_mgr_api *m = c->rn->mgr;
	/* An approver acting on another principal's sandbox reaches it as its owner would: the
	 * manager's ownership check stays the only one, and the audit record names both. */
	if (c->for_owner[0] && c->tool == TL_DESTROY_SANDBOX) {
		/* Who ended it, for the words its owner's later calls get (svc_call_act_for allows only
		 * destroy): an approver, named. */
		struct srv_path_req req = {.owner = c->for_owner,
					   .sandbox_id = json_string_value(json_object_get(c->args, "sandbox_id")),
					   .by_approver = c->who.name ? c->who.name : "an approver"};
		return m->destroy_sandbox(m->ctx, &req, sink, &c->op, err);
	}
	if (c->for_owner[0] && (c->tool == TL_PAUSE || c->tool == TL_RESUME)) {
		struct srv_pause_req req = {.owner = c->for_owner,
					    .sandbox_id = json_string_value(json_object_get(c->args, "sandbox_id")),
					    .by_approver = c->who.name ? c->who.name : "an approver",
					    .to_disk = c->tool == TL_PAUSE &&
						       json_is_true(json_object_get(c->args, "to_disk"))};
		int (*fn)(void *, const struct srv_pause_req *, const struct srv_sink *, struct srv_op **,
			  struct al_error *) = c->tool == TL_PAUSE ? m->pause_sandbox : m->resume_sandbox;
		return fn ? fn(m->ctx, &req, sink, &c->op, err)
			  : al_err(err, ENOTSUP, "this server cannot pause sandboxes");
	}
	if (c->for_owner[0])
		return tl_start(m, c->tool, c->args, c->for_owner, sink, &c->op, err);
	const char *sandbox = json_string_value(json_object_get(c->args, "sandbox_id"));
	const char *path = json_string_value(json_object_get(c->args, "path"));
	if ((c->tool == TL_WRITE_FILE || c->tool == TL_UPLOAD) && c->spool_fd >= 0) {
		/* The upload is already beneath the workspace (open_upload): the manager puts it in
		 * place, or unpacks it. */
		const char *kind = json_string_value(json_object_get(c->args, "kind"));
		struct srv_write_req req = {.owner = c->who.name,
					    .sandbox_id = sandbox,
					    .path = path,
					    .spooled = true,
					    .spool_fd = c->spool_fd,
					    .archive = kind && strcmp(kind, "archive") == 0};
		return m->write_file(m->ctx, &req, sink, &c->op, err);
	}
	if (c->tool == TL_WRITE_FILE && c->raw) {
		/* The bytes as they came: no base64 round trip for a raw PUT body. */
		struct srv_write_req req = {
			.owner = c->who.name, .sandbox_id = sandbox, .path = path, .data = c->raw, .len = c->raw_len};
		return m->write_file(m->ctx, &req, sink, &c->op, err);
	}
	if (c->tool == TL_READ_FILE && c->want_fd) {
		/* The open file rather than its bytes: the transport streams it (memory per request
		 * stays bounded, whatever the file's size). */
		struct srv_path_req req = {.owner = c->who.name, .sandbox_id = sandbox, .path = path, .want_fd = true};
		return m->read_file(m->ctx, &req, sink, &c->op, err);
	}
	/* The sandboxes a call may use are its principal's: the manager answers any other id as
	 * unknown. */
	return tl_start(m, c->tool, c->args, c->who.name, sink, &c->op, err);
}

/* BEFORE RUN: the one point where a call, approved on whatever transport, reaches the manager —
 * and only once its start record is durable in the audit log (srv_gate_admit): a call the log
 * cannot record does not run (the service is unavailable: HTTP 503, an MCP tool error). */
static enum svc_step start(struct svc_call *c, struct svc_refusal *ref)
{
	struct srv_sink sink;
	struct al_error err = {0};
	struct srv_call_start st = {.tool = tl_name(c->tool),
				    .args = c->args,
				    .approval = c->approval,
				    .by = c->by,
				    .transport = c->transport ? c->transport : c->rn->transport,
				    .peer = c->peer,
				    .principal = c->who.name,
				    .approver = c->approver[0] ? c->approver : NULL,
				    .on_behalf_of = c->for_owner[0] ? c->for_owner : NULL};
	int a = srv_gate_admit(c->rn->gate, &st, c->call_id, &err);
	if (a < 0) {
		enum svc_step step = refuse(c, ref, SRV_CALL_REQUEST_FAILED, a, err.msg);
		ref->unavailable = true;
		return step;
	}
	if (c->port->sink(c->owner, &sink) < 0)
		return refuse(c, ref, SRV_CALL_REQUEST_FAILED, -ENOMEM, "out of memory");
	int r = start_op(c, &sink, &err);
	c->raw = NULL; /* borrowed until here */
	if (r < 0) {
		c->op = NULL;
		if (c->port->unsink)
			c->port->unsink(c->owner); /* the manager will never call on_done */
		return refuse(c, ref, SRV_CALL_REQUEST_FAILED, r, err.msg);
	}
	c->running = true;
	return SVC_RUNNING;
}

void svc_call_cancel(struct svc_call *c)
{
	const struct srv_mgr_api *m = c->rn->mgr;
	if (c->running && c->op && !c->cancelled && m->cancel) {
		c->cancelled = true;
		m->cancel(m->ctx, c->op);
	}
}

void svc_call_client_left(struct svc_call *c)
{
	if (!c->ended)
		c->client_left = true;
}

/* ---- classification and approval ---------------------------------------------------------------- */

static void decide(struct svc_call *c, enum srv_gate_outcome outcome, enum srv_gate_by by)
{
	const struct srv_gate *g = c->rn->gate;
	c->decided = true;
	c->approval = outcome;
	c->by = by;
	if (g && g->record)
		g->record(g->ctx, tl_name(c->tool), c->args, outcome);
	const struct svc_observer *o = c->rn->observer;
	if (o && o->decided)
		o->decided(o->ctx, outcome);
}

const char *svc_denial_text(enum srv_gate_outcome o)
{
	switch (o) {
	case SRV_GATE_DECLINED:
		return "denied: a reviewer did not approve this call";
	case SRV_GATE_TIMED_OUT:
		return "denied: no approval before the timeout";
	case SRV_GATE_ABANDONED:
		return "denied: the server stopped while the call waited for approval";
	case SRV_GATE_UNAVAILABLE:
		return "denied: this call needs a human's approval, and nobody can be asked";
	case SRV_GATE_ALLOWED:
	case SRV_GATE_APPROVED:
	case SRV_GATE_DENIED:
		break;
	}
	return "denied";
}

/* APPROVAL GATE: the one place where the risk rules see a call before the manager does, whatever
 * its transport. A call that is not allowed here never reaches start(). */
enum svc_step svc_call_begin(struct svc_call *c, const struct svc_port *port, void *owner, struct svc_refusal *ref)
{
	const struct srv_gate *g = c->rn->gate;
	c->port = port;
	c->owner = owner;
	c->begun = true;
	c->d = (struct srv_gate_decision){.verdict = SRV_GATE_DENY};
	/* A call the manager would refuse at once (an install in a sandbox without a route to its
	 * registry) is refused now, with its cause: a human is never asked to approve what cannot
	 * run, and nothing reaches the manager. */
	struct al_error perr = {0};
	int pr = tl_precheck(c->rn->mgr, c->tool, c->args, c->for_owner[0] ? c->for_owner : c->who.name, &perr);
	if (pr < 0)
		return refuse(c, ref, SRV_CALL_REQUEST_FAILED, pr, perr.msg[0] ? perr.msg : "the request failed");
	if (g)
		g->check(g->ctx, tl_name(c->tool), c->args, &c->d);
	else
		c->d.verdict = SRV_GATE_ALLOW; /* no risk rules configured: the operator's choice */
	c->d.reason[sizeof(c->d.reason) - 1] = 0;
	char text[SVC_TEXT_MAX];
	switch (c->d.verdict) {
	case SRV_GATE_ALLOW:
		decide(c, SRV_GATE_ALLOWED, SRV_BY_NOBODY);
		return start(c, ref);
	case SRV_GATE_ASK: {
		snprintf(text, sizeof(text), "%s", svc_denial_text(SRV_GATE_UNAVAILABLE));
		int r = port->ask(owner, &c->d, text, sizeof(text));
		if (r == 0)
			return SVC_ASKING;
		if (r == -ENOMEM)
			return refuse(c, ref, SRV_CALL_REQUEST_FAILED, r, "out of memory asking for approval");
		decide(c, SRV_GATE_UNAVAILABLE, SRV_BY_NOBODY);
		return refuse(c, ref, SRV_CALL_DENIED, -EPERM, text);
	}
	case SRV_GATE_DENY:
		break;
	}
	/* Anything else, including a verdict we do not know, is a denial: fail closed. */
	decide(c, SRV_GATE_DENIED, SRV_BY_NOBODY);
	snprintf(text, sizeof(text), "denied: %s", c->d.reason[0] ? c->d.reason : "the risk rules refuse this call");
	return refuse(c, ref, SRV_CALL_DENIED, -EPERM, text);
}

int svc_call_act_for(struct svc_call *c, const char *owner)
{
	/* Only destroy, and a look at its processes (list, output: they read what the manager keeps
	 * and change nothing): an approver may end or watch what another principal runs, never run
	 * anything in it, type into it, resize, signal or kill a process of it. */
	const char *action = json_string_value(json_object_get(c->args, "action"));
	bool look = c->tool == TL_PROCESS && action && (strcmp(action, "list") == 0 || strcmp(action, "output") == 0);
	/* Pausing and resuming stop and go on with what runs there, as it is: nothing new runs. */
	bool hold = c->tool == TL_PAUSE || c->tool == TL_RESUME;
	/* Deleting a snapshot, as destroying a sandbox, ends what is kept: nothing runs. */
	bool end = c->tool == TL_DESTROY_SANDBOX || c->tool == TL_DELETE_SNAPSHOT;
	if ((!end && !look && !hold) || c->begun || !owner || !*owner || strlen(owner) >= sizeof(c->for_owner))
		return -EINVAL;
	snprintf(c->for_owner, sizeof(c->for_owner), "%s", owner);
	return 0;
}

void svc_call_set_transport(struct svc_call *c, const char *transport)
{
	c->transport = transport;
}

void svc_call_set_approver(struct svc_call *c, const char *approver)
{
	snprintf(c->approver, sizeof(c->approver), "%s", approver ? approver : "");
}

/* Only an explicit approval runs the call: any other outcome, known or not, denies it. */
enum svc_step svc_call_answer(struct svc_call *c, enum srv_gate_outcome outcome, enum srv_gate_by by, const char *text,
			      struct svc_refusal *ref)
{
	if (outcome == SRV_GATE_APPROVED) {
		decide(c, SRV_GATE_APPROVED, by);
		return start(c, ref);
	}
	decide(c, outcome, by);
	return refuse(c, ref, SRV_CALL_DENIED, -EPERM, text ? text : svc_denial_text(outcome));
}

void svc_call_abandon(struct svc_call *c)
{
	decide(c, SRV_GATE_ABANDONED, SRV_BY_NOBODY);
	svc_call_end(c, SRV_CALL_CANCELLED, NULL, NULL);
}

/* ---- accessors ---------------------------------------------------------------------------------- */

enum tl_id svc_call_tool(const struct svc_call *c)
{
	return c->tool;
}

const json_t *svc_call_args(const struct svc_call *c)
{
	return c->args;
}

const char *svc_call_reason(const struct svc_call *c)
{
	return c->d.reason;
}

const struct svc_principal *svc_call_principal(const struct svc_call *c)
{
	return &c->who;
}

bool svc_call_ended(const struct svc_call *c)
{
	return c->ended;
}
