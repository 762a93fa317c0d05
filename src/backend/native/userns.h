/* userns.h — the user namespace: id maps written by the parent, credentials switched in the child. */
#ifndef AL_NATIVE_USERNS_H
#define AL_NATIVE_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct uns_map {
	bool range;	     /* root: 65536 ids from host_base; otherwise the caller's single id */
	uint32_t host_base;  /* host id of sandbox id 0 (range), or the caller's uid (single) */
	uint32_t host_gid;   /* the caller's gid (single) */
	uint32_t count;
};

/* Decides the mapping for this caller. Pure apart from reading its own credentials. */
void uns_choose(struct uns_map *m, uint32_t id_base);
/* Parent side: write setgroups, uid_map and gid_map of pid. */
int uns_write_maps(pid_t pid, const struct uns_map *m, char *why, size_t whylen);
/* Child side, after the maps exist: become sandbox root (range) and drop supplementary groups. */
int uns_enter(const struct uns_map *m);
/* Payload side: become the unprivileged sandbox user. */
int uns_become_user(const struct uns_map *m, uid_t uid, gid_t gid);
/* The host uid that sandbox uid maps to. */
uint32_t uns_host_uid(const struct uns_map *m, uint32_t inside);

#endif
