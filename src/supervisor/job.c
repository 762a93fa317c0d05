/* job.c — the supervisor: spawn through a backend, pump output with caps, enforce the deadline, account. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "airlock/airlock.h"
#include "backend/backend.h"
#include "kit/channel.h"
#include "kit/memfd.h"
#include "kit/pidfd.h"
#include "kit/proctree.h"
#include "kit/pty.h"
#include "job.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fdpass.h"
#include "util/fsutil.h"

static double since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Descriptors handed to the sandbox must not collide with 0-2 when the caller closed them. */
static int make_pipe(int p[2])
{
	int r = al_pipe_above_stdio(p);
	if (r < 0)
		return r;
	/* A shell's `echo > /dev/stdout` reopens the pipe through /proc/self/fd/1, which checks the
	 * pipe's mode against the payload's uid (not ours, and not mapped as owner): let anyone
	 * open it for writing. Safe: reaching a pipe by path takes /proc/PID/fd of a process that
	 * holds it, which only the job itself and those who may ptrace the supervisor can read. */
	if (fchmod(p[1], 0622) < 0)
		return -errno;
	return fcntl(p[0], F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
}

static int watch(int epfd, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void job_init_pumps(struct al_job *j, const struct al_policy *p, const struct al_spawn_opts *o)
{
	uint64_t lim = al_policy_get_limit(p, AL_LIMIT_OUTPUT);
	j->out = (struct pump){.fd = -1, .live_fd = -1, .limit = lim};
	j->err = (struct pump){.fd = -1, .live_fd = -1, .limit = lim};
	j->out.capture = !o || o->stdout_mode == AL_STREAM_CAPTURE;
	j->err.capture = !o || o->stderr_mode == AL_STREAM_CAPTURE;
	if (o && o->stdout_mode == AL_STREAM_LIVE)
		j->out.live_fd = o->stdout_live_fd;
	if (o && o->stderr_mode == AL_STREAM_LIVE)
		j->err.live_fd = o->stderr_live_fd;
	if (o && o->size >= offsetof(struct al_spawn_opts, on_output_cookie) + sizeof(void *) && o->on_output) {
		j->out.on_output = j->err.on_output = o->on_output;
		j->out.cookie = j->err.cookie = o->on_output_cookie;
	}
	j->out.stream = 1;
	j->err.stream = 2;
	j->stop_fd = -1;
	if (o && o->size >= offsetof(struct al_spawn_opts, stop_fd) + sizeof(int) && o->stop_fd > 2)
		j->stop_fd = o->stop_fd;
}

static int job_arm(struct al_job *j)
{
	if ((j->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return -errno;
	if (fcntl(j->proc.status_fd, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	int r = watch(j->epfd, j->out.fd);
	r = r ?: watch(j->epfd, j->err.fd);
	r = r ?: watch(j->epfd, j->proc.pidfd);
	/* A held sandbox's exec is over with its exec init's exit record, which that init sends once
	 * nothing of the exec runs any more (nat_reap_payload): not its pidfd, which fires only after
	 * the init's own teardown. */
	r = r ?: watch(j->epfd, j->proc.status_fd);
	if (r == 0 && j->proc.proxy_sock >= 0)
		r = watch(j->epfd, j->proc.proxy_sock);
	if (r == 0 && j->stop_fd >= 0)
		r = watch(j->epfd, j->stop_fd);
	if (r == 0 && j->wall_limit_ms != AL_UNLIMITED) {
		if ((j->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0)
			return -errno;
		struct itimerspec its = {.it_value = {.tv_sec = (time_t)(j->wall_limit_ms / 1000),
						      .tv_nsec = (long)(j->wall_limit_ms % 1000) * 1000000L}};
		if (timerfd_settime(j->timerfd, 0, &its, NULL) < 0)
			return -errno;
		r = watch(j->epfd, j->timerfd);
	}
	j->wake_fds[0] = j->timerfd;
	j->wake_fds[1] = j->stop_fd;
	struct pump *ps[2] = {&j->out, &j->err};
	for (int i = 0; i < 2; i++) {
		struct stat st;
		ps[i]->wake_fds = j->wake_fds;
		ps[i]->killing = &j->killing;
		ps[i]->live_is_file = ps[i]->live_fd >= 0 && fstat(ps[i]->live_fd, &st) == 0 && S_ISREG(st.st_mode);
	}
	return r;
}

/* A limit the caller set to a value (not "none"): it must be enforced or refused. */
static bool explicit_limit(const struct al_policy *p, enum al_limit l)
{
	return (p->limits_set & (1u << l)) && p->limits[l] != AL_UNLIMITED;
}

/* A limit with a value is enforced or the job refused, unless it is a default and the policy
 * allows best-effort limits (then the verdict names it as not applied). */
static bool must_enforce(const struct al_policy *p, enum al_limit l)
{
	return explicit_limit(p, l) || (!p->limits_best_effort && p->limits[l] != AL_UNLIMITED);
}

const enum al_limit cg_limits_of[3] = {AL_LIMIT_MEMORY, AL_LIMIT_PIDS, AL_LIMIT_CPUS};

/* Some cgroup limit is required only because it is a default (not set, not in the floor). */
static bool default_only(const struct al_policy *p)
{
	for (int l = 0; l < 3; l++)
		if (p->limits[cg_limits_of[l]] != AL_UNLIMITED && !explicit_limit(p, cg_limits_of[l]))
			return true;
	return false;
}

/* A default that cannot be enforced is refused, never dropped: say how to get it, or how to
 * run without it knowingly. (Where a user systemd answers, cg_create has already asked it for a
 * delegated scope; the cause says what it answered.) */
static void default_limit_hint(struct al_error *err)
{
	char was[AL_ERROR_MAX];
	snprintf(was, sizeof(was), "%s", err->msg);
	/* The cause last, as long as the message allows: it names what was tried. Both ways to run
	 * without it are named: the flag (run, exec) and the configuration key, which is the only one
	 * the service's front ends (serve, mcp) read. */
	al_err(err, err->code,
	       "a default limit cannot be enforced (get a delegated cgroup: systemd-run --user --scope -p "
	       "Delegate=yes; or set it to none, or run without it: --best-effort-limits, or "
	       "limits: {best-effort-limits: true} in the configuration): %s",
	       was);
}

/* A refusal of the job's cgroup, planned (job_cgroup) or made (by the backend, cg_make): the
 * same words wherever it was found. */
static void job_cgroup_refused(const struct al_policy *p, struct al_error *err)
{
	if (!p->limits_best_effort && default_only(p))
		default_limit_hint(err);
	al_err_prefix(err, "setup");
}

/* The job's cgroup, planned: limits with a value are required (see must_enforce), as are the
 * floor's cgroup layers. What the layout cannot give is refused here, before anything starts;
 * the directories and limits are made by be_spawn or the backend (cg_make), which may do so
 * while the sandbox's init sets itself up. */
static int job_cgroup(struct al_job *j, const struct al_policy *p, bool hold, struct al_error *err)
{
	struct cg_limits lim = {
		.memory_bytes = p->limits[AL_LIMIT_MEMORY],
		.pids = p->limits[AL_LIMIT_PIDS],
		.cpu_millis = p->limits[AL_LIMIT_CPUS],
		.need_memory = must_enforce(p, AL_LIMIT_MEMORY) || (p->require & REQ_CGROUP_MEMORY),
		.need_pids = must_enforce(p, AL_LIMIT_PIDS) || (p->require & REQ_CGROUP_PIDS),
		.need_cpu = must_enforce(p, AL_LIMIT_CPUS) || (p->require & REQ_CGROUP_CPU),
		.no_systemd_scope = p->no_systemd_scope,
		.freezer = hold, /* a held sandbox can be paused (al_sandbox_pause) */
	};
	if ((p->require & REQ_CGROUP_CPU) && lim.cpu_millis == AL_UNLIMITED)
		return al_err(err, EINVAL, "--require cgroup-cpu needs a --cpus limit");
	for (int l = 0; l < 3; l++)
		j->cg_wanted[l] = p->limits[cg_limits_of[l]] != AL_UNLIMITED;
	int r = cg_plan(&lim, &j->cg, err);
	if (r < 0)
		job_cgroup_refused(p, err);
	return r;
}

/* The egress proxy is made before the sandbox, so a policy it cannot serve is refused early. */
static int job_proxy(struct al_job *j, const struct al_policy *p, struct al_error *err)
{
	if (pol_brokers(p) && p->net == AL_NET_HOST)
		return al_err(err, EINVAL,
			      "--broker needs --net none or --net allow=..., not host: brokers are reached through the "
			      "proxy port on the sandbox's own loopback");
	if (p->secrets && p->net != AL_NET_ALLOW)
		return al_err(err, EINVAL,
			      "--secret needs --net allow=HOST,...: a secret goes only through the proxy, toward "
			      "allowed hosts");
	if (!pol_needs_proxy(p))
		return 0;
	struct px_config cfg = {
		.ca = p->tls_ca,
		.secrets = p->secrets,
		.allow = p->allow,
		.allow_private = p->allow_private,
		.brokers = pol_brokers(p),
		.brokers_release = pol_brokers_release,
		.brokers_ctx = pol_brokers_ref(p),
		.hosts_file = p->proxy_hosts,
		.plain_http = p->proxy_http,
		.capture = p->net == AL_NET_ALLOW,
		.max_conns = p->proxy_max_conns,
		.idle_ms = p->proxy_idle_ms > INT32_MAX ? INT32_MAX : (int)p->proxy_idle_ms,
		.t0 = j->start,
	};
	j->capture = cfg.capture;
	int r = px_new(&cfg, &j->px);
	return r < 0 ? al_err_sys(err, -r, "setup: egress proxy") : 0;
}

/* The capture's sockets, which init sends right after the proxy's, up to its 'e'. Waiting for
 * them cannot hang: init sends them without waiting for anything, and were it to die first, its
 * end of the socket closes and the wait ends (-ENOENT). */
static void recv_capture(struct al_job *j)
{
	for (;;) {
		char tag = 0;
		int fd = -1, n = al_recv_fds(j->proc.proxy_sock, &fd, 1, &tag, true);
		if (n < 0 || tag == 'e') {
			if (n > 0)
				close(fd);
			return;
		}
		if (n != 1)
			continue;
		enum px_listen kind = tag == 'u' ? PXL_DNS_UDP : tag == 't' ? PXL_DNS_TCP : PXL_CAPTURE;
		(void)px_add_listener(j->px, fd, kind); /* takes fd over; a refusal leaves it unserved */
	}
}

/* The sandbox's init sends the proxy's listening socket once lo is up (then the capture's). */
void job_serve_proxy(struct al_job *j)
{
	char tag;
	int fd = al_recv_fd(j->proc.proxy_sock, &tag);
	if (fd >= 0 && j->capture)
		recv_capture(j);
	if (fd >= 0 && px_serve(j->px, fd) == 0)
		j->proxy_served = true;
	if (j->epfd >= 0)
		epoll_ctl(j->epfd, EPOLL_CTL_DEL, j->proc.proxy_sock, NULL);
	close(j->proc.proxy_sock);
	j->proc.proxy_sock = -1;
}

int al_job_spawn(const struct al_policy *p, const struct al_spawn_opts *opts, struct al_job **out, struct al_error *err)
{
	return job_spawn(p, opts, false, out, err);
}

/* The caller's code descriptor (al_spawn_opts.code_fd), or -1: callers built before the field
 * existed pass a shorter struct, and a zeroed one means none. */
static int job_code_fd(const struct al_spawn_opts *o)
{
	if (!o || o->size < offsetof(struct al_spawn_opts, code_fd) + sizeof(int) || o->code_fd <= 2)
		return -1;
	return o->code_fd;
}

/* The caller's terminal request (al_spawn_opts.tty), into io: callers built before the fields
 * existed pass a shorter struct, and a zeroed one asks for none. */
static int job_tty_opts(const struct al_spawn_opts *o, bool hold, struct be_io *io, struct al_error *err)
{
	if (!o || o->size < offsetof(struct al_spawn_opts, tty_rows) + sizeof(uint16_t) || !o->tty)
		return 0;
	if (hold)
		return al_err(err, EINVAL, "a terminal is for a job or an exec, not for making a held sandbox");
	if (o->stdin_fd >= 0)
		return al_err(err, EINVAL,
			      "a terminal job takes its input through its terminal (al_job_tty), not stdin_fd");
	io->tty = true;
	io->tty_cols = o->tty_cols;
	io->tty_rows = o->tty_rows;
	return 0;
}

/* The terminal's master, once the backend has it: the job's stdout is read from it (a copy, so
 * the pump's close at end of file leaves the caller's), and the pipe it replaces goes. Non-blocking
 * for the pump, and so for the caller's writes too (one open file). End of file is EIO, once every
 * slave of the sandbox is closed: the pump takes any error as the end. */
static int job_take_tty(struct al_job *j)
{
	int m = j->proc.tty_master;
	if (m < 0)
		return 0; /* the sandbox failed first: its status record says why */
	int fd = fcntl(m, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || fcntl(m, F_SETFL, O_NONBLOCK) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(j->out.fd);
	j->out.fd = fd;
	return 0;
}

int al_job_tty(struct al_job *j)
{
	if (!j || !j->terminal)
		return -ENOTTY;
	return j->proc.tty_master >= 0 ? j->proc.tty_master : -ESRCH;
}

int al_job_resize(struct al_job *j, unsigned cols, unsigned rows)
{
	int m = al_job_tty(j);
	return m < 0 ? m : pty_resize(m, cols, rows);
}

int al_code_memfd(const char *data, size_t len)
{
	return mfd_sealed("airlock-code", data, len);
}

int job_spawn(const struct al_policy *p, const struct al_spawn_opts *opts, bool hold, struct al_job **out,
	      struct al_error *err)
{
	if (!p->argv && !hold)
		return al_err(err, EINVAL, "no command given");
	if (opts && opts->size < offsetof(struct al_spawn_opts, stderr_live_fd) + sizeof(int))
		return al_err(err, EINVAL, "al_spawn_opts.size is too small");
	struct al_job *j = calloc(1, sizeof(*j));
	if (!j)
		return al_err(err, ENOMEM, "out of memory");
	j->timerfd = j->epfd = j->proc.pidfd = j->proc.status_fd = -1;
	j->proc.kill_signal = SIGKILL;
	j->proc.upper_sock = j->proc.proxy_sock = j->proc.ctl_sock = j->proc.tty_master = -1;
	/* The job may change a terminal it is given (echo off, no ISIG): the caller gets its
	 * settings back when the job ends, whatever the job did. */
	j->tty_fd = -1;
	if (opts && opts->stdin_fd >= 0 && isatty(opts->stdin_fd) && tcgetattr(opts->stdin_fd, &j->tty) == 0)
		j->tty_fd = opts->stdin_fd;
	j->wall_limit_ms = al_policy_get_limit(p, AL_LIMIT_WALL_MS);
	j->disk_limit = al_policy_get_limit(p, AL_LIMIT_DISK);
	if (al_policy_image_digest(p)) {
		snprintf(j->image, sizeof(j->image), "%s", al_policy_image_digest(p));
		snprintf(j->image_name, sizeof(j->image_name), "%s", al_policy_image_name(p));
	}
	job_init_pumps(j, p, opts);
	int op[2] = {-1, -1}, ep[2] = {-1, -1}, r;
	if ((r = make_pipe(op)) < 0 || (r = make_pipe(ep)) < 0) {
		r = al_err_sys(err, -r, "setup: pipe");
		goto fail;
	}
	j->out.fd = op[0];
	j->err.fd = ep[0];
	clock_gettime(CLOCK_MONOTONIC, &j->start);
	/* An exec in a held sandbox uses the sandbox's proxy and cgroup. */
	if (!p->attach && ((r = job_proxy(j, p, err)) < 0 || (r = job_cgroup(j, p, hold, err)) < 0))
		goto fail;
	if (p->attach && (r = job_exec_acct_start(j, p, err)) < 0)
		goto fail;
	struct be_io io = {.stdin_fd = opts ? opts->stdin_fd : -1,
			   .code_fd = job_code_fd(opts),
			   .stdout_fd = op[1],
			   .stderr_fd = ep[1],
			   .cg = j->cg,
			   .hold = hold,
			   .held = p->attach ? sandbox_held(p->attach) : NULL};
	if ((r = job_tty_opts(opts, hold, &io, err)) < 0)
		goto fail;
	j->terminal = io.tty;
	clock_gettime(CLOCK_MONOTONIC, &j->start);
	r = be_spawn(p, &io, &j->proc, err);
	if (r < 0 && cg_make_failed(j->cg))
		job_cgroup_refused(p, err);
	j->cg = p->attach ? j->proc.cg : j->cg; /* an exec's own, made by attach.c */
	close(op[1]);
	close(ep[1]);
	op[1] = ep[1] = -1;
	if (r == 0 && j->terminal && (r = job_take_tty(j)) < 0)
		r = al_err_sys(err, -r, "setup: the terminal");
	if (r < 0)
		goto fail;
	/* The verdict's counters are read the moment the job ends, on the way to the caller: open
	 * them now, while the sandbox's init builds its root, so that read is one pread each. Not a
	 * held sandbox's: its verdict waits for its end, however long that is, and its files would be
	 * seven descriptors of the server's per sandbox, all that time; its execs read its code's
	 * cgroup (sandbox.c's make_work), kept open for them, and its own pids.events alone. */
	if (!p->attach && !hold)
		cg_usage_open(j->cg);
	else if (!p->attach)
		cg_pids_events_open(j->cg);
	if ((r = job_arm(j)) < 0) {
		r = al_err_sys(err, -r, "setup: supervisor event loop");
		goto fail;
	}
	*out = j;
	return 0;
fail:
	if (op[1] >= 0)
		close(op[1]);
	if (ep[1] >= 0)
		close(ep[1]);
	al_job_free(j);
	return r;
}

static void read_status(struct al_job *j)
{
	struct nat_record rec;
	for (;;) {
		ssize_t n = read(j->proc.status_fd, &rec, sizeof(rec));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(rec)) {
			if (n == 0 || (n < 0 && errno != EAGAIN)) {
				epoll_ctl(j->epfd, EPOLL_CTL_DEL, j->proc.status_fd, NULL);
				close(j->proc.status_fd);
				j->proc.status_fd = -1;
			}
			return;
		}
		if (rec.kind == NK_ERROR && j->setup_err.kind == 0)
			j->setup_err = rec;
		else if (rec.kind == NK_EXITED) {
			j->have_status = true;
			j->wstatus = rec.wstatus;
			if (j->proc.foreign) { /* no waitid for us: the exec's init measured its payload */
				j->ru.ru_utime = (struct timeval){rec.utime_us / 1000000, rec.utime_us % 1000000};
				j->ru.ru_stime = (struct timeval){rec.stime_us / 1000000, rec.stime_us % 1000000};
				j->ru.ru_maxrss = rec.maxrss_kib;
			}
		}
	}
}

/* The caller was told to stop (SIGTERM, ^C, a hang-up, a closed output pipe): the job is killed
 * now, in order, and the verdict says so. A job that already ended keeps its own status. */
static void job_stop(struct al_job *j)
{
	struct signalfd_siginfo si;
	ssize_t n = read(j->stop_fd, &si, sizeof(si));
	if (n != (ssize_t)sizeof(si))
		return; /* EAGAIN: another reader took it */
	epoll_ctl(j->epfd, EPOLL_CTL_DEL, j->stop_fd, NULL);
	if (j->exited || j->timed_out)
		return;
	j->stop_signal = (int)si.ssi_signo;
	j->killing = true;
	pfd_send_signal(j->proc.pidfd, j->proc.kill_signal);
	if (j->cg)
		cg_kill(j->cg);
}

/* A held exec's record says its payload exited and nothing of it is left: it is over. Its exec
 * init still exits (off this path); its pidfd is no longer of interest. */
static void job_exec_over(struct al_job *j)
{
	j->exited = true;
	j->wall_s = since(&j->start);
	epoll_ctl(j->epfd, EPOLL_CTL_DEL, j->proc.pidfd, NULL);
}

static void on_event(struct al_job *j, int fd)
{
	if (fd == j->out.fd || fd == j->err.fd) {
		struct pump *p = fd == j->out.fd ? &j->out : &j->err;
		/* Deregistered before it is closed: epoll watches the open file, which another process
		 * may still hold, so a close alone would leave it registered. */
		if (pump_read(p) <= 0) {
			epoll_ctl(j->epfd, EPOLL_CTL_DEL, fd, NULL);
			close(p->fd);
			p->fd = -1;
		}
	} else if (fd == j->proc.status_fd) {
		read_status(j);
		if (j->proc.foreign && j->have_status && !j->exited)
			job_exec_over(j);
	} else if (fd == j->proc.proxy_sock) {
		job_serve_proxy(j);
	} else if (fd == j->stop_fd) {
		job_stop(j);
	} else if (fd == j->timerfd) {
		/* The deadline: killing init kills every process of its pid namespace. */
		j->timed_out = j->killing = true;
		pfd_send_signal(j->proc.pidfd, j->proc.kill_signal);
		if (j->cg)
			cg_kill(j->cg);
		epoll_ctl(j->epfd, EPOLL_CTL_DEL, fd, NULL);
	} else if (fd == j->proc.pidfd && !j->exited) {
		j->exited = true;
		j->wall_s = since(&j->start);
		epoll_ctl(j->epfd, EPOLL_CTL_DEL, fd, NULL);
	}
}

/* Overlay upper layers reach the host only now, when nothing of the job runs: a --workdir
 * job's changes go back to its directory, a copied checkout's to --keep-changes; at most
 * --disk bytes each, since that is all an upper layer could hold. */
static void job_write_back(struct al_job *j)
{
	if (j->proc.upper_sock < 0)
		return;
	for (int i = 0; i < 2; i++) {
		char tag = 0;
		int upper = al_recv_fd(j->proc.upper_sock, &tag);
		if (upper < 0)
			return; /* the sandbox never got that far: a setup error says why */
		if (tag == 'u' && j->proc.workdir) {
			wb_apply(upper, j->proc.workdir, j->disk_limit, &j->wb);
			j->wrote_back = true;
		} else if (tag == 'c' && j->proc.keep_changes && j->proc.checkout) {
			wb_export(upper, j->proc.checkout, j->proc.keep_changes, j->disk_limit, &j->kc);
			j->kept_changes = true;
		}
		close(upper);
	}
}

static void restore_tty(struct al_job *j)
{
	if (j->tty_fd >= 0)
		tcsetattr(j->tty_fd, TCSANOW, &j->tty);
	j->tty_fd = -1;
}

int al_job_wait(struct al_job *j, struct al_verdict **out, struct al_error *err)
{
	/* Run until the sandbox is gone and every channel reached EOF (they do once it is). */
	while (!j->exited || j->out.fd >= 0 || j->err.fd >= 0 || (j->proc.status_fd >= 0 && !j->proc.foreign)) {
		struct epoll_event evs[8];
		int n = epoll_wait(j->epfd, evs, 8, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return al_err_sys(err, errno, "supervisor: epoll_wait");
		for (int i = 0; i < n; i++)
			on_event(j, evs[i].data.fd);
	}
	if (j->proc.foreign && j->proc.status_fd >= 0)
		read_status(j); /* a record the pidfd overtook (or end of file) */
	int r = j->proc.foreign ? 0 : pfd_wait(j->proc.pidfd, &j->si, &j->ru, WEXITED);
	if (r < 0)
		return al_err_sys(err, -r, "supervisor: waitid");
	j->reaped = true;
	restore_tty(j);
	px_stop(j->px); /* every client is gone with the sandbox: this only collects the records */
	if (j->cg && cg_usage(j->cg, &j->cgu) == 0)
		j->have_cgu = true;
	job_exec_acct_end(j);
	job_write_back(j);
	return jv_build(j, out, err);
}

int al_job_kill(struct al_job *j)
{
	__atomic_store_n(&j->kill_asked, 1, __ATOMIC_SEQ_CST);
	int r = j->proc.pidfd >= 0 ? pfd_send_signal(j->proc.pidfd, j->proc.kill_signal) : -ESRCH;
	if (j->cg)
		cg_kill(j->cg);
	return r == -ESRCH ? 0 : r; /* already gone */
}

int al_job_cgroup(struct al_job *j, struct al_job_cgroup *out)
{
	struct cg_usage u;
	if (!j || !j->cg || cg_usage(j->cg, &u) < 0) /* reads counters only: fine while it runs */
		return -ENOTSUP;
	*out = (struct al_job_cgroup){.peak_memory_bytes = u.peak_memory_bytes,
				      .oom_kills = u.oom_kills,
				      .pids_limit_hit = u.pids_limit_hit,
				      .memory_limited = u.memory_limited,
				      .pids_limited = u.pids_limited,
				      .cpu_limited = u.cpu_limited,
				      .version = cg_version_name(j->cg)};
	return 0;
}

int al_job_census(struct al_job *j, struct al_job_census *out)
{
	if (!j || j->proc.pidfd < 0 || !j->proc.backend || strcmp(j->proc.backend, "native") != 0)
		return -ENOTSUP;
	/* The job's init (an exec's, in a held sandbox: not our child, known by its pidfd) is pid 1
	 * of the job's pid namespace: everything of the job descends from it. */
	pid_t init = j->proc.foreign ? pfd_pid(j->proc.pidfd) : j->proc.pid;
	if (init <= 0)
		return -ESRCH;
	struct pt_census c;
	int r = pt_census(init, &c);
	/* Read after the walk: a pid reused by another process meanwhile was not the job's. */
	if (r == 0 && pfd_pid(j->proc.pidfd) != init)
		r = -ESRCH;
	if (r < 0)
		return r;
	*out = (struct al_job_census){.processes = c.processes, .threads = c.threads};
	return 0;
}

/* The job's init (pid 1 of its pid namespace) and its payload, the init's child: host pids, checked
 * against the pidfd after the lookup so that a reused pid is never taken for the job's. */
static int job_payload(struct al_job *j, pid_t *init, pid_t *payload)
{
	if (!j || j->proc.pidfd < 0 || !j->proc.backend || strcmp(j->proc.backend, "native") != 0)
		return -ENOTSUP;
	*init = j->proc.foreign ? pfd_pid(j->proc.pidfd) : j->proc.pid;
	if (*init <= 0)
		return -ESRCH;
	int r = pt_first_child(*init, payload);
	if (r == 0 && pfd_pid(j->proc.pidfd) != *init)
		r = -ESRCH;
	return r;
}

int al_job_signal(struct al_job *j, int sig)
{
	if (sig == SIGKILL)
		return al_job_kill(j);
	pid_t init, payload;
	int r = job_payload(j, &init, &payload);
	if (r < 0)
		return r;
	/* A pidfd of the payload, then a second look that it is still the init's child: a signal
	 * through it can only reach that process, never one that took its pid after it ended. */
	cleanup_close int fd = (int)syscall(SYS_pidfd_open, payload, 0);
	if (fd < 0)
		return -errno;
	pid_t again;
	if (pt_first_child(init, &again) < 0 || again != payload)
		return -ESRCH;
	/* The payload leads its own session and process group (setsid, DESIGN's first payload step):
	 * the group is what a terminal's ^C reaches, the shell and the program it waits for. Its number
	 * is the payload's pid, found the init's live child just above: another group could take that
	 * number only if the payload were reaped and the pid space wrapped in between. */
	if (kill(-payload, sig) == 0)
		return 0;
	return pfd_send_signal(fd, sig);
}

int al_job_pid(struct al_job *j, pid_t *pid)
{
	pid_t init, payload;
	int r = job_payload(j, &init, &payload);
	/* The job's own pid namespace is the innermost; its parent's is the sandbox's (a held
	 * sandbox's init's), where the payload's number is unique among the sandbox's processes. */
	return r < 0 ? r : pt_nspid(payload, j->proc.foreign ? 1 : 0, pid);
}

void al_cleanup_stale(const struct al_policy *p)
{
	/* After the cgroups: a dead supervisor's monitor is gone by now. */
	be_cleanup_stale(p, cg_cleanup_stale() != 0);
}

void al_job_free(struct al_job *j)
{
	if (!j)
		return;
	if (j->proc.pidfd >= 0 && !j->reaped && j->proc.foreign) {
		pfd_send_signal(j->proc.pidfd, j->proc.kill_signal); /* not ours to reap */
	} else if (j->proc.pidfd >= 0 && !j->reaped) {
		/* Nothing outlives its job: kill the sandbox's init and reap it. */
		siginfo_t si;
		struct rusage ru;
		pfd_send_signal(j->proc.pidfd, j->proc.kill_signal);
		if (j->cg)
			cg_kill(j->cg);
		pfd_wait(j->proc.pidfd, &si, &ru, WEXITED);
	}
	if (j->proc.cleanup_dir) {
		al_remove_tree(j->proc.cleanup_dir);
		free(j->proc.cleanup_dir);
	}
	restore_tty(j);
	px_free(j->px);
	/* An exec in a held sandbox: its cgroup is removed off its path, once its exec init (which
	 * this pidfd tells about) is gone. */
	if (j->proc.held) {
		be_held_exec_done(j->proc.held, j->cg, j->proc.pidfd);
		j->cg = NULL;
		j->proc.pidfd = -1;
	}
	int fds[] = {j->proc.pidfd,	 j->proc.status_fd,  j->timerfd,       j->epfd,
		     j->proc.upper_sock, j->proc.proxy_sock, j->proc.ctl_sock, j->proc.tty_master};
	for (size_t i = 0; i < AL_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pump_free(&j->out);
	pump_free(&j->err);
	cg_destroy(j->cg);
	json_decref(j->proc.enforced);
	free(j->proc.workdir);
	free(j->proc.keep_changes);
	free(j->proc.checkout);
	free(j);
}
