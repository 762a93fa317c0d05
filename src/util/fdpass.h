/* fdpass.h — one descriptor across a unix socket (SCM_RIGHTS), without allocation (safe in init). */
#ifndef AL_UTIL_FDPASS_H
#define AL_UTIL_FDPASS_H

/* Sends fd with the one-byte tag. 0 or -errno. */
int al_send_fd(int sock, int fd, char tag);
/* Receives one descriptor (O_CLOEXEC) without blocking; *tag gets its byte. The fd, -ENOENT if
 * nothing was sent (or the peer is gone), or -EPROTO for a message without exactly one fd. */
int al_recv_fd(int sock, char *tag);

#endif
