/* cgroup.c — the cgroup layout detector: parse /proc/self, then look (read-only) at our own cgroup directories. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/host.h"
#include "util/cleanup.h"
#include "util/error.h"

static void host_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define cleanup_fclose __attribute__((cleanup(host_fclosep)))

static int host_parse_file(const char *path, int (*parse)(FILE *, struct host_cgroups *, struct al_error *),
			   struct host_cgroups *cg, struct al_error *err)
{
	cleanup_fclose FILE *f = fopen(path, "re");
	if (!f)
		return al_err_sys(err, errno, "open %s", path);
	return parse(f, cg, err);
}

int host_read_small(int dirfd, const char *name, char *buf, size_t size)
{
	cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Writable means what the cgroup module will do: mkdir a child here and write pids
 * into cgroup.procs (moving a process needs write access at the common ancestor).
 * AT_EACCESS checks with our effective ids; a read-only mount shows as EROFS. */
static void host_hier_inspect(struct host_cg_hier *h, int *dirfd_out)
{
	h->found = h->writable = false;
	if (!h->dir[0])
		return;
	int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	h->found = true;
	h->writable = faccessat(fd, ".", W_OK, AT_EACCESS) == 0 && faccessat(fd, "cgroup.procs", W_OK, AT_EACCESS) == 0;
	if (dirfd_out)
		*dirfd_out = fd;
	else
		close(fd);
}

int host_cg_detect(struct host_cgroups *cg, struct al_error *err)
{
	memset(cg, 0, sizeof(*cg));
	int r = host_parse_file("/proc/self/mountinfo", host_cg_parse_mountinfo, cg, err);
	if (r == 0)
		r = host_parse_file("/proc/self/cgroup", host_cg_parse_proc_cgroup, cg, err);
	if (r == 0)
		r = host_cg_resolve(cg, err);
	if (r < 0) {
		al_err_prefix(err, "cgroup detection");
		return r;
	}
	cleanup_close int v2fd = -1;
	host_hier_inspect(&cg->v2, &v2fd);
	if (v2fd >= 0) {
		/* Missing files (very old kernels) leave the lists empty: nothing usable. */
		(void)host_read_small(v2fd, "cgroup.controllers", cg->v2_controllers, sizeof(cg->v2_controllers));
		(void)host_read_small(v2fd, "cgroup.subtree_control", cg->v2_subtree, sizeof(cg->v2_subtree));
	}
	for (int c = 0; c < HOST_CG__COUNT; c++)
		host_hier_inspect(&cg->v1[c], NULL);
	host_cg_choose(cg);
	return 0;
}
