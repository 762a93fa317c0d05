/* parse.c — the cgroup module's pure helpers: job names, cpu.max, and the parsers of cgroupfs and /proc text. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/cgroup.h"

int cg_name_format(char *buf, size_t size, pid_t owner, unsigned long counter, uint32_t rnd)
{
	int n = snprintf(buf, size, CG_NAME_PREFIX "%d-%lu-%08" PRIx32, (int)owner, counter, rnd);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return n;
}

/* Decimal digits only (no sign, no blanks, no leading zero except "0"), as cg_name_format writes them. */
static const char *cg_digits(const char *p, unsigned long long *v)
{
	const char *s = p;
	unsigned long long x = 0;
	while (*p >= '0' && *p <= '9') {
		if (x > (ULLONG_MAX - 9) / 10)
			return NULL;
		x = x * 10 + (unsigned)(*p++ - '0');
	}
	if (p == s || (p - s > 1 && *s == '0'))
		return NULL;
	*v = x;
	return p;
}

int cg_name_parse(const char *name, pid_t *owner)
{
	size_t pl = strlen(CG_NAME_PREFIX);
	unsigned long long pid, counter;
	if (strncmp(name, CG_NAME_PREFIX, pl) != 0)
		return -EINVAL;
	const char *p = cg_digits(name + pl, &pid);
	if (!p || *p++ != '-' || pid == 0 || pid > INT32_MAX)
		return -EINVAL;
	p = cg_digits(p, &counter);
	if (!p || *p++ != '-')
		return -EINVAL;
	for (int i = 0; i < 8; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return -EINVAL;
	if (p[8] != '\0')
		return -EINVAL;
	*owner = (pid_t)pid;
	return 0;
}

/* The kernel refuses a quota below 1 ms per period; rounding it up would give more CPU than asked. */
int cg_cpu_quota_us(uint64_t millis, uint64_t *quota_us)
{
	if (millis == AL_UNLIMITED || millis > UINT64_MAX / CG_CPU_PERIOD_US)
		return -EINVAL;
	uint64_t q = millis * CG_CPU_PERIOD_US / 1000;
	if (q < 1000)
		return -EINVAL;
	*quota_us = q;
	return 0;
}

int cg_cpu_max_format(uint64_t millis, char *buf, size_t size)
{
	int n;
	if (millis == AL_UNLIMITED) {
		n = snprintf(buf, size, "max %llu", CG_CPU_PERIOD_US);
	} else {
		uint64_t q;
		int r = cg_cpu_quota_us(millis, &q);
		if (r < 0)
			return r;
		n = snprintf(buf, size, "%" PRIu64 " %llu", q, CG_CPU_PERIOD_US);
	}
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return n;
}

int cg_parse_keyed(const char *text, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);
	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, key, kl) != 0 || line[kl] != ' ')
			continue;
		const char *v = line + kl + 1;
		if (*v < '0' || *v > '9')
			return -EINVAL;
		char *end;
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		if (errno || (*end != '\n' && *end != '\0'))
			return -EINVAL;
		*out = x;
		return 0;
	}
	return -ENOENT;
}

int cg_parse_cpu_stat(const char *text, double *user_s, double *system_s)
{
	uint64_t u = 0, s = 0;
	int r = cg_parse_keyed(text, "user_usec", &u);
	if (r == 0)
		r = cg_parse_keyed(text, "system_usec", &s);
	if (r < 0)
		return r;
	*user_s = (double)u / 1e6;
	*system_s = (double)s / 1e6;
	return 0;
}

int cg_parse_cpuacct_stat(const char *text, long ticks_per_s, double *user_s, double *system_s)
{
	uint64_t u = 0, s = 0;
	if (ticks_per_s <= 0)
		return -EINVAL;
	int r = cg_parse_keyed(text, "user", &u);
	if (r == 0)
		r = cg_parse_keyed(text, "system", &s);
	if (r < 0)
		return r;
	*user_s = (double)u / (double)ticks_per_s;
	*system_s = (double)s / (double)ticks_per_s;
	return 0;
}

int cg_parse_memory_events(const char *text, uint64_t *oom_kills)
{
	return cg_parse_keyed(text, "oom_kill", oom_kills);
}

int cg_parse_oom_control(const char *text, uint64_t *oom_kills)
{
	return cg_parse_keyed(text, "oom_kill", oom_kills);
}

int cg_parse_pids_events(const char *text, bool *hit)
{
	uint64_t n;
	int r = cg_parse_keyed(text, "max", &n);
	if (r == 0)
		*hit = n > 0;
	return r;
}

/* "pid (comm) state ppid ...": comm is free text, so fields are counted after its last ')'. */
int cg_parse_proc_field(const char *text, int field, uint64_t *value)
{
	const char *p = strrchr(text, ')');
	if (!p || field < 3)
		return -EINVAL;
	p++;
	/* After ')' and a space comes field 3 (state); each space further is one field along. */
	for (int f = 3; f < field; f++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p + 1, &end, 10);
	if (errno || end == p + 1 || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -EINVAL;
	*value = v;
	return 0;
}

int cg_parse_proc_start(const char *text, uint64_t *start_ticks)
{
	return cg_parse_proc_field(text, 22, start_ticks);
}

bool cg_started_before(uint64_t start_ticks, long ticks_per_s, int64_t btime, int64_t created)
{
	if (ticks_per_s <= 0)
		return true; /* unknown: assume the owner may be alive (never kill a live job) */
	int64_t started = btime + (int64_t)(start_ticks / (uint64_t)ticks_per_s);
	return started <= created + 2;
}

void cg_split_cpu(double total_s, double user_sample, double system_sample, double *user_s, double *system_s)
{
	double sampled = user_sample + system_sample;
	if (sampled <= 0) {
		*user_s = total_s; /* no sample: a job too short to be ticked runs mostly in user mode */
		*system_s = 0;
		return;
	}
	*user_s = total_s * user_sample / sampled;
	*system_s = total_s - *user_s;
}
