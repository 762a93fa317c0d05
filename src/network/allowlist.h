/* allowlist.h — the egress proxy's policy data: which host names and ports may be reached
 * (the allowlist) and which otherwise-forbidden address ranges an operator opened (allow_private).
 * Pure: parsing and matching only, no resolution, no I/O. */
#ifndef AL_NETWORK_ALLOWLIST_H
#define AL_NETWORK_ALLOWLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"

/* 253 characters of name plus the NUL; IPv6 text (INET6_ADDRSTRLEN = 46) fits as well. */
#define AL_HOST_MAX 254
/* The port a bare allowlist entry allows: CONNECT is for TLS. */
#define AL_ALLOW_DEFAULT_PORT 443

enum al_host_kind {
	AL_HOST_NAME, /* a DNS name: lower case, no trailing dot */
	AL_HOST_IPV4, /* a dotted-quad literal, canonical text */
	AL_HOST_IPV6, /* an IPv6 literal without brackets, canonical (inet_ntop) text */
};

/*
 * The one definition of a valid host, shared by the allowlist and the request parser so the
 * two can never disagree about what a name means. s[0..len) is one host without brackets.
 * Names: only [A-Za-z0-9.-], labels 1-63 characters not starting or ending with '-', at most
 * 253 characters; lower-cased, one trailing dot dropped. IPv4 only as strict dotted quad
 * (no octal, hex or short forms); a name whose last label is numeric ("127.1", "0x7f.1",
 * "2130706433") is refused, because some resolvers would read it as an address.
 * Returns 0 and the normalized text in out, or -EINVAL.
 */
int al_host_normalize(const char *s, size_t len, char out[AL_HOST_MAX], enum al_host_kind *kind);

/* Decimal 1-65535, no sign, no leading zero. Returns 0 or -EINVAL. */
int al_port_parse(const char *s, size_t len, uint16_t *out);

/*
 * "host", "host:port", "[v6]" or "[v6]:port" (and, only when bare_v6, an unbracketed IPv6
 * literal without a port). *port is 0 when none was given. On -EINVAL, *why says what is wrong.
 */
int al_hostport_parse(const char *s, size_t len, bool bare_v6, char host[AL_HOST_MAX], enum al_host_kind *kind,
		      uint16_t *port, const char **why);

/* ---- the allowlist ------------------------------------------------------------------ */

struct al_allowlist; /* opaque */

int al_allowlist_new(struct al_allowlist **out);
void al_allowlist_free(struct al_allowlist *al);
/*
 * Adds "HOST[,HOST...]" (each optionally with request rules, below): pypi.org, *.pythonhosted.org (subdomains only, not the bare domain),
 * either with :PORT (default 443; a port other than the default only when listed), or an IP
 * literal (1.2.3.4, [2001:db8::1]:8443, 2001:db8::1). Surrounding blanks of an entry are
 * ignored. All or nothing: on -EINVAL nothing was added and err names the bad entry.
 */
int al_allowlist_add(struct al_allowlist *al, const char *spec, struct al_error *err);
size_t al_allowlist_count(const struct al_allowlist *al);
/* A deep copy (the proxy keeps its own; the policy is not retained by a job). */
int al_allowlist_clone(const struct al_allowlist *al, struct al_allowlist **out);
/* May a CONNECT to host:port go ahead? host is a name or an IP literal without brackets.
 * Default deny: NULL, malformed hosts and port 0 never match. */
bool al_allow_match(const struct al_allowlist *al, const char *host, uint16_t port);
/* Is the name (not a literal) allowed on some port? What the sandbox's resolver answers for. */
bool al_allow_name(const struct al_allowlist *al, const char *name);
/* ---- request rules: "[METHOD|METHOD... ]HOST[:PORT][/PREFIX]" --------------------------
 * An entry may name methods and a path prefix ("GET|HEAD pypi.org/simple/"). airlock can hold a
 * request to them only where it sees the request: TLS it terminates, or plain HTTP. */
#define AL_RULE_PATH_MAX 128
/* The bit of a method the rules know (GET HEAD POST PUT PATCH DELETE OPTIONS), or 0. */
unsigned al_method_bit(const char *m, size_t n);
/* Whether every entry covering host:port has a rule (and one does): airlock must then see the
 * requests, so it terminates the TLS. One entry without a rule opens every request. */
bool al_allow_sees(const struct al_allowlist *al, const char *host, uint16_t port);
/* Whether a request target's path is plain: starts with '/', no dot segments, no "%2e", "%2f",
 * "%5c" or '\\' before the query, printable. A prefix holds only over plain paths. */
bool al_path_plain(const char *path, size_t len);
/* May METHOD target go to host:port? 0, with rule the entry that permits it ("GET|HEAD
 * pypi.org:443/simple/"); -EACCES, or -EPERM when the path was not plain, with rule the host's
 * entries, ", "-joined (truncated to cap). */
int al_allow_request(const struct al_allowlist *al, const char *host, uint16_t port, const char *method,
		     const char *path, char *rule, size_t cap);
/* Whether some entry has a rule. */
bool al_allowlist_has_rules(const struct al_allowlist *al);
/* The i-th entry as text; whether it covers host:port. */
void al_rule_text(const struct al_allowlist *al, size_t i, char *out, size_t cap);
bool al_allow_match_entry(const struct al_allowlist *al, size_t i, const char *host, uint16_t port);

/* The distinct ports of the name entries (literals are reached by address, never captured), in
 * the order listed, into out[0..max): their number, or max + 1 when there are more. */
size_t al_allowlist_ports(const struct al_allowlist *al, uint16_t *out, size_t max);

/* ---- allow_private: CIDRs exempt from the forbidden-address check ------------------ */

struct al_cidr_list; /* opaque */

int al_cidr_list_new(struct al_cidr_list **out);
void al_cidr_list_free(struct al_cidr_list *l);
/* Adds "CIDR[,CIDR...]": 10.0.0.0/8, fd00::/8, 192.168.1.7/32, or a bare address (one host).
 * All or nothing; -EINVAL names the bad entry. */
int al_cidr_list_add(struct al_cidr_list *l, const char *spec, struct al_error *err);
size_t al_cidr_list_count(const struct al_cidr_list *l);
int al_cidr_list_clone(const struct al_cidr_list *l, struct al_cidr_list **out);
/* addr: 4 bytes (AF_INET) or 16 (AF_INET6), network order. NULL list contains nothing. */
bool al_cidr_list_contains(const struct al_cidr_list *l, int family, const void *addr);

#endif
