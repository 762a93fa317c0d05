/* netpolicy.c — the network part of the policy: posture, the proxy's allowlist, allow_private,
 * its resolver overrides and limits, credential brokers. Validation only; the proxy serves it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "network/allowlist.h"
#include "network/broker.h"
#include "policy/policy.h"
#include "util/error.h"

int al_policy_set_network(struct al_policy *p, enum al_net_posture posture, struct al_error *err)
{
	switch (posture) {
	case AL_NET_NONE:
	case AL_NET_LOOPBACK:
	case AL_NET_HOST:
	case AL_NET_ALLOW:
		p->net = posture;
		return 0;
	}
	return al_err(err, EINVAL, "--net: unknown posture %d", (int)posture);
}

const char *pol_net_name(enum al_net_posture n)
{
	switch (n) {
	case AL_NET_NONE:
		return "none";
	case AL_NET_LOOPBACK:
		return "loopback";
	case AL_NET_HOST:
		return "host";
	case AL_NET_ALLOW:
		return "allow";
	}
	return "?";
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
	return 0;
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

int al_policy_add_broker(struct al_policy *p, const char *spec, struct al_error *err)
{
	if (!p->brokers) {
		int r = al_broker_list_new(&p->brokers);
		if (r < 0)
			return al_err(err, -r, "out of memory");
	}
	int r = al_broker_list_add(p->brokers, spec, err);
	if (r < 0 && err && strncmp(err->msg, "--broker", 8) != 0)
		al_err_prefix(err, "--broker");
	return r;
}

bool pol_needs_proxy(const struct al_policy *p)
{
	return p->net == AL_NET_ALLOW ||
	       (p->net == AL_NET_LOOPBACK && p->brokers && al_broker_count(p->brokers) > 0);
}

void pol_free_net(struct al_policy *p)
{
	al_allowlist_free(p->allow);
	al_cidr_list_free(p->allow_private);
	al_broker_list_free(p->brokers);
	free(p->proxy_hosts);
}
