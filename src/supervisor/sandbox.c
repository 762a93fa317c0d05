/* sandbox.c — held sandboxes: a native job whose init stays up and starts one payload per request.
 *
 * Creation is an ordinary al_job_spawn with policy->hold set: the backend gives init a control
 * socket (backend/native/hold.c). The job is never waited for while the sandbox lives; instead
 * creation waits here until init has sent the workspace descriptor (ready) or died (its status
 * record says why). The egress proxy, when the posture has one, is served from the sandbox's job
 * as for any job. Execs are jobs of their own (policy->attach, backend/native/attach.c). Destroy
 * closes the control socket (init exits, and with it every process of the sandbox) and frees the
 * job (reap, cgroup removal, proxy stop). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "airlock/airlock.h"
#include "image/image.h"
#include "job.h"
#include "kit/pidfd.h"
#include "policy/policy.h"
#include "util/error.h"
#include "util/fdpass.h"

#define SANDBOX_READY_TIMEOUT_MS 30000

struct al_sandbox {
	struct al_job *job; /* the held init */
	struct be_held held;
	int ws_fd;
	int upper_fd;	/* the workspace overlay's upper layer (al_sandbox_upper), or -1 */
	int image_lock; /* the image's lock, dup'd (the same open file: its LOCK_SH), or -1 */
	uid_t uid;
	gid_t gid;
	bool paused;		  /* frozen (al_sandbox_pause), under held.lock */
	struct cg_keeper *keeper; /* from its first pause on: ends the sandbox if we die */
	char *enforced_text;	  /* held.enforced written out once, for al_sandbox_enforced */
};

struct be_held *sandbox_held(struct al_sandbox *sb)
{
	return sb ? &sb->held : NULL;
}

struct al_job *sandbox_job(struct al_sandbox *sb)
{
	return sb ? sb->job : NULL;
}

int al_policy_set_sandbox(struct al_policy *p, struct al_sandbox *sb, struct al_error *err)
{
	if (sb && !al_sandbox_alive(sb))
		return al_err(err, ESRCH, "the sandbox is gone");
	p->attach = sb;
	return 0;
}

/*
 * The cgroup of the sandbox's code, beneath the sandbox's: every exec's cgroup is made in it, and
 * it takes the sandbox's memory limit, which the sandbox's own cgroup gives up. So an OOM at that
 * limit happens there, and the OOM killer chooses among the code's processes only: never the
 * sandbox's init nor an exec's init, which stay in the sandbox's cgroup (on v2 its leaf
 * CG_V2_HELD). 150 processes of 700 KiB had left init the biggest task of a 64 MiB sandbox, and
 * the OOM killer took it and the sandbox with it; a server run as an ordinary user cannot make its
 * payloads the first choice any other way (oom_score_adj: attach.c). Safe: the limit is on the
 * child before it leaves the parent, nothing of the sandbox's code runs yet, and what stays outside
 * it (init, the exec inits: our code, a few pages each) is bounded by us, not by the sandbox.
 */
static int make_work(struct al_sandbox *sb, struct al_error *err)
{
	int r = cg_create_child(sb->job->cg, &sb->held.work, err);
	if (r == 0 && (r = cg_lift_memory_limit(sb->job->cg, err)) == 0)
		cg_usage_open(sb->held.work);
	if (r < 0) {
		al_err_prefix(err, "setup: the cgroup of the sandbox's code");
		return r;
	}
	sb->held.cg = sb->held.work;
	return 0;
}

int al_sandbox_oom_kills(const struct al_sandbox *sb, uint64_t *out)
{
	struct cg_usage u = {0};
	if (!sb || !sb->held.cg)
		return -ENOENT;
	int r = cg_usage(sb->held.cg, &u); /* reads counters only: fine while the sandbox runs */
	if (r == 0)
		*out = u.oom_kills;
	return r;
}

/* The sandbox user's host ids, from what the backend reported. */
static void read_owner(struct al_sandbox *sb)
{
	sb->uid = geteuid();
	sb->gid = getegid();
	const json_t *e = sb->held.enforced;
	json_t *u = json_object_get(e, "payload_host_uid"), *g = json_object_get(e, "payload_host_gid");
	if (json_is_integer(u) && json_integer_value(u) >= 0)
		sb->uid = (uid_t)json_integer_value(u);
	if (json_is_integer(g) && json_integer_value(g) >= 0)
		sb->gid = (gid_t)json_integer_value(g);
}

/* Waits for init: the proxy's socket (if any) comes first, then the workspace. */
static int wait_ready(struct al_sandbox *sb, struct al_error *err)
{
	struct al_job *j = sb->job;
	for (;;) {
		struct pollfd pf[3] = {{.fd = j->proc.ctl_sock, .events = POLLIN},
				       {.fd = j->proc.proxy_sock, .events = POLLIN},
				       {.fd = j->proc.pidfd, .events = POLLIN}};
		int n = poll(pf, 3, SANDBOX_READY_TIMEOUT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return al_err(err, n == 0 ? ETIMEDOUT : errno, "setup: the sandbox did not become ready");
		if (pf[1].revents)
			job_serve_proxy(j);
		if (pf[0].revents & POLLIN) {
			char tag = 0;
			int fd = al_recv_fd(j->proc.ctl_sock, &tag);
			if (fd >= 0 && tag == 'w') {
				sb->ws_fd = fd;
				return 0;
			}
			if (fd >= 0)
				close(fd);
		}
		if (pf[0].revents & (POLLHUP | POLLERR) || pf[2].revents)
			return -EPIPE; /* init died: its status record says why */
	}
}

static int take_upper(struct al_sandbox *sb)
{
	char tag = 0;
	int fd = sb->job->proc.upper_sock < 0 ? -EPROTO : al_recv_fd(sb->job->proc.upper_sock, &tag);
	if (fd >= 0 && tag != 'u') { /* FS_TAG_WORKDIR */
		close(fd);
		return -EPROTO;
	}
	if (fd >= 0)
		sb->upper_fd = fd;
	return fd < 0 ? fd : 0;
}

int al_sandbox_create(const struct al_policy *p, struct al_sandbox **out, struct al_error *err)
{
	if (p->attach)
		return al_err(err, EINVAL, "a held sandbox cannot be made inside another");
	if (p->workdir || p->keep_changes || p->fallback)
		return al_err(err, EINVAL,
			      "held sandboxes keep their own workspace: --workdir, --keep-changes and --fallback do "
			      "not apply");
	struct al_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return al_err(err, ENOMEM, "out of memory");
	sb->ws_fd = sb->upper_fd = sb->held.ctl_sock = -1;
	/* The sandbox outlives the policy it was made from: it keeps the image from removal. */
	sb->image_lock = p->image ? fcntl(p->image->lock_fd, F_DUPFD_CLOEXEC, 3) : -1;
	pthread_mutex_init(&sb->held.lock, NULL);
	be_held_init(&sb->held);
	int r = job_spawn(p, NULL, true, &sb->job, err);
	if (r < 0)
		goto fail;
	sb->held.ctl_sock = sb->job->proc.ctl_sock;
	sb->held.enforced = sb->job->proc.enforced;
	sb->enforced_text = sb->held.enforced ? json_dumps(sb->held.enforced, JSON_COMPACT) : NULL;
	sb->held.seccomp_kills = sb->job->proc.seccomp_kills;
	sb->held.net = (int)p->net;
	/* Each exec gets a cgroup of its own beneath it (attach.c). Its pids.events, read twice per
	 * exec (its pids-limit hits), was opened by job_spawn; make_work's cgroup takes its place here. */
	sb->held.cg = sb->job->cg;
	if ((r = wait_ready(sb, err)) == -EPIPE) {
		/* The job's verdict turns init's status record into the usual setup message. */
		struct al_verdict *v = NULL;
		struct al_error e2 = {0};
		if (al_job_wait(sb->job, &v, &e2) == 0 && v && v->status == AL_STATUS_SETUP_ERROR) {
			r = v->setup.code < 0 ? v->setup.code : -EIO;
			if (err)
				*err = v->setup;
		} else {
			r = al_err(err, EPIPE, "setup: the sandbox's init exited before it was ready");
		}
		al_verdict_free(v);
	}
	/* Once init waits for requests: on v2 its cgroup's processes move into a leaf first (cg_create_child),
	 * which must not race init's own set-up (its cgroup namespace is entered by then, too). */
	if (r == 0 && sb->job->cg)
		r = make_work(sb, err);
	/* The upper layer was sent while init mounted the workspace, before it said it was ready. */
	if (r == 0 && p->nws_layers && (r = take_upper(sb)) < 0)
		al_err_sys(err, -r, "setup: the workspace's upper layer");
	if (r < 0)
		goto fail;
	read_owner(sb);
	*out = sb;
	return 0;
fail:
	al_sandbox_destroy(sb);
	return r;
}

int al_sandbox_workspace(const struct al_sandbox *sb)
{
	return sb->ws_fd;
}

int al_sandbox_upper(const struct al_sandbox *sb)
{
	return sb->upper_fd;
}

void al_sandbox_owner(const struct al_sandbox *sb, uid_t *uid, gid_t *gid)
{
	*uid = sb->uid;
	*gid = sb->gid;
}

const char *al_sandbox_enforced(const struct al_sandbox *sb)
{
	return sb->enforced_text;
}

bool al_sandbox_alive(const struct al_sandbox *sb)
{
	if (!sb->job || sb->job->proc.pidfd < 0)
		return false;
	struct pollfd pf = {.fd = sb->job->proc.pidfd, .events = POLLIN};
	return poll(&pf, 1, 0) == 0;
}

int al_sandbox_usage(struct al_sandbox *sb, struct al_sandbox_usage *out)
{
	*out = (struct al_sandbox_usage){.cpu_s = -1};
	struct cg_usage u;
	if (!sb->held.cg || cg_usage(sb->held.cg, &u) < 0)
		return -ENOTSUP;
	out->cpu_s = u.cpu_accounted ? u.user_s + u.system_s : -1;
	out->memory_bytes = u.memory_bytes;
	out->peak_memory_bytes = u.peak_memory_bytes;
	return 0;
}

/* How long a connect to the sandbox's loopback may take: no packet leaves the host, so a listener
 * answers at once; only a full accept queue makes it wait. */
#define SANDBOX_CONNECT_MS 5000

/* Connects fd (non-blocking) to sa: 0, or -errno (-ECONNREFUSED: nothing listens there). */
static int connect_wait(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	struct pollfd pf = {.fd = fd, .events = POLLOUT};
	int n;
	while ((n = poll(&pf, 1, SANDBOX_CONNECT_MS)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		return n == 0 ? -ETIMEDOUT : -errno;
	int e = 0;
	socklen_t el = sizeof(e);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		return -errno;
	return -e;
}

static int connect_family(struct al_sandbox *sb, int family, uint16_t port, int *out, struct al_error *err)
{
	int fd = -1;
	int r = be_held_socket(&sb->held, family, &fd, err);
	if (r < 0)
		return r;
	struct sockaddr_in v4 = {
		.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 v6 = {
		.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	/* Safe: the address is ours (the sandbox's own loopback), never one the sandbox or the client names. */
	r = family == AF_INET ? connect_wait(fd, (struct sockaddr *)&v4, sizeof(v4))
			      : connect_wait(fd, (struct sockaddr *)&v6, sizeof(v6));
	if (r < 0) {
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

int al_sandbox_connect(struct al_sandbox *sb, uint16_t port, int *fd, struct al_error *err)
{
	if (!sb || port == 0)
		return al_err(err, EINVAL, "port %u: ports are 1 to 65535", (unsigned)port);
	if (!al_sandbox_alive(sb))
		return al_err(err, ESRCH, "the sandbox is gone");
	int r = connect_family(sb, AF_INET, port, fd, err);
	/* A server bound to ::1 alone (some bind "localhost" that way). */
	if (r == -ECONNREFUSED && connect_family(sb, AF_INET6, port, fd, NULL) == 0)
		return 0;
	if (r == -ECONNREFUSED)
		return al_err(err, ECONNREFUSED, "nothing listens on port %u of the sandbox's loopback",
			      (unsigned)port);
	if (r < 0 && !(err && err->msg[0]))
		return al_err_sys(err, -r, "connecting to port %u of the sandbox's loopback", (unsigned)port);
	return r;
}

int al_sandbox_net_file(struct al_sandbox *sb, const char *name, struct al_error *err)
{
	if (strcmp(name, "tcp") != 0 && strcmp(name, "tcp6") != 0)
		return al_err(err, EINVAL, "no such network table: %s", name);
	pid_t pid = sb->job ? pfd_pid(sb->job->proc.pidfd) : -ESRCH;
	if (pid < 0)
		return al_err(err, ESRCH, "the sandbox is gone");
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return al_err_sys(err, errno, "reading the sandbox's %s", name);
	/* Opened by pid: only still init's while init lives (a pid is reused only after its reaping,
	 * which is ours to do). Alive after the open, so the file is the sandbox's own. */
	if (!al_sandbox_alive(sb)) {
		close(fd);
		return al_err(err, ESRCH, "the sandbox is gone");
	}
	return fd;
}

/* How long the kernel may take to freeze or thaw every task (a task asleep in the kernel, say on a
 * slow disk, freezes only when it wakes): past it the pause is refused and the sandbox runs on. */
#define SANDBOX_FREEZE_MS 2000

int al_sandbox_pause(struct al_sandbox *sb, struct al_error *err)
{
	if (!al_sandbox_alive(sb))
		return al_err(err, ESRCH, "the sandbox is gone");
	struct cg_job *cg = sb->job->cg;
	if (!cg_freezer(cg))
		return al_err(err, ENOTSUP, "this sandbox cannot be paused: no cgroup freezer (%s)",
			      cg_freezer_why(cg));
	be_held_lock_idle(&sb->held);
	int r = 0;
	/* The keeper first: from the moment the job is frozen, our death must not leave it so. It stays
	 * until the sandbox goes (a resumed sandbox it would end as its init's parent-death signal does):
	 * a fork and a reap on every pause and resume were 4 of a pause's 12 ms here. */
	if (!sb->paused && !sb->keeper)
		r = cg_keeper_start(cg, &sb->keeper, err);
	if (!sb->paused && r == 0)
		r = cg_freeze(cg, true, SANDBOX_FREEZE_MS, err);
	if (r == 0)
		__atomic_store_n(&sb->paused, true, __ATOMIC_RELAXED);
	be_held_unlock(&sb->held);
	return r;
}

int al_sandbox_resume(struct al_sandbox *sb, struct al_error *err)
{
	pthread_mutex_lock(&sb->held.lock);
	int r = sb->paused ? cg_freeze(sb->job->cg, false, SANDBOX_FREEZE_MS, err) : 0;
	if (sb->paused && r == 0)
		__atomic_store_n(&sb->paused, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sb->held.lock);
	return r;
}

bool al_sandbox_paused(const struct al_sandbox *sb)
{
	return __atomic_load_n(&sb->paused, __ATOMIC_RELAXED);
}

const char *al_sandbox_freezer(const struct al_sandbox *sb, const char **why)
{
	const struct cg_job *cg = sb && sb->job ? sb->job->cg : NULL;
	int v = cg_freezer(cg);
	*why = v ? NULL : cg_freezer_why(cg);
	return v == 2 ? "v2" : v == 1 ? "v1" : NULL;
}

void al_sandbox_destroy(struct al_sandbox *sb)
{
	if (!sb)
		return;
	/* Paused: every process is sent SIGKILL, then thawed, so that it dies (a frozen v1 task does
	 * not) and runs nothing of its own meanwhile; the keeper's job is done then. */
	if (sb->paused && sb->job) {
		cg_thaw_killed(sb->job->cg);
		__atomic_store_n(&sb->paused, false, __ATOMIC_RELAXED);
	}
	cg_keeper_stop(sb->keeper);
	sb->keeper = NULL;
	if (sb->ws_fd >= 0)
		close(sb->ws_fd);
	if (sb->upper_fd >= 0)
		close(sb->upper_fd);
	if (sb->image_lock >= 0)
		close(sb->image_lock);
	/* al_job_free kills init (and so every exec, whose pid namespaces nest in its own), reaps
	 * it, stops the proxy, removes the cgroup and closes the control socket. */
	be_held_release(&sb->held);
	al_job_free(sb->job);
	pthread_mutex_destroy(&sb->held.lock);
	free(sb->enforced_text);
	free(sb);
}
