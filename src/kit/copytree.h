/* copytree.h — the throwaway copy of a checkout, made by init inside the sandbox's tmpfs. */
#ifndef AL_KIT_COPYTREE_H
#define AL_KIT_COPYTREE_H

#include <sys/types.h>

/* Copies the tree at src (a directory fd, any access mode) into the directory dst: regular
 * files, directories and symlinks (never followed), modes without set-id bits, every copy
 * owned by owner:group. Other file types are skipped. No allocation (init's rule); depth is
 * bounded. Returns 0 or -errno; *what names the entry that failed (a static buffer). */
int ct_copy(int src, int dst, uid_t owner, gid_t group, const char **what);

#endif
