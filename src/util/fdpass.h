/* fdpass.h — a message and a few descriptors across a unix socket (SCM_RIGHTS), without
 * allocation (safe in init and in a spare payload). */
#ifndef AL_UTIL_FDPASS_H
#define AL_UTIL_FDPASS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define AL_FDPASS_MAX 8 /* descriptors in one message */

/* Sends msg[0..len) with fds[0..n) (n ≤ AL_FDPASS_MAX; 0: the message alone). 0, or -errno
 * (-EIO for a short send). */
int al_send_msg(int sock, void *msg, size_t len, const int *fds, int n);
/* Receives one message into buf[0..cap), waiting for it when wait: its length (0 at the peer's
 * end), -errno, or -EMSGSIZE when it or its descriptors were cut. *nfds is the number of
 * descriptors that came (O_CLOEXEC): the first max are in fds[], the others closed. */
ssize_t al_recv_msg(int sock, void *buf, size_t cap, int *fds, int max, int *nfds, bool wait);
/* al_send_msg of a one-byte tag. */
int al_send_fds(int sock, const int *fds, int n, char tag);
/* al_send_fds of one descriptor. */
int al_send_fd(int sock, int fd, char tag);
/* Receives a one-byte tag into *tag and its descriptors into fds[]: their number (0 for a tag
 * alone), -ENOENT if nothing came (or the peer is gone), or -EPROTO for more than max
 * descriptors or a malformed message (none kept). */
int al_recv_fds(int sock, int *fds, int max, char *tag, bool wait);
/* Receives exactly one descriptor without waiting: the fd, -ENOENT if nothing was sent (or the
 * peer is gone), or -EPROTO for a message without exactly one fd. */
int al_recv_fd(int sock, char *tag);

#endif
