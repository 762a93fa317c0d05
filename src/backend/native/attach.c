/* attach.c — an exec in a held sandbox, seen from the supervisor: one request to the sandbox's
 * init (hold.c), which answers with the pidfd of the exec's own init. From there the supervisor
 * runs the job as any other: output pipes, status records, deadline (SIGKILL through the pidfd
 * ends the exec's pid namespace), verdict. The exec is not our child, so its usage comes in the
 * status record rather than from waitid. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/backend.h"
#include "execmsg.h"
#include "util/cleanup.h"
#include "util/error.h"

union at_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* The reply: 0 and *pidfd, or -errno (init's refusal, or -EPIPE when init is gone). */
static int recv_reply(int sock, int *pidfd)
{
	struct nx_reply r = {.err = EPROTO};
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof(r)};
	union at_cmsg u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n == 0 ? -EPIPE : -errno;
	int fd = -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (n != sizeof(r) || (r.err == 0 && fd < 0)) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	if (r.err) {
		if (fd >= 0)
			close(fd);
		return -r.err;
	}
	*pidfd = fd;
	return 0;
}

static const char *net_name(int posture)
{
	static const char *const names[] = {[AL_NET_NONE] = "none", [AL_NET_LOOPBACK] = "loopback",
					    [AL_NET_HOST] = "host", [AL_NET_ALLOW] = "allow"};
	return posture >= 0 && posture <= AL_NET_ALLOW ? names[posture] : "?";
}

int be_attach_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct al_error *err)
{
	struct be_held *h = be_sandbox_held(p->attach);
	if (!h || h->ctl_sock < 0)
		return al_err(err, ESRCH, "setup: the sandbox is gone");
	/* The sandbox's network was fixed when it was made: an exec can go without it, never beyond. */
	if (p->net != AL_NET_NONE && (int)p->net != h->net)
		return al_err(err, EPERM, "setup: this sandbox was made with network %s: an exec in it can have that or none, not %s",
			      net_name(h->net), net_name((int)p->net));
	uint32_t flags = (io->stdin_fd >= 0 ? NX_STDIN : 0) | (p->net == AL_NET_NONE && h->net != AL_NET_NONE ? NX_NONET : 0);
	char **envp = pol_build_envp(p);
	cleanup_free char *msg = malloc(NX_MAX_MSG);
	if (!envp || !msg) {
		pol_free_strv(envp);
		return al_err(err, ENOMEM, "out of memory");
	}
	int len = nx_encode(p->argv, envp, p->cwd ? p->cwd : AL_WORKSPACE, flags, msg,
			    NX_MAX_MSG);
	pol_free_strv(envp);
	if (len < 0)
		return al_err(err, -len, "setup: the command and its environment exceed %d bytes", NX_MAX_MSG);
	int status_p[2] = {-1, -1}, pidfd = -1, r;
	if (pipe2(status_p, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "setup: pipe");
	int fds[4] = {io->stdout_fd, io->stderr_fd, status_p[1], io->stdin_fd};
	pthread_mutex_lock(&h->lock);
	r = nx_send(h->ctl_sock, msg, (size_t)len, fds, io->stdin_fd >= 0 ? 4 : 3);
	if (r == 0)
		r = recv_reply(h->ctl_sock, &pidfd);
	pthread_mutex_unlock(&h->lock);
	close(status_p[1]);
	if (r < 0) {
		close(status_p[0]);
		if (r == -EPIPE || r == -ECONNRESET)
			return al_err(err, ESRCH, "setup: the sandbox is gone (its init exited)");
		return al_err_sys(err, -r, "setup: starting the command in the sandbox");
	}
	out->pid = 0;
	out->foreign = true;
	out->pidfd = pidfd;
	out->status_fd = status_p[0];
	out->kill_signal = SIGKILL; /* the exec's init: its pid namespace dies with it */
	out->enforced_json = h->enforced_json ? strdup(h->enforced_json) : NULL;
	out->backend = "native";
	out->seccomp_kills = h->seccomp_kills;
	return 0;
}
