/* test_oci_bundle.c — unit tests for the OCI backends' pure parts: refusals, config.json from the plan, helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "backend/capability.h"
#include "kit/landlock.h"
#include "backend/oci/bundle.h"
#include "policy/policy.h"

static struct al_policy *policy(const char *cmd)
{
	struct al_policy *p = NULL;
	assert_int_equal(al_policy_new(&p), 0);
	const char *argv[] = {cmd, "arg one"};
	assert_int_equal(al_policy_set_argv(p, 2, argv, NULL), 0);
	return p;
}

/* The filesystem plan of p, the host probed for probe_for (p, or NULL: the defaults). */
static void plan_of(struct fs_plan *plan, const struct al_policy *p, const struct al_policy *probe_for)
{
	struct fs_host host;
	*plan = (struct fs_plan){.sendfd_sock = -1};
	fs_host_probe(&host, plan, probe_for);
	assert_int_equal(fs_plan_build(plan, p, &host, NULL), 0);
}

/* config.json for p with o, its file_src made-up bundle file names (/bundle/files/I). */
static json_t *build_opts(const struct al_policy *p, struct oci_opts *o)
{
	struct fs_plan plan;
	plan_of(&plan, p, p);
	char **src = calloc(plan.n + 1, sizeof(*src));
	assert_non_null(src);
	for (size_t i = 0; i < plan.n; i++)
		if (plan.ops[i].kind == FS_FILE)
			assert_true(asprintf(&src[i], "/bundle/files/%zu", i) > 0);
	o->file_src = (const char *const *)src;
	json_t *c = NULL;
	struct al_error err = {0};
	if (oci_config_build(p, &plan, o, &c, &err) != 0)
		fail_msg("oci_config_build: %s", err.msg);
	o->file_src = NULL;
	for (size_t i = 0; i < plan.n; i++)
		free(src[i]);
	free(src);
	fs_plan_free(&plan);
	return c;
}

/* config.json for p as runtime rt, with made-up bundle file names, showing view (or NULL). */
static json_t *build_view(const struct al_policy *p, enum oci_runtime rt, bool root, const char *seccomp,
			  const struct cg_view *view)
{
	struct oci_opts o = {.runtime = rt,
			     .root = root,
			     .seccomp_b64 = seccomp,
			     .rlimits = {{.type = "RLIMIT_NOFILE", .resource = RLIMIT_NOFILE, .soft = 64, .hard = 64}},
			     .nrlimits = 1,
			     .cgview = view};
	return build_opts(p, &o);
}

static json_t *build(const struct al_policy *p, enum oci_runtime rt, bool root, const char *seccomp)
{
	return build_view(p, rt, root, seccomp, NULL);
}

/* The mount at destination dest, or NULL. */
static json_t *mount_at(json_t *c, const char *dest)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(c, "mounts"), i, m)
		if (strcmp(json_string_value(json_object_get(m, "destination")), dest) == 0)
			return m;
	return NULL;
}

static bool has_opt(json_t *m, const char *opt)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(m, "options"), i, o)
		if (strcmp(json_string_value(o), opt) == 0)
			return true;
	return false;
}

static bool has_ns(json_t *c, const char *type)
{
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(json_object_get(c, "linux"), "namespaces"), i, n)
		if (strcmp(json_string_value(json_object_get(n, "type")), type) == 0)
			return true;
	return false;
}

static void test_process(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/echo");
	json_t *c = build(p, OCI_CRUN, true, "QUJD");
	json_t *proc = json_object_get(c, "process");
	assert_string_equal(json_string_value(json_array_get(json_object_get(proc, "args"), 1)), "arg one");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(proc, "user"), "uid")), AL_SANDBOX_UID);
	assert_true(json_is_true(json_object_get(proc, "noNewPrivileges")));
	assert_string_equal(json_string_value(json_object_get(proc, "cwd")), AL_WORKSPACE);
	/* no capability in any set */
	const char *sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(json_array_size(json_object_get(json_object_get(proc, "capabilities"), sets[i])), 0);
	/* the scrubbed environment, not ours */
	size_t i;
	json_t *e;
	bool path = false;
	json_array_foreach(json_object_get(proc, "env"), i, e) {
		assert_null(strstr(json_string_value(e), "AL_OCI_LEAK"));
		path = path || strncmp(json_string_value(e), "PATH=", 5) == 0;
	}
	assert_true(path);
	json_t *rl = json_array_get(json_object_get(proc, "rlimits"), 0);
	assert_string_equal(json_string_value(json_object_get(rl, "type")), "RLIMIT_NOFILE");
	/* airlock's own filter goes to crun as raw BPF */
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(c, "annotations"), "run.oci.seccomp_bpf_data")),
		"QUJD");
	json_decref(c);
	al_policy_free(p);
}

static void test_ids_never_root(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	json_t *c = build(p, OCI_CRUN, true, NULL);
	json_t *maps = json_object_get(json_object_get(c, "linux"), "uidMappings");
	size_t i;
	json_t *m;
	json_array_foreach(maps, i, m) {
		assert_int_not_equal(json_integer_value(json_object_get(m, "hostID")), 0); /* never host root */
		assert_int_equal(json_integer_value(json_object_get(m, "size")), 1);
	}
	assert_int_equal(json_integer_value(json_object_get(json_array_get(maps, 1), "hostID")),
			 (json_int_t)AL_DEFAULT_ID_BASE + AL_SANDBOX_UID);
	json_decref(c);
	/* an ordinary caller: the sandbox user is 0 of airlock's namespace, i.e. the caller */
	c = build(p, OCI_CRUN, false, NULL);
	maps = json_object_get(json_object_get(c, "linux"), "gidMappings");
	assert_int_equal(json_array_size(maps), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(maps, 0), "containerID")), AL_SANDBOX_UID);
	assert_null(json_object_get(c, "annotations")); /* no filter given: none asked for */
	json_decref(c);
	al_policy_free(p);
}

static json_int_t map_int(json_t *c, const char *which, size_t i, const char *key)
{
	return json_integer_value(
		json_object_get(json_array_get(json_object_get(json_object_get(c, "linux"), which), i), key));
}

/* An image's User (policy/image.c sets run_uid/run_gid): the process runs as it, and the maps hold
 * it beside the container's root, at id_base+id; a group 0 is the root entry alone. */
static void test_image_user(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	p->run_uid = 1001;
	p->run_gid = 0;
	json_t *c = build(p, OCI_CRUN, true, NULL);
	json_t *user = json_object_get(json_object_get(c, "process"), "user");
	assert_int_equal(json_integer_value(json_object_get(user, "uid")), 1001);
	assert_int_equal(json_integer_value(json_object_get(user, "gid")), 0);
	assert_int_equal(map_int(c, "uidMappings", 1, "containerID"), 1001);
	assert_int_equal(map_int(c, "uidMappings", 1, "hostID"), (json_int_t)AL_DEFAULT_ID_BASE + 1001);
	assert_int_equal(json_array_size(json_object_get(json_object_get(c, "linux"), "gidMappings")), 1);
	assert_int_equal(map_int(c, "gidMappings", 0, "hostID"), (json_int_t)AL_DEFAULT_ID_BASE);
	json_decref(c);
	c = build(p, OCI_CRUN, false, NULL); /* an ordinary caller is the image's user */
	assert_int_equal(map_int(c, "uidMappings", 0, "containerID"), 1001);
	assert_int_equal(map_int(c, "uidMappings", 0, "hostID"), 0);
	json_decref(c);
	al_policy_free(p);
}

static void test_mounts(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	assert_int_equal(al_policy_add_bind(p, "/etc", "/data", false, NULL), 0);
	assert_int_equal(al_policy_set_limit(p, AL_LIMIT_DISK, 8 << 20, NULL), 0);
	json_t *c = build(p, OCI_CRUN, false, NULL);
	assert_true(json_is_true(json_object_get(json_object_get(c, "root"), "readonly")));
	json_t *m = mount_at(c, "/usr");
	assert_non_null(m);
	assert_true(has_opt(m, "ro") && has_opt(m, "nosuid") && has_opt(m, "nodev") && has_opt(m, "rbind"));
	m = mount_at(c, "/data");
	assert_non_null(m);
	assert_true(has_opt(m, "ro"));
	m = mount_at(c, "/workspace");
	assert_string_equal(json_string_value(json_object_get(m, "type")), "tmpfs");
	assert_true(has_opt(m, "size=8388608"));
	m = mount_at(c, "/tmp");
	assert_true(has_opt(m, "size=8388608") && has_opt(m, "nosuid"));
	assert_true(has_opt(mount_at(c, "/dev/shm"), "size=8388608"));
	assert_string_equal(json_string_value(json_object_get(mount_at(c, "/proc"), "type")), "proc");
	/* the generated /etc files: read-only binds of bundle files */
	m = mount_at(c, "/etc/passwd");
	assert_non_null(m);
	assert_true(has_opt(m, "ro"));
	assert_non_null(strstr(json_string_value(json_object_get(m, "source")), "/bundle/files/"));
	/* devices are the runtime's own /dev, never host binds */
	assert_null(mount_at(c, "/dev/null"));
	json_decref(c);
	al_policy_free(p);
}

static void test_namespaces(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	json_t *c = build(p, OCI_CRUN, true, NULL);
	const char *all[] = {"pid", "mount", "ipc", "uts", "user", "network", "cgroup"};
	for (size_t i = 0; i < 7; i++)
		assert_true(has_ns(c, all[i]));
	json_decref(c);
	c = build(p, OCI_RUNSC, true, NULL);
	assert_true(has_ns(c, "network"));
	assert_false(has_ns(c, "cgroup"));
	json_decref(c);
	assert_int_equal(al_policy_set_network(p, AL_NET_HOST, NULL), 0);
	c = build(p, OCI_CRUN, true, NULL);
	assert_false(has_ns(c, "network"));
	json_decref(c);
	al_policy_free(p);
}

/* The runtime's refusal: its backend's capability table against the policy's plan. */
static int oci_refuse(const struct al_policy *p, enum oci_runtime rt, bool root, struct al_error *err)
{
	struct pol_plan pl;
	pol_plan_build(p, root, &pl);
	struct be_host host = {.cgroupns = true, .landlock_abi = LL_ABI_MAX};
	return be_refuse(rt == OCI_RUNSC ? &be_gvisor_caps : &be_oci_caps, p, &pl, &host, err);
}

static void test_refusals(void **state)
{
	(void)state;
	struct al_error err = {0};
	struct al_policy *p = policy("/bin/true");
	assert_int_equal(oci_refuse(p, OCI_CRUN, false, &err), 0);
	assert_int_equal(oci_refuse(p, OCI_RUNSC, true, &err), 0);
	assert_int_equal(al_policy_require(p, "seccomp", NULL), 0);
	assert_int_equal(oci_refuse(p, OCI_CRUN, true, &err), 0);
	/* runsc enforces the profile as linux.seccomp (--oci-seccomp) */
	assert_int_equal(oci_refuse(p, OCI_RUNSC, true, &err), 0);
	al_policy_free(p);
	/* an explicit --pids cannot be a limit on gVisor's guest processes; nor --net host here */
	p = policy("/bin/true");
	assert_int_equal(al_policy_set_limit(p, AL_LIMIT_PIDS, 64, NULL), 0);
	assert_int_equal(oci_refuse(p, OCI_RUNSC, true, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "--pids"));
	assert_int_equal(oci_refuse(p, OCI_CRUN, true, &err), 0);
	al_policy_free(p);
	p = policy("/bin/true");
	assert_int_equal(al_policy_require(p, "landlock", NULL), 0);
	assert_int_equal(oci_refuse(p, OCI_CRUN, true, &err), 0); /* airlock-init applies it */
	assert_int_equal(oci_refuse(p, OCI_RUNSC, true, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "landlock"));
	al_policy_free(p);
	p = policy("/bin/true");
	assert_int_equal(al_policy_set_id_base(p, 200000, NULL), 0);
	assert_int_equal(oci_refuse(p, OCI_CRUN, false, &err), -EPERM);
	al_policy_free(p);
}

/* config.json with airlock-init (init_src), for p as runtime rt: NOFILE 64 and CORE 0 as rlimits. */
static json_t *build_init(const struct al_policy *p, enum oci_runtime rt, bool exec)
{
	struct oci_opts o = {.runtime = rt,
			     .root = true,
			     .init_src = "/opt/airlock/bin/airlock",
			     .init_exec = exec,
			     .files_dir = "/bundle/files",
			     .rlimits = {{.type = "RLIMIT_NOFILE", .resource = RLIMIT_NOFILE, .soft = 64, .hard = 64},
					 {.type = "RLIMIT_CORE", .resource = RLIMIT_CORE, .soft = 0, .hard = 0}},
			     .nrlimits = 2};
	return build_opts(p, &o);
}

/* The strings of a JSON array joined by spaces (static buffer). */
static const char *joined(json_t *a)
{
	static char buf[1024];
	size_t i, k = 0;
	json_t *v;
	buf[0] = 0;
	json_array_foreach(a, i, v)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%s", i ? " " : "", json_string_value(v));
	return buf;
}

/* crun's process is airlock-init, the binary bound read-only at AI_PATH; the rlimits go
 * to it as arguments, for the payload alone: process.rlimits keeps only RLIMIT_CORE. */
static void test_init(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/echo");
	json_t *c = build_init(p, OCI_CRUN, false);
	json_t *proc = json_object_get(c, "process");
	char want[256];
	snprintf(want, sizeof(want), "%s --rlimit %d:64:64 --rlimit %d:0:0 -- /bin/echo arg one", ai_path(),
		 RLIMIT_NOFILE, RLIMIT_CORE);
	assert_string_equal(joined(json_object_get(proc, "args")), want);
	json_t *rl = json_object_get(proc, "rlimits");
	assert_int_equal(json_array_size(rl), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rl, 0), "type")), "RLIMIT_CORE");
	json_t *m = mount_at(c, AI_PATH);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "source")), "/opt/airlock/bin/airlock");
	assert_true(has_opt(m, "ro") && has_opt(m, "nosuid") && has_opt(m, "nodev"));
	assert_null(mount_at(c, OCI_FILES_PATH)); /* crun binds the policy's files in place */
	json_decref(c);
	al_policy_free(p);
}

/* runsc with the policy's files: airlock-init copies them from OCI_FILES_PATH and execs. */
static void test_init_exec(void **state)
{
	(void)state;
	struct al_policy *p = policy("/usr/bin/python3");
	assert_int_equal(al_policy_add_file(p, AL_WORKSPACE "/main.py", "print(1)\n", 9, 0640, NULL), 0);
	json_t *c = build_init(p, OCI_RUNSC, true);
	json_t *args = json_object_get(json_object_get(c, "process"), "args");
	const char *a = joined(args);
	char want[256];
	snprintf(want, sizeof(want), "--rlimit %d:0:0 --exec --file " OCI_FILES_PATH "/", RLIMIT_CORE);
	assert_non_null(strstr(a, want));
	assert_non_null(strstr(a, " " AL_WORKSPACE "/main.py 640 -- /usr/bin/python3 arg one"));
	assert_null(mount_at(c, AL_WORKSPACE "/main.py")); /* no bind inside the tmpfs: gVisor refuses it */
	json_t *m = mount_at(c, OCI_FILES_PATH);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "source")), "/bundle/files");
	assert_true(has_opt(m, "ro") && has_opt(m, "nosuid") && has_opt(m, "nodev") && has_opt(m, "noexec"));
	json_decref(c);
	al_policy_free(p);
}

/* crun's /dev is read-only through its own mount's options, which crun keeps with nosuid and
 * noexec (readonlyPaths' remount lost them); gVisor's /dev stays writable for /dev/null. */
static void test_dev(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	json_t *c = build(p, OCI_CRUN, true, NULL);
	json_t *m = mount_at(c, "/dev");
	assert_true(has_opt(m, "ro") && has_opt(m, "nosuid") && has_opt(m, "noexec"));
	assert_null(strstr(joined(json_object_get(json_object_get(c, "linux"), "readonlyPaths")), "/dev"));
	json_decref(c);
	c = build(p, OCI_RUNSC, true, NULL);
	m = mount_at(c, "/dev");
	assert_false(has_opt(m, "ro"));
	assert_true(has_opt(m, "nosuid") && has_opt(m, "noexec"));
	json_decref(c);
	al_policy_free(p);
}

/* The action of the first rule naming call, "" if none. */
static const char *sc_action_of(json_t *sc, const char *call, bool with_args)
{
	size_t i, k;
	json_t *r, *n;
	json_array_foreach(json_object_get(sc, "syscalls"), i, r) {
		if ((json_object_get(r, "args") != NULL) != with_args)
			continue;
		json_array_foreach(json_object_get(r, "names"), k, n)
			if (strcmp(json_string_value(n), call) == 0)
				return json_string_value(json_object_get(r, "action"));
	}
	return "";
}

/* linux.seccomp for runsc: the profile's decisions, default EPERM, strict kills. */
static void test_oci_seccomp(void **state)
{
	(void)state;
	struct sc_options so = {.profile = AL_SECCOMP_DEFAULT};
	json_t *sc = NULL;
	assert_int_equal(oci_seccomp_json(&so, &sc, NULL), 0);
	assert_string_equal(json_string_value(json_object_get(sc, "defaultAction")), "SCMP_ACT_ERRNO");
	assert_string_equal(sc_action_of(sc, "read", false), "SCMP_ACT_ALLOW");
	assert_string_equal(sc_action_of(sc, "clone3", false), "SCMP_ACT_ALLOW"); /* gVisor: ENOSYS itself */
	/* runsc 20221219's name for pselect6 (call 270), listed beside it */
	assert_string_equal(sc_action_of(sc, "pselect6", false), "SCMP_ACT_ALLOW");
	assert_string_equal(sc_action_of(sc, "pselect", false), "SCMP_ACT_ALLOW");
	assert_string_equal(sc_action_of(sc, "mount", false), ""); /* the default: EPERM */
	assert_string_equal(sc_action_of(sc, "ptrace", false), "");
	assert_string_equal(sc_action_of(sc, "clone", false), ""); /* only with its argument filter */
	assert_string_equal(sc_action_of(sc, "clone", true), "SCMP_ACT_ALLOW");
	assert_string_equal(sc_action_of(sc, "ioctl", true), "SCMP_ACT_ERRNO"); /* TIOCSTI first */
	assert_string_equal(sc_action_of(sc, "socket", false), "");
	/* No set-id files (issue 8): the calls that set a mode are allowed only by rules that
	 * require no S_ISUID/S_ISGID in the mode (or, for open/openat, no file made); openat2,
	 * whose mode no rule can see, falls to the default (EPERM: this runsc ignores errnoRet). */
	static const char *const mode_calls[] = {"chmod", "fchmod", "fchmodat", "open",	 "openat",
						 "creat", "mkdir",  "mkdirat",	"mknod", "mknodat"};
	for (size_t i = 0; i < sizeof(mode_calls) / sizeof(mode_calls[0]); i++) {
		assert_string_equal(sc_action_of(sc, mode_calls[i], false), "");
		assert_string_equal(sc_action_of(sc, mode_calls[i], true), "SCMP_ACT_ALLOW");
	}
	assert_string_equal(sc_action_of(sc, "openat2", false), "");
	assert_string_equal(sc_action_of(sc, "openat2", true), "");
	size_t i, n_open = 0;
	json_t *r;
	json_array_foreach(json_object_get(sc, "syscalls"), i, r) {
		if (strcmp(json_string_value(json_array_get(json_object_get(r, "names"), 0)), "openat") != 0)
			continue;
		json_t *a = json_array_get(json_object_get(r, "args"), 0);
		assert_int_equal(json_array_size(json_object_get(r, "args")), 1);
		assert_string_equal(json_string_value(json_object_get(a, "op")), "SCMP_CMP_MASKED_EQ");
		assert_int_equal(json_integer_value(json_object_get(a, "valueTwo")), 0);
		json_int_t idx = json_integer_value(json_object_get(a, "index")),
			   mask = json_integer_value(json_object_get(a, "value"));
		/* index 3, the mode: no set-id bit; index 2, the flags: neither O_CREAT nor O_TMPFILE */
		assert_true((idx == 3 && mask == 06000) ||
			    (idx == 2 && mask == (O_CREAT | (O_TMPFILE & ~O_DIRECTORY))));
		n_open++;
	}
	assert_int_equal(n_open, 2);
	json_decref(sc);
	so.profile = AL_SECCOMP_STRICT;
	assert_int_equal(oci_seccomp_json(&so, &sc, NULL), 0);
	assert_string_equal(sc_action_of(sc, "mount", false), "SCMP_ACT_KILL");
	assert_string_equal(sc_action_of(sc, "inotify_init1", false), "");
	assert_string_equal(sc_action_of(sc, "msgget", false), "SCMP_ACT_ALLOW");
	json_decref(sc);
}

static void test_rootfs_ops(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	struct fs_plan plan;
	plan_of(&plan, p, NULL);
	for (size_t i = 0; i < plan.n; i++) {
		const struct fs_op *op = &plan.ops[i];
		bool on = oci_on_rootfs(&plan, i);
		/* nothing below /dev, /tmp or /workspace lands in the bundle's rootfs */
		if (strncmp(op->dest, "dev/", 4) == 0 || strncmp(op->dest, "tmp/", 4) == 0)
			assert_false(on);
		if (strcmp(op->dest, "usr") == 0 || strcmp(op->dest, "etc") == 0 || strcmp(op->dest, "etc/passwd") == 0)
			assert_true(on);
	}
	fs_plan_free(&plan);
	al_policy_free(p);
}

static void test_helpers(void **state)
{
	(void)state;
	char *s = oci_base64("hello!?", 7);
	assert_string_equal(s, "aGVsbG8hPw==");
	free(s);
	s = oci_base64("", 0);
	assert_string_equal(s, "");
	free(s);
	assert_true(WIFEXITED(oci_wstatus(3)) && WEXITSTATUS(oci_wstatus(3)) == 3);
	assert_true(WIFSIGNALED(oci_wstatus(137)) && WTERMSIG(oci_wstatus(137)) == SIGKILL);
	char msg[64];
	const char log[] = "{\"msg\":\"a warning\",\"level\":\"warning\"}\n"
			   "{\"msg\":\"executable file `/x` not found\",\"level\":\"error\",\"time\":\"t\"}\n";
	assert_true(oci_log_error(log, sizeof(log) - 1, msg, sizeof(msg)));
	assert_string_equal(msg, "executable file `/x` not found");
	assert_false(oci_log_error(log, 40, msg, sizeof(msg)));
}

/* crun's view of the job's cgroups: each v1 hierarchy's job directory bound read-only, nosuid,
 * nodev, noexec at /sys/fs/cgroup/<controllers>, a v2-only job's at /sys/fs/cgroup; none without
 * a view, nor when the policy binds something beneath /sys. */
static void test_cgview(void **state)
{
	(void)state;
	struct al_policy *p = policy("/bin/true");
	struct cg_view v1 = {.n = 2,
			     .h = {{.version = 1, .name = "memory", .path = "/cg/memory/job"},
				   {.version = 1, .name = "pids", .path = "/cg/pids/job"}}};
	json_t *c = build_view(p, OCI_CRUN, true, NULL, &v1);
	json_t *m = mount_at(c, "/sys/fs/cgroup/memory");
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "source")), "/cg/memory/job");
	assert_string_equal(json_string_value(json_object_get(m, "type")), "bind");
	for (const char *const *o = (const char *const[]){"ro", "nosuid", "nodev", "noexec", NULL}; *o; o++)
		assert_true(has_opt(m, *o));
	assert_non_null(mount_at(c, "/sys/fs/cgroup/pids"));
	json_decref(c);
	struct cg_view v2 = {.n = 1, .whole = true, .h = {{.version = 2, .name = "unified", .path = "/cg/job"}}};
	c = build_view(p, OCI_CRUN, false, NULL, &v2);
	assert_non_null(m = mount_at(c, "/sys/fs/cgroup"));
	assert_string_equal(json_string_value(json_object_get(m, "source")), "/cg/job");
	json_decref(c);
	c = build(p, OCI_CRUN, true, NULL);
	assert_null(mount_at(c, "/sys/fs/cgroup"));
	assert_null(mount_at(c, "/sys/fs/cgroup/memory"));
	json_decref(c);
	assert_int_equal(al_policy_add_bind(p, "/usr", "/sys/x", false, NULL), 0);
	c = build_view(p, OCI_CRUN, true, NULL, &v1);
	assert_null(mount_at(c, "/sys/fs/cgroup/memory"));
	json_decref(c);
	al_policy_free(p);
}

int main(void)
{
	setenv("AL_OCI_LEAK", "1", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_process),	    cmocka_unit_test(test_ids_never_root),
		cmocka_unit_test(test_image_user),  cmocka_unit_test(test_mounts),
		cmocka_unit_test(test_namespaces),  cmocka_unit_test(test_cgview),
		cmocka_unit_test(test_refusals),    cmocka_unit_test(test_rootfs_ops),
		cmocka_unit_test(test_helpers),	    cmocka_unit_test(test_init),
		cmocka_unit_test(test_init_exec),   cmocka_unit_test(test_dev),
		cmocka_unit_test(test_oci_seccomp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
