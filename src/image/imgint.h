/* imgint.h — what the image layer's files share among themselves (oci_, unpack_, store_). */
#ifndef AL_IMAGE_IMGINT_H
#define AL_IMAGE_IMGINT_H

#include <limits.h>
#include <sys/types.h>

#include "image/image.h"

/* Host id that unpacks untrusted layers when airlock runs as root, and so owns the stored trees:
 * just below the default sandbox range (1879048192, AL_DEFAULT_ID_BASE), an id no host process
 * runs as and no sandbox maps. Inside a sandbox its files show as the overflow id (nobody), like
 * the host's root-owned /usr, and even a sandbox's own root could not write them. */
#define IMG_UNPACK_ID (1879048192u - 2u)

/* ---- oci.c: manifests, configs and digests (reads only) ---- */

/* What an image source holds, checked: the layer blobs in order and the config. */
struct oci_plan {
	char digest[IMG_DIGEST_LEN]; /* the image's: its manifest's (docker save: its config's) */
	char *config;		     /* the config blob's JSON text, or NULL */
	size_t nlayers;
	int *layer_fds;	    /* each layer blob opened read-only; its digest verified */
	const char *format; /* "oci" or "docker-save" */
};
/* Reads the OCI layout or docker-save tree beneath srcfd (index.json or manifest.json),
 * verifies every blob it names against its digest (and size), and opens the layers. */
int oci_plan_load(int srcfd, struct oci_plan *plan, struct al_error *err);
void oci_plan_free(struct oci_plan *plan);
/* sha256 of everything readable from fd (from offset 0), as "sha256:<hex>"; *size its length. */
int oci_sha256_fd(int fd, char out[IMG_DIGEST_LEN], uint64_t *size);
/* Opens rel beneath dirfd without following any symlink and without leaving it. */
int oci_open_beneath(int dirfd, const char *rel, int flags);

/* ---- unpack.c: archives, through libarchive ---- */

/* Copies the regular files of the tar on fd (an oci-archive or docker save) beneath destfd:
 * names checked (relative, no "..", no symlinks), total size bounded. */
int unpack_outer(int fd, int destfd, const struct img_limits *lim, struct al_error *err);
/* unpack_outer in the same confined child as the layers, into the empty directory dir. */
int unpack_outer_confined(int fd, const char *dir, const struct img_limits *lim, uid_t drop_uid, struct al_error *err);
/* Applies the layers in order onto the empty directory rootfs (an absolute path), in a child
 * that runs as drop_uid (when airlock is root) and strips every write bit at the end. */
int unpack_layers(const int *fds, size_t n, const char *rootfs, const struct img_limits *lim, uid_t drop_uid,
		  struct al_error *err);
/* Removes path (a tree too), never following a link nor crossing a mount; gives our own
 * read-only directories their write bits back first. 0 (also when absent) or -errno. */
int unpack_rm_tree(const char *path);
/* Checks an archive member's name: relative after dropping "./", no "..", no empty part. Pure. */
int unpack_check_name(const char *name, struct al_error *err);

/* ---- store.c: staging and commit ---- */

struct store_stage;
/* What image.json records besides the tree's size. */
struct import_info {
	const char *name, *digest, *source, *format;
	const char *config; /* the image config's JSON text (its Env, WorkingDir... are kept), or NULL */
	size_t nlayers;
	struct json_t *extra; /* more keys for image.json (a build's packages...), or NULL */
};
/* import.c: applies the layers on fds into stage/rootfs (as IMG_UNPACK_ID when root). */
int import_unpack(struct store_stage *st, const int *fds, size_t n, const struct img_limits *lim, struct al_error *err);
/* import.c: writes image.json and commits the stage under in->name. */
int import_commit(struct img_store *s, struct store_stage *st, const struct import_info *in, struct al_error *err);

/* An import in progress: tmp/<random>/ in the store, locked, removed unless committed. */
struct store_stage {
	char path[PATH_MAX - 64]; /* room for "/rootfs" and such after it */
	int fd;
	int lock_fd;
};
int store_stage_begin(struct img_store *s, struct store_stage *st, struct al_error *err);
/* Writes image.json (meta, a JSON object text) and moves the staged tree to sha256/<hex>, then
 * points names/<name> at it. Content already there is kept (same digest, same tree). */
int store_stage_commit(struct img_store *s, struct store_stage *st, const char *digest, const char *name,
		       const char *meta, struct al_error *err);
void store_stage_abort(struct store_stage *st);
/* Total bytes of regular files beneath path (no symlink followed). */
uint64_t store_tree_bytes(const char *path);

/* ---- etc.c: the prepared /etc ---- */

/* Makes parentfd/name the image's prepared /etc from the tree at rootfd (see etc.c); on failure
 * it may leave a partial directory, which the caller's staging directory takes away. */
int store_etc_prepare(int rootfd, int parentfd, const char *name, struct al_error *err);

#endif
