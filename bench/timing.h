/* timing.h — the bench programs' clock and median (each program is one file, built by its script). */
#ifndef AL_BENCH_TIMING_H
#define AL_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC, in seconds. */
static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts v). */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

#endif
