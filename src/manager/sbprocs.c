/* sbprocs.c — background processes of a held sandbox: an exec that outlives its call, with a handle.
 *
 * Theory of operation
 *
 *   exec (background) ─▶ exec_thread: policy, place in the sandbox (exec_turn), al_job_spawn ─▶
 *                        answered at once with {pid, ...}; the worker thread stays the job's
 *                        supervisor (al_job_wait) until the job ends, then records its verdict
 *   process "connect" ─▶ a reader's worker: the output kept so far from an offset, then live
 *   process "stdin"/"close_stdin"/"signal"/"kill"/"resize"/"list"/"get" ─▶ answered in the start call
 *
 * A process is one exec of the sandbox (its own pid namespace beneath the sandbox's, its own
 * cgroup beneath the sandbox's, every confinement of an exec): it lives until it exits, is killed,
 * or its sandbox goes (sbx_unlist_locked kills it, and the sandbox is not freed before its
 * supervising thread has reaped it): nothing of it outlives its sandbox. It holds one of the
 * sandbox's places (server.max_execs_per_sandbox) but no server exec slot (server.max_execs
 * bounds foreground work: a dev server would hold one for hours). Its output is counted whole and
 * kept in a bounded buffer (PROC_KEEP_BYTES, oldest dropped first) that any number of readers
 * follow. The list (s->procs) and each process's readers count are under m->mu; a process's
 * output, stdin and end under its own p->mu (lock order: m->mu, then p->mu).
 *
 * A terminal session (exec with pty) is such a process whose stdin, stdout and stderr are a pty of
 * the sandbox's own devpts (al_spawn_opts.tty: the engine opens it as the sandbox's user, makes it
 * the controlling terminal, keeps TIOCSTI and TIOCLINUX refused). Its output is what the terminal
 * shows (bytes, not always UTF-8); its "stdin" is written to the pty master, a copy of which the
 * writer holds while it waits for room (POLLOUT) without p->mu, so the job's output keeps flowing
 * meanwhile (a terminal echoes what it reads: holding the output would stall its input too).
 */
#include "manager/sbmint.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/text.h"

#define PROC_KEEP_BYTES	 ((size_t)1 << 20) /* output kept per process for its readers */
#define PROC_KEEP_ENDED	 32		   /* ended processes a sandbox still lists */
#define PROC_COMMAND_MAX 256		   /* bytes of its code a listing shows */
#define PROC_STDIN_WAIT	 5000		   /* ms a stdin write waits for room in the pipe */
#define PROC_STDIN_MAX	 ((size_t)1 << 20) /* one write at most: the pipe grows to hold it whole */
#define PROC_READ_SLICE	 250		   /* ms a reader waits before it looks at its cancel */
#define PROC_READ_BATCH	 ((size_t)256 << 10)
#define PROC_READERS_MAX 16	 /* connects following one process at once */
#define PROC_ID_BASE	 2000000 /* ids of processes whose pid could not be read: above a namespace's pids */

struct pchunk {
	struct pchunk *next;
	uint64_t off; /* of its first byte, in the process's whole output */
	int stream;   /* 1 stdout, 2 stderr */
	size_t len;
	char data[];
};

struct sbproc {
	struct sbproc *next;
	struct sbm *m;
	struct sbx *s;
	int pid;
	char language[16];
	char *command;
	uint64_t started_unix_ms, ended_unix_ms;
	unsigned readers; /* under m->mu: connects reading it (an ended one is pruned only without) */
	pthread_mutex_t mu;
	pthread_cond_t cv;  /* output arrived, or the end */
	struct al_job *job; /* while it runs */
	int stdin_w;	    /* the write end of its stdin pipe, or -1 */
	struct pchunk *head, *tail;
	size_t kept;
	uint64_t total, dropped; /* bytes of output in all; dropped from the buffer */
	bool ended;
	char *verdict_json;
	char status[24];
	int exit_code, signal;
	bool tty;	       /* a terminal session (set at its start, never changed: read without p->mu) */
	unsigned cols, rows;   /* its terminal's size now, under p->mu */
	pthread_mutex_t in_mu; /* a terminal's writer: one call's input never interleaves another's */
};

static uint64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void proc_free(struct sbproc *p)
{
	while (p->head) {
		struct pchunk *c = p->head;
		p->head = c->next;
		free(c);
	}
	if (p->stdin_w >= 0)
		close(p->stdin_w);
	free(p->command);
	free(p->verdict_json);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->in_mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

/* al_spawn_opts.on_output: kept (the oldest dropped past PROC_KEEP_BYTES), readers woken. */
static void proc_output(void *cookie, int stream, const char *data, size_t len)
{
	struct sbproc *p = cookie;
	struct pchunk *c = malloc(sizeof(*c) + len);
	pthread_mutex_lock(&p->mu);
	if (c) {
		*c = (struct pchunk){.off = p->total, .stream = stream, .len = len};
		memcpy(c->data, data, len);
		*(p->tail ? &p->tail->next : &p->head) = c;
		p->tail = c;
		p->kept += len;
	}
	p->total += len;
	if (!c)
		p->dropped += len;
	while (p->head && p->kept > PROC_KEEP_BYTES) {
		struct pchunk *old = p->head;
		p->head = old->next;
		if (!p->head)
			p->tail = NULL;
		p->kept -= old->len;
		p->dropped += old->len;
		free(old);
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Under p->mu: what a listing says of p. */
static json_t *proc_json_locked(const struct sbproc *p, bool verdict)
{
	bool in_open = p->tty ? !p->ended : p->stdin_w >= 0; /* a terminal's is open while it runs */
	json_t *o = json_pack("{s:i,s:s,s:o,s:o,s:b,s:b,s:I,s:I}", "pid", p->pid, "language", p->language, "command",
			      txt_json_lossy(p->command, strlen(p->command)), "started_at",
			      txt_json_time(p->started_unix_ms), "running", !p->ended, "stdin_open", in_open,
			      "output_bytes", (json_int_t)p->total, "output_dropped_bytes", (json_int_t)p->dropped);
	if (o && p->tty)
		json_object_set_new(o, "pty", json_pack("{s:i,s:i}", "cols", (int)p->cols, "rows", (int)p->rows));
	if (!o || !p->ended)
		return o;
	json_object_set_new(o, "ended_at", txt_json_time(p->ended_unix_ms));
	json_object_set_new(o, "status", json_string(p->status));
	json_object_set_new(o, "exit_code", p->exit_code >= 0 ? json_integer(p->exit_code) : json_null());
	json_object_set_new(o, "signal", p->signal ? json_integer(p->signal) : json_null());
	json_t *v = verdict && p->verdict_json ? json_loads(p->verdict_json, 0, NULL) : NULL;
	if (v)
		json_object_set_new(o, "verdict", v);
	return o;
}

static char *proc_answer(struct sbproc *p, const char *sandbox_id, bool verdict)
{
	pthread_mutex_lock(&p->mu);
	json_t *o = proc_json_locked(p, verdict);
	pthread_mutex_unlock(&p->mu);
	if (o)
		json_object_set_new(o, "sandbox_id", json_string(sandbox_id));
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

/* Under m->mu: drops the oldest ended processes nobody reads past PROC_KEEP_ENDED. */
static void prune_locked(struct sbx *s)
{
	unsigned ended = 0;
	for (struct sbproc **pp = &s->procs; *pp;) {
		struct sbproc *p = *pp;
		pthread_mutex_lock(&p->mu);
		bool gone = p->ended && ++ended > PROC_KEEP_ENDED && p->readers == 0;
		pthread_mutex_unlock(&p->mu);
		if (!gone) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		s->nprocs--;
		proc_free(p);
	}
}

static void record_end(struct sbproc *p, struct al_verdict *v)
{
	char *json = NULL;
	if (v)
		(void)al_verdict_to_json(v, &json, NULL);
	pthread_mutex_lock(&p->mu);
	p->ended = true;
	p->ended_unix_ms = unix_ms();
	p->verdict_json = json;
	p->exit_code = -1;
	snprintf(p->status, sizeof(p->status), "%s", v ? al_status_name(v->status) : "failed");
	if (v && (v->status == AL_STATUS_EXITED || (v->status == AL_STATUS_OUTPUT_LIMIT && !v->signal)))
		p->exit_code = v->exit_code;
	else if (v)
		p->signal = v->signal;
	if (p->stdin_w >= 0)
		close(p->stdin_w);
	p->stdin_w = -1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* The process's supervisor, from its start to its verdict. */
static void *proc_thread(void *arg)
{
	struct sbproc *p = arg;
	struct sbm *m = p->m;
	struct sbx *s = p->s;
	struct al_verdict *v = NULL;
	struct al_error err = {0};
	if (al_job_wait(p->job, &v, &err) < 0)
		v = NULL;
	pthread_mutex_lock(&p->mu);
	struct al_job *job = p->job;
	p->job = NULL; /* signals and kills from now on find it ended */
	pthread_mutex_unlock(&p->mu);
	record_end(p, v);
	al_verdict_free(v);
	al_job_free(job);
	exec_turn_done(m, s, false);
	pthread_mutex_lock(&m->mu);
	prune_locked(s);
	m->ops--;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	sbx_put(m, s);
	return NULL;
}

/* Its stdin: a pipe kept open (keep_stdin), else the given bytes as a sealed copy, else none. */
static int proc_stdin(struct srv_op *op, int *in_fd, int *keep_w, struct al_error *err)
{
	*in_fd = *keep_w = -1;
	if (!op->keep_stdin) {
		if (!op->stdin_data)
			return 0;
		*in_fd = al_code_memfd(op->stdin_data, op->stdin_len);
		return *in_fd < 0 ? al_err_sys(err, -*in_fd, "setup: the program's standard input") : 0;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "setup: the process's stdin pipe");
	/* /dev/stdin reopens the pipe through /proc/self/fd/0, which checks its mode against the
	 * payload's uid: readable by anyone, reachable only by those who may read the job's /proc. */
	(void)fchmod(fds[0], 0644);
	if (op->stdin_len > 65536)
		(void)fcntl(fds[1], F_SETPIPE_SZ,
			    (int)(op->stdin_len < PROC_STDIN_MAX ? op->stdin_len : PROC_STDIN_MAX));
	ssize_t w = op->stdin_len ? write(fds[1], op->stdin_data, op->stdin_len) : 0;
	if (w != (ssize_t)op->stdin_len || fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0) {
		close(fds[0]);
		close(fds[1]);
		return al_err(err, E2BIG, "stdin of %zu bytes does not fit the process's pipe (%zu at most)",
			      op->stdin_len, PROC_STDIN_MAX);
	}
	*in_fd = fds[0];
	*keep_w = fds[1];
	return 0;
}

static struct sbproc *proc_new(struct srv_op *op, struct sbx *s)
{
	struct sbproc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->m = op->m;
	p->s = s;
	p->stdin_w = -1;
	p->exit_code = -1;
	p->started_unix_ms = unix_ms();
	p->tty = op->pty_cols > 0;
	p->cols = op->pty_cols;
	p->rows = op->pty_rows;
	snprintf(p->language, sizeof(p->language), "%s", op->language ? op->language : "");
	size_t n = op->code_len < PROC_COMMAND_MAX ? op->code_len : PROC_COMMAND_MAX;
	n = txt_utf8_complete(op->code ? op->code : "", n);
	p->command = strndup(op->code ? op->code : "", n);
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->in_mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (!p->command) {
		proc_free(p);
		return NULL;
	}
	return p;
}

/* Its number among the sandbox's processes: the payload's pid there, which the exec's init may not
 * show as its child for a moment after the request reached it; a number of ours past any pid the
 * sandbox's namespace hands out when it cannot be read (an id, still unique in the sandbox). */
static int proc_pid(struct al_job *job)
{
	static int next_id;
	for (int tries = 0; tries < 100; tries++) {
		pid_t pid = 0;
		if (al_job_pid(job, &pid) == 0 && pid > 0)
			return (int)pid;
		usleep(2000);
	}
	return PROC_ID_BASE + __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED) % PROC_ID_BASE;
}

/* Spawns it and its supervising thread: 0, or -errno with err (nothing left running). */
static int proc_launch(struct sbproc *p, struct srv_op *op, struct al_policy *pol, int code_fd, struct al_error *err)
{
	struct sbm *m = op->m;
	struct sbx *s = p->s;
	int in_fd = -1;
	/* A terminal session reads its pty (the master is its stdin's other end): no pipe. */
	int r = p->tty ? 0 : proc_stdin(op, &in_fd, &p->stdin_w, err);
	r = r ?: exec_in_sandbox(s, pol, op->network, err);
	struct al_spawn_opts so = {.size = sizeof(so),
				   .stdin_fd = in_fd,
				   .stdout_mode = AL_STREAM_LIVE, /* kept here, not in the job's verdict */
				   .stderr_mode = AL_STREAM_LIVE,
				   .stdout_live_fd = -1,
				   .stderr_live_fd = -1,
				   .on_output = proc_output,
				   .on_output_cookie = p,
				   .code_fd = code_fd,
				   .tty = p->tty,
				   .tty_cols = (uint16_t)p->cols,
				   .tty_rows = (uint16_t)p->rows};
	if (r == 0)
		r = al_job_spawn(pol, &so, &p->job, err);
	if (in_fd >= 0)
		close(in_fd);
	if (r < 0)
		return r;
	p->pid = proc_pid(p->job);
	pthread_mutex_lock(&m->mu);
	bool gone = m->stopping || !s->listed;
	s->refs++; /* the process's: its sandbox is not freed before it is reaped */
	m->ops++;
	p->next = s->procs;
	s->procs = p;
	s->nprocs++;
	pthread_mutex_unlock(&m->mu);
	if (gone) /* destroyed meanwhile: sbproc_kill_all_locked ran before it was listed */
		al_job_kill(p->job);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	r = pthread_create(&t, &a, proc_thread, p);
	pthread_attr_destroy(&a);
	if (r != 0) { /* no supervisor: the process cannot be left to run unwatched */
		al_job_kill(p->job);
		proc_thread(p);
	}
	return 0;
}

void sbproc_start(struct srv_op *op, struct sbx *s, struct al_policy *pol, int code_fd)
{
	struct sbm *m = op->m;
	struct al_error err = {0};
	struct srv_result *res = NULL;
	struct sbproc *p = proc_new(op, s);
	int r = p ? proc_launch(p, op, pol, code_fd, &err) : al_err(&err, ENOMEM, "out of memory");
	al_policy_free(pol);
	if (r < 0) {
		if (p)
			proc_free(p);
		exec_turn_done(m, s, false);
	} else if ((res = srv_result_new())) {
		res->sandbox_id = strdup(s->id);
		res->process_json = proc_answer(p, s->id, false);
	}
	op_end(op, s, r, &err, res);
}

void sbproc_kill_all_locked(struct sbx *s)
{
	for (struct sbproc *p = s->procs; p; p = p->next) {
		pthread_mutex_lock(&p->mu);
		if (p->job)
			al_job_kill(p->job);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

void sbproc_free_all(struct sbx *s)
{
	while (s->procs) {
		struct sbproc *p = s->procs;
		s->procs = p->next;
		proc_free(p);
	}
	s->nprocs = 0;
}

/* ---- the process calls ---------------------------------------------------------------------- */

/* Under m->mu: s's process pid (the running one first: a pid an ended process had may be reused). */
static struct sbproc *find_locked(struct sbx *s, int pid)
{
	struct sbproc *ended = NULL;
	for (struct sbproc *p = s->procs; p; p = p->next) {
		if (p->pid != pid)
			continue;
		pthread_mutex_lock(&p->mu);
		bool running = !p->ended;
		pthread_mutex_unlock(&p->mu);
		if (running)
			return p;
		if (!ended)
			ended = p;
	}
	return ended;
}

static char *list_answer(struct sbm *m, struct sbx *s)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&m->mu);
	for (struct sbproc *p = s->procs; arr && p; p = p->next) {
		pthread_mutex_lock(&p->mu);
		json_t *o = proc_json_locked(p, false);
		pthread_mutex_unlock(&p->mu);
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	pthread_mutex_unlock(&m->mu);
	json_t *o = arr ? json_pack("{s:s,s:o}", "sandbox_id", s->id, "processes", arr) : NULL;
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

/* Writes data to terminal session p's pty master, waiting up to PROC_STDIN_WAIT for room (the
 * program reads its terminal at its own pace). A terminal takes input piecewise, as a keyboard
 * gives it: a refusal says how much of it went in. */
static int write_tty(struct sbproc *p, const char *data, size_t len, struct al_error *err)
{
	pthread_mutex_lock(&p->in_mu);
	pthread_mutex_lock(&p->mu);
	int fd = p->job ? al_job_tty(p->job) : -ESRCH;
	/* Our own copy of the master: the job's is closed by al_job_free once it ends, possibly while
	 * we wait below without p->mu. Writing to it reaches only this session's terminal. */
	int own = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
	pthread_mutex_unlock(&p->mu);
	int r = own < 0 ? al_err(err, EPIPE, "process %d's terminal is closed (the process ended)", p->pid) : 0;
	size_t done = 0;
	uint64_t until = sbm_now_ms() + PROC_STDIN_WAIT;
	while (r == 0 && done < len) {
		ssize_t w = write(own, data + done, len - done);
		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		uint64_t now = sbm_now_ms();
		if (w < 0 && errno != EAGAIN)
			r = al_err(err, EPIPE, "process %d's terminal took %zu of %zu bytes, then closed", p->pid, done,
				   len);
		else if (now >= until)
			r = al_err(err, EAGAIN,
				   "process %d is not reading its terminal: it took %zu of %zu bytes in %d s", p->pid,
				   done, len, PROC_STDIN_WAIT / 1000);
		else
			(void)poll(&(struct pollfd){.fd = own, .events = POLLOUT}, 1, (int)(until - now));
	}
	if (own >= 0)
		close(own);
	pthread_mutex_unlock(&p->in_mu);
	return r;
}

/* Writes data whole to p's stdin, waiting up to PROC_STDIN_WAIT for the room: all of it or none
 * (the pipe grows to hold one write), so that a refused write leaves nothing half-sent. */
static int write_stdin(struct sbproc *p, const char *data, size_t len, struct al_error *err)
{
	if (len > PROC_STDIN_MAX)
		return al_err(err, E2BIG, "one stdin write holds at most %zu bytes (this one %zu)", PROC_STDIN_MAX,
			      len);
	if (p->tty)
		return write_tty(p, data, len, err);
	pthread_mutex_lock(&p->mu);
	int r = 0;
	if (p->stdin_w < 0)
		r = al_err(err, EPIPE, "process %d has no open stdin (closed, ended, or started without keep_stdin)",
			   p->pid);
	int cap = r == 0 ? fcntl(p->stdin_w, F_GETPIPE_SZ) : 0;
	if (r == 0 && cap >= 0 && (size_t)cap < len)
		cap = fcntl(p->stdin_w, F_SETPIPE_SZ, (int)len);
	if (r == 0 && cap < 0)
		r = al_err(err, E2BIG, "%zu bytes do not fit the process's stdin pipe", len);
	for (int waited = 0; r == 0;) {
		int unread = 0;
		if (ioctl(p->stdin_w, FIONREAD, &unread) < 0)
			unread = 0;
		if ((size_t)(cap - unread) >= len) {
			ssize_t w = len ? write(p->stdin_w, data, len) : 0;
			if (w < 0 && errno == EPIPE)
				r = al_err(err, EPIPE, "process %d closed its stdin", p->pid);
			else if (w != (ssize_t)len)
				r = al_err(err, EAGAIN, "process %d's stdin took %zd of %zu bytes", p->pid, w, len);
			break;
		}
		if (waited >= PROC_STDIN_WAIT) {
			r = al_err(err, EAGAIN, "process %d is not reading its stdin: %zu bytes found no room in %d s",
				   p->pid, len, PROC_STDIN_WAIT / 1000);
			break;
		}
		pthread_mutex_unlock(&p->mu);
		usleep(10000);
		waited += 10;
		pthread_mutex_lock(&p->mu);
		if (p->stdin_w < 0)
			r = al_err(err, EPIPE, "process %d's stdin was closed", p->pid);
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

static int act(struct sbproc *p, const struct srv_process_req *req, struct al_error *err)
{
	int r = 0;
	if (strcmp(req->action, "stdin") == 0)
		return write_stdin(p, req->data ? req->data : "", req->len, err);
	bool resize = strcmp(req->action, "resize") == 0;
	pthread_mutex_lock(&p->mu);
	if (strcmp(req->action, "close_stdin") == 0 && p->tty) {
		r = al_err(err, EINVAL,
			   "process %d's stdin is its terminal, which stays open while it runs: send ^D "
			   "(\\u0004) to end its input, or kill it",
			   p->pid);
	} else if (strcmp(req->action, "close_stdin") == 0) {
		if (p->stdin_w >= 0)
			close(p->stdin_w);
		p->stdin_w = -1;
	} else if (resize && !p->tty) {
		r = al_err(err, EINVAL, "process %d has no terminal to resize (started without pty)", p->pid);
	} else if (!p->job) {
		r = al_err(err, ESRCH, "process %d has ended", p->pid);
	} else if (strcmp(req->action, "kill") == 0) {
		r = al_job_kill(p->job);
	} else if (resize) {
		r = al_job_resize(p->job, req->cols, req->rows);
		if (r < 0) {
			r = al_err_sys(err, -r, "resize of process %d's terminal", p->pid);
		} else {
			p->cols = req->cols;
			p->rows = req->rows;
		}
	} else if (req->signal < 1 || req->signal > SIGRTMAX) {
		r = al_err(err, EINVAL, "signal %d is not a signal (1 to %d)", req->signal, SIGRTMAX);
	} else if ((r = al_job_signal(p->job, req->signal)) < 0) {
		r = al_err_sys(err, -r, "signal %d to process %d", req->signal, p->pid);
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

/* Copies what p holds beyond *pos (at most PROC_READ_BATCH bytes) into a list the caller owns. */
static struct pchunk *take_locked(struct sbproc *p, uint64_t *pos)
{
	struct pchunk *out = NULL, **tail = &out;
	size_t taken = 0;
	for (struct pchunk *c = p->head; c && taken < PROC_READ_BATCH; c = c->next) {
		if (c->off + c->len <= *pos)
			continue;
		size_t skip = c->off < *pos ? (size_t)(*pos - c->off) : 0, n = c->len - skip;
		struct pchunk *copy = malloc(sizeof(*copy) + n);
		if (!copy)
			break;
		*copy = (struct pchunk){.off = c->off + skip, .stream = c->stream, .len = n};
		memcpy(copy->data, c->data + skip, n);
		*tail = copy;
		tail = &copy->next;
		taken += n;
		*pos = c->off + c->len;
	}
	return out;
}

static bool op_cancelled(struct srv_op *op)
{
	pthread_mutex_lock(&op->mu);
	bool c = op->cancelled;
	pthread_mutex_unlock(&op->mu);
	return c;
}

/* What a connect read, for an answer that carries it (MCP): bounded, the rest counted. */
struct collected {
	char *text;
	size_t len;
	uint64_t left_out;
};

static void collect(struct collected *c, const struct pchunk *k)
{
	size_t room = c->len < PROC_KEEP_BYTES ? PROC_KEEP_BYTES - c->len : 0, n = k->len < room ? k->len : room;
	char *grown = n ? realloc(c->text, c->len + n + 1) : NULL;
	if (grown) {
		memcpy(grown + c->len, k->data, n);
		c->text = grown;
		c->len += n;
		c->text[c->len] = 0;
	} else {
		n = 0;
	}
	c->left_out += k->len - n;
}

static char *connect_answer(struct sbproc *p, const char *sandbox_id, const struct collected *c, uint64_t pos)
{
	pthread_mutex_lock(&p->mu);
	json_t *o = proc_json_locked(p, true);
	pthread_mutex_unlock(&p->mu);
	if (o) {
		json_object_set_new(o, "sandbox_id", json_string(sandbox_id));
		json_object_set_new(o, "next_offset", json_integer((json_int_t)pos));
		if (c->text || c->left_out)
			json_object_set_new(o, "output", txt_json_lossy(c->text ? c->text : "", c->len));
		if (c->left_out)
			json_object_set_new(o, "output_left_out_bytes", json_integer((json_int_t)c->left_out));
	}
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

/* connect: the output kept from op->offset on, then (follow) live until the end or a cancel. */
static void *connect_thread(void *arg)
{
	struct srv_op *op = arg;
	struct sbm *m = op->m;
	struct al_error err = {0};
	struct srv_result *res = NULL;
	struct sbx *s = sbx_get(m, op->sandbox_id, op->owner, &err);
	struct sbproc *p = NULL;
	bool busy = false;
	if (s) {
		pthread_mutex_lock(&m->mu);
		if ((p = find_locked(s, op->pid)) && p->readers >= PROC_READERS_MAX)
			p = NULL, busy = true;
		if (p)
			p->readers++;
		pthread_mutex_unlock(&m->mu);
	}
	int r = !s     ? -ENOENT
		: busy ? al_err(&err, EBUSY, "process %d already has %d readers", op->pid, PROC_READERS_MAX)
		: !p   ? al_err(&err, ESRCH, "no process %d in sandbox %s", op->pid, s->id)
		       : 0;
	uint64_t pos = op->offset, until = op->timeout_ms ? sbm_now_ms() + op->timeout_ms : UINT64_MAX;
	struct collected got_all = {0};
	while (r == 0 && p) {
		pthread_mutex_lock(&p->mu);
		if (p->head && pos < p->head->off)
			pos = p->head->off; /* what was dropped is counted in output_dropped_bytes */
		struct pchunk *got = take_locked(p, &pos);
		bool end = !got && (p->ended || !op->follow);
		if (!got && !end) {
			struct timespec t = al_deadline_ts(CLOCK_REALTIME, PROC_READ_SLICE);
			pthread_cond_timedwait(&p->cv, &p->mu, &t);
		}
		pthread_mutex_unlock(&p->mu);
		while (got) {
			struct pchunk *c = got;
			got = c->next;
			op_output_cb(op, c->stream, c->data, c->len);
			if (op->collect)
				collect(&got_all, c);
			free(c);
		}
		if (end || op_cancelled(op) || sbm_now_ms() >= until)
			break;
	}
	if (r == 0 && p && (res = srv_result_new()))
		res->process_json = connect_answer(p, s->id, &got_all, pos);
	free(got_all.text);
	if (p) {
		pthread_mutex_lock(&m->mu);
		p->readers--;
		pthread_mutex_unlock(&m->mu);
	}
	op_end(op, s, r, &err, res);
	return NULL;
}

/* The calls answered at once: list, get, stdin, close_stdin, signal, kill. */
static int process_now(struct sbm *m, struct sbx *s, const struct srv_process_req *req, const struct srv_sink *sink,
		       bool resumed, struct al_error *err)
{
	struct srv_result *res = srv_result_new();
	if (!res)
		return al_err(err, ENOMEM, "out of memory");
	int r = 0;
	if (strcmp(req->action, "list") == 0) {
		res->process_json = list_answer(m, s);
	} else {
		pthread_mutex_lock(&m->mu);
		struct sbproc *p = find_locked(s, req->pid);
		if (p)
			p->readers++; /* kept while we act on it */
		pthread_mutex_unlock(&m->mu);
		r = !p ? al_err(err, ESRCH, "no process %d in sandbox %s", req->pid, s->id)
		    : strcmp(req->action, "get") == 0 ? 0
						      : act(p, req, err);
		if (r == 0 && p)
			res->process_json = proc_answer(p, s->id, true);
		if (p) {
			pthread_mutex_lock(&m->mu);
			p->readers--;
			pthread_mutex_unlock(&m->mu);
		}
	}
	if (r == 0 && !res->process_json)
		r = al_err(err, ENOMEM, "out of memory");
	if (r < 0) {
		srv_result_free(res);
		return r;
	}
	res->sandbox_id = strdup(s->id);
	res->resumed = resumed;
	sink->on_done(sink->cookie, res);
	return 0;
}

int sbm_process(void *ctx, const struct srv_process_req *req, const struct srv_sink *sink, struct srv_op **out,
		struct al_error *err)
{
	struct sbm *m = ctx;
	static const char *const actions[] = {"list",	     "get",    "connect", "stdin",
					      "close_stdin", "signal", "kill",	  "resize"};
	bool known = false;
	for (size_t i = 0; req->action && i < AL_ARRAY_SIZE(actions); i++)
		known = known || strcmp(req->action, actions[i]) == 0;
	if (!known)
		return al_err(err, EINVAL,
			      "unknown process action \"%s\" (list, get, connect, stdin, close_stdin, "
			      "signal, kill, resize)",
			      req->action ? req->action : "");
	if (strcmp(req->action, "resize") == 0 &&
	    (req->cols < 1 || req->cols > SRV_PTY_MAX || req->rows < 1 || req->rows > SRV_PTY_MAX))
		return al_err(err, EINVAL, "resize: cols and rows must be 1 to %d (got %u x %u)", SRV_PTY_MAX,
			      req->cols, req->rows);
	if (strcmp(req->action, "list") != 0 && req->pid <= 0)
		return al_err(err, EINVAL, "process action \"%s\" needs a pid (a positive number)", req->action);
	if (strcmp(req->action, "connect") != 0) {
		/* stdin, a signal, a kill, a resize act on a process: its sandbox is resumed first (a
		 * signal to a frozen process would wait). list and get only look. */
		bool use = strcmp(req->action, "list") != 0 && strcmp(req->action, "get") != 0, resumed = false;
		struct sbx *s = use ? sbx_use(m, req->sandbox_id, req->owner, &resumed, err)
				    : sbx_get(m, req->sandbox_id, req->owner, err);
		if (!s)
			return -ENOENT;
		int r = process_now(m, s, req, sink, resumed, err);
		if (use)
			sbx_unuse(m, s);
		sbx_put(m, s);
		*out = NULL;
		return r;
	}
	if (sbx_known(m, req->sandbox_id, req->owner, err) < 0)
		return -ENOENT;
	struct srv_op *op = op_new(m, OP_PROCESS, sink);
	if (!op)
		return al_err(err, ENOMEM, "out of memory");
	op->sandbox_id = strdup(req->sandbox_id);
	snprintf(op->owner, sizeof(op->owner), "%s", req->owner ? req->owner : "");
	op->pid = req->pid;
	op->offset = req->offset;
	op->follow = req->follow;
	op->collect = req->collect;
	op->timeout_ms = req->wait_ms;
	if (!op->sandbox_id) {
		op_free(op);
		return al_err(err, ENOMEM, "out of memory");
	}
	return op_start_thread(m, op, connect_thread, out, err);
}
