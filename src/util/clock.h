/* clock.h — time arithmetic the waits share: an absolute deadline for pthread_cond_timedwait. */
#ifndef AL_UTIL_CLOCK_H
#define AL_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The time ms milliseconds from now on clock clk (the clock the waiting condition variable was
 * made with: CLOCK_REALTIME by default, CLOCK_MONOTONIC where its attribute says so). */
struct timespec al_deadline_ts(clockid_t clk, uint64_t ms);

#endif
