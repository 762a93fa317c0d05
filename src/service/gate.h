/* gate.h — the risk/approval/audit hook every tool call passes before the manager sees it: the
 * service's contract with the front ends and the runner (the manager knows nothing of it). */
#ifndef AL_SERVICE_GATE_H
#define AL_SERVICE_GATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "manager/api.h"

/*
 * The call runner calls gate->check for every call whose arguments are valid, whatever its
 * transport, before anything reaches the manager (src/service/runner.c, "APPROVAL GATE"). The
 * risk rules and the audit log implement it (src/service/mgate.c):
 *   ALLOW  the call runs;
 *   DENY   the call never runs; the client gets a tool error carrying reason;
 *   ASK    a human decides: the session sends the client an MCP elicitation/create request (if
 *          the client declared the elicitation capability) showing reason and the arguments,
 *          and waits up to timeout_ms; or, when the client cannot (or the operator prefers
 *          otherwise), asks through the session's approver (struct srv_approver below: the
 *          approval queue behind /v1/approvals, or a terminal prompt). Only an explicit approval
 *          runs the call; a decline, a cancel, an error answer, silence past the timeout, or no
 *          way to ask anybody are all denials.
 * check runs on the session's thread and must not block (asking a human is ASK, not a wait
 * inside check).
 */
enum srv_gate_verdict {
	SRV_GATE_ALLOW,
	SRV_GATE_DENY,
	SRV_GATE_ASK,
};

/* How a call's approval ended, for the audit log. */
enum srv_gate_outcome {
	SRV_GATE_ALLOWED,     /* by the rules, no human */
	SRV_GATE_DENIED,      /* by the rules */
	SRV_GATE_APPROVED,    /* a human approved through elicitation */
	SRV_GATE_DECLINED,    /* a human declined or cancelled */
	SRV_GATE_TIMED_OUT,   /* no answer before the timeout */
	SRV_GATE_UNAVAILABLE, /* approval needed, but the client cannot elicit (or answered with an error) */
	SRV_GATE_ABANDONED,   /* the client cancelled the call, or went away, while we waited */
};

/* Who answered an ASK, for the audit log. */
enum srv_gate_by {
	SRV_BY_NOBODY,	    /* the rules decided, or no human answered */
	SRV_BY_ELICITATION, /* the MCP client's user, through elicitation/create */
	SRV_BY_HTTP,	    /* a reviewer, through POST /v1/approvals/{id} */
	SRV_BY_TERMINAL,    /* the operator, at the prompt of an interactive `airlock mcp` */
};

/* How a tools/call ended, for the audit log. */
enum srv_call_status {
	SRV_CALL_OK,		 /* the tool ran and succeeded */
	SRV_CALL_PROGRAM_FAILED, /* the program ran and failed (non-zero exit, timeout, ...): isError */
	SRV_CALL_REQUEST_FAILED, /* the manager refused or failed (unknown sandbox, path, I/O) */
	SRV_CALL_DENIED,	 /* the gate, or the human, said no: never ran */
	SRV_CALL_CANCELLED,	 /* the client cancelled it or went away */
	SRV_CALL_INVALID,	 /* the arguments did not match the tool's schema: never reached the gate */
};

/* Everything the session knows about a call when it ends. Pointers are borrowed for the call. */
struct srv_call_end {
	const char *tool;
	const json_t *args; /* as the client sent them (for INVALID, possibly not an object) */
	enum srv_call_status status;
	bool decided;			 /* the gate was consulted (false for INVALID) */
	enum srv_gate_outcome approval;	 /* when decided */
	enum srv_gate_by by;		 /* who answered, when a human was asked and answered */
	const char *transport;		 /* "stdio", "http", or NULL (the gate's own default) */
	const char *peer;		 /* the client that sent the call, or NULL (the gate's default) */
	const char *principal;		 /* who made the call, or NULL (the peer) */
	const char *approver;		 /* the principal who approved or declined it, when known */
	const char *on_behalf_of;	 /* an approver's call on another principal's sandbox: its owner, or NULL */
	const char *call_id;		 /* what admit named its start record, or NULL (never admitted) */
	uint64_t duration_ms;		 /* from the request's arrival */
	uint64_t duration_us;		 /* the same in microseconds where the front end measures them, else 0 */
	const struct srv_result *result; /* the manager's result (verdict, resources), or NULL */
	const char *message;		 /* the error text the client got, or NULL */
	bool client_left;		 /* the client's connection closed before it had the answer */
};

#define SRV_GATE_REASON_MAX 256
#define SRV_CALL_ID_MAX	    40

/* A call that passed the gate, about to run (admit below). Pointers are borrowed for the call. */
struct srv_call_start {
	const char *tool;
	const json_t *args;
	enum srv_gate_outcome approval; /* SRV_GATE_ALLOWED or SRV_GATE_APPROVED */
	enum srv_gate_by by;		/* who approved, when a human did */
	const char *transport;		/* as in srv_call_end */
	const char *peer;
	const char *principal;
	const char *approver;	       /* the human who approved, when known, or NULL */
	const char *on_behalf_of;      /* as in srv_call_end */
	char call_id[SRV_CALL_ID_MAX]; /* out: the start record's id ("" when none was written) */
};

/* What the gate's audit log is doing, for /v1/health and /metrics. */
struct srv_gate_health {
	bool degraded;			  /* the audit log cannot be written now: calls are refused */
	uint64_t audit_failures;	  /* audit records that could not be written */
	char reason[SRV_GATE_REASON_MAX]; /* when degraded */
};

/* A byte range [start, end) of the call's code that the deciding rule's pattern matched. */
struct srv_mark {
	size_t start, end;
};

#define SRV_GATE_MARKS_MAX 16

struct srv_gate_decision {
	enum srv_gate_verdict verdict;
	char reason[SRV_GATE_REASON_MAX]; /* DENY: why; ASK: what the human is asked about (e.g. the risk) */
	uint32_t timeout_ms;		  /* ASK: how long to wait (0: the session's default) */
	/* ASK: where the deciding rule's patterns matched the code, in order (a human is shown them
	 * marked); none when the rule has no pattern on the code. */
	struct srv_mark marks[SRV_GATE_MARKS_MAX];
	size_t nmarks;
};

struct srv_gate {
	void *ctx;
	/* tool: the tool's name; args: its validated arguments (borrowed). Fill *out. */
	void (*check)(void *ctx, const char *tool, const json_t *args, struct srv_gate_decision *out);
	/* Optional: told how the approval ended, before the call runs (or instead of it). */
	void (*record)(void *ctx, const char *tool, const json_t *args, enum srv_gate_outcome outcome);
	/* Optional: told once per tools/call of a known tool when it ends, however it ends (the
	 * audit log's one record per request). Runs on the session's thread; must not block. */
	void (*finished)(void *ctx, const struct srv_call_end *end);
	/* Optional: called once for a call that passed the gate, right before the manager gets it,
	 * on the session's thread (it blocks until its audit record is durable). 0 lets it run; a
	 * -errno refuses it (err says why, naming the audit log): the runner answers with that error
	 * (HTTP 503, an MCP tool error) and ends the call without running anything. */
	int (*admit)(void *ctx, struct srv_call_start *start, struct al_error *err);
	/* Optional: fills *out (zeroed by the caller). Any thread. */
	void (*health)(void *ctx, struct srv_gate_health *out);
};

/* AUDIT GATE: g->admit when there is one (else 0); call_id gets start->call_id. */
int srv_gate_admit(const struct srv_gate *g, struct srv_call_start *start, char call_id[SRV_CALL_ID_MAX],
		   struct al_error *err);

/*
 * A way to ask a human outside the MCP protocol: the approval queue (service/approval.h) that
 * GET/POST /v1/approvals and the terminal prompt of `airlock mcp` serve.
 *  - ask registers the question and returns at once: 0 with *id set, or -errno (then done is
 *    never called). done(cookie, outcome, by) is then called exactly once, from any thread
 *    (possibly inside cancel, on the caller's thread): APPROVED or DECLINED with who answered,
 *    or cancel's why. The cookie must stay valid until done ran.
 *  - cancel(id, why) gives up (SRV_GATE_TIMED_OUT, SRV_GATE_ABANDONED); a no-op when the
 *    answer already came (done ran or is running elsewhere).
 */
/* approver: the principal that decided ("token:reviewer", "uid:0"), NULL when nobody did or the
 * operator's own terminal did (by says which). */
typedef void (*srv_approver_done)(void *cookie, enum srv_gate_outcome outcome, enum srv_gate_by by,
				  const char *approver);

/* One question to a human: a call (tool, args: borrowed), what it is asked about, how long the
 * asker waits, and the principal that made it (NULL: unknown; never allowed to approve it). */
struct srv_question {
	const char *tool;
	const json_t *args;
	const char *reason;
	uint32_t timeout_ms;
	const char *principal;
	const struct srv_mark *marks; /* the decision's marks in args.code (borrowed; copied), or NULL */
	size_t nmarks;
};

struct srv_approver {
	void *ctx;
	int (*ask)(void *ctx, const struct srv_question *q, srv_approver_done done, void *cookie, uint64_t *id);
	void (*cancel)(void *ctx, uint64_t id, enum srv_gate_outcome why);
};

const char *srv_gate_outcome_name(enum srv_gate_outcome o);
const char *srv_gate_by_name(enum srv_gate_by by);

#endif
