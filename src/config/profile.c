/* profile.c — a profile fixes the posture; flags may only turn resource knobs.
 *
 * Why a refusal rather than "the flag wins": a profile is what an operator promised about a
 * class of jobs (untrusted code reads a checkout and nothing else). A caller that could add
 * --net host or --rw /home to it would make the promise worthless, and silently ignoring the
 * flag would surprise the caller. So widening flags are refused, naming profile and knob.
 */
#include "config/profile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "image/image.h"
#include "policy/policy.h"
#include "util/error.h"

static int apply_network(const struct cfg *c, const struct cfg_profile *pr, struct al_policy *p, struct al_error *err)
{
	if (pr->net != AL_NET_ALLOW)
		return al_policy_set_network(p, pr->net, err);
	/* First: the sandbox's CA, made with the first rule or secret, verifies upstreams with it. */
	if (c->upstream_ca) {
		int r = al_policy_set_upstream_ca(p, c->upstream_ca, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < pr->registries.n; i++) {
		const struct cfg_registry *reg = cfg_registry(c, pr->registries.v[i]);
		if (!reg)
			return al_err(err, EINVAL, "profile %s: no registry '%s'", pr->name, pr->registries.v[i]);
		for (size_t h = 0; h < reg->hosts.n; h++) {
			int r = al_policy_allow_hosts(p, reg->hosts.v[h], err);
			if (r < 0)
				return r;
		}
	}
	for (size_t i = 0; i < c->allow_private.n; i++) {
		int r = al_policy_allow_private(p, c->allow_private.v[i], err);
		if (r < 0)
			return r;
	}
	/* A registry list may be empty: the posture is still the proxy's, with nothing allowed. */
	return al_policy_set_network(p, AL_NET_ALLOW, err);
}

int cfg_apply_profile(const struct cfg *c, const struct cfg_profile *pr, const char *principal, struct al_policy *p,
		      struct al_error *err)
{
	int r = 0;
	if (!pr->namespaces)
		r = al_policy_set_backend(p, AL_BACKEND_NONE, err);
	r = r ?: apply_network(c, pr, p, err);
	r = r ?: cfg_apply_secrets(c, pr, principal, p, err);
	r = r ?: al_policy_set_seccomp(p, pr->seccomp, err);
	if (r == 0 && (pr->filesystem == CFG_FS_CHECKOUT_RO || pr->filesystem == CFG_FS_CHECKOUT_COPY))
		r = al_policy_set_checkout_mode(
			p, pr->filesystem == CFG_FS_CHECKOUT_COPY ? AL_CHECKOUT_COPY : AL_CHECKOUT_RO, err);
	for (size_t i = 0; r == 0 && i < pr->require.n; i++)
		r = al_policy_require(p, pr->require.v[i], err);
	if (r == 0 && pr->rootfs)
		r = al_policy_set_rootfs(p, pr->rootfs, err);
	if (r == 0 && pr->image)
		r = al_policy_set_image(p, pr->image, err);
	r = r ?: cfg_apply_limits(&pr->limits, p, true, err);
	if (r < 0)
		al_err_prefix(err, "profile %s", pr->name);
	return r;
}

/* Knobs no flag may turn under a profile: each would widen what the job can see or reach. */
static bool widening(enum opt_id id)
{
	static const enum opt_id knobs[] = {OPT_NET,	 OPT_ALLOW_PRIVATE, OPT_PROXY_HOSTS, OPT_PROXY_HTTP,
					    OPT_BROKER,	 OPT_UPSTREAM_CA,   OPT_RO,	     OPT_RW,
					    OPT_WORKDIR, OPT_FALLBACK};
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (knobs[i] == id)
			return true;
	return false;
}

int cfg_profile_allows(const struct cfg_profile *pr, const struct al_option *o, const char *value, struct al_error *err)
{
	bool checkout = pr->filesystem == CFG_FS_CHECKOUT_RO || pr->filesystem == CFG_FS_CHECKOUT_COPY;
	const char *want = pr->filesystem == CFG_FS_CHECKOUT_COPY ? "copy" : "ro";
	const char *why = NULL;
	if (widening(o->id))
		why = "it would widen the posture";
	else if (o->id == OPT_SECCOMP && strcmp(value, "strict") != 0 &&
		 !(strcmp(value, "default") == 0 && pr->seccomp == AL_SECCOMP_DEFAULT))
		why = "only a stricter filter may be chosen";
	else if (o->id == OPT_LANDLOCK && strcmp(value, "on") != 0)
		why = "Landlock cannot be turned off";
	else if (o->id == OPT_CHECKOUT && !checkout)
		why = "it has no checkout view";
	else if (o->id == OPT_CHECKOUT_MODE && strcmp(value, want) != 0)
		why = "it fixes the checkout view";
	else if (o->id == OPT_KEEP_CHANGES && pr->filesystem != CFG_FS_CHECKOUT_COPY)
		why = "its checkout is not a copy";
	if (!why)
		return 0;
	return al_err(err, EPERM,
		      "profile %s does not allow --%s%s%s: %s (only memory, cpus, pids, disk, time, output and the "
		      "rootfs or image may be overridden)",
		      pr->name, o->name, value ? " " : "", value ? value : "", why);
}

int cfg_profile_image_allowed(const struct cfg_profile *pr, const char *name, struct al_error *err)
{
	/* NAME@sha256:<hex>, the server's own way of naming what a sandbox was made on: its NAME. */
	size_t n = img_ref_name_len(name);
	if (pr->image && strlen(pr->image) == n && strncmp(pr->image, name, n) == 0)
		return 0;
	for (size_t i = 0; i < pr->images.n; i++)
		if (strlen(pr->images.v[i]) == n && strncmp(pr->images.v[i], name, n) == 0)
			return 0;
	return al_err(err, EPERM, "profile %s does not offer the image '%.64s' (its images: the operator's list)",
		      pr->name, name);
}
