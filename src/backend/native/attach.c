/* attach.c — an exec in a held sandbox, seen from the supervisor: the request goes straight to a
 * spare payload the sandbox's init made ahead of time (hold.c), and the next spare is asked for at
 * once, so init is never on an exec's path. From there the supervisor runs the job as any other:
 * output pipes, status records, deadline (SIGKILL through the pidfd ends the exec's pid
 * namespace), verdict. The exec is not our child, so its usage comes in the status record rather
 * than from waitid. Each exec runs in a cgroup of its own beneath the sandbox's, which accounts
 * for it alone (peak memory, OOM kills, CPU time).
 *
 * Moving a process between cgroups is slow (each move may wait for an RCU grace period, and on v1
 * an exec's two processes move in three hierarchies), and so are mkdir and rmdir there: a worker
 * thread per sandbox does all of it off every exec's path (worker_main). While an exec runs, it
 * makes the next spare's cgroup (as init makes the spare), takes init's answer and moves the spare
 * in; once an exec is over, it removes that exec's cgroup after its exec init is gone. The next
 * exec then only sends its request. The worker ends after half a second without work. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "cgroup/cgroup.h"
#include "execmsg.h"
#include "kit/oomadj.h"
#include "kit/pidfd.h"
#include "util/cleanup.h"
#include "util/error.h"

#define NO_SPARE ((struct be_spare){.pidfd = -1, .sock = -1, .status = -1})

/* How long the worker waits for work before it ends (the next exec starts another): long enough
 * for a burst of execs, short because a live thread's stack is two more mappings that every
 * sandbox init forked meanwhile copies, and with it every spare of that sandbox. */
#define WORKER_IDLE_MS 500
/* How often it looks again for an ended exec's init to be gone. */
#define WORKER_DONE_POLL_MS 1

void be_held_init(struct be_held *h)
{
	h->spare = NO_SPARE;
	h->spare_asked = h->readying = h->worker = h->closing = false;
	h->spare_cg = h->work = NULL;
	h->ndone = 0;
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &a);
	pthread_condattr_destroy(&a);
}

static void spare_close(struct be_spare *s, bool kill)
{
	if (s->pidfd >= 0 && kill)
		pfd_send_signal(s->pidfd, SIGKILL);
	int fds[] = {s->pidfd, s->sock, s->status};
	for (size_t i = 0; i < AL_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	*s = NO_SPARE;
}

/* Under h->lock: until the worker is done readying the next spare (or, asked for, has it to
 * ready: taken here instead, its cgroup work would be on this exec's path). */
static void ready_wait(struct be_held *h)
{
	while (h->readying || (h->spare_asked && h->worker))
		pthread_cond_wait(&h->cv, &h->lock);
}

void be_held_lock_idle(struct be_held *h)
{
	pthread_mutex_lock(&h->lock);
	ready_wait(h);
}

void be_held_unlock(struct be_held *h)
{
	pthread_mutex_unlock(&h->lock);
}

static void done_remove(struct be_done *d)
{
	cg_destroy(d->cg); /* kills what is left (nothing: the exec's pid namespace is gone), removes */
	if (d->pidfd >= 0)
		close(d->pidfd);
}

void be_held_release(struct be_held *h)
{
	pthread_mutex_lock(&h->lock);
	h->closing = true;
	pthread_cond_broadcast(&h->cv);
	while (h->worker)
		pthread_cond_wait(&h->cv, &h->lock);
	pthread_mutex_unlock(&h->lock);
	/* Closing its socket is enough: the payload exits unused, and its exec init with it. */
	spare_close(&h->spare, false);
	/* Before the sandbox's own cgroup, which cannot go while they are there. */
	cg_destroy(h->spare_cg);
	h->spare_cg = NULL;
	for (int i = 0; i < h->ndone; i++)
		done_remove(&h->done[i]);
	h->ndone = 0;
	cg_destroy(h->work); /* empty now: its children, the execs' cgroups, are gone */
	h->work = NULL;
	pthread_cond_destroy(&h->cv);
}

static int spare_ask(struct be_held *h, uint32_t flags)
{
	struct nx_spare_req q = {.magic = NX_SPARE_MAGIC, .flags = flags};
	return nx_send(h->ctl_sock, (char *)&q, sizeof(q), NULL, 0);
}

/* init's answer to the oldest request: 0 and *s, or -errno (init's refusal, -EPIPE when it is gone). */
static int spare_recv(struct be_held *h, struct be_spare *s)
{
	struct nx_reply r = {.err = EPROTO};
	int fds[NX_MAX_FDS], nfds = 0;
	ssize_t n = nx_recv(h->ctl_sock, (char *)&r, sizeof(r), fds, &nfds);
	if (n == 0)
		return -EPIPE;
	if (n == (ssize_t)sizeof(r) && r.err == 0 && nfds == 3) {
		*s = (struct be_spare){.pidfd = fds[0], .sock = fds[1], .status = fds[2]};
		return 0;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return n < 0 ? (int)n : r.err > 0 ? -r.err : -EPROTO;
}

/* A spare for the next exec: the one asked for after the last exec (with its cgroup, when it was
 * readied), or a new one. */
static int spare_get(struct be_held *h, uint32_t flags, struct be_spare *s, struct cg_job **cg)
{
	*cg = NULL;
	if (h->spare_asked) { /* answers come in order: this one is the sandbox's own spare */
		h->spare_asked = false;
		struct be_spare got = NO_SPARE;
		if (spare_recv(h, &got) == 0)
			h->spare = got;
	}
	if (!flags && h->spare.pidfd >= 0) {
		*s = h->spare;
		*cg = h->spare_cg;
		h->spare = NO_SPARE;
		h->spare_cg = NULL;
		return 0;
	}
	int r = spare_ask(h, flags);
	return r < 0 ? r : spare_recv(h, s);
}

/* How long a spare's exec init may take to fork its payload (it does so at once: hold.c). */
#define SPARE_PAYLOAD_WAIT_MS 5000

/* The spare's payload, the only child of its exec init (init): its host pid once it is listed,
 * -ESRCH when the exec init is gone, -ETIMEDOUT. */
static pid_t spare_payload_pid(const struct be_spare *s, pid_t init)
{
	char path[80], buf[32];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)init, (int)init);
	for (long waited_us = 0, step = 20; waited_us < SPARE_PAYLOAD_WAIT_MS * 1000L; waited_us += step) {
		cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		long pid = n > 0 ? (buf[n] = 0, strtol(buf, NULL, 10)) : 0;
		if (pid > 0)
			return (pid_t)pid;
		struct pollfd pf = {.fd = s->pidfd, .events = POLLIN};
		if (n < 0 || poll(&pf, 1, 0) != 0)
			return -ESRCH;
		step = step < 1000 ? step * 2 : 1000;
		nanosleep(&(struct timespec){.tv_nsec = step * 1000}, NULL);
	}
	return -ETIMEDOUT;
}

/* Set once a payload's oom_score_adj could not be raised and nothing required it (we lack
 * CAP_DAC_OVERRIDE over its /proc files: an ordinary user): not tried again. */
static bool payload_adj_refused;

/*
 * Makes a spare's payload the OOM killer's first choice (oom_score_adj 1000) before the sandbox's
 * init and the exec init, which keep the server's value (or -1000: native.c, protect_keeper). 150
 * payloads of 700 KiB each left init the biggest task of a 64 MiB sandbox and the OOM killer took it,
 * and the sandbox with it. At 1000 a payload's score is its size plus the whole limit, above any
 * size init can have: while any process of the sandbox's code lives, neither init is chosen. Every
 * process the payload starts inherits the value, and none can lower it: the value may only go down
 * to a floor that only a writer with CAP_SYS_RESOURCE moves (we never move it down), and the
 * sandbox's /proc is read-only besides. Safe to write now: the payload runs nothing of the request
 * before it is sent, after this; being in vfork, only it changes (the kernel leaves a vfork parent's
 * value alone), and until its execve the OOM killer skips it. An ordinary user cannot write it (the
 * file of a non-dumpable process is root's): the payload keeps the server's value, as before
 * (docs/threat-model.md). A payload that would keep -1000 is never run.
 */
static int spare_oom_adj(const struct be_spare *s, pid_t init, struct al_error *err)
{
	int theirs, r;
	if ((r = oom_adj_read(init, &theirs)) < 0)
		return al_err_sys(err, -r, "setup: reading the spare's oom_score_adj");
	bool required = theirs == OOM_ADJ_MIN;
	if (__atomic_load_n(&payload_adj_refused, __ATOMIC_RELAXED) && !required)
		return 0;
	pid_t pid = spare_payload_pid(s, init);
	if (pid < 0)
		return al_err_sys(err, -pid, "setup: the spare's payload");
	if ((r = oom_adj_write(pid, OOM_ADJ_MAX)) == 0)
		return 0;
	if (!required && (r == -EACCES || r == -EPERM)) {
		__atomic_store_n(&payload_adj_refused, true, __ATOMIC_RELAXED);
		return 0;
	}
	return al_err_sys(err, -r, "setup: giving the spare's payload oom_score_adj %d", OOM_ADJ_MAX);
}

/*
 * Puts a spare into the exec's own cgroup (a child of the sandbox's), so the verdict accounts for
 * this exec alone, once its payload is the OOM killer's first choice (spare_oom_adj). Safe: it stays beneath
 * the sandbox's cgroup and under its limits, and the
 * payload runs nothing until its request, sent only after this. On v1 the spare payload moves
 * itself in: it is sent the cgroup's files ahead of the request (NX_JOIN_MAGIC), and its exec init,
 * which only reaps, stays in the sandbox's cgroup; no move by pid, which after a quiet moment waits
 * for an RCU grace period (cg_join_fds) — 6-10 ms on a sandbox's first exec here. Otherwise the
 * exec init and the payload it forked (nothing else runs before the request) are moved: the init
 * first, so a payload it forks later is born in the new cgroup, one forked before is listed in its
 * children by then (cg_attach_family).
 */
static int spare_into_cgroup(const struct be_spare *s, struct cg_job *cg, struct al_error *err)
{
	pid_t init = pfd_pid(s->pidfd);
	if (init < 0)
		return al_err_sys(err, -init, "the spare's exec init");
	int r = spare_oom_adj(s, init, err);
	if (r < 0)
		return r;
	if (cg_joins_self(cg)) {
		int fds[CG_JOIN_MAX];
		int n = cg_join_fds(cg, fds, err);
		if (n < 0)
			return n;
		struct nx_join q = {.magic = NX_JOIN_MAGIC};
		r = nx_send(s->sock, (char *)&q, sizeof(q), fds, n);
		for (int i = 0; i < n; i++)
			close(fds[i]);
		return r < 0 ? al_err_sys(err, -r, "cgroup: handing the exec's cgroup to its spare") : 0;
	}
	return cg_attach_family(cg, init, true, err);
}

/* The exec's own cgroup beneath the sandbox's, with s in it: 0 and *out (NULL when the sandbox
 * has no cgroup), or -errno. */
static int spare_cgroup(struct be_held *h, const struct be_spare *s, struct cg_job **out, struct al_error *err)
{
	*out = NULL;
	if (!h->cg) { /* no cgroup to move it into: only its oom_score_adj */
		pid_t init = pfd_pid(s->pidfd);
		return init < 0 ? al_err_sys(err, -init, "the spare's exec init") : spare_oom_adj(s, init, err);
	}
	struct cg_job *cg = NULL;
	int r = cg_create_child(h->cg, &cg, err);
	if (r == 0 && (r = spare_into_cgroup(s, cg, err)) < 0)
		cg_destroy(cg);
	if (r == 0)
		cg_usage_open(cg);
	if (r < 0) {
		al_err_prefix(err, "setup: the exec's own cgroup");
		return r;
	}
	*out = cg;
	return 0;
}

/* Under h->lock, with init's answer on its way: takes it and moves the spare into a cgroup of its
 * own, made meanwhile (init takes as long to make the spare), with the lock dropped. A spare that
 * cannot be moved wholly is killed: the exec then asks for another and says why that failed. */
static void ready_next(struct be_held *h)
{
	h->spare_asked = false;
	h->readying = true;
	pthread_mutex_unlock(&h->lock);
	struct cg_job *cg = NULL;
	if (h->cg && cg_create_child(h->cg, &cg, NULL) < 0)
		cg = NULL;
	struct be_spare got = NO_SPARE;
	if (spare_recv(h, &got) == 0 && h->cg && (!cg || spare_into_cgroup(&got, cg, NULL) < 0))
		spare_close(&got, true);
	cg_usage_open(cg); /* the verdict's reads: one pread each */
	if (got.pidfd < 0) {
		cg_destroy(cg);
		cg = NULL;
	}
	pthread_mutex_lock(&h->lock);
	h->spare = got;
	h->spare_cg = cg;
	h->readying = false;
	pthread_cond_broadcast(&h->cv);
}

/* Under h->lock: removes (lock dropped) the ended execs' cgroups whose exec inits are gone, or all
 * once the sandbox goes (cg_destroy then kills, and gives a cgroup up to a second). Whether some are
 * left for later. */
static bool remove_done(struct be_held *h)
{
	for (int i = 0; i < h->ndone && !h->spare_asked;) { /* a spare to ready comes first */
		struct pollfd pf = {.fd = h->done[i].pidfd, .events = POLLIN};
		if (pf.fd >= 0 && !h->closing && poll(&pf, 1, 0) == 0) {
			i++; /* still exiting (its teardown may wait for a grace period): later */
			continue;
		}
		struct be_done d = h->done[i];
		h->done[i] = h->done[--h->ndone];
		pthread_mutex_unlock(&h->lock);
		done_remove(&d);
		pthread_mutex_lock(&h->lock);
	}
	return h->ndone > 0;
}

static void deadline_in(struct timespec *t, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/* The worker (see the top of this file): the next spare first, since an exec may wait for it;
 * then ended execs' cgroups. Everything under h->lock, dropped for the slow parts. */
static void *worker_main(void *arg)
{
	struct be_held *h = arg;
	pthread_mutex_lock(&h->lock);
	for (;;) {
		if (h->spare_asked && !h->readying) {
			ready_next(h);
			continue;
		}
		bool left = remove_done(h);
		if (h->spare_asked)
			continue; /* asked while removing */
		if (h->closing && !left)
			break;
		struct timespec until;
		deadline_in(&until, left ? WORKER_DONE_POLL_MS : WORKER_IDLE_MS);
		if (pthread_cond_timedwait(&h->cv, &h->lock, &until) == ETIMEDOUT && !h->ndone && !h->spare_asked)
			break;
	}
	h->worker = false;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->lock); /* h may be freed from here on */
	return NULL;
}

/* Under h->lock: wakes the worker, or starts one. False when none could be started. */
static bool worker_kick(struct be_held *h)
{
	if (h->worker) {
		pthread_cond_broadcast(&h->cv);
		return true;
	}
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	h->worker = pthread_create(&t, &a, worker_main, h) == 0;
	pthread_attr_destroy(&a);
	return h->worker;
}

void be_held_exec_done(struct be_held *h, struct cg_job *cg, int pidfd)
{
	struct be_done d = {.cg = cg, .pidfd = pidfd}, now[BE_HELD_DONE_MAX + 1];
	int n = 0;
	pthread_mutex_lock(&h->lock);
	if (cg && h->ndone < BE_HELD_DONE_MAX)
		h->done[h->ndone++] = d;
	else
		now[n++] = d; /* execs overlapped more than the list holds: removed here */
	if (h->ndone && !worker_kick(h))
		while (h->ndone) /* no worker: removed here, waiting for the inits if need be */
			now[n++] = h->done[--h->ndone];
	pthread_mutex_unlock(&h->lock);
	for (int i = 0; i < n; i++)
		done_remove(&now[i]);
}

/*
 * A TCP socket of the sandbox's network namespace (hold.c, serve_socket), for the port proxy. The
 * control socket carries spare requests too, and init answers all of them in order: under h->lock,
 * once the worker is done with an answer it is taking (ready_wait), an answer still on its way to a
 * spare request is taken first, as the next exec would take it (spare_get); then ours is the next
 * answer. Init makes the socket at once (it never blocks), so the lock is held for one round trip.
 */
int be_held_socket(struct be_held *h, int family, int *out, struct al_error *err)
{
	if (!h || h->ctl_sock < 0)
		return al_err(err, ESRCH, "the sandbox is gone");
	struct nx_spare_req q = {.magic = NX_SOCK_MAGIC, .flags = (uint32_t)family};
	struct nx_reply rep = {.err = EPROTO};
	int fds[NX_MAX_FDS], nfds = 0;
	ssize_t n = -EPIPE;
	pthread_mutex_lock(&h->lock);
	ready_wait(h);
	if (h->spare_asked) {
		h->spare_asked = false;
		struct be_spare got = NO_SPARE;
		if (spare_recv(h, &got) == 0)
			h->spare = got;
	}
	int r = nx_send(h->ctl_sock, (char *)&q, sizeof(q), NULL, 0);
	if (r == 0)
		n = nx_recv(h->ctl_sock, (char *)&rep, sizeof(rep), fds, &nfds);
	pthread_mutex_unlock(&h->lock);
	if (n == (ssize_t)sizeof(rep) && rep.err == 0 && nfds == 1) {
		*out = fds[0];
		return 0;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (r < 0 || n <= 0)
		return al_err(err, ESRCH, "the sandbox is gone (its init exited)");
	return al_err_sys(err, n == (ssize_t)sizeof(rep) && rep.err > 0 ? rep.err : EPROTO,
			  "a socket in the sandbox's network");
}

/* The sandbox's enforced object, told for this exec: one without the sandbox's network ran in a
 * namespace of its own holding only lo, up ("none"), whatever the sandbox was made with. */
static json_t *exec_enforced(json_t *held, bool own_net)
{
	if (!held || !own_net)
		return json_incref(held); /* shared: the verdict copies before it adds to it */
	json_t *e = json_copy(held);
	if (e && json_object_set_new(e, "network", json_string(pol_net_name(AL_NET_NONE))) == 0 &&
	    json_object_set_new(e, "loopback", json_string("up")) == 0)
		return e;
	json_decref(e);
	return NULL;
}

int be_attach_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io, struct be_proc *out,
		    struct al_error *err)
{
	(void)pl;
	struct be_held *h = io->held;
	if (!h || h->ctl_sock < 0)
		return al_err(err, ESRCH, "setup: the sandbox is gone");
	/* The sandbox's network was fixed when it was made: an exec can go without it, never beyond. */
	if (p->net != AL_NET_NONE && (int)p->net != h->net)
		return al_err(
			err, EPERM,
			"setup: this sandbox was made with network %s: an exec in it can have that or none, not %s",
			pol_net_name((enum al_net_posture)h->net), pol_net_name(p->net));
	uint32_t flags = (io->stdin_fd >= 0 && !io->tty ? NX_STDIN : 0) | (io->code_fd >= 0 ? NX_CODE : 0) |
			 (io->tty ? NX_TTY : 0) | (p->net == AL_NET_NONE && h->net != AL_NET_NONE ? NX_NONET : 0);
	char **envp = pol_build_envp(p);
	cleanup_free char *msg = malloc(NX_MAX_MSG);
	if (!envp || !msg) {
		pol_free_strv(envp);
		return al_err(err, ENOMEM, "out of memory");
	}
	/* Without the sandbox's network: a spare of its own in a new network namespace, only lo (a
	 * payload cannot leave the one it was made in). */
	uint32_t spare_flags = flags & NX_NONET;
	flags &= ~NX_NONET;
	int len = nx_encode(p->argv, envp, p->cwd ? p->cwd : AL_WORKSPACE, flags, msg, NX_MAX_MSG);
	pol_free_strv(envp);
	if (len < 0)
		return al_err(err, -len, "setup: the command and its environment exceed %d bytes", NX_MAX_MSG);
	if (io->tty)
		nx_encode_tty(msg, io->tty_cols, io->tty_rows);
	int fds[NX_MAX_FDS] = {io->stdout_fd, io->stderr_fd}, nfds = 2, r = 0, cr = 0;
	if (flags & NX_STDIN)
		fds[nfds++] = io->stdin_fd;
	if (io->code_fd >= 0)
		fds[nfds++] = io->code_fd;
	struct be_spare s = NO_SPARE;
	struct cg_job *cg = NULL;
	pthread_mutex_lock(&h->lock);
	ready_wait(h);
	/* A spare that died since it was made (an OOM kill) is replaced once. */
	for (int attempt = 0; attempt < 2; attempt++) {
		cr = 0;
		if ((r = spare_get(h, spare_flags, &s, &cg)) < 0)
			break;
		if (!cg && (cr = spare_cgroup(h, &s, &cg, err)) < 0)
			r = -EPIPE; /* dead, or not (wholly) moved: never run it, take the next one */
		if (r == 0 && (r = nx_send(s.sock, msg, (size_t)len, fds, nfds)) == 0)
			break;
		spare_close(&s, true);
		cg_destroy(cg);
		cg = NULL;
		r = r == -EPIPE || r == -ECONNRESET || r == -ECONNREFUSED ? -EAGAIN : r;
	}
	/* The next exec's spare is made, and readied by the worker, while this one runs (without a
	 * worker, the next exec takes it as it is). */
	if (r == 0 && !spare_flags && h->spare.pidfd < 0 && spare_ask(h, 0) == 0) {
		h->spare_asked = true;
		if (h->cg)
			worker_kick(h);
	}
	pthread_mutex_unlock(&h->lock);
	if (r < 0 && cr < 0)
		return cr; /* err says which process could not join the exec's cgroup */
	if (r < 0) {
		if (r == -EPIPE || r == -ECONNRESET)
			return al_err(err, ESRCH, "setup: the sandbox is gone (its init exited)");
		return al_err_sys(err, -r, "setup: starting the command in the sandbox");
	}
	/* With a terminal, the spare answers its request with the pty's master before anything of the
	 * request runs (payload.c, open_terminal); end of file instead: it failed, its status says why. */
	out->tty_master = io->tty ? nx_recv_terminal(s.sock) : -1;
	close(s.sock); /* the payload has its request */
	out->pid = 0;
	out->foreign = true;
	out->pidfd = s.pidfd;
	out->status_fd = s.status;
	out->kill_signal = SIGKILL; /* the exec's init: its pid namespace dies with it */
	out->enforced = exec_enforced(h->enforced, spare_flags & NX_NONET);
	out->backend = "native";
	out->seccomp_kills = h->seccomp_kills;
	out->cg = cg;
	out->held = h;
	return 0;
}
