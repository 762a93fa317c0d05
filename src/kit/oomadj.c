/* oomadj.c — reads and writes /proc/PID/oom_score_adj (see oomadj.h); no allocation. */
#include "kit/oomadj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/cleanup.h"

static int adj_open(pid_t pid, int flags)
{
	char path[48];
	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/oom_score_adj");
	int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int oom_adj_read(pid_t pid, int *adj)
{
	cleanup_close int fd = adj_open(pid, O_RDONLY);
	if (fd < 0)
		return fd;
	char buf[16];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	char *end;
	long v = strtol(buf, &end, 10);
	if (end == buf || v < -1000 || v > 1000)
		return -EIO;
	*adj = (int)v;
	return 0;
}

int oom_adj_write(pid_t pid, int adj)
{
	cleanup_close int fd = adj_open(pid, O_WRONLY);
	if (fd < 0)
		return fd;
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", adj);
	ssize_t n = write(fd, buf, (size_t)len);
	return n == len ? 0 : n < 0 ? -errno : -EIO;
}
