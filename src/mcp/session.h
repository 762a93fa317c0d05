/* session.h — the MCP session's internals, shared by mcp.c (lifecycle, dispatch) and call.c (tools/call). */
#ifndef AL_MCP_SESSION_H
#define AL_MCP_SESSION_H

#include <stdbool.h>

#include "mcp/evq.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "service/runner.h"
#include "util/text.h"
#include "service/tools.h"

#define MCP_PEER_MAX 96

static inline void ses_json_decrefp(json_t **j)
{
	json_decref(*j);
}
#define cleanup_json __attribute__((cleanup(ses_json_decrefp)))

enum call_state {
	CALL_SANDBOX,  /* not begun: waits for the session's own sandbox, being made (own.c) */
	CALL_APPROVAL, /* waiting for a human: our elicitation/create, or the approver */
	CALL_RUNNING,  /* started on the manager, waiting for on_done */
};

/* One tools/call in flight: the wire's side of a runner call (service/runner.h). */
struct call {
	struct call *next, *prev;
	struct mcp_session *s;
	uint64_t id;	/* ours, for the manager's events */
	json_t *req_id; /* the client's request id */
	enum tl_id tool;
	struct svc_call *sc; /* the runner's side: arguments, approval, the manager's operation */
	json_t *out;	     /* while the runner is called: the turn's messages (for the port) */
	json_t *progress;    /* the client's progressToken, or NULL */
	enum call_state state;
	bool cancelled;		/* the client cancelled it: it gets no response */
	bool own_create;	/* the session's code_create_sandbox for its own sandbox: answers nobody */
	bool uses_own;		/* its sandbox_id is the session's own sandbox (own.c put it there) */
	json_t *elicit_id;	/* CALL_APPROVAL through elicitation: our request's id */
	bool via_approver;	/* CALL_APPROVAL through the approver: */
	uint64_t approver_id;	/* its id there */
	struct evq_link *alink; /* the approver's cookie (the answer comes as EVQ_ANSWER) */
	uint64_t deadline;	/* CALL_APPROVAL: when silence becomes a denial */
	struct evq_link *link;
	uint64_t streamed;	   /* bytes sent as progress: the (increasing) progress value */
	struct txt_carry carry[2]; /* per stream: a character cut by the chunk boundary */
};

enum session_state {
	SESSION_NEW,	  /* only initialize and ping are served */
	SESSION_ANSWERED, /* initialize answered; waiting for notifications/initialized */
	SESSION_READY,
};

struct mcp_session {
	struct mcp_opts o;
	struct tl_catalog cat;
	struct svc_runner rn; /* every tools/call of the session runs here */
	struct evq *q;
	enum session_state state;
	const char *protocol;	  /* negotiated revision (static string) */
	bool client_elicits;	  /* the client declared elicitation in form mode */
	enum mcp_log_level level; /* the client's logging/setLevel */
	struct call *calls;
	size_t n_calls;
	uint64_t next_call_id;
	uint64_t next_request_id;
	char peer[MCP_PEER_MAX];      /* mcp_session_set_peer: the sender of the messages fed next */
	char principal[MCP_PEER_MAX]; /* mcp_session_set_principal: whose they are */
	/* The session's own sandbox (own.c): used by every call that names none, made by the first
	 * such call, destroyed with the session. */
	char own_id[SRV_SANDBOX_ID_MAX]; /* "" until made */
	char own_owner[SRV_OWNER_MAX];	 /* the principal that made it (its owner in the manager) */
	struct call *own_making;	 /* the create call in flight, or NULL */
};

/* mcp.c */
int ses_reply(json_t *out, json_t *id, json_t *steal_result);
__attribute__((format(printf, 4, 5))) int ses_reply_error(json_t *out, json_t *id, int code, const char *fmt, ...);
__attribute__((format(printf, 4, 5))) int ses_logf(struct mcp_session *s, json_t *out, enum mcp_log_level level,
						   const char *fmt, ...);
uint64_t ses_now(const struct mcp_session *s);

/* call.c */
struct call *call_new(struct mcp_session *s, json_t *req_id, enum tl_id tool, struct svc_call *sc, json_t *token);
void call_free(struct mcp_session *s, struct call *c);
int call_begin(struct mcp_session *s, struct call *c, json_t *out);
int call_fail(struct mcp_session *s, struct call *c, enum srv_call_status status, const char *text, json_t *out);
struct svc_principal call_principal(const struct mcp_session *s);
int call_tools_call(struct mcp_session *s, const struct jr_message *m, json_t *out);
int call_cancelled(struct mcp_session *s, const json_t *params, json_t *out);
/* The transport lost the client that sent request req_id (mcp_session_client_left). */
int call_client_left(struct mcp_session *s, const json_t *req_id, json_t *out);
int call_answer(struct mcp_session *s, const struct jr_message *m, json_t *out);
int call_poll(struct mcp_session *s, json_t *out);
void call_cancel_all(struct mcp_session *s);
void call_free_all(struct mcp_session *s);

/* own.c: the session's own sandbox */
/* Whether c names no sandbox and runs in the session's own (1), or not (0). */
bool own_wanted(const struct call *c);
/* Begins c in the session's sandbox, first making it (c waits in CALL_SANDBOX meanwhile). */
int own_route(struct mcp_session *s, struct call *c, json_t *out);
/* The session's create call ended: id is the new sandbox (NULL: it failed, why says why). */
int own_made(struct mcp_session *s, const char *id, const char *why, json_t *out);
/* A call in the session's sandbox failed with msg: if the sandbox itself is gone (expired,
 * destroyed by code_destroy_sandbox), the session forgets it. Returns the text to answer with
 * (msg, or msg with a note written to buf). */
const char *own_failed(struct mcp_session *s, const struct call *c, const char *msg, char *buf, size_t cap);
/* code_destroy_sandbox of id succeeded: if it was the session's own, the session forgets it. */
void own_destroyed(struct mcp_session *s, const char *id);
/* The session ends: its sandbox is destroyed (its processes killed, its workspace gone). */
void own_destroy(struct mcp_session *s);

#endif
