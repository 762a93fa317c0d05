/* floor.c — what a start costs on this host with each of airlock's layers, each done the cheapest
 * way the kernel offers and nothing else: no configuration, no checks, no verdict, no error
 * report beyond an exit status. bench/floor.sh runs it with the layers added one at a time, beside
 * hardened bwrap and airlock, so the figures say how much of a start the kernel's own work takes
 * and how much is left to a sandbox's own code (issue 14, part 4's targets).
 *
 * Usage: floor [-n] [-r] [-i] [-s] [-l] [-c] CMD [ARG...]   (root; CMD by absolute path)
 *   always  user, pid, mount, ipc, uts and cgroup namespaces, uid 0 mapped onto the caller's
 *   -n      a network namespace with lo up
 *   -r      a read-only root as hardened bwrap's: tmpfs, /usr bound read-only, the merged-usr
 *           symlinks, a fresh /proc, /dev with five device binds, a /tmp; pivot_root
 *   -i      a pid 1 that forks the payload and waits for it (airlock's and bwrap's shape)
 *   -s      no capabilities, no_new_privs, and airlock's own seccomp filter (its build's blob 0)
 *   -l      a Landlock ruleset: read and execute /usr, write /dev and /tmp, read /proc, list /
 *   -c      cgroups: one directory per hierarchy airlock uses (v1 memory, pids, cpu, cpuacct, or
 *           one v2 directory), memory, pids and CPU limits written, the child in them (born there
 *           on v2, moving itself on v1), removed after
 * Exit status: the payload's, or 120 + the step that failed (printed on stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/seccomp_blobs.h"

static int fail(int step, const char *what)
{
	fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
	return 120 + step;
}

/* write_file — one write of s to path: the cheapest way to set a cgroup or id-map value. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* ---- cgroups: the directories airlock makes (src/cgroup), by path, with its default limits ---- */

#define NCG 4
static char cg_dir[NCG][320];
static int ncg;

static int cg_make(void)
{
	static const char *const v1[NCG] = {"memory", "pids", "cpu", "cpuacct"};
	char line[256], base[NCG][256] = {{0}};
	int v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -1;
	/* The caller's own cgroup in each hierarchy: airlock makes its job's directories beneath it. */
	while (fgets(line, sizeof line, f)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = 0;
		path[strcspn(path, "\n")] = 0;
		for (int i = 0; i < NCG; i++)
			if (v2 ? (i == 0 && !strcmp(ctl + 1, "")) : !strcmp(ctl + 1, v1[i]))
				snprintf(base[i], sizeof base[i], "/sys/fs/cgroup%s%s%s", v2 ? "" : "/",
					 v2 ? "" : v1[i], strcmp(path, "/") ? path : "");
	}
	fclose(f);
	for (int i = 0; i < (v2 ? 1 : NCG); i++) {
		snprintf(cg_dir[ncg], sizeof cg_dir[ncg], "%.255s/floor-%d", base[i], (int)getpid());
		if (mkdir(cg_dir[ncg], 0755) < 0)
			return -1;
		ncg++;
	}
	/* 512M memory, 256 pids, one CPU: airlock's defaults, one write each. */
	static const char *const lim_v1[NCG][2] = {{"memory.limit_in_bytes", "536870912"},
						   {"pids.max", "256"},
						   {"cpu.cfs_quota_us", "100000"},
						   {NULL, NULL}};
	static const char *const lim_v2[3][2] = {
		{"memory.max", "536870912"}, {"pids.max", "256"}, {"cpu.max", "100000"}};
	char p[400];
	for (int i = 0; i < (v2 ? 3 : NCG); i++) {
		const char *const *l = v2 ? lim_v2[i] : lim_v1[i];
		if (!l[0])
			continue;
		snprintf(p, sizeof p, "%.320s/%s", cg_dir[v2 ? 0 : i], l[0]);
		if (write_file(p, l[1]) < 0)
			return -1;
	}
	return 0;
}

/* How a process joins at the least cost: on v2 it is born inside (clone3's CLONE_INTO_CGROUP, with
 * cg_fd); on v1 it writes "0" to each tasks file itself (join_fd[], inherited), which moves the
 * calling thread without the global lock a move by pid takes (see src/cgroup/cgroup.h). */
static int join_fd[NCG], njoin, cg_fd = -1;

static int cg_open(void)
{
	char p[400];
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
		return (cg_fd = open(cg_dir[0], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ? -1 : 0;
	for (; njoin < ncg; njoin++) {
		snprintf(p, sizeof p, "%.320s/tasks", cg_dir[njoin]);
		if ((join_fd[njoin] = open(p, O_WRONLY | O_CLOEXEC)) < 0)
			return -1;
	}
	return 0;
}

static int cg_join(void)
{
	for (int i = 0; i < njoin; i++) {
		if (write(join_fd[i], "0", 1) != 1)
			return -1;
		close(join_fd[i]);
	}
	return 0;
}

static void cg_remove(void)
{
	for (int i = 0; i < ncg; i++)
		rmdir(cg_dir[i]);
}

/* ---- the root: hardened bwrap's line (bench/lib.sh) with the fewest mount calls ---- */

static int bind_ro(const char *src, const char *dst, int rec)
{
	if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
		return -1;
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, dst, rec ? AT_RECURSIVE : 0, &a, sizeof a);
}

static int make_root(void)
{
	static const char *const links[][2] = {
		{"usr/bin", "bin"}, {"usr/lib", "lib"}, {"usr/lib64", "lib64"}, {"usr/sbin", "sbin"}};
	static const char *const devs[] = {"null", "zero", "full", "random", "urandom"};
	char p[64];
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0 || chdir("/tmp") < 0)
		return -1;
	if (mkdir("usr", 0755) < 0 || bind_ro("/usr", "usr", 1) < 0)
		return -1;
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			return -1;
	if (mkdir("proc", 0555) < 0 || mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -1;
	if (mkdir("dev", 0755) < 0 || mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") < 0)
		return -1;
	for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
		snprintf(p, sizeof p, "dev/%s", devs[i]);
		char src[64];
		snprintf(src, sizeof src, "/dev/%s", devs[i]);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return -1;
		close(fd);
		if (mount(src, p, NULL, MS_BIND, NULL) < 0)
			return -1;
	}
	if (mkdir("tmp", 01777) < 0 || mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		return -1;
	/* pivot_root(".", "."): the old root lands on top of the new; detach it and the new is alone. */
	if (syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -1;
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &ro, sizeof ro);
}

/* ---- the payload's own confinement ---- */

static int landlock(void)
{
	const __u64 fs = (LANDLOCK_ACCESS_FS_REFER << 1) - 1; /* ABI 2's rights, all handled */
	struct landlock_ruleset_attr ra = {.handled_access_fs = fs};
	static const struct {
		const char *path;
		__u64 allow;
	} rules[] = {
		{"/usr", LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR},
		{"/", LANDLOCK_ACCESS_FS_READ_DIR},
		{"/proc", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR},
		{"/dev", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_DIR},
		{"/tmp", fs},
	};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
	if (rs < 0)
		return -1;
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		struct landlock_path_beneath_attr pb = {.allowed_access = rules[i].allow};
		pb.parent_fd = open(rules[i].path, O_PATH | O_CLOEXEC);
		if (pb.parent_fd < 0 || syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			return -1;
		close(pb.parent_fd);
	}
	int r = (int)syscall(SYS_landlock_restrict_self, rs, 0);
	close(rs);
	return r;
}

static int seccomp(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	struct sock_fprog prog = {.len = sc_blobs[0].len, .filter = (struct sock_filter *)sc_blobs[0].code};
	if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static int lo_up(void)
{
	struct ifreq ifr = {.ifr_name = "lo", .ifr_flags = IFF_UP | IFF_RUNNING};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int r = s < 0 ? -1 : ioctl(s, SIOCSIFFLAGS, &ifr);
	if (s >= 0)
		close(s);
	return r;
}

int main(int argc, char **argv)
{
	int net = 0, root = 0, init = 0, sc = 0, ll = 0, cg = 0, o;
	while ((o = getopt(argc, argv, "+nrislc")) != -1)
		switch (o) {
		case 'n':
			net = 1;
			break;
		case 'r':
			root = 1;
			break;
		case 'i':
			init = 1;
			break;
		case 's':
			sc = 1;
			break;
		case 'l':
			ll = 1;
			break;
		case 'c':
			cg = 1;
			break;
		default:
			return 2;
		}
	if (optind >= argc) {
		fprintf(stderr, "usage: floor [-n] [-r] [-i] [-s] [-l] [-c] CMD [ARG...]\n");
		return 2;
	}
	int go[2], flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
	if (net)
		flags |= CLONE_NEWNET;
	if (cg && (cg_make() < 0 || cg_open() < 0)) {
		cg_remove();
		return fail(1, "cgroup");
	}
	if (pipe2(go, O_CLOEXEC) < 0)
		return fail(2, "pipe");
	struct clone_args ca = {.flags = (__u64)flags, .exit_signal = SIGCHLD};
	if (cg_fd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (__u64)cg_fd;
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
	if (pid < 0)
		return fail(3, "clone3");
	if (pid == 0) {
		char c;
		close(go[1]);
		/* The parent writes the id maps before this returns. */
		if (read(go[0], &c, 1) != 1)
			_exit(fail(4, "sync"));
		if (cg_join() < 0)
			_exit(fail(12, "joining the cgroups"));
		if (net && lo_up() < 0)
			_exit(fail(5, "lo up"));
		if (root && make_root() < 0)
			_exit(fail(6, "root"));
		if (init) {
			pid_t p = fork();
			if (p < 0)
				_exit(fail(7, "fork"));
			if (p > 0) {
				int st;
				while (waitpid(p, &st, 0) < 0 && errno == EINTR)
					;
				_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			}
		}
		if (ll && landlock() < 0)
			_exit(fail(8, "landlock"));
		if (sc && seccomp() < 0)
			_exit(fail(9, "seccomp"));
		execv(argv[optind], argv + optind);
		_exit(fail(10, "exec"));
	}
	char p[64], m[64];
	snprintf(m, sizeof m, "0 %d 1\n", (int)getuid());
	snprintf(p, sizeof p, "/proc/%d/uid_map", (int)pid);
	int ok = write_file(p, m) == 0;
	snprintf(p, sizeof p, "/proc/%d/setgroups", (int)pid);
	ok = ok && write_file(p, "deny") == 0;
	snprintf(m, sizeof m, "0 %d 1\n", (int)getgid());
	snprintf(p, sizeof p, "/proc/%d/gid_map", (int)pid);
	ok = ok && write_file(p, m) == 0;
	if (!ok)
		kill(pid, SIGKILL);
	else if (write(go[1], "g", 1) != 1)
		ok = 0;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	cg_remove();
	if (!ok)
		return fail(11, "id map");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
