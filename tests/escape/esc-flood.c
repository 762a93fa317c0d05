/* esc-flood.c — hostile program: flood the supervisor with output (text on both streams at once, or raw binary). */
/*
 * Usage: esc-flood text STDOUT-BYTES STDERR-BYTES   exactly these byte counts, both
 *                                                   streams at the same time (a child writes
 *                                                   stderr), 64 KiB writes of a-z lines
 *        esc-flood binary BYTES                     every byte value 0..255 in turn, on stdout
 * Expected defence: the supervisor drains and counts everything but keeps only
 * --output-limit bytes per stream; its own memory stays small; the verdict says truncated
 * with the exact byte count and stays valid JSON whatever the bytes were.
 */
#include "esc.h"

#include <sys/wait.h>

static int pour(int fd, long long total, int binary)
{
	static char buf[65536];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = binary ? (char)(i & 0xff) : ((i % 64) == 63 ? '\n' : (char)('a' + (i % 64) % 26));
	while (total > 0) {
		size_t n = total < (long long)sizeof(buf) ? (size_t)total : sizeof(buf);
		ssize_t w = write(fd, buf, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		total -= w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "text") == 0) {
		long long out = esc_num(argv[2]), err = esc_num(argv[3]);
		pid_t pid = fork();
		if (pid == 0)
			_exit(pour(2, err, 0));
		int rc = pour(1, out, 0);
		int st = 0;
		if (pid > 0)
			waitpid(pid, &st, 0);
		return rc || !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (argc == 3 && strcmp(argv[1], "binary") == 0)
		return pour(1, esc_num(argv[2]), 1);
	fprintf(stderr, "usage: esc-flood text STDOUT-BYTES STDERR-BYTES | binary BYTES\n");
	return 2;
}
