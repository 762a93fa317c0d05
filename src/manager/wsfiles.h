/* wsfiles.h — the manager's file API on a sandbox's workspace: every client path is resolved
 * beneath the workspace descriptor by the kernel (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS),
 * so "..", absolute paths and symlinks planted by the sandbox cannot reach outside. */
#ifndef AL_MANAGER_WSFILES_H
#define AL_MANAGER_WSFILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"
#include "manager/api.h"

#define WS_MAX_FILE (16u << 20) /* read and write limit per call */

/* The calling thread's filesystem identity (setfsuid/setfsgid are per thread). The file API acts
 * as the sandbox's user: its tmpfs belongs to the sandbox's user namespace, where host root is not
 * mapped (creating a file there as root fails with EOVERFLOW), and the sandbox user's permissions
 * are the right ones to apply. Changing fsuid away from 0 also drops root's file capabilities
 * (DAC override) until it is restored. */
struct ws_cred {
	uid_t uid;
	gid_t gid;
};
void ws_become(uid_t uid, gid_t gid, struct ws_cred *saved);
void ws_restore(const struct ws_cred *saved);

/* Writes data as path (parents created, 0755; a new file 0644; both whatever the umask), owned by
 * uid:gid. Only a regular file is written: a FIFO, socket, device or symlink at path is refused
 * (EINVAL) without blocking; a path with ".." is refused before any parent is created. */
int ws_write(int ws, const char *path, const void *data, size_t len, uid_t uid, gid_t gid, struct al_error *err);
/* Opens path (a regular file of at most WS_MAX_FILE bytes) for reading: *fd (O_CLOEXEC) and its size
 * when opened. The descriptor reads the file whatever the calling thread's identity later. */
int ws_open(int ws, const char *path, int *fd, size_t *size, struct al_error *err);
/* Reads path (a regular file of at most WS_MAX_FILE bytes) into a malloc'd *data. */
int ws_read(int ws, const char *path, char **data, size_t *len, struct al_error *err);
/* 0 when path (an exec's cwd: "/workspace/x" or "x") is a directory beneath the workspace; else
 * -EINVAL (none there, or it leaves the workspace) or -errno, with err naming it. Call as the
 * sandbox user (ws_become). */
int ws_dir(int ws, const char *path, struct al_error *err);
/* Lists directory path (NULL or "": the workspace) into a malloc'd array of entries. */
int ws_list(int ws, const char *path, struct srv_file_entry **entries, size_t *n, struct al_error *err);

#endif
