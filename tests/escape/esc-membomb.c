/* esc-membomb.c — hostile program: eat memory (anonymous, tmpfs-backed, or memfd) until something stops it. */
/*
 * Usage: esc-membomb heap|tmpfs|memfd MAX-MIB
 *   heap   malloc and touch 1 MiB chunks
 *   tmpfs  write 1 MiB chunks into /tmp/esc-mem (tmpfs pages are memory too)
 *   memfd  write 1 MiB chunks into a memfd (memory without a file system limit)
 * Progress is reported every 8 MiB ("allocated=N" in MiB); at MAX-MIB it stops and says so.
 * Expected defence: the cgroup memory limit (--memory, swap off): the OOM killer ends the
 * job and the verdict says "oom"; for tmpfs also the --disk cap (ENOSPC) if that is lower.
 */
#include "esc.h"

#include <sys/mman.h>

int main(int argc, char **argv)
{
	static char chunk[1 << 20];

	esc_init();
	if (argc != 3) {
		fprintf(stderr, "usage: esc-membomb heap|tmpfs|memfd MAX-MIB\n");
		return 2;
	}
	long max = (long)esc_num(argv[2]);
	memset(chunk, 'm', sizeof(chunk));
	int fd = -1;
	if (strcmp(argv[1], "tmpfs") == 0)
		fd = open("/tmp/esc-mem", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	else if (strcmp(argv[1], "memfd") == 0)
		fd = memfd_create("esc-mem", MFD_CLOEXEC);
	else if (strcmp(argv[1], "heap") != 0)
		return 2;
	if (strcmp(argv[1], "heap") != 0 && fd < 0) {
		esc_report("open", -1);
		return 1;
	}
	for (long mib = 1; mib <= max; mib++) {
		if (fd < 0) {
			char *p = malloc(sizeof(chunk));
			if (!p) {
				printf("alloc=ENOMEM\nallocated=%ld\n", mib - 1);
				return 1;
			}
			memset(p, (int)mib, sizeof(chunk));
		} else if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
			printf("write=%s\nallocated=%ld\n", esc_errname(errno), mib - 1);
			return 1;
		}
		if (mib % 8 == 0)
			printf("allocated=%ld\n", mib);
	}
	printf("reached-max=%ld\n", max);
	return 0;
}
