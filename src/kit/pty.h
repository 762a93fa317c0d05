/* pty.h — a pseudo-terminal of the sandbox's own devpts, opened and taken as controlling terminal between fork and exec. */
#ifndef AL_KIT_PTY_H
#define AL_KIT_PTY_H

#include <stdint.h>

/* Opens a new pty through /dev/ptmx (the devpts mounted newinstance in the sandbox: never the
 * host's), unlocks it, sets its size (0 x 0: left as the kernel makes it) and takes its slave with
 * TIOCGPTPEER, so no path under /dev/pts is looked up. Both O_CLOEXEC and O_NOCTTY. 0, or -errno
 * with *what naming the step. No allocation: safe between clone and exec. */
int pty_open(uint16_t cols, uint16_t rows, int *master, int *slave, const char **what);
/* Makes fd's terminal the controlling terminal of the caller, which must lead a session that has
 * none (just after setsid): 0 or -errno. */
int pty_make_controlling(int fd);
/* TIOCSWINSZ on a master (or any terminal): 0, -errno, or -EINVAL for a size of 0 or above 65535. */
int pty_resize(int fd, unsigned cols, unsigned rows);

#endif
