/* image.c — a policy's image: its read-only tree as the rootfs, its Env as defaults, its lock held. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"

#define IMG_ENV_MAX 256

/* The image's Env is kept as the image has it and merged last, by pol_build_envp: it fills in
 * only what nothing else set (--env, airlock's own PATH, HOME..., the proxy's). Each entry must be
 * NAME=VALUE with a name --env would take: a bare NAME would otherwise read like --env's
 * pass-through, and nothing from airlock's own environment reaches a payload through an image. */
static int check_env(char *const *env, struct al_error *err)
{
	for (size_t i = 0; i < IMG_ENV_MAX && env[i]; i++) {
		if (!strchr(env[i], '=') || !pol_env_name_ok(env[i], strcspn(env[i], "=")))
			return al_err(err, EINVAL, "the image's Env entry '%.64s' is not NAME=VALUE", env[i]);
	}
	return 0;
}

char *const *pol_image_env(const struct al_policy *p, size_t *n)
{
	*n = 0;
	if (!p->image)
		return NULL;
	while (*n < IMG_ENV_MAX && p->image->env[*n])
		(*n)++;
	return p->image->env;
}

/* Whether the image's User is the payload's: any uid but root within the sandbox's ids. Root in
 * the image stays the unprivileged sandbox user, as root is everywhere (the posture never gives
 * a payload root); an id past the 65536 every mapping can hold is not applied (and said so). A
 * group 0 is an ordinary group in the sandbox's namespace: no capability comes with a gid. */
static bool user_applies(uint32_t uid, uint32_t gid)
{
	return uid != 0 && uid < AL_IDS_PER_SANDBOX && gid < AL_IDS_PER_SANDBOX;
}

/* The image's User (NAME, UID, NAME:GROUP, UID:GID, resolved in the image's own /etc) as the
 * payload's ids, for every front end (run, exec, a server's sandboxes). A User that is not a
 * spec at all is refused; an unknown name is left to al_policy_image_config's note. */
static int apply_user(struct al_policy *p, const struct img_ref *ref, struct al_error *err)
{
	uint32_t uid = 0, gid = 0;
	struct al_error e = {0};
	int r = img_user_resolve(ref, &uid, &gid, &e);
	if (r == -EINVAL)
		return al_err(err, EINVAL, "%s", e.msg);
	if (r == 0 && user_applies(uid, gid)) {
		p->run_uid = uid;
		p->run_gid = gid;
	}
	return 0;
}

int al_policy_set_image(struct al_policy *p, const char *name, struct al_error *err)
{
	struct img_store s;
	struct img_ref *ref = calloc(1, sizeof(*ref));
	if (!ref)
		return al_err(err, ENOMEM, "out of memory");
	int r = img_store_open(&s, NULL, false, err);
	r = r ?: img_open(&s, name, ref, err);
	img_store_close(&s);
	r = r ?: pol_set_root(p, ref->rootfs, true, err); /* also drops an earlier image */
	r = r ?: check_env(ref->env, err);
	r = r ?: apply_user(p, ref, err);
	if (r < 0) {
		al_err_prefix(err, "--image %s", name);
		img_ref_close(ref);
		free(ref);
		return r;
	}
	p->image = ref;
	return 0;
}

int pol_image_pin(const char *digest, const char *key, const char *holder, struct al_error *err)
{
	struct img_store s;
	int r = img_store_open(&s, NULL, false, err);
	r = r ?: img_pin(&s, digest, key, holder, err);
	img_store_close(&s);
	return r;
}

void pol_free_image(struct al_policy *p)
{
	if (!p->image)
		return;
	img_ref_close(p->image);
	free(p->image);
	p->image = NULL;
	p->run_uid = p->run_gid = AL_SANDBOX_UID; /* the image's User goes with it */
}

const char *al_policy_image_digest(const struct al_policy *p)
{
	return p->image ? p->image->digest : NULL;
}

const char *al_policy_image_name(const struct al_policy *p)
{
	return p->image ? p->image->name : NULL;
}

/* Whether the image's WorkingDir exists in the sandbox's view: the sandbox's own directories,
 * or a directory of the image outside what the sandbox owns (its /tmp or /workspace would hide
 * the image's). */
static bool workdir_usable(const struct img_ref *ref, const char *wd)
{
	static const char *const ours[] = {"/tmp", AL_WORKSPACE, "/dev", "/proc"};
	if (strcmp(wd, "/") == 0 || strcmp(wd, "/tmp") == 0 || strcmp(wd, AL_WORKSPACE) == 0)
		return true;
	for (size_t i = 0; i < AL_ARRAY_SIZE(ours); i++) {
		size_t n = strlen(ours[i]);
		if (strncmp(wd, ours[i], n) == 0 && (wd[n] == 0 || wd[n] == '/'))
			return false;
	}
	return img_dir_exists(ref, wd);
}

int al_policy_image_config(struct al_policy *p, char *note, size_t note_len, struct al_error *err)
{
	struct img_ref *ref = p->image;
	size_t off = 0;
	if (note_len)
		note[0] = 0;
	if (!ref)
		return 0;
	const char *wd = ref->workdir;
	if (wd && !p->cwd && !p->workdir) {
		struct al_error e = {0};
		if (pol_check_inside_path(wd, &e) == 0 && workdir_usable(ref, wd)) {
			int r = al_policy_set_cwd(p, wd, err);
			if (r < 0)
				return r;
		} else if (off < note_len) {
			off += (size_t)snprintf(
				note + off, note_len - off,
				"the image's WorkingDir '%.128s' is not applied: not a directory of the image; ", wd);
		}
	}
	uint32_t uid = 0, gid = 0;
	int r = img_user_resolve(ref, &uid, &gid, err);
	if (r == -EINVAL)
		return r;
	if (r == -ENOENT && ref->user && off < note_len)
		off += (size_t)snprintf(note + off, note_len - off, "%s; ",
					err ? err->msg : "the image's User is unknown");
	/* Applied by al_policy_set_image (user_applies); what is not is said, never silently
	 * dropped. Root in the image is the sandbox user without a note: that is what root means
	 * in every sandbox. */
	if (r == 0 && uid != 0 && !user_applies(uid, gid) && off < note_len)
		off += (size_t)snprintf(note + off, note_len - off,
					"the image's User '%.64s' (uid %u, gid %u) is not applied: past the sandbox's "
					"%d ids; it runs as the sandbox user, uid %d; ",
					ref->user, uid, gid, AL_IDS_PER_SANDBOX, AL_SANDBOX_UID);
	if (off >= 2 && off < note_len)
		note[off - 2] = 0; /* the last "; " */
	if (err && r == -ENOENT)
		*err = (struct al_error){0};
	return 0;
}

const char *const *al_policy_image_argv(const struct al_policy *p)
{
	return p->image && p->image->argv && p->image->argv[0] ? (const char *const *)p->image->argv : NULL;
}
