/* hold.c — a held sandbox's init: the namespaces, root and workspace stay; payloads come and go.
 *
 *   manager ──ctl socket (SEQPACKET)──▶ init (pid 1 of the sandbox, sandbox root)
 *      request: argv, env, cwd + stdout, stderr, status pipe [, stdin]     (execmsg.h)
 *      reply:   errno, and the exec's pidfd
 *                                         │ clone3(CLONE_NEWPID)
 *                                         ▼
 *                                  exec init: pid 1 of a nested pid namespace; forks the payload
 *                                  exactly like a one-shot sandbox (nat_run_payload), reports its
 *                                  status and usage, exits — and the kernel kills whatever the
 *                                  payload left behind (a setsid double-fork daemon included).
 *
 * So files persist between execs (the workspace tmpfs belongs to init's mount namespace) and
 * processes do not. The manager kills one exec through its pidfd and the whole sandbox by closing
 * the control socket (init exits; PDEATHSIG covers the manager's own death). Nothing here
 * allocates: the request is decoded in place in a buffer on init's stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "child.h"
#include "execmsg.h"
#include "pidfd.h"
#include "policy/policy.h"
#include "util/fdpass.h"

#define NX_MAX_FDS 4

union nx_cmsg {
	char buf[CMSG_SPACE(sizeof(int) * NX_MAX_FDS)];
	struct cmsghdr align;
};

/* One request: its length (0 at EOF, -errno) and up to NX_MAX_FDS descriptors. */
static ssize_t recv_request(int sock, char *buf, size_t cap, int *fds, int *nfds)
{
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	union nx_cmsg u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	*nfds = 0;
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < NX_MAX_FDS)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EMSGSIZE;
	return n;
}

static void reply(int sock, int err, int pidfd)
{
	struct nx_reply r = {.err = err};
	if (pidfd < 0) {
		(void)send(sock, &r, sizeof(r), MSG_NOSIGNAL);
		return;
	}
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof(r)};
	union nx_cmsg u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = CMSG_SPACE(sizeof(int))};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pidfd, sizeof(int));
	(void)sendmsg(sock, &msg, MSG_NOSIGNAL);
}

static const char *env_path(char *const *envp)
{
	for (; *envp; envp++)
		if (strncmp(*envp, "PATH=", 5) == 0)
			return *envp + 5;
	return "/usr/bin:/bin";
}

/* The exec's init: pid 1 of its own pid namespace, with this request's argv, env and stdio. */
static _Noreturn void exec_main(struct nat_child *c, struct nx_view *v, const int *fds)
{
	/* The sandbox's init going away takes every exec with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	close(c->ctl_sock);
	close(c->status_fd);
	c->ctl_sock = -1;
	c->argv = v->argv;
	c->envp = v->envp;
	c->path = env_path(v->envp);
	c->cwd = v->cwd;
	c->stdout_fd = fds[0];
	c->stderr_fd = fds[1];
	c->status_fd = fds[2];
	c->stdin_fd = (v->flags & NX_STDIN) ? fds[3] : -1;
	nat_run_payload(c);
}

static void serve_one(struct nat_child *c, char *buf, ssize_t n, int *fds, int nfds)
{
	/* Static: 16 KiB of pointers is better off init's small stack. Init serves one request at a time. */
	static struct nx_view v;
	int pidfd = -1;
	if (nx_decode(buf, (size_t)n, &v) < 0 || nfds != ((v.flags & NX_STDIN) ? 4 : 3)) {
		reply(c->ctl_sock, EPROTO, -1);
	} else {
		pid_t pid = pfd_clone3(CLONE_NEWPID, &pidfd, -1);
		if (pid == 0)
			exec_main(c, &v, fds);
		reply(c->ctl_sock, pid < 0 ? -pid : 0, pid < 0 ? -1 : pidfd);
	}
	if (pidfd >= 0)
		close(pidfd);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

_Noreturn void nat_hold_main(struct nat_child *c)
{
	/* Creation runs no payload: its output pipes close now, so the supervisor sees EOF. */
	close(c->stdout_fd);
	close(c->stderr_fd);
	if (c->stdin_fd >= 0)
		close(c->stdin_fd);
	int ws = open(AL_WORKSPACE, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ws < 0)
		nat_die(c, NS_CHDIR, errno, AL_WORKSPACE);
	/* The manager's file API works beneath this descriptor (openat2 RESOLVE_BENEATH). */
	if (al_send_fd(c->ctl_sock, ws, 'w') < 0)
		_exit(0);
	close(ws);
	/* Exec inits are never waited for here: the manager holds their pidfds and status pipes. */
	signal(SIGCHLD, SIG_IGN);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	static char buf[NX_MAX_MSG];
	for (;;) {
		int fds[NX_MAX_FDS], nfds = 0;
		ssize_t n = recv_request(c->ctl_sock, buf, sizeof(buf), fds, &nfds);
		if (n == 0 || (n < 0 && n != -EMSGSIZE))
			_exit(0); /* the manager closed the sandbox (or died): everything in it goes */
		if (n < 0) {
			reply(c->ctl_sock, EMSGSIZE, -1);
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
			continue;
		}
		serve_one(c, buf, n, fds, nfds);
	}
}
