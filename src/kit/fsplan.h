/* fsplan.h — the sandbox's filesystem as a list of setup operations: built (pure) in the parent, replayed in the child. */
#ifndef AL_KIT_FSPLAN_H
#define AL_KIT_FSPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kit/landlock.h"
#include "policy/policy.h"

enum fs_kind {
	FS_MKDIR,   /* dest: directory (parents created) */
	FS_SYMLINK, /* dest -> text */
	FS_FILE,    /* dest: regular file holding text */
	FS_BIND,    /* host src bound at dest (mount point created to match) */
	FS_TMPFS,   /* tmpfs at dest with options text */
	FS_PROC,    /* a new procfs at dest */
	FS_DEVPTS,  /* a new devpts instance at dest */
	FS_SETATTR, /* mount attributes on dest (attr_set), e.g. read-only after population */
	FS_OVERLAY, /* an overlay at dest with options text (layer paths relative to the new root) */
	FS_CHOWN,   /* dest owned by sandbox ids owner:group */
	FS_SENDFD,  /* send an O_RDONLY fd of directory dest to the supervisor (plan->sendfd_sock), tag in mode */
	FS_UMOUNT,  /* detach the mount at dest (its users, e.g. an overlay, keep it alive) */
	FS_RMDIR,   /* remove the (empty) directory dest */
	FS_COPY,    /* copy the host directory src (opened like a bind source) into dest, owned by owner:group */
};

/* flags */
#define FS_OPTIONAL  0x1u /* skip the op when the host source does not exist */
#define FS_RECURSIVE 0x2u /* setattr applies to submounts too */

struct fs_op {
	enum fs_kind kind;
	unsigned flags;
	const char *dest;     /* relative to the new root, no leading '/' */
	const char *src;      /* FS_BIND: absolute host path */
	const char *text;     /* FS_SYMLINK target, FS_FILE content, FS_TMPFS options */
	unsigned long mflags; /* mount(2) flags for FS_TMPFS/FS_PROC/FS_DEVPTS */
	uint64_t attr_set;    /* MOUNT_ATTR_* for FS_BIND (after binding) and FS_SETATTR */
	mode_t mode;
	size_t len;	 /* FS_FILE: bytes of text (0: strlen(text)) */
	int src_fd;	 /* FS_BIND: O_PATH descriptor, opened by the child before it drops host root */
	bool src_is_dir; /* FS_BIND: filled when src_fd is opened */
	bool skip;	 /* FS_OPTIONAL op whose source the host lacks */
	unsigned owner;	 /* FS_CHOWN, FS_COPY: the uid */
	unsigned group;	 /* FS_CHOWN, FS_COPY: the gid */
};

/* FS_SENDFD tags: which overlay's upper layer a descriptor is. */
#define FS_TAG_WORKDIR	'u'
#define FS_TAG_CHECKOUT 'c'

struct fs_plan {
	struct fs_op *ops;
	size_t n, cap;
	char **owned; /* strings the plan allocated */
	size_t nowned, capowned;
	int sendfd_sock;  /* FS_SENDFD target (set by the spawner), -1 if none */
	bool cgroup_view; /* FS_CGROUP_VIEW is made, for the job's cgroups to be mounted there */
};

/* Where a sandbox shows the job's own cgroups, read-only (as Docker does; cgroup/view.c). */
#define FS_CGROUP_VIEW "/sys/fs/cgroup"

/* Builds the whole plan for policy p. host_merged_usr: probe of /bin etc. done by the caller. */
#define FS_ETC_PATHS 128
struct fs_host {
	/* For each of bin, sbin, lib, lib32, lib64, libx32: its symlink target on the host,
	 * "" if it is a real directory, NULL if absent. */
	const char *toplinks[6];
	const char *localtime_link; /* readlink of /etc/localtime, or NULL (then bound if present) */
	const char *root;	    /* where the system dirs come from: "" (the host's) or a rootfs */
	bool no_usr;		    /* an image without a /usr directory: the sandbox has none */
	/* The rootfs's top-level entries (at most FS_IMAGE_NAMES), for an image's whole root
	 * (fs_plan_build uses them only when the policy names an image): each name, and its symlink
	 * target, or "" for a directory or a regular file, or NULL for anything else. */
	const char **top_names, **top_links;
	size_t ntop;
	/* An image's: its prepared /etc (img_ref.etc, bound at /etc), and, but under --net host, its
	 * own /etc/resolv.conf, which the sandbox shows in IMG_ETC_OWN like airlock's files: its
	 * contents and mode (resolv_text, resolv_len bytes) or its link target (resolv_link), or
	 * neither when it has none. etc_missing: the first --ro/--rw or --checkout destination
	 * beneath /etc that the prepared /etc has no entry for (a bind needs one there), or NULL. */
	const char *image_etc, *resolv_text, *resolv_link, *etc_missing;
	size_t resolv_len;
	mode_t resolv_mode;
	/* The host's (or the rootfs's) configuration the policy's /etc patterns name (p->etc): each an
	 * absolute sandbox path of a directory or regular file that passed pol_etc_check, sorted. */
	const char *etc_paths[FS_ETC_PATHS];
	size_t netc_paths;
};
#define FS_IMAGE_NAMES 512
extern const char *const fs_toplevel_names[6];

int fs_plan_build(struct fs_plan *plan, const struct al_policy *p, const struct fs_host *host, struct al_error *err);
void fs_plan_free(struct fs_plan *plan);
/* Reads the host facts fs_plan_build needs for policy p (its rootfs, its image). Strings are
 * owned by the plan. */
int fs_host_probe(struct fs_host *h, struct fs_plan *plan, const struct al_policy *p);

/* The payload's Landlock ruleset for policy p in this sandbox layout (every backend that applies
 * Landlock inside the sandbox uses this one): *paths is malloc'd (free it), its strings borrowed
 * from p. 0 or -ENOMEM. */
int fs_landlock_spec(const struct al_policy *p, struct ll_spec *spec, struct ll_path **paths, size_t *npaths);

#endif
