/* test_ocirt.c — unit tests for airlock-runc's pure parts: config.json parsing, the plan a profile allows, the
 * verdict's end from a wait status; and the kernel's keeping of a reaped child's exit status (kit/pidfd.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/pidfd.h"
#include "ocirt/ctr.h"
#include "ocirt/hooks.h"
#include "ocirt/keeper.h"
#include "ocirt/rtstate.h"
#include "ocirt/spec.h"
#include "util/cleanup.h"

/* containerd's default spec for `ctr run bb sh` (ctr 1.6), as the shim hands it to the runtime. */
static const char ctr_spec[] =
	"{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"user\":{\"uid\":0,\"gid\":0,\"additionalGids\":[0]},\"args\":["
	"\"sh\"],\"env\":[\"PATH=/usr/bin:/bin\",\"IMAGE_GREETING=hello\"],\"cwd\":\"/"
	"\",\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_DAC_OVERRIDE\",\"CAP_FSETID\",\"CAP_FOWNER\",\"CAP_"
	"MKNOD\",\"CAP_NET_RAW\",\"CAP_SETGID\",\"CAP_SETUID\",\"CAP_SETFCAP\",\"CAP_SETPCAP\",\"CAP_NET_BIND_"
	"SERVICE\",\"CAP_SYS_CHROOT\",\"CAP_KILL\",\"CAP_AUDIT_WRITE\"],\"effective\":[\"CAP_CHOWN\",\"CAP_DAC_"
	"OVERRIDE\",\"CAP_FSETID\",\"CAP_FOWNER\",\"CAP_MKNOD\",\"CAP_NET_RAW\",\"CAP_SETGID\",\"CAP_SETUID\",\"CAP_"
	"SETFCAP\",\"CAP_SETPCAP\",\"CAP_NET_BIND_SERVICE\",\"CAP_SYS_CHROOT\",\"CAP_KILL\",\"CAP_AUDIT_WRITE\"],"
	"\"permitted\":[\"CAP_CHOWN\",\"CAP_DAC_OVERRIDE\",\"CAP_FSETID\",\"CAP_FOWNER\",\"CAP_MKNOD\",\"CAP_NET_RAW\","
	"\"CAP_SETGID\",\"CAP_SETUID\",\"CAP_SETFCAP\",\"CAP_SETPCAP\",\"CAP_NET_BIND_SERVICE\",\"CAP_SYS_CHROOT\","
	"\"CAP_KILL\",\"CAP_AUDIT_WRITE\"]},\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1024,\"soft\":1024}],"
	"\"noNewPrivileges\":true},\"root\":{\"path\":\"rootfs\"},\"mounts\":[{\"destination\":\"/"
	"proc\",\"type\":\"proc\",\"source\":\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},{\"destination\":"
	"\"/"
	"dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size="
	"65536k\"]},{\"destination\":\"/dev/"
	"pts\",\"type\":\"devpts\",\"source\":\"devpts\",\"options\":[\"nosuid\",\"noexec\",\"newinstance\",\"ptmxmode="
	"0666\",\"mode=0620\",\"gid=5\"]},{\"destination\":\"/dev/"
	"shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"mode=1777\",\"size="
	"65536k\"]},{\"destination\":\"/dev/"
	"mqueue\",\"type\":\"mqueue\",\"source\":\"mqueue\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},{"
	"\"destination\":\"/"
	"sys\",\"type\":\"sysfs\",\"source\":\"sysfs\",\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"ro\"]},{"
	"\"destination\":\"/"
	"run\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size="
	"65536k\"]}],\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":true,"
	"\"type\":\"c\",\"major\":1,\"minor\":3,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":1,"
	"\"minor\":8,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":7,\"access\":\"rwm\"},{"
	"\"allow\":true,\"type\":\"c\",\"major\":5,\"minor\":0,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\","
	"\"major\":1,\"minor\":5,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":9,\"access\":"
	"\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":5,\"minor\":1,\"access\":\"rwm\"},{\"allow\":true,\"type\":"
	"\"c\",\"major\":136,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":5,\"minor\":2,\"access\":"
	"\"rwm\"}]},\"cgroupsPath\":\"/default/"
	"t3\",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"},{\"type\":"
	"\"network\"}],\"maskedPaths\":[\"/proc/acpi\",\"/proc/asound\",\"/proc/kcore\",\"/proc/keys\",\"/proc/"
	"latency_stats\",\"/proc/timer_list\",\"/proc/timer_stats\",\"/proc/sched_debug\",\"/sys/firmware\",\"/proc/"
	"scsi\"],\"readonlyPaths\":[\"/proc/bus\",\"/proc/fs\",\"/proc/irq\",\"/proc/sys\",\"/proc/sysrq-trigger\"]}}";

/* ctr's spec with edit applied (Python-free: a jansson object edited by the caller). */
static json_t *spec_json(void)
{
	json_t *j = json_loads(ctr_spec, 0, NULL);
	assert_non_null(j);
	return j;
}

static int parse_json(json_t *j, struct ort_spec *s, struct al_error *err)
{
	char *text = json_dumps(j, JSON_COMPACT);
	assert_non_null(text);
	int r = ort_spec_parse(text, strlen(text), "/b", s, err);
	free(text);
	json_decref(j);
	return r;
}

static int decide(json_t *j, bool root, struct ort_plan *plan, struct al_error *err)
{
	struct ort_spec s;
	int r = parse_json(j, &s, err);
	assert_int_equal(r, 0);
	r = ort_plan_decide(&s, root, plan, err);
	plan->verdict = NULL; /* borrowed from s */
	ort_spec_free(&s);
	return r;
}

static void test_parse_ctr_spec(void **state)
{
	(void)state;
	struct ort_spec s;
	struct al_error err = {0};
	assert_int_equal(parse_json(spec_json(), &s, &err), 0);
	assert_string_equal(s.root, "/b/rootfs");
	assert_false(s.root_ro);
	assert_string_equal(s.proc.argv[0], "sh");
	assert_null(s.proc.argv[1]);
	assert_string_equal(s.proc.cwd, "/");
	assert_true(s.proc.nnp);
	assert_true(s.proc.caps.bounding & (1ull << ort_cap_number("CAP_CHOWN")));
	assert_false(s.proc.caps.bounding & (1ull << ort_cap_number("CAP_SYS_ADMIN")));
	assert_int_equal(s.proc.nrlimits, 1);
	assert_int_equal(s.proc.rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(s.proc.rlimits[0].hard, 1024);
	assert_int_equal(s.nmounts, 7);
	assert_string_equal(s.mounts[1].dest, "/dev");
	assert_string_equal(s.mounts[1].type, "tmpfs");
	assert_int_equal(s.mounts[1].flags, MS_NOSUID | MS_STRICTATIME);
	assert_string_equal(s.mounts[1].data, "mode=755,size=65536k");
	assert_true(s.mounts[5].flags & MS_RDONLY); /* sysfs ro */
	assert_true(s.ns[ORT_NS_PID] && s.ns[ORT_NS_NET] && s.ns[ORT_NS_MNT] && !s.ns[ORT_NS_USER]);
	assert_string_equal(s.cgroups_path, "/default/t3");
	assert_non_null(s.masked[0]);
	assert_int_equal(s.ndevices, 0 + s.ndevices); /* resources.devices is the cgroup's, not linux.devices */
	ort_spec_free(&s);
}

static void test_plan_default_is_confined(void **state)
{
	(void)state;
	struct ort_plan p;
	struct al_error err = {0};
	assert_int_equal(decide(spec_json(), true, &p, &err), 0);
	assert_true(p.confined);
	assert_string_equal(p.profile, "untrusted-code-read");
	assert_true(p.add_userns);
	assert_int_equal(p.id_base, 1879048192u);
	assert_int_equal(p.caps.bounding | p.caps.effective | p.caps.permitted | p.caps.ambient, 0);
	assert_true(p.nnp && p.landlock && p.airlock_seccomp);
	/* As a user, without a user namespace in the config: refused, saying why. */
	assert_int_equal(decide(spec_json(), false, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "needs root"));
}

static void set_ann(json_t *j, const char *k, const char *v)
{
	json_t *a = json_object_get(j, "annotations");
	if (!a) {
		a = json_object();
		json_object_set_new(j, "annotations", a);
	}
	json_object_set_new(a, k, json_string(v));
}

static void drop_ns(json_t *j, const char *type)
{
	json_t *ns = json_object_get(json_object_get(j, "linux"), "namespaces");
	for (size_t i = 0; i < json_array_size(ns); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(ns, i), "type")), type) == 0)
			json_array_remove(ns, i);
}

static void test_plan_refusals(void **state)
{
	(void)state;
	struct ort_plan p;
	struct al_error err = {0};
	json_t *j = spec_json();
	json_array_append_new(
		json_object_get(json_object_get(json_object_get(j, "process"), "capabilities"), "bounding"),
		json_string("CAP_SYS_ADMIN"));
	assert_int_equal(decide(j, true, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "CAP_SYS_ADMIN"));

	j = spec_json();
	drop_ns(j, "network");
	assert_int_equal(decide(j, true, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "host's network"));
	/* Host networking: only under profile none, and only when asked for by name. */
	j = spec_json();
	drop_ns(j, "network");
	set_ann(j, ORT_ANN_PROFILE, "none");
	assert_int_equal(decide(j, true, &p, &err), -EPERM);
	j = spec_json();
	drop_ns(j, "network");
	set_ann(j, ORT_ANN_PROFILE, "none");
	set_ann(j, ORT_ANN_NET, "host");
	assert_int_equal(decide(j, true, &p, &err), 0);
	assert_false(p.confined);
	assert_false(p.landlock);
	assert_true(p.caps.bounding & (1ull << ort_cap_number("CAP_CHOWN"))); /* the config's, as asked */

	/* A CRI application container joins its pod's namespaces without io.airlock.net. */
	j = spec_json();
	json_t *nss = json_object_get(json_object_get(j, "linux"), "namespaces");
	for (size_t i = 0; i < json_array_size(nss); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(nss, i), "type")), "network") == 0)
			json_object_set_new(json_array_get(nss, i), "path", json_string("/proc/42/ns/net"));
	set_ann(j, "io.kubernetes.cri.container-type", "container");
	assert_int_equal(decide(j, true, &p, &err), 0);
	assert_true(p.net_join);
	assert_true(p.confined);

	j = spec_json();
	drop_ns(j, "pid");
	assert_int_equal(decide(j, true, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "pid namespace"));

	j = spec_json();
	set_ann(j, ORT_ANN_PROFILE, "lenient");
	assert_int_equal(decide(j, true, &p, &err), -EINVAL);

	j = spec_json();
	set_ann(j, ORT_ANN_SECCOMP, "config-only");
	assert_int_equal(decide(j, true, &p, &err), -EPERM);
	j = spec_json();
	set_ann(j, ORT_ANN_SECCOMP, "config-only");
	set_ann(j, ORT_ANN_PROFILE, "none");
	assert_int_equal(decide(j, true, &p, &err), 0);
	assert_false(p.airlock_seccomp);

	/* A user namespace of the config's may not map host root under a confined profile. */
	j = spec_json();
	json_t *l = json_object_get(j, "linux");
	json_array_append_new(json_object_get(l, "namespaces"), json_pack("{s:s}", "type", "user"));
	json_object_set_new(l, "uidMappings", json_pack("[{s:i,s:i,s:i}]", "containerID", 0, "hostID", 0, "size", 1));
	json_object_set_new(l, "gidMappings", json_pack("[{s:i,s:i,s:i}]", "containerID", 0, "hostID", 0, "size", 1));
	assert_int_equal(decide(j, false, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "host root"));
}

/* Malformed or unsupported configs are refused with the field named, never half-read. */
static void test_parse_refusals(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],\"cwd\":\"rel\"}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[]}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"root\":{\"path\":\"s\"},\"process\":{\"args\":["
		"\"a\"]}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],\"capabilities\":{"
		"\"bounding\":[\"CAP_NOPE\"]}}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],\"rlimits\":[{\"type\":"
		"\"RLIMIT_NOFILE\",\"soft\":9,\"hard\":1}]}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"]},\"mounts\":[{"
		"\"destination\":\"/a/../../etc\",\"type\":\"tmpfs\"}]}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"]},\"mounts\":[{"
		"\"destination\":\"/a\",\"type\":\"bind\",\"source\":\"rel\"}]}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"]},\"linux\":{"
		"\"cgroupsPath\":\"system.slice:x:y\"}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"]},\"linux\":{"
		"\"cgroupsPath\":\"/a/../../b\"}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],\"user\":{\"uid\":-1,"
		"\"gid\":0}}}",
		"{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],\"apparmorProfile\":"
		"\"x\"}}",
		"[1,2]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ort_spec s;
		struct al_error err = {0};
		int r = ort_spec_parse(bad[i], strlen(bad[i]), "/b", &s, &err);
		if (r == 0)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err.msg[0] != 0);
	}
}

/* uid, gid or an additional gid 4294967295 is (uid_t)-1: setresuid(-1) changes nothing and the
 * process ran as the container's root. Each is refused, naming its field. */
static void test_user_minus_one(void **state)
{
	(void)state;
	static const struct {
		const char *user, *field;
	} bad[] = {
		{"{\"uid\":4294967295,\"gid\":0}", "process.user.uid 4294967295"},
		{"{\"uid\":1000,\"gid\":4294967295}", "process.user.gid 4294967295"},
		{"{\"uid\":1000,\"gid\":1000,\"additionalGids\":[5,4294967295]}", "additionalGids[] 4294967295"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char json[256];
		snprintf(json, sizeof(json),
			 "{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],\"user\":%s}}",
			 bad[i].user);
		struct ort_spec s;
		struct al_error err = {0};
		if (ort_spec_parse(json, strlen(json), "/b", &s, &err) == 0)
			fail_msg("accepted: %s", json);
		if (!strstr(err.msg, bad[i].field))
			fail_msg("%s: \"%s\" does not name \"%s\"", json, err.msg, bad[i].field);
	}
	/* The largest id that is not -1 is still an id. */
	static const char ok[] = "{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],"
				 "\"user\":{\"uid\":4294967294,\"gid\":4294967294}}}";
	struct ort_spec s;
	struct al_error err = {0};
	if (ort_spec_parse(ok, strlen(ok), "/b", &s, &err) != 0)
		fail_msg("refused uid 4294967294: %s", err.msg);
	assert_int_equal(s.proc.uid, 4294967294u);
	ort_spec_free(&s);
}

/* linux.sysctl: the settings of a namespace the container has of its own, nothing else. */
static void test_sysctls(void **state)
{
	(void)state;
	struct ort_plan p;
	struct al_error err = {0};
	json_t *j = spec_json();
	json_object_set_new(json_object_get(j, "linux"), "sysctl",
			    json_pack("{s:s,s:s}", "net.ipv4.ping_group_range", "0 0", "kernel.shmmax", "1024"));
	struct ort_spec s;
	char *text = json_dumps(j, JSON_COMPACT);
	assert_int_equal(ort_spec_parse(text, strlen(text), "/b", &s, &err), 0);
	free(text);
	assert_int_equal(s.nsysctls, 2);
	assert_string_equal(s.sysctls[0].path, "/proc/sys/net/ipv4/ping_group_range");
	assert_int_equal(ort_plan_decide(&s, true, &p, &err), 0);
	ort_spec_free(&s);
	json_decref(j);

	j = spec_json();
	json_object_set_new(json_object_get(j, "linux"), "sysctl", json_pack("{s:s}", "kernel.panic", "1"));
	assert_int_equal(decide(j, true, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "kernel.panic"));
	j = spec_json();
	drop_ns(j, "ipc");
	set_ann(j, ORT_ANN_PROFILE, "none");
	json_object_set_new(json_object_get(j, "linux"), "sysctl", json_pack("{s:s}", "kernel.shmmax", "1"));
	assert_int_equal(decide(j, true, &p, &err), -EPERM);
	j = spec_json();
	json_object_set_new(json_object_get(j, "linux"), "sysctl", json_pack("{s:s}", "net/../../kernel/panic", "1"));
	assert_int_equal(parse_json(j, &s, &err), -EINVAL);
}

static void test_seccomp_compile(void **state)
{
	(void)state;
	json_t *sc = json_loads(
		"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\",\"nosuchcall\"],"
		"\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":0,\"op\":\"SCMP_CMP_EQ\"}]}]}",
		0, NULL);
	struct sock_fprog prog;
	struct al_error err = {0};
	assert_int_equal(ort_seccomp_compile(sc, &prog, &err), 0);
	assert_true(prog.len > 4);
	free(prog.filter);
	json_object_set_new(sc, "listenerPath", json_string("/run/x.sock"));
	assert_int_equal(ort_seccomp_compile(sc, &prog, &err), -ENOTSUP);
	json_object_del(sc, "listenerPath");
	json_object_set_new(sc, "defaultAction", json_string("SCMP_ACT_NOTIFY"));
	assert_int_equal(ort_seccomp_compile(sc, &prog, &err), -ENOTSUP);
	json_decref(sc);
}

static void test_ids(void **state)
{
	(void)state;
	assert_true(ort_id_valid("a1"));
	assert_true(ort_id_valid("k8s_pod-1.2+x"));
	assert_false(ort_id_valid(""));
	assert_false(ort_id_valid(".."));
	assert_false(ort_id_valid("a/b"));
	assert_false(ort_id_valid("-a"));
}

static void test_end_from_wait(void **state)
{
	(void)state;
	struct ort_end e;
	ort_end_from_wait(7 << 8, &e);
	assert_true(e.known);
	assert_int_equal(e.status, AL_STATUS_EXITED);
	assert_int_equal(e.exit_code, 7);
	assert_int_equal(e.signal, 0);
	assert_string_equal(ort_end_status(&e), "exited");
	ort_end_from_wait(SIGKILL, &e);
	assert_int_equal(e.status, AL_STATUS_SIGNALED);
	assert_int_equal(e.signal, SIGKILL);
	assert_string_equal(ort_end_status(&e), "signaled");
	ort_end_from_wait(SIGSEGV | 0x80, &e); /* core dumped */
	assert_int_equal(e.signal, SIGSEGV);
	ort_end_from_wait(0x137f, &e); /* stopped by SIGSTOP: not an end */
	assert_false(e.known);
	assert_string_equal(ort_end_status(&e), "stopped");
	assert_non_null(strstr(e.why, "0x137f"));
}

/* Linux 6.15 or later, by uname: such a kernel keeps exit statuses (PIDFD_INFO_EXIT). */
static bool kernel_at_least_6_15(void)
{
	struct utsname u;
	assert_int_equal(uname(&u), 0);
	char *end;
	long major = strtol(u.release, &end, 10), minor = *end == '.' ? strtol(end + 1, NULL, 10) : 0;
	return major > 6 || (major == 6 && minor >= 15);
}

/* A child of ours that ends as told, its pidfd and its status as waitid reaped it. */
static int child_status(int how, int *pidfd)
{
	pid_t pid = pfd_clone3(0, pidfd, -1);
	if (pid == 0) {
		if (how < 0)
			raise(-how);
		_exit(how);
	}
	assert_true(pid > 0);
	/* Not reaped yet (a zombie once it has ended): no status kept so far. */
	int ws;
	int r = pfd_exit_status(*pidfd, &ws);
	assert_true(r == -EAGAIN || r == -EOPNOTSUPP);
	siginfo_t si;
	assert_int_equal(pfd_wait(*pidfd, &si, NULL, WEXITED), 0);
	return si.si_code == CLD_EXITED ? si.si_status << 8 : si.si_status;
}

static void test_pidfd_exit_status(void **state)
{
	(void)state;
	int supported = pfd_exit_status_supported();
	/* The probe says what uname says (a backport aside, which this test would then report). */
	assert_int_equal(supported, kernel_at_least_6_15() ? 1 : 0);
	static const int hows[] = {7, 0, -SIGKILL, -SIGTERM};
	for (size_t i = 0; i < AL_ARRAY_SIZE(hows); i++) {
		int fd = -1, ws = -1;
		int reaped = child_status(hows[i], &fd);
		int r = pfd_exit_status(fd, &ws);
		if (supported) {
			/* After the reap, the pidfd still tells exactly what the reaper got. */
			assert_int_equal(r, 0);
			assert_int_equal(ws, reaped);
		} else {
			assert_int_equal(r, -EOPNOTSUPP);
		}
		close(fd);
	}
}

/* The rootfs's id mapping: wanted exactly where airlock adds the user namespace; what a failed
 * mount_setattr makes of it; the record's words. */
static void test_rootmap(void **state)
{
	(void)state;
	struct ort_spec s;
	struct ort_plan p;
	struct al_error err = {0};
	assert_int_equal(parse_json(spec_json(), &s, &err), 0);
	assert_int_equal(ort_plan_decide(&s, true, &p, &err), 0);
	assert_true(p.add_userns);
	assert_int_equal(ort_rootmap_wanted(&s, &p), ORT_ROOTMAP_IDMAPPED);
	ort_spec_free(&s);
	/* The config's own user namespace: its engine chose the ids on disk; nothing remapped. */
	json_t *j = spec_json(), *l = json_object_get(j, "linux");
	json_array_append_new(json_object_get(l, "namespaces"), json_pack("{s:s}", "type", "user"));
	json_object_set_new(l, "uidMappings",
			    json_pack("[{s:i,s:i,s:i}]", "containerID", 0, "hostID", 100000, "size", 65536));
	json_object_set_new(l, "gidMappings",
			    json_pack("[{s:i,s:i,s:i}]", "containerID", 0, "hostID", 100000, "size", 65536));
	assert_int_equal(parse_json(j, &s, &err), 0);
	assert_int_equal(ort_plan_decide(&s, true, &p, &err), 0);
	assert_false(p.add_userns);
	assert_int_equal(ort_rootmap_wanted(&s, &p), ORT_ROOTMAP_CONFIG);
	ort_spec_free(&s);
	/* Profile none without a user namespace: the host's ids, nothing to map. */
	j = spec_json();
	set_ann(j, ORT_ANN_PROFILE, "none");
	assert_int_equal(parse_json(j, &s, &err), 0);
	assert_int_equal(ort_plan_decide(&s, true, &p, &err), 0);
	assert_int_equal(ort_rootmap_wanted(&s, &p), ORT_ROOTMAP_HOST);
	ort_spec_free(&s);

	assert_int_equal(ort_rootmap_after(0), ORT_ROOTMAP_IDMAPPED);
	static const int cannot[] = {EINVAL, EOPNOTSUPP, ENOSYS, EPERM};
	for (size_t i = 0; i < sizeof(cannot) / sizeof(cannot[0]); i++)
		assert_int_equal(ort_rootmap_after(cannot[i]), ORT_ROOTMAP_UNSUPPORTED);
	assert_int_equal(ort_rootmap_after(ENOMEM), -1);
	assert_int_equal(ort_rootmap_after(EBADF), -1);
	assert_string_equal(ort_rootmap_word(ORT_ROOTMAP_IDMAPPED), "idmapped");
	assert_string_equal(ort_rootmap_word(ORT_ROOTMAP_UNSUPPORTED), "unsupported");
	assert_string_equal(ort_rootmap_word(ORT_ROOTMAP_CONFIG), "config");
	assert_string_equal(ort_rootmap_word(ORT_ROOTMAP_HOST), "host");
	char buf[24];
	assert_string_equal(ort_fs_name(0x794c7630, buf), "overlay");
	assert_string_equal(ort_fs_name(0xEF53, buf), "ext4");
	assert_string_equal(ort_fs_name(0x858458f6, buf), "ramfs");
	assert_string_equal(ort_fs_name(0x1234abcd, buf), "0x1234abcd");
	assert_ptr_equal(ort_fs_name(0x1234abcd, buf), buf);
}

/* net.ipv4.ping_group_range narrowed to the gids a map holds. */
static void test_ping_range_clamp(void **state)
{
	(void)state;
	const struct ort_idmap one = {0, 1879048192, 65536};
	const struct ort_idmap two[] = {{0, 100000, 10}, {1000, 200000, 10}};
	char out[32];
	assert_int_equal(ort_ping_range_clamp("0 2147483647", &one, 1, out), 0);
	assert_string_equal(out, "0 65535"); /* Docker's: every group, narrowed to the map */
	assert_int_equal(ort_ping_range_clamp("100 200", &one, 1, out), 0);
	assert_string_equal(out, "100 200"); /* inside the map: unchanged */
	assert_int_equal(ort_ping_range_clamp("65000 70000", &one, 1, out), 0);
	assert_string_equal(out, "65000 65535");
	assert_int_equal(ort_ping_range_clamp("70000 80000", &one, 1, out), 0);
	assert_string_equal(out, "1 0"); /* nothing mapped in it: the kernel's "nobody" */
	assert_int_equal(ort_ping_range_clamp("10 5", &one, 1, out), 0);
	assert_string_equal(out, "1 0"); /* an empty range stays empty */
	assert_int_equal(ort_ping_range_clamp("5 1005", two, 2, out), 0);
	assert_string_equal(out, "5 1005"); /* from the first map's ids to the second's */
	assert_int_equal(ort_ping_range_clamp("0 4294967295", two, 2, out), 0);
	assert_string_equal(out, "0 1009");
	assert_int_equal(ort_ping_range_clamp("0 0", NULL, 0, out), 0);
	assert_string_equal(out, "1 0");
	assert_int_equal(ort_ping_range_clamp("0", &one, 1, out), -EINVAL);
	assert_int_equal(ort_ping_range_clamp("0 1 2", &one, 1, out), -EINVAL);
	assert_int_equal(ort_ping_range_clamp("a b", &one, 1, out), -EINVAL);
	assert_int_equal(ort_ping_range_clamp("", &one, 1, out), -EINVAL);
	assert_int_equal(ort_ping_range_clamp("0 4294967296", &one, 1, out), -EINVAL); /* past 32 bits */
	assert_int_equal(ort_ping_range_clamp("-1 5", &one, 1, out), -EINVAL);
	assert_int_equal(ort_ping_range_clamp("0\t10\n", &one, 1, out), 0); /* the kernel's own form */
	assert_string_equal(out, "0 10");

	/* create's pass over the spec: the range in the spec narrowed to the map airlock adds. */
	struct ort_spec s;
	struct ort_plan p;
	struct al_error err = {0};
	json_t *j = spec_json();
	json_object_set_new(
		json_object_get(j, "linux"), "sysctl",
		json_pack("{s:s,s:s}", "net.ipv4.ping_group_range", "0 2147483647", "net.core.somaxconn", "9"));
	assert_int_equal(parse_json(j, &s, &err), 0);
	assert_int_equal(ort_plan_decide(&s, true, &p, &err), 0);
	assert_int_equal(ort_sysctls_clamp(&s, &p, &err), 0);
	for (size_t i = 0; i < s.nsysctls; i++)
		assert_string_equal(s.sysctls[i].value,
				    strcmp(s.sysctls[i].key, "net.core.somaxconn") == 0 ? "9" : "0 65535");
	ort_spec_free(&s);
	j = spec_json();
	json_object_set_new(json_object_get(j, "linux"), "sysctl",
			    json_pack("{s:s}", "net.ipv4.ping_group_range", "everyone"));
	assert_int_equal(parse_json(j, &s, &err), 0);
	assert_int_equal(ort_plan_decide(&s, true, &p, &err), 0);
	assert_int_equal(ort_sysctls_clamp(&s, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'everyone'"));
	ort_spec_free(&s);
}

static int hooks_of(const char *text, struct ort_hooks *h, struct al_error *err)
{
	json_t *j = json_loads(text, 0, NULL);
	assert_non_null(j);
	int r = ort_hooks_parse(j, h, err);
	json_decref(j);
	return r;
}

/* config.json's hooks: each point's list in order, args (none: the path as argv[0]), env, timeout;
 * what is refused, naming the field. */
static void test_hooks_parse(void **state)
{
	(void)state;
	struct ort_hooks h;
	struct al_error err = {0};
	assert_int_equal(
		hooks_of("{\"prestart\":[{\"path\":\"/usr/bin/dockerd\",\"args\":[\"libnetwork-setkey\",\"-exec-root=/"
			 "r\",\"abc\"]}],"
			 "\"createRuntime\":[{\"path\":\"/a\"},{\"path\":\"/b\",\"env\":[\"X=1\"],\"timeout\":5}],"
			 "\"poststop\":[]}",
			 &h, &err),
		0);
	assert_int_equal(h.n[ORT_HOOK_PRESTART], 1);
	assert_string_equal(h.v[ORT_HOOK_PRESTART][0].path, "/usr/bin/dockerd");
	assert_string_equal(h.v[ORT_HOOK_PRESTART][0].argv[0], "libnetwork-setkey");
	assert_string_equal(h.v[ORT_HOOK_PRESTART][0].argv[2], "abc");
	assert_null(h.v[ORT_HOOK_PRESTART][0].argv[3]);
	assert_null(h.v[ORT_HOOK_PRESTART][0].envp); /* none: the runtime's own, as runc's */
	assert_int_equal(h.v[ORT_HOOK_PRESTART][0].timeout, 0);
	assert_int_equal(h.n[ORT_HOOK_CREATE_RUNTIME], 2);
	assert_string_equal(h.v[ORT_HOOK_CREATE_RUNTIME][0].argv[0], "/a"); /* no args: the path */
	assert_null(h.v[ORT_HOOK_CREATE_RUNTIME][0].argv[1]);
	assert_string_equal(h.v[ORT_HOOK_CREATE_RUNTIME][1].envp[0], "X=1");
	assert_int_equal(h.v[ORT_HOOK_CREATE_RUNTIME][1].timeout, 5);
	assert_int_equal(h.n[ORT_HOOK_POSTSTOP], 0);
	assert_true(ort_hooks_any(&h, ORT_HOOK_PRESTART, ORT_HOOK_CREATE_CONTAINER));
	assert_false(ort_hooks_any(&h, ORT_HOOK_CREATE_CONTAINER, ORT_HOOK_POSTSTOP));
	ort_hooks_free(&h);
	assert_int_equal(hooks_of("{}", &h, &err), 0);
	assert_false(ort_hooks_any(&h, ORT_HOOK_PRESTART, ORT_HOOK_POSTSTOP));
	assert_int_equal(ort_hooks_parse(NULL, &h, &err), 0);
	assert_string_equal(ort_hook_name(ORT_HOOK_CREATE_CONTAINER), "createContainer");
	assert_string_equal(ort_hook_name(ORT_HOOK_START_CONTAINER), "startContainer");

	static const struct {
		const char *text, *says;
	} bad[] = {
		{"{\"postStart\":[{\"path\":\"/a\"}]}", "unknown hook point hooks.postStart"},
		{"{\"prestart\":{\"path\":\"/a\"}}", "hooks.prestart must be an array"},
		{"{\"prestart\":[\"/a\"]}", "hooks.prestart[] must be objects"},
		{"{\"prestart\":[{\"path\":\"a\"}]}", "hooks.prestart[].path must be an absolute path"},
		{"{\"prestart\":[{\"args\":[\"a\"]}]}", "hooks.prestart[].path must be an absolute path"},
		{"{\"poststart\":[{\"path\":\"/a\",\"timeout\":0}]}", "hooks.poststart[].timeout must be a positive"},
		{"{\"poststart\":[{\"path\":\"/a\",\"timeout\":-1}]}", "timeout must be a positive"},
		{"{\"poststart\":[{\"path\":\"/a\",\"timeout\":\"5\"}]}", "timeout must be a positive"},
		{"{\"poststart\":[{\"path\":\"/a\",\"timeout\":99999999}]}", "timeout must be a positive"},
		{"{\"poststop\":[{\"path\":\"/a\",\"args\":[1]}]}",
		 "hooks.poststop[].args must be an array of strings"},
		{"{\"poststop\":[{\"path\":\"/a\",\"env\":\"X=1\"}]}",
		 "hooks.poststop[].env must be an array of strings"},
		{"[]", "hooks must be an object"},
		/* A later entry's fault after good ones: nothing is left to free. */
		{"{\"prestart\":[{\"path\":\"/a\"}],\"poststop\":[{\"path\":\"/a\"},{\"path\":\"b\"}]}",
		 "poststop[].path"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = (struct al_error){0};
		assert_int_equal(hooks_of(bad[i].text, &h, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].says))
			fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].says);
		for (int p = 0; p < ORT_HOOK__COUNT; p++)
			assert_int_equal(h.n[p], 0);
	}
	/* A path with a NUL inside would run another program than the one checked. */
	json_t *j = json_pack("{s:[{s:s%}]}", "prestart", "path", "/a\0b", (size_t)4);
	assert_int_equal(ort_hooks_parse(j, &h, &err), -EINVAL);
	json_decref(j);
}

/* The OCI state on a hook's stdin. */
static void test_hook_state(void **state)
{
	(void)state;
	json_t *ann = json_pack("{s:s}", "org.example", "x");
	cleanup_free char *st = ort_hook_state("c1", "creating", 4242, "/b", ann);
	assert_non_null(st);
	json_t *j = json_loads(st, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "ociVersion")), "1.0.2");
	assert_string_equal(json_string_value(json_object_get(j, "id")), "c1");
	assert_string_equal(json_string_value(json_object_get(j, "status")), "creating");
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 4242);
	assert_string_equal(json_string_value(json_object_get(j, "bundle")), "/b");
	assert_true(json_equal(json_object_get(j, "annotations"), ann));
	json_decref(j);
	cleanup_free char *bare = ort_hook_state("c2", "stopped", 0, "/b", NULL);
	j = json_loads(bare, 0, NULL);
	assert_null(json_object_get(j, "annotations"));
	json_decref(j);
	json_decref(ann);
}

/* Under a confined profile a hook that is the image's own file is refused at every point but
 * startContainer (which runs confined, inside); through a symlink too; profile none refuses none. */
static void test_hooks_check(void **state)
{
	(void)state;
	char dir[] = "/tmp/al-test-hooks-XXXXXX", path[256], link[256], root[256];
	assert_non_null(mkdtemp(dir));
	snprintf(root, sizeof(root), "%s/rootfs", dir);
	snprintf(path, sizeof(path), "%s/rootfs/hook", dir);
	snprintf(link, sizeof(link), "%s/outside-link", dir);
	assert_int_equal(mkdir(root, 0755), 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(symlink(path, link), 0);
	struct ort_hooks h;
	struct al_error err = {0};
	char text[1024];
	static const char *const points[] = {"prestart", "createRuntime", "createContainer", "poststart", "poststop"};
	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		for (int via_link = 0; via_link < 2; via_link++) {
			snprintf(text, sizeof(text), "{\"%s\":[{\"path\":\"/bin/sh\"},{\"path\":\"%s\"}]}", points[i],
				 via_link ? link : path);
			assert_int_equal(hooks_of(text, &h, &err), 0);
			err = (struct al_error){0};
			assert_int_equal(ort_hooks_check(&h, root, true, "untrusted-code-read", &err), -EPERM);
			assert_non_null(strstr(err.msg, "#1"));
			assert_non_null(strstr(err.msg, "the container's own file"));
			assert_non_null(strstr(err.msg, points[i]));
			assert_int_equal(ort_hooks_check(&h, root, false, "none", &err), 0);
			ort_hooks_free(&h);
		}
	}
	snprintf(text, sizeof(text), "{\"startContainer\":[{\"path\":\"%s\"}],\"prestart\":[{\"path\":\"/bin/sh\"}]}",
		 path);
	assert_int_equal(hooks_of(text, &h, &err), 0);
	assert_int_equal(ort_hooks_check(&h, root, true, "untrusted-code-read", &err), 0);
	ort_hooks_free(&h);
	/* A hook that does not exist is refused by name, not run blind. */
	assert_int_equal(hooks_of("{\"prestart\":[{\"path\":\"/nonexistent/hook\"}]}", &h, &err), 0);
	assert_int_equal(ort_hooks_check(&h, root, true, "untrusted-code-read", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/hook"));
	ort_hooks_free(&h);
	unlink(link);
	unlink(path);
	rmdir(root);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ctr_spec),
		cmocka_unit_test(test_plan_default_is_confined),
		cmocka_unit_test(test_plan_refusals),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_user_minus_one),
		cmocka_unit_test(test_seccomp_compile),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_sysctls),
		cmocka_unit_test(test_rootmap),
		cmocka_unit_test(test_ping_range_clamp),
		cmocka_unit_test(test_hooks_parse),
		cmocka_unit_test(test_hook_state),
		cmocka_unit_test(test_hooks_check),
		cmocka_unit_test(test_end_from_wait),
		cmocka_unit_test(test_pidfd_exit_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
