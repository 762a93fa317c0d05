/* pty.c — a pseudo-terminal of the sandbox's own devpts: open, size, controlling terminal (no allocation). */
#include "kit/pty.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

int pty_open(uint16_t cols, uint16_t rows, int *master, int *slave, const char **what)
{
	/* /dev/ptmx is the sandbox's own (a symlink to pts/ptmx of its devpts instance, fsplan.c):
	 * the pty and its number exist only there, and nothing of the host's terminals is reachable
	 * through it. */
	int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int unlock = 0, e;
	*what = "/dev/ptmx";
	if (m < 0)
		return -errno;
	*what = "unlocking the pty";
	if (ioctl(m, TIOCSPTLCK, &unlock) < 0)
		goto fail;
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	*what = "the terminal's size";
	if ((cols || rows) && ioctl(m, TIOCSWINSZ, &ws) < 0)
		goto fail;
	/* The peer from the master itself: a path under /dev/pts could be swapped by nobody here,
	 * but TIOCGPTPEER needs no lookup at all (Linux 4.13). */
	*what = "the pty's slave (TIOCGPTPEER)";
	int s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0)
		goto fail;
	*master = m;
	*slave = s;
	return 0;
fail:
	e = errno;
	close(m);
	return -e;
}

int pty_make_controlling(int fd)
{
	/* 0: never steal a terminal that is another session's (that needs CAP_SYS_ADMIN anyway). */
	return ioctl(fd, TIOCSCTTY, 0) < 0 ? -errno : 0;
}

int pty_resize(int fd, unsigned cols, unsigned rows)
{
	if (cols == 0 || rows == 0 || cols > 65535 || rows > 65535)
		return -EINVAL;
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	return ioctl(fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}
