/* backends.c — which layers each backend can enforce on this host, derived from the probe report. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/host.h"

static const char *const layer_names[HOST_LAYER__COUNT] = {
	[HOST_LAYER_USERNS] = "userns",
	[HOST_LAYER_PIDNS] = "pidns",
	[HOST_LAYER_MNTNS] = "mntns",
	[HOST_LAYER_NETNS] = "netns",
	[HOST_LAYER_IPCNS] = "ipcns",
	[HOST_LAYER_UTSNS] = "utsns",
	[HOST_LAYER_CGROUPNS] = "cgroupns",
	[HOST_LAYER_SECCOMP] = "seccomp",
	[HOST_LAYER_LANDLOCK] = "landlock",
	[HOST_LAYER_CGROUP_LIMITS] = "cgroup_limits",
	[HOST_LAYER_PIDS_LIMIT] = "pids_limit",
	[HOST_LAYER_NO_NEW_PRIVS] = "no_new_privs",
	[HOST_LAYER_CAPS] = "caps",
	[HOST_LAYER_DISK_CAP] = "disk_cap",
	[HOST_LAYER_EGRESS_PROXY] = "egress_proxy",
	[HOST_LAYER_CHECKOUT_COPY] = "checkout_copy",
	[HOST_LAYER_WORKDIR_OVERLAY] = "workdir_overlay",
};

const char *host_layer_name(enum host_layer l)
{
	return (unsigned)l < HOST_LAYER__COUNT ? layer_names[l] : "?";
}

/* The namespaces both backends make, as the probe found them. */
static void namespaces(const struct al_host_report *r, struct host_layers *out)
{
	static const struct {
		enum host_layer layer;
		enum host_ns ns;
	} map[] = {
		{HOST_LAYER_USERNS, HOST_NS_USER},     {HOST_LAYER_PIDNS, HOST_NS_PID},
		{HOST_LAYER_MNTNS, HOST_NS_MOUNT},     {HOST_LAYER_NETNS, HOST_NS_NET},
		{HOST_LAYER_IPCNS, HOST_NS_IPC},       {HOST_LAYER_UTSNS, HOST_NS_UTS},
		{HOST_LAYER_CGROUPNS, HOST_NS_CGROUP},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		out->has[map[i].layer] = out->available && r->ns[map[i].ns].ok;
}

/* The runtime the OCI backends run is a fixed path; the probe found it first in PATH. */
static bool runtime_at(const struct al_host_report *r, enum host_backend b, const char *path)
{
	return strcmp(r->backend[b], path) == 0;
}

/* Whether the backend runs here at all, and if not why. */
static void availability(const struct al_host_report *r, enum al_backend b, struct host_layers *out)
{
	const char *why = "user namespaces are unavailable";
	if (b == AL_BACKEND_OCI) {
		/* crun runs in a user namespace of airlock's (ordinary user) or as root, and makes
		 * a user namespace for the container: what the native backend needs. */
		out->available = runtime_at(r, HOST_BACKEND_CRUN, "/usr/bin/crun") && r->ns[HOST_NS_USER].ok;
		if (!runtime_at(r, HOST_BACKEND_CRUN, "/usr/bin/crun"))
			why = "/usr/bin/crun is missing";
	} else if (b == AL_BACKEND_GVISOR) {
		/* runsc 20221219 starts its gofer only as root here: rootless runsc (and runsc in a
		 * user namespace of airlock's) fails with "fork/exec /proc/self/exe: invalid argument". */
		out->available =
			runtime_at(r, HOST_BACKEND_RUNSC, "/usr/bin/runsc") && r->euid == 0 && r->ns[HOST_NS_USER].ok;
		if (!runtime_at(r, HOST_BACKEND_RUNSC, "/usr/bin/runsc"))
			why = "/usr/bin/runsc is missing";
		else if (r->euid != 0)
			why = "runsc needs root here (its gofer cannot start as an ordinary user or in a user "
			      "namespace)";
	} else if (b == AL_BACKEND_BWRAP) {
		/* bwrap runs unprivileged even for root (as id_base+1000), so it needs what an
		 * ordinary user needs. */
		out->available = r->bwrap_version[0] && r->userns.unprivileged.ok;
		why = !r->bwrap_version[0] ? "/usr/bin/bwrap is missing or does not run"
					   : "unprivileged user namespaces are unavailable (bwrap runs unprivileged)";
	} else {
		out->available = r->ns[HOST_NS_USER].ok; /* as whoever calls it */
	}
	snprintf(out->why, sizeof(out->why), "%s", why);
}

void host_backend_layers(const struct al_host_report *r, enum al_backend b, const bool lacks[HOST_LAYER__COUNT],
			 struct host_layers *out)
{
	memset(out, 0, sizeof(*out));
	if ((unsigned)b >= HOST_LAYERS_BACKENDS)
		return;
	availability(r, b, out);
	namespaces(r, out);
	bool on = out->available, cg = false;
	for (int c = HOST_CG_MEMORY; c <= HOST_CG_CPU; c++)
		cg = cg || r->cg.use[c] != HOST_CG_NONE;
	/* gVisor's kernel enforces the profile itself (runsc --oci-seccomp, linux.seccomp rules);
	 * the others load airlock's filter into the host kernel (crun: run.oci.seccomp_bpf_data). */
	out->has[HOST_LAYER_SECCOMP] = on && (b == AL_BACKEND_GVISOR || r->seccomp.filter);
	out->has[HOST_LAYER_CGROUP_LIMITS] = on && cg; /* the supervisor's job cgroup, whatever the backend */
	/* ... whose pids controller bounds the payload's processes where they are host processes
	 * (gVisor's are its Sentry's: its table lacks PN_PIDS) */
	out->has[HOST_LAYER_PIDS_LIMIT] = on && r->cg.use[HOST_CG_PIDS] != HOST_CG_NONE;
	out->has[HOST_LAYER_NO_NEW_PRIVS] = on;
	out->has[HOST_LAYER_CAPS] = on;
	out->has[HOST_LAYER_DISK_CAP] = on;
	/* the proxy's network namespace is made by airlock (bwrap, the runtimes) or by init */
	out->has[HOST_LAYER_EGRESS_PROXY] = on && r->ns[HOST_NS_NET].ok;
	out->has[HOST_LAYER_LANDLOCK] = on && r->landlock_abi > 0;
	out->has[HOST_LAYER_CHECKOUT_COPY] = on;
	out->has[HOST_LAYER_WORKDIR_OVERLAY] = on && r->overlay.userns_mount.ok;
	for (int k = 0; lacks && k < HOST_LAYER__COUNT; k++)
		out->has[k] = out->has[k] && !lacks[k];
}

/* "bubblewrap 0.8.0\n" → "0.8.0". bwrap --version changes nothing. */
void host_probe_bwrap(char *version, size_t size)
{
	version[0] = 0;
	static char *const argv[] = {"/usr/bin/bwrap", "--version", NULL}, *const envp[] = {NULL};
	char buf[64];
	static const char prefix[] = "bubblewrap ";
	if (host_run_capture(argv, envp, 5000, buf, sizeof(buf)) != 0 || strncmp(buf, prefix, sizeof(prefix) - 1) != 0)
		return;
	snprintf(version, size, "%.*s", (int)strcspn(buf + sizeof(prefix) - 1, "\n"), buf + sizeof(prefix) - 1);
}
