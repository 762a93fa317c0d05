/* stdio.c — the MCP stdio transport: newline-delimited JSON-RPC on two descriptors, one poll loop. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "util/cleanup.h"
#include "util/error.h"

/*
 * One thread runs everything: poll(2) over the input, the session's eventfd (the manager's
 * callbacks, from any thread, queue their events and bump it) and an optional stop descriptor;
 * the timeout is the session's next approval deadline. Lines are bounded by the session's
 * message limit: a longer line is discarded as it arrives (never buffered whole) and answered
 * with an error, so a client cannot make the server hold more than about that limit.
 */

#define READ_CHUNK	  65536
#define SHUTDOWN_GRACE_MS 10000

struct reader {
	char *buf;
	size_t len, cap, scanned; /* scanned: bytes known to hold no newline */
	size_t max;		  /* the longest line accepted */
	bool discarding;	  /* inside a line longer than max */
	size_t discarded;
};

struct loop {
	struct mcp_session *s;
	int in_fd, out_fd, stop_fd;
	bool out_closed; /* the client stopped reading: keep serving nothing, shut down */
	struct reader rd;
};

/* ---- output ------------------------------------------------------------------------------- */

/* Writes all of p, with SIGPIPE blocked in this thread: a client that closed its end gets EPIPE
 * here instead of killing the process. A SIGPIPE that was not pending before is consumed. */
static int write_all(int fd, const char *p, size_t n)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int rc = 0;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			(void)poll(&pfd, 1, -1);
			continue;
		}
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	if (rc == -EPIPE && !was_pending) {
		struct timespec zero = {0, 0};
		(void)sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Sends every message of out as one line each, then empties out. */
static void flush_out(struct loop *l, json_t *out)
{
	size_t i;
	json_t *msg;
	json_array_foreach(out, i, msg) {
		char *line = NULL;
		ssize_t n = l->out_closed ? -1 : jr_encode(msg, &line);
		if (n < 0) {
			free(line);
			continue;
		}
		line[n] = '\n'; /* replaces the terminator: jr_encode's buffer has room for it */
		if (write_all(l->out_fd, line, (size_t)n + 1) < 0)
			l->out_closed = true;
		free(line);
	}
	json_array_clear(out);
}

/* ---- input -------------------------------------------------------------------------------- */

static void too_large(struct loop *l, json_t *out)
{
	char msg[JR_ERROR_MSG_MAX];
	snprintf(msg, sizeof(msg), "message too large (over %zu bytes): discarded", l->rd.max);
	json_t *e = jr_error(NULL, JR_INVALID_REQUEST, msg, NULL);
	if (e)
		json_array_append_new(out, e);
}

static void one_line(struct loop *l, char *line, size_t n, json_t *out)
{
	if (l->rd.discarding) {
		l->rd.discarding = false;
		too_large(l, out);
		return;
	}
	if (n && line[n - 1] == '\r')
		n--; /* tolerate CRLF from clients on other platforms */
	if (n == 0)
		return;
	if (mcp_session_feed(l->s, line, n, out) == -ENOMEM)
		mcp_session_log(l->s, MCP_LOG_ERROR, "out of memory handling a message", NULL);
}

/* Hands every complete line to the session; keeps the incomplete tail. */
static void take_lines(struct loop *l, json_t *out)
{
	struct reader *r = &l->rd;
	size_t start = 0;
	for (;;) {
		char *nl = memchr(r->buf + r->scanned, '\n', r->len - r->scanned);
		if (!nl)
			break;
		size_t end = (size_t)(nl - r->buf);
		one_line(l, r->buf + start, end - start, out);
		flush_out(l, out);
		start = r->scanned = end + 1;
	}
	memmove(r->buf, r->buf + start, r->len - start);
	r->len -= start;
	r->scanned = r->len;
	if (r->len > r->max) {
		/* The line cannot be accepted: forget it now instead of buffering it to its end. */
		r->discarding = true;
		r->discarded += r->len;
		r->len = r->scanned = 0;
	}
}

/* 1: data was read, 0: end of input, -errno: failure. */
static int read_input(struct loop *l, json_t *out)
{
	struct reader *r = &l->rd;
	ssize_t n;
	do
		n = read(l->in_fd, r->buf + r->len, r->cap - r->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 1 : -errno;
	if (n == 0)
		return 0;
	r->len += (size_t)n;
	take_lines(l, out);
	return 1;
}

/* ---- the loop ----------------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* After the input ended: cancel everything, give the manager a grace period to report each
 * operation done (so it lets go of processes and sandboxes), send nothing more. */
static void shut_down(struct loop *l, json_t *out)
{
	mcp_session_cancel_all(l->s);
	uint64_t until = now_ms() + SHUTDOWN_GRACE_MS;
	while (mcp_session_inflight(l->s) && now_ms() < until) {
		struct pollfd pfd = {.fd = mcp_session_fd(l->s), .events = POLLIN};
		(void)poll(&pfd, 1, 100);
		mcp_session_poll(l->s, out);
		json_array_clear(out);
	}
}

/* One turn: 1 to go on, 0 at the end of input or stop, -errno on failure. */
static int turn(struct loop *l, json_t *out)
{
	struct pollfd pfd[3] = {
		{.fd = l->in_fd, .events = POLLIN},
		{.fd = mcp_session_fd(l->s), .events = POLLIN},
		{.fd = l->stop_fd, .events = POLLIN},
	};
	int n = poll(pfd, l->stop_fd >= 0 ? 3 : 2, mcp_session_timeout(l->s));
	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	if (l->stop_fd >= 0 && pfd[2].revents)
		return 0;
	int r = 1;
	if (pfd[0].revents & POLLNVAL)
		return -EBADF;
	if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
		r = read_input(l, out);
	mcp_session_poll(l->s, out);
	flush_out(l, out);
	return l->out_closed ? 0 : r;
}

int mcp_serve_stdio(const struct mcp_opts *opts, int in_fd, int out_fd, int stop_fd, struct al_error *err)
{
	struct loop l = {.in_fd = in_fd, .out_fd = out_fd, .stop_fd = stop_fd};
	int r = mcp_session_new(opts, &l.s, err);
	if (r < 0)
		return r;
	/* Over stdio the client is whoever started us: our own uid is its principal. */
	char who[32];
	snprintf(who, sizeof(who), "uid:%u", (unsigned)getuid());
	mcp_session_set_principal(l.s, who);
	l.rd.max = opts->max_message ? opts->max_message : JR_DEFAULT_MAX_MESSAGE;
	l.rd.cap = l.rd.max + READ_CHUNK; /* a whole line of max bytes plus one read always fits */
	l.rd.buf = malloc(l.rd.cap);
	json_t *out = json_array();
	if (!l.rd.buf || !out) {
		r = al_err(err, ENOMEM, "mcp: out of memory");
	} else {
		while ((r = turn(&l, out)) > 0)
			;
		if (r < 0)
			al_err_sys(err, -r, "mcp: reading the input");
		shut_down(&l, out);
	}
	json_decref(out);
	free(l.rd.buf);
	mcp_session_free(l.s);
	return r < 0 ? r : 0;
}
