/* esc-selfmem.c — attack: write the process's own read-only memory through /proc/self/mem.
 *
 * The kernel writes /proc/PID/mem with FOLL_FORCE, which ignores the mapping's protection: a
 * payload can patch its own read-only code and data (W^X, RELRO, a read-only shared mapping of
 * a file it was given) without mprotect, which seccomp and the like would see. Reported:
 *   selfmem-open-rw     open("/proc/self/mem", O_RDWR)
 *   selfmem-write-ro    pwrite of a marker over a PROT_READ anonymous page
 *   selfmem-write-text  pwrite over this program's own code (main's first bytes, the same value)
 *   selfmem-changed     OK when the read-only page now holds the marker (the write took effect)
 *   info-selfmem-read   open("/proc/self/mem", O_RDONLY): reading is the process's own business
 */
#include "esc.h"

#include <stdint.h>
#include <sys/mman.h>

int main(void)
{
	esc_init();
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memcpy(p, "original", 9);
	if (mprotect(p, (size_t)page, PROT_READ) < 0)
		return 1;
	esc_report("info-selfmem-read", open("/proc/self/mem", O_RDONLY | O_CLOEXEC));
	int fd = (int)esc_report("selfmem-open-rw", open("/proc/self/mem", O_RDWR | O_CLOEXEC));
	if (fd >= 0) {
		esc_report("selfmem-write-ro", pwrite(fd, "patched", 8, (off_t)(uintptr_t)p));
		unsigned char code;
		const void *text = (const void *)&main;
		memcpy(&code, text, 1);
		esc_report("selfmem-write-text", pwrite(fd, &code, 1, (off_t)(uintptr_t)text));
	} else {
		printf("selfmem-write-ro=%s\nselfmem-write-text=%s\n", esc_errname(errno), esc_errname(errno));
	}
	printf("selfmem-changed=%s\n", strcmp(p, "patched") == 0 ? "OK" : "EFAULT");
	return 0;
}
