/* proxy.h — a port of a sandbox reached through the server (proxy.c): the connection glue's (server.c) calls, and what proxy.c borrows of it. */
#ifndef AL_HTTP_PROXY_H
#define AL_HTTP_PROXY_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/hx.h"

struct hx_proxy;

/*
 * One proxied request, in the order libmicrohttpd gives it to us:
 *  hx_proxy_open   once the headers are in and hx_precheck let them through: the manager connects
 *                  to the port inside the sandbox (the owner or the token checked first: nothing
 *                  reaches the sandbox before), and the request's head goes there. 0 and *out, or
 *                  1 with rs filled (answer that now). raw_uri: the request target as sent.
 *  hx_proxy_body   each piece of the request's body, passed on as it comes (never held whole).
 *  hx_proxy_respond at the end of the request: the sandbox server's answer, streamed back (or,
 *                  for a WebSocket handshake it accepted, both ways once it is switched).
 *  hx_proxy_free   once the request is over (on_completed), whatever happened.
 */
int hx_proxy_open(struct hx_server *s, struct MHD_Connection *conn, const struct hx_request *rq, const char *raw_uri,
		  struct hx_proxy **out, struct hx_response *rs);
void hx_proxy_body(struct hx_proxy *px, const char *data, size_t n);
enum MHD_Result hx_proxy_respond(struct hx_proxy *px, struct MHD_Connection *conn);
void hx_proxy_free(struct hx_proxy *px);

/* server.c: queues rs (as every route's answer is queued); whether the peer of fd has gone. */
enum MHD_Result hx_queue(struct MHD_Connection *conn, struct hx_response *rs);
bool hx_peer_gone(int fd);
/* server.c: conn is authenticated (a valid port token: off the unauthenticated connections' cap
 * and deadline), or being answered (no request deadline). */
void hx_conn_mark(struct hx_server *s, struct MHD_Connection *conn, bool authed, bool answering);

#endif
