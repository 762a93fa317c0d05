/* rlimits.c — setrlimit for the payload: CPU seconds, file size, open files, core 0, address space. */
#include "rlimits.h"

#include <errno.h>
#include <sys/resource.h>

static int set_limit(int resource, uint64_t soft, uint64_t hard)
{
	struct rlimit cur;
	if (getrlimit(resource, &cur) < 0)
		return -errno;
	if (hard > cur.rlim_max)
		hard = cur.rlim_max;
	if (soft > hard)
		soft = hard;
	struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
	return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

int rl_apply(const uint64_t limits[AL_LIMIT__COUNT])
{
	int r = set_limit(RLIMIT_CORE, 0, 0);
	uint64_t cpu = limits[AL_LIMIT_CPU_MS];
	if (r == 0 && cpu != AL_UNLIMITED) {
		uint64_t s = (cpu + 999) / 1000;
		/* SIGXCPU at the soft limit, SIGKILL a second later for programs that catch it. */
		r = set_limit(RLIMIT_CPU, s, s + 1);
	}
	if (r == 0)
		r = set_limit(RLIMIT_FSIZE, limits[AL_LIMIT_FSIZE], limits[AL_LIMIT_FSIZE]);
	if (r == 0)
		r = set_limit(RLIMIT_NOFILE, limits[AL_LIMIT_NOFILE], limits[AL_LIMIT_NOFILE]);
	if (r == 0 && limits[AL_LIMIT_AS] != AL_UNLIMITED)
		r = set_limit(RLIMIT_AS, limits[AL_LIMIT_AS], limits[AL_LIMIT_AS]);
	if (r == 0 && limits[AL_LIMIT_NPROC] != AL_UNLIMITED)
		r = set_limit(RLIMIT_NPROC, limits[AL_LIMIT_NPROC], limits[AL_LIMIT_NPROC]);
	return r;
}
