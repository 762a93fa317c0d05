/* route.c — the pure request dispatcher: access checks, the route table, body limits, error responses. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/e2b.h"
#include "http/hx.h"
#include "util/text.h"
#include "util/cleanup.h"

/* A pattern is matched segment by segment: "{}" takes one non-empty segment, "{*}" (last) takes
 * the rest of the path, at least one segment. */
struct route {
	const char *method;
	const char *pattern;
	hx_handler fn;
	enum {
		BODY_NONE,
		BODY_JSON,
		BODY_FILE,
		BODY_MESSAGE,
		BODY_PROXY /* streamed to a port of the sandbox (proxy.c), never held here */
	} body;
	/* Who may: any principal (what it sees is its own), clients (sandboxes, MCP sessions: their
	 * own), approvers (decisions on others' calls); public: nobody's credential (the console's
	 * files, which hold no data). */
	enum {
		ROLE_ANY,
		ROLE_CLIENT,
		ROLE_APPROVER,
		ROLE_PUBLIC,
		ROLE_PORT /* a client, its own sandbox's port; or anyone with a port token for it (portapi.c) */
	} role;
};

static const struct route routes[] = {
	{"GET", "/v1/health", api_health, BODY_NONE, ROLE_ANY},
	{"GET", "/metrics", api_metrics, BODY_NONE, ROLE_ANY},
	{"GET", "/v1/sandboxes", api_sandboxes, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes", api_create, BODY_JSON, ROLE_CLIENT},
	{"DELETE", "/v1/sandboxes/{}", api_destroy, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}", api_sandbox_info, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/timeout", api_timeout, BODY_JSON, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/fork", api_fork, BODY_JSON, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/snapshots", api_snapshot, BODY_JSON, ROLE_CLIENT},
	{"GET", "/v1/snapshots", api_snapshots, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/snapshots/{}", api_snapshot_info, BODY_NONE, ROLE_CLIENT},
	{"DELETE", "/v1/snapshots/{}", api_snapshot_delete, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/pause", api_pause, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/resume", api_resume, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/exec", api_exec, BODY_JSON, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/packages", api_install, BODY_JSON, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/files", api_list, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/files/{*}", api_read, BODY_NONE, ROLE_CLIENT},
	{"PUT", "/v1/sandboxes/{}/files/{*}", api_write, BODY_FILE, ROLE_CLIENT},
	{"DELETE", "/v1/sandboxes/{}/files/{*}", api_remove, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/stat", api_stat, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/stat/{*}", api_stat, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/dirs/{*}", api_mkdir, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/move", api_move, BODY_JSON, ROLE_CLIENT},
	{"PUT", "/v1/sandboxes/{}/archive", api_archive, BODY_FILE, ROLE_CLIENT},
	{"PUT", "/v1/sandboxes/{}/archive/{*}", api_archive, BODY_FILE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/archive", api_archive, BODY_FILE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/archive/{*}", api_archive, BODY_FILE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/contexts", api_ctx_list, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/contexts", api_ctx_create, BODY_JSON, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/contexts/{}/restart", api_ctx_restart, BODY_NONE, ROLE_CLIENT},
	{"DELETE", "/v1/sandboxes/{}/contexts/{}", api_ctx_delete, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/processes", api_proc_list, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/processes/{}", api_proc_get, BODY_NONE, ROLE_CLIENT},
	{"DELETE", "/v1/sandboxes/{}/processes/{}", api_proc_kill, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/processes/{}/output", api_proc_output, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/processes/{}/stdin", api_proc_stdin, BODY_JSON,
	 ROLE_CLIENT}, /* raw text: the API's body limit */
	{"DELETE", "/v1/sandboxes/{}/processes/{}/stdin", api_proc_close_stdin, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/processes/{}/signal", api_proc_signal, BODY_JSON, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/processes/{}/resize", api_proc_resize, BODY_JSON, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/watch", api_watch, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/sandboxes/{}/watch/{*}", api_watch, BODY_NONE, ROLE_CLIENT},
	{"GET", "/v1/approvals", api_approvals, BODY_NONE, ROLE_ANY},
	{"POST", "/v1/approvals/{}", api_decide, BODY_JSON, ROLE_APPROVER},
	{"GET", "/v1/approvals/events", api_approval_events, BODY_NONE, ROLE_ANY},
	{"GET", "/v1/audit", api_audit, BODY_NONE, ROLE_APPROVER},
	{"GET", "/v1/console/rules", api_rules, BODY_NONE, ROLE_APPROVER},
	{"GET", "/v1/admin/sandboxes", api_admin_sandboxes, BODY_NONE, ROLE_APPROVER},
	{"DELETE", "/v1/admin/sandboxes/{}", api_admin_destroy, BODY_NONE, ROLE_APPROVER},
	{"POST", "/v1/admin/sandboxes/{}/pause", api_admin_pause, BODY_NONE, ROLE_APPROVER},
	{"POST", "/v1/admin/sandboxes/{}/resume", api_admin_resume, BODY_NONE, ROLE_APPROVER},
	{"GET", "/v1/admin/snapshots", api_admin_snapshots, BODY_NONE, ROLE_APPROVER},
	{"DELETE", "/v1/admin/snapshots/{}", api_admin_snapshot_delete, BODY_NONE, ROLE_APPROVER},
	/* Read-only: an approver watches a sandbox's processes (its terminals); no stdin, resize or kill. */
	{"GET", "/v1/admin/sandboxes/{}/processes", api_admin_procs, BODY_NONE, ROLE_APPROVER},
	{"GET", "/v1/admin/sandboxes/{}/processes/{}/output", api_admin_proc_output, BODY_NONE, ROLE_APPROVER},
	{"GET", "/v1/sandboxes/{}/ports", api_ports, BODY_NONE, ROLE_CLIENT},
	{"POST", "/v1/sandboxes/{}/ports/{}/token", api_port_token, BODY_JSON, ROLE_CLIENT},
	/* Any proxied method (PROXY_METHODS); the rest of the path is the sandbox server's. */
	{"*", "/v1/sandboxes/{}/ports/{}{**}", api_port_proxy, BODY_PROXY, ROLE_PORT},
	{"GET", "/console", api_console, BODY_NONE, ROLE_PUBLIC},
	{"GET", "/console/{}", api_console, BODY_NONE, ROLE_PUBLIC},
	{"POST", "/mcp", hx_mcp, BODY_MESSAGE, ROLE_CLIENT},
	{"DELETE", "/mcp", hx_mcp, BODY_NONE, ROLE_CLIENT},
	{"GET", "/mcp", hx_mcp, BODY_NONE,
	 ROLE_CLIENT}, /* answers 405 itself: the spec lets a server refuse the GET stream */
};

#define MAX_CAPS      2
#define PROXY_METHODS "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS"

static bool proxied_method(const char *method)
{
	static const char *const m[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
	for (size_t i = 0; method && i < AL_ARRAY_SIZE(m); i++)
		if (strcmp(method, m[i]) == 0)
			return true;
	return false;
}

/* Matches path against pattern; caps[] get [start, end) offsets of captures. */
static bool match(const char *pattern, const char *path, size_t caps[MAX_CAPS][2])
{
	const char *p = pattern, *u = path;
	int n = 0;
	while (*p) {
		if (strncmp(p, "{**}", 4) == 0) /* the rest, maybe empty: nothing, or "/" and anything */
			return !*u || *u == '/';
		if (strncmp(p, "{*}", 3) == 0) {
			if (!*u || n >= MAX_CAPS)
				return false;
			caps[n][0] = (size_t)(u - path);
			caps[n][1] = strlen(path);
			return true;
		}
		if (strncmp(p, "{}", 2) == 0) {
			const char *end = strchr(u, '/');
			if (!end)
				end = u + strlen(u);
			if (end == u || n >= MAX_CAPS)
				return false;
			caps[n][0] = (size_t)(u - path);
			caps[n][1] = (size_t)(end - path);
			n++;
			p += 2;
			u = end;
			continue;
		}
		if (*p != *u)
			return false;
		p++;
		u++;
	}
	return *u == 0;
}

/* The route for (method, path); NULL with *path_known telling 405 from 404, and allow[] the
 * methods that would have matched. */
static const struct route *find(const char *method, const char *path, size_t caps[MAX_CAPS][2], bool *path_known,
				char *allow, size_t allow_cap)
{
	*path_known = false;
	if (allow_cap)
		allow[0] = 0;
	for (size_t i = 0; i < AL_ARRAY_SIZE(routes); i++) {
		size_t c[MAX_CAPS][2] = {{0}};
		if (!match(routes[i].pattern, path, c))
			continue;
		if (method &&
		    (strcmp(routes[i].method, method) == 0 || (routes[i].method[0] == '*' && proxied_method(method)))) {
			memcpy(caps, c, sizeof(c));
			return &routes[i];
		}
		*path_known = true;
		if (!allow_cap)
			continue;
		size_t used = strlen(allow);
		snprintf(allow + used, allow_cap - used, "%s%s", used ? ", " : "",
			 routes[i].method[0] == '*' ? PROXY_METHODS : routes[i].method);
	}
	return NULL;
}

size_t hx_body_limit(const struct hx_server *s, const char *method, const char *path)
{
	size_t caps[MAX_CAPS][2];
	bool known;
	const struct route *r = find(method, path ? path : "", caps, &known, NULL, 0);
	if (!r)
		return 0;
	switch (r->body) {
	case BODY_NONE:
		return 0;
	case BODY_JSON:
		return s->o.max_body;
	case BODY_FILE:
		return hx_upload_limit(s);
	case BODY_MESSAGE:
		return s->o.max_message;
	case BODY_PROXY:
		return SIZE_MAX; /* streamed through, never held: the sandbox's server reads what it wants */
	}
	return 0;
}

size_t hx_upload_limit(const struct hx_server *s)
{
	/* Streamed to the workspace (a manager with open_upload), a body is bounded by the sandbox's
	 * disk limit, not by the server's memory: no cap unless the operator set one. Held in memory
	 * (a manager without), by HX_DEFAULT_MAX_FILE. */
	if (s->o.max_file)
		return s->o.max_file;
	return s->o.mgr && s->o.mgr->open_upload ? SIZE_MAX : HX_DEFAULT_MAX_FILE;
}

size_t hx_request_limit(struct hx_server *s, const struct hx_request *rq)
{
	return e2b_claims(s, rq, NULL) ? e2b_body_limit(s, rq) : hx_body_limit(s, rq->method, rq->path);
}

bool hx_request_proxied(struct hx_server *s, const struct hx_request *rq)
{
	struct e2b_target t;
	if (e2b_claims(s, rq, &t))
		return e2b_port_proxied(&t);
	return hx_route_proxied(rq->method, rq->path);
}

bool hx_route_proxied(const char *method, const char *path)
{
	size_t caps[MAX_CAPS][2];
	bool known;
	const struct route *r = find(method, path ? path : "", caps, &known, NULL, 0);
	return r && r->body == BODY_PROXY;
}

/* ---- responses ------------------------------------------------------------------------------ */

void hx_response_clear(struct hx_response *rs)
{
	free(rs->body);
	free(rs->location);
	free(rs->headers);
	if (rs->ops)
		rs->ops->free(rs->stream);
	if (rs->has_fd)
		close(rs->fd);
	memset(rs, 0, sizeof(*rs));
}

static void out_of_memory(struct hx_response *rs)
{
	hx_response_clear(rs);
	rs->status = 500;
}

void hx_json(struct hx_response *rs, int status, json_t *steal)
{
	char *text = steal ? json_dumps(steal, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	json_decref(steal);
	free(rs->body);
	rs->body = NULL;
	if (!text) {
		out_of_memory(rs);
		return;
	}
	size_t n = strlen(text);
	char *body = realloc(text, n + 2);
	if (!body) {
		free(text);
		out_of_memory(rs);
		return;
	}
	body[n] = '\n'; /* one JSON document per line, so `curl` output ends cleanly */
	body[n + 1] = 0;
	rs->status = status;
	rs->type = "application/json";
	rs->body = body;
	rs->len = n + 1;
}

void hx_error(struct hx_response *rs, int status, const char *fmt, ...)
{
	char msg[AL_ERROR_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The message may quote what the client sent: json_string refuses invalid UTF-8. */
	json_t *text = json_string(msg);
	if (!text)
		text = json_string("invalid request");
	hx_json(rs, status, json_pack("{s:o}", "error", text));
}

int hx_status_of_errno(int neg_errno)
{
	switch (-neg_errno) {
	case ENOENT:
	case ESRCH:
		return 404;
	case EINVAL:
	case ERANGE: /* a number out of its range ("cpus": 1e-300) */
	case ENOTDIR:
	case EISDIR:
	case EXDEV:
	case ELOOP:
	case ENAMETOOLONG:
	case ENOTEMPTY:
		return 400;
	case EACCES:
	case EPERM:
	case EROFS:
		return 403;
	case EEXIST:
	case EPIPE: /* a process's stdin that is closed */
		return 409;
	case EFBIG:
	case E2BIG:
	case EOVERFLOW:
		return 413;
	case EBUSY:
	case EAGAIN:
	case EMLINK:
		return 429;
	case ENOSPC:
	case EDQUOT:
		return 507;
	case ENOTSUP:
		return 501;
	case ETIMEDOUT:
		return 504;
	case ECANCELED:
		return 503;
	default:
		return 500;
	}
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static const char *header(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, name) : NULL;
}

int hx_precheck(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	/* An E2B SDK's request (its control plane's paths, or a sandbox named by its headers or
	 * Host) has its own credentials and routes (e2b.c); the rest is the JSON API's. */
	int e2b = e2b_precheck(s, rq, rs);
	if (e2b >= 0)
		return e2b;
	size_t caps[MAX_CAPS][2];
	bool known;
	char allow[64];
	const char *path = rq->path ? rq->path : "";
	const struct route *r = find(rq->method, path, caps, &known, allow, sizeof(allow));
	/* A public route still passes the Host and Origin checks on TCP (no page of another site gets
	 * it by DNS rebinding; a browser cannot open the Unix socket), and its handler gets the
	 * anonymous principal, which may do nothing. */
	if (r && r->role == ROLE_PUBLIC) {
		*rq->who = (struct hx_principal){0};
		return !rq->local && hx_check_origin(s, rq, rs);
	}
	/* A port token stands for the owner on that one port: Host and Origin as for any request on
	 * TCP, and the token itself is checked by the manager before anything reaches the sandbox. */
	if (r && r->role == ROLE_PORT && hx_port_token(rq, NULL)) {
		*rq->who = (struct hx_principal){0};
		return !rq->local && hx_check_origin(s, rq, rs);
	}
	if (hx_check_access(s, rq, rs))
		return 1;
	if (!r && !known) {
		hx_error(rs, 404, "no such resource: %.200s", path);
		return 1;
	}
	if (!r) {
		hx_error(rs, 405, "method %.16s not allowed on %.200s (allowed: %s)", rq->method ? rq->method : "",
			 path, allow);
		snprintf(rs->allow, sizeof(rs->allow), "%s", allow);
		return 1;
	}
	if (((r->role == ROLE_CLIENT || r->role == ROLE_PORT) && !rq->who->client) ||
	    (r->role == ROLE_APPROVER && !rq->who->approver)) {
		hx_error(rs, 403, "%s may not %s %.200s (%s)", rq->who->name, rq->method, path,
			 r->role == ROLE_CLIENT ? "an approver's credential runs nothing"
						: "only approvers decide approvals and read the audit log");
		return 1;
	}
	const char *cl = header(rq, "Content-Length");
	size_t limit = hx_body_limit(s, rq->method, path);
	if (cl && strtoull(cl, NULL, 10) > limit && r->body != BODY_NONE) {
		hx_error(rs, 413, "request body over the limit of %zu bytes", limit);
		return 1;
	}
	return 0;
}

static unsigned hex(char c)
{
	return c >= '0' && c <= '9'   ? (unsigned)(c - '0')
	       : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
	       : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
				      : 16u;
}

static char *capture(const char *path, const size_t c[2])
{
	return c[1] > c[0] ? strndup(path + c[0], c[1] - c[0]) : NULL;
}

/* A decoded URL that no handler can take: a NUL (%00, which hx_unescape turns into the overlong
 * C0 80 so that C strings cannot silently end there) or bytes that are not UTF-8 (paths, ids and
 * JSON strings are UTF-8). 1 when rs got the 400. */
static int bad_url(const char *path, struct hx_response *rs)
{
	if (strstr(path, "\xc0\x80")) {
		hx_error(rs, 400, "a NUL byte (%%00) in the URL");
		return 1;
	}
	if (!txt_utf8_valid(path, strlen(path))) {
		hx_error(rs, 400, "the URL path is not valid UTF-8");
		return 1;
	}
	return 0;
}

size_t hx_unescape(char *s)
{
	char *out = s;
	for (const char *in = s; *in;) {
		unsigned hi, lo;
		if (in[0] == '%' && (hi = hex(in[1])) < 16 && (lo = hex(in[2])) < 16) {
			unsigned char b = (unsigned char)(hi << 4 | lo);
			if (b == 0) { /* 3 characters in, 2 bytes out: it fits in place */
				*out++ = (char)0xc0;
				*out++ = (char)0x80;
			} else {
				*out++ = (char)b;
			}
			in += 3;
		} else {
			*out++ = *in++;
		}
	}
	*out = 0;
	return (size_t)(out - s);
}

int hx_upload_route(const char *method, const char *path, char *caps[2], bool *archive, struct hx_response *rs)
{
	size_t c[MAX_CAPS][2] = {{0}};
	bool known;
	caps[0] = caps[1] = NULL;
	if (!path)
		return 0;
	const struct route *r = find(method, path, c, &known, NULL, 0);
	if (!r || r->body != BODY_FILE)
		return 0;
	if (bad_url(path, rs))
		return -1;
	*archive = r->fn == api_archive;
	caps[0] = capture(path, c[0]);
	caps[1] = capture(path, c[1]);
	if ((c[0][1] && !caps[0]) || (c[1][1] && !caps[1])) {
		free(caps[0]);
		free(caps[1]);
		caps[0] = caps[1] = NULL;
		out_of_memory(rs);
		return -1;
	}
	return 1;
}

void hx_handle(struct hx_server *s, const struct hx_request *rq, struct hx_response *rs)
{
	memset(rs, 0, sizeof(*rs));
	const char *path = rq->path ? rq->path : "";
	if (bad_url(path, rs) == 0 && hx_precheck(s, rq, rs) == 0 && e2b_claims(s, rq, NULL)) {
		if (rq->too_large)
			hx_error(rs, 413, "request body over the limit of %zu bytes", e2b_body_limit(s, rq));
		else
			e2b_handle(s, rq, rs);
	} else if (!rs->status) {
		size_t caps[MAX_CAPS][2] = {{0}};
		bool known;
		const struct route *r = find(rq->method, path, caps, &known, NULL, 0);
		if (rq->too_large || (r->body == BODY_NONE && rq->len)) {
			if (rq->too_large)
				hx_error(rs, 413, "request body over the limit of %zu bytes",
					 hx_body_limit(s, rq->method, path));
			else
				hx_error(rs, 400, "this request takes no body");
		} else {
			char *c[MAX_CAPS] = {capture(path, caps[0]), capture(path, caps[1])};
			if ((caps[0][1] && !c[0]) || (caps[1][1] && !c[1]))
				out_of_memory(rs);
			else
				r->fn(s, rq, c, rs);
			free(c[0]);
			free(c[1]);
		}
	}
	hx_metrics_request(&s->metrics, rs->status);
}
