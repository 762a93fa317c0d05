/* mnt.h — the mount namespace: replays the filesystem plan in the child and pivots into it. */
#ifndef AL_KIT_MNT_H
#define AL_KIT_MNT_H

#include "channel.h"
#include "fsplan.h"

struct mnt_fail {
	enum nat_stage stage;
	int err;
	const char *what;
};

/* Opens every bind source (while the child can still read what the caller could). */
int mnt_open_sources(struct fs_plan *plan, struct mnt_fail *f);
void mnt_close_sources(struct fs_plan *plan);
/* Private propagation, a tmpfs root at staging, cwd there; returns the root's O_PATH fd.
 * under_fd (or -1): a detached mount to attach at staging first, below the root. */
int mnt_enter_root(const char *staging, int under_fd, struct mnt_fail *f);
int mnt_apply(struct fs_plan *plan, int rootfd, struct mnt_fail *f);
/* pivot_root into the cwd, detach the old root, make / read-only. */
int mnt_pivot(struct mnt_fail *f);
/* Gives tree, a detached mount (open_tree OPEN_TREE_CLONE, never attached yet), the id mapping of
 * the user namespace userns_fd: the ids of its files are read and written through that namespace's
 * maps. Its top mount only, never the mounts beneath it. The caller needs CAP_SYS_ADMIN over the
 * filesystem's and the namespace's owners (host root). 0 or -errno: EINVAL when the filesystem (or
 * the kernel) has no idmapped mounts, EPERM when the mount is idmapped already. */
int mnt_idmap_tree(int tree, int userns_fd);

#endif
