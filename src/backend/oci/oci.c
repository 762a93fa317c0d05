/* oci.c — the OCI-runtime backend: crun runs the bundle (ocispawn.c), the host kernel behind its namespaces and airlock's filter. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bundle.h"
#include "util/error.h"

/* A NULL-terminated copy of list (every string malloc'd). */
static int strv_dup(char ***out, const char *const *list)
{
	size_t n = 0;
	while (list[n])
		n++;
	char **v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		if (!(v[i] = strdup(list[i]))) {
			while (i > 0)
				free(v[--i]);
			free(v);
			v = NULL;
		}
	*out = v;
	return v ? 0 : -ENOMEM;
}

/* crun in the foreground: `run` waits for the container and exits with its status. Its errors go
 * to the log as JSON lines, so the monitor tells them from the payload's own exit codes.
 * --preserve-fds=1: fd 3, the pipe of airlock-init's record (ociinit.c), reaches the container.
 * --cgroup-manager=disabled: the job's cgroups are the supervisor's (see ocispawn.c). */
static int crun_argv(char ***argv, const struct al_policy *p, const char *state, const char *bundle, const char *log,
		     const char *id)
{
	(void)p;
	char logarg[4200];
	if (snprintf(logarg, sizeof(logarg), "--log=file:%s", log) >= (int)sizeof(logarg))
		return -ENAMETOOLONG;
	return strv_dup(argv, (const char *const[]){OCI_CRUN_PATH, "--root", state, logarg, "--log-format=json",
						    "--cgroup-manager=disabled", "run", "--preserve-fds=1", "--bundle",
						    bundle, id, NULL});
}

static int crun_enforced(json_t *e, const struct al_policy *p, bool root)
{
	(void)root;
	json_t *ns = json_pack("{s:b,s:b,s:b,s:b,s:b,s:b,s:b}", "user", 1, "pid", 1, "mount", 1, "net",
			       p->net != AL_NET_HOST, "ipc", 1, "uts", 1, "cgroup", 1);
	/* who made the network namespace: crun, or airlock for the egress proxy's socket */
	const char *netns = p->net == AL_NET_HOST ? "host" : pol_needs_proxy(p) ? "airlock" : "crun";
	const char *lo = p->net == AL_NET_HOST ? "host" : "up"; /* crun raises lo in the namespace it makes */
	return json_object_set_new(e, "namespaces", ns) ?: json_object_set_new(e, "pivot_root", json_true()) ?:
	       json_object_set_new(e, "readonly_root", json_true()) ?:
	       json_object_set_new(e, "network_namespace", json_string(netns)) ?:
	       json_object_set_new(e, "loopback", json_string(lo)) ?:
	       json_object_set_new(e, "kernel", json_string("host"));
}

static const struct oci_runtime_desc crun = {
	.runtime = OCI_CRUN,
	.path = OCI_CRUN_PATH,
	.name = "oci",
	.package = "crun",
	.argv = crun_argv,
	.enforced = crun_enforced,
};

int be_oci_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct al_error *err)
{
	return oci_spawn(&crun, p, io, out, err);
}
