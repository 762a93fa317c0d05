/* capture.h — the egress capture: allowed names get synthetic addresses from the sandbox's own
 * resolver (dns.c), and connections to those addresses, accepted on listeners in the sandbox's
 * network namespace, go upstream through the proxy's checks. The name table is pure; the
 * serving functions run in the proxy's threads (proxy.c). */
#ifndef AL_NETWORK_CAPTURE_H
#define AL_NETWORK_CAPTURE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

#include "network/allowlist.h"

#define CAP_MAX_NAMES 4096 /* names one sandbox may resolve; more get SERVFAIL */

/* ---- the name table: one synthetic address per allowed name, for the sandbox's life --------- */

struct cap_names; /* opaque; thread-safe */

int cap_names_new(struct cap_names **out);
void cap_names_free(struct cap_names *t);
/* The address of name (normalized), given on first use: 0, or -ENOSPC when CAP_MAX_NAMES are
 * given (-ENOMEM). The same name always gets the same address. */
int cap_names_addr(struct cap_names *t, const char *name, struct in_addr *out);
/* The name an address was given to (copied into name): false for any other address. */
bool cap_names_name(struct cap_names *t, const struct in_addr *a, char name[AL_HOST_MAX]);
size_t cap_names_count(struct cap_names *t);

/* ---- serving (called by proxy.c's threads) ----------------------------------------------- */

struct px;
struct px_conn;
struct px_config;

/* Answers every query waiting on the resolver's UDP socket (non-blocking), in the acceptor. */
void cap_dns_udp(struct px *px, int fd);
/* Serves one TCP connection to the resolver: length-prefixed queries until close or idle. */
void cap_dns_tcp(struct px_conn *c, const struct px_config *cfg);
/* Serves one captured connection: its local address names the host, its local port the port;
 * then the allowlist, resolution and address checks of a CONNECT, and the relay. A refusal is a
 * reset (no HTTP answer can mean anything to the client's protocol). */
void cap_conn_serve(struct px_conn *c, const struct px_config *cfg);

#endif
