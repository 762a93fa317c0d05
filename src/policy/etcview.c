/* etcview.c — which of the host's /etc a sandbox may show beyond airlock's own files: the configuration languages read, never a secret. */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "util/cleanup.h"
#include "util/error.h"

/*
 * A sandbox's /etc is airlock's (passwd, group, hosts, resolver files) plus a few host entries
 * programs cannot start well without. Interpreters read more at start: PHP enables its extensions
 * through /etc/php/N/cli/conf.d, Debian's matplotlib reads /etc/matplotlibrc, fontconfig
 * /etc/fonts, Java /etc/java-N-openjdk (its conf/ links there). Without them a job runs a
 * different interpreter than the host's, silently. Each language entry of the configuration names
 * what it reads (config/defaults.c), and the policy carries those patterns (pol_add_etc).
 *
 * Why this is safe: a pattern must lie beneath /etc, and neither it nor anything it expands to
 * may be or contain one of the places below, which hold secrets (password hashes, host and TLS
 * keys, Kerberos keytabs, package registries' and other tools' credentials) or the host's network
 * configuration (which the posture decides, and airlock writes itself). Every entry is bound
 * read-only. The list is checked twice: against each pattern when it is added (a literal one that
 * is or holds a secret is refused) and against each path it expands to on the host (fsplan.c),
 * which a host could otherwise make match (a pattern such as /etc/s* and a file /etc/shadow).
 */
static const char *const etc_secret[] = {
	"/etc/shadow",	     "/etc/shadow-",	     "/etc/gshadow",	 "/etc/gshadow-",     "/etc/passwd-",
	"/etc/group-",	     "/etc/sudoers",	     "/etc/sudoers.d",	 "/etc/ssh",	      "/etc/ssl/private",
	"/etc/pki",	     "/etc/krb5.keytab",     "/etc/security",	 "/etc/subuid",	      "/etc/subgid",
	"/etc/machine-id",   "/etc/pip.conf",	     "/etc/npmrc",	 "/etc/apt/auth.conf", "/etc/apt/auth.conf.d",
	"/etc/docker",	     "/etc/containerd",	     "/etc/containers",	 "/etc/letsencrypt",  "/etc/libvirt",
	"/etc/mysql",	     "/etc/postgresql",	     "/etc/ppp",	 "/etc/wireguard",    "/etc/openvpn",
	"/etc/ipsec.secrets", "/etc/NetworkManager", "/etc/wpa_supplicant", "/etc/netplan",   "/etc/network",
	"/etc/resolv.conf",  "/etc/hosts",	     "/etc/passwd",	 "/etc/group",	      "/etc/airlock",
	"/etc/perl/CPAN",    "/etc/cups",	     "/etc/polkit-1",	 "/etc/pam.d",	      "/etc/ldap",
	"/etc/sssd",	     "/etc/credstore",	     "/etc/credstore.encrypted", "/etc/ldap.secret",
};

/* Is a beneath b (or b itself)? Both absolute, clean. */
static bool beneath(const char *a, const char *b)
{
	size_t n = strlen(b);
	return strncmp(a, b, n) == 0 && (a[n] == 0 || a[n] == '/');
}

int pol_etc_check(const char *path, struct al_error *err)
{
	struct al_error e = {0};
	if (!path || strncmp(path, "/etc/", 5) != 0 || !path[5] || pol_check_inside_path(path, &e) < 0 ||
	    path[strlen(path) - 1] == '/')
		return al_err(err, EINVAL, "'%s' is not a clean path beneath /etc", path ? path : "");
	for (size_t i = 0; i < AL_ARRAY_SIZE(etc_secret); i++) {
		const char *s = etc_secret[i];
		/* Beneath a secret, a secret beneath it, or a pattern that names a secret itself. */
		if (beneath(path, s) || beneath(s, path) || fnmatch(path, s, FNM_PATHNAME | FNM_PERIOD) == 0)
			return al_err(err, EPERM, "'%s' may hold secrets or the host's network configuration (%s): not shown",
				      path, s);
	}
	return 0;
}

int pol_add_etc(struct al_policy *p, const char *pattern, struct al_error *err)
{
	int r = pol_etc_check(pattern, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->netc; i++)
		if (strcmp(p->etc[i], pattern) == 0)
			return 0;
	if (p->netc >= AL_ETC_PATTERNS)
		return al_err(err, E2BIG, "more than %d configuration paths for /etc", AL_ETC_PATTERNS);
	char **v = realloc(p->etc, (p->netc + 1) * sizeof(*v));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	p->etc = v;
	if (!(v[p->netc] = strdup(pattern)))
		return al_err(err, ENOMEM, "out of memory");
	p->netc++;
	return 0;
}
