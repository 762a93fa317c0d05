/* addrclass.h — may the egress proxy connect to this resolved address? Pure classification of
 * IPv4/IPv6 addresses into forbidden ranges (loopback, private, link-local/metadata, ...). */
#ifndef AL_NETWORK_ADDRCLASS_H
#define AL_NETWORK_ADDRCLASS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "network/allowlist.h"

/*
 * The class of an address. reason is NULL for an ordinary public address, else a short
 * static string for the audit record: "unspecified", "loopback", "private", "cgnat",
 * "link-local/metadata", "link-local", "metadata", "multicast", "broadcast", "reserved",
 * "documentation", "benchmarking", "teredo".
 * hard: not even allow_private can open it (unspecified, multicast, broadcast: never a
 * destination a TCP connection can sensibly have; 0.0.0.0 and :: reach the host itself).
 * embedded/v4: an IPv6 form that carries an IPv4 address (::ffff:a.b.c.d, ::a.b.c.d,
 * ::ffff:0:a.b.c.d, 64:ff9b::a.b.c.d, 2002:aabb:ccdd::) was classified as that IPv4 address.
 */
struct ac_class {
	const char *reason;
	bool hard;
	bool embedded;
	struct in_addr v4;
};

struct ac_class ac_classify4(const struct in_addr *a);
struct ac_class ac_classify6(const struct in6_addr *a);

/*
 * The proxy's verdict: NULL when the address may be connected to, else the reason it may not.
 * allow_private (may be NULL) exempts a forbidden, non-hard address inside one of its CIDRs;
 * an IPv6 form carrying an IPv4 address is exempt when either its IPv6 or its IPv4 form is.
 */
const char *ac_check4(const struct in_addr *a, const struct al_cidr_list *allow_private);
const char *ac_check6(const struct in6_addr *a, const struct al_cidr_list *allow_private);
/* Any sockaddr (as from getaddrinfo): other families and short lengths are refused. */
const char *ac_check(const struct sockaddr *sa, socklen_t len, const struct al_cidr_list *allow_private);

#endif
