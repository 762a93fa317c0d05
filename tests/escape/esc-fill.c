/* esc-fill.c — hostile program: fill a file system with data. */
/*
 * Usage: esc-fill FILE MAX-MIB
 * Appends 1 MiB chunks of non-zero data (so no file system can store them as holes) to
 * FILE until a write fails or MAX-MIB is reached; reports the bytes that landed and the
 * errno that stopped it ("fill=ENOSPC", "filled-bytes=N").
 * Expected defence: the size-capped tmpfs of /workspace and /tmp (--disk: ENOSPC), or for
 * --workdir the --disk-sized upper layer; RLIMIT_FSIZE (--file-size: EFBIG) as a second cap.
 */
#include "esc.h"

#include <signal.h>

int main(int argc, char **argv)
{
	static char chunk[1 << 20];

	esc_init();
	if (argc != 3) {
		fprintf(stderr, "usage: esc-fill FILE MAX-MIB\n");
		return 2;
	}
	signal(SIGXFSZ, SIG_IGN); /* see EFBIG instead of dying */
	long max = (long)esc_num(argv[2]);
	memset(chunk, 'f', sizeof(chunk));
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		esc_report("fill-open", -1);
		return 1;
	}
	long long total = 0;
	int err = 0;
	for (long i = 0; i < max; i++) {
		size_t off = 0;
		while (off < sizeof(chunk)) {
			ssize_t n = write(fd, chunk + off, sizeof(chunk) - off);
			if (n <= 0) {
				err = n < 0 ? errno : ENOSPC;
				break;
			}
			off += (size_t)n;
			total += n;
		}
		if (err)
			break;
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	close(fd);
	printf("fill=%s\nfilled-bytes=%lld\n", err ? esc_errname(err) : "OK", total);
	return 0;
}
