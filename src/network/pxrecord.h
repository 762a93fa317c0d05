/* pxrecord.h — one egress-proxy connection attempt as the verdict (and, later, the audit log)
 * records it, and the small I/O helpers every proxy handler (tunnel, plain HTTP, broker) shares. */
#ifndef AL_NETWORK_PXRECORD_H
#define AL_NETWORK_PXRECORD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "network/allowlist.h"

enum px_kind {
	PXK_INVALID, /* the request head never parsed */
	PXK_CONNECT, /* CONNECT host:port tunnel */
	PXK_HTTP,    /* absolute-form plain-HTTP request */
	PXK_BROKER,  /* origin-form request to a credential broker */
	PXK_CAPTURE, /* a connection to a synthetic address (capture.c): a tunnel, TLS not seen */
	PXK_DNS,     /* a lookup the sandbox's resolver refused (NXDOMAIN, SERVFAIL, FORMERR) */
};

enum px_decision {
	PXD_DENIED,  /* refused by policy: allowlist, address check, limits */
	PXD_ALLOWED, /* the upstream connection was made */
	PXD_ERROR,   /* malformed request, resolution or upstream failure */
};

struct px_record {
	enum px_kind kind;
	enum px_decision decision;
	char host[AL_HOST_MAX]; /* as the client asked (normalized); broker: the upstream host */
	uint16_t port;
	char addr[INET6_ADDRSTRLEN]; /* the address connected to (or refused); "" if none */
	char broker[64];	     /* broker name, PXK_BROKER only */
	const char *reason;	     /* short static text; NULL when allowed and clean */
	int status;		     /* HTTP status sent to the client; 0 for a tunnel that was established */
	uint64_t bytes_up;	     /* client -> upstream, after the head */
	uint64_t bytes_down;	     /* upstream -> client */
	/* A request airlock saw (TLS it terminated, or plain HTTP): */
	bool tls_airlock; /* the job's TLS ended at airlock (pxtls.c): tls "airlock" */
	char method[16];  /* "" when no request was seen */
	char path[160];	  /* the target as sent, truncated (its query too: no secret is put there) */
	char rule[160];	  /* the rule that allowed it, or the host's rules when refused */
	/* The SHA-256 (hex) of the body airlock relayed, whole, for a GET answered 200: what a package
	 * install fetched, file by file ("" when none was seen whole). */
	char sha256[65];
	double start_s; /* seconds since the job started */
	double duration_s;
};

/* Writes all of buf to a (possibly non-blocking) socket, waiting at most timeout_ms for each
 * chunk to be accepted. Returns 0, -ETIMEDOUT or -errno. */
int px_write_all(int fd, const void *buf, size_t len, int timeout_ms);
/* Sends a short complete response: "HTTP/1.1 <status> <text>\r\n" with Content-Type text/plain,
 * Content-Length, Connection: close and the body "<reason>\n". Best effort. */
void px_reply(int fd, int status, const char *reason, int timeout_ms);
/* The standard reason phrase of a status we send. */
const char *px_status_text(int status);

#endif
