/* fdpass.c — a message and a few descriptors across a unix socket (SCM_RIGHTS). */
#include "util/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

union fd_cmsg {
	char buf[CMSG_SPACE(sizeof(int) * AL_FDPASS_MAX)];
	struct cmsghdr align;
};

int al_send_msg(int sock, void *msg, size_t len, const int *fds, int n)
{
	if (sock < 0)
		return -EBADF;
	if (n < 0 || n > AL_FDPASS_MAX)
		return -EINVAL;
	struct iovec iov = {.iov_base = msg, .iov_len = len};
	union fd_cmsg u;
	memset(&u, 0, sizeof(u));
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n > 0) { /* none: the message alone, without an empty control message */
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
	}
	ssize_t s;
	while ((s = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return s == (ssize_t)len ? 0 : s < 0 ? -errno : -EIO;
}

ssize_t al_recv_msg(int sock, void *buf, size_t cap, int *fds, int max, int *nfds, bool wait)
{
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	union fd_cmsg u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	while ((n = recvmsg(sock, &m, (wait ? 0 : MSG_DONTWAIT) | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	*nfds = 0;
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++, (*nfds)++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[*nfds] = fd;
			else
				close(fd);
		}
	}
	if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EMSGSIZE;
	return n;
}

int al_send_fds(int sock, const int *fds, int n, char tag)
{
	return al_send_msg(sock, &tag, 1, fds, n);
}

int al_send_fd(int sock, int fd, char tag)
{
	return al_send_fds(sock, &fd, 1, tag);
}

int al_recv_fds(int sock, int *fds, int max, char *tag, bool wait)
{
	int n = 0;
	ssize_t len = al_recv_msg(sock, tag, 1, fds, max, &n, wait);
	if (len == 1 && n <= max)
		return n;
	/* Nothing, the peer gone, or more descriptors than asked for: none is kept. */
	for (int i = 0; i < n && i < max; i++)
		close(fds[i]);
	return len == 1 || len == -EMSGSIZE ? -EPROTO : -ENOENT;
}

int al_recv_fd(int sock, char *tag)
{
	int fd, n = al_recv_fds(sock, &fd, 1, tag, false);
	return n == 1 ? fd : n < 0 ? n : -EPROTO;
}
