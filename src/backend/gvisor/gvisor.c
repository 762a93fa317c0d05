/* gvisor.c — the gVisor backend: runsc runs the bundle (backend/oci/ocispawn.c) under gVisor's user-space kernel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/oci/bundle.h"
#include "util/error.h"

/* runsc in the foreground (`run` waits and exits with the payload's status). The ptrace
 * platform needs no /dev/kvm; --ignore-cgroups: the job's cgroups are the supervisor's, and this
 * runsc would otherwise make cgroups at the root of every hierarchy. --network=none: gVisor's
 * own stack with only its loopback; --network=host hands the sentry the host's. --oci-seccomp:
 * gVisor's kernel enforces config.json's linux.seccomp (airlock's profile as rules, bundle.c)
 * on the payload's calls; without it runsc would ignore that section. */
static int runsc_argv(char ***argv, const struct al_policy *p, const char *state, const char *bundle, const char *log,
		      const char *id)
{
	char logarg[4200];
	if (snprintf(logarg, sizeof(logarg), "--log=%s", log) >= (int)sizeof(logarg))
		return -ENAMETOOLONG;
	return oci_strv_dup(
		argv, (const char *const[]){OCI_RUNSC_PATH, "--root", state, logarg, "--log-format=json",
					    p->net == AL_NET_HOST ? "--network=host" : "--network=none",
					    "--ignore-cgroups", "--platform=ptrace",
					    p->seccomp != AL_SECCOMP_OFF ? "--oci-seccomp" : "--oci-seccomp=false",
					    "run", "--bundle", bundle, id, NULL});
}

/* runsc 20221219 under gVisor's user-space kernel: what the runtimes share cannot, and more. */
// NOLINTBEGIN(bugprone-suspicious-missing-comma): each reason is one sentence split over lines
const struct be_caps be_gvisor_caps = {
	.name = "gvisor",
	.cleanup_stale = be_oci_cleanup_stale, /* runsc's bundles are the OCI backend's */
	.isolation = true,
	.lacks =
		{
			OCI_LACKS,
			[PN_LANDLOCK] = "gVisor's kernel has no Landlock (use --backend oci or native)",
			[PN_CGROUPNS] =
				"gVisor emulates its own /sys/fs/cgroup, no kernel cgroup namespace is made (use "
				"--backend oci or native)",
			[PN_PIVOT_ROOT] = "the payload's root is gVisor's own mount tree (use --backend oci or native)",
			[PN_ROOTLESS] =
				"runsc 20221219 cannot start its gofer as an ordinary user, rootless or in a user "
				"namespace (fork/exec /proc/self/exe: invalid argument; use --backend oci, bwrap or "
				"native)",
			/* runsc 20221219 with --network=host in a user namespace fails setting up the
			 * container's mounts ("error converting mounts: operation not permitted"). */
			[PN_NET_HOST] =
				"runsc 20221219 cannot share the host's network with a sandbox in a user namespace "
				"(use --backend oci, bwrap or native)",
			/* The job's pids.max counts host tasks: gVisor's sentry threads and its ptrace stubs,
			 * not the guest's processes one by one; at the limit the sentry stalls instead of
			 * failing fork with EAGAIN. So an explicit --pids, or a floor requiring cgroup-pids,
			 * a promise about the payload's processes, is refused; the default limit still bounds
			 * what the host runs for the job, and the verdict says just that (cgroup.pids false,
			 * cgroup.pids_host_tasks true). */
			[PN_PIDS] = "they live inside gVisor's kernel, and the job cgroup's pids.max only bounds "
				    "gVisor's own "
				    "host tasks (use --backend oci, bwrap or native)",
			/* gVisor's kernel shows the payload RLIMIT_CPU but never signals at it: a spin runs
			 * on to --time. Refused rather than reported as a limit. */
			[PN_CPU_TIME] =
				"gVisor's kernel accepts RLIMIT_CPU but never stops the payload at it (use --time, or "
				"--backend oci, bwrap or native)",
			[PN_PROXY] =
				"gVisor's network stack offers no way to hand its listening socket to airlock (use "
				"--backend oci, bwrap or native)",
		},
};
// NOLINTEND(bugprone-suspicious-missing-comma)

static const struct oci_runtime_desc runsc = {
	.runtime = OCI_RUNSC,
	.path = OCI_RUNSC_PATH,
	.name = "gvisor",
	.package = "runsc",
	.argv = runsc_argv,
	/* The namespaces are gVisor's own (its kernel's), the host ones hold the sentry and gofer; its
	 * kernel has its own cgroupfs, and the payload's root is its own mount tree. */
	.ns = BE_NS_ALL & ~(unsigned)BE_NS_CGROUP,
	.pivot_root = false,
	.netns_maker = "gvisor",
	.kernel = "gvisor",
	.platform = "ptrace",
};

int be_gvisor_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io, struct be_proc *out,
		    struct al_error *err)
{
	int r = oci_spawn(&runsc, p, pl, io, out, err);
	/* The job cgroup holds runsc, the Sentry and the gofer: its pids.max counts their host tasks
	 * (the verdict says so), while the payload's processes are the Sentry's own. */
	if (r == 0)
		out->pids_host_tasks = true;
	return r;
}
