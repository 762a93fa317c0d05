/* capability.c — the one refusal (a plan against a backend's capability table) and the one writer of "enforced". */
#include "backend/capability.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kit/landlock.h"
#include "kit/seccomp.h"
#include "util/cleanup.h"
#include "util/error.h"

/* Each need's refusal: "the NAME backend WHAT: WHY", WHY from the backend's table. */
static const struct {
	int code;
	const char *what;
} need_refusal[PN__COUNT] = {
	[PN_LANDLOCK] = {ENOTSUP, "cannot enforce the required layer landlock"},
	[PN_CGROUPNS] = {ENOTSUP, "cannot enforce the required layer cgroupns"},
	[PN_PIVOT_ROOT] = {ENOTSUP, "cannot enforce the required layer pivot_root"},
	[PN_CHECKOUT_COPY] = {ENOTSUP, "cannot make --checkout-mode copy"},
	[PN_KEEP_CHANGES] = {ENOTSUP, "cannot --keep-changes"},
	[PN_SUBIDS] = {ENOTSUP, "cannot map --subids"},
	[PN_FALLBACK] = {ENOTSUP, "has no --fallback"},
	[PN_HOLD] = {EINVAL, "cannot hold a sandbox for later commands"},
	[PN_WORKDIR_DISK] = {ENOTSUP, "cannot cap --workdir with --disk"},
	[PN_WORKDIR] = {ENOTSUP, "cannot take --workdir safely"},
	[PN_ROOTLESS] = {EPERM, "needs root here"},
	[PN_NET_HOST] = {ENOTSUP, "cannot run --net host here"},
	[PN_PIDS] = {ENOTSUP, "cannot enforce a pids limit (--pids, --require cgroup-pids) on the payload's processes"},
	[PN_CPU_TIME] = {ENOTSUP, "cannot enforce --cpu-time"},
	[PN_PROXY] = {ENOTSUP, "cannot serve the egress proxy (--net allow=..., --broker)"},
	[PN_TTY] = {ENOTSUP, "has no terminal of the sandbox's own (--tty)"},
};

/* The none backend makes no layer: a floor, a filesystem view, a proxy or a rootfs is refused. */
static int refuse_no_isolation(const struct al_policy *p, struct al_error *err)
{
	if (p->require)
		return al_err(err, EPERM,
			      "the none backend (profile none) enforces no isolation layer, but the policy requires "
			      "some (--require)");
	if (p->checkout || p->net == AL_NET_ALLOW || p->rootfs)
		return al_err(err, EINVAL,
			      "the none backend (profile none) has no filesystem view, proxy or rootfs of its own");
	return 0;
}

/* The host's own limits on the layers a backend takes from its kernel. */
static int refuse_host(const struct be_caps *caps, const struct pol_plan *pl, const struct be_host *host,
		       struct al_error *err)
{
	if (caps->kernel_cgroupns && (pl->require & REQ_CGROUPNS) && !host->cgroupns)
		return al_err(err, ENOTSUP,
			      "required layer cgroupns is not available: this kernel has no cgroup namespaces");
	if (caps->kernel_landlock && (pl->require & REQ_LANDLOCK) && host->landlock_abi < pl->require_landlock_abi)
		return al_err(err, EPERM,
			      "required layer landlock>=%d is not available: this kernel offers Landlock ABI %d",
			      pl->require_landlock_abi, host->landlock_abi);
	return 0;
}

int be_refuse(const struct be_caps *caps, const struct al_policy *p, const struct pol_plan *pl,
	      const struct be_host *host, struct al_error *err)
{
	if (pol_plan_needs(pl, PN_HOLD) && caps->lacks[PN_HOLD])
		return al_err(err, EINVAL, "held sandboxes (airlock serve) need the native backend, not %s",
			      caps->name);
	/* Before the none backend's own refusals, which never look at the plan's needs. */
	if (pol_plan_needs(pl, PN_TTY) && caps->lacks[PN_TTY])
		return al_err(err, ENOTSUP, "the %s backend %s: %s", caps->name, need_refusal[PN_TTY].what,
			      caps->lacks[PN_TTY]);
	if (!caps->isolation)
		return refuse_no_isolation(p, err);
	int r = pol_plan_conflicts(p, pl, err);
	for (int n = 0; r == 0 && n < PN__COUNT; n++)
		if (pol_plan_needs(pl, (enum pol_need)n) && caps->lacks[n])
			r = al_err(err, need_refusal[n].code, "the %s backend %s: %s", caps->name, need_refusal[n].what,
				   caps->lacks[n]);
	return r ?: pol_plan_misuse(p, pl, err) ?: refuse_host(caps, pl, host, err);
}

void be_sc_options(const struct pol_plan *pl, bool netns, struct sc_options *out)
{
	*out = (struct sc_options){
		.profile = pl->seccomp,
		.allow_inet = netns ? pl->net.inet_in_netns : pl->net.inet_without_netns,
		.allow_io_uring = false,
	};
}

json_t *be_landlock_json(const struct ll_spec *spec, int abi)
{
	if (!spec)
		return json_false();
	return json_pack("{s:i,s:b,s:s,s:b,s:b}", "abi", abi, "fs", 1, "fs_rights",
			 spec->writes_only ? "writes" : "all", "net", spec->deny_tcp && abi >= 4, "scoped",
			 spec->scope && abi >= 6);
}

static json_t *limit_or_null(uint64_t v)
{
	return v == AL_UNLIMITED ? json_null() : json_integer((json_int_t)v);
}

json_t *be_rlimits_json(const uint64_t *limits)
{
	uint64_t cpu = limits[AL_LIMIT_CPU_MS];
	/* RLIMIT_CPU in whole seconds, rounded up as rl_apply sets it */
	return json_pack("{s:o,s:o,s:I,s:i,s:o}", "cpu_s",
			 limit_or_null(cpu == AL_UNLIMITED ? cpu : (cpu + 999) / 1000), "fsize",
			 limit_or_null(limits[AL_LIMIT_FSIZE]), "nofile", (json_int_t)limits[AL_LIMIT_NOFILE], "core",
			 0, "as", limit_or_null(limits[AL_LIMIT_AS]));
}

static json_t *namespaces_json(const struct pol_plan *pl, unsigned ns)
{
	if (!pl->net.own_netns)
		ns &= ~(unsigned)BE_NS_NET;
	return json_pack("{s:b,s:b,s:b,s:b,s:b,s:b,s:b}", "user", ns & BE_NS_USER, "pid", ns & BE_NS_PID, "mount",
			 ns & BE_NS_MOUNT, "net", ns & BE_NS_NET, "ipc", ns & BE_NS_IPC, "uts", ns & BE_NS_UTS,
			 "cgroup", ns & BE_NS_CGROUP);
}

/* null where no user namespace maps anything (the fallback) */
static json_t *id_map_json(const struct be_applied *a)
{
	if (!a->map_mode)
		return json_null();
	return json_pack("{s:s,s:I,s:I}", "mode", a->map_mode, "host_base", a->map_base, "count", a->map_count);
}

/* Who made the job's network namespace: none of its own under host; airlock, when the egress
 * proxy's socket had to be made in it (bwrap and the runtimes offer no way in); else the tool. */
static const char *netns_maker(const struct pol_plan *pl, const struct be_applied *a)
{
	return !pl->net.own_netns ? "host" : pl->net.proxy ? "airlock" : a->netns_maker;
}

static int set_str(json_t *e, const char *key, const char *v)
{
	return v ? json_object_set_new(e, key, json_string(v)) : 0;
}

static int set_layers(json_t *e, const struct pol_plan *pl, const struct be_applied *a)
{
	int r = json_object_set_new(e, "rlimits", be_rlimits_json(pl->limits));
	r = r ?: json_object_set_new(e, "seccomp", a->seccomp ? json_string(a->seccomp) : json_false());
	/* Always called: it takes a->landlock, even after a failure. */
	int rl = json_object_set_new(e, "landlock", a->landlock ? a->landlock : json_false());
	r = r ?: rl;
	r = r ?: set_str(e, "workdir", a->workdir) ?: set_str(e, "files", a->files);
	if (r == 0 && a->cgroup_key)
		r = json_object_set_new(e, "cgroup", json_false());
	r = r ?: set_str(e, "kernel", a->kernel) ?: set_str(e, "platform", a->platform);
	if (r == 0 && a->disk_key)
		r = json_object_set_new(e, "disk", json_false());
	return r ?: set_str(e, "workspace", a->workspace);
}

json_t *be_enforced(const struct pol_plan *pl, const struct be_applied *a)
{
	json_t *e = json_object();
	if (!e) {
		json_decref(a->landlock);
		return NULL;
	}
	int r = set_str(e, a->tool_key, a->tool);
	r = r ?: set_str(e, "isolation", a->isolation);
	if (r == 0 && a->fallback)
		r = json_object_set_new(e, "fallback", json_true());
	r = r ?: json_object_set_new(e, "namespaces", namespaces_json(pl, a->ns));
	r = r ?: json_object_set_new(e, "pivot_root", json_boolean(a->pivot_root));
	r = r ?: json_object_set_new(e, "readonly_root", json_boolean(a->readonly_root));
	if (r == 0 && a->setgroups)
		r = json_object_set_new(e, "id_map", id_map_json(a)) ?: set_str(e, "setgroups", a->setgroups);
	r = r ?: json_object_set_new(e, "payload_uid", json_integer(a->payload_uid));
	r = r ?: json_object_set_new(e, "payload_host_uid", json_integer(a->payload_host_uid));
	r = r ?: json_object_set_new(e, "payload_gid", json_integer(a->payload_gid));
	r = r ?: json_object_set_new(e, "payload_host_gid", json_integer(a->payload_host_gid));
	if (r == 0 && a->userns_disabled)
		r = json_object_set_new(e, "userns_disabled", json_true());
	r = r ?: json_object_set_new(e, "no_new_privs", json_true());
	r = r ?: json_object_set_new(e, "capabilities", json_string("none"));
	r = r ?: json_object_set_new(e, "environment", json_string("scrubbed"));
	r = r ?: json_object_set_new(e, "network", json_string(a->network ? a->network : pl->net.name));
	if (r == 0 && a->netns_maker)
		r = json_object_set_new(e, "network_namespace", json_string(netns_maker(pl, a)));
	if (r == 0 && a->loopback)
		r = json_object_set_new(e, "loopback", json_string(pl->net.loopback));
	int rl = set_layers(e, pl, a); /* always: it takes a->landlock */
	if (r == 0 && rl == 0)
		return e;
	json_decref(e);
	return NULL;
}

/* The host layers a capability table speaks of: a backend that lacks the need does not enforce
 * the layer. */
static const struct {
	enum host_layer layer;
	enum pol_need need;
} by_need[] = {
	{HOST_LAYER_LANDLOCK, PN_LANDLOCK},	      {HOST_LAYER_CGROUPNS, PN_CGROUPNS},
	{HOST_LAYER_CHECKOUT_COPY, PN_CHECKOUT_COPY}, {HOST_LAYER_WORKDIR_OVERLAY, PN_WORKDIR},
	{HOST_LAYER_EGRESS_PROXY, PN_PROXY},	      {HOST_LAYER_PIDS_LIMIT, PN_PIDS},
};

void be_host_lacks(host_lacks_table *out)
{
	memset(out, 0, sizeof(*out));
	for (int b = 0; b < HOST_LAYERS_BACKENDS; b++) {
		const struct be_caps *caps = be_caps_of(b);
		(*out)[b].name = caps->name;
		for (size_t i = 0; i < AL_ARRAY_SIZE(by_need); i++)
			(*out)[b].lacks[by_need[i].layer] = caps->lacks[by_need[i].need] != NULL;
	}
}
