/* probe.c — side-effect-free probes of kernel features: forked children that try and exit, and read-only queries. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* unshare, setresuid, CLONE_NEW* */
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "host/host.h"
#include "util/cleanup.h"
#include "util/error.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/*
 * Theory of operation. A probe that changes process state (unshare, setresuid, mount)
 * runs in a child made by fork(): the child tries the steps, records (step, errno) in a
 * shared anonymous page and _exits; the parent reaps it. Whatever the child created
 * (namespaces, the tmpfs and overlay inside its own mount namespace) dies with it, so
 * the host is left as it was. Between fork and _exit the child only makes syscalls:
 * anything it needs (map strings) is formatted by the parent first, because the
 * library may be used from a threaded program where the child may not allocate.
 */

struct host_child_rec {
	int step; /* index into the probe's step names */
	int err;  /* positive errno, 0 on success */
};

/* Returns 0, or a positive errno with *step set to the failing step's index. */
typedef int (*host_child_fn)(const void *arg, int *step);

static void host_run_child(host_child_fn fn, const void *arg, const char *const *steps, size_t nsteps,
			   struct host_probe_res *res)
{
	*res = (struct host_probe_res){.ran = true, .step = "fork"};
	struct host_child_rec *rec =
		mmap(NULL, sizeof(*rec), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rec == MAP_FAILED) {
		res->err = errno;
		res->step = "mmap";
		return;
	}
	*rec = (struct host_child_rec){.step = -1, .err = ECHILD};
	pid_t pid = fork();
	if (pid == 0) {
		/* If we die, the probe must not linger. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		int step = 0;
		int e = fn(arg, &step);
		rec->step = step;
		rec->err = e;
		_exit(e ? 1 : 0);
	}
	if (pid < 0) {
		res->err = errno;
	} else {
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		res->err = rec->err;
		res->step = (rec->step >= 0 && (size_t)rec->step < nsteps) ? steps[rec->step] : "child";
		res->ok = res->err == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
		if (!res->ok && res->err == 0)
			res->err = ECHILD;
	}
	if (res->ok)
		res->step = NULL;
	munmap(rec, sizeof(*rec));
}

/* ---- user namespaces ------------------------------------------------------------- */

static const char *const userns_steps[] = {"setgroups", "setresgid", "setresuid", "unshare"};

struct host_userns_arg {
	bool drop;
	uid_t uid;
	gid_t gid;
};

static int host_child_userns(const void *varg, int *step)
{
	const struct host_userns_arg *a = varg;
	if (a->drop) {
		*step = 0;
		if (setgroups(0, NULL) < 0)
			return errno;
		*step = 1;
		if (setresgid(a->gid, a->gid, a->gid) < 0)
			return errno;
		*step = 2;
		if (setresuid(a->uid, a->uid, a->uid) < 0)
			return errno;
	}
	*step = 3;
	return unshare(CLONE_NEWUSER) < 0 ? errno : 0;
}

static long host_read_sysctl(const char *path)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[32];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *end;
	long v = strtol(buf, &end, 10);
	return end == buf ? -1 : v;
}

/* newuidmap can only map ranges when it runs with privilege: setuid root or file caps. */
static bool host_is_privileged_helper(const char *path)
{
	struct stat st;
	if (!path[0] || stat(path, &st) < 0)
		return false;
	if ((st.st_mode & S_ISUID) && st.st_uid == 0)
		return true;
	return getxattr(path, "security.capability", NULL, 0) > 0;
}

void host_probe_userns(struct host_userns *u)
{
	memset(u, 0, sizeof(*u));
	bool root = geteuid() == 0;
	if (root) {
		struct host_userns_arg a = {.drop = false};
		host_run_child(host_child_userns, &a, userns_steps, AL_ARRAY_SIZE(userns_steps), &u->as_root);
	}
	/* As root, "unprivileged" means what an ordinary account could do: nobody, no groups. */
	struct host_userns_arg a = {.drop = root, .uid = root ? 65534 : geteuid(), .gid = root ? 65534 : getegid()};
	u->unpriv_uid = a.uid;
	host_run_child(host_child_userns, &a, userns_steps, AL_ARRAY_SIZE(userns_steps), &u->unprivileged);
	u->max_user_namespaces = host_read_sysctl("/proc/sys/user/max_user_namespaces");
	u->unprivileged_userns_clone = host_read_sysctl("/proc/sys/kernel/unprivileged_userns_clone");
	u->apparmor_restrict_userns = host_read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	if (host_find_in_path("newuidmap", u->newuidmap, sizeof(u->newuidmap)) < 0)
		u->newuidmap[0] = '\0';
	if (host_find_in_path("newgidmap", u->newgidmap, sizeof(u->newgidmap)) < 0)
		u->newgidmap[0] = '\0';
	u->newuidmap_privileged = host_is_privileged_helper(u->newuidmap);
	u->newgidmap_privileged = host_is_privileged_helper(u->newgidmap);
}

/* ---- namespace types ------------------------------------------------------------- */

static const struct {
	const char *name;
	int flag;
} ns_types[HOST_NS__COUNT] = {
	[HOST_NS_USER] = {"user", 0},
	[HOST_NS_PID] = {"pid", CLONE_NEWPID},
	[HOST_NS_MOUNT] = {"mount", CLONE_NEWNS},
	[HOST_NS_NET] = {"net", CLONE_NEWNET},
	[HOST_NS_IPC] = {"ipc", CLONE_NEWIPC},
	[HOST_NS_UTS] = {"uts", CLONE_NEWUTS},
	[HOST_NS_CGROUP] = {"cgroup", CLONE_NEWCGROUP},
	[HOST_NS_TIME] = {"time", CLONE_NEWTIME},
};

const char *host_ns_name(enum host_ns ns)
{
	return (unsigned)ns < HOST_NS__COUNT ? ns_types[ns].name : "?";
}

static const char *const ns_steps[] = {"unshare"};

static int host_child_ns(const void *arg, int *step)
{
	*step = 0;
	return unshare(CLONE_NEWUSER | *(const int *)arg) < 0 ? errno : 0;
}

/* Inside a new user namespace, as airlock's native backend creates them. */
void host_probe_ns(enum host_ns ns, struct host_probe_res *res)
{
	int flag = ns_types[ns].flag;
	host_run_child(host_child_ns, &flag, ns_steps, AL_ARRAY_SIZE(ns_steps), res);
}

/* ---- overlayfs in a user namespace ----------------------------------------------- */

static const char *const overlay_steps[] = {
	"unshare", "setgroups", "uid_map", "gid_map", "make-private", "mount tmpfs", "mkdir", "mount overlay",
};

struct host_overlay_arg {
	char uid_map[32], gid_map[32]; /* formatted before fork */
};

static int host_write_file(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	size_t len = strlen(data);
	ssize_t n = write(fd, data, len);
	int e = n < 0 ? errno : ((size_t)n == len ? 0 : EIO);
	close(fd);
	return e;
}

/* Everything here happens in the child's own user and mount namespaces: the mounts
 * are made private first (a mount namespace owned by a new user namespace already
 * turns shared mounts into slaves; private says so outright), and the tmpfs and the
 * directories in it vanish when the child exits. */
static int host_child_overlay(const void *varg, int *step)
{
	const struct host_overlay_arg *a = varg;
	static const char *const dirs[] = {"/tmp/l", "/tmp/u", "/tmp/w", "/tmp/m"};
	int e;
	*step = 0;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return errno;
	*step = 1;
	if ((e = host_write_file("/proc/self/setgroups", "deny")) != 0 && e != ENOENT)
		return e;
	*step = 2;
	if ((e = host_write_file("/proc/self/uid_map", a->uid_map)) != 0)
		return e;
	*step = 3;
	if ((e = host_write_file("/proc/self/gid_map", a->gid_map)) != 0)
		return e;
	*step = 4;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return errno;
	*step = 5;
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") < 0)
		return errno;
	*step = 6;
	for (size_t i = 0; i < AL_ARRAY_SIZE(dirs); i++)
		if (mkdir(dirs[i], 0700) < 0)
			return errno;
	*step = 7;
	if (mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w") < 0)
		return errno;
	return 0;
}

void host_probe_overlay_userns(struct host_probe_res *res)
{
	struct host_overlay_arg a;
	snprintf(a.uid_map, sizeof(a.uid_map), "0 %u 1\n", (unsigned)geteuid());
	snprintf(a.gid_map, sizeof(a.gid_map), "0 %u 1\n", (unsigned)getegid());
	host_run_child(host_child_overlay, &a, overlay_steps, AL_ARRAY_SIZE(overlay_steps), res);
}

/* ---- landlock, seccomp, kvm ------------------------------------------------------ */

/* The version query creates nothing: with a NULL attr it only returns the ABI. */
int host_landlock_abi(int *err_out)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0) {
		if (err_out)
			*err_out = errno;
		return 0;
	}
	if (err_out)
		*err_out = 0;
	return (int)abi;
}

static const struct {
	const char *name;
	uint32_t action;
} seccomp_actions[HOST_SECCOMP__COUNT] = {
	[HOST_SECCOMP_KILL_PROCESS] = {"kill_process", SECCOMP_RET_KILL_PROCESS},
	[HOST_SECCOMP_KILL_THREAD] = {"kill_thread", SECCOMP_RET_KILL_THREAD},
	[HOST_SECCOMP_TRAP] = {"trap", SECCOMP_RET_TRAP},
	[HOST_SECCOMP_ERRNO] = {"errno", SECCOMP_RET_ERRNO},
	[HOST_SECCOMP_USER_NOTIF] = {"user_notif", SECCOMP_RET_USER_NOTIF},
	[HOST_SECCOMP_TRACE] = {"trace", SECCOMP_RET_TRACE},
	[HOST_SECCOMP_LOG] = {"log", SECCOMP_RET_LOG},
	[HOST_SECCOMP_ALLOW] = {"allow", SECCOMP_RET_ALLOW},
};

const char *host_seccomp_action_name(enum host_seccomp_action a)
{
	return (unsigned)a < HOST_SECCOMP__COUNT ? seccomp_actions[a].name : "?";
}

/* PR_GET_SECCOMP and SECCOMP_GET_ACTION_AVAIL only ask; neither installs anything. */
void host_probe_seccomp(struct host_seccomp *s)
{
	memset(s, 0, sizeof(*s));
	s->mode = (int)syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0);
	if (s->mode < 0) {
		s->err = errno; /* EINVAL: kernel without CONFIG_SECCOMP */
		return;
	}
	for (int a = 0; a < HOST_SECCOMP__COUNT; a++) {
		uint32_t act = seccomp_actions[a].action;
		if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0)
			s->actions |= 1u << a;
		else if (a == HOST_SECCOMP_ERRNO)
			s->err = errno;
	}
	s->filter = (s->actions & (1u << HOST_SECCOMP_ERRNO)) != 0;
}

/* Opening /dev/kvm creates nothing; a VM exists only after KVM_CREATE_VM. */
void host_probe_kvm(struct host_kvm *k)
{
	memset(k, 0, sizeof(*k));
	struct stat st;
	if (stat("/dev/kvm", &st) < 0) {
		k->err = errno;
		return;
	}
	k->present = S_ISCHR(st.st_mode);
	if (!k->present) {
		k->err = ENODEV;
		return;
	}
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		k->err = errno;
		return;
	}
	close(fd);
	k->usable = true;
}

/* ---- executables in PATH --------------------------------------------------------- */

static const char default_path[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/* Relative PATH entries (and the empty one, meaning ".") are skipped: what the
 * report names must not depend on the directory check was started from. */
int host_find_in_path(const char *name, char *out, size_t outsz)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = default_path;
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, ":");
		if (len > 0 && p[0] == '/') {
			int n = snprintf(out, outsz, "%.*s/%s", (int)len, p, name);
			struct stat st;
			if (n > 0 && (size_t)n < outsz && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
			    faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) == 0)
				return 0;
		}
		p += len;
		if (*p)
			p++;
	}
	if (outsz)
		out[0] = '\0';
	return -ENOENT;
}
