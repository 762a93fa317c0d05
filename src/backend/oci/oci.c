/* oci.c — the OCI-runtime backend: crun runs the bundle (ocispawn.c), the host kernel behind its namespaces and airlock's filter. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bundle.h"
#include "util/error.h"

/* crun in the foreground: `run` waits for the container and exits with its status. Its errors go
 * to the log as JSON lines, so the monitor tells them from the payload's own exit codes.
 * --preserve-fds=1: fd 3, the pipe of airlock-init's record (backend/ainit.c), reaches the container.
 * --cgroup-manager=disabled: the job's cgroups are the supervisor's (see ocispawn.c). */
static int crun_argv(char ***argv, const struct al_policy *p, const char *state, const char *bundle, const char *log,
		     const char *id)
{
	(void)p;
	char logarg[4200];
	if (snprintf(logarg, sizeof(logarg), "--log=file:%s", log) >= (int)sizeof(logarg))
		return -ENAMETOOLONG;
	return oci_strv_dup(argv, (const char *const[]){OCI_CRUN_PATH, "--root", state, logarg, "--log-format=json",
							"--cgroup-manager=disabled", "run", "--preserve-fds=1",
							"--bundle", bundle, id, NULL});
}

/* crun: the host kernel behind every namespace and airlock's own filter and ruleset (airlock-init
 * applies the native Landlock rules, backend/ainit.c). */
// NOLINTBEGIN(bugprone-suspicious-missing-comma): each reason is one sentence split over lines
const struct be_caps be_oci_caps = {
	.name = "oci",
	.cleanup_stale = be_oci_cleanup_stale,
	.isolation = true,
	.kernel_cgroupns = true,
	.kernel_landlock = true,
	.lacks = {OCI_LACKS},
};
// NOLINTEND(bugprone-suspicious-missing-comma)

static const struct oci_runtime_desc crun = {
	.runtime = OCI_CRUN,
	.path = OCI_CRUN_PATH,
	.name = "oci",
	.package = "crun",
	.argv = crun_argv,
	.ns = BE_NS_ALL,
	.pivot_root = true,
	.netns_maker = "crun", /* crun raises lo in the namespace it makes */
	.kernel = "host",
};

int be_oci_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io, struct be_proc *out,
		 struct al_error *err)
{
	return oci_spawn(&crun, p, pl, io, out, err);
}
