/* proxy.h — the egress proxy: serves, from the supervisor in the host's network namespace, a
 * listening socket that the sandbox's init made on 127.0.0.1 in the sandbox's namespace, and
 * under an allowlist the capture's sockets made beside it (the resolver's UDP and TCP, one
 * listener per allowlist port: capture.h). One accept thread, which also answers the resolver's
 * datagrams (pure and quick: dns.c); one thread per connection, bounded by max_conns. */
#ifndef AL_NETWORK_PROXY_H
#define AL_NETWORK_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "network/allowlist.h"
#include "network/pxrecord.h"

struct al_broker_list;
struct al_secrets;
struct tls_ca;

/* What the proxy enforces. The proxy keeps its own copies (or references) of everything. */
struct px_config {
	const struct al_allowlist *allow;	  /* NULL: every CONNECT is refused */
	const struct al_cidr_list *allow_private; /* NULL: none */
	struct al_broker_list *brokers;		  /* NULL: none; referenced, not copied: */
	void (*brokers_release)(void *ctx);	  /* called once the last thread is done with them */
	void *brokers_ctx;
	const char *hosts_file; /* NULL: system resolver only */
	/* Where rules must see requests (al_allow_sees) or a secret may go (al_secrets_for), TLS is
	 * terminated with this sandbox's CA (pxtls.c); NULL: never. The proxy takes a reference of
	 * each (not of the caller's). */
	struct tls_ca *ca;
	struct al_secrets *secrets;
	bool plain_http;
	bool capture; /* the sandbox's resolver and the capture listeners (capture.c) may be served */
	uint32_t max_conns;
	int idle_ms;
	struct timespec t0; /* the job's start (CLOCK_MONOTONIC): records are relative to it */
};

struct px_stats {
	uint64_t connections; /* accepted */
	uint64_t allowed, denied, errors;
	uint64_t malformed;	  /* requests answered 400/405/431/501/505 */
	uint64_t over_limit;	  /* refused because max_conns were open */
	uint64_t records_dropped; /* beyond PX_MAX_RECORDS */
	uint64_t unfinished;	  /* still open when the job ended */
	/* The sandbox's resolver (capture.c): queries answered, NXDOMAIN among them, malformed
	 * (FORMERR, or too large to be one); names: synthetic addresses given so far. */
	uint64_t dns_queries, dns_nxdomain, dns_malformed, dns_names;
};

#define PX_MAX_RECORDS 1024

struct px; /* opaque */

/* Makes the proxy (copies the configuration; takes over the brokers reference even on error). */
int px_new(const struct px_config *cfg, struct px **out);
/* What a listening socket of the sandbox's namespace is for. */
enum px_listen {
	PXL_PROXY,   /* the explicit proxy, 127.0.0.1:AL_PROXY_PORT */
	PXL_DNS_UDP, /* the resolver, AL_DNS_ADDR:53 */
	PXL_DNS_TCP,
	PXL_CAPTURE, /* 0.0.0.0:PORT, one per allowlist port */
};
#define PX_MAX_LISTEN (3 + AL_CAPTURE_MAX_PORT)
/* Adds a capture socket (taken over in every case) before px_serve: -EINVAL without cfg.capture,
 * -ENOSPC beyond PX_MAX_LISTEN, -EBUSY once serving. */
int px_add_listener(struct px *px, int fd, enum px_listen kind);
/* Starts serving listen_fd (taken over in every case) and those added, in an accept thread. */
int px_serve(struct px *px, int listen_fd);
/* Stops accepting, ends every connection, waits briefly for the threads. Idempotent. */
void px_stop(struct px *px);
/* Valid after px_stop until px_free. */
const struct px_record *px_records(const struct px *px, size_t *n);
/* The capture served: 0 when it was not (no resolver), else 1 + the number of capture ports,
 * which *ports points at. */
size_t px_capture(const struct px *px, const uint16_t **ports);
struct px_stats px_get_stats(const struct px *px);
void px_free(struct px *px);
/*
 * A held sandbox's proxy serves all its execs, one after another: an exec takes the records made
 * since the last take (moved into *out, a stopped proxy that px_records and px_get_stats read as
 * any job's, counters included), so each attempt is reported once, by the exec that made it, and
 * the record limit is each exec's own. Connections still open wait up to wait_ms; those left are
 * counted unfinished and never reported later. Start times become relative to t0.
 */
int px_take(struct px *px, const struct timespec *t0, int wait_ms, struct px **out);

/* ---- internal: shared by proxy.c and pxconn.c -------------------------------------- */
struct px_conn {
	struct px *px;
	enum px_listen via; /* the listener it came from */
	int client;	    /* accepted socket, non-blocking */
	int upstream;	    /* -1 until connected */
	unsigned gen;	    /* px_take's generation when accepted: a record of an earlier one is dropped */
	struct px_record rec;
};
/* Serves one connection to its end and fills c->rec (pxconn.c). */
void px_conn_serve(struct px_conn *c, const struct px_config *cfg);
/* Registers the upstream socket so px_stop can shut it down; false if stopping. */
bool px_conn_set_upstream(struct px_conn *c, int fd);
/* Resolves host, checks each address, connects to the first permitted one that answers: the
 * upstream fd (registered), or -1 with the refusal recorded (and answered) (pxconn.c). */
int px_connect_checked(struct px_conn *c, const struct px_config *cfg, const char *host, uint16_t port);
/* Records the request served so far and starts a new record for the next one on the same
 * connection (same host, port and kind): terminated TLS carries many requests (proxy.c). */
void px_conn_next(struct px_conn *c);
/* Whether the connection to host:port must be terminated: rules to see, or secrets to put. */
bool px_tls_wanted(const struct px_config *cfg, const char *host, uint16_t port);
/* Serves a connection whose TLS airlock terminates (pxtls.c): c->rec.host and port are set and
 * allowed, the client was told the tunnel is up (or was captured); every request is checked
 * against the rules, secrets are put in, each request recorded. */
void px_tls_serve(struct px_conn *c, const struct px_config *cfg);
/* The upstream leg of a request airlock forwards (pxtls.c): how the upstream is verified, whose
 * placeholders are put in, and what a broker (broker.c) adds. px_tls_serve's: the CA's client
 * context, cfg's secrets, nothing added. */
struct pr_request;
struct ssl_ctx_st;
struct px_forward {
	struct ssl_ctx_st *ctx;		  /* verifies the upstream (peer, name); not owned */
	const struct al_secrets *secrets; /* put in toward c->rec.host:port; the response scanned for them */
	const char *target;		  /* the request target sent; NULL: the job's own */
	const char *lines;		  /* header lines added ("Name: value\r\n"...), placeholders only */
	const char *const *drop;	  /* lower-case header names of the job's left out; NULL-ended */
};
/* Serves one plain origin-form request on c->client through the same upstream leg as
 * px_tls_serve, to c->rec.host:port (set by the caller): resolved with the hosts file and every
 * address checked (px_connect_checked), TLS verified with fw->ctx, placeholders of fw->secrets
 * replaced, the response scanned and cut. rest[0..nrest): what was read after the head. Fills
 * c->rec (method, path, decision, status, bytes, reason); answers every failure itself. */
void px_forward_serve(struct px_conn *c, const struct px_config *cfg, const struct px_forward *fw,
		      const struct pr_request *req, const char *rest, size_t nrest);
/* Relays both ways until both directions ended or nothing moved for idle_ms (pxconn.c). */
void px_relay(struct px_conn *c, int idle_ms);
/* For capture.c: the names table (NULL without cfg.capture), the allowlist, and a query's
 * counting (a refused name is recorded once per run of the same name). */
struct cap_names *px_names(struct px *px);
const struct al_allowlist *px_allowlist(const struct px *px);
struct dns_query;
void px_dns_note(struct px *px, const struct dns_query *q, bool answered);

#endif
