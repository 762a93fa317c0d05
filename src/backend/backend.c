/* backend.c — one policy, several boundaries: the table of backends (name, capability table, spawn),
 * and the one entry that plans, refuses and spawns. Never falls back to another backend: a backend
 * that is missing or cannot enforce the policy refuses. */
#include <errno.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/capability.h"
#include "cgroup/cgroup.h"
#include "kit/landlock.h"
#include "kit/sched.h"
#include "util/cleanup.h"
#include "util/error.h"

/* A new backend is a row here: its capability table and its spawn. */
static const struct {
	const struct be_caps *caps;
	be_spawn_fn *spawn;
} backends[] = {
	[AL_BACKEND_NATIVE] = {&be_native_caps, be_native_spawn}, [AL_BACKEND_BWRAP] = {&be_bwrap_caps, be_bwrap_spawn},
	[AL_BACKEND_GVISOR] = {&be_gvisor_caps, be_gvisor_spawn}, [AL_BACKEND_OCI] = {&be_oci_caps, be_oci_spawn},
	[AL_BACKEND_NONE] = {&be_none_caps, be_none_spawn},
};

static bool known(enum al_backend b)
{
	return (unsigned)b < AL_ARRAY_SIZE(backends) && backends[b].caps;
}

void be_cleanup_stale(const struct al_policy *p, bool killed)
{
	void (*done[AL_ARRAY_SIZE(backends)])(void);
	size_t n = 0;
	for (size_t b = 0; b < AL_ARRAY_SIZE(backends); b++) {
		void (*fn)(void) = backends[b].caps->cleanup_stale;
		bool seen = false;
		for (size_t i = 0; i < n; i++)
			seen = seen || done[i] == fn;
		if (!fn || seen || !(killed || !p || p->backend == (enum al_backend)b))
			continue;
		done[n++] = fn;
		fn();
	}
}

const struct be_caps *be_caps_of(enum al_backend b)
{
	return known(b) ? backends[b].caps : &be_none_caps;
}

const char *al_backend_name(enum al_backend b)
{
	return known(b) ? backends[b].caps->name : "?";
}

int al_policy_set_backend(struct al_policy *p, enum al_backend b, struct al_error *err)
{
	if (!known(b))
		return al_err(err, EINVAL, "--backend: unknown backend %d", (int)b);
	p->backend = b;
	return 0;
}

enum al_backend al_policy_get_backend(const struct al_policy *p)
{
	return p->backend;
}

/* The host facts of the refusals, probed only where the backend's table asks for them. */
static void probe_host(const struct be_caps *caps, const struct pol_plan *pl, struct be_host *h)
{
	/* The kernel's own test, as bwrap's --unshare-cgroup-try makes it. */
	h->cgroupns =
		!caps->kernel_cgroupns || !(pl->require & REQ_CGROUPNS) || access("/proc/self/ns/cgroup", F_OK) == 0;
	h->landlock_abi = 0;
	if (caps->kernel_landlock && (pl->require & REQ_LANDLOCK)) {
		h->landlock_abi = ll_abi();
		if (h->landlock_abi > LL_ABI_MAX)
			h->landlock_abi = LL_ABI_MAX; /* newer rights stay unhandled: report what we use */
	}
}

int be_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct al_error *err)
{
	struct pol_plan pl;
	pol_plan_build(p, geteuid() == 0, &pl);
	if (io->held)
		return be_attach_spawn(p, &pl, io, out, err);
	if (io->code_fd >= 0) /* a fresh sandbox has its files written before anything of it runs */
		return al_err(err, ENOTSUP, "a code descriptor is only for an exec in a held sandbox");
	if (!known(p->backend))
		return al_err(err, EINVAL, "unknown backend %d", (int)p->backend);
	if (io->hold)
		pl.needs |= 1u << PN_HOLD;
	if (io->tty)
		pl.needs |= 1u << PN_TTY;
	const struct be_caps *caps = backends[p->backend].caps;
	struct be_host host;
	probe_host(caps, &pl, &host);
	int r = be_refuse(caps, p, &pl, &host, err);
	if (r == 0 && io->cg && !caps->makes_cgroup)
		r = cg_make(io->cg, err);
	if (r < 0)
		return r;
	/* Whatever class the caller runs in, the job starts in the default one (kit/sched.c). */
	struct sched_saved sched;
	sched_fork_default(&sched);
	r = backends[p->backend].spawn(p, &pl, io, out, err);
	sched_fork_restore(&sched);
	return r;
}
