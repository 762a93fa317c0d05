/* resolve.h — the egress proxy's resolver: an operator's hosts(5) file first, then the system
 * resolver. Returns every address, so the caller can check each one before connecting to it. */
#ifndef AL_NETWORK_RESOLVE_H
#define AL_NETWORK_RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define RS_MAX_ADDRS 16

struct rs_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/*
 * Fills out[0..*n) with the addresses of name (a normalized DNS name or an IP literal) with
 * port set. hosts_file (may be NULL) is read on each call: a name it lists resolves only to
 * the addresses listed there. Returns 0, or -ENOENT (no such name), -EAGAIN (temporary
 * failure) or another -errno.
 */
int rs_resolve(const char *name, uint16_t port, const char *hosts_file, struct rs_addr out[RS_MAX_ADDRS], size_t *n);

/* Connects a new non-blocking TCP socket to a within timeout_ms. Returns the fd or -errno. */
int rs_connect(const struct rs_addr *a, int timeout_ms);

#endif
