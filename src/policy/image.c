/* image.c — a policy's image: its read-only tree as the rootfs, its Env as defaults, its lock held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "image/image.h"
#include "policy/policy.h"
#include "util/error.h"

#define IMG_ENV_MAX 256

/* The image's Env fills in what nothing else set. The proxy's variables are never taken from
 * an image: they belong to the network posture (which an image never changes). */
static int add_defaults(struct al_policy *p, char *const *env, struct al_error *err)
{
	for (size_t i = 0; i < IMG_ENV_MAX && env[i]; i++) {
		size_t n = strcspn(env[i], "=");
		bool set = false;
		for (size_t j = 0; j < p->nenv && !set; j++)
			set = strncmp(p->env[j], env[i], n + 1) == 0;
		if (set || (n >= 6 && strncasecmp(env[i] + n - 6, "_PROXY", 6) == 0))
			continue;
		int r = al_policy_add_env(p, env[i], err);
		if (r < 0)
			return r;
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
	r = r ?: al_policy_set_rootfs(p, ref->rootfs, err); /* also drops an earlier image */
	r = r ?: add_defaults(p, ref->env, err);
	if (r < 0) {
		al_err_prefix(err, "--image %s", name);
		img_ref_close(ref);
		free(ref);
		return r;
	}
	p->image = ref;
	return 0;
}

void pol_free_image(struct al_policy *p)
{
	if (!p->image)
		return;
	img_ref_close(p->image);
	free(p->image);
	p->image = NULL;
}

const char *al_policy_image_digest(const struct al_policy *p)
{
	return p->image ? p->image->digest : NULL;
}

const char *al_policy_image_name(const struct al_policy *p)
{
	return p->image ? p->image->name : NULL;
}

const char *const *al_policy_image_argv(const struct al_policy *p)
{
	return p->image && p->image->argv && p->image->argv[0] ? (const char *const *)p->image->argv : NULL;
}
