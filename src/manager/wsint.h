/* wsint.h — what the workspace file modules (wsfiles.c, wsops.c, wstar.c) share: path resolution beneath the workspace. */
#ifndef AL_MANAGER_WSINT_H
#define AL_MANAGER_WSINT_H

#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

/* openat2 beneath dir with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS (flags get O_CLOEXEC): fd or -errno. */
int ws_beneath(int dir, const char *path, int flags, mode_t mode);
/* A client path relative to the workspace ("/workspace/x" and "/x" are "x"). */
const char *ws_relative(const char *path);
/* The client's words for a resolution failure (EXDEV, ELOOP: the path escapes). */
int ws_path_error(struct al_error *err, int e, const char *path);
/* The checked path's parent directory, made as needed; *rel (free it) holds *leaf. */
int ws_checked_parent(int ws, const char *path, uid_t uid, gid_t gid, char **rel, const char **leaf,
		      struct al_error *err);
/* One directory beneath dir, made if missing (0755, the sandbox user's), opened: fd or -errno. */
int ws_make_dir(int dir, const char *part, uid_t uid, gid_t gid, const char *shown, struct al_error *err);
/* Removes name beneath dir and all it holds (never following a link, never crossing a mount
 * point); *count gets the entries removed. 0 or -errno. */
int ws_rm_beneath(int dir, const char *name, uint64_t *count, struct al_error *err);
/* An unpredictable hidden name ".airlock-<what>-<16 hex>" in name. */
int ws_temp_name(char name[static 40], const char *what, struct al_error *err);

#endif
