/* plan.c — what airlock grants a bundle under its profile: refusals and ceilings, decided before anything runs (pure). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "policy/policy.h"
#include "spec.h"
#include "util/cleanup.h"
#include "util/error.h"

/* Capabilities that make a container privileged: a config asking for any of them is refused
 * under a confined profile, rather than run without them (it asked for a different thing). The
 * rest of a config's capabilities are simply not granted (the ceiling is none). */
static const char *const privileged_caps[] = {
	"CAP_SYS_ADMIN",       "CAP_SYS_MODULE",      "CAP_SYS_RAWIO",	   "CAP_SYS_PTRACE",
	"CAP_SYS_BOOT",	       "CAP_NET_ADMIN",	      "CAP_BPF",	   "CAP_PERFMON",
	"CAP_MAC_ADMIN",       "CAP_MAC_OVERRIDE",    "CAP_SYS_TIME",	   "CAP_SYSLOG",
	"CAP_DAC_READ_SEARCH", "CAP_LINUX_IMMUTABLE", "CAP_AUDIT_CONTROL", "CAP_SYS_PACCT",
	"CAP_SYS_TTY_CONFIG",  "CAP_WAKE_ALARM",      "CAP_BLOCK_SUSPEND", "CAP_CHECKPOINT_RESTORE",
};

static const char *const namespace_words[ORT_NS__COUNT] = {
	[ORT_NS_PID] = "pid",	[ORT_NS_NET] = "network", [ORT_NS_IPC] = "ipc",	      [ORT_NS_UTS] = "uts",
	[ORT_NS_MNT] = "mount", [ORT_NS_USER] = "user",	  [ORT_NS_CGROUP] = "cgroup",
};

static int decide_profile(const struct ort_spec *s, struct ort_plan *plan, struct al_error *err)
{
	const char *prof = ort_annotation(s, ORT_ANN_PROFILE);
	if (!prof || strcmp(prof, "untrusted-code-read") == 0) {
		plan->profile = "untrusted-code-read";
	} else if (strcmp(prof, "untrusted-code-write") == 0) {
		plan->profile = "untrusted-code-write";
	} else if (strcmp(prof, "none") == 0) {
		plan->profile = "none";
	} else {
		return al_err(err, EINVAL,
			      "annotation %s=%s: unknown profile (untrusted-code-read, untrusted-code-write, none)",
			      ORT_ANN_PROFILE, prof);
	}
	plan->confined = strcmp(plan->profile, "none") != 0;
	return 0;
}

/* The network posture: "none" (default: a network namespace of the container's own), "pod" (join
 * the namespace the config names, a pod's), "host" (profile none only). */
static int decide_network(const struct ort_spec *s, struct ort_plan *plan, struct al_error *err)
{
	const char *net = ort_annotation(s, ORT_ANN_NET);
	/* containerd's CRI marks a pod's application containers, which join their pod sandbox's
	 * namespaces by path (set by containerd itself, never by the pod's author): "pod". */
	const char *cri = ort_annotation(s, "io.kubernetes.cri.container-type");
	if (!net)
		net = cri && strcmp(cri, "container") == 0 ? "pod" : "none";
	if (strcmp(net, "none") != 0 && strcmp(net, "pod") != 0 && strcmp(net, "host") != 0)
		return al_err(err, EINVAL, "annotation %s=%s: unknown network posture (none, pod, host)", ORT_ANN_NET,
			      net);
	bool host_net = !s->ns[ORT_NS_NET];
	if (host_net && (plan->confined || strcmp(net, "host") != 0))
		return al_err(err, EPERM,
			      "the config shares the host's network (no network namespace): refused under profile %s "
			      "with network %s (host networking needs profile none and %s=host)",
			      plan->profile, net, ORT_ANN_NET);
	if (s->ns_path[ORT_NS_NET] && strcmp(net, "pod") != 0)
		return al_err(err, EPERM,
			      "the config joins the network namespace %s: refused under network %s (%s=pod allows a "
			      "pod's namespace)",
			      s->ns_path[ORT_NS_NET], net, ORT_ANN_NET);
	plan->net_join = s->ns_path[ORT_NS_NET] != NULL;
	return 0;
}

/* linux.sysctl: only the kernel's namespaced settings, of a namespace the container has of its
 * own (a write there changes nothing outside it); anything else would be the host's. */
static int decide_sysctls(const struct ort_spec *s, struct al_error *err)
{
	static const struct {
		const char *prefix;
		enum ort_ns ns;
	} allowed[] = {{"net.", ORT_NS_NET},
		       {"kernel.shm", ORT_NS_IPC},
		       {"kernel.msg", ORT_NS_IPC},
		       {"kernel.sem", ORT_NS_IPC},
		       {"fs.mqueue.", ORT_NS_IPC},
		       {"kernel.hostname", ORT_NS_UTS},
		       {"kernel.domainname", ORT_NS_UTS}};
	for (size_t i = 0; i < s->nsysctls; i++) {
		const char *k = s->sysctls[i].key;
		size_t a = 0;
		while (a < AL_ARRAY_SIZE(allowed) && strncmp(k, allowed[a].prefix, strlen(allowed[a].prefix)) != 0)
			a++;
		if (a == AL_ARRAY_SIZE(allowed))
			return al_err(err, EPERM,
				      "linux.sysctl %s is not a namespaced setting: refused (it is the host's)", k);
		if (!s->ns[allowed[a].ns] || s->ns_path[allowed[a].ns])
			return al_err(
				err, EPERM,
				"linux.sysctl %s: the container has no %s namespace of its own: refused (it would "
				"change one it shares)",
				k, namespace_words[allowed[a].ns]);
	}
	return 0;
}

/* A confined container has every namespace of its own, or, in a pod (io.airlock.net=pod), its
 * pod's pid, ipc and uts namespaces (never the host's: create checks the paths); no devices
 * beyond the fixed set and nothing airlock cannot enforce (hooks: hooks.c). */
static int decide_confinement(const struct ort_spec *s, const struct ort_plan *plan, struct al_error *err)
{
	static const enum ort_ns own[] = {ORT_NS_PID, ORT_NS_IPC, ORT_NS_UTS, ORT_NS_MNT};
	for (size_t i = 0; i < AL_ARRAY_SIZE(own); i++) {
		if (!s->ns[own[i]] && (plan->confined || own[i] == ORT_NS_MNT))
			return al_err(err, EPERM, "the config shares the host's %s namespace: refused under profile %s",
				      namespace_words[own[i]], plan->profile);
		bool pod_may_join = plan->net_join && own[i] != ORT_NS_MNT;
		if (s->ns_path[own[i]] && !pod_may_join && (plan->confined || own[i] == ORT_NS_MNT))
			return al_err(err, EPERM, "the config joins the %s namespace %s: refused under profile %s",
				      namespace_words[own[i]], s->ns_path[own[i]], plan->profile);
	}
	if (s->ns_path[ORT_NS_USER] || s->ns_path[ORT_NS_CGROUP])
		return al_err(err, ENOTSUP, "joining an existing user or cgroup namespace is not supported");
	int r = decide_sysctls(s, err);
	if (r < 0)
		return r;
	if (s->has_selinux || s->has_intel_rdt)
		return al_err(err, ENOTSUP, "linux.mountLabel and linux.intelRdt are not supported");
	if (s->ndevices && plan->confined)
		return al_err(err, EPERM, "linux.devices (device nodes) refused under profile %s", plan->profile);
	for (size_t i = 0; i < s->nmounts; i++)
		if (s->mounts[i].propag & (MS_SHARED))
			return al_err(err, EPERM, "mount %s: shared propagation with the host is refused",
				      s->mounts[i].dest);
	return 0;
}

static int decide_caps(const struct ort_spec *s, struct ort_plan *plan, struct al_error *err)
{
	const struct ort_caps *c = &s->proc.caps;
	uint64_t asked = c->bounding | c->effective | c->permitted | c->inheritable | c->ambient;
	if (!plan->confined) {
		plan->caps = *c;
		return 0;
	}
	for (size_t i = 0; i < AL_ARRAY_SIZE(privileged_caps); i++) {
		int n = ort_cap_number(privileged_caps[i]);
		if (n >= 0 && (asked & (1ull << n)))
			return al_err(err, EPERM,
				      "the config asks for %s (a privileged container): refused under profile %s",
				      privileged_caps[i], plan->profile);
	}
	/* The ceiling of a confined profile is no capability at all: the process runs as airlock's
	 * payloads do, whatever ordinary capabilities (CHOWN, KILL, ...) the config listed. */
	memset(&plan->caps, 0, sizeof(plan->caps));
	return 0;
}

/* Confined: container ids map to an unprivileged host range (never host root). */
static int decide_ids(const struct ort_spec *s, bool is_root, struct ort_plan *plan, struct al_error *err)
{
	if (s->ns[ORT_NS_USER]) {
		for (size_t i = 0; i < s->nuidmap; i++)
			if (plan->confined && s->uidmap[i].host == 0)
				return al_err(err, EPERM,
					      "linux.uidMappings maps container uid %u to host root: refused under "
					      "profile %s",
					      s->uidmap[i].inside, plan->profile);
		if (!s->nuidmap || !s->ngidmap)
			return al_err(err, EINVAL, "a user namespace needs linux.uidMappings and linux.gidMappings");
		return 0;
	}
	if (!plan->confined)
		return 0;
	if (!is_root)
		return al_err(err, EPERM,
			      "airlock-runc without a user namespace in the config needs root (it maps a "
			      "range of ids)");
	plan->add_userns = true;
	plan->id_base = AL_DEFAULT_ID_BASE;
	return 0;
}

int ort_plan_decide(const struct ort_spec *s, bool is_root, struct ort_plan *plan, struct al_error *err)
{
	memset(plan, 0, sizeof(*plan));
	int r;
	/* Capabilities first: a privileged config is told so, whatever else it asks. */
	if ((r = decide_profile(s, plan, err)) < 0 || (r = decide_caps(s, plan, err)) < 0 ||
	    (r = decide_network(s, plan, err)) < 0 || (r = decide_confinement(s, plan, err)) < 0 ||
	    (r = decide_ids(s, is_root, plan, err)) < 0)
		return r;
	const char *sc = ort_annotation(s, ORT_ANN_SECCOMP);
	if (sc && strcmp(sc, "config-only") != 0 && strcmp(sc, "default") != 0)
		return al_err(err, EINVAL, "annotation %s=%s: default or config-only", ORT_ANN_SECCOMP, sc);
	if (sc && strcmp(sc, "config-only") == 0 && plan->confined)
		return al_err(err, EPERM, "annotation %s=config-only (no airlock allowlist) needs profile none",
			      ORT_ANN_SECCOMP);
	plan->airlock_seccomp = !(sc && strcmp(sc, "config-only") == 0);
	plan->landlock = plan->confined;
	/* no_new_privs is airlock's floor under a confined profile, whatever the config says. */
	plan->nnp = plan->confined || s->proc.nnp;
	plan->verdict = ort_annotation(s, ORT_ANN_VERDICT);
	if (plan->verdict && !plan->verdict[0])
		return al_err(err, EINVAL, "annotation %s is empty", ORT_ANN_VERDICT);
	return 0;
}

enum ort_rootmap_mode ort_rootmap_wanted(const struct ort_spec *s, const struct ort_plan *plan)
{
	if (plan->add_userns)
		return ORT_ROOTMAP_IDMAPPED;
	return s->ns[ORT_NS_USER] ? ORT_ROOTMAP_CONFIG : ORT_ROOTMAP_HOST;
}

/* Each of these says the mapping cannot be had here, not that something is wrong: EINVAL, a
 * filesystem without idmapped mounts (or a kernel that does not know MOUNT_ATTR_IDMAP, 5.11 and
 * older); EOPNOTSUPP and ENOSYS, likewise from older interfaces; EPERM, a rootfs that is an
 * idmapped mount already (the engine mapped it: its mapping stands). The container then runs as
 * before, which takes nothing from its confinement: only its root's write access to the image. */
int ort_rootmap_after(int setattr_err)
{
	switch (setattr_err) {
	case 0:
		return ORT_ROOTMAP_IDMAPPED;
	case EINVAL:
	case EOPNOTSUPP:
	case ENOSYS:
	case EPERM:
		return ORT_ROOTMAP_UNSUPPORTED;
	default:
		return -1;
	}
}

/* One decimal id after optional blanks, within 32 bits (sscanf's %u would wrap a larger one). */
static int parse_id(const char **p, uint32_t *out)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
	if (**p < '0' || **p > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(*p, &end, 10);
	if (errno || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	*p = end;
	return 0;
}

/* The kernel takes net.ipv4.ping_group_range only as two gids mapped in the writer's user
 * namespace; Docker asks "0 2147483647" (every group), wider than any map airlock makes. A gid the
 * map does not hold is no process's in the container, so the range narrowed to the mapped ids
 * lets exactly the same processes ping: not a widening, not a loss. Nothing mapped in it: "1 0",
 * the kernel's own "nobody". */
int ort_ping_range_clamp(const char *value, const struct ort_idmap *m, size_t n, char out[32])
{
	uint32_t lo, hi;
	const char *p = value;
	if (parse_id(&p, &lo) < 0 || (*p != ' ' && *p != '\t') || parse_id(&p, &hi) < 0)
		return -EINVAL;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	uint64_t nlo = UINT64_MAX, nhi = 0;
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = m[i].inside, b = (uint64_t)m[i].inside + m[i].size - 1;
		if (b < lo || a > hi)
			continue;
		uint64_t from = a > lo ? a : lo, to = b < hi ? b : hi;
		nlo = from < nlo ? from : nlo;
		nhi = to > nhi ? to : nhi;
		any = true;
	}
	if (!any || hi < lo)
		snprintf(out, 32, "1 0");
	else
		snprintf(out, 32, "%" PRIu64 " %" PRIu64, nlo, nhi);
	return 0;
}

int ort_sysctls_clamp(struct ort_spec *s, const struct ort_plan *plan, struct al_error *err)
{
	struct ort_idmap added = {0, plan->id_base, 65536};
	const struct ort_idmap *m = plan->add_userns ? &added : s->gidmap;
	size_t n = plan->add_userns ? 1 : s->ngidmap;
	if (!plan->add_userns && !s->ns[ORT_NS_USER])
		return 0; /* no user namespace: the host's ids, nothing to clamp to */
	for (size_t i = 0; i < s->nsysctls; i++) {
		struct ort_sysctl *sc = &s->sysctls[i];
		char v[32];
		if (strcmp(sc->key, "net.ipv4.ping_group_range") != 0)
			continue;
		if (ort_ping_range_clamp(sc->value, m, n, v) < 0)
			return al_err(err, EINVAL, "linux.sysctl net.ipv4.ping_group_range '%s': two group ids",
				      sc->value);
		char *d = strdup(v);
		if (!d)
			return al_err(err, ENOMEM, "out of memory");
		free(sc->value);
		sc->value = d;
	}
	return 0;
}
