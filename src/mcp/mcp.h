/* mcp.h — a Model Context Protocol server session, independent of its transport, and the stdio transport. */
#ifndef AL_MCP_MCP_H
#define AL_MCP_MCP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"
#include "manager/api.h"
#include "service/gate.h"
#include "service/runner.h"

/*
 * Theory of operation
 *
 * A session is one MCP connection's protocol state: the negotiated revision, the client's
 * capabilities, and the tool calls in flight. It never reads or writes a descriptor of its own
 * except its wake-up eventfd: a transport feeds it one message at a time (mcp_session_feed) and
 * sends whatever messages it appends to `out`, a JSON array.
 *
 * A tools/call is validated against the tool's schema, passed through the approval gate (which
 * may ask the human through an elicitation/create request to the client and wait for the
 * answer), then started on the manager. The manager reports through callbacks from any thread;
 * they only queue (evq.h). Whenever mcp_session_fd() is readable, or mcp_session_timeout()
 * expires, the transport calls mcp_session_poll(), which turns queued output into
 * notifications/progress, finished operations into responses, and expired approvals into
 * denials. Any number of calls (up to max_inflight) can be in flight; notifications/cancelled
 * cancels one through the manager.
 *
 * Threads: every mcp_session_* function must be called from one thread at a time (the
 * transport's); only the manager's callbacks run elsewhere.
 *
 * Protocol revisions: 2025-11-25 (current) and 2025-06-18 (previous). A client asking for either
 * gets it; any other version gets 2025-11-25, and the client decides whether to disconnect.
 * The one behavioural difference: arguments that do not match a tool's schema are a JSON-RPC
 * error -32602 under 2025-06-18, and a tool result with isError under 2025-11-25 (SEP-1303:
 * "input validation errors" are tool execution errors, so the model can correct itself).
 */

#define MCP_PROTOCOL_LATEST   "2025-11-25"
#define MCP_PROTOCOL_PREVIOUS "2025-06-18"

/* RFC 5424 severities, in the order MCP's logging/setLevel uses. */
enum mcp_log_level {
	MCP_LOG_DEBUG,
	MCP_LOG_INFO,
	MCP_LOG_NOTICE,
	MCP_LOG_WARNING,
	MCP_LOG_ERROR,
	MCP_LOG_CRITICAL,
	MCP_LOG_ALERT,
	MCP_LOG_EMERGENCY,
};

/* Size-prefixed so it can grow. Zero means default. */
struct mcp_opts {
	size_t size;		       /* sizeof(struct mcp_opts) */
	const struct srv_mgr_api *mgr; /* required; borrowed: must outlive the session */
	const struct srv_gate *gate;   /* NULL: every valid call is allowed (no risk rules) */
	const char *server_version;    /* serverInfo.version (NULL: "0") */
	const char *instructions;      /* initialize's instructions (NULL: built-in text) */
	size_t max_message;	       /* bytes in one message (0: 4 MiB) */
	unsigned max_inflight;	       /* tool calls running or awaiting approval at once (0: 32) */
	size_t stream_budget;	       /* output bytes streamed as progress per call (0: 1 MiB) */
	uint32_t approval_timeout_ms;  /* when the gate names none (0: 60 s) */
	uint64_t (*now_ms)(void *ctx); /* monotonic clock in ms (NULL: CLOCK_MONOTONIC); tests inject one */
	void *now_ctx;
	/* The operator's log (the stdio transport writes it to stderr, never stdout). NULL: none. */
	void (*log)(void *ctx, enum mcp_log_level level, const char *msg);
	void *log_ctx;
	/* Asking a human (gate ASK). By default the client's user through elicitation when the
	 * client declared it, else the approver, else nobody (a denial). */
	const struct srv_approver *approver; /* NULL: none; borrowed: must outlive the session */
	bool approver_first;		     /* the approver even when the client could elicit */
	bool no_elicitation;		     /* never elicit (the operator chose other channels) */
	const char *transport;		     /* for the audit hook: "stdio", "http" (NULL: the gate's) */
	const struct svc_observer *observer; /* watches every call (the /metrics counters); NULL: none */
};

struct mcp_session;

int mcp_session_new(const struct mcp_opts *opts, struct mcp_session **out, struct al_error *err);
/* Cancels and releases every operation still running (the manager's late callbacks are safe). */
void mcp_session_free(struct mcp_session *s);

/*
 * One received message: buf[0..len) (one stdio line without its newline, one HTTP body).
 * Appends the messages to send to out (a JSON array): responses, notifications, and requests
 * (elicitation/create) in the order they must go out. Garbage is answered with a JSON-RPC error,
 * never a crash. Returns 0, or -ENOMEM (the session stays usable).
 */
int mcp_session_feed(struct mcp_session *s, const char *buf, size_t len, json_t *out);
/* The same for a message the transport parsed already (jr_parse: HTTP reads the envelope to route
 * it), so that no body is parsed twice. */
struct jr_message;
int mcp_session_feed_message(struct mcp_session *s, const struct jr_message *m, json_t *out);
/* Work that arrived from the manager, and approvals that timed out: appends to out. */
int mcp_session_poll(struct mcp_session *s, json_t *out);
/* Readable when mcp_session_poll has manager events to process. */
int mcp_session_fd(const struct mcp_session *s);
/* Milliseconds until mcp_session_poll must run for a deadline, or -1 (for poll(2)). */
int mcp_session_timeout(const struct mcp_session *s);
/* The transport is going away: approvals are abandoned, running operations cancelled. Their
 * on_done still has to arrive (poll until mcp_session_inflight() is 0) before the manager has
 * let go of them; nothing is sent for cancelled calls. */
void mcp_session_cancel_all(struct mcp_session *s);
/* The transport lost the client of request req_id before it could carry the answer (an HTTP
 * connection closed): a tools/call still in progress is cancelled as notifications/cancelled
 * would, and its audit record says the client left. 0 or -ENOMEM. */
int mcp_session_client_left(struct mcp_session *s, const json_t *req_id, json_t *out);
size_t mcp_session_inflight(const struct mcp_session *s);
/* Who sends the messages fed from now on (copied, truncated to 95 bytes; NULL: nobody known):
 * each tools/call keeps the peer it came from, for the audit hook (srv_call_end.peer). */
void mcp_session_set_peer(struct mcp_session *s, const char *peer);
/* The principal the transport authenticated for the messages fed from now on ("uid:1000",
 * "token:alice"; copied; NULL: nobody known). Its calls create sandboxes it owns, may use only
 * those, and can never be approved by the same principal. */
void mcp_session_set_principal(struct mcp_session *s, const char *principal);
/* The negotiated revision, or NULL before initialize. */
const char *mcp_session_protocol(const struct mcp_session *s);
/* Logs msg to the operator's log and, if the client's level admits it, as notifications/message. */
int mcp_session_log(struct mcp_session *s, enum mcp_log_level level, const char *msg, json_t *out);
const char *mcp_log_level_name(enum mcp_log_level level);

/*
 * The stdio transport: newline-delimited JSON-RPC, one message per line, on in_fd/out_fd
 * (normally 0 and 1). out_fd carries protocol messages only; opts->log should go to stderr.
 * Returns 0 after a clean shutdown: end of input, or stop_fd (e.g. a signalfd for SIGTERM;
 * -1: none) becoming readable. Shutdown cancels every call and waits (up to 10 s) for the
 * manager to finish them. Writing to a closed out_fd ends the session too (SIGPIPE is blocked
 * around writes, so it never kills the process). Returns -errno on setup failure or an I/O
 * error on in_fd.
 */
int mcp_serve_stdio(const struct mcp_opts *opts, int in_fd, int out_fd, int stop_fd, struct al_error *err);

#endif
