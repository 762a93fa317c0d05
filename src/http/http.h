/* http.h — `airlock serve` over HTTP: the MCP streamable HTTP transport, a JSON API, approvals and metrics. */
#ifndef AL_HTTP_HTTP_H
#define AL_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"
#include "mcp/mcp.h"
#include "manager/api.h"
#include "service/gate.h"

/*
 * Theory of operation
 *
 * Threads. libmicrohttpd runs one listening thread and one thread per connection
 * (MHD_USE_THREAD_PER_CONNECTION); every request is handled, start to end, on its connection's
 * thread, which may block: waiting for a human's approval, for the manager's on_done, or for the
 * next chunk of a streamed response. The thread that called http_serve is the "pump": it
 * poll(2)s stop_fd and the wake-up descriptor of every MCP session, and whenever one is readable
 * (the manager reported through evq.h) or an approval deadline of the session passed, it runs
 * mcp_session_poll under that session's mutex and routes what comes out to the waiting requests.
 *
 * Requests. Every request goes through one pure dispatcher (route.c: method, path, headers,
 * body -> status, headers, body or stream) that the fuzzer calls without sockets. In order: Host
 * and Origin (DNS rebinding), the bearer token, the route (404) and method (405), the body limit
 * (413), then the handler. The first checks run before the body is read, so a client without
 * the token cannot make the server buffer anything.
 *
 * JSON API. Each route maps to one MCP tool (POST /v1/sandboxes -> code_create_sandbox, ...)
 * with the arguments the tool would get, and runs on the same call runner as a tools/call
 * (service/runner.h: schema, risk rules, approval, the manager table, the audit record).
 * The manager's callbacks queue into a per-request object (op.c) under its mutex and signal a
 * condition variable the request's thread waits on. exec streams NDJSON lines (or SSE events)
 * from that queue, then a final result line. ASK from the gate: with an approval queue the
 * request registers there and waits (up to the decision's timeout) for POST /v1/approvals/{id};
 * without one, ASK is a denial. A denied request never reaches the manager.
 *
 * MCP. POST /mcp carries one JSON-RPC message. initialize creates an mcp_session (same manager
 * table, same gate, same metrics observer) and returns its Mcp-Session-Id; later requests must
 * carry it (400 without, 404 when unknown or ended). Notifications and responses get 202. A
 * request gets one application/json response when its answer is ready at once (or the client
 * accepts only JSON), else a text/event-stream carrying progress notifications, log messages and
 * elicitation requests, then the response. An ASK for a session whose client cannot elicit
 * waits in the approvals queue, like a JSON API call. GET /mcp is 405: the server offers no
 * standalone stream (the 2025-11-25 and 2025-06-18 transports allow exactly that answer; every
 * server message belongs to a POST's stream). DELETE /mcp ends the session (its running calls
 * are cancelled).
 *
 * Security. Listening on a non-loopback address requires a token; with a token every request
 * needs "Authorization: Bearer <token>" (compared by SHA-256 digest with CRYPTO_memcmp: neither
 * content nor length leaks through timing). On loopback the Host header must name a loopback
 * host and an Origin, if sent, must be a loopback origin: a web page the user visits cannot
 * reach the server by DNS rebinding or by a cross-site form post. Paths go to the manager as
 * given; it resolves them beneath the workspace.
 */

/* Gauges only the manager knows, read at each /metrics scrape. */
struct http_stats {
	uint64_t sandboxes_live;
	uint64_t sandboxes_pooled;
	uint64_t sandboxes_paused;
	uint64_t execs_running;
};

/* One bearer token and the principal it names. */
struct http_token {
	char *name;    /* the principal: "token:NAME" in the audit log and the approval queue */
	char *token;   /* the secret */
	bool approver; /* an approver's token (--approver-token-file): decides approvals, runs nothing */
};

/* Size-prefixed so it can grow. Zero means default. Everything is borrowed: it must outlive
 * http_serve. */
struct http_opts {
	size_t size;	       /* sizeof(struct http_opts) */
	const char *listen;    /* TCP: "127.0.0.1:8080", "[::1]:8080", "0.0.0.0:8080"; port 0: any; NULL: none */
	const char *unix_path; /* the Unix socket (mode 0600; its peers are uids); NULL: none (see unix_fd) */
	const struct http_token *tokens; /* required on TCP: every TCP request needs one of these */
	size_t ntokens;
	const uid_t *approver_uids; /* Unix socket peers that may decide approvals (NULL: root only) */
	size_t n_approver_uids;
	const struct srv_mgr_api *mgr;		/* required */
	const struct srv_gate *gate;		/* NULL: every valid call is allowed */
	struct apq *approvals;			/* NULL: an ASK is a denial on the JSON API */
	size_t max_body;			/* JSON request bodies (0: 1 MiB) */
	size_t max_file;			/* PUT file bodies (0: 16 MiB) */
	size_t max_message;			/* one MCP message (0: 4 MiB) */
	unsigned max_sessions;			/* MCP sessions at once (0: 64) */
	unsigned max_sessions_per_principal;	/* of one principal (0: no limit but max_sessions) */
	unsigned max_connections_per_principal; /* open connections one principal has used (0: no limit) */
	unsigned max_connections;		/* concurrent connections (0: 256) */
	uint32_t approval_timeout_ms;		/* ASK whose decision names no timeout (0: 60 s) */
	uint32_t session_idle_ms;		/* an MCP session unused this long is ended (0: 1 hour) */
	const char *server_version;		/* MCP serverInfo.version (NULL: "0") */
	/* /metrics gauges (NULL: reported as 0). Called on a connection thread; must not block long. */
	void (*stats)(void *ctx, struct http_stats *out);
	void *stats_ctx;
	/* Called once, from http_serve's thread, when listening; port is the bound one (tests ask for 0). */
	void (*ready)(void *ctx, uint16_t port);
	void *ready_ctx;
	/* The operator's log (NULL: none). Called from any thread. */
	void (*log)(void *ctx, enum mcp_log_level level, const char *msg);
	void *log_ctx;
	/* MCP sessions: an ASK goes to the client's user through elicitation when the client
	 * declared it, else to the approvals queue (listed by GET /v1/approvals), else is denied.
	 * These turn a channel off or put the queue first (the configuration's approval.channels). */
	bool mcp_no_elicitation;
	bool mcp_no_queue;
	bool mcp_queue_first;
	/* The approver's console (GET /v1/audit, /v1/console/rules; NULL: those answer 404 and []). */
	const char *audit_path; /* the audit log the service writes */
	const struct cfg *cfg;	/* its risk rules */
	/* GET /v1/admin/sandboxes: every principal's sandboxes as a JSON array (NULL: none listed). */
	json_t *(*sandboxes)(void *ctx);
	void *sandboxes_ctx;
	/* The owner of sandbox id (malloc'd; NULL: unknown), for checks on every request that must not
	 * cost a listing (NULL: found in sandboxes' list). sandboxes_ctx is its ctx. */
	char *(*sandbox_owner)(void *ctx, const char *id);
	/* GET /v1/admin/snapshots: every principal's snapshots as a JSON array, each with its owner
	 * (NULL: none listed). sandboxes_ctx is its ctx. */
	json_t *(*snapshots)(void *ctx);
	/* A request's headers and body must arrive within this, counted from the connection's start
	 * or its previous answer (0: 60 s); then its connection is closed. */
	uint32_t request_timeout_ms;
	/* The E2B front end's sandbox domain: a request whose Host is "<port>-<sandbox id>.<domain>"
	 * goes to that sandbox, as E2B's SDKs address one with E2B_DOMAIN (NULL: only the
	 * E2b-Sandbox-Id header mode of E2B_SANDBOX_URL). */
	const char *e2b_domain;
	/* A listening Unix stream socket made by someone else (systemd's socket activation), served
	 * instead of creating unix_path, which then only names it in the log; 0: none. Never removed
	 * when serving ends: its maker owns the path and keeps listening. */
	int unix_fd;
};

/*
 * Token files. One credential per line: "TOKEN" (its principal is named after the file's
 * basename and line: "clients.token#1") or "NAME TOKEN"; blank lines and lines starting with '#'
 * are skipped. Tokens are at least 16 characters of printable ASCII without spaces. The file
 * must be a regular file (no link followed) that neither its group nor others may read or write,
 * as config files already are: a token others can read is no credential.
 * http_tokens_load appends the file's tokens to *tokens and *n (free with http_tokens_free, which
 * wipes the secrets); http_token_generate creates path (mode 0600, never over an existing file,
 * its directory made 0700 if missing) holding one random 256-bit token.
 */
int http_tokens_load(const char *path, bool approver, struct http_token **tokens, size_t *n, struct al_error *err);
void http_tokens_free(struct http_token *tokens, size_t n);
int http_token_generate(const char *path, struct al_error *err);

/*
 * Serves until stop_fd (e.g. a signalfd; required) becomes readable, then stops accepting,
 * ends every stream, cancels running calls and returns 0. -errno with err set when it cannot
 * start: a bad listen address, a non-loopback address without a token (-EPERM), a busy port.
 */
int http_serve(const struct http_opts *o, int stop_fd, struct al_error *err);

#endif
