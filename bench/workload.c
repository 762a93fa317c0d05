/* workload.c — the issue-3 slowdown workloads: one syscall-heavy, one CPU-bound, the same binary inside and outside.
 *
 * Built static (gcc -O2 -static) by bench/workload.sh, so it runs unchanged under bare
 * exec, bwrap and airlock without any library view. Usage:
 *
 *   workload syscalls N [PATH]   N x open(PATH, O_RDONLY) + fstat + close
 *                                (PATH defaults to /usr/lib/os-release: present on the host,
 *                                in bwrap's and in airlock's view, since all bind /usr)
 *   workload cpu N               N rounds of integer (xorshift, multiply, divide) and
 *                                floating-point (multiply-add, sqrt) work; no system calls
 *
 * Each prints one line on stdout: the workload, N, the loop's own time measured with
 * CLOCK_MONOTONIC around the loop (so process start-up and sandbox set-up are excluded),
 * and nanoseconds per iteration. The result of the computation is printed too, so the
 * compiler cannot remove the loop. Exit status: 0, or 1 on a failed call (after
 * saying which), or 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int usage(void)
{
	fprintf(stderr, "usage: workload syscalls N [PATH] | workload cpu N\n");
	return 2;
}

static int parse_n(const char *s, uint64_t *n)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*n = v;
	return 0;
}

static int run_syscalls(uint64_t n, const char *path)
{
	uint64_t sum = 0;
	struct stat st;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "workload: open %s: %s\n", path, strerror(errno));
			return 1;
		}
		if (fstat(fd, &st) < 0) {
			fprintf(stderr, "workload: fstat %s: %s\n", path, strerror(errno));
			return 1;
		}
		sum += (uint64_t)st.st_size;
		if (close(fd) < 0) {
			fprintf(stderr, "workload: close: %s\n", strerror(errno));
			return 1;
		}
	}
	uint64_t dt = now_ns() - t0;
	printf("syscalls n=%" PRIu64 " loop_ns=%" PRIu64 " ns_per_iter=%.1f check=%" PRIu64 "\n", n, dt,
	       n ? (double)dt / (double)n : 0.0, sum);
	return 0;
}

static int run_cpu(uint64_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15u, acc = 0;
	double f = 1.0, g = 0.0;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc += x * 2654435761u + x / ((i & 1023) + 3);
		f = f * 1.0000001 + 1e-9;
		g += sqrt((double)(x & 0xffff) + f);
	}
	uint64_t dt = now_ns() - t0;
	printf("cpu n=%" PRIu64 " loop_ns=%" PRIu64 " ns_per_iter=%.2f check=%" PRIu64 " %.6g\n", n, dt,
	       n ? (double)dt / (double)n : 0.0, acc, g);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n;
	if (argc < 3 || parse_n(argv[2], &n) < 0)
		return usage();
	if (strcmp(argv[1], "syscalls") == 0 && argc <= 4)
		return run_syscalls(n, argc == 4 ? argv[3] : "/usr/lib/os-release");
	if (strcmp(argv[1], "cpu") == 0 && argc == 3)
		return run_cpu(n);
	return usage();
}
