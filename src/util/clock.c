/* clock.c — time arithmetic the waits share. */
#include "util/clock.h"

struct timespec al_deadline_ts(clockid_t clk, uint64_t ms)
{
	struct timespec t;
	clock_gettime(clk, &t);
	t.tv_sec += (time_t)(ms / 1000);
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}
