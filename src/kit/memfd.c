/* memfd.c — sealed memory files (see memfd.h). */
#include "kit/memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fsutil.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

int mfd_sealed(const char *name, const char *data, size_t len)
{
	/* Not executable (a program's text is read by its interpreter, never exec'd); kernels before
	 * 6.3 do not know the flag and get a plain sealable memfd. */
	cleanup_close int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int r = al_write_all(fd, data, len);
	if (r < 0)
		return r;
	/* Safe: F_SEAL_WRITE refuses every write (and every shared writable mapping) from now on,
	 * whoever holds the file; GROW and SHRINK keep its length; SEAL fixes the set. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		return -errno;
	/* The payload gets a read-only description of it: even a write that the seals would refuse
	 * is refused earlier, and the offset is not ours to share. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	return ro < 0 ? -errno : ro;
}
