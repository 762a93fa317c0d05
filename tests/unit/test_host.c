/* test_host.c — unit tests of the host module: mountinfo, /proc/self/cgroup and /proc/filesystems parsing, choice, JSON. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "host/host.h"

/* This very machine: hybrid, memory/pids/cpu/cpuacct on v1, an empty cgroup2 at unified. */
static const char mi_hybrid[] = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
				"23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"
				"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"
				"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
				"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
				"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
				"34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
				"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
				"36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
				"37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
				"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
				"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
				"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char cg_hybrid[] = "9:name=systemd:/\n"
				"8:pids:/\n"
				"6:freezer:/\n"
				"4:memory:/process_api/8f0f31cab7ba87f8f91ef0696bc287f1\n"
				"3:cpuset:/\n"
				"2:cpuacct:/\n"
				"1:cpu:/\n"
				"0::/\n";

/* A systemd host with cgroup v2 only (optional fields present, as on real systems). */
static const char mi_v2[] = "21 26 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
			    "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
			    "28 21 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
			    "rw,nsdelegate,memory_recursiveprot\n";

static const char cg_v2[] = "0::/user.slice/user-1000.slice/session-2.scope\n";

/* An older host: v1 only, cpu and cpuacct co-mounted, no cgroup2 at all. */
static const char mi_v1[] =
	"25 18 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
	"26 25 0:23 / /sys/fs/cgroup/systemd rw,nosuid shared:10 - cgroup cgroup rw,xattr,name=systemd\n"
	"29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:13 - cgroup cgroup rw,cpu,cpuacct\n"
	"30 25 0:27 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory\n"
	"31 25 0:28 / /sys/fs/cgroup/pids rw,nosuid shared:15 - cgroup cgroup rw,pids\n";

static const char cg_v1[] = "12:pids:/docker/abc\n"
			    "4:memory:/docker/abc\n"
			    "3:cpu,cpuacct:/docker/abc\n"
			    "1:name=systemd:/docker/abc\n";

static FILE *memfile(const char *s)
{
	FILE *f = fmemopen((void *)(uintptr_t)s, strlen(s), "r");
	assert_non_null(f);
	return f;
}

static struct host_cgroups *parse(const char *mi, const char *cgf)
{
	struct host_cgroups *cg = calloc(1, sizeof(*cg));
	assert_non_null(cg);
	struct al_error err = {0};
	FILE *f = memfile(mi);
	assert_int_equal(host_cg_parse_mountinfo(f, cg, &err), 0);
	fclose(f);
	f = memfile(cgf);
	assert_int_equal(host_cg_parse_proc_cgroup(f, cg, &err), 0);
	fclose(f);
	assert_int_equal(host_cg_resolve(cg, &err), 0);
	return cg;
}

/* What host_cg_detect would find on disk, set by hand: every visible dir exists and is writable. */
static void pretend_writable(struct host_cgroups *cg, const char *controllers)
{
	cg->v2.found = cg->v2.writable = cg->v2.dir[0] != '\0';
	for (int c = 0; c < HOST_CG__COUNT; c++)
		cg->v1[c].found = cg->v1[c].writable = cg->v1[c].dir[0] != '\0';
	snprintf(cg->v2_controllers, sizeof(cg->v2_controllers), "%s", controllers);
	host_cg_choose(cg);
}

static void test_hybrid(void **state)
{
	struct host_cgroups *cg = parse(mi_hybrid, cg_hybrid);
	assert_int_equal(cg->layout, HOST_CG_LAYOUT_HYBRID);
	assert_string_equal(host_cg_layout_name(cg->layout), "hybrid");
	assert_true(cg->v2.mounted);
	assert_string_equal(cg->v2.mount, "/sys/fs/cgroup/unified");
	assert_string_equal(cg->v2.dir, "/sys/fs/cgroup/unified");
	assert_string_equal(cg->v1[HOST_CG_MEMORY].mount, "/sys/fs/cgroup/memory");
	assert_string_equal(cg->v1[HOST_CG_MEMORY].dir,
			    "/sys/fs/cgroup/memory/process_api/8f0f31cab7ba87f8f91ef0696bc287f1");
	assert_string_equal(cg->v1[HOST_CG_PIDS].dir, "/sys/fs/cgroup/pids");
	assert_string_equal(cg->v1[HOST_CG_CPU].dir, "/sys/fs/cgroup/cpu");
	assert_string_equal(cg->v1[HOST_CG_CPUACCT].dir, "/sys/fs/cgroup/cpuacct");
	pretend_writable(cg, "hugetlb");
	for (int c = 0; c < HOST_CG__COUNT; c++)
		assert_int_equal(cg->use[c], HOST_CG_V1);
	/* If memory moved to v2 (and cpu with it), v2 wins for those, and cpuacct follows cpu. */
	pretend_writable(cg, "cpu memory hugetlb");
	assert_int_equal(cg->use[HOST_CG_MEMORY], HOST_CG_V2);
	assert_int_equal(cg->use[HOST_CG_CPU], HOST_CG_V2);
	assert_int_equal(cg->use[HOST_CG_CPUACCT], HOST_CG_V2);
	assert_int_equal(cg->use[HOST_CG_PIDS], HOST_CG_V1);
	/* The job is in a v2 cgroup then: cgroup.freeze there, not a second, v1 freezer. */
	assert_int_equal(cg->use[HOST_CG_FREEZER], HOST_CG_V2);
	/* All v1 and no v1 freezer: the empty unified hierarchy freezes (a v2 cgroup for it alone). */
	cg->v1[HOST_CG_FREEZER].writable = false;
	pretend_writable(cg, "hugetlb");
	assert_int_equal(cg->use[HOST_CG_MEMORY], HOST_CG_V1);
	assert_int_equal(cg->use[HOST_CG_FREEZER], HOST_CG_V1); /* pretend_writable made it writable again */
	cg->v1[HOST_CG_FREEZER].found = cg->v1[HOST_CG_FREEZER].writable = false;
	host_cg_choose(cg);
	assert_int_equal(cg->use[HOST_CG_FREEZER], HOST_CG_V2);
	/* Neither: no freezer (a pause is refused, saying why). */
	cg->v2.writable = false;
	host_cg_choose(cg);
	assert_int_equal(cg->use[HOST_CG_FREEZER], HOST_CG_NONE);
	free(cg);
}

static void test_v2(void **state)
{
	struct host_cgroups *cg = parse(mi_v2, cg_v2);
	assert_int_equal(cg->layout, HOST_CG_LAYOUT_V2);
	assert_string_equal(cg->v2.mount, "/sys/fs/cgroup");
	assert_string_equal(cg->v2.dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		assert_false(cg->v1[c].mounted);
		assert_string_equal(cg->v1[c].dir, "");
	}
	pretend_writable(cg, "cpuset cpu io memory pids");
	for (int c = 0; c < HOST_CG__COUNT; c++)
		assert_int_equal(cg->use[c], HOST_CG_V2);
	/* Without pids delegated there is nothing to fall back on. */
	pretend_writable(cg, "cpu memory");
	assert_int_equal(cg->use[HOST_CG_PIDS], HOST_CG_NONE);
	assert_null(host_cg_version_name(cg->use[HOST_CG_PIDS]));
	/* Not delegated to us: nothing usable, even though the controllers exist. */
	cg->v2.writable = false;
	host_cg_choose(cg);
	for (int c = 0; c < HOST_CG__COUNT; c++)
		assert_int_equal(cg->use[c], HOST_CG_NONE);
	free(cg);
}

static void test_v1(void **state)
{
	struct host_cgroups *cg = parse(mi_v1, cg_v1);
	assert_int_equal(cg->layout, HOST_CG_LAYOUT_V1);
	assert_false(cg->v2.mounted);
	assert_string_equal(cg->v1[HOST_CG_CPU].mount, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(cg->v1[HOST_CG_CPUACCT].mount, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(cg->v1[HOST_CG_CPUACCT].dir, "/sys/fs/cgroup/cpu,cpuacct/docker/abc");
	assert_string_equal(cg->v1[HOST_CG_MEMORY].dir, "/sys/fs/cgroup/memory/docker/abc");
	assert_string_equal(cg->v1[HOST_CG_PIDS].dir, "/sys/fs/cgroup/pids/docker/abc");
	/* The hierarchy's controllers, which are the options a mount of it names (cgroup/view.c). */
	assert_string_equal(cg->v1[HOST_CG_CPU].ctrls, "cpu,cpuacct");
	assert_string_equal(cg->v1[HOST_CG_CPUACCT].ctrls, "cpu,cpuacct");
	assert_string_equal(cg->v1[HOST_CG_MEMORY].ctrls, "memory");
	pretend_writable(cg, "");
	for (int c = 0; c < HOST_CG__COUNT; c++)
		assert_int_equal(cg->use[c], c == HOST_CG_FREEZER ? HOST_CG_NONE : HOST_CG_V1); /* none mounted */
	assert_string_equal(host_cg_version_name(cg->use[HOST_CG_CPU]), "v1");
	/* Read-only memory hierarchy: memory unusable, the others unaffected. */
	cg->v1[HOST_CG_MEMORY].writable = false;
	host_cg_choose(cg);
	assert_int_equal(cg->use[HOST_CG_MEMORY], HOST_CG_NONE);
	assert_int_equal(cg->use[HOST_CG_PIDS], HOST_CG_V1);
	free(cg);
}

/* A container's view: the mount shows only /docker/abc of the hierarchy. */
static void test_mount_root(void **state)
{
	static const char mi[] = "30 25 0:27 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
				 "31 25 0:28 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
				 "32 25 0:29 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
				 "33 25 0:30 /.. /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
	static const char cgf[] = "4:memory:/docker/abc/job\n3:pids:/docker/abc\n2:cpu:/docker/abcdef\n0::/\n";
	struct host_cgroups *cg = parse(mi, cgf);
	assert_int_equal(cg->layout, HOST_CG_LAYOUT_HYBRID);
	assert_string_equal(cg->v1[HOST_CG_MEMORY].dir, "/sys/fs/cgroup/memory/job");
	assert_string_equal(cg->v1[HOST_CG_PIDS].dir, "/sys/fs/cgroup/pids");
	/* "/docker/abcdef" is not inside "/docker/abc": a plain string-prefix match would lie. */
	assert_string_equal(cg->v1[HOST_CG_CPU].dir, "");
	assert_string_equal(cg->v2.dir, "");
	assert_false(cg->v1[HOST_CG_CPUACCT].mounted);
	free(cg);
}

static void test_named_only_and_none(void **state)
{
	static const char mi[] = "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
				 "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
	struct host_cgroups *cg = parse(mi, "1:name=systemd:/\n0::/\n");
	assert_int_equal(cg->layout, HOST_CG_LAYOUT_V2);
	free(cg);
	cg = parse("27 1 254:0 / / rw - ext4 /dev/vda rw\n", "");
	assert_int_equal(cg->layout, HOST_CG_LAYOUT_NONE);
	assert_string_equal(host_cg_layout_name(cg->layout), "none");
	pretend_writable(cg, "");
	for (int c = 0; c < HOST_CG__COUNT; c++)
		assert_int_equal(cg->use[c], HOST_CG_NONE);
	free(cg);
}

/* Spaces in mount points arrive as \040; the first mount of a hierarchy wins. */
static void test_escapes_and_duplicates(void **state)
{
	static const char mi[] = "41 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n"
				 "42 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
	struct host_cgroups *cg = parse(mi, "0::/a:b\n");
	assert_string_equal(cg->v2.mount, "/mnt/my cgroups");
	/* The path is the rest of the line, colons included. */
	assert_string_equal(cg->v2.own, "/a:b");
	assert_string_equal(cg->v2.dir, "/mnt/my cgroups/a:b");
	free(cg);
}

static void test_malformed(void **state)
{
	struct host_cgroups *cg = calloc(1, sizeof(*cg));
	struct al_error err = {0};
	FILE *f = memfile("41 31 0:38 / /sys/fs/cgroup rw cgroup2 cgroup2 rw\n");
	assert_int_equal(host_cg_parse_mountinfo(f, cg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 1"));
	fclose(f);
	f = memfile("0::/\nnonsense\n");
	assert_int_equal(host_cg_parse_proc_cgroup(f, cg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 2"));
	fclose(f);
	f = memfile("4:memory:relative\n");
	assert_int_equal(host_cg_parse_proc_cgroup(f, cg, NULL), -EINVAL);
	fclose(f);
	free(cg);
}

static void test_list_has(void **state)
{
	assert_true(host_cg_list_has("cpuset cpu io", "cpu"));
	assert_false(host_cg_list_has("cpuset io", "cpu"));
	assert_false(host_cg_list_has("cpuacct", "cpu"));
	assert_true(host_cg_list_has("memory", "memory"));
	assert_false(host_cg_list_has("", "memory"));
}

/* A user scope can only bring what cgroup2 offers at its root: nothing on a hybrid host, whose
 * controllers are v1's, nor without a cgroup2 mount. */
static void test_scope_gain(void **state)
{
	(void)state;
	unsigned lim = 1u << HOST_CG_MEMORY | 1u << HOST_CG_PIDS | 1u << HOST_CG_CPU;
	struct host_cgroups *v2 = parse(mi_v2, cg_v2);
	assert_int_equal(host_cg_scope_gain(v2, "cpuset cpu io memory hugetlb pids rdma misc", lim), lim);
	assert_int_equal(host_cg_scope_gain(v2, "memory pids", lim), 1u << HOST_CG_MEMORY | 1u << HOST_CG_PIDS);
	assert_int_equal(host_cg_scope_gain(v2, "cpu", 1u << HOST_CG_MEMORY), 0);
	assert_int_equal(host_cg_scope_gain(v2, "", lim), 0);
	struct host_cgroups *hy = parse(mi_hybrid, cg_hybrid);
	assert_int_equal(host_cg_scope_gain(hy, "", lim), 0);
	struct host_cgroups *v1 = parse(mi_v1, cg_v1);
	assert_int_equal(host_cg_scope_gain(v1, "memory pids cpu", lim), 0);
	free(v2);
	free(hy);
	free(v1);
}

static void test_fs_listed(void **state)
{
	static const char fs[] = "nodev\tsysfs\nnodev\ttmpfs\n\text4\nnodev\toverlay\nnodev\tcgroup2\n";
	bool found;
	FILE *f = memfile(fs);
	assert_int_equal(host_fs_listed(f, "overlay", &found), 0);
	assert_true(found);
	fclose(f);
	f = memfile(fs);
	assert_int_equal(host_fs_listed(f, "ext4", &found), 0);
	assert_true(found);
	fclose(f);
	f = memfile(fs);
	assert_int_equal(host_fs_listed(f, "overlayfs", &found), 0);
	assert_false(found);
	fclose(f);
}

/* The JSON of a hand-made report: every top-level key, nulls where things are absent. */
static void test_json(void **state)
{
	struct al_host_report *r = calloc(1, sizeof(*r));
	snprintf(r->kernel, sizeof(r->kernel), "6.1.0");
	r->euid = 1000;
	r->userns.unprivileged = (struct host_probe_res){.ran = true, .err = EPERM, .step = "unshare"};
	r->userns.max_user_namespaces = -1;
	r->userns.unprivileged_userns_clone = 0;
	r->userns.apparmor_restrict_userns = -1;
	r->ns[HOST_NS_NET] = (struct host_probe_res){.ran = true, .ok = true};
	r->landlock_abi = 3;
	r->seccomp.filter = true;
	r->seccomp.actions = 1u << HOST_SECCOMP_ERRNO;
	struct host_cgroups *cg = parse(mi_v2, cg_v2);
	pretend_writable(cg, "memory pids");
	r->cg = *cg;
	free(cg);
	snprintf(r->backend[HOST_BACKEND_BWRAP], sizeof(r->backend[0]), "/usr/bin/bwrap");

	char *out = NULL;
	assert_int_equal(host_report_to_json(r, NULL, &out), 0);
	json_error_t jerr;
	json_t *root = json_loads(out, 0, &jerr);
	assert_non_null(root);
	static const char *const keys[] = {"version",	 "kernel",   "euid",	"user_namespaces",
					   "namespaces", "landlock", "seccomp", "cgroup",
					   "overlayfs",	 "kvm",	     "backends"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(json_object_get(root, keys[i]));
	json_t *u = json_object_get(root, "user_namespaces");
	assert_true(json_is_null(json_object_get(u, "as_root")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(u, "unprivileged"), "error")),
			    "unshare: Operation not permitted");
	assert_int_equal(json_integer_value(json_object_get(u, "unprivileged_userns_clone")), 0);
	assert_true(json_is_null(json_object_get(u, "max_user_namespaces")));
	json_t *net = json_object_get(json_object_get(root, "namespaces"), "net");
	assert_true(json_is_true(json_object_get(net, "ok")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "landlock"), "abi")), 3);
	json_t *c = json_object_get(root, "cgroup");
	assert_string_equal(json_string_value(json_object_get(c, "layout")), "v2");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "use"), "memory")), "v2");
	assert_true(json_is_null(json_object_get(json_object_get(c, "use"), "cpu")));
	assert_true(json_is_null(json_object_get(json_object_get(c, "v1"), "memory")));
	assert_int_equal(json_array_size(json_object_get(json_object_get(c, "v2"), "controllers")), 2);
	json_t *b = json_object_get(root, "backends");
	assert_string_equal(json_string_value(json_object_get(b, "bwrap")), "/usr/bin/bwrap");
	assert_true(json_is_null(json_object_get(b, "runsc")));
	json_decref(root);
	free(out);
	free(r);
}

/* The live detector reads only; whatever the host, it must agree with itself. */
static void test_detect_live(void **state)
{
	struct host_cgroups *cg = calloc(1, sizeof(*cg));
	struct al_error err = {0};
	assert_int_equal(host_cg_detect(cg, &err), 0);
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		if (cg->use[c] == HOST_CG_V1)
			assert_true(cg->v1[c].found && cg->v1[c].writable);
		if (cg->use[c] == HOST_CG_V2)
			assert_true(cg->v2.found && cg->v2.writable);
	}
	free(cg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hybrid),
		cmocka_unit_test(test_v2),
		cmocka_unit_test(test_v1),
		cmocka_unit_test(test_mount_root),
		cmocka_unit_test(test_named_only_and_none),
		cmocka_unit_test(test_escapes_and_duplicates),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_list_has),
		cmocka_unit_test(test_scope_gain),
		cmocka_unit_test(test_fs_listed),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_detect_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
