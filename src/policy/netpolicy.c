/* netpolicy.c — the network part of the policy: posture, the proxy's allowlist, allow_private,
 * its resolver overrides and limits, credential brokers. Validation only; the proxy serves it. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "network/allowlist.h"
#include "network/broker.h"
#include "network/secrets.h"
#include "network/tlsca.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"

int al_policy_set_network(struct al_policy *p, enum al_net_posture posture, struct al_error *err)
{
	switch (posture) {
	case AL_NET_NONE:
	case AL_NET_HOST:
	case AL_NET_ALLOW:
		p->net = posture;
		return 0;
	}
	return al_err(err, EINVAL, "--net: unknown posture %d", (int)posture);
}

/* Every name of a posture, the one table: the first of a posture is its name (the verdict's, the
 * console's); "loopback" names what "none" is since issue 14 (lo up, nothing else), a synonym.
 * "allow" is never chosen by its name alone: it takes hosts (--net allow=HOST,..., or a profile's
 * list of registries). */
static const struct {
	const char *name;
	enum al_net_posture posture;
	bool by_name;
} net_names[] = {
	{"none", AL_NET_NONE, true},
	{"loopback", AL_NET_NONE, true},
	{"host", AL_NET_HOST, true},
	{"allow", AL_NET_ALLOW, false},
};

const char *const pol_seccomp_names[POL_SECCOMP_PROFILES] = {
	[AL_SECCOMP_DEFAULT] = "default", [AL_SECCOMP_STRICT] = "strict", [AL_SECCOMP_OFF] = "off"};

const char *pol_seccomp_name(enum al_seccomp_profile p)
{
	return (unsigned)p < POL_SECCOMP_PROFILES ? pol_seccomp_names[p] : "?";
}

const char *pol_net_name(enum al_net_posture n)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(net_names); i++)
		if (net_names[i].posture == n)
			return net_names[i].name;
	return "?";
}

int pol_net_parse(const char *name, enum al_net_posture *out)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(net_names); i++)
		if (net_names[i].by_name && strcmp(name, net_names[i].name) == 0) {
			*out = net_names[i].posture;
			return 0;
		}
	return -EINVAL;
}

size_t pol_net_choices(const char **names, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < AL_ARRAY_SIZE(net_names) && n < max; i++)
		if (net_names[i].by_name)
			names[n++] = net_names[i].name;
	return n;
}

/* The sandbox's CA, made when the policy first needs TLS terminated. Each policy gets its own
 * (one per job, or per held sandbox): a CA trusted by one sandbox vouches for nothing in another. */
static int ensure_ca(struct al_policy *p, struct al_error *err)
{
	if (p->tls_ca)
		return 0;
	int r = tca_new(p->upstream_ca, &p->tls_ca);
	if (r == -EINVAL)
		return al_err(err, EINVAL, "--upstream-ca %s: no PEM certificate in it", p->upstream_ca);
	if (r < 0 && r != -ENOMEM && r != -EIO && p->upstream_ca)
		return al_err_sys(err, -r, "--upstream-ca %s", p->upstream_ca);
	return r < 0 ? al_err_sys(err, -r, "the sandbox's certificate authority") : 0;
}

const char *pol_tls_ca_pem(const struct al_policy *p)
{
	return tca_pem(p->tls_ca);
}

int al_policy_add_secret(struct al_policy *p, const char *spec, struct al_error *err)
{
	if (!p->secrets && al_secrets_new(&p->secrets) < 0)
		return al_err(err, ENOMEM, "out of memory");
	int r = al_secrets_add(p->secrets, spec, err);
	return r < 0 ? r : ensure_ca(p, err);
}

int al_policy_add_secret_src(struct al_policy *p, const struct al_secret_src *src, struct al_error *err)
{
	if (!p->secrets && al_secrets_new(&p->secrets) < 0)
		return al_err(err, ENOMEM, "out of memory");
	int r = al_secrets_add_src(p->secrets, src, err);
	return r < 0 ? r : ensure_ca(p, err);
}

void pol_share_tls(struct al_policy *p, struct tls_ca *ca, struct al_secrets *secrets)
{
	if (ca && !p->tls_ca)
		p->tls_ca = tca_ref(ca);
	if (secrets && !p->secrets)
		p->secrets = al_secrets_ref(secrets);
}

struct al_secrets *pol_secrets(const struct al_policy *p)
{
	return p->secrets;
}

struct tls_ca *pol_tls_ca(const struct al_policy *p)
{
	return p->tls_ca;
}

int al_policy_set_upstream_ca(struct al_policy *p, const char *file, struct al_error *err)
{
	if (!file || file[0] != '/')
		return al_err(err, EINVAL, "--upstream-ca: '%s' is not an absolute path", file ? file : "");
	if (access(file, R_OK) < 0)
		return al_err_sys(err, errno, "--upstream-ca: %s", file);
	char *s = strdup(file);
	if (!s)
		return al_err(err, ENOMEM, "out of memory");
	free(p->upstream_ca);
	p->upstream_ca = s;
	if (!p->tls_ca)
		return 0;
	/* Made before this option was read: made again (no job holds it yet). */
	tca_unref(p->tls_ca);
	p->tls_ca = NULL;
	return ensure_ca(p, err);
}

int al_policy_allow_hosts(struct al_policy *p, const char *spec, struct al_error *err)
{
	if (!p->allow) {
		int r = al_allowlist_new(&p->allow);
		if (r < 0)
			return al_err(err, -r, "out of memory");
	}
	int r = al_allowlist_add(p->allow, spec, err);
	if (r < 0) {
		al_err_prefix(err, "--net");
		return r;
	}
	p->net = AL_NET_ALLOW;
	return al_allowlist_has_rules(p->allow) ? ensure_ca(p, err) : 0;
}

int al_policy_allow_private(struct al_policy *p, const char *spec, struct al_error *err)
{
	if (!p->allow_private) {
		int r = al_cidr_list_new(&p->allow_private);
		if (r < 0)
			return al_err(err, -r, "out of memory");
	}
	return al_cidr_list_add(p->allow_private, spec, err);
}

int al_policy_set_proxy_hosts(struct al_policy *p, const char *file, struct al_error *err)
{
	if (!file || file[0] != '/')
		return al_err(err, EINVAL, "--proxy-hosts: '%s' is not an absolute path", file ? file : "");
	if (access(file, R_OK) < 0)
		return al_err_sys(err, errno, "--proxy-hosts: %s", file);
	char *s = strdup(file);
	if (!s)
		return al_err(err, ENOMEM, "out of memory");
	free(p->proxy_hosts);
	p->proxy_hosts = s;
	return 0;
}

int al_policy_set_proxy_http(struct al_policy *p, bool on, struct al_error *err)
{
	(void)err;
	p->proxy_http = on;
	return 0;
}

int al_policy_set_proxy_limits(struct al_policy *p, uint32_t max_conns, uint64_t idle_ms, struct al_error *err)
{
	if (max_conns == 0 || max_conns > 4096)
		return al_err(err, EINVAL, "--proxy-conns: %u is not between 1 and 4096", max_conns);
	if (idle_ms == 0 || idle_ms == AL_UNLIMITED)
		return al_err(err, EINVAL, "--proxy-idle: the idle timeout must be a positive duration");
	p->proxy_max_conns = max_conns;
	p->proxy_idle_ms = idle_ms;
	return 0;
}

struct pol_brokers {
	atomic_uint refs;
	struct al_broker_list *bl;
};

struct al_broker_list *pol_brokers(const struct al_policy *p)
{
	return p->brokers ? p->brokers->bl : NULL;
}

void *pol_brokers_ref(const struct al_policy *p)
{
	if (p->brokers)
		atomic_fetch_add(&p->brokers->refs, 1);
	return p->brokers;
}

void pol_brokers_release(void *ref)
{
	struct pol_brokers *b = ref;
	if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
		al_broker_list_free(b->bl);
		free(b);
	}
}

int al_policy_add_broker(struct al_policy *p, const char *spec, struct al_error *err)
{
	if (!p->brokers) {
		struct pol_brokers *b = calloc(1, sizeof(*b));
		if (!b || al_broker_list_new(&b->bl) < 0) {
			free(b);
			return al_err(err, ENOMEM, "out of memory");
		}
		atomic_init(&b->refs, 1);
		p->brokers = b;
	}
	int r = al_broker_list_add(p->brokers->bl, spec, err);
	if (r < 0 && err && strncmp(err->msg, "--broker", 8) != 0)
		al_err_prefix(err, "--broker");
	return r;
}

bool pol_needs_proxy(const struct al_policy *p)
{
	return p->net == AL_NET_ALLOW || (p->net == AL_NET_NONE && al_broker_count(pol_brokers(p)) > 0);
}

void pol_free_net(struct al_policy *p)
{
	al_allowlist_free(p->allow);
	al_cidr_list_free(p->allow_private);
	pol_brokers_release(p->brokers);
	free(p->proxy_hosts);
	tca_unref(p->tls_ca);
	al_secrets_unref(p->secrets);
	free(p->upstream_ca);
}

/* HTTPS_PROXY and friends in both cases (curl reads lower case, many tools upper case), and
 * NO_PROXY so that the sandbox's own loopback servers are reached directly. */
static const char *const proxy_vars[] = {"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY",
					 "https_proxy", "http_proxy", "all_proxy"};

/*
 * What installers need where the posture lets them reach a registry (the write profile's). pip:
 * Debian 12 marks its Python externally managed (PEP 668) and refuses even user installs; inside,
 * /usr is read-only, so pip falls back to the user site in HOME (the workspace), where a later
 * python3 imports from, or installs into a virtual environment the job made: the override is safe
 * here and set inside the sandbox only, never on the host. Both managers retry once and briefly:
 * without a route pip retried 5 times over ~10 s and npm for 72 s, while the proxy's answer (its
 * status line names the cause) says at once why; a job's own --env or flags still win.
 */
static const char *const installer_vars[] = {
	"PIP_BREAK_SYSTEM_PACKAGES=1",
	"PIP_DISABLE_PIP_VERSION_CHECK=1",
	"PIP_RETRIES=1",
	"PIP_TIMEOUT=20",
	"npm_config_fetch_retries=1",
	"npm_config_fetch_retry_mintimeout=1000",
	"npm_config_fetch_retry_maxtimeout=2000",
	"npm_config_update_notifier=false",
	"npm_config_fund=false",
	"npm_config_audit=false",
};

/* Where the usual clients look for a CA bundle: OpenSSL (and so curl, Python's ssl, Ruby, PHP),
 * requests, curl's own, pip, git, and Node (which adds NODE_EXTRA_CA_CERTS to its own store). */
/* npm's own agent trusts its cafile, not NODE_EXTRA_CA_CERTS (an install through terminated TLS
 * failed with SELF_SIGNED_CERT_IN_CHAIN): it gets the bundle as its configuration. */
static const char *const ca_vars[] = {"SSL_CERT_FILE",	"REQUESTS_CA_BUNDLE",  "CURL_CA_BUNDLE",   "PIP_CERT",
				      "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS", "npm_config_cafile"};

/* v[*k] = the formatted string, *k advanced only on success. */
__attribute__((format(printf, 3, 4))) static int put(char **v, size_t *k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&v[*k], fmt, ap);
	va_end(ap);
	if (r < 0) {
		v[*k] = NULL;
		return -ENOMEM;
	}
	(*k)++;
	return 0;
}

const char *pol_ca_path(const struct al_policy *p, bool bundle, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", p->image && p->rootfs ? AL_CA_DIR_IMAGE : AL_CA_DIR,
		 bundle ? AL_CA_BUNDLE_FILE : AL_CA_CERT_FILE);
	return buf;
}

char **pol_net_env(const struct al_policy *p, size_t *n)
{
	const struct al_broker_list *bl = pol_brokers(p);
	size_t nb = al_broker_count(bl), k = 0;
	size_t ns = al_secrets_count(p->secrets);
	char **v = calloc(AL_ARRAY_SIZE(proxy_vars) + 2 + AL_ARRAY_SIZE(installer_vars) + nb + ns +
				  AL_ARRAY_SIZE(ca_vars) + 1,
			  sizeof(*v));
	*n = 0;
	if (!v || !pol_needs_proxy(p))
		return v;
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", AL_PROXY_PORT);
	for (size_t i = 0; p->net == AL_NET_ALLOW && i < AL_ARRAY_SIZE(proxy_vars); i++)
		if (put(v, &k, "%s=%s", proxy_vars[i], url) < 0)
			goto oom;
	if (p->net == AL_NET_ALLOW &&
	    (put(v, &k, "NO_PROXY=localhost,127.0.0.1") < 0 || put(v, &k, "no_proxy=localhost,127.0.0.1") < 0))
		goto oom;
	for (size_t i = 0; p->net == AL_NET_ALLOW && i < AL_ARRAY_SIZE(installer_vars); i++)
		if (put(v, &k, "%s", installer_vars[i]) < 0)
			goto oom;
	for (size_t i = 0; i < nb; i++) {
		char name[AL_BROKER_NAME_MAX];
		const char *bn = al_broker_name(bl, i);
		size_t j = 0;
		for (; bn && bn[j] && j + 1 < sizeof(name); j++)
			name[j] = (char)(bn[j] == '-' ? '_' : toupper((unsigned char)bn[j]));
		name[j] = 0;
		if (put(v, &k, "AIRLOCK_BROKER_%s_URL=%s/%s", name, url, bn ? bn : "") < 0)
			goto oom;
	}
	/* The job's trust store: the system's plus the sandbox's CA (fsplan.c writes both files). */
	for (size_t i = 0; p->net == AL_NET_ALLOW && p->tls_ca && i < AL_ARRAY_SIZE(ca_vars); i++) {
		char path[64];
		if (put(v, &k, "%s=%s", ca_vars[i],
			pol_ca_path(p, strcmp(ca_vars[i], "NODE_EXTRA_CA_CERTS") != 0, path, sizeof(path))) < 0)
			goto oom;
	}
	/* Placeholders only: the values stay in the supervisor (secrets.c). */
	for (size_t i = 0; p->net == AL_NET_ALLOW && i < ns; i++)
		if (put(v, &k, "%s=%s", al_secret_name(p->secrets, i), al_secret_placeholder(p->secrets, i)) < 0)
			goto oom;
	*n = k;
	return v;
oom:
	for (size_t i = 0; i < k; i++)
		free(v[i]);
	free(v);
	return NULL;
}
