/* plan.c — a policy's plan (plan.h): derived once, purely, so no backend derives it again. */
#include "policy/plan.h"

#include <errno.h>

#include "network/allowlist.h"
#include "util/error.h"

/* 443 and 80 always (a refusal there is recorded rather than a bare "connection refused"), then
 * the allowlist's own ports, as far as AL_CAPTURE_MAX_PORT; never 53 or the proxy's port, whose
 * addresses on lo are the resolver's and the proxy's. */
static void capture_plan(const struct al_policy *p, struct pol_capture *c)
{
	/* Four more than fit: 443, 80, 53 and 3128 may be among the list's and take no place. */
	uint16_t listed[2 + AL_CAPTURE_MAX_PORT + 4] = {AL_ALLOW_DEFAULT_PORT, 80};
	size_t n = al_allowlist_ports(p->allow, listed + 2, AL_CAPTURE_MAX_PORT + 4);
	if (n > AL_CAPTURE_MAX_PORT + 4)
		n = AL_CAPTURE_MAX_PORT + 4;
	c->on = p->net == AL_NET_ALLOW;
	c->nports = 0;
	for (size_t i = 0; c->on && i < n + 2 && c->nports < AL_CAPTURE_MAX_PORT; i++) {
		bool seen = listed[i] == 53 || listed[i] == AL_PROXY_PORT;
		for (size_t k = 0; k < c->nports && !seen; k++)
			seen = c->ports[k] == listed[i];
		if (!seen)
			c->ports[c->nports++] = listed[i];
	}
}

static void net_plan(const struct al_policy *p, struct pol_net_plan *n)
{
	n->posture = p->net;
	n->name = pol_net_name(p->net);
	n->own_netns = p->net != AL_NET_HOST;
	n->proxy = pol_needs_proxy(p);
	n->loopback = n->own_netns ? "up" : "host";
	n->inet_in_netns = true;
	n->inet_without_netns = p->net == AL_NET_HOST;
	capture_plan(p, &n->capture);
}

static uint32_t needs(const struct al_policy *p, bool root)
{
	bool copy = p->checkout && p->checkout_mode == AL_CHECKOUT_COPY;
	const bool need[PN__COUNT] = {
		[PN_LANDLOCK] = p->require & REQ_LANDLOCK,
		[PN_CGROUPNS] = p->require & REQ_CGROUPNS,
		[PN_PIVOT_ROOT] = p->require & REQ_PIVOT_ROOT,
		[PN_CHECKOUT_COPY] = copy,
		[PN_KEEP_CHANGES] = p->keep_changes,
		[PN_SUBIDS] = p->subids,
		[PN_FALLBACK] = p->fallback,
		[PN_WORKDIR_DISK] = p->workdir && (p->limits_set & (1u << AL_LIMIT_DISK)),
		[PN_WORKDIR] = p->workdir,
		[PN_ROOTLESS] = !root,
		[PN_NET_HOST] = p->net == AL_NET_HOST,
		/* a limit asked for (--pids, a profile's or the configuration's limits.pids are
		 * explicit too), or required by the floor (--require cgroup-pids, cgroup, all) */
		[PN_PIDS] = (p->limits_set & (1u << AL_LIMIT_PIDS)) || (p->require & REQ_CGROUP_PIDS),
		[PN_CPU_TIME] = p->limits[AL_LIMIT_CPU_MS] != AL_UNLIMITED,
		[PN_PROXY] = pol_needs_proxy(p),
	};
	uint32_t bits = 0;
	for (int i = 0; i < PN__COUNT; i++)
		bits |= need[i] ? 1u << i : 0;
	return bits;
}

void pol_plan_build(const struct al_policy *p, bool root, struct pol_plan *out)
{
	*out = (struct pol_plan){
		.require = p->require,
		.require_landlock_abi = p->require_landlock_abi,
		.seccomp = p->seccomp,
		.landlock = p->landlock,
		.limits = p->limits,
		.limits_set = p->limits_set,
		.root = root,
		.needs = needs(p, root),
		.sends_uppers = p->workdir || p->nws_layers ||
				(p->checkout && p->checkout_mode == AL_CHECKOUT_COPY && p->keep_changes),
	};
	net_plan(p, &out->net);
}

int pol_plan_conflicts(const struct al_policy *p, const struct pol_plan *pl, struct al_error *err)
{
	if ((pl->require & REQ_SECCOMP) && pl->seccomp == AL_SECCOMP_OFF)
		return al_err(err, EPERM, "required layer seccomp is off in this policy (--seccomp off)");
	if ((pl->require & REQ_NETNS) && !pl->net.own_netns)
		return al_err(err, EPERM, "required layer netns conflicts with --net host");
	if ((pl->require & REQ_LANDLOCK) && !pl->landlock)
		return al_err(err, EPERM, "required layer landlock is off in this policy (--landlock off)");
	if (p->nfiles && p->workdir)
		return al_err(err, EINVAL,
			      "files for the sandbox (airlock exec's code) go into the throwaway /workspace, not into "
			      "--workdir");
	if (!pl->root && p->id_base != AL_DEFAULT_ID_BASE)
		return al_err(err, EPERM,
			      "--id-base needs root: as an ordinary user the sandbox maps only the caller's own ids");
	return 0;
}

int pol_plan_misuse(const struct al_policy *p, const struct pol_plan *pl, struct al_error *err)
{
	if (p->keep_changes && !pol_plan_needs(pl, PN_CHECKOUT_COPY))
		return al_err(err, EINVAL, "--keep-changes needs --checkout DIR with --checkout-mode copy");
	if (p->subids && pl->root)
		return al_err(err, EINVAL,
			      "--subids is for ordinary users: as root the sandbox already maps 65536 ids");
	return 0;
}
