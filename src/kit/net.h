/* net.h — the network namespace's own interfaces (the loopback posture brings lo up). */
#ifndef AL_KIT_NET_H
#define AL_KIT_NET_H

/* Sets lo up in the current network namespace (needs CAP_NET_ADMIN there). No allocation. */
int net_lo_up(void);

/* Moves the caller into a new network namespace (owned by its user namespace), brings lo up there
 * and returns a descriptor of that namespace (O_CLOEXEC, for setns) or -errno. No allocation. */
int net_new_ns_lo_up(void);

/* A TCP listening socket on 127.0.0.1:port of this network namespace (the egress proxy's,
 * served from outside). Returns the fd or -errno. */
int net_listen_lo(unsigned short port);

/* A socket of type SOCK_STREAM (listening) or SOCK_DGRAM bound to addr:port (addr in host order,
 * INADDR_ANY for every address) of this network namespace. Returns the fd or -errno. No allocation. */
int net_bind_socket(int type, unsigned addr, unsigned short port);

#endif
