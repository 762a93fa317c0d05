/* pxhead.h — the response heads airlock relays where it terminated TLS (pxtls.c): what a head says
 * about its message, and the head the client gets. Pure: bytes in, bytes out, no I/O. */
#ifndef AL_NETWORK_PXHEAD_H
#define AL_NETWORK_PXHEAD_H

#include <stdbool.h>
#include <stddef.h>

/* Whether line[0..len) is a header named name (lower case), case-insensitively: "Name:...". */
bool pxh_hdr_is(const char *line, size_t len, const char *name);

struct pxh_facts {
	int status;   /* the status line's three digits, 0 when it has none */
	bool framed;  /* the client can find the message's end without our closing */
	bool encoded; /* a content coding other than identity */
};
/* The facts of head h[0..n): a response head through its blank line ("...\r\n\r\n"); head_req:
 * the request was HEAD (its response has no body whatever it says). */
void pxh_facts(const char *h, size_t n, bool head_req, struct pxh_facts *f);

/* What pxh_rewrite may add to a head. */
#define PXH_GROWTH 32
/* The head as the client gets it, into out (at least n + PXH_GROWTH bytes): h[0..n) (ending with
 * "\r\n\r\n") without its Connection, Keep-Alive and Proxy-Connection lines, plus our own
 * "Connection: close" unless framed. Returns its length. */
size_t pxh_rewrite(const char *h, size_t n, bool framed, char *out);

#endif
