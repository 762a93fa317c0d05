/* tty.c — `airlock run -t`: the user's terminal in raw mode, relayed to and from the sandbox's own pty, restored at the end.
 *
 * The user's terminal is never given to the sandbox: the payload gets a pty of the sandbox's own
 * devpts (al_spawn_opts.tty). Its output reaches our stdout through the supervisor's live copy
 * (bounded by the output limit, as every job's); a thread of ours copies our stdin to the master
 * and turns SIGWINCH into a resize. Our terminal is put in raw mode (the sandbox's pty does the
 * line editing, echo and signals) and its modes are restored once the job is over, whatever ended
 * it: its own end, the time limit, a kill, our own SIGTERM/SIGINT/SIGHUP (taken by the stop
 * descriptor, so they end the job rather than us) or an error. */
#include "cli/tty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/cleanup.h"

int ftty_begin(struct ftty *t, uint16_t *cols, uint16_t *rows)
{
	*t = (struct ftty){.winch_fd = -1, .quit[0] = -1, .quit[1] = -1};
	if (!isatty(0))
		return -ENOTTY;
	struct winsize ws = {0};
	if (ioctl(0, TIOCGWINSZ, &ws) == 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
	if (tcgetattr(0, &t->saved) < 0)
		return -errno;
	/* SIGWINCH is taken by the relay's signalfd: blocked here, before the relay thread exists,
	 * so every thread has it blocked (the payload unblocks everything before it runs). */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (t->winch_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 || pipe2(t->quit, O_CLOEXEC) < 0)
		return -errno;
	struct termios raw = t->saved;
	cfmakeraw(&raw);
	if (tcsetattr(0, TCSANOW, &raw) < 0)
		return -errno;
	t->raw = true;
	return 0;
}

/* Writes all of buf to the master, waiting while the terminal is full; false once it is gone or
 * we are told to stop. */
static bool to_master(struct ftty *t, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(t->master, buf, n);
		if (w > 0) {
			buf += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 || errno != EAGAIN)
			return false; /* EIO: every slave is closed, the job is over */
		struct pollfd pf[2] = {{.fd = t->master, .events = POLLOUT}, {.fd = t->quit[0], .events = POLLIN}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return false;
		if (pf[1].revents)
			return false;
	}
	return true;
}

/* The window's size, as our terminal now has it, becomes the sandbox terminal's. */
static void forward_size(struct ftty *t)
{
	struct signalfd_siginfo si;
	while (read(t->winch_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	struct winsize ws;
	if (ioctl(0, TIOCGWINSZ, &ws) == 0)
		(void)al_job_resize(t->job, ws.ws_col, ws.ws_row);
}

static void *relay_main(void *arg)
{
	struct ftty *t = arg;
	char buf[4096];
	struct pollfd pf[3] = {{.fd = t->quit[0], .events = POLLIN},
			       {.fd = 0, .events = POLLIN},
			       {.fd = t->winch_fd, .events = POLLIN}};
	for (;;) {
		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents)
			break;
		if (pf[2].revents)
			forward_size(t);
		if (!pf[1].revents)
			continue;
		ssize_t n = read(0, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		/* End of our input (a hang-up) or a gone terminal: nothing more to send, the job goes on
		 * (a hang-up also stops it through the stop descriptor). */
		if (n <= 0 || !to_master(t, buf, (size_t)n))
			pf[1].fd = -1;
	}
	return NULL;
}

int ftty_relay(struct ftty *t, struct al_job *job)
{
	int m = al_job_tty(job);
	if (m < 0)
		return 0; /* the sandbox failed before its terminal existed: the verdict says why */
	t->job = job;
	t->master = m;
	int r = pthread_create(&t->thread, NULL, relay_main, t);
	if (r != 0)
		return -r;
	t->relaying = true;
	return 0;
}

void ftty_end(struct ftty *t)
{
	if (t->relaying) {
		(void)!write(t->quit[1], "q", 1);
		pthread_join(t->thread, NULL);
		t->relaying = false;
	}
	/* TCSAFLUSH: what was typed for the job and never read is not left for our shell. */
	if (t->raw)
		(void)tcsetattr(0, TCSAFLUSH, &t->saved);
	t->raw = false;
	int fds[] = {t->winch_fd, t->quit[0], t->quit[1]};
	for (size_t i = 0; i < AL_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	t->winch_fd = t->quit[0] = t->quit[1] = -1;
}
