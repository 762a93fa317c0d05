/* init.c — the container's init between clone3 and execve: ids, the config's mounts beneath its rootfs, pivot_root.
 *
 * Runs as pid 1 of the container's pid namespace, a child of `airlock oci create` that the
 * shim inherits (it is its subreaper) once create exits: no lifeline ties it to create, on
 * purpose — a runtime's container outlives the command that made it, and the shim, `kill` and
 * `delete` end it. Allocates nothing and formats nothing: a failure is one ort_record to create.
 *
 * Every path of the config is resolved beneath the rootfs with openat2(RESOLVE_IN_ROOT) and
 * mounted through its descriptor (/proc/self/fd/N): a symlink in the image cannot send a mount
 * outside the container's tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <termios.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "kit/rawsys.h"
#include "ctr.h"
#include "util/openat2.h"

_Noreturn void ort_die(int status_fd, enum ort_stage stage, int err, const char *what)
{
	struct ort_record r = {.stage = (int)stage, .err = err};
	if (what)
		strncpy(r.what, what, sizeof(r.what) - 1);
	if (write(status_fd, &r, sizeof(r)) < 0) {
		/* nobody to tell */
	}
	_exit(1);
}

/* Where the rootfs is attached before pivot_root: a tmpfs of our mount namespace over the
 * host's /tmp (always there and traversable), gone with the old root. */
#define ORT_STAGING "/tmp"

#define DIE(in, stage, e, what) ort_die((in)->pl.status_fd, stage, e, what)

static int open_in_root(int rootfd, const char *path, int flags)
{
	return al_openat2(rootfd, path, flags, 0, AL_RESOLVE_IN_ROOT);
}

/* "/proc/self/fd/N" in buf, without printf. */
static const char *fd_path(char buf[32], int fd)
{
	char digits[12];
	int n = 0;
	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) > 0);
	memcpy(buf, "/proc/self/fd/", 14);
	for (int i = 0; i < n; i++)
		buf[14 + i] = digits[n - 1 - i];
	buf[14 + n] = 0;
	return buf;
}

/* The flags a remount must keep: those of the mount now there (a user namespace may not clear
 * nosuid, nodev, noexec or the atime flags of a mount it did not make: they are locked). */
static unsigned long locked_flags(const char *path)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return 0;
	unsigned long f = 0;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

/* Bind-remounts the mount at path (a /proc/self/fd link) with flags, read-only included. */
static int remount(const char *path, unsigned long flags)
{
	unsigned long keep = locked_flags(path);
	return mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | flags | keep, NULL) < 0 ? -errno : 0;
}

static int move_tree(int tree, int target)
{
	return (int)syscall(SYS_move_mount, tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0
		       ? -errno
		       : 0;
}

static void mount_one(const struct ort_init *in, int rootfd, size_t i)
{
	const struct ort_mount *m = &in->s->mounts[i];
	int fd = open_in_root(rootfd, m->dest, O_PATH);
	if (fd == -ENOENT) {
		/* Beneath an earlier mount of ours (/dev/pts in /dev's tmpfs): made here, as its owner. */
		struct stat st;
		bool file = m->bind && fstat(in->bind_trees[i], &st) == 0 && !S_ISDIR(st.st_mode);
		int r = ort_make_mount_point(rootfd, m->dest, file);
		fd = r < 0 ? r : open_in_root(rootfd, m->dest, O_PATH);
	}
	if (fd < 0)
		DIE(in, ORT_MOUNT, -fd, m->dest);
	char tgt[32];
	fd_path(tgt, fd);
	if (m->bind) {
		/* The source was cloned by create with its flags set (ort_open_trees). */
		int r = move_tree(in->bind_trees[i], fd);
		if (r < 0)
			DIE(in, ORT_MOUNT, -r, m->dest);
		close(in->bind_trees[i]);
		close(fd);
		/* The descriptor named the mount point; the bind sits on top of it now. */
		if ((fd = open_in_root(rootfd, m->dest, O_PATH)) < 0)
			DIE(in, ORT_MOUNT, -fd, m->dest);
		fd_path(tgt, fd);
	} else if (mount(m->source ? m->source : m->type, tgt, m->type, m->flags, m->data) < 0) {
		/* sysfs and mqueue cannot be mounted in a user namespace that does not own the
		 * network or IPC namespace (a pod's, joined): a read-only bind of the host's is
		 * what runc does for sysfs there; we refuse instead of widening. */
		DIE(in, ORT_MOUNT, errno, m->dest);
	}
	if (!m->bind && m->propag) {
		/* As for binds: the descriptor names the mount point, the new mount is on top. */
		close(fd);
		if ((fd = open_in_root(rootfd, m->dest, O_PATH)) < 0)
			DIE(in, ORT_MOUNT, -fd, m->dest);
		fd_path(tgt, fd);
	}
	if (m->propag && mount(NULL, tgt, NULL, m->propag, NULL) < 0)
		DIE(in, ORT_MOUNT, errno, m->dest);
	close(fd);
}

/* /dev: the host's null, zero, full, random, urandom and tty bound onto files (device nodes
 * cannot be made in a user namespace, and binding the fixed set is all a container gets), the
 * usual links. Only when /dev exists and is writable by us (the config's tmpfs). */
static void populate_dev(const struct ort_init *in, int rootfd)
{
	static const char *const devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
	static const char *const links[][2] = {{"fd", "/proc/self/fd"},	      {"stdin", "/proc/self/fd/0"},
					       {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
					       {"ptmx", "pts/ptmx"},	      {"core", "/proc/kcore"}};
	int dev = open_in_root(rootfd, "/dev", O_PATH | O_DIRECTORY);
	if (dev < 0)
		return;
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		int f = openat(dev, devs[i], O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (f < 0)
			DIE(in, ORT_DEV, errno, devs[i]);
		close(f);
		char src[16] = "/dev/", tgt[32];
		memcpy(src + 5, devs[i], strlen(devs[i]) + 1);
		int t = openat(dev, devs[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (t < 0 || mount(src, fd_path(tgt, t), NULL, MS_BIND, NULL) < 0)
			DIE(in, ORT_DEV, errno, devs[i]);
		close(t);
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlinkat(links[i][1], dev, links[i][0]) < 0 && errno != EEXIST)
			DIE(in, ORT_DEV, errno, links[i][0]);
	close(dev);
}

/* linux.sysctl, through the container's own /proc (plan.c allowed only its namespaces'
 * settings), before readonlyPaths makes /proc/sys read-only. */
static void write_sysctls(const struct ort_init *in, int rootfd)
{
	for (size_t i = 0; i < in->s->nsysctls; i++) {
		const struct ort_sysctl *sc = &in->s->sysctls[i];
		int fd = open_in_root(rootfd, sc->path, O_WRONLY);
		size_t len = strlen(sc->value);
		if (fd < 0 || write(fd, sc->value, len) != (ssize_t)len)
			DIE(in, ORT_SYSCTL, fd < 0 ? -fd : errno, sc->key);
		close(fd);
	}
}

/* "createContainer hook #N" into buf, without printf. */
static const char *hook_what(char buf[40], int n)
{
	static const char head[] = "createContainer hook #";
	memcpy(buf, head, sizeof(head) - 1);
	char *p = buf + sizeof(head) - 1, digits[12];
	int k = 0;
	do
		digits[k++] = (char)('0' + n % 10);
	while ((n /= 10) > 0);
	while (k)
		*p++ = digits[--k];
	*p = 0;
	return buf;
}

/* The hooks' moment, as runc's: the mounts are made, pivot_root is not (the old root is still
 * there for a hook that works on mounts). create runs prestart and createRuntime in the runtime's
 * namespaces meanwhile; then createContainer's run here, as the namespaces' root, before any of
 * the confinement (hooks.c refuses an image's own file for them under a confined profile). */
static void run_create_hooks(const struct ort_init *in)
{
	struct ort_record rec = {.stage = ORT_HOOKS};
	char go;
	if (write(in->pl.status_fd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec) || read(in->sync_fd, &go, 1) != 1)
		_exit(1); /* create gave up and says why */
	close(in->sync_fd);
	int why = 0, n = ort_hooks_run_child(&in->s->hooks, ORT_HOOK_CREATE_CONTAINER, in->pl.hook_state_fd,
					     in->s->proc.envp, &why);
	char buf[40];
	if (n)
		DIE(in, ORT_HOOK, why, hook_what(buf, n - 1));
}

/* maskedPaths: /dev/null over files, an empty read-only tmpfs over directories. readonlyPaths:
 * read-only binds of themselves. Absent paths need nothing. */
static void mask_paths(const struct ort_init *in, int rootfd)
{
	const struct ort_spec *s = in->s;
	char tgt[32];
	for (size_t i = 0; s->masked && s->masked[i]; i++) {
		int fd = open_in_root(rootfd, s->masked[i], O_PATH);
		if (fd == -ENOENT)
			continue;
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			DIE(in, ORT_MASK, fd < 0 ? -fd : errno, s->masked[i]);
		int r = S_ISDIR(st.st_mode) ? mount("tmpfs", fd_path(tgt, fd), "tmpfs", MS_RDONLY, "size=0")
					    : mount("/dev/null", fd_path(tgt, fd), NULL, MS_BIND, NULL);
		if (r < 0)
			DIE(in, ORT_MASK, errno, s->masked[i]);
		close(fd);
	}
	for (size_t i = 0; s->readonly && s->readonly[i]; i++) {
		int fd = open_in_root(rootfd, s->readonly[i], O_PATH);
		if (fd == -ENOENT)
			continue;
		if (fd < 0 || mount(fd_path(tgt, fd), tgt, NULL, MS_BIND | MS_REC, NULL) < 0)
			DIE(in, ORT_MASK, fd < 0 ? -fd : errno, s->readonly[i]);
		close(fd);
		int r, top = open_in_root(rootfd, s->readonly[i], O_PATH);
		if (top < 0 || (r = remount(fd_path(tgt, top), MS_RDONLY | MS_REC)) < 0)
			DIE(in, ORT_MASK, top < 0 ? -top : -r, s->readonly[i]);
		close(top);
	}
}

/* process.cwd beneath one of the mounts (create made the rest, ort_prepare_rootfs), made when
 * missing after the mounts and before any confinement, as the namespace's root, as runc does. */
static void make_cwd(const struct ort_init *in, int rootfd)
{
	const char *cwd = in->s->proc.cwd;
	int fd = open_in_root(rootfd, cwd, O_PATH);
	if (fd >= 0) {
		close(fd);
		return;
	}
	int r = fd == -ENOENT ? ort_make_mount_point(rootfd, cwd, false) : fd;
	if (r < 0)
		DIE(in, ORT_CWD, -r, cwd);
}

/* The rootfs becomes / : bound onto itself (pivot_root needs a mount), the config's mounts,
 * /dev, masks, pivot_root, the old root detached, read-only if asked. */
static void build_root(const struct ort_init *in)
{
	const struct ort_spec *s = in->s;
	unsigned long propag = s->root_propag ? s->root_propag : (MS_PRIVATE | MS_REC);
	/* Nothing we mount propagates back to the host. */
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
		DIE(in, ORT_ROOT, errno, "private mounts");
	/* The rootfs clone is attached on a staging tmpfs of our own (pivot_root wants the new
	 * root to be a mount with a parent), then entered by path so the walk crosses into it. */
	if (mount("tmpfs", ORT_STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=0700") < 0 ||
	    mkdir(ORT_STAGING "/r", 0700) < 0)
		DIE(in, ORT_ROOT, errno, "staging tmpfs");
	int r = (int)syscall(SYS_move_mount, in->root_tree, "", AT_FDCWD, ORT_STAGING "/r", MOVE_MOUNT_F_EMPTY_PATH);
	if (r < 0)
		DIE(in, ORT_ROOT, errno, "attaching the rootfs");
	close(in->root_tree);
	int rootfd = open(ORT_STAGING "/r", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		DIE(in, ORT_ROOT, errno, s->root);
	for (size_t i = 0; i < s->nmounts; i++)
		mount_one(in, rootfd, i);
	populate_dev(in, rootfd);
	make_cwd(in, rootfd);
	if (in->hooks_sync)
		run_create_hooks(in);
	write_sysctls(in, rootfd);
	mask_paths(in, rootfd);
	if (fchdir(rootfd) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 ||
	    chdir("/") < 0)
		DIE(in, ORT_PIVOT, errno, "pivot_root");
	close(rootfd);
	if (mount(NULL, "/", NULL, propag, NULL) < 0)
		DIE(in, ORT_PIVOT, errno, "root propagation");
	if (s->root_ro && (r = remount("/", MS_RDONLY)) < 0)
		DIE(in, ORT_ROOT, -r, "read-only root");
}

/* The terminal: a pty of the container's devpts; its master goes to the console socket. */
void ort_setup_terminal(struct ort_payload *pl)
{
	int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int unlock = 0;
	if (m < 0 || ioctl(m, TIOCSPTLCK, &unlock) < 0)
		ort_die(pl->status_fd, ORT_TTY, errno, "/dev/ptmx");
	int slave = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	if (slave < 0)
		ort_die(pl->status_fd, ORT_TTY, errno, "pty peer");
	struct iovec iov = {.iov_base = (void *)"/dev/ptmx", .iov_len = 9};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &m, sizeof(int));
	if (sendmsg(pl->console_fd, &mh, MSG_NOSIGNAL) < 0)
		ort_die(pl->status_fd, ORT_TTY, errno, "console socket");
	close(m);
	close(pl->console_fd);
	pl->console_fd = -1;
	if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0 || dup2(slave, 0) < 0 || dup2(slave, 1) < 0 ||
	    dup2(slave, 2) < 0)
		ort_die(pl->status_fd, ORT_TTY, errno, "controlling terminal");
	if (slave > 2)
		close(slave);
}

_Noreturn void ort_init_main(struct ort_init *in)
{
	const struct ort_spec *s = in->s;
	char go;
	if (read(in->sync_fd, &go, 1) != 1)
		_exit(1); /* create gave up and says why */
	if (!in->hooks_sync)
		close(in->sync_fd);
	/* Alone and single-threaded: the cheap move (occg.h), before the cgroup namespace is made. */
	int r = cg_join_self(in->cg_tasks, in->cg_ntasks);
	if (r < 0)
		DIE(in, ORT_CGROUP, -r, NULL);
	/* With a user namespace, become its root (the maps exist now): the mounts below are made
	 * by the namespace's root, which owns them. */
	if (s->ns[ORT_NS_USER] || in->plan->add_userns) {
		if (raw_setresgid(0, 0, 0) < 0 || raw_setresuid(0, 0, 0) < 0)
			DIE(in, ORT_IDS, errno, "becoming the namespace's root");
		/* The credential change cleared it; nothing else ties us to create (see above). */
	}
	if (s->ns[ORT_NS_CGROUP] && unshare(CLONE_NEWCGROUP) < 0)
		DIE(in, ORT_CGROUPNS, errno, NULL);
	build_root(in);
	/* A joined UTS namespace (a pod's) has its sandbox's hostname, which only its owner may set. */
	if (s->ns[ORT_NS_UTS] && !s->ns_path[ORT_NS_UTS] && s->hostname &&
	    sethostname(s->hostname, strlen(s->hostname)) < 0)
		DIE(in, ORT_HOST, errno, s->hostname);
	if (in->pl.console_fd >= 0)
		ort_setup_terminal(&in->pl);
	ort_payload_main(&in->pl);
}
