/* gvisor.c — the gVisor backend: runsc runs the bundle (backend/oci/ocispawn.c) under gVisor's user-space kernel. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/oci/bundle.h"
#include "util/error.h"

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
	return strv_dup(argv,
			(const char *const[]){OCI_RUNSC_PATH, "--root", state, logarg, "--log-format=json",
					      p->net == AL_NET_HOST ? "--network=host" : "--network=none",
					      "--ignore-cgroups", "--platform=ptrace",
					      p->seccomp != AL_SECCOMP_OFF ? "--oci-seccomp" : "--oci-seccomp=false",
					      "run", "--bundle", bundle, id, NULL});
}

static int runsc_enforced(json_t *e, const struct al_policy *p, bool root)
{
	(void)root;
	/* The namespaces are gVisor's own (its kernel's), the host ones hold the sentry and gofer. */
	json_t *ns = json_pack("{s:b,s:b,s:b,s:b,s:b,s:b,s:b}", "user", 1, "pid", 1, "mount", 1, "net",
			       p->net != AL_NET_HOST, "ipc", 1, "uts", 1, "cgroup", 0);
	return json_object_set_new(e, "namespaces", ns) ?: json_object_set_new(e, "pivot_root", json_false()) ?:
	       json_object_set_new(e, "readonly_root", json_true()) ?:
	       json_object_set_new(e, "network_namespace", json_string(p->net == AL_NET_HOST ? "host" : "gvisor")) ?:
	       json_object_set_new(e, "loopback", json_string(p->net == AL_NET_HOST ? "host" : "up")) ?:
	       json_object_set_new(e, "kernel", json_string("gvisor")) ?:
	       json_object_set_new(e, "platform", json_string("ptrace"));
}

static const struct oci_runtime_desc runsc = {
	.runtime = OCI_RUNSC,
	.path = OCI_RUNSC_PATH,
	.name = "gvisor",
	.package = "runsc",
	.argv = runsc_argv,
	.enforced = runsc_enforced,
};

int be_gvisor_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct al_error *err)
{
	return oci_spawn(&runsc, p, io, out, err);
}
