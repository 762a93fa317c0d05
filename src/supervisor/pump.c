/* pump.c — bounded output handling: the supervisor's memory stays bounded whatever the job prints. */
#include "pump.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void keep(struct pump *p, const char *data, size_t n)
{
	if (p->len + n > p->cap) {
		size_t cap = p->cap ? p->cap : 4096;
		while (cap < p->len + n)
			cap *= 2;
		if (cap > p->limit + 1)
			cap = (size_t)p->limit + 1;
		char *b = realloc(p->buf, cap);
		if (!b)
			return; /* keep what we have; the byte count stays exact */
		p->buf = b;
		p->cap = cap;
	}
	memcpy(p->buf + p->len, data, n);
	p->len += n;
}

/* Waits until the live target takes a write; false when a wake descriptor (the deadline, a stop)
 * comes first, or, once the job is being killed, when it has no room right now. */
static bool wait_writable(const struct pump *p)
{
	struct pollfd pf[3] = {{.fd = p->live_fd, .events = POLLOUT},
			       {.fd = p->wake_fds[0], .events = POLLIN},
			       {.fd = p->wake_fds[1], .events = POLLIN}};
	bool now = p->killing && *p->killing;
	for (;;) {
		int n = poll(pf, now ? 1 : 3, now ? 0 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		return n > 0 && pf[0].revents; /* writable, or an error the write will report */
	}
}

static void copy_live(const struct pump *p, const char *data, size_t n)
{
	bool paced = !p->live_is_file && p->wake_fds;
	while (n > 0) {
		if (paced && !wait_writable(p))
			return;
		ssize_t w = write(p->live_fd, data, paced && n > PIPE_BUF ? PIPE_BUF : n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* a closed or failing reader does not stop the job */
		data += w;
		n -= (size_t)w;
	}
}

int pump_read(struct pump *p)
{
	char chunk[65536];
	for (;;) {
		ssize_t n = read(p->fd, chunk, sizeof(chunk));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 1 : -errno;
		}
		if (n == 0)
			return 0; /* the caller closes it, after taking it out of its event loop */
		uint64_t room = p->total < p->limit ? p->limit - p->total : 0;
		size_t use = (uint64_t)n < room ? (size_t)n : (size_t)room;
		if (use > 0 && p->capture)
			keep(p, chunk, use);
		if (use > 0 && p->live_fd >= 0)
			copy_live(p, chunk, use);
		if (use > 0 && p->on_output)
			p->on_output(p->cookie, p->stream, chunk, use);
		p->total += (uint64_t)n;
		if ((size_t)n < sizeof(chunk))
			return 1; /* drained for now */
	}
}

void pump_free(struct pump *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	free(p->buf);
	p->buf = NULL;
}
