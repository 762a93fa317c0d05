/* proxyreq.h — incremental parser for the request head a sandboxed client sends the egress
 * proxy: CONNECT host:port, an absolute-form http:// request (the plain-HTTP option), or an
 * origin-form "/NAME/..." request (the credential broker). */
#ifndef AL_NETWORK_PROXYREQ_H
#define AL_NETWORK_PROXYREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "network/allowlist.h"

#define PR_DEFAULT_MAX_HEAD 8192
#define PR_MIN_MAX_HEAD	    64
#define PR_MAX_MAX_HEAD	    (1u << 20)
#define PR_METHOD_MAX	    16

enum pr_status {
	PR_NEED_MORE, /* the head is not complete yet: feed more */
	PR_DONE,      /* a valid request: see pr_request() */
	PR_ERROR,     /* refuse: send pr_error_status() with pr_error_reason(), then close */
};

enum pr_kind {
	PR_CONNECT,  /* CONNECT host:port: after the head, a byte tunnel */
	PR_ABSOLUTE, /* METHOD http://host[:port]/path: forward head, then content_length bytes */
	PR_ORIGIN,   /* METHOD /path: for the credential broker, which picks the upstream itself */
};

/* Valid after PR_DONE until pr_free; the pointers point into the parser's own buffers. */
struct pr_request {
	enum pr_kind kind;
	char method[PR_METHOD_MAX];
	char host[AL_HOST_MAX];	     /* normalized (al_host_normalize), IPv6 without brackets */
	enum al_host_kind host_kind; /* a literal is allowed only if listed literally */
	uint16_t port;		     /* CONNECT: always given; absolute-form: default 80; origin-form: 0 */
	/* PR_ABSOLUTE and PR_ORIGIN (NULL / 0 for CONNECT). Origin-form has no host: host is ""
	 * and port 0; path is the target exactly as sent (the broker checks it). */
	const char *path; /* origin-form target, "/..." (NUL-terminated) */
	/* The head to send upstream, to its final CRLF. Absolute-form: request line, Host and the
	 * client's headers. Origin-form: the client's headers only (no request line, no Host): the
	 * broker writes those itself. Both end in "Connection: close\r\n\r\n". */
	const char *head;
	size_t head_len;
	uint64_t content_length; /* request body bytes that follow the head (0: none) */
};

struct pr_state; /* opaque; one per client connection */

/* max_head: the most bytes the head may have (0: PR_DEFAULT_MAX_HEAD); memory is allocated
 * here, once, and bounded by about twice that. -EINVAL outside [PR_MIN_MAX_HEAD, PR_MAX_MAX_HEAD]. */
int pr_new(size_t max_head, struct pr_state **out);
void pr_free(struct pr_state *st);

/*
 * Takes up to len bytes of what the client sent. *consumed (always <= len) says how many
 * belong to the head; on PR_DONE the rest of buf (TLS bytes after a CONNECT, a request
 * body) is the caller's to forward. Once PR_DONE or PR_ERROR, further calls consume nothing
 * and return the same status.
 */
enum pr_status pr_feed(struct pr_state *st, const char *buf, size_t len, size_t *consumed);

const struct pr_request *pr_request(const struct pr_state *st); /* NULL unless PR_DONE */
int pr_error_status(const struct pr_state *st);			/* 400, 405, 431, 501, 505; 0 unless PR_ERROR */
const char *pr_error_reason(const struct pr_state *st);		/* short, static; NULL unless PR_ERROR */

/* An RFC 9110 token (a header name, a method, an auth scheme): non-empty, tchars only. */
bool pr_is_token(const char *s, size_t n);

#endif
