/* portapi.c — the JSON API's routes for a sandbox's ports: the listening ports, per-port tokens, and how a request presents one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/hx.h"
#include "util/text.h"

#define PORT_TOKEN_TTL_MAX_S (30u * 24 * 3600) /* a token's lifetime at most (it dies with the sandbox anyway) */

unsigned hx_port_number(const char *text)
{
	unsigned v = 0;
	size_t n = text ? strlen(text) : 0;
	if (n == 0 || n > 5)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (text[i] < '0' || text[i] > '9')
			return 0;
		v = v * 10 + (unsigned)(text[i] - '0');
	}
	return v <= 65535 ? v : 0;
}

const char *hx_port_token(const struct hx_request *rq, bool *from_query)
{
	if (from_query)
		*from_query = false;
	if (!rq->lookup)
		return NULL;
	const char *t = rq->lookup(rq->lookup_ctx, HX_HEADER, "X-Airlock-Port-Token");
	if (t && *t)
		return t;
	t = rq->lookup(rq->lookup_ctx, HX_QUERY, "airlock_token");
	if (t && *t) {
		if (from_query)
			*from_query = true;
		return t;
	}
	t = rq->lookup(rq->lookup_ctx, HX_COOKIE, HX_PORT_COOKIE);
	return t && *t ? t : NULL;
}

/* The owner as the runner names it when a call creates a sandbox (api.c: no name is "anonymous"). */
static const char *owner_of(const struct hx_request *rq)
{
	return rq->who->name[0] ? rq->who->name : "anonymous";
}

/* 1 with rs filled (501) when this manager has no ports. */
static int no_ports(const struct hx_server *s, struct hx_response *rs)
{
	const struct srv_mgr_api *m = s->o.mgr;
	if (m->list_ports && m->port_token && m->port_connect)
		return 0;
	hx_error(rs, 501, "this manager cannot reach a sandbox's ports");
	return 1;
}

static int port_status(int r)
{
	return r == -EACCES ? 401 : r == -ECONNREFUSED ? 502 : hx_status_of_errno(r);
}

void api_ports(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	if (no_ports(s, rs))
		return;
	const struct srv_mgr_api *m = s->o.mgr;
	struct srv_port_req req = {.owner = owner_of(rq), .sandbox_id = caps[0]};
	struct srv_port_info *v = NULL;
	size_t n = 0;
	struct al_error err = {0};
	int r = m->list_ports(m->ctx, &req, &v, &n, &err);
	if (r < 0) {
		hx_error(rs, port_status(r), "%s", err.msg[0] ? err.msg : "cannot list the ports");
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; list && i < n; i++) {
		char url[SRV_SANDBOX_ID_MAX + 48];
		snprintf(url, sizeof(url), "/v1/sandboxes/%s/ports/%u/", caps[0], (unsigned)v[i].port);
		if (json_array_append_new(list, json_pack("{s:i,s:s,s:s}", "port", (int)v[i].port, "address", v[i].addr,
							  "url", url)) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	free(v);
	if (!list)
		hx_error(rs, 500, "out of memory");
	else
		hx_json(rs, 200, json_pack("{s:s,s:o}", "sandbox_id", caps[0], "ports", list));
}

/* The body's ttl_seconds (absent: 0, the sandbox's life): 0 and *ttl_ms, or 1 with rs filled. */
static int token_ttl(const struct hx_request *rq, uint64_t *ttl_ms, struct hx_response *rs)
{
	*ttl_ms = 0;
	if (!rq->len)
		return 0;
	json_t *b = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, NULL);
	json_t *t = json_object_get(b, "ttl_seconds");
	int bad = !json_is_object(b) || json_object_size(b) != (t ? 1u : 0u) ||
		  (t && (!json_is_integer(t) || json_integer_value(t) < 1 ||
			 json_integer_value(t) > (json_int_t)PORT_TOKEN_TTL_MAX_S));
	if (!bad && t)
		*ttl_ms = (uint64_t)json_integer_value(t) * 1000;
	json_decref(b);
	if (bad)
		hx_error(rs, 400, "the body must be {} or {\"ttl_seconds\": 1 to %u}", PORT_TOKEN_TTL_MAX_S);
	return bad;
}

static json_t *expiry(uint64_t unix_ms)
{
	char buf[TXT_RFC3339_MAX];
	if (!unix_ms || !*txt_rfc3339((struct timespec){(time_t)(unix_ms / 1000), 0}, 0, buf))
		return json_null();
	return json_string(buf);
}

/* POST /v1/sandboxes/{id}/ports/{port}/token: the owner only (a port token is no credential
 * here: ROLE_CLIENT), a fresh token each call, shown once. */
void api_port_token(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	unsigned port = hx_port_number(caps[1]);
	uint64_t ttl_ms;
	if (no_ports(s, rs))
		return;
	if (!port) {
		hx_error(rs, 400, "port \"%.16s\": a port is a number from 1 to 65535", caps[1]);
		return;
	}
	if (token_ttl(rq, &ttl_ms, rs))
		return;
	const struct srv_mgr_api *m = s->o.mgr;
	struct srv_port_req req = {
		.owner = owner_of(rq), .sandbox_id = caps[0], .port = (uint16_t)port, .ttl_ms = ttl_ms};
	char token[SRV_PORT_TOKEN_LEN + 1];
	uint64_t expires = 0;
	struct al_error err = {0};
	int r = m->port_token(m->ctx, &req, token, &expires, &err);
	if (r < 0) {
		hx_error(rs, port_status(r), "%s", err.msg[0] ? err.msg : "cannot make a token");
		return;
	}
	char url[SRV_SANDBOX_ID_MAX + SRV_PORT_TOKEN_LEN + 64];
	snprintf(url, sizeof(url), "/v1/sandboxes/%s/ports/%u/?airlock_token=%s", caps[0], port, token);
	hx_json(rs, 201,
		json_pack("{s:s,s:i,s:s,s:o,s:s,s:s}", "sandbox_id", caps[0], "port", (int)port, "token", token,
			  "expires_at", expiry(expires), "header", "X-Airlock-Port-Token", "url", url));
	explicit_bzero(token, sizeof(token));
}

void api_port_proxy(struct hx_server *s, const struct hx_request *rq, char *const caps[2], struct hx_response *rs)
{
	(void)s;
	(void)rq;
	(void)caps;
	hx_error(rs, 501, "a port is reached over a connection of the server, not through this dispatcher");
}
