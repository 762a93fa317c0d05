/* esc-userns.c — hostile program: make a new user namespace, map ourselves to root in it, and use the capabilities that brings. */
/*
 * Usage: esc-userns HOSTPATH RO-DIR
 * Attempts: unshare(CLONE_NEWUSER) then setgroups "deny", uid_map "0 UID 1", gid_map
 * "0 GID 1"; report the capabilities gained; then unshare(CLONE_NEWNS), mount a tmpfs,
 * remount RO-DIR read-write, chroot, and read HOSTPATH. Also clone(CLONE_NEWUSER) in a
 * child, clone3 (which hides its flags from seccomp in memory), and unshare of every other
 * namespace type.
 * Expected defence: seccomp (unshare: EPERM; clone with namespace flags: EPERM; clone3:
 * ENOSYS so that libc falls back to clone); and if a namespace were made, the mounts
 * inherited from the sandbox are locked and HOSTPATH still does not exist.
 */
#include "esc.h"

#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

struct clone_args_ {
	unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
		set_tid_size, cgroup;
};

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : 0;
}

static void print_caps(const char *name)
{
	char buf[4096];
	if (esc_slurp("/proc/self/status", buf, sizeof(buf)) < 0)
		return;
	const char *p = strstr(buf, "CapEff:");
	if (p) {
		char v[32] = "";
		sscanf(p, "CapEff: %31s", v);
		printf("%s=%s\n", name, v);
	}
}

int main(int argc, char **argv)
{
	char text[64];

	esc_init();
	if (argc != 3) {
		fprintf(stderr, "usage: esc-userns HOSTPATH RO-DIR\n");
		return 2;
	}
	const char *hostpath = argv[1], *ro = argv[2];
	uid_t uid = getuid();
	gid_t gid = getgid();

	/* clone(CLONE_NEWUSER) in a child first, so a success does not change us. */
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(0);
	esc_report("clone-newuser", pid);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	struct clone_args_ ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		_exit(0);
	esc_report("clone3-newuser", pid);
	if (pid > 0)
		waitpid(pid, NULL, 0);

	static const struct {
		const char *name;
		int flag;
	} others[] = {
		{"unshare-newnet", CLONE_NEWNET},	{"unshare-newpid", CLONE_NEWPID},
		{"unshare-newuts", CLONE_NEWUTS},	{"unshare-newipc", CLONE_NEWIPC},
		{"unshare-newcgroup", CLONE_NEWCGROUP}, {"unshare-newtime", CLONE_NEWTIME},
		{"unshare-newns", CLONE_NEWNS},
	};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		esc_report(others[i].name, unshare(others[i].flag));

	if (esc_report("unshare-newuser", unshare(CLONE_NEWUSER)) == 0) {
		esc_report("setgroups-deny", write_file("/proc/self/setgroups", "deny"));
		snprintf(text, sizeof(text), "0 %u 1\n", (unsigned)uid);
		esc_report("uid_map-root", write_file("/proc/self/uid_map", text));
		snprintf(text, sizeof(text), "0 %u 1\n", (unsigned)gid);
		esc_report("gid_map-root", write_file("/proc/self/gid_map", text));
		printf("uid-in-new-ns=%u\n", (unsigned)getuid());
		print_caps("capeff-in-new-ns");
		esc_report("nested-unshare-newns", unshare(CLONE_NEWNS));
		esc_report("nested-mount-tmpfs", mount("none", "/workspace", "tmpfs", 0, "size=1m"));
		esc_report("nested-remount-ro-dir-rw", mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND, NULL));
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/canary", ro);
		int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		esc_report("nested-canary-write", fd < 0 ? -1 : write(fd, "clobbered\n", 10));
		if (fd >= 0)
			close(fd);
		esc_report("nested-chroot", chroot("/"));
	}
	esc_try_read("secret-after-userns", hostpath);
	return 0;
}
