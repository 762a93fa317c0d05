/* wsmirror.h — a sandbox's workspace kept on disk: a mirror directory brought up to date from the
 * live workspace (a size-capped tmpfs) at the end of each call, and copied back into a new
 * workspace when the server starts again (issue 32).
 *
 * Why a mirror and not the workspace itself on disk: the tmpfs is the one hard disk limit that
 * holds for root and for an ordinary user alike (no quota, no loop device needed), and it stays the
 * sandbox's only view. The mirror is the server's: beneath a 0700 state directory the sandbox
 * never sees, written with names the sandbox chose but never through a path it controls (each
 * level is our own descriptor; nothing in the mirror is followed).
 *
 * What is kept: regular files (holes stay holes), directories and symbolic links, with their
 * permission bits (set-id bits dropped; a server run as an ordinary user gives the owner read and
 * write back) and modification times. Sockets, FIFOs and devices are not
 * kept (but an overlay's whiteouts, in a layered sandbox's upper layer); hard links come back as
 * separate files. A change is found by the kernel's ctime, size,
 * inode and mode: a program cannot forge a ctime, so a rewrite that keeps size and mtime is still
 * seen. */
#ifndef AL_MANAGER_WSMIRROR_H
#define AL_MANAGER_WSMIRROR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

struct wsm; /* a mirror and its index of what it holds */

struct wsm_stats {
	uint64_t entries; /* files, directories and links the mirror holds */
	uint64_t copied;  /* entries written by this call */
	uint64_t removed; /* entries removed by this call */
	uint64_t bytes;	  /* data bytes written by this call */
	uint64_t stored;  /* bytes of file data the mirror holds */
	uint64_t shared;  /* of stored, the bytes a layer holds too (wsm_freeze): a rewrite takes new room */
	uint64_t skipped; /* entries not kept (sockets, FIFOs, devices, too deep) */
};

/* A mirror in directory files, staging its writes in directory stage (the same filesystem, empty):
 * both descriptors are dup'd. Its index starts empty: files must be empty too, or be filled by
 * wsm_restore before the first wsm_sync. */
int wsm_open(int files, int stage, struct wsm **out, struct al_error *err);
void wsm_free(struct wsm *w);
/* Brings the mirror up to date with the workspace ws: what changed is copied (staged, flushed,
 * then renamed in place: each entry is either its old or its new version after a crash), what is
 * gone is removed, and the filesystem is flushed again before 0 is returned. Reads as the calling
 * thread's identity. An entry that cannot be kept is counted (skipped); an error that stops the
 * mirror from being complete (ENOSPC, EIO) is returned with err, and what was kept before stays. */
int wsm_sync(struct wsm *w, int ws, struct wsm_stats *st, struct al_error *err);
/* Copies the mirror into the empty workspace ws, new entries owned by uid:gid (made as that user:
 * ws_become), and indexes them so that the next wsm_sync copies only what changed after. */
int wsm_restore(struct wsm *w, int ws, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err);
/* Fills the empty mirror to with from's entries as hard links (directories made anew), without
 * reading a byte: to's index stays empty, for a wsm_restore from it to fill. */
int wsm_link(const struct wsm *from, struct wsm *to, struct wsm_stats *st, struct al_error *err);
/* Copies the workspace from into the empty workspace to (a fork), as wsm_restore copies a mirror:
 * what a mirror keeps is copied, new entries owned by uid:gid. */
/* Fills the empty directory to with from's entries as hard links (directories made anew), given to
 * uid:gid, and flushes it: a frozen copy of the mirror, a read-only layer of other sandboxes'
 * workspaces (persist.h), made without reading a byte. from's later syncs never write in place;
 * its entries are marked shared from then on (wsm_stats.shared) until each is changed. */
int wsm_freeze(struct wsm *from, int to, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err);
/* The workspace is an overlay over layers: wsm_sync is given its upper layer (al_sandbox_upper)
 * and keeps whiteouts and opaque directories as they are there; wsm_restore is given the merged
 * view and replays them (a whiteout deletes, an opaque directory replaces). */
void wsm_set_layered(struct wsm *w, bool layered);
/* How many syncs changed the mirror so far: equal counts, the same files. */
uint64_t wsm_changes(const struct wsm *w);
int wsm_copy(int from, int to, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err);

#endif
