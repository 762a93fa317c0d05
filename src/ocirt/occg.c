/* occg.c — a container's cgroup at the config's cgroupsPath, in every mounted hierarchy (v1 and v2), as the shim expects it. */
#include "occg.h"

#include <errno.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "util/cleanup.h"
#include "util/error.h"

/* Hierarchies worth joining: cpuset is left out (its cpus and mems would have to be copied
 * down first), and so are those nobody reads for a container. */
static bool wanted_v1(const char *opts, char *name, size_t size)
{
	static const char *const ctrls[] = {"memory",  "pids",	"cpu",	   "cpuacct",
					    "freezer", "blkio", "devices", "name=systemd"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(ctrls); i++) {
		char *p = strstr(opts, ctrls[i]);
		size_t n = strlen(ctrls[i]);
		if (p && (p == opts || p[-1] == ',') && (p[n] == 0 || p[n] == ',' || p[n] == ' ')) {
			snprintf(name, size, "%s", ctrls[i]);
			return true;
		}
	}
	return false;
}

int ort_cg_each(int (*fn)(const char *dir, const char *ctrl, int version, void *arg), void *arg, const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char line[4096];
	int r = 0, n = 0;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char mnt[1024], fstype[64], super[1024], ctrl[32] = "";
		/* id parent maj:min root mountpoint options [optional...] - fstype source superoptions */
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2)
			continue;
		int version = strcmp(fstype, "cgroup2") == 0 ? 2 : strcmp(fstype, "cgroup") == 0 ? 1 : 0;
		if (!version || (version == 1 && !wanted_v1(super, ctrl, sizeof(ctrl))))
			continue;
		/* mountinfo keeps a mount that another one over the same path hides (a tmpfs over a
		 * hybrid host's /sys/fs/cgroup/unified, as crun's users do): only what the path shows now
		 * is a hierarchy to use. */
		struct statfs sf;
		if (statfs(mnt, &sf) < 0 ||
		    (unsigned long)sf.f_type != (version == 2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC))
			continue;
		char dir[2048];
		snprintf(dir, sizeof(dir), "%s%s", mnt, path);
		r = fn(dir, version == 2 ? "unified" : ctrl, version, arg);
		n++;
	}
	fclose(f);
	return r < 0 ? r : n;
}

static int mkdir_p(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int r = mkdir(dir, 0755);
		*p = '/';
		if (r < 0 && errno != EEXIST)
			return -errno;
	}
	return mkdir(dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static int write_file(const char *dir, const char *file, const char *value)
{
	char p[2200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	cleanup_close int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write(fd, value, strlen(value)) < 0 ? -errno : 0;
}

static int read_file(const char *dir, const char *file, char *buf, size_t size)
{
	char p[2200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	cleanup_close int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

/* v2: the controllers enabled for the children of each ancestor (best effort: a controller
 * that cannot be had there fails its limit below, which is what counts). */
static void v2_enable(const char *dir)
{
	char d[2048];
	snprintf(d, sizeof(d), "%s", dir);
	char *mnt_end = strstr(d, "/sys/fs/cgroup");
	char *p = mnt_end ? strchr(mnt_end + strlen("/sys/fs/cgroup"), '/') : NULL;
	for (; p; p = strchr(p + 1, '/')) {
		*p = 0;
		write_file(d, "cgroup.subtree_control", "+memory +pids +cpu");
		*p = '/';
	}
}

struct cg_create_arg {
	const struct ort_resources *res;
	struct al_error *err;
	bool mem, pids, cpu; /* applied somewhere */
};

static int v1_limits(const char *dir, const char *ctrl, struct cg_create_arg *a)
{
	char v[64];
	int r = 0;
	if (strcmp(ctrl, "memory") == 0 && a->res->memory >= 0) {
		snprintf(v, sizeof(v), "%" PRId64, a->res->memory);
		if ((r = write_file(dir, "memory.limit_in_bytes", v)) == 0)
			a->mem = true;
	} else if (strcmp(ctrl, "pids") == 0 && a->res->pids > 0) {
		snprintf(v, sizeof(v), "%" PRId64, a->res->pids);
		if ((r = write_file(dir, "pids.max", v)) == 0)
			a->pids = true;
	} else if (strcmp(ctrl, "cpu") == 0) {
		if (a->res->cpu_period) {
			snprintf(v, sizeof(v), "%" PRIu64, a->res->cpu_period);
			r = write_file(dir, "cpu.cfs_period_us", v);
		}
		if (r == 0 && a->res->cpu_quota > 0) {
			snprintf(v, sizeof(v), "%" PRId64, a->res->cpu_quota);
			if ((r = write_file(dir, "cpu.cfs_quota_us", v)) == 0)
				a->cpu = true;
		}
		if (r == 0 && a->res->cpu_shares) {
			snprintf(v, sizeof(v), "%" PRIu64, a->res->cpu_shares);
			r = write_file(dir, "cpu.shares", v);
		}
	}
	return r;
}

/* v2: only the controllers this cgroup has (a hybrid host's unified hierarchy has none; its
 * limits are then the v1 hierarchies' business, and ort_cg_apply checks one took each). */
static int v2_limits(const char *dir, struct cg_create_arg *a)
{
	char v[64], ctrls[256];
	if (read_file(dir, "cgroup.controllers", ctrls, sizeof(ctrls)) < 0)
		return 0;
	int r = 0;
	if (a->res->memory >= 0 && strstr(ctrls, "memory")) {
		snprintf(v, sizeof(v), "%" PRId64, a->res->memory);
		if ((r = write_file(dir, "memory.max", v)) == 0)
			a->mem = true;
		write_file(dir, "memory.swap.max", "0");
	}
	if (r == 0 && a->res->pids > 0 && strstr(ctrls, "pids")) {
		snprintf(v, sizeof(v), "%" PRId64, a->res->pids);
		if ((r = write_file(dir, "pids.max", v)) == 0)
			a->pids = true;
	}
	if (r == 0 && a->res->cpu_quota > 0 && strstr(ctrls, "cpu")) {
		snprintf(v, sizeof(v), "%" PRId64 " %" PRIu64, a->res->cpu_quota,
			 a->res->cpu_period ? a->res->cpu_period : 100000);
		if ((r = write_file(dir, "cpu.max", v)) == 0)
			a->cpu = true;
	}
	if (r == 0 && a->res->cpu_shares && strstr(ctrls, "cpu")) {
		/* The OCI spec's shares (2..262144) as v2's weight (1..10000), as runc converts. */
		uint64_t s = a->res->cpu_shares < 2 ? 2 : a->res->cpu_shares > 262144 ? 262144 : a->res->cpu_shares;
		snprintf(v, sizeof(v), "%" PRIu64, 1 + ((s - 2) * 9999) / 262142);
		r = write_file(dir, "cpu.weight", v);
	}
	return r;
}

static int create_one(const char *dir, const char *ctrl, int version, void *arg)
{
	struct cg_create_arg *a = arg;
	char d[2048];
	snprintf(d, sizeof(d), "%s", dir);
	int r = mkdir_p(d);
	if (r < 0)
		return al_err(a->err, -r, "cgroup %s: %s", dir, strerror(-r));
	if (version == 2)
		v2_enable(dir);
	if ((r = version == 2 ? v2_limits(dir, a) : v1_limits(dir, ctrl, a)) < 0)
		return al_err(a->err, -r, "cgroup %s: setting a limit: %s", dir, strerror(-r));
	return 0;
}

int ort_cg_apply(const char *path, const struct ort_resources *res, struct al_error *err)
{
	struct cg_create_arg a = {.res = res, .err = err};
	int r = ort_cg_each(create_one, &a, path);
	if (r < 0)
		return r;
	/* An asked limit that no hierarchy took is refused, never silently dropped. */
	if ((res->memory >= 0 && !a.mem) || (res->pids > 0 && !a.pids) || (res->cpu_quota > 0 && !a.cpu))
		return al_err(err, ENOTSUP,
			      "cgroup %s: a memory, pids or cpu limit of the config has no controller here", path);
	return 0;
}

static int open_join(const char *dir, const char *ctrl, int version, void *arg)
{
	(void)ctrl;
	struct ort_cg_join *j = arg;
	char p[2200];
	snprintf(p, sizeof(p), "%s/tasks", dir);
	if (version == 2)
		return (j->v2 = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ? -errno : 0;
	if (j->n == ORT_CG_MAX)
		return -E2BIG;
	return (j->tasks[j->n] = open(p, O_WRONLY | O_CLOEXEC)) < 0 ? -errno : (j->n++, 0);
}

int ort_cg_join_open(const char *path, struct ort_cg_join *j, struct al_error *err)
{
	*j = (struct ort_cg_join){.v2 = -1};
	int r = ort_cg_each(open_join, j, path);
	if (r < 0) {
		ort_cg_join_close(j);
		return al_err(err, -r, "cgroup %s: opening it to join: %s", path, strerror(-r));
	}
	return 0;
}

void ort_cg_join_close(struct ort_cg_join *j)
{
	if (j->v2 >= 0)
		close(j->v2);
	for (int i = 0; i < j->n; i++)
		close(j->tasks[i]);
	*j = (struct ort_cg_join){.v2 = -1};
}

/* ---- reading and acting on the whole container ------------------------------------------- */

struct pid_list {
	pid_t *pids;
	size_t n, cap;
	bool done;
};

static int collect(const char *dir, const char *ctrl, int version, void *arg)
{
	struct pid_list *l = arg;
	/* One hierarchy that holds every process is enough: pids (v1) or v2's. */
	if (l->done || !(version == 2 || strcmp(ctrl, "pids") == 0 || strcmp(ctrl, "memory") == 0))
		return 0;
	char p[2200];
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	char line[32];
	while (fgets(line, sizeof(line), f)) {
		char *end;
		long v = strtol(line, &end, 10);
		if (end == line || v <= 0)
			continue;
		if (l->n == l->cap) {
			size_t c = l->cap ? l->cap * 2 : 32;
			pid_t *np = realloc(l->pids, c * sizeof(*np));
			if (!np) {
				fclose(f);
				return -ENOMEM;
			}
			l->pids = np;
			l->cap = c;
		}
		l->pids[l->n++] = (pid_t)v;
	}
	fclose(f);
	l->done = true;
	return 0;
}

int ort_cg_pids(const char *path, pid_t **out, size_t *n)
{
	struct pid_list l = {0};
	int r = ort_cg_each(collect, &l, path);
	if (r < 0) {
		free(l.pids);
		return r;
	}
	*out = l.pids;
	*n = l.n;
	return 0;
}

int ort_cg_kill(const char *path, int sig)
{
	/* A frozen process takes SIGKILL only once thawed. */
	for (int round = 0; round < 50; round++) {
		pid_t *pids = NULL;
		size_t n = 0;
		int r = ort_cg_pids(path, &pids, &n);
		if (r < 0)
			return r;
		for (size_t i = 0; i < n; i++)
			kill(pids[i], sig);
		free(pids);
		if (sig != SIGKILL || n == 0)
			return 0;
		ort_cg_freeze(path, false);
		nanosleep(&(struct timespec){.tv_nsec = 10L * 1000 * 1000}, NULL);
	}
	return -EBUSY;
}

static int freeze_one(const char *dir, const char *ctrl, int version, void *arg)
{
	bool on = *(bool *)arg;
	if (version == 1 && strcmp(ctrl, "freezer") == 0)
		return write_file(dir, "freezer.state", on ? "FROZEN" : "THAWED");
	/* v2's freezer is cgroup.freeze (Linux 5.2+; none before: the v1 freezer, if any, does it). */
	int r = version == 2 ? write_file(dir, "cgroup.freeze", on ? "1" : "0") : 0;
	return r == -ENOENT ? 0 : r;
}

int ort_cg_freeze(const char *path, bool on)
{
	int r = ort_cg_each(freeze_one, &on, path);
	return r < 0 ? r : 0;
}

static int frozen_one(const char *dir, const char *ctrl, int version, void *arg)
{
	char buf[64] = "";
	if (version == 1 && strcmp(ctrl, "freezer") == 0 && read_file(dir, "freezer.state", buf, sizeof(buf)) > 0 &&
	    strncmp(buf, "FROZEN", 6) == 0)
		*(bool *)arg = true;
	if (version == 2 && read_file(dir, "cgroup.freeze", buf, sizeof(buf)) > 0 && buf[0] == '1')
		*(bool *)arg = true;
	return 0;
}

bool ort_cg_frozen(const char *path)
{
	bool f = false;
	ort_cg_each(frozen_one, &f, path);
	return f;
}

static int remove_one(const char *dir, const char *ctrl, int version, void *arg)
{
	(void)ctrl;
	(void)version;
	if (rmdir(dir) < 0 && errno == EBUSY)
		(*(int *)arg)++;
	return 0;
}

void ort_cg_remove(const char *path)
{
	/* A killed process stays in its cgroup until its parent (the shim) reaps it: rounds over
	 * every hierarchy, up to a second in all, rather than a wait per hierarchy. */
	for (int round = 0; round < 100; round++) {
		int busy = 0;
		ort_cg_each(remove_one, &busy, path);
		if (!busy)
			return;
		nanosleep(&(struct timespec){.tv_nsec = 10L * 1000 * 1000}, NULL);
	}
}

static uint64_t keyed(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, n) == 0 && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

static int stats_one(const char *dir, const char *ctrl, int version, void *arg)
{
	json_t *d = arg;
	char buf[4096];
	if (version == 1 && strcmp(ctrl, "memory") == 0) {
		uint64_t use =
			read_file(dir, "memory.usage_in_bytes", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		uint64_t lim =
			read_file(dir, "memory.limit_in_bytes", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		uint64_t max =
			read_file(dir, "memory.max_usage_in_bytes", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		uint64_t ooms = 0;
		if (read_file(dir, "memory.oom_control", buf, sizeof(buf)) > 0)
			cg_parse_oom_control(buf, &ooms);
		json_object_set_new(d, "memory",
				    json_pack("{s:{s:I,s:I,s:I},s:I}", "usage", "usage", (json_int_t)use, "limit",
					      (json_int_t)lim, "max", (json_int_t)max, "oom_kills", (json_int_t)ooms));
	} else if (version == 1 && strcmp(ctrl, "cpuacct") == 0) {
		uint64_t total = read_file(dir, "cpuacct.usage", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		json_object_set_new(d, "cpu", json_pack("{s:{s:I}}", "usage", "total", (json_int_t)total));
	} else if (version == 1 && strcmp(ctrl, "pids") == 0) {
		uint64_t cur = read_file(dir, "pids.current", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		uint64_t lim = read_file(dir, "pids.max", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		json_object_set_new(d, "pids",
				    json_pack("{s:I,s:I}", "current", (json_int_t)cur, "limit", (json_int_t)lim));
	} else if (version == 2 && read_file(dir, "cgroup.controllers", buf, sizeof(buf)) > 0 &&
		   strstr(buf, "memory")) {
		uint64_t use = read_file(dir, "memory.current", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		uint64_t lim = read_file(dir, "memory.max", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		uint64_t peak = read_file(dir, "memory.peak", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0,
			 ooms = 0;
		if (read_file(dir, "memory.events", buf, sizeof(buf)) > 0)
			cg_parse_memory_events(buf, &ooms);
		json_object_set_new(d, "memory",
				    json_pack("{s:{s:I,s:I,s:I},s:I}", "usage", "usage", (json_int_t)use, "limit",
					      (json_int_t)lim, "max", (json_int_t)peak, "oom_kills", (json_int_t)ooms));
		uint64_t usec = read_file(dir, "cpu.stat", buf, sizeof(buf)) > 0 ? keyed(buf, "usage_usec") : 0;
		json_object_set_new(d, "cpu", json_pack("{s:{s:I}}", "usage", "total", (json_int_t)usec * 1000));
		uint64_t cur = read_file(dir, "pids.current", buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
		json_object_set_new(d, "pids", json_pack("{s:I}", "current", (json_int_t)cur));
	}
	return 0;
}

int ort_cg_stats(const char *path, json_t **out)
{
	json_t *d = json_object();
	if (!d)
		return -ENOMEM;
	int r = ort_cg_each(stats_one, d, path);
	if (r < 0) {
		json_decref(d);
		return r;
	}
	*out = d;
	return 0;
}
