/* import.c — `airlock image import`: an OCI layout, oci-archive or docker save into the store. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image/imgint.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

/* The source as a directory: DIR itself, or FILE's members copied into stage/src. */
static int open_source(const char *src, struct store_stage *st, const struct img_limits *lim, struct al_error *err)
{
	/* O_NONBLOCK: a fifo given by mistake is refused below, not waited on. */
	cleanup_close int fd = open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0)
		return al_err_sys(err, errno, "%s", src);
	if (S_ISDIR(sb.st_mode))
		return steal_fd(fd);
	if (!S_ISREG(sb.st_mode))
		return al_err(err, EINVAL, "%s: neither a directory (OCI layout) nor an archive file", src);
	/* The outer archive is parsed by libarchive too: in the confined, unprivileged child. */
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/src", st->path);
	if (mkdirat(st->fd, "src", 0700) < 0 ||
	    (geteuid() == 0 && fchownat(st->fd, "src", IMG_UNPACK_ID, IMG_UNPACK_ID, AT_SYMLINK_NOFOLLOW) < 0))
		return al_err_sys(err, errno, "staging");
	int r = unpack_outer_confined(fd, dir, lim, IMG_UNPACK_ID, err);
	if (r < 0) {
		al_err_prefix(err, "%s", src);
		return r;
	}
	/* What the child wrote is read with openat2 beneath this directory, no symlink followed,
	 * regular files only (oci_open_beneath). */
	int dfd = openat(st->fd, "src", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return dfd < 0 ? al_err_sys(err, errno, "staging") : dfd;
}

/* image.json: what inspect shows and what --image takes as defaults (Env, WorkingDir...). */
static char *make_meta(const struct import_info *in, uint64_t bytes)
{
	json_t *cfg = in->config ? json_loads(in->config, 0, NULL) : NULL;
	json_t *c = json_object_get(cfg, "config"), *keep = json_object();
	static const char *const keys[] = {"Env", "WorkingDir", "User", "Entrypoint", "Cmd"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(c, keys[i]);
		if (v && !json_is_null(v))
			json_object_set(keep, keys[i], v);
	}
	char when[TXT_RFC3339_MAX];
	txt_rfc3339_now(0, when);
	/* How the files are owned (unpack.c): the layers' owners in the sandbox range (root), or all
	 * the store owner's. An image stored before owners were kept has no such key. */
	json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:o, s:s}", "name", in->name, "digest", in->digest,
			      "source", in->source, "format", in->format, "bytes", (json_int_t)bytes, "layers",
			      (json_int_t)in->nlayers, "created", when, "config", keep, "owners",
			      geteuid() == 0 ? "mapped" : "store-owner");
	if (m && in->extra)
		json_object_update(m, in->extra);
	char *text = m ? json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
	json_decref(m);
	json_decref(cfg);
	return text;
}

int import_unpack(struct store_stage *st, const int *fds, size_t n, const struct img_limits *lim, struct al_error *err)
{
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", st->path);
	if (mkdirat(st->fd, "rootfs", 0755) < 0)
		return al_err_sys(err, errno, "staging");
	if (geteuid() == 0 && fchownat(st->fd, "rootfs", IMG_UNPACK_ID, IMG_UNPACK_ID, AT_SYMLINK_NOFOLLOW) < 0)
		return al_err_sys(err, errno, "staging");
	return unpack_layers(fds, n, rootfs, lim, IMG_UNPACK_ID, err);
}

int import_commit(struct img_store *s, struct store_stage *st, const struct import_info *in, struct al_error *err)
{
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", st->path);
	cleanup_free char *meta = make_meta(in, store_tree_bytes(rootfs));
	if (!meta)
		return al_err(err, ENOMEM, "out of memory");
	return store_stage_commit(s, st, in->digest, in->name, meta, err);
}

int img_import(struct img_store *s, const char *src, const char *name, const struct img_limits *lim,
	       char digest[IMG_DIGEST_LEN], struct al_error *err)
{
	if (!img_name_valid(name))
		return al_err(err, EINVAL, "'%s' is not an image name (letters, digits, . _ : @ + -)", name);
	struct store_stage st;
	int r = store_stage_begin(s, &st, err);
	if (r < 0)
		return r;
	struct oci_plan plan = {0};
	int sfd = open_source(src, &st, lim, err);
	r = sfd < 0 ? sfd : oci_plan_load(sfd, &plan, err);
	if (sfd >= 0)
		close(sfd);
	r = r ?: import_unpack(&st, plan.layer_fds, plan.nlayers, lim, err);
	char srcdir[PATH_MAX];
	snprintf(srcdir, sizeof(srcdir), "%s/src", st.path);
	(void)unpack_rm_tree(srcdir);
	struct import_info in = {.name = name,
				 .digest = plan.digest,
				 .source = src,
				 .format = plan.format,
				 .config = plan.config,
				 .nlayers = plan.nlayers};
	r = r ?: import_commit(s, &st, &in, err);
	if (r == 0)
		snprintf(digest, IMG_DIGEST_LEN, "%s", plan.digest);
	oci_plan_free(&plan);
	store_stage_abort(&st);
	return r;
}
