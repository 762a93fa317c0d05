/* hold.c — a held sandbox's init: the namespaces, root and workspace stay; payloads come and go.
 *
 *   manager ──ctl socket (SEQPACKET)──▶ init (pid 1 of the sandbox, sandbox root)
 *      request: a spare, please (flags: without the sandbox's network)       (execmsg.h)
 *      reply:   errno, or the spare: its pidfd, its payload's socket, its status pipe
 *      request: a socket, please (family)  reply: errno, or a TCP socket of the sandbox's network
 *                                         │ clone3(CLONE_NEWPID | CLONE_NEWNS [| CLONE_NEWNET])
 *                                         ▼
 *                                  exec init: pid 1 of a nested pid namespace, its own /proc, with a spare payload
 *                                  (payload.c) already confined — rlimits, ids, no capabilities,
 *                                  no_new_privs, Landlock, seccomp — and waiting on its socket.
 *   manager ──the exec request (argv, env, cwd + stdout, stderr [, stdin])──▶ spare payload
 *           ◀──with NX_TTY: the master of a pty the spare opened in the sandbox's devpts──
 *                                  Once the payload is reaped, the exec init kills and reaps whatever
 *                                  it left behind (a setsid double-fork daemon included), then
 *                                  reports the payload's status and usage, and exits: the exec is
 *                                  over with the record, not with that exit (nat_reap_payload).
 *
 * So files persist between execs (the workspace tmpfs belongs to init's mount namespace) and
 * processes do not. The manager asks for the next spare as soon as it has handed an exec over
 * (a sandbox nobody uses holds none), and an exec then costs one message and an execve: init is
 * not on its path. The manager kills one exec through its pidfd and the whole sandbox by closing
 * the control socket (init exits; PDEATHSIG covers the manager's own death and takes the spares
 * with init). Nothing here allocates.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "kit/caps.h"
#include "kit/channel.h"
#include "kit/forkmm.h"
#include "child.h"
#include "execmsg.h"
#include "kit/net.h"
#include "kit/pidfd.h"
#include "policy/policy.h"
#include "kit/rawsys.h"
#include "util/fdpass.h"

/* The exec init: pid 1 of its own pid namespace. It vforks the spare payload at once and then
 * reaps it, reporting on the status pipe it was made with. Killing it (the deadline) ends the pid
 * namespace. own_net: the spare has a network namespace of its own (an exec without the
 * sandbox's network), whose lo it brings up as "none" promises. */
static _Noreturn void spare_init_main(struct nat_child *c, int payload_sock, int status_w, bool own_net)
{
	/* The sandbox's init going away takes every exec and spare with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	close(c->ctl_sock);
	close(c->status_fd);
	c->ctl_sock = -1;
	c->status_fd = status_w;
	/* The payload inherits our dispositions and mask: all defaults (nat_hold_main), SIGCHLD too. */
	signal(SIGCHLD, SIG_DFL);
	/* Safe: this namespace is new and empty, owned by the sandbox's user namespace (so init's
	 * capabilities there suffice); lo is all it will ever hold. */
	int r;
	if (own_net && (r = net_lo_up()) < 0)
		nat_die(c, NS_NET, -r, "lo of the exec's own network namespace");
	/* A /proc of this exec's own pid namespace (we are its pid 1, in a mount namespace of our
	 * own): with the sandbox's /proc, /proc/self named a pid of the outer namespace, ps failed
	 * ("lookup self") and showed the sandbox's other inits. Mounted over the sandbox's /proc,
	 * which stays beneath it unreachable (the payload holds no capability to unmount); Landlock's
	 * read-only /proc rule still covers it (the walk up passes the old mount's root). Read-only
	 * as the sandbox's own (no /proc/self/mem writes, no oom_score_adj games). */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
		nat_die(c, NS_PROC, errno, "/proc of the exec");
	/* vfork: the payload borrows this process's memory until its execve, which then has no copy
	 * of a supervisor-sized address space to tear down (that would be on every exec's path). We
	 * stay suspended until then, which costs nothing: there is nothing to do before the payload
	 * runs. The payload writes only its own copy of c and the request buffers, which we do not use. */
	struct nat_child pc = *c;
	pid_t pid = vfork(); // NOLINT(clang-analyzer-security.insecureAPI.vfork): suspending us is the point (above)
	if (pid < 0)
		_exit(1); /* the manager sees the spare gone when it hands a request over */
	if (pid == 0)
		// NOLINTNEXTLINE(clang-analyzer-unix.Vfork): ends in execve or _exit, writes only pc
		nat_spare_payload(&pc, payload_sock);
	close(payload_sock);
	nat_reap_payload(c, pid);
}

/* One spare for the manager: the reply carries 0 and [pidfd, payload socket, status pipe], or
 * an errno. ns: CLONE_NEWPID | CLONE_NEWNS (for the exec's own /proc), plus CLONE_NEWNET for an
 * exec without the sandbox's network. Init keeps nothing of it: the manager hands requests to the
 * payload directly, kills the exec through the pidfd and reads its end from the status pipe. */
static void serve_spare(struct nat_child *c, uint64_t ns)
{
	struct nx_reply r = {.err = 0};
	int b[2] = {-1, -1}, st[2] = {-1, -1}, pidfd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, b) < 0 || pipe2(st, O_CLOEXEC) < 0) {
		r.err = errno;
		goto out;
	}
	pid_t pid = pfd_clone3(ns, &pidfd, -1);
	if (pid == 0) {
		close(b[0]);
		close(st[0]);
		spare_init_main(c, b[1], st[1], ns & CLONE_NEWNET);
	}
	if (pid < 0)
		r.err = (int)-pid;
out:;
	int fds[3] = {pidfd, b[0], st[0]};
	(void)nx_send(c->ctl_sock, (char *)&r, sizeof(r), fds, r.err ? 0 : 3);
	int all[] = {pidfd, b[0], b[1], st[0], st[1]};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i] >= 0)
			close(all[i]);
}

/*
 * A TCP socket made here, in the sandbox's network namespace, for the manager's port proxy: a
 * socket keeps the namespace it was made in, so the manager connects it to 127.0.0.1:PORT of the
 * sandbox's loopback without entering the namespace (which an ordinary user's server could not:
 * setns needs CAP_SYS_ADMIN over the namespace's owner, the sandbox's user namespace, held only by
 * us). Safe: the socket is unconnected, and the namespace holds lo (and, under an allowlist, the
 * egress proxy's listener) and no route out, so it reaches nothing but the sandbox's own loopback;
 * the manager, not the sandbox, chooses the address. socket() allocates nothing of ours and never
 * blocks; the descriptor is ours only until it is sent.
 */
static void serve_socket(struct nat_child *c, uint32_t family)
{
	struct nx_reply r = {.err = 0};
	int fd = -1;
	if (family != AF_INET && family != AF_INET6)
		r.err = EAFNOSUPPORT;
	else if ((fd = socket((int)family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		r.err = errno;
	(void)nx_send(c->ctl_sock, (char *)&r, sizeof(r), &fd, r.err ? 0 : 1);
	if (fd >= 0)
		close(fd);
}

/* Every exec init is a fork of ours, and we are a copy of the supervisor with each library it
 * loaded (TLS, JSON, YAML, archives... about a hundred mappings in a dynamically linked one): each
 * fork copied them all and each exec init's exit tore them down, for code that neither it, its
 * payload nor we run. We keep this code's own object, the C library and the dynamic loader, and
 * all anonymous memory (the heap holds the policy the payload reads); the rest is unmapped. Best
 * effort: where the listing cannot be read, everything stays, as before. */
static void shed_libraries(const struct nat_child *c)
{
	if (!c->shed_libs)
		return;
	/* The C library's functions as this code reaches them (through its GOT): a library standing
	 * in for some of them is kept with it. The loader last: 0 when statically linked. */
	uintptr_t keep[] = {(uintptr_t)nat_spare_payload,
			    (uintptr_t)execve,
			    (uintptr_t)open,
			    (uintptr_t)memcpy,
			    (uintptr_t)sigaction,
			    (uintptr_t)getauxval(AT_BASE)};
	size_t n = sizeof(keep) / sizeof(keep[0]);
	(void)fm_shed_objects(keep, keep[n - 1] ? n : n - 1);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HOLD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HOLD_SANITIZED 1
#endif
#endif

/* Only where this code was bound at load (airlock's own binaries are linked -z now): a lazily
 * bound call's first use looks its symbol up through every library, which an exec init would no
 * longer have. The C library's own lazy slots are for the allocator and the loader's internals,
 * which nothing after the fork calls (nothing there allocates). Never with a preloaded library
 * (it may stand in for any call of ours) nor in a sanitizer's build (its runtime, a library,
 * checks every memory access). */
bool nat_hold_can_shed(void)
{
#ifdef HOLD_SANITIZED
	return false;
#else
	const char *preload = getenv("LD_PRELOAD");
	return !(preload && *preload) && fm_bound_now((uintptr_t)nat_spare_payload);
#endif
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
	/* Once here what every spare payload would otherwise do for itself (64 sigaction calls and
	 * a credential commit per capability, each): the supervisor's signal dispositions and mask
	 * go (handlers of its code were never ours to run), and so does the capability bounding set
	 * — it only bounds what an execve may gain, and init never execs; its own capabilities stay.
	 * The payload still empties the bounding set and checks every capability
	 * (caps_drop_bounding), so a failure here costs time, never a protection. */
	mon_reset_signals();
	(void)caps_drop_bounding();
	shed_libraries(c);
	/* Exec inits are never waited for here: the manager holds their pidfds and status pipes. */
	signal(SIGCHLD, SIG_IGN);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* An exec init's exit tears its mount namespace down, which waits for an RCU grace period
	 * (namespace_unlock): off every exec's path, since the exec is over with its status record,
	 * sent before that exit (nat_reap_payload). Init itself never waits for one here. */
	for (;;) {
		struct nx_spare_req q;
		int fds[NX_MAX_FDS], nfds = 0;
		ssize_t n = nx_recv(c->ctl_sock, (char *)&q, sizeof(q), fds, &nfds);
		for (int i = 0; i < nfds; i++)
			close(fds[i]); /* a spare request carries none */
		if (n == 0 || (n < 0 && n != -EMSGSIZE))
			_exit(0); /* the manager closed the sandbox (or died): everything in it goes */
		if (n == (ssize_t)sizeof(q) && q.magic == NX_SOCK_MAGIC) {
			serve_socket(c, q.flags);
			continue;
		}
		if (n != (ssize_t)sizeof(q) || q.magic != NX_SPARE_MAGIC || (q.flags & ~NX_NONET)) {
			struct nx_reply r = {.err = EPROTO};
			(void)send(c->ctl_sock, &r, sizeof(r), MSG_NOSIGNAL);
			continue;
		}
		serve_spare(c, CLONE_NEWPID | CLONE_NEWNS | ((q.flags & NX_NONET) ? CLONE_NEWNET : 0));
	}
}
