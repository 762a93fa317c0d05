/* stale.c — removes job cgroups whose supervisor is gone (a crash, a SIGKILL); best effort and silent.
 *
 * A job cgroup is named airlock-<owner pid>-<n>-<rand>. Its owner is alive when that pid
 * exists and started before the cgroup was made; a process that started later merely
 * reuses the pid. This test does not depend on the owner's program name, so jobs of any
 * program that embeds the library (a test, a service) are safe from one another.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "util/cleanup.h"

static int64_t cg_boot_time(void)
{
	char buf[8192];
	int n = cg_read_at(AT_FDCWD, "/proc/stat", buf, sizeof(buf));
	if (n <= 0)
		return -1;
	const char *p = strstr(buf, "\nbtime ");
	return p ? strtoll(p + 7, NULL, 10) : -1;
}

/* What /proc said of one owner pid during one sweep. */
struct cg_owner {
	pid_t pid;
	int state; /* OWNER_GONE, OWNER_UNKNOWN or OWNER_STARTED (start holds its start time) */
	uint64_t start;
};
enum {
	OWNER_GONE,
	OWNER_UNKNOWN,
	OWNER_STARTED
};

/* One sweep's owners: a live job has a cgroup in every v1 hierarchy (four here), all named after
 * the same supervisor, so its /proc/PID/stat is read once per sweep, not once per hierarchy. */
struct cg_owners {
	pid_t self; /* getpid() once: it is a system call each time */
	int n;
	struct cg_owner o[32];
};

static struct cg_owner cg_owner_read(pid_t owner)
{
	char path[64], buf[1024];
	struct cg_owner o = {.pid = owner, .state = OWNER_UNKNOWN};
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)owner);
	int n = cg_read_at(AT_FDCWD, path, buf, sizeof(buf));
	if (n == -ENOENT || n == -ESRCH)
		o.state = OWNER_GONE;
	else if (n > 0 && cg_parse_proc_start(buf, &o.start) == 0)
		o.state = OWNER_STARTED;
	return o;
}

static bool cg_owner_alive(struct cg_owners *seen, pid_t owner, int64_t created, int64_t btime)
{
	if (owner == (seen ? seen->self : getpid()))
		return true;
	struct cg_owner o = {.pid = -1};
	for (int i = 0; seen && i < seen->n; i++)
		if (seen->o[i].pid == owner)
			o = seen->o[i];
	if (o.pid != owner) {
		o = cg_owner_read(owner);
		if (seen && seen->n < (int)AL_ARRAY_SIZE(seen->o))
			seen->o[seen->n++] = o;
	}
	if (o.state == OWNER_GONE)
		return false;
	if (o.state == OWNER_UNKNOWN || btime < 0)
		return true; /* cannot tell: leave it */
	return cg_started_before(o.start, sysconf(_SC_CLK_TCK), btime, created);
}

bool cg_owner_alive_since(pid_t owner, int64_t created)
{
	return cg_owner_alive(NULL, owner, created, cg_boot_time());
}

/* A directory stream of dfd's directory (a descriptor of its own: dfd stays for the *at calls). */
static DIR *cg_opendir_at(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* The cgroups inside a dead job's (a held sandbox's: its code's, the execs' inside that, and on v2
 * the leaves of its init, cg_create_child): killed and removed, the deepest first, as deep as a held
 * sandbox makes them (and a level more). */
#define CG_CLEAN_DEPTH 3

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by CG_CLEAN_DEPTH */
static void cg_clean_children(int job_fd, int version, int depth)
{
	DIR *d = cg_opendir_at(job_fd);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		cleanup_close int fd = openat(job_fd, de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (depth < CG_CLEAN_DEPTH)
			cg_clean_children(fd, version, depth + 1);
		cg_kill_dir(fd, version);
		cg_wait_empty(fd, 200);
		(void)unlinkat(job_fd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static unsigned cg_clean_dir(const char *dir, int64_t btime, struct cg_owners *seen)
{
	cleanup_close int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : cg_opendir_at(dfd);
	unsigned found = 0;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t owner;
		struct stat st;
		if (de->d_type != DT_DIR || cg_name_parse(de->d_name, &owner) < 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (cg_owner_alive(seen, owner, (int64_t)st.st_mtim.tv_sec, btime))
			continue;
		cleanup_close int fd = openat(dfd, de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		found++;
		bool v2 = faccessat(fd, "cgroup.events", F_OK, 0) == 0;
		/* Left frozen (a paused sandbox whose keeper died too): a frozen v1 task dies only
		 * once thawed, so signalled first and then thawed, as freeze.c does. */
		cg_kill_once(fd);
		cg_thaw_dir(fd);
		cg_kill_dir(fd, v2 ? 2 : 1);
		cg_wait_empty(fd, 200);
		cg_clean_children(fd, v2 ? 2 : 1, 1);
		(void)unlinkat(dfd, de->d_name, AT_REMOVEDIR); /* still busy: the next start tries again */
	}
	closedir(d);
	return found;
}

void cg_sweep_dirs(const struct host_cgroups *hc, struct cg_sweep *s)
{
	s->n = 0;
	if (hc->v2.found && hc->v2.writable &&
	    snprintf(s->dir[s->n], sizeof(s->dir[0]), "%s/%s", hc->v2.dir, CG_V2_JOBS) < (int)sizeof(s->dir[0]))
		s->n++;
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		const struct host_cg_hier *h = &hc->v1[c];
		bool seen = false;
		for (int p = 0; p < c; p++)
			seen |= hc->v1[p].found && strcmp(hc->v1[p].dir, h->dir) == 0;
		if (h->found && h->writable && !seen)
			memcpy(s->dir[s->n++], h->dir, strlen(h->dir) + 1);
	}
}

unsigned cg_cleanup_stale(void)
{
	struct cg_sweep *s = malloc(sizeof(*s));
	if (!s)
		return 0;
	if (!cg_recent_sweep(s)) {
		struct host_cgroups *hc = malloc(sizeof(*hc)); /* cg_detect fills all of it */
		if (!hc || cg_detect(hc, NULL) < 0) {
			free(hc);
			free(s);
			return 0;
		}
		cg_sweep_dirs(hc, s);
		free(hc);
	}
	int64_t btime = cg_boot_time();
	struct cg_owners owners = {.self = getpid()};
	unsigned found = 0;
	for (int i = 0; i < s->n; i++)
		found += cg_clean_dir(s->dir[i], btime, &owners);
	free(s);
	return found;
}
