/* session.h — the MCP session's internals, shared by mcp.c (lifecycle, dispatch) and call.c (tools/call). */
#ifndef AL_MCP_SESSION_H
#define AL_MCP_SESSION_H

#include <stdbool.h>

#include "mcp/evq.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "service/runner.h"
#include "service/text.h"
#include "service/tools.h"

#define MCP_PEER_MAX 96

static inline void ses_json_decrefp(json_t **j)
{
	json_decref(*j);
}
#define cleanup_json __attribute__((cleanup(ses_json_decrefp)))

enum call_state {
	CALL_APPROVAL, /* waiting for a human: our elicitation/create, or the approver */
	CALL_RUNNING,  /* started on the manager, waiting for on_done */
};

/* One tools/call in flight: the wire's side of a runner call (service/runner.h). */
struct call {
	struct call *next, *prev;
	struct mcp_session *s;
	uint64_t id;	     /* ours, for the manager's events */
	json_t *req_id;	     /* the client's request id */
	enum tl_id tool;
	struct svc_call *sc; /* the runner's side: arguments, approval, the manager's operation */
	json_t *out;	     /* while the runner is called: the turn's messages (for the port) */
	json_t *progress;    /* the client's progressToken, or NULL */
	enum call_state state;
	bool cancelled;	     /* the client cancelled it: it gets no response */
	json_t *elicit_id;   /* CALL_APPROVAL through elicitation: our request's id */
	bool via_approver;   /* CALL_APPROVAL through the approver: */
	uint64_t approver_id; /* its id there */
	struct evq_link *alink; /* the approver's cookie (the answer comes as EVQ_ANSWER) */
	uint64_t deadline;   /* CALL_APPROVAL: when silence becomes a denial */
	struct evq_link *link;
	uint64_t streamed;   /* bytes sent as progress: the (increasing) progress value */
	struct txt_carry carry[2]; /* per stream: a character cut by the chunk boundary */
};

enum session_state {
	SESSION_NEW,	     /* only initialize and ping are served */
	SESSION_ANSWERED,    /* initialize answered; waiting for notifications/initialized */
	SESSION_READY,
};

struct mcp_session {
	struct mcp_opts o;
	struct tl_catalog cat;
	struct svc_runner rn; /* every tools/call of the session runs here */
	struct evq *q;
	enum session_state state;
	const char *protocol;	 /* negotiated revision (static string) */
	bool client_elicits;	 /* the client declared elicitation in form mode */
	enum mcp_log_level level; /* the client's logging/setLevel */
	struct call *calls;
	size_t n_calls;
	uint64_t next_call_id;
	uint64_t next_request_id;
	char peer[MCP_PEER_MAX]; /* mcp_session_set_peer: the sender of the messages fed next */
	char principal[MCP_PEER_MAX]; /* mcp_session_set_principal: whose they are */
};

/* mcp.c */
int ses_reply(json_t *out, json_t *id, json_t *steal_result);
__attribute__((format(printf, 4, 5))) int ses_reply_error(json_t *out, json_t *id, int code, const char *fmt, ...);
__attribute__((format(printf, 4, 5))) int ses_logf(struct mcp_session *s, json_t *out, enum mcp_log_level level,
						   const char *fmt, ...);
uint64_t ses_now(const struct mcp_session *s);

/* call.c */
int call_tools_call(struct mcp_session *s, const struct jr_message *m, json_t *out);
int call_cancelled(struct mcp_session *s, const json_t *params, json_t *out);
int call_answer(struct mcp_session *s, const struct jr_message *m, json_t *out);
int call_poll(struct mcp_session *s, json_t *out);
void call_cancel_all(struct mcp_session *s);
void call_free_all(struct mcp_session *s);

#endif
