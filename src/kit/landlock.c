/* landlock.c — Landlock rules for the payload: raw system calls, every ABI from 1 to LL_ABI_MAX.
 *
 * The ruleset is built by init after pivot_root (paths are the sandbox's own) and enforced
 * by the payload after no_new_privs, so init itself stays unconfined and can build it again
 * for the next payload. Everything here that runs in init or the payload is system calls on
 * stack memory only: no allocation, no formatting (see child.c).
 *
 * Rights per ABI (everything the ABI knows is handled, so nothing is allowed by omission):
 *   ABI 1  EXECUTE WRITE_FILE READ_FILE READ_DIR REMOVE_* MAKE_*
 *   ABI 2  + REFER      (cross-directory rename/link; ABI 1 refuses those always, with EXDEV)
 *   ABI 3  + TRUNCATE   (before it, truncate(2) is not Landlock's business: read-only mounts are)
 *   ABI 4  + TCP bind/connect (handled_access_net)
 *   ABI 5  + IOCTL_DEV  (ioctls on character and block devices opened after restriction)
 *   ABI 6  + scopes: abstract UNIX sockets and signals
 *   ABI 7  audit logging flags only: nothing to handle, the defaults are kept
 */
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/openat2.h"

/* Distribution headers lag the kernel (Debian 12's stop at ABI 2): name what we use here. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule	    445
#define SYS_landlock_restrict_self  446
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP	(1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL		    (1ULL << 1)
#endif
#define LL_RULE_PATH_BENEATH 1 /* enum landlock_rule_type */
#define LL_RULE_NET_PORT     2

/* struct landlock_ruleset_attr as of ABI 6. The size passed to the kernel grows with the
 * ABI: an older kernel rejects a longer struct (E2BIG) even when the tail is zero. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;  /* ABI 1 */
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;	     /* ABI 6 */
};

struct ll_net_port_attr { /* struct landlock_net_port_attr (ABI 4) */
	uint64_t allowed_access;
	uint64_t port;
};

#define FS_ABI1                                                                                         \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |    \
	 LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |     \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |  \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* The only rights the kernel accepts in a rule on a non-directory (EINVAL otherwise). */
#define FS_FILE_RIGHTS                                                                               \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
	 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Read-only: see, read and run what is there. No IOCTL_DEV: the read-only /dev holds only
 * the device nodes that have read-write rules of their own. */
#define FS_RO (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* Read-write: everything a compiler, an interpreter or a package manager does in a scratch
 * directory, including running what it built (EXECUTE) and renaming across directories
 * (REFER: Landlock allows it only when both ends carry REFER, and never lets a file gain
 * rights by moving, which identical rules on /workspace and /tmp satisfy). IOCTL_DEV lets
 * terminal programs use /dev/tty and /dev/pts/N (TCGETS, TIOCGWINSZ, ptmx's TIOCGPTN...).
 * Not granted: MAKE_CHAR and MAKE_BLOCK. The payload holds no CAP_MKNOD and every writable
 * mount is nodev, so nothing legitimate needs them; Landlock makes the refusal independent
 * of both. */
#define FS_RW                                                                                                     \
	(FS_RO | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |               \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER |                  \
	 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

uint64_t ll_fs_handled(int abi)
{
	if (abi < 1)
		return 0;
	uint64_t h = FS_ABI1;
	if (abi >= 2)
		h |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		h |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		h |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return h;
}

uint64_t ll_fs_rule_rights(int abi, bool writable, bool is_dir)
{
	uint64_t r = (writable ? FS_RW : FS_RO) & ll_fs_handled(abi);
	return is_dir ? r : r & FS_FILE_RIGHTS;
}

int ll_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	/* ENOSYS: built without Landlock; EOPNOTSUPP: built in but not enabled at boot. */
	return v > 0 ? (int)v : 0;
}

/* O_PATH opens the rule's object without reading it. No magic links: a rule path never
 * needs /proc/<pid>/fd-style jumps, and refusing them keeps the rule on the path named.
 * Ordinary symlinks are followed (/dev/ptmx -> pts/ptmx, /bin -> usr/bin): rules bind to
 * the inode reached, which is what the payload reaches through the same name. */
static int open_rule_path(const char *path)
{
	/* A container's seccomp filter may hide openat2 (ENOSYS, or EPERM in older profiles): airlock's
	 * own does, under which airlock-init builds the ruleset for bwrap and crun. Once seen, every
	 * later rule goes straight to open (one call per rule, not two). A plain static: only the
	 * single-threaded process building the ruleset ever writes it. */
	static bool hidden;
	if (!hidden) {
		int fd = al_openat2(AT_FDCWD, path, O_PATH, 0, RESOLVE_NO_MAGICLINKS);
		hidden = fd == -ENOSYS || fd == -EPERM;
		if (!hidden)
			return fd;
	}
	int fd = open(path, O_PATH | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Adds the rule for fd (an O_PATH or mount descriptor of p) and closes fd. */
static int add_fd_rule(int ruleset, int fd, const struct ll_path *p, int abi, uint64_t handled)
{
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	struct landlock_path_beneath_attr attr = {
		.allowed_access = ll_fs_rule_rights(abi, p->writable, S_ISDIR(st.st_mode)) & handled,
		.parent_fd = fd,
	};
	/* A read-only rule grants nothing when reads are not handled: nothing to add. */
	if (attr.allowed_access && syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &attr, 0) < 0)
		r = -errno;
out:
	close(fd);
	return r;
}

static int add_path_rule(int ruleset, const struct ll_path *p, int abi, uint64_t handled)
{
	int fd = open_rule_path(p->path);
	return fd < 0 ? fd : add_fd_rule(ruleset, fd, p, abi, handled);
}

int ll_mqueue_mount(void)
{
	int fs = (int)syscall(SYS_fsopen, "mqueue", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	int mnt = -1;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	int e = errno;
	close(fs);
	return mnt < 0 ? -e : mnt;
}

/* A read-write rule on the root of this IPC namespace's mqueue filesystem. A mount of it
 * (ll_mqueue_mount: nothing appears in the sandbox's tree) has the same superblock, so the
 * same root inode, as the namespace's internal mount that mq_open uses: Landlock's rule binds
 * to that inode and covers every queue. Safe: the namespace is the sandbox's own, its queues
 * are the job's, and mqueue holds nothing else. mq_fd < 0: make (and drop) a mount here. */
static void add_mqueue_rule(int ruleset, int mq_fd, int abi, uint64_t handled)
{
	int mnt = mq_fd >= 0 ? (int)fcntl(mq_fd, F_DUPFD_CLOEXEC, 0) : ll_mqueue_mount();
	if (mnt < 0)
		return;
	static const struct ll_path mq = {"mqueue", true, true};
	(void)add_fd_rule(ruleset, mnt, &mq, abi, handled); /* closes mnt */
}

int ll_build(const struct ll_spec *spec, struct ll_result *res)
{
	return ll_build_mq(spec, -1, res);
}

int ll_build_mq(const struct ll_spec *spec, int mq_fd, struct ll_result *res)
{
	struct ll_result dummy;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	int abi = ll_abi();
	if (abi == 0)
		return -EOPNOTSUPP;
	if (abi > LL_ABI_MAX)
		abi = LL_ABI_MAX;
	if (spec->max_abi > 0 && abi > spec->max_abi)
		abi = spec->max_abi;

	uint64_t handled = ll_fs_handled(abi);
	/* writes_only: not read, list, execute, nor the two rights Landlock evaluates on every
	 * open (truncate, device ioctls), so a read-only open never walks the path. In the
	 * native layout these restrict nothing: what mount and DAC leave writable is under a
	 * read-write rule, and every device node there already has its ioctls granted. */
	if (spec->writes_only)
		handled &= ~(uint64_t)(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
				       LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_TRUNCATE |
				       LANDLOCK_ACCESS_FS_IOCTL_DEV);
	struct ll_ruleset_attr attr = {.handled_access_fs = handled};
	size_t size = sizeof(attr.handled_access_fs);
	if (abi >= 4) {
		size = offsetof(struct ll_ruleset_attr, scoped);
		/* Handled with no rule but the listed ports: every other TCP bind and connect
		 * fails with EACCES. UDP and other protocols are not Landlock's (seccomp and the
		 * network namespace cover them). */
		if (spec->deny_tcp)
			attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
	}
	if (abi >= 6) {
		size = sizeof(attr);
		/* The payload may signal and reach abstract sockets of its own domain (its
		 * children) only: not init, not the supervisor, not a host-netns listener. */
		if (spec->scope)
			attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	}
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0); /* always O_CLOEXEC */
	if (rs < 0)
		return -errno;

	int r = 0;
	for (size_t i = 0; i < spec->npaths; i++) {
		const struct ll_path *p = &spec->paths[i];
		r = add_path_rule(rs, p, abi, handled);
		if ((r == -ENOENT || r == -ENOTDIR) && p->optional)
			continue; /* an optional path absent on this host needs no rule */
		if (r < 0) {
			res->failed_path = p->path;
			goto fail;
		}
	}
	if (spec->mqueue)
		add_mqueue_rule(rs, mq_fd, abi, handled);
	for (size_t i = 0; attr.handled_access_net && i < spec->ntcp_connect_ports; i++) {
		struct ll_net_port_attr na = {.allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP,
					      .port = spec->tcp_connect_ports[i]};
		if (syscall(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &na, 0) < 0) {
			r = -errno;
			goto fail;
		}
	}
	res->abi = abi;
	res->fs = true;
	res->fs_reads = !spec->writes_only;
	res->net = attr.handled_access_net != 0;
	res->scoped = attr.scoped != 0;
	return rs;
fail:
	close(rs);
	return r;
}

int ll_restrict(int ruleset_fd)
{
	int r = 0;
	/* Flags 0: on ABI 7 the kernel then audits denials only until the next execve, so the
	 * payload's own denials do not flood the host's audit log. */
	if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
		r = -errno;
	close(ruleset_fd);
	return r;
}

/* The native layout (fsplan.c). Read-only: the system directories, the generated /etc, a
 * fresh /proc (reads only: /proc/self/attr, oom_score_adj and the like stay unwritable) and
 * /dev itself. Read-write: the scratch directories and the device nodes programs open for
 * writing. /dev/shm is a symlink to /tmp, covered by the /tmp rule. /dev/ptmx is one to
 * pts/ptmx there (the /dev/pts rule covers it); its own rule is for layouts where it is a
 * device node. /dev/fd and /dev/std* go through /proc/self/fd to the real file, whose own
 * rule decides (pipes and sockets are outside Landlock's reach). The root itself is
 * airlock's own read-only tmpfs of mount points and the generated layout: reading it lets
 * programs list / (ls, find, os.walk) and reaches nothing the sandbox was not given. */
static const struct ll_path default_paths[] = {
	{"/", false, false},
	{"/usr", false, true}, /* an image may have none */
	{"/bin", false, true},
	{"/sbin", false, true},
	{"/lib", false, true},
	{"/lib32", false, true},
	{"/lib64", false, true},
	{"/libx32", false, true},
	{"/etc", false, false},
	{"/proc", false, false},
	{"/dev", false, false},
	{"/workspace", true, false},
	{"/tmp", true, false},
	{"/dev/null", true, true},
	{"/dev/zero", true, true},
	{"/dev/full", true, true},
	{"/dev/random", true, true},
	{"/dev/urandom", true, true},
	{"/dev/tty", true, true},
	{"/dev/pts", true, false},
	{"/dev/ptmx", true, true},
	/* native: a link to /tmp; oci: a tmpfs of its own, capped by --disk like /tmp */
	{"/dev/shm", true, true},
	/* oci: the IPC namespace's mqueue filesystem (bundle.c; native adds its root itself) */
	{"/dev/mqueue", true, true},
};

int ll_default_paths(struct ll_path **out, size_t *n, const char *const *extra_ro, size_t nro,
		     const char *const *extra_rw, size_t nrw)
{
	size_t base = AL_ARRAY_SIZE(default_paths);
	if (nro > SIZE_MAX / 2 - base || nrw > SIZE_MAX / 2)
		return -ENOMEM;
	struct ll_path *v = calloc(base + nro + nrw, sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, default_paths, sizeof(default_paths));
	size_t k = base;
	/* Extra binds must exist (their mount would have failed otherwise): not optional. */
	for (size_t i = 0; i < nro; i++)
		v[k++] = (struct ll_path){.path = extra_ro[i], .writable = false};
	for (size_t i = 0; i < nrw; i++)
		v[k++] = (struct ll_path){.path = extra_rw[i], .writable = true};
	*out = v;
	*n = k;
	return 0;
}
