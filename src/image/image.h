/* image.h — the image store: content-addressed, read-only root filesystems (OCI import, Debian builds). */
#ifndef AL_IMAGE_IMAGE_H
#define AL_IMAGE_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"

/* "sha256:" + 64 hex digits + NUL */
#define IMG_DIGEST_LEN 72
#define IMG_NAME_MAX   128
/* Defaults of struct img_limits: what one image may unpack to. */
#define IMG_DEFAULT_MAX_BYTES	(4ull << 30)
#define IMG_DEFAULT_MAX_ENTRIES 1000000ull

/* An open store. Layout beneath path:
 *   sha256/<hex>/rootfs/   the image's tree, read-only (write bits stripped, never set-id)
 *   sha256/<hex>/etc.1/    its /etc as sandboxes show it (etc.c): hard links of rootfs/etc's files,
 *                          airlock's own names (img_etc_own) symlinks into IMG_ETC_OWN; made with the
 *                          content, or once on first use for content stored before it existed
 *   sha256/<hex>/image.json  what import or build recorded: name, digest, size, config defaults
 *   sha256/<hex>/lock      a sandbox holds LOCK_SH on it; rm and gc need LOCK_EX (never wait)
 *   names/<NAME>           a symlink to ../sha256/<hex>
 *   pins/<hex>/<key>       the content kept for a holder outside the store (img_pin)
 *   tmp/                   imports and removals in progress (removed by gc when unlocked) */
struct img_store {
	char *path;
	int dirfd;
};

struct img_limits {
	uint64_t max_bytes;   /* sum of the regular files' sizes over all layers */
	uint64_t max_entries; /* archive entries over all layers */
};

/* The store's default place: $AIRLOCK_IMAGES, else /var/lib/airlock/images as root, else
 * $XDG_DATA_HOME/airlock/images (~/.local/share/...). Writes it into buf; 0 or -errno. */
int img_store_default(char *buf, size_t size);
/* Opens (with create, makes) the store at path (NULL: the default). Free with img_store_close. */
int img_store_open(struct img_store *s, const char *path, bool create, struct al_error *err);
void img_store_close(struct img_store *s);

/* Image names: [A-Za-z0-9][A-Za-z0-9._:@+-]*, at most IMG_NAME_MAX-1 bytes, without "@sha256:"
 * (which only a reference NAME@sha256:<hex> has). Pure. */
bool img_name_valid(const char *name);
/* Is s "sha256:" followed by 64 lowercase hex digits? Pure. */
bool img_digest_valid(const char *s);

/* Imports FILE (an oci-archive or a docker-save tarball) or DIR (an OCI image layout) as name.
 * Every blob's digest is checked; layers are applied in order, whiteouts honoured, by an
 * unprivileged child. Nothing is left behind on failure. digest receives the image's. */
int img_import(struct img_store *s, const char *src, const char *name, const struct img_limits *lim,
	       char digest[IMG_DIGEST_LEN], struct al_error *err);

/* A Debian environment made by mmdebstrap. Strings are the caller's. */
struct img_build_spec {
	char *name;
	char *suite;	 /* default bookworm */
	char *mirror;	 /* default: mmdebstrap's own (the Debian archive) */
	char *variant;	 /* default apt */
	char **packages; /* NULL-terminated */
	uint64_t epoch;	 /* SOURCE_DATE_EPOCH; 0: IMG_DEFAULT_EPOCH, so rebuilds are reproducible */
	bool recommends; /* install the packages' Recommends too (apt's default; off: what they depend on only) */
};
#define IMG_DEFAULT_EPOCH 1704067200u /* 2024-01-01T00:00:00Z */
/* Called with each line mmdebstrap prints (progress), from the calling thread. */
typedef void (*img_progress_fn)(void *ctx, const char *line);

/* A build's progress as a person follows it, from mmdebstrap's and apt's lines: the phase
 * (mmdebstrap's "I: ..."), how many packages apt is installing, fetched, unpacked and set up of
 * them, and how much it has to download. */
struct img_progress {
	char phase[80];
	char need[24]; /* "45.6 MB" of apt's "Need to get 45.6 MB of archives" */
	unsigned total, fetched, unpacked, set_up;
};
/* Takes one line into p. Pure. */
void img_progress_feed(struct img_progress *p, const char *line);
/* p as one line ("installing remaining packages: 45/123 set up, 120/123 fetched of 45.6 MB"). Pure. */
void img_progress_text(const struct img_progress *p, char *buf, size_t size);
/* Builds spec with mmdebstrap into a tarball (no device nodes), whose sha256 is the image's
 * digest, and unpacks it like any other layer (the same checks). Takes minutes. */
int img_build(struct img_store *s, const struct img_build_spec *spec, const struct img_limits *lim,
	      img_progress_fn progress, void *ctx, char digest[IMG_DIGEST_LEN], struct al_error *err);

/* One image as ls shows it. */
struct img_entry {
	char name[IMG_NAME_MAX];
	char digest[IMG_DIGEST_LEN];
	uint64_t bytes;
	bool in_use;
};
/* Calls fn for each name in the store (sorted); 0 or -errno. */
int img_list(struct img_store *s, int (*fn)(void *ctx, const struct img_entry *e), void *ctx, struct al_error *err);
/* The image's image.json text (malloc'd, caller frees) for name or "sha256:<hex>". */
int img_inspect(struct img_store *s, const char *name, char **json, struct al_error *err);
/* Removes a name, and its content when no other name refers to it. Refused (-EBUSY) while a
 * sandbox uses the image, or a live pin keeps its content and this is its last name. */
int img_remove(struct img_store *s, const char *name, struct al_error *err);
/* Keeps digest's content for holder (an absolute path: a record of a sandbox that airlock serve
 * keeps) under key ([a-z0-9._-], a sandbox's id), until holder is gone: rm of its last name is
 * refused and gc leaves it while holder exists. Call with the content's lock held (img_open). */
int img_pin(struct img_store *s, const char *digest, const char *key, const char *holder, struct al_error *err);
/* The length of ref's NAME part: all of it, or what precedes "@sha256:<hex>" in a reference to a
 * name's content by digest (which opens that content whatever the name names now). Pure. */
size_t img_ref_name_len(const char *ref);
/* Removes unnamed, unused, unpinned content and leftovers of interrupted imports; *freed counts them. */
int img_gc(struct img_store *s, unsigned *freed, struct al_error *err);

/* The prepared /etc's name beside rootfs/ (a new version when img_etc_own changes, so content
 * prepared by an older airlock is prepared again on first use). */
#define IMG_ETC_DIR "etc.1"
/* Where a sandbox on an image holds airlock's own /etc files: a directory of its root, which the
 * prepared /etc's symlinks of those names point into. */
#define IMG_ETC_OWN "/.airlock-etc"
/* airlock's own /etc files (NULL-terminated): passwd, group, hosts, hostname, nsswitch.conf,
 * resolv.conf. In an image's prepared /etc each is a symlink to IMG_ETC_OWN/<name>. */
extern const char *const img_etc_own[];
bool img_etc_is_own(const char *name);

/* An image opened for a sandbox: its lock is held (LOCK_SH) until img_ref_close. */
struct img_ref {
	char *name;
	char digest[IMG_DIGEST_LEN];
	char *rootfs;  /* absolute host path of the read-only tree */
	char *etc;     /* absolute host path of its prepared /etc (IMG_ETC_DIR), bound at /etc */
	char **env;    /* the config's Env, "NAME=VALUE", NULL-terminated (may be empty) */
	char **argv;   /* the config's Entrypoint then Cmd, NULL-terminated (may be empty) */
	char *workdir; /* the config's WorkingDir, or NULL */
	char *user;    /* the config's User, or NULL */
	int lock_fd;
};
int img_open(struct img_store *s, const char *name, struct img_ref *ref, struct al_error *err);
void img_ref_close(struct img_ref *ref);

/* Pure: the ids of an image config's User spec (NAME, UID, NAME:GROUP, UID:GID) given the image's
 * /etc/passwd and /etc/group texts (either may be NULL). A numeric user needs no entry (its
 * primary group comes from one when there is, else 0). 0, -EINVAL (not such a spec), -ENOENT. */
int img_user_parse(const char *spec, const char *passwd, const char *group, uint32_t *uid, uint32_t *gid);
/* ref's User resolved against its own tree's /etc/passwd and /etc/group (read beneath its root,
 * bounded): 0, -ENOENT with no User (err untouched) or an unknown name, -EINVAL. */
int img_user_resolve(const struct img_ref *ref, uint32_t *uid, uint32_t *gid, struct al_error *err);
/* Whether path (absolute) is a directory of the image's tree, resolved inside it. */
bool img_dir_exists(const struct img_ref *ref, const char *path);

#endif
