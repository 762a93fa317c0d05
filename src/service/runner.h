/* runner.h — the one call runner: every tool call, over any transport, goes validate → classify → approve → run → audit → result here. */
#ifndef AL_SERVICE_RUNNER_H
#define AL_SERVICE_RUNNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "manager/api.h"
#include "service/gate.h"
#include "service/tools.h"

/*
 * Theory of operation
 *
 * A transport (the MCP session over stdio or HTTP, the JSON API) turns a request into a call
 * (svc_call_new) and then only translates: it feeds the runner what happened on its wire and
 * turns what the runner says into its own answers. The runner holds everything that must be the
 * same on every transport: the schema check, the risk rules' verdict, who approved it, the
 * manager's operation, and the one audit record at the end.
 *
 *   svc_call_validate  the tool's schema and cross-field rules            -> refused (INVALID)
 *   svc_call_begin     classify with the gate's risk rules: ALLOW runs, DENY is refused, ASK
 *                      goes to the transport's ask port (elicitation, the approval queue, a
 *                      terminal prompt)                                   -> asking / running / refused
 *   svc_call_answer    the human's answer (or the clock's): APPROVED runs -> running / refused
 *   svc_call_end       AFTER END: the gate's audit hook and the observer hear how it ended, once
 *
 * BEFORE RUN is svc_call_begin/svc_call_answer's start of the manager operation (runner.c,
 * start()): the one point where any call is about to reach the manager.
 *
 * Threads: every svc_call_* function runs on the transport's thread of the call, one at a time;
 * only the sink the port supplies is called by the manager's threads. The gate, the observer and
 * the port are called from the runner, on that thread, and must not block.
 */

/* Who sends a call. The transports fill what they know (issue 16 adds principals and roles). */
enum svc_principal_kind {
	SVC_PRINCIPAL_ANONYMOUS, /* nothing known */
	SVC_PRINCIPAL_PEER,	 /* a local process (stdio's parent, a Unix socket's peer) */
	SVC_PRINCIPAL_TOKEN,	 /* a named bearer token */
};

struct svc_principal {
	enum svc_principal_kind kind;
	const char *name; /* NULL: "anonymous" */
	uid_t uid;	  /* (uid_t)-1 when unknown */
};

/* Watches every call of a runner (the /metrics counters). Optional entries; must not block. */
struct svc_observer {
	void *ctx;
	void (*decided)(void *ctx, enum srv_gate_outcome outcome);
	void (*ended)(void *ctx, const struct srv_call_end *end);
};

/* What the calls of one front end share. Borrowed: everything must outlive the calls. */
struct svc_runner {
	const struct srv_mgr_api *mgr;	     /* required */
	const struct srv_gate *gate;	     /* risk rules + audit; NULL: every valid call is allowed */
	const struct svc_observer *observer; /* NULL: none */
	const struct tl_catalog *cat;	     /* the tools' schemas */
	const char *transport;		     /* the audit record's: "stdio", "http" */
	uint64_t (*now_us)(void *ctx);	     /* monotonic clock (NULL: CLOCK_MONOTONIC); tests inject one */
	void *now_ctx;
};

/* How the runner reaches the transport of one call; owner is the transport's call object. */
struct svc_port {
	/* The rules want a human. 0: asked; the answer comes back through svc_call_answer (or the
	 * transport gives up with svc_call_abandon). -errno: nobody could be asked; why (cap bytes)
	 * is the denial the client gets (-ENOMEM: the call fails instead). Must not block. */
	int (*ask)(void *owner, const struct srv_gate_decision *d, char *why, size_t cap);
	/* The sink the manager reports the operation to (manager/api.h): 0, or -ENOMEM. */
	int (*sink)(void *owner, struct srv_sink *out);
	/* The manager refused the start: the sink will never be called. Optional. */
	void (*unsink)(void *owner);
};

#define SVC_TEXT_MAX (SRV_GATE_REASON_MAX + 256)

/* Why a call ended without running (the transport's answer is made of it). */
struct svc_refusal {
	enum srv_call_status status;	/* INVALID, DENIED, or REQUEST_FAILED */
	enum srv_gate_outcome approval; /* DENIED: how the approval ended */
	int error;			/* INVALID: -EINVAL; REQUEST_FAILED: the -errno (-ENOMEM: ours) */
	bool unavailable;		/* REQUEST_FAILED: the service cannot run calls now (its audit log) */
	char text[SVC_TEXT_MAX];	/* for the client */
};

enum svc_step {
	SVC_ASKING,  /* the port asked a human: wait for svc_call_answer */
	SVC_RUNNING, /* the manager has it: the sink gets its output and its end */
	SVC_REFUSED, /* ended without running: see the refusal; the audit record is written */
};

struct svc_call;

/* A call of tool with args (borrowed, a reference is taken) from who (copied) over peer (copied;
 * NULL: the gate's default). NULL on ENOMEM. */
struct svc_call *svc_call_new(const struct svc_runner *rn, enum tl_id tool, json_t *args,
			      const struct svc_principal *who, const char *peer);
/* Ends a call that began and did not end as CANCELLED (a call dropped before svc_call_begin
 * leaves no record), hands the manager's operation back (release), frees. NULL: a no-op. */
void svc_call_free(struct svc_call *c);

/* 0, or -EINVAL / -ENOMEM: the call ended (INVALID, or REQUEST_FAILED for -ENOMEM), ref says why. */
int svc_call_validate(struct svc_call *c, struct svc_refusal *ref);
/* raw: write_file's bytes as they came (instead of the arguments' content); want_fd: read_file
 * answers with the open file. Set before svc_call_begin; raw is borrowed until the start. */
void svc_call_payload(struct svc_call *c, const void *raw, size_t len, bool want_fd);
/* write_file or upload: the bytes are in fd, a file the manager's open_upload made (borrowed until
 * the call ends). Before svc_call_begin. */
void svc_call_spool(struct svc_call *c, int fd);
/* The call runs in sandbox id (the transport's session sandbox for a call that named none): set
 * in the call's own copy of its arguments, so the rules, the approval and the audit record see
 * the sandbox it acts on. Before svc_call_begin; 0 or -ENOMEM. */
int svc_call_set_sandbox(struct svc_call *c, const char *id);
enum svc_step svc_call_begin(struct svc_call *c, const struct svc_port *port, void *owner, struct svc_refusal *ref);
/* The human's answer to SVC_ASKING: APPROVED starts the call; anything else denies it, with text
 * (NULL: the runner's words) as the denial the client gets. */
enum svc_step svc_call_answer(struct svc_call *c, enum srv_gate_outcome outcome, enum srv_gate_by by, const char *text,
			      struct svc_refusal *ref);
/* An approver's call on a sandbox owner owns (the console's destroy): the manager sees owner as
 * the caller, the audit records name the call's principal and, as on_behalf_of, owner. The
 * transport checked that the principal is an approver. Only code_destroy_sandbox and code_process's
 * read-only actions (list, output), before svc_call_begin: 0, or -EINVAL. */
int svc_call_act_for(struct svc_call *c, const char *owner);
/* The front end its audit records name instead of the runner's transport ("e2b": a call made
 * through the E2B front end of the HTTP listener); a static string. Before svc_call_begin. */
void svc_call_set_transport(struct svc_call *c, const char *transport);
/* Who answered (before svc_call_answer): the principal the approval queue names, for the audit log. */
void svc_call_set_approver(struct svc_call *c, const char *approver);
/* The client went away or cancelled while a human was being asked: ends it as CANCELLED. */
void svc_call_abandon(struct svc_call *c);
/* Asks the manager to stop the running operation (at most once; its on_done still comes). */
void svc_call_cancel(struct svc_call *c);
/* The client went away (its connection closed) before it got the answer: the end record says so
 * (srv_call_end.client_left). Before svc_call_end; later it changes nothing. */
void svc_call_client_left(struct svc_call *c);
/* AFTER END: how the call ended (res: the manager's result, or NULL; msg: the client's error
 * text, or NULL). Only the first call counts. */
void svc_call_end(struct svc_call *c, enum srv_call_status status, const struct srv_result *res, const char *msg);

/* The runner's words for a denial by a human's (or the clock's) outcome. */
const char *svc_denial_text(enum srv_gate_outcome o);

enum tl_id svc_call_tool(const struct svc_call *c);
const json_t *svc_call_args(const struct svc_call *c);
/* What the rules said about the call (valid once svc_call_begin classified it). */
const char *svc_call_reason(const struct svc_call *c);
const struct svc_principal *svc_call_principal(const struct svc_call *c);
bool svc_call_ended(const struct svc_call *c);

#endif
