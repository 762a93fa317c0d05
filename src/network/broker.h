/* broker.h — the credential broker: named upstreams whose secret headers the supervisor adds,
 * so no secret enters the sandbox. The job sends an origin-form request
 * ("GET /NAME/path HTTP/1.1") to the egress proxy's port; the broker forwards it through the
 * proxy's one upstream leg (pxtls.c: checked addresses, verified TLS, the response scanned) to the
 * upstream with the headers added, and relays the answer. */
#ifndef AL_NETWORK_BROKER_H
#define AL_NETWORK_BROKER_H

#include <stddef.h>

#include "airlock/airlock.h"
#include "network/proxyreq.h"
#include "network/pxrecord.h"

#define AL_BROKER_NAME_MAX 32

struct al_broker_list; /* opaque */

int al_broker_list_new(struct al_broker_list **out);
/* Wipes every secret before freeing it. */
void al_broker_list_free(struct al_broker_list *bl);
/*
 * Adds one broker from "NAME=https://HOST[:PORT][/BASE],header=HEADER[,scheme=WORD],
 * env=VAR|file=PATH[,header=...][,ca=CAFILE]": each header= takes the scheme= and env=/file= that
 * follow it up to the next header= (the first one also those before it), at most 8 headers. Each
 * secret is read now, from airlock's own environment or a file, and kept in the supervisor only.
 * All or nothing: on error nothing was added and err names the problem (non-https upstream, no or
 * two secret sources for a header, a header given twice, unset variable, unreadable or empty file,
 * a secret with CR/LF, bad name, duplicate name, unknown key).
 */
int al_broker_list_add(struct al_broker_list *bl, const char *spec, struct al_error *err);
size_t al_broker_count(const struct al_broker_list *bl);
/* NAME of the i-th broker: [a-z0-9_-], at most AL_BROKER_NAME_MAX - 1 characters. */
const char *al_broker_name(const struct al_broker_list *bl, size_t i);

struct px_conn;
struct px_config;
/*
 * Serves one origin-form request (req->kind == PR_ORIGIN) on the connection c (its client socket
 * non-blocking): finds the broker named by the first path segment (404 if none), refuses a path
 * that could leave BASE (400), and forwards it through the proxy's upstream leg (pxtls.c,
 * px_forward_serve): the upstream resolved with cfg's hosts file and its addresses checked as any
 * CONNECT's (403 for a private or loopback one outside cfg's allow_private), TLS verified, the
 * path rebased onto BASE, Host set to the upstream, every secret header added (a client header of
 * such a name is dropped), Accept-Encoding identity, then rest[0..nrest) and the remaining
 * req->content_length body bytes; the response relayed until the upstream closes, cut if it
 * carries a secret, refused (502) if content-encoded. Fills c->rec (kind PXK_BROKER, broker name,
 * upstream host/port/addr, decision, status, bytes) and never puts a secret in it.
 */
void broker_serve(const struct al_broker_list *bl, struct px_conn *c, const struct px_config *cfg,
		  const struct pr_request *req, const char *rest, size_t nrest);

#endif
