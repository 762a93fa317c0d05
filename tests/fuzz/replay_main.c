/* replay_main.c — main() for fuzz targets outside libFuzzer: replays every file of a corpus directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (1u << 20) /* seeds are small; a bigger file is a mistake, not an input */

/* Reads one regular file (relative to dirfd) whole; returns its size or -errno. */
static ssize_t read_input(int dirfd, const char *name, uint8_t **out)
{
	cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)REPLAY_MAX_INPUT)
		return -EINVAL;
	/* One spare byte so an empty file still gets a valid, distinct pointer. */
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			free(buf);
			return -e;
		}
		got += (size_t)n;
	}
	*out = buf;
	return (ssize_t)got;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : AL_FUZZ_CORPUS;
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	/* Sorted, so a failure names the same input on every run. */
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				fprintf(stderr, "replay: out of memory\n");
				return 1;
			}
			names = grown;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			fprintf(stderr, "replay: out of memory\n");
			return 1;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), compare_names);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t *buf = NULL;
		ssize_t len = read_input(dirfd(d), names[i], &buf);
		if (len < 0) {
			fprintf(stderr, "replay: %s/%s: %s\n", dir, names[i], strerror((int)-len));
			rc = 1;
		} else {
			/* Named first, so a crash's output says which input caused it. */
			fprintf(stderr, "replay: %s\n", names[i]);
			LLVMFuzzerTestOneInput(buf, (size_t)len);
			free(buf);
		}
		free(names[i]);
	}
	free(names);
	closedir(d);
	if (n == 0) {
		/* An empty corpus would make this test unable to fail. */
		fprintf(stderr, "replay: %s: no inputs\n", dir);
		return 1;
	}
	printf("replay: %zu inputs from %s\n", n, dir);
	return rc;
}
