/* context.c — interpreter contexts of one sandbox: each a kernel exec on a socketpair, running cells one at a time (see context.h).
 *
 * Threads: the caller's worker thread runs a cell (writes 'x', reads frames until 'r', EOF, the
 * deadline or a cancel); one pump thread per kernel runs al_job_wait (the supervisor's loop: the
 * kernel's own output, its end, its accounting) and, when the kernel ends, shuts the socket down
 * so a cell waiting for frames sees EOF. cs->mu guards the list and each context's busy, dead and
 * death fields.
 */
#include "manager/context.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/error.h"

#define CTX_GRACE_MS  2000	  /* an interrupted cell's time to come back before its kernel is killed */
#define CTX_START_MS  30000	  /* a kernel's time to say hello (first imports, a cold page cache) */
#define CTX_HELLO_MAX (64u << 10) /* a kernel's hello: its pid and version */
#define CTX_CHUNK     (64u << 10) /* output frames are read in pieces of this, never whole */
#define CTX_CELL_MAX  (64u << 20) /* the most a cell's request may send a kernel */
#define CTX_ID_MAX    64
/* Contexts per sandbox: each kernel costs the server a supervising thread, so a client may not
 * make them without bound (the sandbox's cgroup bounds only what runs inside). */
#define CTX_PER_SANDBOX 16

extern const char ctx_pykernel[]; /* kernel/pykernel.py, embedded by cmake/embed.cmake */
extern const char ctx_jskernel[]; /* kernel/jskernel.js */

struct ctx {
	struct ctx *next;
	char id[CTX_ID_MAX + 1];
	char language[16];
	struct al_job *job; /* the running kernel, or NULL */
	int sock;	    /* our end of its channel, or -1 */
	pthread_t pump;
	bool pumping;		   /* pump started (joined when the kernel is stopped) */
	bool dead;		   /* the kernel ended (under cs->mu) */
	bool busy;		   /* a cell or a management call holds it (under cs->mu) */
	struct al_verdict *death;  /* the kernel's verdict once it ended */
	unsigned cells;		   /* cells run by the current kernel */
	unsigned restarts;	   /* kernels started for this context */
	struct al_job_census idle; /* what the kernel runs between cells, seen from the host at its hello */
	bool have_idle;
	bool server_restarted; /* made again after a restart of the server: its next cell says so */
	bool paused_to_disk;   /* ... or after its sandbox was paused to disk (its kernel ended there) */
};

struct ctx_set {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a context given back, or the set killed */
	bool killed;
	struct ctx *list;
	unsigned generation; /* bumped when a context is made or deleted: what the sandbox's record names */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool ctx_language_supported(const char *language)
{
	return language && (strcmp(language, "python") == 0 || strcmp(language, "shell") == 0 ||
			    strcmp(language, "javascript") == 0);
}

int ctx_set_new(struct ctx_set **out)
{
	struct ctx_set *cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	pthread_mutex_init(&cs->mu, NULL);
	pthread_cond_init(&cs->cv, NULL);
	*out = cs;
	return 0;
}

/* ---- kernels ------------------------------------------------------------------------------ */

struct pump_arg {
	struct ctx_set *cs;
	struct ctx *c;
	struct al_job *job; /* c->job may be cleared (kernel_stop) while this waits */
	int sock;
};

static void *pump_main(void *arg)
{
	struct pump_arg a = *(struct pump_arg *)arg;
	free(arg);
	struct al_verdict *v = NULL;
	struct al_error err = {0};
	(void)al_job_wait(a.job, &v, &err);
	pthread_mutex_lock(&a.cs->mu);
	a.c->death = v;
	a.c->dead = true;
	pthread_mutex_unlock(&a.cs->mu);
	/* A cell reading frames sees EOF now, whatever the kernel left in flight. */
	shutdown(a.sock, SHUT_RDWR);
	return NULL;
}

/* Stops c's kernel (if any) and forgets it: killed, pump joined, freed. c must not be running a
 * cell on another thread (busy held by the caller, or the set being freed). c->job leaves the
 * list's view under the lock first: ctx_set_kill never kills a freed job. */
static void kernel_stop(struct ctx_set *cs, struct ctx *c)
{
	pthread_mutex_lock(&cs->mu);
	struct al_job *job = c->job;
	c->job = NULL;
	pthread_mutex_unlock(&cs->mu);
	if (job)
		al_job_kill(job);
	if (c->pumping)
		pthread_join(c->pump, NULL);
	c->pumping = false;
	al_job_free(job);
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	al_verdict_free(c->death);
	c->death = NULL;
	c->dead = false;
}

/* The Python kernel's -c program: the kernel itself, taken out of the environment first. */
static const char py_boot[] = "import os; exec(compile(os.environ.pop('AL_KERNEL_SOURCE'), 'airlock-kernel', 'exec'))";

static const char *const one_thread[] = {"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"};

/* The kernel's policy: an exec's limits and environment, the language's interpreter with the
 * embedded kernel as its -c program, no wall-clock or CPU-time limit of its own (each cell has
 * its deadline here; the sandbox's cgroup bounds memory and processes). */
static int kernel_policy(const struct ctx_env *env, const struct cfg_language *l, const char *language,
			 struct al_policy **out, struct al_error *err)
{
	/* The Python driver is also the shell's kernel: a shell context's cells run in the shell
	 * language's interpreter, started by it. JavaScript has a kernel of its own. */
	bool js = strcmp(language, "javascript") == 0;
	const struct cfg_language *sh = cfg_language(env->cfg, "shell");
	char lang_env[64], shell_env[256];
	snprintf(lang_env, sizeof(lang_env), "AL_KERNEL_LANGUAGE=%s", language);
	snprintf(shell_env, sizeof(shell_env), "AL_KERNEL_SHELL=%s", sh && sh->command.n ? sh->command.v[0] : "bash");
	struct al_policy *p = NULL;
	int r = al_policy_new(&p);
	if (r < 0)
		return al_err(err, -r, "out of memory");
	/* node --expose-internals: the JavaScript kernel rewrites top-level await with Node's own
	 * REPL transform (see jskernel.js). The Python kernel's source comes in its environment and
	 * leaves it at once: as its -c argument it was the whole of the kernel's line in ps. */
	const char *argv[] = {l->command.v[0], js ? "--expose-internals" : "-c", js ? "-e" : py_boot, ctx_jskernel};
	r = al_policy_set_argv(p, js ? 4 : 3, argv, err);
	if (r == 0 && !js) {
		cleanup_free char *src = NULL;
		if (asprintf(&src, "AL_KERNEL_SOURCE=%s", ctx_pykernel) < 0)
			src = NULL;
		r = src ? al_policy_add_env(p, src, err) : al_err(err, ENOMEM, "out of memory");
	}
	r = r ?: cfg_apply_limits(&env->cfg->limits, p, true, err);
	r = r ?: al_policy_set_limit(p, AL_LIMIT_WALL_MS, AL_UNLIMITED, err);
	r = r ?: al_policy_set_limit(p, AL_LIMIT_CPU_MS, AL_UNLIMITED, err);
	/* Cells' output travels in frames; the kernel's own streams only carry its last words. */
	r = r ?: al_policy_set_limit(p, AL_LIMIT_OUTPUT, 64 << 10, err);
	r = r ?: al_policy_add_env(p, "PYTHONPATH=" AL_WORKSPACE, err);
	r = r ?: al_policy_add_env(p, "AL_KERNEL_WORKSPACE=" AL_WORKSPACE, err);
	r = r ?: al_policy_add_env(p, lang_env, err);
	r = r ?: al_policy_add_env(p, shell_env, err);
	/* Native thread pools (numpy's BLAS, OpenMP) stay one thread: a pool's idle workers would be
	 * threads outliving the cell that imported them, which restarts the kernel (left_running). */
	for (size_t i = 0; r == 0 && i < AL_ARRAY_SIZE(one_thread); i++)
		r = al_policy_add_env(p, one_thread[i], err);
	for (size_t i = 0; r == 0 && i < l->nenv; i++) {
		char kv[1024];
		snprintf(kv, sizeof(kv), "%s=%s", l->env[i].name, l->env[i].value);
		r = al_policy_add_env(p, kv, err);
	}
	r = r ?: al_policy_set_sandbox(p, env->sb, err);
	if (r < 0) {
		al_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

/* Waits until sock is readable: 0, -ETIMEDOUT past deadline, -ECANCELED once cancel_fd is readable. */
static int wait_readable(int sock, int cancel_fd, uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = cancel_fd, .events = POLLIN}};
		uint64_t left = deadline - now;
		int n = poll(p, cancel_fd >= 0 ? 2 : 1, left > 60000 ? 60000 : (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0 && cancel_fd >= 0 && p[1].revents)
			return -ECANCELED;
		if (n > 0 && p[0].revents)
			return 0;
	}
}

/* Reads exactly len bytes within deadline: 1, 0 on EOF, or wait_readable's -errno. */
static int read_full(int sock, int cancel_fd, uint64_t deadline, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		int r = wait_readable(sock, cancel_fd, deadline);
		if (r < 0)
			return r;
		ssize_t n = read(sock, (char *)buf + got, len - got);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return 0;
		if (n > 0)
			got += (size_t)n;
	}
	return 1;
}

/* Reads one frame's header within deadline (ms, now_ms() clock) or until cancel_fd is readable: 1
 * with its type and length, 0 on EOF, -ETIMEDOUT, -ECANCELED. The body follows on the socket. */
static int frame_head(int sock, int cancel_fd, uint64_t deadline, char *type, size_t *len)
{
	unsigned char h[5];
	int r = read_full(sock, cancel_fd, deadline, h, sizeof(h));
	if (r <= 0)
		return r;
	*type = (char)h[0];
	*len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
	return 1;
}

/* A body of len bytes (at most max: a larger one ends the kernel) into *body (malloc'd,
 * NUL-terminated): 1, or -EPROTO (too big, cut short). The rest of a frame that has begun comes
 * without waiting on the cell's deadline; a frame cut by a deadline leaves the stream unusable: the
 * caller then only interrupts or kills. */
static int frame_body(int sock, size_t len, size_t max, char **body)
{
	if (len > max)
		return -EPROTO;
	char *b = malloc(len + 1);
	if (!b)
		return -ENOMEM;
	int r = read_full(sock, -1, now_ms() + CTX_GRACE_MS, b, len);
	if (r <= 0) {
		free(b);
		return -EPROTO;
	}
	b[len] = 0;
	*body = b;
	return 1;
}

/* A body of len bytes handed to fn in pieces of CTX_CHUNK (fn NULL: dropped), so output costs
 * the server one piece whatever size the kernel's frame says: 1, or -EPROTO (cut short). */
static int frame_pieces(int sock, size_t len, void (*fn)(void *, const char *, size_t), void *arg)
{
	char buf[4096];
	uint64_t deadline = now_ms() + CTX_GRACE_MS;
	cleanup_free char *big = malloc(CTX_CHUNK);
	char *piece = big ? big : buf;
	size_t cap = big ? CTX_CHUNK : sizeof(buf);
	while (len) {
		size_t n = len < cap ? len : cap;
		if (read_full(sock, -1, deadline, piece, n) <= 0)
			return -EPROTO;
		if (fn)
			fn(arg, piece, n);
		len -= n;
	}
	return 1;
}

static int frame_write(int sock, char type, const void *data, size_t len)
{
	unsigned char *f = malloc(len + 5);
	if (!f)
		return -ENOMEM;
	f[0] = (unsigned char)type;
	for (int i = 0; i < 4; i++)
		f[1 + i] = (unsigned char)(len >> (24 - 8 * i));
	if (len)
		memcpy(f + 5, data, len);
	int r = 0;
	/* Blocking, with the socket's send timeout (kernel_start): a kernel that stops reading is
	 * given up on, never waited for. */
	for (size_t off = 0; r == 0 && off < len + 5;) {
		ssize_t n = send(sock, f + off, len + 5 - off, MSG_NOSIGNAL);
		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EINTR)
			r = -errno;
	}
	free(f);
	return r;
}

static int kernel_start(struct ctx_set *cs, struct ctx *c, const struct ctx_env *env, struct al_error *err)
{
	const char *kernel_lang = strcmp(c->language, "javascript") == 0 ? "javascript" : "python";
	const struct cfg_language *l = cfg_language(env->cfg, kernel_lang);
	if (!l || !l->command.n)
		return al_err(err, ENOENT, "no %s language configured: a %s context needs it", kernel_lang,
			      c->language);
	struct al_policy *p = NULL;
	int r = kernel_policy(env, l, c->language, &p, err);
	if (r < 0)
		return r;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		al_policy_free(p);
		return al_err(err, errno, "socketpair");
	}
	struct al_spawn_opts so = {.size = sizeof(so), .stdin_fd = sv[1]};
	struct al_job *job = NULL;
	r = al_job_spawn(p, &so, &job, err);
	al_policy_free(p);
	close(sv[1]); /* the kernel holds its own copy */
	if (r < 0) {
		close(sv[0]);
		return r;
	}
	pthread_mutex_lock(&cs->mu); /* ctx_set_kill reads it under the lock */
	c->job = job;
	pthread_mutex_unlock(&cs->mu);
	c->sock = sv[0];
	struct timeval snd = {.tv_sec = 5};
	(void)setsockopt(c->sock, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd));
	struct pump_arg *a = malloc(sizeof(*a));
	if (a)
		*a = (struct pump_arg){cs, c, c->job, c->sock};
	if (!a || pthread_create(&c->pump, NULL, pump_main, a) != 0) {
		free(a);
		kernel_stop(cs, c);
		return al_err(err, EAGAIN, "cannot start the kernel's supervisor thread");
	}
	c->pumping = true;
	pthread_mutex_lock(&cs->mu); /* the counters are listed under the lock */
	c->restarts++;
	c->cells = 0;
	pthread_mutex_unlock(&cs->mu);
	char t = 0;
	char *body = NULL;
	size_t len = 0;
	r = frame_head(c->sock, -1, now_ms() + CTX_START_MS, &t, &len);
	r = r == 1 ? frame_body(c->sock, len, CTX_HELLO_MAX, &body) : r;
	free(body);
	if (r == 1 && t == 'h') {
		/* What it runs once ready (its threads: the interpreter's, the channel's reader): more
		 * after a cell is what the cell left running. */
		c->have_idle = al_job_census(c->job, &c->idle) == 0;
		return 0;
	}
	/* Its last words (a missing interpreter, a seccomp refusal) tell the operator why. */
	al_job_kill(c->job);
	pthread_join(c->pump, NULL);
	c->pumping = false;
	const struct al_verdict *d = c->death;
	const char *last = !d ? NULL : d->status == AL_STATUS_SETUP_ERROR ? d->setup.msg : d->err.data;
	char why[200] = "";
	if (last && *last)
		snprintf(why, sizeof(why), ": %.*s", (int)strcspn(last, "\n"), last);
	/* -ENOTSUP: it never ran, its interpreter is not in the sandbox's root (an image without
	 * python3): the request's fault, not the server's, said so; the caller may run a default
	 * context's code as a fresh exec instead. Anything else is the kernel's failure. */
	int e = d && d->status == AL_STATUS_SETUP_ERROR ? ENOTSUP : EIO;
	if (e == ENOTSUP && d->setup.code == -ENOENT)
		al_err(err, e,
		       "a %s context cannot start here: %s is not found in this sandbox's root (an image "
		       "without it?)",
		       c->language, l->command.v[0]);
	else if (e == ENOTSUP)
		al_err(err, e, "a %s context cannot start here: %s cannot run in this sandbox%s", c->language,
		       l->command.v[0], why);
	else
		al_err(err, e, "the %s kernel did not start (%s)%s", c->language,
		       r == -ETIMEDOUT ? "no answer in time" : "it ended or spoke out of turn", why);
	kernel_stop(cs, c);
	return -e;
}

/* ---- cells -------------------------------------------------------------------------------- */

/* One cell in flight: its captured output and how it ended. */
struct cell_run {
	char *buf[2];
	size_t kept[2];
	uint64_t total[2];
	size_t cap;	  /* bytes kept per stream (the output limit) */
	size_t image_max; /* base64 bytes of figures (server.cell_image_limit) */
	json_t *res;	  /* the kernel's 'r' answer */
	bool timed_out, cancelled, lost;
	char broke[200];    /* how the kernel broke its protocol ("" if it did not): it was killed */
	char leftover[200]; /* what the cell left running at its end ("" if nothing): the kernel was restarted */
};

static void capture(struct cell_run *cr, const struct ctx_cell_req *req, int k, const char *d, size_t n)
{
	if (!n)
		return;
	cr->total[k] += n;
	size_t keep = cr->cap - cr->kept[k] < n ? cr->cap - cr->kept[k] : n;
	if (!keep)
		return; /* beyond the limit: counted, not kept, not streamed (as an exec's pump does) */
	char *b = realloc(cr->buf[k], cr->kept[k] + keep + 1);
	if (!b)
		return;
	memcpy(b + cr->kept[k], d, keep);
	cr->kept[k] += keep;
	b[cr->kept[k]] = 0;
	cr->buf[k] = b;
	if (req->on_output)
		req->on_output(req->cookie, k + 1, d, keep);
}

struct piece_arg {
	struct cell_run *cr;
	const struct ctx_cell_req *req;
	int k;
};

static void piece_out(void *arg, const char *d, size_t n)
{
	struct piece_arg *a = arg;
	capture(a->cr, a->req, a->k, d, n);
}

/* The cell's answer frame of len bytes, bounded before it is parsed (ctx_load_answer): a kernel
 * that sends more than an answer can hold has broken its protocol and is killed. */
static void cell_answer(struct ctx *c, size_t len, struct cell_run *cr)
{
	char *body = NULL;
	size_t max = ctx_answer_max(cr->cap, cr->image_max);
	int r = frame_body(c->sock, len, max, &body);
	if (r == 1)
		cr->res = ctx_load_answer(body, len, cr->cap, cr->image_max, cr->broke, sizeof(cr->broke));
	else if (r == -EPROTO && len > max)
		snprintf(cr->broke, sizeof(cr->broke), "its answer was %zu bytes, over the %zu an answer can need", len,
			 max);
	else
		snprintf(cr->broke, sizeof(cr->broke), "its answer of %zu bytes was cut short", len);
	free(body);
	if (!cr->res) {
		al_job_kill(c->job);
		cr->lost = true;
	}
}

/* Reads the cell's frames until its answer or the kernel's end. At the deadline or a cancel the
 * cell is interrupted once; past the grace period after that, the kernel is killed (lost). */
static void cell_loop(struct ctx *c, const struct ctx_cell_req *req, uint64_t deadline, struct cell_run *cr)
{
	bool interrupted = false;
	int cancel_fd = req->cancel_fd;
	for (;;) {
		char t = 0;
		size_t len = 0;
		int r = frame_head(c->sock, cancel_fd, deadline, &t, &len);
		if ((r == -ETIMEDOUT || r == -ECANCELED) && !interrupted) {
			*(r == -ETIMEDOUT ? &cr->timed_out : &cr->cancelled) = true;
			interrupted = true;
			cancel_fd = -1; /* stays readable: it has said what it had to */
			deadline = now_ms() + CTX_GRACE_MS;
			if (frame_write(c->sock, 'i', NULL, 0) == 0)
				continue;
		}
		if (r <= 0) {
			/* The kernel ended, broke the protocol or did not recover in time: its state is
			 * gone, and killing it ends its pid namespace and every process of the cell. */
			al_job_kill(c->job);
			cr->lost = true;
			return;
		}
		if (t == 'r') {
			cell_answer(c, len, cr);
			return;
		}
		struct piece_arg pa = {cr, req, t == 'e'};
		r = frame_pieces(c->sock, len, t == 'o' || t == 'e' ? piece_out : NULL, &pa);
		if (r < 0) {
			snprintf(cr->broke, sizeof(cr->broke), "its output frame of %zu bytes was cut short", len);
			al_job_kill(c->job);
			cr->lost = true;
			return;
		}
	}
}

/* Whether the cell left something running, judged from the host (the kernel's own word is the
 * sandbox's): more processes or threads in the kernel's exec than at its hello. A thread a cell
 * started would run on past the cell's time limit and beside the sandbox's next calls (it could
 * change what they run), so the kernel is then restarted; the cell's result and its stderr say so. */
static void left_running(struct ctx *c, const struct ctx_cell_req *req, struct cell_run *cr)
{
	unsigned procs = 0, threads = 0;
	/* A thread the kernel joined is gone for it before the kernel has reaped it (its exit still
	 * runs), and so is a killed process not yet reaped: what is more than idle is looked at again
	 * for up to about a quarter of a second, and only what stays counts. */
	for (unsigned wait_us = 1000; wait_us <= 128000; wait_us *= 2) {
		struct al_job_census now;
		if (!c->have_idle || al_job_census(c->job, &now) < 0)
			return;
		procs = now.processes > c->idle.processes ? now.processes - c->idle.processes : 0;
		threads = now.threads > c->idle.threads + procs ? now.threads - c->idle.threads - procs : 0;
		if (!procs && !threads)
			return;
		usleep(wait_us);
	}
	snprintf(cr->leftover, sizeof(cr->leftover),
		 "the cell left %u thread%s and %u process%s running at its end: the %s kernel was restarted and "
		 "its state is gone",
		 threads, threads == 1 ? "" : "s", procs, procs == 1 ? "" : "es", c->language);
	char note[256];
	int n = snprintf(note, sizeof(note), "airlock: %s\n", cr->leftover);
	capture(cr, req, 1, note, (size_t)n);
}

/* The output limit (bytes per stream) and the default wall-clock limit of an exec here. */
static void exec_limits(const struct ctx_env *env, uint64_t *wall_ms, uint64_t *cap)
{
	struct al_policy *p = NULL;
	struct al_error e = {0};
	*wall_ms = 30000;
	*cap = 1u << 20;
	if (al_policy_new(&p) < 0)
		return;
	if (cfg_apply_limits(&env->cfg->limits, p, true, &e) == 0) {
		*wall_ms = al_policy_get_limit(p, AL_LIMIT_WALL_MS);
		*cap = al_policy_get_limit(p, AL_LIMIT_OUTPUT);
	}
	al_policy_free(p);
	if (env->timeout_ms)
		*wall_ms = env->timeout_ms;
	if (*cap > CTX_CELL_MAX / 4)
		*cap = CTX_CELL_MAX / 4;
}

/* The cell's part of the result: the kernel's answer (ctx_answer) and what the manager knows. */
static char *cell_json(const struct ctx *c, const struct cell_run *cr, bool restarted, bool oom)
{
	json_t *o = ctx_answer(cr->res, cr->cap, cr->image_max);
	int r = o ? 0 : -1;
	r = r ?: json_object_set_new(o, "context_id", json_string(c->id));
	r = r ?: json_object_set_new(o, "language", json_string(c->language));
	r = r ?: json_object_set_new(o, "execution_count", json_integer(c->cells));
	r = r ?: json_object_set_new(o, "state", json_string(cr->lost || oom || *cr->leftover ? "lost" : "kept"));
	/* Why the state is gone, when the kernel was killed for what it did rather than ended. */
	if (r == 0 && (*cr->broke || *cr->leftover))
		r = json_object_set_new(o, "kernel_killed",
					json_pack("{s:s,s:s}", "reason", *cr->broke ? "protocol" : "left-running",
						  "detail", *cr->broke ? cr->broke : cr->leftover));
	r = r ?: json_object_set_new(o, "restarted", json_boolean(restarted));
	if (r == 0 && restarted && c->server_restarted)
		r = json_object_set_new(o, "restart_reason",
					json_string(c->paused_to_disk ? "paused-to-disk" : "server-restarted"));
	if (r == 0 && (cr->timed_out || cr->cancelled))
		r = json_object_set_new(o, "interrupted", json_true());
	char *s = r == 0 ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

/* Whether the cell ran out of memory: the sandbox cgroup's OOM kills went up while it ran (the
 * kernel or any process of the cell: the manager gives a sandbox's execs and cells turns, so
 * nothing else of this sandbox ran meanwhile), the kernel's verdict says so, or Python raised
 * MemoryError. */
static bool is_oom(const struct cell_run *cr, const struct al_verdict *death, const struct ctx_env *env,
		   uint64_t ooms_before)
{
	uint64_t ooms = 0;
	if (ooms_before != UINT64_MAX && al_sandbox_oom_kills(env->sb, &ooms) == 0 && ooms > ooms_before)
		return true;
	if (death && (death->status == AL_STATUS_OOM || death->oom_kills))
		return true;
	/* Python's own MemoryError (an address-space limit): the heap is in doubt, start clean. */
	const char *ename = json_string_value(json_object_get(json_object_get(cr->res, "error"), "ename"));
	return ename && strcmp(ename, "MemoryError") == 0;
}

/* The cell as a verdict, so every transport reports it as it reports an exec. */
static struct al_verdict *cell_verdict(struct cell_run *cr, const struct al_verdict *death, bool oom, double wall_s)
{
	struct al_verdict *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->backend = "native";
	struct al_stream_result *s[2] = {&v->out, &v->err};
	for (int k = 0; k < 2; k++) {
		s[k]->data = cr->buf[k];
		cr->buf[k] = NULL;
		s[k]->kept = cr->kept[k];
		s[k]->bytes = cr->total[k];
		s[k]->truncated = cr->total[k] > cr->kept[k];
	}
	v->wall_s = wall_s;
	json_int_t code = json_integer_value(json_object_get(cr->res, "exit_code"));
	v->exit_code = code < 0 || code > 255 ? 1 : (int)code;
	v->user_s = json_number_value(json_object_get(cr->res, "user_s"));
	v->system_s = json_number_value(json_object_get(cr->res, "system_s"));
	v->status = AL_STATUS_EXITED;
	if (oom) {
		v->status = AL_STATUS_OOM;
		v->oom_kills = death && death->oom_kills ? death->oom_kills : 1;
		v->exit_code = 0;
		v->signal = SIGKILL;
	} else if (cr->timed_out) {
		v->status = AL_STATUS_TIMEOUT;
	} else if (cr->cancelled) {
		v->status = AL_STATUS_KILLED;
		v->signal = SIGINT;
	} else if (*cr->broke) { /* killed by us for what it sent */
		v->status = AL_STATUS_SIGNALED;
		v->exit_code = 0;
		v->signal = SIGKILL;
	} else if (cr->lost && death) { /* the kernel itself ended: os._exit(), a signal */
		v->status = death->status;
		v->exit_code = death->exit_code;
		v->signal = death->signal;
	}
	if (death && death->cgroup_used) {
		v->cgroup_used = true;
		v->peak_memory_bytes = death->peak_memory_bytes;
	}
	return v;
}

/* The sandbox's enforced object with "cgroup" as the kernel's cgroup enforces it (as an exec's
 * verdict says it), or as the sandbox said when the kernel has none. */
static char *enforced_with(const char *sandbox, const struct al_job_cgroup *cg)
{
	json_t *e = cg ? json_loads(sandbox, 0, NULL) : NULL;
	if (!e)
		return strdup(sandbox);
	json_object_set_new(e, "cgroup",
			    json_pack("{s:s,s:b,s:b,s:b}", "version", cg->version ? cg->version : "", "memory",
				      cg->memory_limited, "pids", cg->pids_limited, "cpu", cg->cpu_limited));
	char *s = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	return s;
}

static bool valid_id(const char *id)
{
	size_t n = strlen(id);
	return n >= 1 && n <= CTX_ID_MAX &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* Under cs->mu: waits (a slice) for c to be given back; false once waiting must stop: the set is
 * killed, the caller cancelled (cancel_fd readable), or wait_ms passed since start. */
static bool wait_turn_locked(struct ctx_set *cs, int cancel_fd, uint64_t start, uint64_t wait_ms)
{
	struct pollfd pf = {.fd = cancel_fd, .events = POLLIN};
	if (cs->killed || (cancel_fd >= 0 && poll(&pf, 1, 0) > 0) || now_ms() - start >= wait_ms)
		return false;
	struct timespec t = al_deadline_ts(CLOCK_REALTIME, 250);
	pthread_cond_timedwait(&cs->cv, &cs->mu, &t);
	return true;
}

/* Takes context id (made for language if missing and create) for the caller alone, waiting up to
 * wait_ms (AL_UNLIMITED: until cancel_fd or the set's end) while another cell holds it: 0 and *out,
 * or -errno (busy with another cell, unknown, another language). */
static int ctx_take_now(struct ctx_set *cs, const char *id, const char *language, bool create, struct ctx **out,
			struct al_error *err);
static int ctx_take_wait(struct ctx_set *cs, const char *id, const char *language, bool create, int cancel_fd,
			 uint64_t wait_ms, struct ctx **out, struct al_error *err)
{
	*out = NULL;
	if (!valid_id(id))
		return al_err(err, EINVAL, "bad context_id \"%s\" (1-64 of A-Z a-z 0-9 _ . -)", id);
	uint64_t start = now_ms();
	for (;;) {
		pthread_mutex_lock(&cs->mu);
		struct ctx *c = cs->list;
		while (c && strcmp(c->id, id) != 0)
			c = c->next;
		bool again = c && c->busy && (!language || strcmp(c->language, language) == 0) &&
			     wait_turn_locked(cs, cancel_fd, start, wait_ms);
		pthread_mutex_unlock(&cs->mu);
		if (!again)
			break;
	}
	return ctx_take_now(cs, id, language, create, out, err);
}

static int ctx_take_now(struct ctx_set *cs, const char *id, const char *language, bool create, struct ctx **out,
			struct al_error *err)
{
	*out = NULL;
	pthread_mutex_lock(&cs->mu);
	struct ctx *c = cs->list;
	unsigned n = 0;
	for (struct ctx *k = cs->list; k; k = k->next)
		n++;
	while (c && strcmp(c->id, id) != 0)
		c = c->next;
	int r = 0;
	if (!c && create && n >= CTX_PER_SANDBOX) {
		pthread_mutex_unlock(&cs->mu);
		return al_err(err, EAGAIN, "limit reached: %d contexts in this sandbox (delete one first)",
			      CTX_PER_SANDBOX);
	}
	if (!c && create && (c = calloc(1, sizeof(*c)))) {
		snprintf(c->id, sizeof(c->id), "%s", id);
		snprintf(c->language, sizeof(c->language), "%s", language);
		c->sock = -1;
		c->next = cs->list;
		cs->list = c;
		cs->generation++;
	}
	if (!c) {
		if (create)
			al_err(err, ENOMEM, "out of memory");
		else
			al_err(err, ENOENT, "no context \"%s\"", id);
		r = create ? -ENOMEM : -ENOENT;
	} else if (language && strcmp(c->language, language) != 0)
		r = al_err(err, EINVAL, "context \"%s\" runs %s, not %s", id, c->language, language);
	else if (c->busy)
		r = al_err(err, EBUSY, "context \"%s\" is running another cell: wait for it, or use fresh", id);
	else
		c->busy = true;
	pthread_mutex_unlock(&cs->mu);
	*out = r == 0 ? c : NULL;
	return r;
}

static int ctx_take(struct ctx_set *cs, const char *id, const char *language, bool create, struct ctx **out,
		    struct al_error *err)
{
	return ctx_take_wait(cs, id, language, create, -1, 0, out, err);
}

static void ctx_give(struct ctx_set *cs, struct ctx *c)
{
	pthread_mutex_lock(&cs->mu);
	c->busy = false;
	pthread_cond_broadcast(&cs->cv);
	pthread_mutex_unlock(&cs->mu);
}

/* A kernel for c: the running one, or a new one when there is none or it ended. *fresh: new. */
static int kernel_ready(struct ctx_set *cs, struct ctx *c, const struct ctx_env *env, bool *fresh, struct al_error *err)
{
	pthread_mutex_lock(&cs->mu);
	bool alive = c->job && !c->dead;
	pthread_mutex_unlock(&cs->mu);
	*fresh = !alive;
	if (alive)
		return 0;
	kernel_stop(cs, c);
	return kernel_start(cs, c, env, err);
}

/* The cell's request; timeout_ms lets a kernel that cannot be interrupted (JavaScript's) stop the
 * cell itself, shortly before the manager's own deadline would interrupt it. */
static int send_cell(struct ctx *c, const struct ctx_cell_req *req, size_t cap, size_t image_max, uint64_t wall_ms)
{
	json_int_t t = wall_ms == AL_UNLIMITED || wall_ms > INT32_MAX ? 0 : (json_int_t)wall_ms;
	json_t *x = json_pack("{s:s%,s:I,s:I,s:I}", "code", req->code, req->code_len, "text_max", (json_int_t)cap,
			      "image_max", (json_int_t)image_max, "timeout_ms", t);
	char *s = x ? json_dumps(x, JSON_COMPACT) : NULL;
	json_decref(x);
	if (!s)
		return -ENOMEM;
	int r = strlen(s) > CTX_CELL_MAX ? -E2BIG : frame_write(c->sock, 'x', s, strlen(s));
	free(s);
	return r;
}

int ctx_run_cell(struct ctx_set *cs, const struct ctx_env *env, const struct ctx_cell_req *req, struct srv_result **out,
		 struct al_error *err)
{
	if (!ctx_language_supported(req->language))
		return al_err(err, ENOENT, "no interpreter context for %s (use fresh)", req->language);
	struct ctx *c = NULL;
	/* A cell waits for the one before it in its context, as long as it may run (a context's
	 * kernel runs one cell at a time; other execs of the sandbox run beside them). */
	int r = ctx_take_wait(cs, req->context_id ? req->context_id : req->language, req->language, true,
			      req->cancel_fd, env->timeout_ms ? env->timeout_ms : AL_UNLIMITED, &c, err);
	if (r < 0 || !c)
		return r < 0 ? r : -EIO;
	bool fresh = false;
	r = kernel_ready(cs, c, env, &fresh, err);
	uint64_t wall_ms, cap;
	exec_limits(env, &wall_ms, &cap);
	uint64_t im = env->cfg->server.cell_image_bytes ? env->cfg->server.cell_image_bytes : CFG_CELL_IMAGE_LIMIT;
	struct cell_run cr = {.cap = (size_t)cap, .image_max = (size_t)im};
	/* The first cell after a restart of the server says, beside its output, what it lost: code
	 * that reads only its output (a model) must not take the empty namespace for its own. */
	if (r == 0 && fresh && c->server_restarted) {
		char note[200];
		int n = snprintf(note, sizeof(note),
				 "airlock: %s since this context's last cell: its %s "
				 "kernel is new, and what it held is gone\n",
				 c->paused_to_disk ? "the sandbox was paused to disk" : "the server restarted",
				 c->language);
		capture(&cr, req, 1, note, (size_t)n < sizeof(note) ? (size_t)n : sizeof(note) - 1);
	}
	uint64_t ooms_before = UINT64_MAX;
	if (r == 0 && al_sandbox_oom_kills(env->sb, &ooms_before) < 0)
		ooms_before = UINT64_MAX;
	/* The cell's clock starts before the kernel has it: a kernel that ends a cell at its own limit
	 * (JavaScript's, counted from when it read the cell) is then always later than ours, and the
	 * cell is a timeout, not a cell that happened to end just in time. */
	uint64_t t0 = now_ms();
	if (r == 0 && (r = send_cell(c, req, cr.cap, cr.image_max, wall_ms)) < 0)
		al_err(err, -r, "the %s kernel does not take cells", c->language);
	if (r < 0) {
		kernel_stop(cs, c);
		ctx_give(cs, c);
		return r;
	}
	cell_loop(c, req, wall_ms == AL_UNLIMITED ? UINT64_MAX : t0 + wall_ms, &cr);
	if (!cr.lost)
		left_running(c, req, &cr);
	if (*cr.broke) {
		char note[320];
		int n = snprintf(note, sizeof(note),
				 "airlock: the %s kernel broke its protocol (%s): it was killed and its "
				 "state is gone\n",
				 c->language, cr.broke);
		capture(&cr, req, 1, note, (size_t)n < sizeof(note) ? (size_t)n : sizeof(note) - 1);
	}
	double wall_s = (double)(now_ms() - t0) / 1000.0;
	pthread_mutex_lock(&cs->mu);
	c->cells++;
	pthread_mutex_unlock(&cs->mu);
	if (cr.lost && c->pumping) { /* its verdict (OOM, exit status) says how it ended */
		pthread_join(c->pump, NULL);
		c->pumping = false;
	}
	bool oom = is_oom(&cr, c->death, env, ooms_before);
	/* A living kernel's own cgroup (an exec's in a held sandbox): the cell's verdict reports it as
	 * an exec's does, with the context's peak memory so far. */
	struct al_job_cgroup kcg;
	pthread_mutex_lock(&cs->mu);
	bool alive = !c->dead && c->job;
	pthread_mutex_unlock(&cs->mu);
	bool have_kcg = alive && al_job_cgroup(c->job, &kcg) == 0;
	struct srv_result *res = srv_result_new();
	if (res) {
		res->verdict = cell_verdict(&cr, c->death, oom, wall_s);
		if (res->verdict && have_kcg) {
			res->verdict->cgroup_used = true;
			res->verdict->peak_memory_bytes = kcg.peak_memory_bytes;
			res->verdict->oom_kills = oom ? res->verdict->oom_kills : 0;
			res->verdict->pids_limit_hit = kcg.pids_limit_hit;
		}
		/* The protections are the sandbox's, as for any exec in it, with the kernel's cgroup. */
		if (res->verdict && al_sandbox_enforced(env->sb))
			res->verdict->enforced_json =
				enforced_with(al_sandbox_enforced(env->sb), have_kcg ? &kcg : NULL);
		res->cell_json = cell_json(c, &cr, fresh && c->restarts > 1, oom);
	}
	c->server_restarted = false; /* said once (c is ours: busy) */
	if (cr.lost || oom || *cr.leftover)
		kernel_stop(cs, c); /* the next cell starts a clean kernel */
	ctx_give(cs, c);
	json_decref(cr.res);
	free(cr.buf[0]);
	free(cr.buf[1]);
	if (!res || !res->verdict || !res->cell_json) {
		srv_result_free(res);
		return al_err(err, ENOMEM, "out of memory");
	}
	*out = res;
	return 0;
}

/* ---- management --------------------------------------------------------------------------- */

static json_t *ctx_list_json(struct ctx_set *cs)
{
	json_t *a = json_array();
	pthread_mutex_lock(&cs->mu);
	for (struct ctx *c = cs->list; a && c; c = c->next)
		json_array_append_new(a,
				      json_pack("{s:s,s:s,s:b,s:b,s:i,s:i}", "context_id", c->id, "language",
						c->language, "running", c->job && !c->dead, "busy", c->busy,
						"execution_count", (int)c->cells, "kernels_started", (int)c->restarts));
	pthread_mutex_unlock(&cs->mu);
	return json_pack("{s:o}", "contexts", a);
}

/* Takes c off the list and frees it (the caller holds it busy). */
static void ctx_delete(struct ctx_set *cs, struct ctx *c)
{
	kernel_stop(cs, c);
	pthread_mutex_lock(&cs->mu);
	for (struct ctx **pp = &cs->list; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	cs->generation++;
	pthread_mutex_unlock(&cs->mu);
	free(c);
}

static int manage_one(struct ctx_set *cs, const struct ctx_env *env, const struct srv_context_req *req, json_t **answer,
		      struct al_error *err)
{
	const char *act = req->action ? req->action : "";
	bool create = strcmp(act, "create") == 0;
	if (create && !ctx_language_supported(req->language))
		return al_err(err, ENOENT, "no interpreter context for %s", req->language ? req->language : "(none)");
	const char *id = req->context_id ? req->context_id : create ? req->language : NULL;
	if (!id)
		return al_err(err, EINVAL, "%s needs a context_id", act);
	if (!create && strcmp(act, "restart") != 0 && strcmp(act, "delete") != 0)
		return al_err(err, EINVAL, "unknown action \"%s\" (create, list, restart, delete)", act);
	struct ctx *c = NULL;
	int r = ctx_take(cs, id, create ? req->language : NULL, create, &c, err);
	if (r < 0 || !c)
		return r < 0 ? r : -EIO;
	if (create && c->restarts) {
		ctx_give(cs, c);
		return al_err(err, EEXIST, "context \"%s\" exists", id);
	}
	if (strcmp(act, "delete") == 0) {
		ctx_delete(cs, c);
		*answer = json_pack("{s:s,s:b}", "context_id", id, "deleted", 1);
		return 0;
	}
	kernel_stop(cs, c); /* restart: whatever it held is gone */
	r = kernel_start(cs, c, env, err);
	if (r < 0 && create)
		ctx_delete(cs, c);
	else if (r < 0)
		ctx_give(cs, c);
	if (r < 0)
		return r;
	*answer = json_pack("{s:s,s:s,s:b}", "context_id", id, "language", c->language, "running", r == 0);
	ctx_give(cs, c);
	return 0;
}

int ctx_manage(struct ctx_set *cs, const struct ctx_env *env, const struct srv_context_req *req,
	       struct srv_result **out, struct al_error *err)
{
	json_t *answer = NULL;
	int r = req->action && strcmp(req->action, "list") == 0 ? 0 : manage_one(cs, env, req, &answer, err);
	if (r < 0)
		return r;
	if (!answer)
		answer = ctx_list_json(cs);
	struct srv_result *res = srv_result_new();
	if (res)
		res->cell_json = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
	json_decref(answer);
	if (!res || !res->cell_json) {
		srv_result_free(res);
		return al_err(err, ENOMEM, "out of memory");
	}
	*out = res;
	return 0;
}

void ctx_set_kill(struct ctx_set *cs)
{
	if (!cs)
		return;
	pthread_mutex_lock(&cs->mu);
	cs->killed = true;
	for (struct ctx *c = cs->list; c; c = c->next)
		if (c->job)
			al_job_kill(c->job);
	pthread_cond_broadcast(&cs->cv);
	pthread_mutex_unlock(&cs->mu);
}

void ctx_set_free(struct ctx_set *cs)
{
	if (!cs)
		return;
	while (cs->list) {
		struct ctx *c = cs->list;
		cs->list = c->next;
		kernel_stop(cs, c);
		free(c);
	}
	pthread_mutex_destroy(&cs->mu);
	pthread_cond_destroy(&cs->cv);
	free(cs);
}

/* ---- what a restart keeps: the contexts' names ---------------------------------------------- */

json_t *ctx_set_names(struct ctx_set *cs, unsigned *generation)
{
	json_t *a = json_array();
	if (!cs) {
		*generation = 0;
		return a;
	}
	pthread_mutex_lock(&cs->mu);
	for (struct ctx *c = cs->list; a && c; c = c->next)
		if (json_array_append_new(a, json_pack("{s:s,s:s}", "context_id", c->id, "language", c->language)) <
		    0) {
			json_decref(a);
			a = NULL;
		}
	*generation = cs->generation;
	pthread_mutex_unlock(&cs->mu);
	return a;
}

int ctx_set_lost(struct ctx_set *cs, const char *id, const char *language, bool paused_to_disk)
{
	if (!id || !valid_id(id) || !ctx_language_supported(language))
		return -EINVAL;
	struct ctx *c = NULL;
	struct al_error err = {0};
	int r = ctx_take(cs, id, language, true, &c, &err);
	if (r < 0)
		return r;
	/* Counted as a kernel started, so the next one is a restart (cell_json's restarted). */
	pthread_mutex_lock(&cs->mu);
	c->restarts = 1;
	c->server_restarted = true;
	c->paused_to_disk = paused_to_disk;
	cs->generation = 0;
	pthread_mutex_unlock(&cs->mu);
	ctx_give(cs, c);
	return 0;
}
