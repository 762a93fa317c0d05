/* install.c — the pip / npm command of code_install_package (see install.h). */
#include "manager/install.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/error.h"

#define INST_WALL_MS 300000

/* A spec the manager takes from the workspace rather than a registry: a path. */
static bool local_spec(const char *spec)
{
	return spec[0] == '/' || spec[0] == '.';
}

/* Whether host is in the "a,b,c" list. */
static bool listed(const char *list, const char *host)
{
	size_t n = strlen(host);
	for (const char *q = list; *q;) {
		size_t k = strcspn(q, ",");
		if (k == n && strncmp(q, host, n) == 0)
			return true;
		q += k + (q[k] == ',');
	}
	return false;
}

/* Without a route, pip and npm retry for a minute or more (npm: 71 s, then EAI_AGAIN): say at once
 * what is missing instead. A sandbox made with its profile's registries ("") is trusted to have
 * them; an explicit allowlist must name the registry's hosts. */
int inst_check_route(const char *manager, const char *const *packages, size_t n, const struct inst_net *net,
		     struct al_error *err)
{
	bool remote = false;
	for (size_t i = 0; i < n; i++)
		remote |= !local_spec(packages[i]);
	if (!remote || net->posture == AL_NET_HOST)
		return 0;
	bool pip = strcmp(manager, "pip") == 0;
	if (net->posture != AL_NET_ALLOW)
		return al_err(err, EPERM,
			      "this sandbox has no network, so %s cannot reach its registry: create the sandbox with "
			      "network_enabled (its profile's registries) to install packages, or install from a file "
			      "in the workspace (a path starting with / or .)",
			      manager);
	if (!*net->hosts)
		return 0;
	const char *need[2] = {pip ? "pypi.org" : "registry.npmjs.org", pip ? "files.pythonhosted.org" : NULL};
	for (size_t i = 0; i < 2; i++)
		if (need[i] && !listed(net->hosts, need[i]))
			return al_err(err, EPERM, "this sandbox reaches only %s: %s needs %s%s", net->hosts, manager,
				      pip ? "pypi.org and files.pythonhosted.org" : "registry.npmjs.org",
				      " in its allowed_domains");
	return 0;
}

static int set_argv(struct al_policy *p, const char *manager, char *const *packages, size_t n, struct al_error *err)
{
	const char **argv = calloc(n + 8, sizeof(*argv));
	if (!argv)
		return al_err(err, ENOMEM, "out of memory");
	size_t k = 0;
	if (strcmp(manager, "pip") == 0) {
		/* --user: into /workspace/.local (HOME), which persists and is on a later python's path. */
		static const char *const pip[] = {"python3", "-m", "pip", "install", "--user", "--no-input"};
		for (size_t i = 0; i < AL_ARRAY_SIZE(pip); i++)
			argv[k++] = pip[i];
	} else {
		/* Into /workspace/node_modules, where code under /workspace resolves it. */
		static const char *const npm[] = {"npm", "install", "--no-fund", "--no-audit"};
		for (size_t i = 0; i < AL_ARRAY_SIZE(npm); i++)
			argv[k++] = npm[i];
	}
	argv[k++] = "--";
	for (size_t i = 0; i < n; i++)
		argv[k++] = packages[i];
	int r = al_policy_set_argv(p, (int)k, argv, err);
	free(argv);
	return r;
}

int inst_policy(const struct cfg *cfg, const char *manager, char *const *packages, size_t n, const struct inst_net *net,
		struct al_policy **out, struct al_error *err)
{
	int r = inst_check_route(manager, (const char *const *)packages, n, net, err);
	if (r < 0)
		return r;
	struct al_policy *p = NULL;
	if (al_policy_new(&p) < 0)
		return al_err(err, ENOMEM, "out of memory");
	r = set_argv(p, manager, packages, n, err);
	/* Debian 12 marks its Python externally managed (PEP 668): pip refuses even --user installs.
	 * The sandbox's /usr is read-only and the install lands in the workspace, so the override is
	 * safe there; it is set for this command inside the sandbox only, never on the host. */
	if (r == 0 && strcmp(manager, "pip") == 0) {
		r = al_policy_add_env(p, "PIP_BREAK_SYSTEM_PACKAGES=1", err);
		r = r ?: al_policy_add_env(p, "PIP_DISABLE_PIP_VERSION_CHECK=1", err);
	}
	r = r ?: cfg_apply_limits(&cfg->limits, p, true, err);
	r = r ?: al_policy_set_limit(p, AL_LIMIT_WALL_MS, INST_WALL_MS, err);
	if (r < 0) {
		al_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}
