/* fsutil.c — tree removal without following links or crossing mounts (nftw FTW_PHYS|FTW_MOUNT). */
#include "fsutil.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
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
