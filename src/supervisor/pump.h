/* pump.h — one output stream of the job: keep the first bytes, count the rest, optionally copy live. */
#ifndef AL_SUPERVISOR_PUMP_H
#define AL_SUPERVISOR_PUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pump {
	int fd;	     /* read end (non-blocking), -1 once at EOF */
	int live_fd; /* copy target, or -1 */
	bool capture;
	uint64_t limit; /* bytes kept (and copied live) */
	uint64_t total; /* bytes the job wrote */
	char *buf;	/* captured bytes, grown up to limit */
	size_t len, cap;
	void (*on_output)(void *cookie, int stream, const char *data, size_t len); /* or NULL */
	void *cookie;
	int stream; /* 1 or 2, for on_output */
	/* Events that must not wait behind a live copy (the deadline's timerfd, the stop signalfd;
	 * -1 for none): a reader that stops reading cannot hold the supervisor in write(). */
	const int *wake_fds; /* two descriptors, or NULL */
	const bool *killing; /* set once the job is being killed: then a live copy never waits */
	bool live_is_file;   /* the live target never blocks (a regular file): no poll needed */
};

/* Reads what is available. Returns 1 while open, 0 at EOF, -errno on error; at EOF and on error
 * the descriptor stays open for the caller to deregister and close. */
int pump_read(struct pump *p);
void pump_free(struct pump *p);

#endif
