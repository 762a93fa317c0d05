/* test_plan.c — unit tests for the policy's plan, the capability tables' refusal and the enforced writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend/capability.h"
#include "kit/landlock.h"
#include "policy/plan.h"
#include "policy/policy.h"

static struct al_policy *policy(void)
{
	struct al_policy *p = NULL;
	assert_int_equal(al_policy_new(&p), 0);
	const char *argv[] = {"/bin/true"};
	assert_int_equal(al_policy_set_argv(p, 1, argv, NULL), 0);
	return p;
}

static const struct be_host any_host = {.cgroupns = true, .landlock_abi = LL_ABI_MAX};

/* The posture's derived facts, once: a namespace of its own but under host, lo up in it, inet
 * sockets in a namespace always and without one only under host, the proxy with allow=. */
static void net_facts(void **state)
{
	(void)state;
	struct al_policy *p = policy();
	struct pol_plan pl;
	pol_plan_build(p, true, &pl);
	assert_string_equal(pl.net.name, "none");
	assert_true(pl.net.own_netns);
	assert_string_equal(pl.net.loopback, "up");
	assert_true(pl.net.inet_in_netns);
	assert_false(pl.net.inet_without_netns);
	assert_false(pl.net.proxy);
	assert_int_equal(al_policy_set_network(p, AL_NET_HOST, NULL), 0);
	pol_plan_build(p, true, &pl);
	assert_false(pl.net.own_netns);
	assert_string_equal(pl.net.loopback, "host");
	assert_true(pl.net.inet_without_netns);
	assert_true(pol_plan_needs(&pl, PN_NET_HOST));
	assert_int_equal(al_policy_allow_hosts(p, "pypi.org", NULL), 0);
	pol_plan_build(p, false, &pl);
	assert_string_equal(pl.net.name, "allow");
	assert_true(pl.net.proxy && pl.net.own_netns);
	assert_true(pol_plan_needs(&pl, PN_PROXY) && pol_plan_needs(&pl, PN_ROOTLESS));
	al_policy_free(p);
}

/* The capture: only under allow=; 443 and 80, then the list's own ports in order, once each,
 * never the resolver's 53 or the proxy's 3128, at most AL_CAPTURE_MAX_PORT; literals add none. */
static void capture_ports(void **state)
{
	(void)state;
	struct al_policy *p = policy();
	struct pol_plan pl;
	pol_plan_build(p, true, &pl);
	assert_false(pl.net.capture.on);
	assert_int_equal(pl.net.capture.nports, 0);
	assert_int_equal(
		al_policy_allow_hosts(p, "a.test,b.test:22,c.test:53,d.test:3128,e.test:22,9.9.9.9:8443", NULL), 0);
	pol_plan_build(p, true, &pl);
	assert_true(pl.net.capture.on);
	assert_int_equal(pl.net.capture.nports, 3);
	assert_int_equal(pl.net.capture.ports[0], 443);
	assert_int_equal(pl.net.capture.ports[1], 80);
	assert_int_equal(pl.net.capture.ports[2], 22);
	char spec[32];
	for (int i = 0; i < 40; i++) {
		snprintf(spec, sizeof(spec), "f.test:%d", 9000 + i);
		assert_int_equal(al_policy_allow_hosts(p, spec, NULL), 0);
	}
	pol_plan_build(p, true, &pl);
	assert_int_equal(pl.net.capture.nports, AL_CAPTURE_MAX_PORT);
	assert_int_equal(pl.net.capture.ports[AL_CAPTURE_MAX_PORT - 1], 9000 + AL_CAPTURE_MAX_PORT - 4);
	al_policy_free(p);
}

/* One name table: every name parses back to its posture; "allow" is never a name alone. */
static void net_names(void **state)
{
	(void)state;
	enum al_net_posture n;
	assert_int_equal(pol_net_parse("loopback", &n), 0);
	assert_int_equal(n, AL_NET_NONE);
	assert_int_equal(pol_net_parse("host", &n), 0);
	assert_int_equal(n, AL_NET_HOST);
	assert_int_equal(pol_net_parse("allow", &n), -EINVAL);
	const char *names[8];
	assert_int_equal(pol_net_choices(names, 8), 3);
	assert_string_equal(names[1], "loopback");
	assert_string_equal(pol_net_name(AL_NET_ALLOW), "allow");
}

/* The refusal names the backend and what it lacks; a conflict of the policy with itself comes
 * first, whatever the backend; the native table lacks nothing of these. */
static void refuse(void **state)
{
	(void)state;
	struct al_policy *p = policy();
	struct al_error err = {0};
	struct pol_plan pl;
	assert_int_equal(al_policy_require(p, "pivot_root", NULL), 0);
	pol_plan_build(p, true, &pl);
	assert_int_equal(be_refuse(&be_gvisor_caps, p, &pl, &any_host, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "the gvisor backend cannot enforce the required layer pivot_root: "));
	assert_int_equal(be_refuse(&be_native_caps, p, &pl, &any_host, NULL), 0);
	assert_int_equal(be_refuse(&be_oci_caps, p, &pl, &any_host, NULL), 0);
	assert_int_equal(al_policy_require(p, "netns", NULL), 0);
	assert_int_equal(al_policy_set_network(p, AL_NET_HOST, NULL), 0);
	pol_plan_build(p, true, &pl);
	assert_int_equal(be_refuse(&be_gvisor_caps, p, &pl, &any_host, &err), -EPERM);
	assert_string_equal(err.msg, "required layer netns conflicts with --net host");
	assert_int_equal(be_refuse(&be_native_caps, p, &pl, &any_host, &err), -EPERM);
	al_policy_free(p);
	/* the host's limits last: a floor above this kernel's Landlock ABI */
	p = policy();
	assert_int_equal(al_policy_require(p, "landlock>=3", NULL), 0);
	pol_plan_build(p, true, &pl);
	struct be_host old = {.cgroupns = true, .landlock_abi = 2};
	assert_int_equal(be_refuse(&be_native_caps, p, &pl, &old, &err), -EPERM);
	assert_non_null(strstr(err.msg, "landlock>=3"));
	/* bwrap's Landlock is the host kernel's (airlock-init's): the same refusal as native's */
	assert_int_equal(be_refuse(&be_bwrap_caps, p, &pl, &old, &err), -EPERM);
	assert_non_null(strstr(err.msg, "landlock>=3"));
	assert_int_equal(be_refuse(&be_bwrap_caps, p, &pl, &any_host, NULL), 0);
	/* a held sandbox is the native backend's alone */
	pol_plan_build(p, true, &pl);
	pl.needs |= 1u << PN_HOLD;
	assert_int_equal(be_refuse(&be_oci_caps, p, &pl, &any_host, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "held sandboxes"));
	al_policy_free(p);
	/* a pids limit on the payload's processes: an explicit one, or one the floor requires, is
	 * refused under gVisor (its processes are its kernel's), held everywhere else */
	const char *floors[] = {"cgroup-pids", "cgroup"};
	for (int i = 0; i < 3; i++) {
		p = policy();
		int r = i < 2 ? al_policy_require(p, floors[i], NULL) : al_policy_set_limit(p, AL_LIMIT_PIDS, 32, NULL);
		assert_int_equal(r, 0);
		pol_plan_build(p, true, &pl);
		assert_true(pol_plan_needs(&pl, PN_PIDS));
		assert_int_equal(be_refuse(&be_gvisor_caps, p, &pl, &any_host, &err), -ENOTSUP);
		assert_non_null(strstr(err.msg, "the gvisor backend cannot enforce a pids limit"));
		assert_int_equal(be_refuse(&be_bwrap_caps, p, &pl, &any_host, NULL), 0);
		assert_int_equal(be_refuse(&be_oci_caps, p, &pl, &any_host, NULL), 0);
		al_policy_free(p);
	}
	/* the default limit alone is no such promise */
	p = policy();
	pol_plan_build(p, true, &pl);
	assert_false(pol_plan_needs(&pl, PN_PIDS));
	assert_int_equal(be_refuse(&be_gvisor_caps, p, &pl, &any_host, NULL), 0);
	al_policy_free(p);
}

/* The writer: the plan's network facts, the record's layers, keys left out where not applied. */
static void enforced(void **state)
{
	(void)state;
	struct al_policy *p = policy();
	assert_int_equal(al_policy_allow_hosts(p, "pypi.org", NULL), 0);
	struct pol_plan pl;
	pol_plan_build(p, true, &pl);
	struct be_applied a = {.tool_key = "bwrap",
			       .tool = "/usr/bin/bwrap",
			       .ns = BE_NS_ALL,
			       .map_mode = "single",
			       .map_base = 7,
			       .map_count = 1,
			       .setgroups = "deny",
			       .netns_maker = "bwrap",
			       .loopback = true,
			       .seccomp = "default",
			       .cgroup_key = true};
	json_t *e = be_enforced(&pl, &a);
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(e, "bwrap")), "/usr/bin/bwrap");
	assert_string_equal(json_string_value(json_object_get(e, "network")), "allow");
	assert_string_equal(json_string_value(json_object_get(e, "network_namespace")), "airlock");
	assert_string_equal(json_string_value(json_object_get(e, "loopback")), "up");
	assert_string_equal(json_string_value(json_object_get(e, "setgroups")), "deny");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "id_map"), "host_base")), 7);
	assert_true(json_is_true(json_object_get(json_object_get(e, "namespaces"), "net")));
	assert_true(json_is_false(json_object_get(e, "landlock")));
	assert_true(json_is_false(json_object_get(e, "cgroup")));
	assert_null(json_object_get(e, "fallback"));
	assert_null(json_object_get(e, "workspace"));
	json_decref(e);
	/* under host: no namespace of the job's, whatever the backend made */
	assert_int_equal(al_policy_set_network(p, AL_NET_HOST, NULL), 0);
	pol_plan_build(p, true, &pl);
	e = be_enforced(&pl, &a);
	assert_true(json_is_false(json_object_get(json_object_get(e, "namespaces"), "net")));
	assert_string_equal(json_string_value(json_object_get(e, "network_namespace")), "host");
	assert_string_equal(json_string_value(json_object_get(e, "loopback")), "host");
	json_decref(e);
	al_policy_free(p);
}

/* One table of defaults: the policy starts with them. */
static void defaults(void **state)
{
	(void)state;
	struct al_policy *p = policy();
	for (int l = 0; l < AL_LIMIT__COUNT; l++)
		assert_int_equal(al_policy_get_limit(p, (enum al_limit)l), pol_default_limit((enum al_limit)l));
	assert_int_equal(pol_default_limit(AL_LIMIT_CPUS), 500);
	al_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(net_facts), cmocka_unit_test(net_names), cmocka_unit_test(refuse),
		cmocka_unit_test(enforced),  cmocka_unit_test(defaults),  cmocka_unit_test(capture_ports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
