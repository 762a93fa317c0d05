/* oci.c — reads an OCI image layout or a docker-save tree, verifying every blob against its digest. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image/imgint.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/openat2.h"

/* Manifests, indexes and configs are small; a bigger one is not an image we read. */
#define OCI_JSON_MAX   (4u << 20)
#define OCI_MAX_LAYERS 256
#define OCI_BLOB_MAX   (1LL << 40) /* a descriptor's size beyond this is absurd for a root filesystem */

int oci_open_beneath(int dirfd, const char *rel, int flags)
{
	/* RESOLVE_BENEATH + NO_SYMLINKS: a hostile tree cannot point us at a host file. A file to
	 * read must be a regular one: a fifo would block us, a device never end (O_NONBLOCK lets
	 * the open return so that fstat can tell). openat2 refuses O_NOCTTY beside O_PATH. */
	bool file = !(flags & (O_PATH | O_DIRECTORY));
	int fd = al_openat2(dirfd, rel, flags | (file ? O_NOCTTY | O_NONBLOCK : 0), 0, AL_RESOLVE_NOLINKS);
	if (fd < 0)
		return fd;
	struct stat st;
	if (file && (fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close((int)fd);
		return -EINVAL;
	}
	return (int)fd;
}

int oci_sha256_fd(int fd, char out[IMG_DIGEST_LEN], uint64_t *size)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md);
		return -ENOMEM;
	}
	cleanup_free char *buf = malloc(1 << 16);
	if (!buf) {
		EVP_MD_CTX_free(md);
		return -ENOMEM;
	}
	uint64_t total = 0;
	off_t off = 0;
	ssize_t n;
	while ((n = pread(fd, buf, 1 << 16, off)) > 0) {
		EVP_DigestUpdate(md, buf, (size_t)n);
		off += n;
		total += (uint64_t)n;
	}
	int r = n < 0 ? -errno : 0;
	unsigned char h[32];
	unsigned hl = 0;
	EVP_DigestFinal_ex(md, h, &hl);
	EVP_MD_CTX_free(md);
	int k = snprintf(out, IMG_DIGEST_LEN, "sha256:");
	for (unsigned i = 0; i < 32; i++)
		k += snprintf(out + k, (size_t)(IMG_DIGEST_LEN - k), "%02x", h[i]);
	if (size)
		*size = total;
	return r;
}

/* Opens the blob a descriptor names (blobs/sha256/<hex>) and checks its digest and, when the
 * descriptor gives one, its size. A size that is not a byte count (negative, absurd, not an
 * integer) is refused before the blob is read: a "size": -1 was taken as "no size", so the blob's
 * length went unchecked. */
static int open_blob(int srcfd, json_t *desc, struct al_error *err)
{
	const char *digest = json_string_value(json_object_get(desc, "digest"));
	if (!digest || !img_digest_valid(digest))
		return al_err(err, EINVAL, "a descriptor's digest '%s' is not sha256:<64 hex>", digest ? digest : "");
	json_t *js = json_object_get(desc, "size");
	if (js && (!json_is_integer(js) || json_integer_value(js) < 0 || json_integer_value(js) > OCI_BLOB_MAX))
		return al_err(err, EINVAL,
			      "the descriptor of %s: \"size\" must be a byte count from 0 to %lld: refused", digest,
			      (long long)OCI_BLOB_MAX);
	char rel[128], got[IMG_DIGEST_LEN];
	snprintf(rel, sizeof(rel), "blobs/sha256/%s", digest + 7);
	cleanup_close int fd = oci_open_beneath(srcfd, rel, O_RDONLY);
	if (fd < 0)
		return al_err_sys(err, -fd, "blob %s", digest);
	uint64_t size = 0;
	int r = oci_sha256_fd(fd, got, &size);
	if (r < 0)
		return al_err_sys(err, -r, "blob %s", digest);
	if (strcmp(got, digest) != 0)
		return al_err(err, EBADMSG, "blob %s: digest mismatch (its content hashes to %s): refused", digest,
			      got);
	if (js && (uint64_t)json_integer_value(js) != size)
		return al_err(err, EBADMSG, "blob %s: %llu bytes where its descriptor says %lld: refused", digest,
			      (unsigned long long)size, (long long)json_integer_value(js));
	return steal_fd(fd);
}

static int read_text_fd(int fd, char **text, const char *what, struct al_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > OCI_JSON_MAX)
		return al_err(err, EFBIG, "%s: not a regular file of at most %u bytes", what, OCI_JSON_MAX);
	cleanup_free char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return al_err(err, ENOMEM, "out of memory");
	ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n != st.st_size)
		return al_err(err, EIO, "%s: short read", what);
	buf[n] = 0;
	*text = steal_ptr(buf);
	return 0;
}

static int load_json(int fd, json_t **out, char **text_out, const char *what, struct al_error *err)
{
	cleanup_free char *text = NULL;
	int r = read_text_fd(fd, &text, what, err);
	if (r < 0)
		return r;
	json_error_t je;
	*out = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!*out)
		return al_err(err, EBADMSG, "%s: not JSON (%s, line %d)", what, je.text, je.line);
	if (text_out)
		*text_out = steal_ptr(text);
	return 0;
}

/* An index's entry: the only one, else the first for linux/amd64 (the machine we run on). */
static json_t *pick_manifest(json_t *index)
{
	json_t *list = json_object_get(index, "manifests"), *d;
	size_t i;
	if (json_array_size(list) == 1)
		return json_array_get(list, 0);
	json_array_foreach(list, i, d) {
		json_t *pl = json_object_get(d, "platform");
		const char *os = json_string_value(json_object_get(pl, "os"));
		const char *arch = json_string_value(json_object_get(pl, "architecture"));
		if (os && arch && !strcmp(os, "linux") && !strcmp(arch, "amd64"))
			return d;
	}
	return json_array_get(list, 0);
}

static bool is_index_type(const char *mt)
{
	return mt && (!strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
		      !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

static int add_layer(struct oci_plan *plan, int fd, struct al_error *err)
{
	if (plan->nlayers >= OCI_MAX_LAYERS) {
		close(fd);
		return al_err(err, E2BIG, "more than %d layers: refused", OCI_MAX_LAYERS);
	}
	int *n = realloc(plan->layer_fds, (plan->nlayers + 1) * sizeof(*n));
	if (!n) {
		close(fd);
		return al_err(err, ENOMEM, "out of memory");
	}
	plan->layer_fds = n;
	plan->layer_fds[plan->nlayers++] = fd;
	return 0;
}

static int load_manifest(int srcfd, json_t *desc, struct oci_plan *plan, struct al_error *err)
{
	const char *digest = json_string_value(json_object_get(desc, "digest"));
	cleanup_close int mfd = open_blob(srcfd, desc, err);
	if (mfd < 0)
		return mfd;
	json_auto_t *m = NULL;
	int r = load_json(mfd, &m, NULL, "the manifest", err);
	if (r < 0)
		return r;
	snprintf(plan->digest, sizeof(plan->digest), "%s", digest);
	json_t *cfg = json_object_get(m, "config"), *layers = json_object_get(m, "layers"), *l;
	if (!json_is_object(cfg) || !json_is_array(layers))
		return al_err(err, EBADMSG, "the manifest %s has no config or layers", digest);
	cleanup_close int cfd = open_blob(srcfd, cfg, err);
	if (cfd < 0)
		return cfd;
	json_auto_t *cj = NULL;
	r = load_json(cfd, &cj, &plan->config, "the image config", err);
	size_t i;
	json_array_foreach(layers, i, l) {
		if (r < 0)
			break;
		int fd = open_blob(srcfd, l, err);
		r = fd < 0 ? fd : add_layer(plan, fd, err);
	}
	return r;
}

static int load_oci(int srcfd, int ifd, struct oci_plan *plan, struct al_error *err)
{
	json_auto_t *index = NULL;
	int r = load_json(ifd, &index, NULL, "index.json", err);
	if (r < 0)
		return r;
	json_t *desc = pick_manifest(index);
	json_auto_t *inner = NULL;
	if (desc && is_index_type(json_string_value(json_object_get(desc, "mediaType")))) {
		/* A nested index (multi-platform image): one level, then a manifest. */
		cleanup_close int nfd = open_blob(srcfd, desc, err);
		r = nfd < 0 ? nfd : load_json(nfd, &inner, NULL, "the nested index", err);
		if (r < 0)
			return r;
		desc = pick_manifest(inner);
	}
	if (!json_is_object(desc))
		return al_err(err, EBADMSG, "index.json names no manifest");
	plan->format = "oci";
	return load_manifest(srcfd, desc, plan, err);
}

/* docker save: manifest.json names the config file and the layer tars; the config's
 * rootfs.diff_ids are the layers' digests, and the config's file name is its own. */
static int open_named(int srcfd, const char *rel, struct al_error *err)
{
	int r = rel ? unpack_check_name(rel, err) : al_err(err, EBADMSG, "manifest.json: a path is missing");
	if (r < 0)
		return r;
	int fd = oci_open_beneath(srcfd, rel, O_RDONLY);
	return fd < 0 ? al_err_sys(err, -fd, "docker save member '%s'", rel) : fd;
}

static int check_named_digest(int fd, const char *rel, char got[IMG_DIGEST_LEN], struct al_error *err)
{
	int r = oci_sha256_fd(fd, got, NULL);
	if (r < 0)
		return al_err_sys(err, -r, "%s", rel);
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	size_t n = strcspn(base, ".");
	/* Its name is its digest ("<hex>.json" or "blobs/sha256/<hex>"): they must agree. */
	if (n == 64 && strncmp(base, got + 7, 64) != 0)
		return al_err(err, EBADMSG, "%s: digest mismatch (its content hashes to %s): refused", rel, got);
	return 0;
}

static int load_docker(int srcfd, int mfd, struct oci_plan *plan, struct al_error *err)
{
	json_auto_t *m = NULL;
	int r = load_json(mfd, &m, NULL, "manifest.json", err);
	if (r < 0)
		return r;
	json_t *e = json_array_get(m, 0), *layers = json_object_get(e, "Layers"), *ids;
	const char *cfgname = json_string_value(json_object_get(e, "Config"));
	cleanup_close int cfd = open_named(srcfd, cfgname, err);
	if (cfd < 0)
		return cfd;
	r = check_named_digest(cfd, cfgname, plan->digest, err);
	json_auto_t *cj = NULL;
	r = r ?: load_json(cfd, &cj, &plan->config, "the image config", err);
	if (r < 0)
		return r;
	ids = json_object_get(json_object_get(cj, "rootfs"), "diff_ids");
	if (!json_is_array(layers) || json_array_size(ids) != json_array_size(layers))
		return al_err(err, EBADMSG, "manifest.json: the layers do not match the config's diff_ids");
	plan->format = "docker-save";
	for (size_t i = 0; r == 0 && i < json_array_size(layers); i++) {
		const char *rel = json_string_value(json_array_get(layers, i));
		const char *want = json_string_value(json_array_get(ids, i));
		char got[IMG_DIGEST_LEN];
		int fd = open_named(srcfd, rel, err);
		if (fd < 0)
			return fd;
		r = oci_sha256_fd(fd, got, NULL);
		if (r == 0 && (!want || strcmp(got, want) != 0))
			r = al_err(err, EBADMSG, "layer %s: digest mismatch (%s, the config says %s): refused", rel,
				   got, want ? want : "nothing");
		if (r < 0) {
			close(fd);
			return r;
		}
		r = add_layer(plan, fd, err); /* closes fd on failure */
	}
	return r;
}

int oci_plan_load(int srcfd, struct oci_plan *plan, struct al_error *err)
{
	memset(plan, 0, sizeof(*plan));
	cleanup_close int ifd = oci_open_beneath(srcfd, "index.json", O_RDONLY);
	if (ifd >= 0)
		return load_oci(srcfd, ifd, plan, err);
	cleanup_close int mfd = oci_open_beneath(srcfd, "manifest.json", O_RDONLY);
	if (mfd >= 0)
		return load_docker(srcfd, mfd, plan, err);
	return al_err(err, ENOENT, "neither index.json (an OCI layout) nor manifest.json (docker save) found");
}

void oci_plan_free(struct oci_plan *plan)
{
	for (size_t i = 0; i < plan->nlayers; i++)
		close(plan->layer_fds[i]);
	free(plan->layer_fds);
	free(plan->config);
	memset(plan, 0, sizeof(*plan));
}
