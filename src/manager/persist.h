/* persist.h — the state directory of `airlock serve`: each kept sandbox's record and workspace
 * mirror on disk, so that the sandboxes outlive the server (issue 32).
 *
 *   DIR/lock            flock'd by the one server that keeps its sandboxes here
 *   DIR/<id>/sandbox.json   what the sandbox was made with, its owner, metadata, lifetime
 *   DIR/<id>/files/     the workspace's mirror (wsmirror.h)
 *   DIR/<id>/stage/     the mirror's writes before they are flushed and put in place
 *   DIR/.layers/<l>/files/  a frozen mirror (a fork's or a snapshot's): read-only, beneath the
 *                       workspaces of the sandboxes whose records name it; their files/ then hold
 *                       only their upper layer (what they changed: overlayfs's whiteouts and
 *                       opaque directories)
 *   DIR/.snapshots/<s>.json  a snapshot's record: its owner and the layers it stands on
 *
 * Durability: a record is written to a temporary file, flushed, renamed and its directory flushed;
 * a mirror's sync flushes before it returns (wsmirror.h). Space: a sandbox is kept only if the
 * state directory's filesystem has room for its whole disk limit beside the limits already
 * promised to the others (less what they already hold): a sync then never runs out of room
 * unless something else fills the filesystem. */
#ifndef AL_MANAGER_PERSIST_H
#define AL_MANAGER_PERSIST_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "manager/wsmirror.h"
#include "util/error.h"

struct pst;	/* a state directory, locked */
struct pst_box; /* one sandbox's state */

/* Opens (making it, 0700) and locks the state directory dir: another server keeping sandboxes there
 * is refused by name. */
int pst_open(const char *dir, struct pst **out, struct al_error *err);
void pst_close(struct pst *p);
const char *pst_path(const struct pst *p);
/* The path of a kept sandbox's record (or of a snapshot's), to name it outside the directory. */
int pst_record_path(const struct pst *p, const char *id, bool snapshot, char *buf, size_t len);
/* The ids of the sandboxes kept there (a JSON array of strings, yours). */
int pst_list(struct pst *p, json_t **ids, struct al_error *err);

/* A new sandbox's state, with room promised for disk bytes: refused (ENOSPC, EROFS, EACCES...)
 * with err saying why, and nothing left behind. */
int pst_box_make(struct pst *p, const char *id, uint64_t disk, struct pst_box **out, struct al_error *err);
/* 0 if the state directory has room for disk more bytes beside every box's promise (what
 * pst_box_make checks); -ENOSPC or -EROFS with err saying why (what needs the room) otherwise. */
int pst_room(struct pst *p, uint64_t disk, const char *what, struct al_error *err);
/* A kept sandbox's state (pst_list), its record in *rec (yours). */
int pst_box_open(struct pst *p, const char *id, uint64_t disk, struct pst_box **out, json_t **rec,
		 struct al_error *err);
/* Writes the record, durably. */
int pst_box_save(struct pst_box *b, const json_t *rec, struct al_error *err);
/* The mirror brought up to date with workspace ws (one sync at a time per box). */
int pst_box_sync(struct pst_box *b, int ws, struct wsm_stats *st, struct al_error *err);
/* Fills b's empty mirror with from's entries, linked rather than copied (a fork: from is synced
 * first); a pst_box_restore from b then fills the workspace and b's index. */
int pst_box_seed(struct pst_box *b, struct pst_box *from, struct al_error *err);
/* The bytes of file data its mirror holds, as of its last sync or restore. */
uint64_t pst_box_stored(struct pst_box *b);
/* The mirror copied into the new, empty workspace ws (see wsm_restore). */
int pst_box_restore(struct pst_box *b, int ws, uid_t uid, gid_t gid, struct wsm_stats *st, struct al_error *err);
/* ---- layers: DIR/.layers/<id>/files, a frozen workspace (a fork's or a snapshot's) that many
 * sandboxes' workspaces stand on read-only (al_policy_add_ws_layer), each with an upper layer of
 * its own whose mirror is its box's. A layer is named by the boxes standing on it (pst_box_layers,
 * their records) and the snapshots; it is removed when the last of them goes. */
#define PST_LAYER_ID 24
/* A new layer (its id in id): box from's mirror frozen (wsm_freeze: hard links, given to uid:gid).
 * Nothing stands on it yet: pst_layers_ref. */
int pst_layer_freeze(struct pst_box *from, uid_t uid, gid_t gid, char id[PST_LAYER_ID], struct wsm_stats *st,
		     struct al_error *err);
/* b lets go of its last freeze if that is layer id (the call that froze it was refused): the layer
 * goes unless a sandbox or snapshot stands on it, so a refusal leaves no layer behind. */
void pst_layer_forget(struct pst_box *b, const char *id);
/* The host path of layer id's files. */
int pst_layer_path(const struct pst *p, const char *id, char *buf, size_t len);
/* One more, one fewer user of each layer of ids (a JSON array of strings); the last one gone
 * removes the layer. */
int pst_layers_ref(struct pst *p, const json_t *ids);
void pst_layers_unref(struct pst *p, const json_t *ids);
/* Removes the layers nothing stands on (once every kept box and snapshot is open): how many. */
int pst_layers_gc(struct pst *p);
/* Box b's workspace stands on layers ids (the top first): b holds a reference on each until it is
 * removed, and its mirror keeps the upper layer (wsm_set_layered). */
int pst_box_layers(struct pst_box *b, const json_t *ids, struct al_error *err);

/* ---- snapshots: DIR/.snapshots/<id>.json, one snapshot's record (its owner, the layers it holds a
 * reference on, what a sandbox made from it is made with). Saved durably before the snapshot is
 * named to anyone; removed (durably) before its layers are let go, so that a crash between the
 * two leaves only a layer nothing names, which the next start removes (pst_layers_gc). */
int pst_snap_save(struct pst *p, const char *id, const json_t *rec, struct al_error *err);
int pst_snap_remove(struct pst *p, const char *id, struct al_error *err);
/* Every snapshot's record (a JSON array of objects, yours); none without the directory. */
int pst_snap_list(struct pst *p, json_t **recs, struct al_error *err);

/* Frees b; with remove, its state on disk goes too (a destroyed or expired sandbox). */
void pst_box_close(struct pst_box *b, bool remove);

#endif
