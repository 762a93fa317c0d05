/* fuzz_http.c — fuzzes the HTTP front end's request handling (src/http/route.c and what it dispatches to:
 * the JSON API, approvals, MCP over HTTP) without sockets, against the synchronous fake manager.
 *
 * Input: one flags byte, then requests separated by "\n===\n", each
 *   METHOD SP PATH[?QUERY] LF (Header: value LF)* LF body
 * A header value "$SID" becomes the Mcp-Session-Id of the last response that had one, so one input
 * can initialize an MCP session and use it. Flags: bits 0-1 the gate's verdict (allow, deny, ask,
 * no gate), bit 2 bearer tokens are required (client "t0ken-0123456789", approver
 * "r3viewer-0123456789"), bit 3 an approval queue exists (asks time out after 1 ms), bit 4 the
 * server is not on loopback, bit 5 the requests come through the Unix socket as root. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../unit/mcp_fake.h"
#include "http/hx.h"
#include "service/approval.h"

#define MAX_HEADERS 32
#define MAX_QUERY   8

struct req {
	char *names[MAX_HEADERS], *values[MAX_HEADERS];
	int n;
	char *qnames[MAX_QUERY], *qvalues[MAX_QUERY];
	int nq;
	const char *sid;
};

static const char *lookup(void *ctx, enum hx_kind kind, const char *name)
{
	struct req *r = ctx;
	if (kind == HX_QUERY) {
		for (int i = 0; i < r->nq; i++)
			if (strcmp(r->qnames[i], name) == 0)
				return r->qvalues[i];
		return NULL;
	}
	for (int i = 0; i < r->n; i++)
		if (strcasecmp(r->names[i], name) == 0)
			return strcmp(r->values[i], "$SID") == 0 ? r->sid : r->values[i];
	return NULL;
}

/* Splits one request in place (text is NUL-terminated; the body may hold NULs up to end). */
static void one(struct hx_server *s, char *text, char *end, char sid[HX_SESSION_ID_LEN + 1], bool local)
{
	struct req r = {.sid = sid};
	char *nl = memchr(text, '\n', (size_t)(end - text));
	if (!nl)
		return;
	*nl = 0;
	char *sp = strchr(text, ' ');
	if (!sp)
		return;
	*sp = 0;
	char *path = sp + 1, *q = strchr(path, '?');
	if (q) {
		*q++ = 0;
		for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv && r.nq < MAX_QUERY;
		     kv = strtok_r(NULL, "&", &save)) {
			char *eq = strchr(kv, '=');
			r.qnames[r.nq] = kv;
			r.qvalues[r.nq++] = eq ? (*eq = 0, eq + 1) : (char *)"";
		}
	}
	char *p = nl + 1;
	while (p < end && *p != '\n') {
		char *e = memchr(p, '\n', (size_t)(end - p));
		if (!e)
			e = end;
		*e = 0;
		char *colon = strchr(p, ':');
		if (colon && r.n < MAX_HEADERS) {
			*colon = 0;
			char *v = colon + 1;
			while (*v == ' ')
				v++;
			r.names[r.n] = p;
			r.values[r.n++] = v;
		}
		p = e + 1;
	}
	if (p < end)
		p++;
	struct hx_principal who;
	struct hx_request rq = {
		.method = text,
		.path = path,
		.lookup = lookup,
		.lookup_ctx = &r,
		.body = p < end ? p : NULL,
		.len = p < end ? (size_t)(end - p) : 0,
		.peer = "127.0.0.1:1",
		.who = &who,
		.local = local, /* the Unix socket, as root */
	};
	rq.too_large = rq.len > hx_body_limit(s, rq.method, rq.path);
	if (rq.too_large)
		rq.len = 0;
	struct hx_response rs;
	hx_handle(s, &rq, &rs);
	if (rs.status < 100 || rs.status > 599)
		abort();
	if (rs.session[0])
		memcpy(sid, rs.session, HX_SESSION_ID_LEN + 1);
	/* Drain a stream without blocking (the fake manager is synchronous: everything is queued). */
	char buf[4096];
	for (int i = 0; rs.ops && i < 1000; i++) {
		ssize_t n = rs.ops->read(rs.stream, buf, sizeof(buf), false);
		if (n <= 0)
			break;
	}
	hx_response_clear(&rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	uint8_t flags = data[0];
	struct fake_mgr m = {.cancel_finishes = true};
	fake_add_sandbox(&m, "sb-a");
	struct srv_mgr_api api = fake_api(&m);
	struct fake_gate g = {.verdict = (enum srv_gate_verdict)(flags & 3), .reason = "fuzz", .timeout_ms = 1};
	struct srv_gate gate = fake_gate_api(&g);
	struct apq *q = NULL;
	if ((flags & 8) && apq_new(&q) < 0)
		return 0;
	char client[] = "t0ken-0123456789", reviewer[] = "r3viewer-0123456789", cn[] = "agent", rn[] = "reviewer";
	struct http_token tokens[2] = {{.name = cn, .token = client},
				       {.name = rn, .token = reviewer, .approver = true}};
	struct http_opts o = {
		.size = sizeof(o),
		.mgr = &api,
		.gate = (flags & 3) == 3 ? NULL : &gate,
		.tokens = (flags & 4) ? tokens : NULL,
		.ntokens = (flags & 4) ? 2 : 0,
		.approvals = q,
		.max_body = 4096,
		.max_file = 8192,
		.max_message = 8192,
		.max_sessions = 4,
	};
	struct hx_server *s;
	if (hx_server_new(&o, !(flags & 16), &s, NULL) < 0) {
		apq_free(q);
		return 0;
	}
	char *copy = malloc(size);
	if (!copy)
		abort();
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = 0;
	char *p = copy, *end = copy + size - 1;
	char sid[HX_SESSION_ID_LEN + 1] = "";
	while (p < end) {
		char *next = memmem(p, (size_t)(end - p), "\n===\n", 5);
		char *stop = next ? next : end;
		*stop = 0;
		one(s, p, stop, sid, (flags & 32) != 0);
		p = next ? next + 5 : end;
	}
	free(copy);
	hx_server_free(s);
	apq_free(q);
	if (m.live_ops != 0)
		abort(); /* everything the server started, it released */
	return 0;
}
