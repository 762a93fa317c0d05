/* hold.c — a held sandbox's init: the namespaces, root and workspace stay; payloads come and go.
 *
 *   manager ──ctl socket (SEQPACKET)──▶ init (pid 1 of the sandbox, sandbox root)
 *      request: argv, env, cwd + stdout, stderr, status pipe [, stdin]     (execmsg.h)
 *      reply:   errno, and the exec's pidfd
 *                                         │ clone3(CLONE_NEWPID), made ahead of the request
 *                                         ▼
 *                                  exec init: pid 1 of a nested pid namespace, with a spare payload
 *                                  (payload.c) already confined — rlimits, ids, no capabilities,
 *                                  no_new_privs, Landlock, seccomp — and waiting for the request.
 *                                  The exec init reports the payload's status and usage, exits, and
 *                                  the kernel kills whatever the payload left behind (a setsid
 *                                  double-fork daemon included).
 *
 * So files persist between execs (the workspace tmpfs belongs to init's mount namespace) and
 * processes do not. A spare is made after each exec is handed over (so a sandbox nobody uses holds
 * no spare, and the next exec costs little more than an execve); when there is none, or it died
 * (an OOM kill), one is made on the spot. The manager kills one exec through its pidfd and the
 * whole sandbox by closing the control socket (init exits; PDEATHSIG covers the manager's own
 * death and takes the spare with init). Nothing here allocates: requests are decoded in place.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "child.h"
#include "execmsg.h"
#include "pidfd.h"
#include "policy/policy.h"
#include "rawsys.h"
#include "util/fdpass.h"

union nx_cmsg1 {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

static void reply(int sock, int err, int pidfd)
{
	struct nx_reply r = {.err = err};
	if (pidfd < 0) {
		(void)send(sock, &r, sizeof(r), MSG_NOSIGNAL);
		return;
	}
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof(r)};
	union nx_cmsg1 u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = CMSG_SPACE(sizeof(int))};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pidfd, sizeof(int));
	(void)sendmsg(sock, &msg, MSG_NOSIGNAL);
}

/* A spare: an exec init and its confined payload, waiting for a request. pidfd < 0: none. */
struct spare {
	int pidfd;
	int init_sock;	  /* the exec init learns the status pipe here */
	int payload_sock; /* the payload gets the request itself here */
};

/* The exec init: pid 1 of its own pid namespace. It forks the spare payload at once, then waits to
 * learn where to report, and reaps. Killing it (the deadline) ends the pid namespace. */
static _Noreturn void spare_init_main(struct nat_child *c, int init_sock, int payload_sock)
{
	/* The sandbox's init going away takes every exec and spare with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	close(c->ctl_sock);
	close(c->status_fd);
	c->ctl_sock = c->status_fd = -1;
	signal(SIGCHLD, SIG_DFL);
	/* vfork: the payload borrows this process's memory until its execve, which then has no copy
	 * of a supervisor-sized address space to tear down (that would be on every exec's path). We
	 * stay suspended until then: the status pipe waits in the socket. The payload writes only its
	 * own copy of c and the request buffers, which we do not use. */
	struct nat_child pc = *c;
	pid_t pid = vfork(); // NOLINT(clang-analyzer-security.insecureAPI.vfork): suspending us is the point (above)
	if (pid < 0)
		_exit(1); /* init sees the spare gone when it hands a request over */
	if (pid == 0)
		nat_spare_payload(&pc, payload_sock); // NOLINT(clang-analyzer-unix.Vfork): ends in execve or _exit, writes only pc
	close(payload_sock);
	/* Blocks until the spare is used (al_recv_fd would not wait). */
	char tag;
	int fds[NX_MAX_FDS], nfds = 0;
	if (nx_recv(init_sock, &tag, 1, fds, &nfds) <= 0 || nfds != 1)
		_exit(0); /* never used */
	close(init_sock);
	c->status_fd = fds[0];
	nat_reap_payload(c, pid);
}

static void drop_spare(struct spare *s)
{
	if (s->pidfd >= 0) {
		pfd_send_signal(s->pidfd, SIGKILL);
		close(s->pidfd);
	}
	if (s->init_sock >= 0)
		close(s->init_sock);
	if (s->payload_sock >= 0)
		close(s->payload_sock);
	*s = (struct spare){.pidfd = -1, .init_sock = -1, .payload_sock = -1};
}

/* ns: CLONE_NEWPID, plus CLONE_NEWNET for an exec without the sandbox's network. */
static int make_spare(struct nat_child *c, struct spare *s, uint64_t ns)
{
	int a[2], b[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, a) < 0)
		return -errno;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, b) < 0) {
		int e = errno;
		close(a[0]);
		close(a[1]);
		return -e;
	}
	int pidfd = -1;
	pid_t pid = pfd_clone3(ns, &pidfd, -1);
	if (pid == 0) {
		close(a[0]);
		close(b[0]);
		spare_init_main(c, a[1], b[1]);
	}
	close(a[1]);
	close(b[1]);
	if (pid < 0) {
		close(a[0]);
		close(b[0]);
		return (int)pid;
	}
	*s = (struct spare){.pidfd = pidfd, .init_sock = a[0], .payload_sock = b[0]};
	return 0;
}

/* The request to the spare's payload, the status pipe to its init: 0, or -errno when it died. */
static int hand_over(const struct spare *s, char *buf, size_t n, const int *fds, int nfds)
{
	int r = nx_send(s->payload_sock, buf, n, fds, nfds);
	return r < 0 ? r : al_send_fd(s->init_sock, fds[2], 's');
}

static void serve_one(struct nat_child *c, struct spare *s, char *buf, ssize_t n, int *fds, int nfds)
{
	/* Static: 16 KiB of pointers is better off init's small stack. Init serves one request at a time. */
	static struct nx_view v;
	int err = EPROTO;
	bool started = false;
	struct spare once = {.pidfd = -1, .init_sock = -1, .payload_sock = -1}, *use = s;
	if (nx_decode(buf, (size_t)n, &v) == 0 && nfds == ((v.flags & NX_STDIN) ? 4 : 3)) {
		/* Without the sandbox's network: a spare of its own in a new, empty network namespace
		 * (a payload cannot leave the one it was made in). */
		if (v.flags & NX_NONET)
			use = &once;
		/* A spare that died since it was made (an OOM kill) is replaced once. */
		for (int attempt = 0; attempt < 2 && !started; attempt++) {
			int r = use->pidfd >= 0 ? 0 : make_spare(c, use, use == s ? CLONE_NEWPID : CLONE_NEWPID | CLONE_NEWNET);
			if (r < 0) {
				err = -r;
				break;
			}
			if (hand_over(use, buf, (size_t)n, fds, nfds) == 0) {
				started = true;
			} else {
				drop_spare(use);
				err = EAGAIN;
			}
		}
	}
	reply(c->ctl_sock, started ? 0 : err, started ? use->pidfd : -1);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (started) {
		/* Now the exec is the supervisor's: forget it without a signal, and prepare the next. */
		close(use->pidfd);
		close(use->init_sock);
		close(use->payload_sock);
		*use = (struct spare){.pidfd = -1, .init_sock = -1, .payload_sock = -1};
		if (use == s)
			(void)make_spare(c, s, CLONE_NEWPID);
	}
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
	struct spare spare = {.pidfd = -1, .init_sock = -1, .payload_sock = -1};
	for (;;) {
		int fds[NX_MAX_FDS], nfds = 0;
		ssize_t n = nx_recv(c->ctl_sock, buf, sizeof(buf), fds, &nfds);
		if (n == 0 || (n < 0 && n != -EMSGSIZE))
			_exit(0); /* the manager closed the sandbox (or died): everything in it goes */
		if (n < 0) {
			reply(c->ctl_sock, EMSGSIZE, -1);
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
			continue;
		}
		serve_one(c, &spare, buf, n, fds, nfds);
	}
}
