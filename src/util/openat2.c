/* openat2.c — the one openat2(2) call (see openat2.h). */
#include "util/openat2.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How often a raced walk is tried again: an honest race ends at the next try or so; one that lasts
 * this long is made on purpose. */
#define OPENAT2_RETRIES 64

int al_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
	struct open_how how = {.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC), .mode = mode, .resolve = resolve};
	long fd;
	int tries = 0;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN && ++tries < OPENAT2_RETRIES);
	return fd < 0 ? -errno : (int)fd;
}
