/* hx.h — the HTTP front end's internals: server state, the pure request dispatcher, streamed bodies,
 * manager calls, MCP sessions and metrics (one file each; see http.h for the theory of operation). */
#ifndef AL_HTTP_HX_H
#define AL_HTTP_HX_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "http/http.h"
#include "manager/quota.h"
#include "service/runner.h"
#include "service/tools.h"

#define HX_DEFAULT_MAX_BODY    ((size_t)1 << 20)
#define HX_DEFAULT_MAX_FILE    ((size_t)16 << 20)
#define HX_DEFAULT_MAX_MESSAGE ((size_t)4 << 20)
#define HX_DEFAULT_SESSIONS    64
#define HX_DEFAULT_CONNECTIONS 256
#define HX_DEFAULT_APPROVAL_MS 60000
#define HX_DEFAULT_IDLE_MS     3600000
#define HX_SESSION_ID_LEN      32		 /* hex characters of 128 random bits */
#define HX_WAIT_SLICE_MS       250		 /* blocked request threads look at the stop flag this often */
#define HX_KEEPALIVE_MS	       15000		 /* an idle SSE stream gets a comment this often */
#define HX_STREAM_BUDGET       ((size_t)1 << 20) /* exec output queued for one slow client at most */

/* ---- requests and responses (route.c) ------------------------------------------------------ */

enum hx_kind {
	HX_HEADER,
	HX_QUERY,
	HX_COOKIE, /* a cookie of the Cookie header, by name */
};

/* Who sent a request: the peer's uid on the Unix socket (SO_PEERCRED), a named bearer token on
 * TCP. Filled by hx_precheck; a handler never sees a request without one. */
#define HX_PRINCIPAL_MAX 80
struct hx_principal {
	char name[HX_PRINCIPAL_MAX]; /* "uid:1000", "token:alice"; "" only on a server with no credential at all */
	bool client;		     /* may create sandboxes and MCP sessions, and use its own */
	bool approver;		     /* may list every pending approval and decide those of others */
};

/* One request as the dispatcher sees it; every pointer is borrowed for the call. */
struct hx_request {
	const char *method;
	const char *path; /* percent-decoded, without the query string */
	/* A header (case-insensitive name) or query argument, or NULL. */
	const char *(*lookup)(void *ctx, enum hx_kind kind, const char *name);
	void *lookup_ctx;
	const char *body;
	size_t len;
	bool too_large;	  /* the body went past the route's limit and was discarded */
	const char *peer; /* "127.0.0.1:41234", "uid 1000" (Unix socket), or NULL */
	bool local;	  /* came through the Unix socket: uid is the peer's (SO_PEERCRED) */
	uid_t uid;
	struct hx_principal *who; /* filled by hx_precheck (required: the caller's storage) */
	/* Whether the client has gone (its connection closed or half-closed), asked with lookup_ctx
	 * while a handler waits (for a reviewer, for the manager); NULL: it never goes (the fuzzer). */
	bool (*gone)(void *ctx);
	/* A streamed upload (files.c): the body went to spool_fd, a file beneath the sandbox's
	 * workspace (hx_upload_begin), instead of body; spool_error: -errno when writing it failed. */
	bool spooled;
	int spool_fd;
	int spool_error;
	uint64_t spool_bytes;
	char spool_sha256[65]; /* hex */
	/* Every query argument in turn, until fn returns non-zero (then that value), with lookup_ctx;
	 * NULL: the transport cannot enumerate them (a handler then sees only those it names). */
	int (*each_query)(void *ctx, int (*fn)(void *arg, const char *key, const char *value), void *arg);
};

#define HX_STREAM_END	((ssize_t)-1)
#define HX_STREAM_ERROR ((ssize_t)-2)

/* A body produced while the request runs. read copies up to max bytes into buf and returns how
 * many; with block false it returns 0 instead of waiting; with block true it waits at most about
 * HX_WAIT_SLICE_MS and returns 0 when nothing came meanwhile (the server then looks whether the
 * client is still there, and reads again); HX_STREAM_END at the regular end, HX_STREAM_ERROR to
 * cut the connection. free is called exactly once, whatever happened: before the regular end, it
 * means the client went away (or stopped reading). */
struct hx_stream_ops {
	ssize_t (*read)(void *ctx, char *buf, size_t max, bool block);
	void (*free)(void *ctx);
};

struct hx_response {
	int status;
	const char *type; /* Content-Type (static string), or NULL without a body */
	char *body;	  /* malloc'd, len bytes; or NULL */
	size_t len;
	const struct hx_stream_ops *ops; /* instead of body: a stream */
	bool has_fd;			 /* instead of body: len bytes of the regular file fd (owned) */
	int fd;
	void *stream;
	char session[HX_SESSION_ID_LEN + 1]; /* Mcp-Session-Id to send, or "" */
	char allow[64];			     /* 405: the Allow header, or "" */
	bool challenge;			     /* 401: WWW-Authenticate: Bearer */
	bool close;			     /* Connection: close (a connection over its principal's quota) */
	const char *csp;		     /* a page's Content-Security-Policy (static string), or NULL */
	char *location;			     /* a redirect's Location (malloc'd), or NULL */
	char *headers;			     /* more headers, "Name: value\n" each (malloc'd), or NULL */
	bool resumed;			     /* X-Airlock-Resumed: true (a raw file read resumed its sandbox) */
};

struct hx_server;

/* The token whose secret is given (compared by digest in constant time), or NULL (auth.c). */
const struct hx_token *hx_token_of_secret(const struct hx_server *s, const char *given);
/* The client token named name ("alice", not "token:alice"), or NULL. */
const struct hx_token *hx_token_named(const struct hx_server *s, const char *name);

/* Checks that need no body: Host/Origin, token, route, method, Content-Length. 1 when resp was
 * filled (answer now, read nothing), 0 to go on. */
int hx_precheck(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs);
/* The body limit of the route (the file limit for PUT of a file, the message limit for /mcp). */
size_t hx_body_limit(const struct hx_server *s, const char *method, const char *path);
/* The body limit of the request (an E2B one's, or its route's), and whether it is proxied. */
size_t hx_request_limit(struct hx_server *s, const struct hx_request *rq);
bool hx_request_proxied(struct hx_server *s, const struct hx_request *rq);
/* Whether (method, path) is a port of a sandbox, proxied (proxy.c) rather than handled here. */
bool hx_route_proxied(const char *method, const char *path);
/* The whole request: prechecks, then the route's handler. Always fills rs. */
void hx_handle(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs);
void hx_response_clear(struct hx_response *rs);
/* Percent-decodes s in place (libmicrohttpd's unescaper for paths and query arguments) and returns
 * the new length. %00 becomes the overlong pair C0 80, which is not UTF-8: hx_handle then refuses
 * the request (400) instead of a C string ending there ("config.py%00.txt" is not "config.py"). */
size_t hx_unescape(char *s);

/* Response builders (on ENOMEM they fall back to a static 500 without body). */
__attribute__((format(printf, 3, 4))) void hx_error(struct hx_response *rs, int status, const char *fmt, ...);
void hx_json(struct hx_response *rs, int status, json_t *steal);
/* The HTTP status for a manager errno (a request's fault is 4xx, the server's 5xx). */
int hx_status_of_errno(int neg_errno);

/* ---- access (auth.c) ------------------------------------------------------------------------ */

struct hx_listen {
	struct sockaddr_storage addr;
	socklen_t len;
	bool v6;
	bool loopback;
};

/* "127.0.0.1:8080", "[::1]:0", "localhost:8080" (127.0.0.1); numeric only, no DNS. */
int hx_parse_listen(const char *spec, struct hx_listen *out, struct al_error *err);
/* 0 when Host, Origin and the credentials let the request in, with *rq->who filled; else fills rs
 * (403 or 401) and returns 1. */
int hx_check_access(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs);
/* Only the Host and Origin part of hx_check_access (the public routes' check). */
int hx_check_origin(const struct hx_server *s, const struct hx_request *rq, struct hx_response *rs);
/* Whether host (a Host header's value, or an Origin's authority) names this machine's loopback. */
bool hx_loopback_host(const char *host, size_t len);

/* ---- metrics (metrics.c) -------------------------------------------------------------------- */

enum hx_exec_kind {
	HX_EXEC_EXITED,
	HX_EXEC_SIGNALED,
	HX_EXEC_TIMEOUT,
	HX_EXEC_OUTPUT_LIMIT,
	HX_EXEC_SETUP_ERROR,
	HX_EXEC_OOM,
	HX_EXEC_DENIED,
	HX_EXEC_FAILED, /* the request failed: unknown sandbox, manager error */
	HX_EXEC_CANCELLED,
	HX_EXEC_INVALID,
	HX_EXEC__COUNT,
};

#define HX_LATENCY_BUCKETS 12
#define HX_CREATE_BUCKETS  11
#define HX_STATUS_CLASSES  6 /* 1xx..5xx, other */

struct hx_metrics {
	uint64_t requests[HX_STATUS_CLASSES];
	uint64_t execs[HX_EXEC__COUNT];
	uint64_t latency[HX_LATENCY_BUCKETS + 1]; /* per bucket (not cumulative); the last is +Inf */
	uint64_t latency_count, latency_sum_us;
	uint64_t create[HX_CREATE_BUCKETS + 1]; /* sandboxes created, by the request's duration */
	uint64_t create_count, create_sum_us;
	uint64_t proxy_allowed, proxy_denied;
	uint64_t approvals[SRV_GATE_ABANDONED + 1];
	uint64_t calls[TL__COUNT];
	uint64_t sessions_opened;
};

void hx_metrics_request(struct hx_metrics *m, int status);
void hx_metrics_end(struct hx_metrics *m, const struct srv_call_end *end);
void hx_metrics_approval(struct hx_metrics *m, enum srv_gate_outcome o);
/* The Prometheus text exposition (version 0.0.4); malloc'd, NULL on ENOMEM. */
char *hx_metrics_render(struct hx_server *s, size_t *len);

/* ---- the server's state (server.c) --------------------------------------------------------- */

struct hx_sessions;
struct e2b_watcher;

/* A bearer token as the server keeps it: only its digest. */
struct hx_token {
	unsigned char digest[32]; /* SHA-256 */
	char name[HX_PRINCIPAL_MAX];
	bool approver;
};

struct conn_owner; /* server.c: one open connection */

struct hx_server {
	struct http_opts o;	 /* defaults filled in */
	bool loopback;		 /* the TCP listener is on a loopback address only */
	struct hx_token *tokens; /* o.tokens, digested */
	size_t ntokens;
	struct svc_observer observer; /* counts approvals and ended calls for /metrics */
	pthread_mutex_t conns_mu;
	struct mq_table conns;	      /* open connections per principal (max_connections_per_principal) */
	struct conn_owner *conn_list; /* every open connection, for the request deadline (under conns_mu) */
	unsigned unauth_evicted;      /* unauthenticated connections ended for a newer one, not logged yet */
	struct svc_runner rn;	      /* the JSON API's calls (the MCP sessions have their own) */
	struct tl_catalog cat;
	struct hx_metrics metrics;
	struct hx_sessions *sessions;
	pthread_mutex_t watchers_mu; /* e2bwatch.c: envd's polling watchers, under it */
	struct e2b_watcher *watchers;
	size_t nwatchers;
	int stopping; /* atomic: http_serve is ending; blocked requests give up */
};

/* The state without any socket (the fuzzer and http_serve share it). loopback: see above. */
int hx_server_new(const struct http_opts *o, bool loopback, struct hx_server **out, struct al_error *err);
/* Ends every MCP session and wakes every blocked request; the server is still valid. */
void hx_server_stop(struct hx_server *s);
void hx_server_free(struct hx_server *s);
bool hx_stopping(const struct hx_server *s);
uint64_t hx_now_ms(void);
uint64_t hx_now_us(void);
__attribute__((format(printf, 3, 4))) void hx_log(const struct hx_server *s, enum mcp_log_level level, const char *fmt,
						  ...);
/* Waits on cv for at most ms (with mu held). */
void hx_cond_wait_ms(void *cv, void *mu, int ms);

/* ---- JSON API handlers (api.c, files.c) ------------------------------------------------------ */

/* caps: the route's captured segments ({id}, {path}), percent-decoded, NUL-terminated. */
typedef void (*hx_handler)(struct hx_server *s, const struct hx_request *rq, char *const caps[2],
			   struct hx_response *rs);

void api_health(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_metrics(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_create(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* GET /v1/sandboxes: the caller's own live sandboxes, filtered by metadata (life.c). */
void api_sandboxes(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_exec(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_install(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_destroy(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_write(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_read(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_list(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* The files API beyond read, write and list (files.c). */
void api_stat(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_mkdir(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_move(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_remove(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_archive(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* api_write for a spooled body (rq->spooled). */
void api_write_spooled(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* At a request's headers: for a route whose body is a file (PUT files/..., archive), asks the manager
 * for the upload's spool (open_upload). 0: not such a route, or a manager without uploads (the
 * body is read into memory, up to its limit); 1: *fd is the spool, the body goes there; -1: refused,
 * rs holds the answer (send it now, read nothing). */
int hx_upload_begin(struct hx_server *s, const struct hx_request *rq, int *fd, struct hx_response *rs);
/* The route's captures ({id}, {path}: malloc'd, NULL when absent) when method and path name an
 * upload route (a file body): 1; 0 when not; -1 with rs filled for a URL no handler takes. */
int hx_upload_route(const char *method, const char *path, char *caps[2], bool *archive, struct hx_response *rs);
/* The body limit of a file route that streams to the workspace. */
size_t hx_upload_limit(const struct hx_server *s);

void api_approvals(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_decide(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* The approver's console (console.c). */
void api_console(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_audit(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_rules(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_admin_sandboxes(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_approval_events(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_admin_destroy(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void hx_mcp(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* Ports of a sandbox (portapi.c): the listing, tokens; api_port_proxy only answers when the
 * connection glue did not take the request (the fuzzer): server.c streams it through proxy.c. */
void api_ports(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_port_token(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_port_proxy(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* The port token a request presents (X-Airlock-Port-Token, else the airlock_token query argument,
 * else the airlock_port_token cookie), or NULL; *from_query (may be NULL) says whether it came in the URL. */
const char *hx_port_token(const struct hx_request *rq, bool *from_query);
/* The port of a path segment: 1-65535 in decimal digits only, else 0. */
unsigned hx_port_number(const char *text);
#define HX_PORT_COOKIE "airlock_port_token"
/* Interpreter contexts (ctxapi.c). */
void api_ctx_list(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_ctx_create(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_ctx_restart(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_ctx_delete(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* Background processes (procapi.c). */
void api_proc_list(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_proc_get(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_proc_kill(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_proc_stdin(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_proc_close_stdin(struct hx_server *s, const struct hx_request *rq, char *const caps[2],
			  struct hx_response *rs);
void api_proc_signal(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_proc_output(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_proc_resize(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* The approver's read-only view of a sandbox's processes (procapi.c): list, and output. */
void api_admin_procs(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_admin_proc_output(struct hx_server *s, const struct hx_request *rq, char *const caps[2],
			   struct hx_response *rs);
/* The owner of live sandbox id as the approver's listing names it (console.c), malloc'd; NULL: none. */
char *hx_sandbox_owner(struct hx_server *s, const char *id);
/* Whether rq asks for server-sent events rather than NDJSON (api.c). */
bool hx_wants_sse(const struct hx_request *rq);
/* Runs tool with args (stolen) as a stream of NDJSON lines, or SSE events when rq accepts them. */
void hx_stream_tool(struct hx_server *s, const struct hx_request *rq, enum tl_id tool, json_t *args,
		    struct hx_response *rs);
/* The caller's sandboxes whose labels match the request's metadata filter (?metadata=k%3Dv, as
 * E2B encodes it, or ?metadata.k=v): *v and *n (free with srv_sandbox_infos_free, then free). 0,
 * or 1 with rs filled (life.c). */
int hx_sandboxes_filtered(struct hx_server *s, const struct hx_request *rq, struct srv_sandbox_info **v, size_t *n,
			  struct hx_response *rs);
/* A sandbox's info and lifetime (life.c). */
void api_sandbox_info(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_timeout(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_fork(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* snapapi.c: snapshots */
void api_snapshot(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_snapshots(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_snapshot_info(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_snapshot_delete(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* Pause and resume in place, the owner's and an approver's (pauseapi.c). */
void api_pause(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_resume(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_admin_snapshots(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_admin_snapshot_delete(struct hx_server *s, const struct hx_request *rq, char *const caps[2],
			       struct hx_response *rs);
void api_admin_pause(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
void api_admin_resume(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);
/* A directory watch, streamed (watchapi.c). */
void api_watch(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs);

/* ---- one tool call on the manager (op.c) ---------------------------------------------------- */

struct hx_call;

/* A call of tool with args (consumed even on failure) for the request rq (its peer; its principal,
 * owner of what it creates; its connection, watched while the call waits: a client that goes away
 * cancels it). rq must outlive the handler's call of hx_call_run / hx_call_stream. NULL on ENOMEM. */
struct hx_call *hx_call_new(struct hx_server *s, enum tl_id tool, json_t *steal_args, const struct hx_request *rq);
/* Runs the whole request with a non-streamed answer: validation, gate, manager, wait, the response
 * (built by ok() from the result), the audit hook. raw: write_file's bytes (else from args). */
typedef void (*hx_ok_fn)(struct hx_call *c, const struct srv_result *r, struct hx_response *rs);
void hx_call_run(struct hx_call *c, const void *raw, size_t raw_len, hx_ok_fn ok, struct hx_response *rs);
/* The same for exec and install_package: after the gate and a successful start, rs gets a stream
 * of NDJSON lines (or SSE events with sse) ending in the result. The call is consumed. */
void hx_call_stream(struct hx_call *c, bool sse, struct hx_response *rs);
const json_t *hx_call_args(const struct hx_call *c);
/* An approver's call on owner's sandbox (svc_call_act_for): before running it; 0 or -EINVAL. */
int hx_call_act_for(struct hx_call *c, const char *owner);
/* A call that will not run after all: freed, leaving no audit record. */
void hx_call_drop(struct hx_call *c);
/* An hx_ok_fn answering 200 with the tool's structuredContent (api.c). */
void hx_ok_structured(struct hx_call *c, const struct srv_result *r, struct hx_response *rs);
/* o with "resumed": true when r says its call resumed a paused sandbox (o taken; NULL stays NULL). */
json_t *hx_resumed(json_t *o, const struct srv_result *r);
enum tl_id hx_call_tool(const struct hx_call *c);
/* A stream's output events carry their bytes as base64 ("encoding": "base64"): a terminal's output
 * is not always UTF-8. Before hx_call_stream. */
void hx_call_output_base64(struct hx_call *c);
/* A stream framed by another front end (the E2B one's Connect envelopes) instead of NDJSON or SSE.
 * Each callback appends to *out (malloc'd, *n bytes; leave it NULL for nothing) and returns 0 or
 * -ENOMEM. event gets every event the JSON API would send ("output", "result", "error",
 * "approval", "event") with its object; begin runs once, when the stream starts; keepalive when it
 * was quiet keepalive_ms. free (may be NULL) frees ctx with the call. */
struct hx_framing {
	const char *type; /* the stream's Content-Type */
	int (*begin)(void *ctx, char **out, size_t *n);
	int (*event)(void *ctx, const char *name, const json_t *ev, char **out, size_t *n);
	int (*keepalive)(void *ctx, char **out, size_t *n);
	uint32_t keepalive_ms;
	void (*free)(void *ctx);
};
/* Before hx_call_stream; ctx is the call's from here on (freed by f->free, whatever happens). */
void hx_call_framing(struct hx_call *c, const struct hx_framing *f, void *ctx);
/* The call's bytes are in the upload's spool fd (borrowed: it outlives the call). Before running it. */
void hx_call_spool(struct hx_call *c, int fd);

/* ---- MCP sessions (mcp_http.c) -------------------------------------------------------------- */

int hx_sessions_new(struct hx_server *s);
void hx_sessions_free(struct hx_server *s);
/* Ends every session (stop) and wakes their waiters. */
void hx_sessions_close_all(struct hx_server *s);
size_t hx_sessions_count(struct hx_server *s);
/* One turn of the pump: waits up to max_ms for stop_fd (-1: none) or any session's events, then
 * polls the sessions that have work and ends idle ones. 1 when stop_fd became readable. */
int hx_pump(struct hx_server *s, int stop_fd, int max_ms);

#endif
