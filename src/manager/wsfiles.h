/* wsfiles.h — the manager's file API on a sandbox's workspace: every client path is resolved
 * beneath the workspace descriptor by the kernel (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS),
 * so "..", absolute paths and symlinks planted by the sandbox cannot reach outside. */
#ifndef AL_MANAGER_WSFILES_H
#define AL_MANAGER_WSFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"
#include "manager/api.h"

#define WS_MAX_FILE (16u << 20) /* the limit of a write or read whose bytes are in memory */

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
/* An unnamed file beneath the workspace (O_TMPFILE), for an upload that ws_commit puts in place:
 * the descriptor (O_RDWR | O_CLOEXEC), or -errno (ENOSPC: the workspace is full). */
int ws_spool(int ws, uid_t uid, gid_t gid, struct al_error *err);
/* Puts the complete spool in place as path, all or nothing, with ws_write's rules (parents made, a
 * regular file only, its mode kept). The spool stays open (the caller closes it). */
int ws_commit(int ws, const char *path, int spool, uid_t uid, gid_t gid, struct al_error *err);
/* Whether path is one a write may name (beneath, no "..", a file name as its leaf): 0 or -errno. */
int ws_check_write_path(const char *path, struct al_error *err);
/* Stats path without following a final symlink (into a malloc'd *out). */
int ws_stat(int ws, const char *path, uid_t uid, gid_t gid, struct srv_file_stat **out, struct al_error *err);
/* Makes directory path with its parents (mkdir -p); *made tells whether the last one is new. */
int ws_mkdir(int ws, const char *path, uid_t uid, gid_t gid, bool *made, struct al_error *err);
/* Renames from to to as renameat2(2) does, beneath the workspace (no_replace: RENAME_NOREPLACE). */
int ws_move(int ws, const char *from, const char *to, bool no_replace, struct al_error *err);
/* Removes path (a file, a link itself, an empty directory; recursive: a tree), never following a
 * link, never crossing a mount point; *count gets the entries removed. */
int ws_remove(int ws, const char *path, bool recursive, uint64_t *count, struct al_error *err);
/* Unpacks the tar stream in spool beneath directory path (made as needed), all or nothing: regular
 * files, directories and symlinks that stay beneath it; *count gets the members unpacked. */
int ws_untar(int ws, const char *path, int spool, uid_t uid, gid_t gid, uint64_t *count, struct al_error *err);
/* Opens path (a regular file, any size) for reading: *fd (O_CLOEXEC) and its size
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
