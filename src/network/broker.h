/* broker.h — the credential broker: named upstreams whose secret header the supervisor adds,
 * so the secret never enters the sandbox. The job sends an origin-form request
 * ("GET /NAME/path HTTP/1.1") to the egress proxy's port; the broker forwards it over TLS
 * (OpenSSL, certificate verified) to the upstream with the header added, and relays the answer. */
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
 * env=VAR|file=PATH[,ca=CAFILE]". The secret is read now, from airlock's own environment or a
 * file, and kept in the supervisor only. All or nothing: on error nothing was added and err
 * names the problem (non-https upstream, no or two secret sources, unset variable, unreadable
 * or empty file, a secret with CR/LF, bad name, duplicate name, unknown key).
 */
int al_broker_list_add(struct al_broker_list *bl, const char *spec, struct al_error *err);
size_t al_broker_count(const struct al_broker_list *bl);
/* NAME of the i-th broker: [a-z0-9_-], at most AL_BROKER_NAME_MAX - 1 characters. */
const char *al_broker_name(const struct al_broker_list *bl, size_t i);

/*
 * Serves one origin-form request (req->kind == PR_ORIGIN) on the connected client socket
 * client_fd (non-blocking): finds the broker named by the first path segment (404 if none),
 * connects to its upstream over TLS, sends the request with the path rebased onto BASE, Host
 * set to the upstream, the secret header added (a client header of that name is dropped), and
 * rest[0..nrest) plus the remaining req->content_length body bytes; then relays the response
 * until either side closes or nothing moves for idle_timeout_ms. Errors are answered with
 * px_reply (502 for upstream/TLS failures). Fills rec (kind PXK_BROKER, broker name, upstream
 * host/port/addr, decision, status, bytes) and never puts the secret in it.
 */
void broker_serve(const struct al_broker_list *bl, int client_fd, const struct pr_request *req, const char *rest,
		  size_t nrest, int idle_timeout_ms, struct px_record *rec);

#endif
