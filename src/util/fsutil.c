/* fsutil.c — tree removal without following links or crossing mounts (nftw FTW_PHYS|FTW_MOUNT), and
 * parent directories made with exact modes, descriptors kept off 0-2. */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int r = (type == FTW_DP || type == FTW_D) ? rmdir(path) : unlink(path);
	return r < 0 && errno != ENOENT ? -errno : 0;
}

int al_remove_tree(const char *path)
{
	int r = nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return r < 0 ? -errno : r;
}

int al_make_parents(const char *path, unsigned mode)
{
	char *dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	int r = 0;
	for (char *p = strchr(dir + 1, '/'); p && r == 0; p = strchr(p + 1, '/')) {
		*p = 0;
		if (mkdir(dir, (mode_t)mode) == 0)
			r = chmod(dir, (mode_t)mode) < 0 ? -errno : 0;
		else if (errno != EEXIST)
			r = -errno;
		*p = '/';
	}
	free(dir);
	return r;
}

int al_fd_above_stdio(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = errno;
	close(fd);
	errno = e;
	return n;
}

int al_pipe_above_stdio(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	p[0] = al_fd_above_stdio(p[0]);
	p[1] = al_fd_above_stdio(p[1]);
	return p[0] < 0 || p[1] < 0 ? -errno : 0;
}

int al_write_all(int fd, const void *buf, size_t len)
{
	for (const char *p = buf; len > 0;) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
