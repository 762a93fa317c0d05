/* ports.h — the pure part of a sandbox's ports: its listening sockets read from /proc/net/tcp and tcp6. */
#ifndef AL_MANAGER_PORTS_H
#define AL_MANAGER_PORTS_H

#include <stdbool.h>
#include <stddef.h>

#include "manager/api.h"

/* Appends to out[*n..cap) each LISTEN socket of text (a /proc/net/tcp table, tcp6 with v6) bound to
 * a loopback address or to any address; lines that do not parse are skipped (a table's header).
 * Returns how many were appended (at most cap - *n; *n is advanced). Allocates nothing. */
size_t ports_parse_tcp(const char *text, bool v6, struct srv_port_info *out, size_t *n, size_t cap);
/* Sorts v[0..n) by port then address, and drops repeats in place: the new count. */
size_t ports_sort_unique(struct srv_port_info *v, size_t n);

#endif
