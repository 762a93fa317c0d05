/* e2b.h — the E2B-compatible front end's internals: Connect RPC framing, the control plane, envd's process and filesystem services (one file each; see docs/e2b.md). */
#ifndef AL_HTTP_E2B_H
#define AL_HTTP_E2B_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/hx.h"

/*
 * Theory of operation
 *
 * E2B's SDKs talk to two planes. The control plane (REST, "X-API-Key: e2b_..."), at E2B_API_URL,
 * creates, lists, describes, times and kills sandboxes. The sandbox plane ("envd"), at
 * E2B_SANDBOX_URL with "E2b-Sandbox-Id" and "E2b-Sandbox-Port" headers (or at a Host
 * "<port>-<id>.<domain>"), speaks Connect RPC with its JSON encoding for processes and the
 * filesystem, plus plain HTTP for /files and /health; each of its requests carries the sandbox's
 * access token ("X-Access-Token", handed out at create as envdAccessToken).
 *
 * Both planes are this one listener. hx_precheck asks e2b_precheck first: a request that is an
 * E2B one is authenticated here (the API key is a client token of the token file, looked up as a
 * bearer token is; the access token is an HMAC of the sandbox id under its owner's token, so it
 * names the owner without any state and survives restarts), and hx_handle passes it to
 * e2b_handle. Every operation is then a call of the same tools on the same call runner as the
 * JSON API's routes (hx_call_*): principal, validation, risk rules, approvals, audit, quotas; the
 * E2B code only translates shapes. Paths: E2B's /home/user is the sandbox's workspace.
 */

/* E2B's envd port, and the code interpreter's. */
#define E2B_ENVD_PORT	 49983
#define E2B_JUPYTER_PORT 49999
/* The envd version the sandboxes report: the SDK turns features on by it (close stdin 0.5.2,
 * octet-stream uploads 0.5.7, watch with entries 0.6.3). */
#define E2B_ENVD_VERSION "0.5.7"
#define E2B_HOME	 "/home/user"

/* ---- Connect RPC framing (connect.c) ------------------------------------------------------- */

#define CX_FLAG_COMPRESSED 0x01
#define CX_FLAG_END	   0x02
#define CX_MESSAGE_MAX	   ((size_t)4 << 20)

struct cx_buf {
	char *p;
	size_t len, cap;
};

/* Whether a Content-Type is Connect's streaming JSON (application/connect+json), else unary JSON. */
bool cx_streaming_type(const char *type);
/* The request message: the body itself (unary application/json) or its one envelope (streaming
 * application/connect+json: flags, a 32-bit big-endian length, the JSON). An empty unary body is
 * {}. 0 and *out (a JSON object), or -EINVAL with why (a message for the client). */
int cx_parse_request(bool streaming, const char *body, size_t len, json_t **out, char *why, size_t cap);
/* The next message of a client-streaming request (a sequence of envelopes), from body[*off] on:
 * 1 and *out (a JSON object), *off past it; 0 at the body's end; -EINVAL with why. */
int cx_next_message(const char *body, size_t len, size_t *off, json_t **out, char *why, size_t cap);
/* Appends bytes to b; 0 or -ENOMEM. */
int cx_append(struct cx_buf *b, const void *p, size_t n);
/* Appends one envelope of flags and msg (compact JSON); 0 or -ENOMEM. */
int cx_envelope(struct cx_buf *b, unsigned flags, const json_t *msg);
/* Appends the end-of-stream envelope: {} or {"error": {"code", "message"}} when code is not NULL. */
int cx_end_stream(struct cx_buf *b, const char *code, const char *message);
/* A unary answer: 200 with the message (stolen), or the error as Connect sends it (the code's
 * HTTP status, {"code", "message"}). */
void cx_unary_ok(struct hx_response *rs, json_t *steal);
__attribute__((format(printf, 3, 4))) void cx_unary_error(struct hx_response *rs, const char *code, const char *fmt,
							  ...);
/* Connect's code for an HTTP status the JSON API answered (its error body's message kept). */
const char *cx_code_of_status(int status);
int cx_status_of_code(const char *code);
/* A unary call's JSON API answer turned into Connect's: a 2xx body is replaced by msg (stolen;
 * NULL: {}), an error keeps its message under the status's code. */
void cx_from_api(struct hx_response *rs, json_t *steal_msg);

/* ---- routing, auth, the control plane (e2b.c) --------------------------------------------- */

/* What a request is to the E2B front end (e2b_precheck fills it). */
struct e2b_target {
	bool envd;	  /* the sandbox plane: sandbox and port below */
	char sandbox[64]; /* "sb-..." */
	unsigned port;	  /* E2B_ENVD_PORT, E2B_JUPYTER_PORT, or a port of the sandbox */
};

/* -1: not an E2B request (the JSON API's dispatch goes on); 0: an E2B request, authenticated
 * (rq->who filled); 1: rs holds the answer (refused). */
int e2b_precheck(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs);
/* Whether (rq) is an E2B request; its target. */
bool e2b_claims(const struct hx_server *s, const struct hx_request *rq, struct e2b_target *t);
/* Whether t is a sandbox's own port (neither envd's nor the code interpreter's): proxy.c carries the
 * request there, as the JSON API's /v1/sandboxes/{id}/ports/{port}/. */
bool e2b_port_proxied(const struct e2b_target *t);
/* The body limit of an E2B request. */
size_t e2b_body_limit(const struct hx_server *s, const struct hx_request *rq);
/* An E2B request that passed e2b_precheck. */
void e2b_handle(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs);
/* The access token of sandbox id for the principal whose token digest (hx_token.digest) is key:
 * 64 hex digits and a NUL. */
void e2b_access_token(const unsigned char key[32], const char *id, char out[65]);

/* ---- envd (e2bproc.c, e2bfs.c) ------------------------------------------------------------- */

/* envd's own path (/process.Process/Start, /files, /health, ...) on sandbox id. */
void e2b_envd(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs);
void e2b_process(struct hx_server *s, const struct hx_request *rq, const char *id, const char *method,
		 struct hx_response *rs);
void e2b_filesystem(struct hx_server *s, const struct hx_request *rq, const char *id, const char *method,
		    struct hx_response *rs);
void e2b_files(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs);
/* E2B's path (absolute under /home/user or /workspace, or relative to /home/user) as the manager
 * takes it ("" : the workspace); NULL with why when it is outside the workspace. malloc'd. */
char *e2b_path_in(const char *path, char *why, size_t cap);
/* The manager's workspace-relative path as E2B shows it ("/home/user/..."), malloc'd. */
char *e2b_path_out(const char *rel);

/* A code_watch event (an object of the JSON API's stream) as envd's FilesystemEvent, its name
 * relative to dir (the watched directory, workspace-relative): 0 and *out (NULL for an event envd
 * has no word for, an overflow), or -ENOMEM. */
int e2b_fs_event(const char *dir, const json_t *ev, json_t **out);

/* envd's polling watchers (e2bwatch.c): filesystem.Filesystem's CreateWatcher, GetWatcherEvents
 * and RemoveWatcher, on a code_watch call the server holds between polls. */
void e2b_watcher_create(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs);
void e2b_watcher_events(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs);
void e2b_watcher_remove(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs);
/* Ends every watcher of s (its watch cancelled); at the server's end, before the manager's. */
void e2b_watchers_free(struct hx_server *s);

/* The code interpreter's port (e2bcode.c): /execute, /contexts. */
void e2b_interpreter(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs);
/* The traffic token of sandbox id (its ports other than envd's, the code interpreter's included):
 * as e2b_access_token, another value. */
void e2b_traffic_token(const unsigned char key[32], const char *id, char out[65]);

/* ---- multipart/form-data (e2bform.c) ------------------------------------------------------- */

struct e2b_part {
	const char *name; /* the form field's name (NUL-terminated copy in the parser's storage) */
	const char *filename;
	const char *data; /* into the body */
	size_t len;
};

/* Splits body by the boundary of content_type into at most max parts (each part's name and
 * filename are copied into names[0..names_cap)). The count, or -EINVAL with why. */
int e2b_form_parse(const char *content_type, const char *body, size_t len, struct e2b_part *parts, size_t max,
		   char *names, size_t names_cap, char *why, size_t cap);

#endif
