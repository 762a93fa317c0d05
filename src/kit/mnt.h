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

#endif
