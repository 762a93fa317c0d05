/* fdpass.h — a few descriptors across a unix socket (SCM_RIGHTS), without allocation (safe in init). */
#ifndef AL_UTIL_FDPASS_H
#define AL_UTIL_FDPASS_H

#include <stdbool.h>

#define AL_FDPASS_MAX 8 /* descriptors in one message */

/* Sends the one-byte tag with fds[0..n) (n ≤ AL_FDPASS_MAX; 0: the tag alone). 0 or -errno. */
int al_send_fds(int sock, const int *fds, int n, char tag);
/* al_send_fds of one descriptor. */
int al_send_fd(int sock, int fd, char tag);
/* Receives one message: *tag gets its byte, fds[] its descriptors (O_CLOEXEC). Waits for it when
 * wait, else returns at once. Their number (0 for a tag alone), -ENOENT if nothing came (or the
 * peer is gone), or -EPROTO for more than max descriptors (all closed) or a malformed message. */
int al_recv_fds(int sock, int *fds, int max, char *tag, bool wait);
/* Receives exactly one descriptor without waiting: the fd, -ENOENT if nothing was sent (or the
 * peer is gone), or -EPROTO for a message without exactly one fd. */
int al_recv_fd(int sock, char *tag);

#endif
