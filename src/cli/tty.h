/* tty.h — the CLI's side of a terminal job (`airlock run -t`): raw mode, the input relay, the restore. */
#ifndef AL_CLI_TTY_H
#define AL_CLI_TTY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <termios.h>

#include "airlock/airlock.h"

struct ftty {
	struct termios saved; /* our terminal's modes before raw mode */
	bool raw;	      /* they were changed: ftty_end restores them */
	int winch_fd;	      /* signalfd of SIGWINCH */
	int quit[2];	      /* a byte on it ends the relay thread */
	int master;	      /* the job's pty master (borrowed from the job) */
	struct al_job *job;
	pthread_t thread;
	bool relaying;
};

/* Our stdin must be a terminal (-ENOTTY otherwise): its size into *cols x *rows (left as they
 * are when it has none), then raw mode. 0 or -errno; call ftty_end on every path after it. */
int ftty_begin(struct ftty *t, uint16_t *cols, uint16_t *rows);
/* Starts copying stdin to the job's terminal and window-size changes to it: 0 or -errno. */
int ftty_relay(struct ftty *t, struct al_job *job);
/* Stops the relay and restores the terminal's modes (idempotent). */
void ftty_end(struct ftty *t);

#endif
