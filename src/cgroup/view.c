/* view.c — the job's own cgroups, read-only at /sys/fs/cgroup inside its sandbox, for runtimes that size themselves from them.
 *
 * Runtimes read their limits from the cgroup filesystem: libuv (node's
 * process.constrainedMemory(), src/unix/linux.c) takes the cgroup /proc/self/cgroup names and
 * reads /sys/fs/cgroup/<it>/memory.max and memory.high when that file starts "0::/" (v2), else
 * /sys/fs/cgroup/memory/<it>/memory.limit_in_bytes and memory.soft_limit_in_bytes; a JVM and Go
 * read cpu.max or cpu.cfs_quota_us alike. Without them they size themselves from the whole host.
 * Inside the cgroup namespace <it> is "/" (or, in a held sandbox, an exec's cgroup beneath the
 * cgroup of the sandbox's code, both repeating the sandbox's limits: cgroup.c, cg_inherit_limits;
 * the sandbox's own cgroup at the root has given its memory limit to the code's: sandbox.c).
 *
 * Why this shows nothing but the job: a cgroup filesystem mounted inside a cgroup namespace has
 * the mounting process's cgroup at the namespace's creation as its root (the kernel's
 * cgroup_ns root), and nothing above it can be reached from there. init enters its cgroup
 * namespace only once the supervisor has moved it into the job's cgroup in every hierarchy
 * shown here (cg_view_plan lists no other), so each mount's root is the job's own cgroup.
 * Why it cannot be written: every mount is read-only, and the v1 tmpfs that holds them is
 * made read-only before the payload exists; the job has no capability to remount (and the
 * directories are the supervisor's, 0755, like the limit files in them).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"

#define VIEW_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* dir + "/" + name into buf (no formatting between clone and exec): false when it does not fit. */
static bool view_join(char *buf, size_t size, const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	if (a + 1 + b >= size)
		return false;
	char *p = stpcpy(buf, dir);
	*p++ = '/';
	stpcpy(p, name);
	return true;
}

/* One hierarchy at dir/<name>: 1 when mounted, 0 when the kernel refused it (then no trace). */
static int view_one(int dirfd, const char *dir, const struct cg_view_hier *h)
{
	char path[256];
	if (!view_join(path, sizeof(path), dir, h->name) || mkdirat(dirfd, h->name, 0755) < 0)
		return 0;
	/* v1: the options name the hierarchy by its controllers; they must match its set exactly
	 * (a subset would ask for a new hierarchy, which a user namespace may not create). */
	int r = h->version == 2 ? mount("cgroup2", path, "cgroup2", VIEW_FLAGS, NULL)
				: mount("cgroup", path, "cgroup", VIEW_FLAGS, h->name);
	if (r < 0) {
		unlinkat(dirfd, h->name, AT_REMOVEDIR);
		return 0;
	}
	/* Best effort: the directory serves readers that look for it by its own name. */
	for (int i = 0; i < h->nlinks; i++)
		if (symlinkat(h->name, dirfd, h->links[i]) < 0)
			break;
	return 1;
}

int cg_view_mount(const struct cg_view *v, const char *dir)
{
	if (v->n == 0)
		return 0;
	if (v->whole)
		return mount("cgroup2", dir, "cgroup2", VIEW_FLAGS, NULL) == 0;
	/* v1 (or both): a tmpfs to hold one directory per hierarchy, read-only once populated. */
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=4k,nr_inodes=32") < 0)
		return 0;
	int n = 0, dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; dirfd >= 0 && i < v->n; i++)
		n += view_one(dirfd, dir, &v->h[i]);
	if (dirfd >= 0)
		close(dirfd);
	/* Nothing shown, or the tmpfs would stay writable: take it all away again (a detach takes
	 * the hierarchies mounted in it along). */
	if (n == 0 || mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | VIEW_FLAGS, NULL) < 0) {
		umount2(dir, MNT_DETACH);
		return 0;
	}
	return n;
}
