/* fdpass.c — SCM_RIGHTS send and receive of a few descriptors. */
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

int al_send_fds(int sock, const int *fds, int n, char tag)
{
	if (sock < 0)
		return -EBADF;
	if (n < 0 || n > AL_FDPASS_MAX)
		return -EINVAL;
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	union fd_cmsg u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n > 0) { /* no descriptor: the tag alone, without an empty control message */
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
	}
	ssize_t s;
	while ((s = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return s == 1 ? 0 : s < 0 ? -errno : -EIO;
}

int al_send_fd(int sock, int fd, char tag)
{
	return al_send_fds(sock, &fd, 1, tag);
}

int al_recv_fds(int sock, int *fds, int max, char *tag, bool wait)
{
	struct iovec iov = {.iov_base = tag, .iov_len = 1};
	union fd_cmsg u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t s;
	while ((s = recvmsg(sock, &msg, (wait ? 0 : MSG_DONTWAIT) | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR && wait)
		;
	if (s != 1)
		return -ENOENT;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	if (!cm)
		return 0;
	if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
		return -EPROTO;
	int n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * (size_t)(n < max ? n : max));
	/* More than asked for, or a truncated control message: what arrived is closed, none kept. */
	if (n > max || (msg.msg_flags & MSG_CTRUNC)) {
		int all[AL_FDPASS_MAX];
		memcpy(all, CMSG_DATA(cm), sizeof(int) * (size_t)(n < AL_FDPASS_MAX ? n : AL_FDPASS_MAX));
		for (int i = 0; i < n && i < AL_FDPASS_MAX; i++)
			close(all[i]);
		return -EPROTO;
	}
	return n;
}

int al_recv_fd(int sock, char *tag)
{
	int fd, n = al_recv_fds(sock, &fd, 1, tag, false);
	return n == 1 ? fd : n < 0 ? n : -EPROTO;
}
