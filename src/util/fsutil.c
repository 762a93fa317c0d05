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

#include "util/cleanup.h"
#include "util/openat2.h"

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

/* Is path (absolute, as the tree sees it) an executable regular file under root ("" the host)? */
static bool executable_in(const char *root, const char *path)
{
	if (!*root)
		return access(path, X_OK) == 0;
	cleanup_close int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int fd = rfd < 0 ? -1 : al_openat2(rfd, path, O_PATH, 0, AL_RESOLVE_IN_ROOT);
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

bool al_find_program(const char *root, const char *path, const char *prog, char *buf, size_t cap)
{
	if (strchr(prog, '/')) {
		snprintf(buf, cap, "%s", prog);
		return executable_in(root, prog);
	}
	for (const char *d = path; d && *d;) {
		const char *e = strchrnul(d, ':');
		/* An empty or relative entry names the working directory, which is not the tree's. */
		if (*d == '/' && (size_t)snprintf(buf, cap, "%.*s/%s", (int)(e - d), d, prog) < cap &&
		    executable_in(root, buf))
			return true;
		d = *e ? e + 1 : e;
	}
	return false;
}

locale_t al_utf8_names(void)
{
	locale_t u = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	return u ? uselocale(u) : (locale_t)0;
}

void al_utf8_names_end(locale_t saved)
{
	if (!saved)
		return;
	locale_t u = uselocale(saved);
	if (u && u != saved && u != LC_GLOBAL_LOCALE)
		freelocale(u);
}
