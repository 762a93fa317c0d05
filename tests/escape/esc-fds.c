/* esc-fds.c — hostile program: exhaust file descriptors, and lift the limit that stops it. */
/*
 * Usage: esc-fds
 * Opens /dev/null until open fails and reports how many it got ("opened=N", the errno);
 * then tries to raise RLIMIT_NOFILE (soft and hard) and the limit of pid 1, and to place a
 * descriptor far beyond the limit with dup2; also pipes until failure.
 * Expected defence: RLIMIT_NOFILE (--open-files), hard limit equal to the soft one, no
 * CAP_SYS_RESOURCE (raising the hard limit: EPERM), prlimit on another process refused.
 */
#include "esc.h"

#include <sys/resource.h>

int main(void)
{
	struct rlimit rl;

	esc_init();
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("nofile-soft=%llu\nnofile-hard=%llu\n", (unsigned long long)rl.rlim_cur,
	       (unsigned long long)rl.rlim_max);
	long opened = 0;
	int err = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0) {
			err = errno;
			break;
		}
		opened++;
		if (opened > 10000000)
			break;
	}
	printf("open-exhaust=%s\nopened=%ld\n", esc_errname(err), opened);
	printf("dup2-far=%s\n", dup2(0, 1 << 20) >= 0 ? "OK" : esc_errname(errno));

	struct rlimit up = {.rlim_cur = rl.rlim_max * 2 + 1024, .rlim_max = rl.rlim_max * 2 + 1024};
	esc_report("raise-hard", setrlimit(RLIMIT_NOFILE, &up));
	up.rlim_cur = up.rlim_max = 1 << 20;
	esc_report("prlimit-init", prlimit(1, RLIMIT_NOFILE, &up, NULL));
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("nofile-hard-after=%llu\n", (unsigned long long)rl.rlim_max);

	/* Give back most, then pipes: each holds two descriptors and pipe buffers. */
	for (int fd = 10; fd < 10 + opened - 4 && fd < (1 << 20); fd++)
		close(fd);
	long pipes = 0;
	int p[2];
	while (pipe(p) == 0)
		pipes++;
	printf("pipe-exhaust=%s\npipes=%ld\n", esc_errname(errno), pipes);
	return 0;
}
