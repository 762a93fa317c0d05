/* userns.h — the user namespace: id maps written by the parent, credentials switched in the child. */
#ifndef AL_KIT_USERNS_H
#define AL_KIT_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"

struct uns_map {
	bool range;		   /* root: 65536 ids from host_base; otherwise the caller's own id */
	bool subids;		   /* unprivileged with subordinate ids (newuidmap): see uns_choose */
	uint32_t host_base;	   /* host id of sandbox id 0 (range), or the caller's uid */
	uint32_t host_gid;	   /* the caller's gid */
	uint32_t sub_uid, sub_gid; /* first subordinate uid and gid (subids) */
	uint32_t count;		   /* ids mapped */
	uint32_t uid, gid;	   /* the payload's ids inside: where the caller's own ids go (not range) */
};

/* Decides the mapping for this caller, whose payload runs as uid:gid inside (AL_SANDBOX_UID, or
 * an image's User): root maps a range from id_base, holding every id below AL_IDS_PER_SANDBOX; a
 * user maps its own uid/gid at uid:gid and, with want_subids, its subordinate ids around them
 * (0 to uid-1 and uid+1 on). Fails (with err) only when subordinate ids were asked for and cannot
 * be had, or are too few to reach uid:gid. */
int uns_choose(struct uns_map *m, uint32_t id_base, bool want_subids, uint32_t uid, uint32_t gid, struct al_error *err);
/* Finds NAME's (or UID's) range in a subuid/subgid file's text. Pure. */
int uns_parse_subid(const char *text, const char *name, uint32_t uid, uint32_t *start, uint32_t *count);
/* Parent side: write setgroups, uid_map and gid_map of pid. */
int uns_write_maps(pid_t pid, const struct uns_map *m, char *why, size_t whylen);
/* A user namespace of its own holding map m, for an idmapped mount (mnt_idmap_tree): made by a child
 * that lives only while the maps are written and the namespace opened, as crun makes one for its
 * idmapped mounts. The namespace lives on in the descriptor (and in any mount it maps); nothing
 * ever runs in it. A descriptor (O_CLOEXEC), or -errno with why saying which step failed. */
int uns_open_ns(const struct uns_map *m, char *why, size_t whylen);
/* Child side, after the maps exist: become sandbox root (range) and drop supplementary groups. */
int uns_enter(const struct uns_map *m);
/* Payload side: become the unprivileged sandbox user. */
int uns_become_user(const struct uns_map *m, uid_t uid, gid_t gid);
/* The host uid that sandbox uid maps to (the payload's, or any id of a range). */
uint32_t uns_host_uid(const struct uns_map *m, uint32_t inside);
/* The host gid that sandbox gid maps to (likewise). */
uint32_t uns_host_gid(const struct uns_map *m, uint32_t inside);

#endif
