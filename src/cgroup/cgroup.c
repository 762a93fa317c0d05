/* cgroup.c — one cgroup per job: pick v2 or v1 per controller, create, attach, kill, account, remove.
 *
 * Where job cgroups go (see cg_v2.c for the v2 details)
 *
 *   v2  <our delegated cgroup>/airlock.jobs/airlock-<pid>-<n>-<rand>
 *       airlock.jobs exists because a non-root cgroup holding processes cannot enable
 *       controllers for its children; the processes of our cgroup move to airlock.self.
 *   v1  <our cgroup in each hierarchy>/airlock-<pid>-<n>-<rand>, once per hierarchy
 *       (co-mounted controllers such as cpu,cpuacct share one directory).
 *
 * Every directory is beneath our own cgroup, where the host delegated to us; nothing is
 * created at a hierarchy's root unless that is where we are. The supervisor pid in the
 * name lets cg_cleanup_stale (stale.c) tell whether the owner is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "util/cleanup.h"
#include "util/error.h"

#define CG_MAX_HIER (1 + HOST_CG__COUNT) /* the unified hierarchy plus one per v1 controller */

struct cg_hier {
	int version;	       /* 1 or 2 */
	unsigned ctrls;	       /* CG_BIT(enum host_cg_ctrl) of the controllers used through it */
	int parent_fd;	       /* the directory holding the job cgroup (O_PATH), until it is made */
	int fd;		       /* the job cgroup (O_PATH | O_DIRECTORY) */
	char path[PATH_MAX];   /* the job cgroup, for messages and cg_job_path */
	char v1_ctrls[64];     /* v1: the hierarchy's controllers (host_cg_hier.ctrls), for cg_view_plan */
	struct cg_files files; /* its accounting files, open once read (cg_usage) */
	/* Its limit files as a child repeats them (cg_inherit_limits), read once: "" where absent. */
	bool limits_read;
	char limits[5][32];
};

struct cg_job {
	char name[64];
	int nh;
	struct cg_hier h[CG_MAX_HIER];
	struct cg_enforced enf;
	struct cg_limits lim; /* what cg_make sets */
	int made;	      /* 0: planned; 1: made; -errno: cg_make failed */
	char no_freezer[200]; /* lim.freezer asked and none usable: why (cg_freezer_why) */
};

/* ---- layout ----------------------------------------------------------------------- */

/* Same test as the detector's: we can create a child and move processes here. */
static bool cg_dir_writable(const char *dir)
{
	cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 && faccessat(fd, ".", W_OK, AT_EACCESS) == 0 &&
	       faccessat(fd, "cgroup.procs", W_OK, AT_EACCESS) == 0;
}

int cg_detect(struct host_cgroups *hc, struct al_error *err)
{
	int r = host_cg_detect(hc, err);
	if (r < 0)
		return r;
	/* An earlier airlock moved the processes of our delegated cgroup into CG_V2_SELF: that
	 * is where we (its descendants) now sit, and the delegated cgroup is its parent. */
	char *slash = strrchr(hc->v2.dir, '/');
	if (!hc->v2.dir[0] || !slash || strcmp(slash + 1, CG_V2_SELF) != 0)
		return 0;
	*slash = '\0';
	cleanup_close int fd = open(hc->v2.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	hc->v2.found = fd >= 0;
	hc->v2.writable = fd >= 0 && cg_dir_writable(hc->v2.dir);
	hc->v2_controllers[0] = hc->v2_subtree[0] = '\0';
	if (fd >= 0) {
		cg_read_at(fd, "cgroup.controllers", hc->v2_controllers, sizeof(hc->v2_controllers));
		cg_read_at(fd, "cgroup.subtree_control", hc->v2_subtree, sizeof(hc->v2_subtree));
		hc->v2_controllers[strcspn(hc->v2_controllers, "\n")] = '\0';
		hc->v2_subtree[strcspn(hc->v2_subtree, "\n")] = '\0';
	}
	host_cg_choose(hc);
	return 0;
}

/* snprintf for messages, where truncation is acceptable. */
__attribute__((format(printf, 3, 4))) static void cg_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized): va_start is right above
	va_end(ap);
}

/* Why controller c cannot be had, for the error message: one clause per hierarchy, and what the
 * user's systemd said when it was asked (sdmsg). */
static void cg_why(const struct host_cgroups *hc, enum host_cg_ctrl c, int v2err, const char *v2msg, const char *sdmsg,
		   char *buf, size_t size)
{
	const char *name = host_cg_ctrl_name(c);
	const struct host_cg_hier *v2 = &hc->v2, *v1 = &hc->v1[c];
	char a[160], b[160];
	if (!v2->mounted)
		cg_fmt(a, sizeof(a), "no cgroup2 mount");
	else if (!v2->dir[0] || !v2->found)
		cg_fmt(a, sizeof(a), "our cgroup is not visible under %.60s", v2->mount);
	else if (!v2->writable)
		cg_fmt(a, sizeof(a), "%.100s is not writable", v2->dir);
	else if (c != HOST_CG_FREEZER && !host_cg_list_has(hc->v2_controllers, name))
		cg_fmt(a, sizeof(a), "%s not delegated to %.100s", name, v2->dir);
	else if (v2msg[0])
		cg_fmt(a, sizeof(a), "%.150s", v2msg);
	else
		cg_fmt(a, sizeof(a), "cannot enable it under %.80s: %s", v2->dir, strerror(v2err ? v2err : EPERM));
	if (!v1->mounted)
		cg_fmt(b, sizeof(b), "no %s hierarchy", name);
	else if (!v1->dir[0] || !v1->found)
		cg_fmt(b, sizeof(b), "our cgroup is not visible under %.60s", v1->mount);
	else
		cg_fmt(b, sizeof(b), "%.100s is not writable", v1->dir);
	/* What the user's systemd answered first: it is what the user can act on, and the message
	 * is cut at AL_ERROR_MAX. */
	cg_fmt(buf, size, "%.120s%sv2: %s; v1: %s", sdmsg, sdmsg[0] ? "; " : "", a, b);
}

/* Controllers joined even without a limit: memory and CPU time are accounted for every job. */
static bool cg_wanted(const struct cg_limits *lim, enum host_cg_ctrl c)
{
	switch (c) {
	case HOST_CG_MEMORY:
	case HOST_CG_CPUACCT:
		return true;
	case HOST_CG_PIDS:
		return lim->need_pids || lim->pids != AL_UNLIMITED;
	case HOST_CG_CPU:
		return lim->need_cpu || lim->cpu_millis != AL_UNLIMITED;
	case HOST_CG_FREEZER:
		return lim->freezer;
	case HOST_CG__COUNT:
		break;
	}
	return false;
}

static bool cg_needed(const struct cg_limits *lim, enum host_cg_ctrl c)
{
	return (c == HOST_CG_MEMORY && lim->need_memory) || (c == HOST_CG_PIDS && lim->need_pids) ||
	       (c == HOST_CG_CPU && lim->need_cpu);
}

/* ---- a scope from the user's systemd (host/systemd.c) --------------------------------- */

/* The limit controllers with a value, or required, that no usable hierarchy gives us. */
static unsigned cg_missing(const struct host_cgroups *hc, const struct cg_limits *lim)
{
	const uint64_t value[] = {
		[HOST_CG_MEMORY] = lim->memory_bytes, [HOST_CG_PIDS] = lim->pids, [HOST_CG_CPU] = lim->cpu_millis};
	unsigned m = 0;
	for (int c = HOST_CG_MEMORY; c <= HOST_CG_CPU; c++)
		if (hc->use[c] == HOST_CG_NONE && (cg_needed(lim, c) || value[c] != AL_UNLIMITED))
			m |= CG_BIT(c);
	return m;
}

/* Under the lock: unless another thread (airlock serve starts sandboxes in parallel) has moved
 * us meanwhile, ask for the scope, then look at the layout again. */
static int cg_from_systemd_locked(struct host_cgroups *hc, const struct cg_limits *lim, char *note, size_t size,
				  struct al_error *err)
{
	int r = cg_detect(hc, err);
	if (r < 0 || !cg_missing(hc, lim))
		return r;
	char unit[128];
	struct al_error serr = {0};
	if (host_systemd_scope(unit, sizeof(unit), &serr) < 0) {
		cg_fmt(note, size, "%s", serr.msg);
		return 0;
	}
	if ((r = cg_detect(hc, err)) < 0)
		return r;
	cg_fmt(note, size, "in user systemd scope %.60s", unit);
	return 0;
}

/* As an ordinary user whose cgroup cannot hold a limit: move into a delegated scope of the
 * user's systemd, where it could bring the missing controllers, and look at the layout again.
 * What was tried, and why it did not help, goes to note for the refusal. Root never asks: its
 * cgroups are the host's (a v1 hierarchy, or the v2 tree it may write), and a user manager is
 * no business of root's. */
static int cg_from_systemd(struct host_cgroups *hc, const struct cg_limits *lim, char *note, size_t size,
			   struct al_error *err)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	unsigned missing = cg_missing(hc, lim);
	if (!missing || lim->no_systemd_scope || geteuid() == 0)
		return 0;
	char root[256] = "";
	cleanup_close int fd = hc->v2.mounted ? open(hc->v2.mount, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd >= 0)
		cg_read_at(fd, "cgroup.controllers", root, sizeof(root));
	if (!host_cg_scope_gain(hc, root, missing)) {
		/* Hybrid hosts: the controllers are v1's; a v2 scope would hold none of them. */
		if (hc->v2.mounted)
			cg_fmt(note, size, "user systemd not asked: no such controller in cgroup2 here");
		return 0;
	}
	pthread_mutex_lock(&lock); /* one scope per process, not one per racing thread */
	int r = cg_from_systemd_locked(hc, lim, note, size, err);
	pthread_mutex_unlock(&lock);
	return r;
}

/* ---- create ----------------------------------------------------------------------- */

static struct cg_job *cg_job_new(void)
{
	static unsigned long counter;
	struct cg_job *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return NULL;
	for (int i = 0; i < CG_MAX_HIER; i++)
		cg->h[i].fd = cg->h[i].parent_fd = -1;
	uint32_t rnd;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint32_t)time(NULL) ^ (uint32_t)(uintptr_t)cg;
	unsigned long n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	cg_name_format(cg->name, sizeof(cg->name), getpid(), n, rnd);
	return cg;
}

/* A new O_PATH descriptor of the cgroup directory holding dirfd's, or -1. */
static int cg_parent_of(int dirfd)
{
	return dirfd < 0 ? -1 : openat(dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* Records the job directory under parent_fd (taken over); cg_make_dir makes it. */
static int cg_add_hier(struct cg_job *cg, int version, unsigned ctrls, int parent_fd, const char *parent,
		       struct al_error *err)
{
	struct cg_hier *h = &cg->h[cg->nh];
	h->parent_fd = parent_fd;
	h->version = version;
	h->ctrls = ctrls;
	cg->nh++;
	const char *name = cg->name;
	if (strlen(parent) + 1 + strlen(name) >= sizeof(h->path))
		return al_err(err, ENAMETOOLONG, "cgroup: path too long under %.64s", parent);
	stpcpy(stpcpy(stpcpy(h->path, parent), "/"), name);
	return 0;
}

static int cg_make_dir(const struct cg_job *cg, struct cg_hier *h, struct al_error *err)
{
	/* 0755: the job's processes never get write access to their own limits (on v2 a
	 * writable directory would let an unprivileged owner move processes around). */
	if (mkdirat(h->parent_fd, cg->name, 0755) < 0)
		return al_err_sys(err, errno, "cgroup: mkdir %s", h->path);
	h->fd = openat(h->parent_fd, cg->name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	h->files.dirfd = h->fd;
	if (h->fd < 0) {
		int e = errno;
		unlinkat(h->parent_fd, cg->name, AT_REMOVEDIR);
		return al_err_sys(err, e, "cgroup: open %s", h->path);
	}
	/* Reached through ".." from here on (cg_hier_parent_open): a held sandbox keeps one
	 * descriptor less per hierarchy, and a server's descriptors bound how many it holds. */
	close(h->parent_fd);
	h->parent_fd = -1;
	return 0;
}

static int cg_add_v1(struct cg_job *cg, const struct host_cgroups *hc, enum host_cg_ctrl c, struct al_error *err)
{
	const char *dir = hc->v1[c].dir;
	for (int i = 0; i < cg->nh; i++) {
		if (cg->h[i].version != 1)
			continue;
		size_t pl = strlen(cg->h[i].path) - strlen(cg->name) - 1;
		if (strlen(dir) == pl && strncmp(cg->h[i].path, dir, pl) == 0) {
			cg->h[i].ctrls |= CG_BIT(c); /* co-mounted with a controller already joined */
			return 0;
		}
	}
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return al_err_sys(err, errno, "cgroup %s: open %s", host_cg_ctrl_name(c), dir);
	memcpy(cg->h[cg->nh].v1_ctrls, hc->v1[c].ctrls, sizeof(hc->v1[c].ctrls));
	return cg_add_hier(cg, 1, CG_BIT(c), fd, dir, err);
}

/* A link per controller of a co-mounted v1 hierarchy ("cpu,cpuacct"), so that a reader of
 * /sys/fs/cgroup/cpu finds it as on the host; named hierarchies ("name=x") get none. */
static void cg_view_links(struct cg_view_hier *h)
{
	h->nlinks = 0;
	if (!strchr(h->name, ','))
		return;
	for (const char *p = h->name; *p && h->nlinks < (int)AL_ARRAY_SIZE(h->links);) {
		size_t len = strcspn(p, ",");
		if (len < sizeof(h->links[0]) && !memchr(p, '=', len)) {
			memcpy(h->links[h->nlinks], p, len);
			h->links[h->nlinks++][len] = '\0';
		}
		p += len + (p[len] == ',');
	}
}

void cg_view_plan(const struct cg_job *cg, struct cg_view *v)
{
	memset(v, 0, sizeof(*v));
	for (int i = 0; cg && i < cg->nh && v->n < CG_VIEW_MAX; i++) {
		const struct cg_hier *h = &cg->h[i];
		if (h->version == 1 && !h->v1_ctrls[0])
			continue; /* its options are unknown (too long to keep): not mountable */
		if (h->version == 1 && h->ctrls == CG_BIT(HOST_CG_FREEZER))
			continue; /* the server's to pause with, nothing a runtime sizes itself by */
		struct cg_view_hier *out = &v->h[v->n++];
		out->version = h->version;
		out->path = h->path;
		/* "unified": the v2 hierarchy's name beside v1 ones, as systemd and Docker call it. */
		const char *name = h->version == 2 ? "unified" : h->v1_ctrls;
		memcpy(out->name, name, strlen(name) + 1); /* both shorter than name[] */
		if (h->version == 1)
			cg_view_links(out);
	}
	v->whole = v->n == 1 && v->h[0].version == 2;
}

/* Sets up v2 for the controllers that use it; those it cannot give fall to NONE with a reason. */
static int cg_setup_v2(struct cg_job *cg, struct host_cgroups *hc, const struct cg_limits *lim, int why[], char *v2msg,
		       size_t v2size, struct al_error *err)
{
	unsigned want = 0, got = 0, used = 0;
	for (int c = 0; c < HOST_CG__COUNT; c++)
		if (hc->use[c] == HOST_CG_V2 && cg_wanted(lim, c)) {
			used |= CG_BIT(c);
			if (c != HOST_CG_CPUACCT &&
			    c != HOST_CG_FREEZER) /* cpu.stat and cgroup.freeze are core on v2 */
				want |= CG_BIT(c);
		}
	if (!used)
		return 0;
	int jobs_fd = -1;
	struct al_error perr = {0};
	int r = cg_v2_prepare(hc->v2.dir, want, &got, why, &jobs_fd, &perr);
	if (r < 0) {
		/* Nothing on v2 then; the caller reports it for each controller that was needed. */
		for (int c = 0; c < HOST_CG__COUNT; c++)
			if (used & CG_BIT(c)) {
				hc->use[c] = HOST_CG_NONE;
				why[c] = -r;
			}
		cg_fmt(v2msg, v2size, "%s", perr.msg);
		return 0;
	}
	for (int c = 0; c < HOST_CG__COUNT; c++)
		if ((want & CG_BIT(c)) && !(got & CG_BIT(c))) {
			hc->use[c] = HOST_CG_NONE;
			used &= ~CG_BIT(c);
		}
	char jobs[PATH_MAX];
	if (snprintf(jobs, sizeof(jobs), "%s/%s", hc->v2.dir, CG_V2_JOBS) >= (int)sizeof(jobs)) {
		close(jobs_fd);
		return al_err(err, ENAMETOOLONG, "cgroup: path too long under %.64s", hc->v2.dir);
	}
	return cg_add_hier(cg, 2, used, jobs_fd, jobs, err);
}

static int cg_apply(struct cg_job *cg, const struct cg_limits *lim, struct al_error *err)
{
	for (int i = 0; i < cg->nh; i++) {
		struct cg_hier *h = &cg->h[i];
		int r = h->version == 2 ? cg_v2_apply(h->fd, h->ctrls, lim, &cg->enf, err)
					: cg_v1_apply(h->fd, h->ctrls, lim, &cg->enf, err);
		if (r < 0) {
			al_err_prefix(err, "cgroup %s", h->path);
			return r;
		}
	}
	return 0;
}

static struct {
	pthread_mutex_t lock;
	bool valid;
	struct timespec at;
	struct cg_sweep sweep;
} cg_last = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void cg_remember_sweep(const struct host_cgroups *hc)
{
	pthread_mutex_lock(&cg_last.lock);
	cg_sweep_dirs(hc, &cg_last.sweep);
	clock_gettime(CLOCK_MONOTONIC, &cg_last.at);
	cg_last.valid = true;
	pthread_mutex_unlock(&cg_last.lock);
}

bool cg_recent_sweep(struct cg_sweep *s)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&cg_last.lock);
	int64_t age_ms =
		(int64_t)(now.tv_sec - cg_last.at.tv_sec) * 1000 + (now.tv_nsec - cg_last.at.tv_nsec) / 1000000;
	bool ok = cg_last.valid && age_ms < 1000;
	if (ok) {
		s->n = cg_last.sweep.n;
		for (int i = 0; i < s->n; i++)
			memcpy(s->dir[i], cg_last.sweep.dir[i], strlen(cg_last.sweep.dir[i]) + 1);
	}
	pthread_mutex_unlock(&cg_last.lock);
	return ok;
}

int cg_plan(const struct cg_limits *lim, struct cg_job **out, struct al_error *err)
{
	*out = NULL;
	bool any_need = lim->need_memory || lim->need_pids || lim->need_cpu;
	cleanup_free struct host_cgroups *hc = malloc(sizeof(*hc)); /* cg_detect fills all of it */
	struct cg_job *cg = cg_job_new();
	int r, why[HOST_CG__COUNT] = {0};
	char v2msg[160] = "", sdmsg[200] = "";
	if (!hc || !cg) {
		r = al_err(err, ENOMEM, "cgroup: out of memory");
		goto fail;
	}
	if ((r = cg_detect(hc, err)) < 0) {
		if (!any_need)
			r = 0; /* nothing required: run without, and the verdict says so */
		goto fail;
	}
	if ((r = cg_from_systemd(hc, lim, sdmsg, sizeof(sdmsg), err)) < 0)
		goto fail;
	cg_remember_sweep(hc);
	if ((r = cg_setup_v2(cg, hc, lim, why, v2msg, sizeof(v2msg), err)) < 0)
		goto fail;
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		if (hc->use[c] == HOST_CG_NONE && cg_needed(lim, c)) {
			char why_s[AL_ERROR_MAX - 64];
			cg_why(hc, c, why[c], v2msg, sdmsg, why_s, sizeof(why_s));
			r = al_err(err, why[c] ? why[c] : EPERM,
				   "cgroup %s: no writable v1 or v2 %s controller for this user (%s)",
				   host_cg_ctrl_name(c), host_cg_ctrl_name(c), why_s);
			goto fail;
		}
		if (hc->use[c] == HOST_CG_V1 && cg_wanted(lim, c) && (r = cg_add_v1(cg, hc, c, err)) < 0)
			goto fail;
	}
	if (lim->freezer && hc->use[HOST_CG_FREEZER] == HOST_CG_NONE) {
		char why_s[sizeof(cg->no_freezer)];
		cg_why(hc, HOST_CG_FREEZER, why[HOST_CG_FREEZER], v2msg, "", why_s, sizeof(why_s));
		memcpy(cg->no_freezer, why_s, sizeof(why_s));
	}
	if (cg->nh == 0) {
		r = 0; /* nothing usable, nothing required */
		goto fail;
	}
	cg->lim = *lim;
	*out = cg;
	return 0;
fail:
	cg_destroy(cg);
	return r;
}

int cg_make(struct cg_job *cg, struct al_error *err)
{
	if (cg->made)
		return cg->made < 0 ? cg->made : 0;
	int r = 0;
	for (int i = 0; r == 0 && i < cg->nh; i++)
		r = cg_make_dir(cg, &cg->h[i], err);
	if (r == 0)
		r = cg_apply(cg, &cg->lim, err);
	cg->made = r < 0 ? r : 1;
	return r;
}

bool cg_make_failed(const struct cg_job *cg)
{
	return cg && cg->made < 0;
}

int cg_create(const struct cg_limits *lim, struct cg_job **out, struct al_error *err)
{
	int r = cg_plan(lim, out, err);
	if (r < 0 || !*out || (r = cg_make(*out, err)) == 0)
		return r;
	cg_destroy(*out);
	*out = NULL;
	return r;
}

/* The parent's limits, repeated on a child cgroup, where they change nothing (the parent's bind
 * already): a runtime that sizes itself reads only the cgroup /proc/self/cgroup names (libuv:
 * its memory.max or memory.limit_in_bytes; Go: its cpu.max), which for an exec in a held
 * sandbox is this child, seen in the sandbox's /sys/fs/cgroup (view.c). Best effort: a file the
 * hierarchy lacks is skipped; the order lets each write stay within the one before. */
static void cg_inherit_limits(struct cg_hier *parent, const struct cg_hier *child)
{
	static const char *const v1[] = {"memory.limit_in_bytes",
					 "memory.memsw.limit_in_bytes",
					 "pids.max",
					 "cpu.cfs_period_us",
					 "cpu.cfs_quota_us",
					 NULL};
	static const char *const v2[] = {"memory.max", "memory.swap.max", "pids.max", "cpu.max", NULL};
	const char *const *files = parent->version == 2 ? v2 : v1;
	/* Read once per parent: a held sandbox's limits never change, and each of its execs makes a
	 * child (5 opens a hierarchy saved on every exec, most of them of files it lacks). */
	for (int i = 0; !parent->limits_read && files[i]; i++)
		if (cg_read_at(parent->fd, files[i], parent->limits[i], sizeof(parent->limits[i])) <= 0)
			parent->limits[i][0] = '\0';
	parent->limits_read = true;
	for (int i = 0; files[i]; i++)
		if (parent->limits[i][0])
			(void)cg_write_at(child->fd, files[i], parent->limits[i]);
}

int cg_lift_memory_limit(struct cg_job *cg, struct al_error *err)
{
	for (int i = 0; cg && i < cg->nh; i++) {
		struct cg_hier *h = &cg->h[i];
		if (!(h->ctrls & CG_BIT(HOST_CG_MEMORY)))
			continue;
		/* v1: memory+swap first, since the memory limit may never exceed it. */
		int r = h->version == 2 ? cg_write_at(h->fd, "memory.max", "max") : 0;
		if (h->version == 1 && (r = cg_write_at(h->fd, "memory.memsw.limit_in_bytes", "-1")) == -ENOENT)
			r = 0; /* no swap accounting on this host */
		if (r == 0 && h->version == 1)
			r = cg_write_at(h->fd, "memory.limit_in_bytes", "-1");
		if (r < 0)
			return al_err_sys(err, -r, "cgroup: lifting the memory limit of %s", h->path);
	}
	return 0;
}

int cg_create_child(struct cg_job *parent, struct cg_job **out, struct al_error *err)
{
	*out = NULL;
	struct cg_job *cg = cg_job_new();
	if (!cg)
		return al_err(err, ENOMEM, "cgroup: out of memory");
	cg->enf = parent->enf;
	int r = 0;
	for (int i = 0; r == 0 && i < parent->nh; i++) {
		struct cg_hier *ph = &parent->h[i];
		/* A v1 hierarchy of the cpu controller alone holds a limit and accounts nothing
		 * (cg_v1_account): the child stays in the parent's cgroup there, under the same
		 * quota, and saves a mkdir, a move per process (each may wait for an RCU grace
		 * period) and an rmdir on every held exec. The same for the v1 freezer: the sandbox
		 * freezes as a whole, so its processes all stay in its own freezer cgroup. */
		if (ph->version == 1 && !(ph->ctrls & ~(CG_BIT(HOST_CG_CPU) | CG_BIT(HOST_CG_FREEZER))))
			continue;
		if (ph->version == 2 && (r = cg_v2_nest(ph->fd, ph->path, ph->ctrls, err)) < 0) {
			al_err_prefix(err, "cgroup");
			break;
		}
		int fd = fcntl(ph->fd, F_DUPFD_CLOEXEC, 3);
		r = fd < 0 ? al_err_sys(err, errno, "cgroup: %s", ph->path)
			   : cg_add_hier(cg, ph->version, ph->ctrls, fd, ph->path, err);
		r = r ?: cg_make_dir(cg, &cg->h[cg->nh - 1], err);
		if (r == 0)
			cg_inherit_limits(ph, &cg->h[cg->nh - 1]);
	}
	if (r < 0) {
		cg_destroy(cg);
		return r;
	}
	cg->made = 1;
	*out = cg;
	return 0;
}

/* ---- use -------------------------------------------------------------------------- */

bool cg_clone_into(const struct cg_job *cg)
{
	return cg && cg->nh == 1 && cg->h[0].version == 2;
}

int cg_clone_fd(const struct cg_job *cg)
{
	return cg_clone_into(cg) && cg->made > 0 ? cg->h[0].fd : -1;
}

/* Writes pid to each hierarchy's cgroup.procs, open in procs[]. */
static int attach_one(struct cg_job *cg, const int *procs, pid_t pid, struct al_error *err)
{
	char buf[24];
	int len = snprintf(buf, sizeof(buf), "%d", (int)pid);
	for (int i = 0; i < cg->nh; i++) {
		ssize_t n = write(procs[i], buf, (size_t)len);
		if (n != len)
			return al_err_sys(err, n < 0 ? errno : EIO, "cgroup: moving pid %d into %s", (int)pid,
					  cg->h[i].path);
	}
	return 0;
}

/* The children of pid's main thread, as /proc lists them: their count (at most max) or -errno. */
static int children_of(pid_t pid, pid_t *out, int max)
{
	char path[80], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (len < 0)
		return -errno;
	buf[len] = 0;
	int n = 0;
	for (char *p = buf, *end; n < max; p = end) {
		long c = strtol(p, &end, 10);
		if (end == p)
			break;
		out[n++] = (pid_t)c;
	}
	return n;
}

int cg_attach_family(struct cg_job *cg, pid_t pid, bool children, struct al_error *err)
{
	if (!cg)
		return 0;
	if (cg->made <= 0)
		return al_err(err, EINVAL, "cgroup: moving pid %d into %s before it was made", (int)pid, cg->h[0].path);
	/* One open of each cgroup.procs for every process moved: each open of a cgroup file is a
	 * kernfs allocation, and a held sandbox moves two processes per exec. */
	int procs[CG_MAX_HIER], r = 0;
	for (int i = 0; i < CG_MAX_HIER; i++)
		procs[i] = -1;
	for (int i = 0; r == 0 && i < cg->nh; i++)
		if ((procs[i] = openat(cg->h[i].fd, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)) < 0)
			r = al_err_sys(err, errno, "cgroup: moving pid %d into %s", (int)pid, cg->h[i].path);
	r = r ?: attach_one(cg, procs, pid, err);
	/* Read once pid is in: a child it forks from now on is born there (fork and migration
	 * exclude each other), one forked before is listed. */
	pid_t kids[16];
	int nk = r == 0 && children ? children_of(pid, kids, 16) : 0;
	if (nk < 0)
		r = al_err_sys(err, -nk, "cgroup: the children of pid %d", (int)pid);
	for (int k = 0; r == 0 && k < nk; k++)
		r = attach_one(cg, procs, kids[k], err);
	for (int i = 0; i < cg->nh; i++)
		if (procs[i] >= 0)
			close(procs[i]);
	return r;
}

int cg_attach(struct cg_job *cg, pid_t pid, struct al_error *err)
{
	return cg_attach_family(cg, pid, false, err);
}

_Static_assert(CG_MAX_HIER <= CG_JOIN_MAX, "every hierarchy's tasks file fits in cg_join_fds's array");

bool cg_joins_self(const struct cg_job *cg)
{
	for (int i = 0; cg && i < cg->nh; i++)
		if (cg->h[i].version != 1)
			return false;
	return cg && cg->nh > 0;
}

int cg_join_fds(const struct cg_job *cg, int *fds, struct al_error *err)
{
	if (!cg_joins_self(cg))
		return al_err(err, EINVAL, "cgroup: joining from inside needs v1 hierarchies only");
	if (cg->made <= 0)
		return al_err(err, EINVAL, "cgroup: joining %s before it was made", cg->h[0].path);
	int n = 0;
	for (; n < cg->nh; n++)
		if ((fds[n] = openat(cg->h[n].fd, "tasks", O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)) < 0) {
			int r = al_err_sys(err, errno, "cgroup: opening %s/tasks", cg->h[n].path);
			while (n > 0)
				close(fds[--n]);
			return r;
		}
	return n;
}

int cg_join_self(const int *fds, int n)
{
	int r = 0;
	for (int i = 0; i < n; i++) {
		if (r == 0 && write(fds[i], "0", 1) != 1)
			r = -errno;
		close(fds[i]);
	}
	return r;
}

int cg_pids_max_count(struct cg_job *cg, uint64_t *n)
{
	char buf[256];
	for (int i = 0; cg && i < cg->nh; i++)
		if (cg->h[i].ctrls & CG_BIT(HOST_CG_PIDS)) {
			int r = cg_read_file(&cg->h[i].files, "pids.events", buf, sizeof(buf));
			return r < 0 ? r : cg_parse_keyed(buf, "max", n);
		}
	return -ENOENT;
}

int cg_kill(struct cg_job *cg)
{
	int r = 0;
	for (int i = 0; cg && i < cg->nh; i++) {
		if (cg->h[i].fd < 0)
			continue; /* never made (cg_make failed on the way) */
		int k = cg_kill_dir(cg->h[i].fd, cg->h[i].version);
		if (k < 0 && r == 0)
			r = k;
	}
	return r;
}

int cg_usage(struct cg_job *cg, struct cg_usage *u)
{
	memset(u, 0, sizeof(*u));
	if (!cg)
		return -EINVAL;
	for (int i = 0; i < cg->nh; i++) {
		struct cg_hier *h = &cg->h[i];
		if (h->version == 2)
			cg_v2_account(&h->files, h->ctrls, u);
		else
			cg_v1_account(&h->files, h->ctrls, u);
	}
	u->memory_limited = cg->enf.memory;
	u->pids_limited = cg->enf.pids;
	u->cpu_limited = cg->enf.cpu;
	u->version = cg_ctrl_version(cg, HOST_CG_MEMORY);
	if (!u->version)
		u->version = cg->h[0].version;
	return 0;
}

void cg_usage_open(struct cg_job *cg)
{
	struct cg_usage u;
	for (int i = 0; cg && i < cg->nh; i++)
		cg->h[i].files.filling = true;
	if (cg)
		cg_usage(cg, &u); /* reads, and so opens, every file it needs; pids.events included */
	for (int i = 0; cg && i < cg->nh; i++)
		cg->h[i].files.filling = false;
}

void cg_pids_events_open(struct cg_job *cg)
{
	uint64_t n;
	for (int i = 0; cg && i < cg->nh; i++)
		cg->h[i].files.filling = true;
	(void)cg_pids_max_count(cg, &n);
	for (int i = 0; cg && i < cg->nh; i++)
		cg->h[i].files.filling = false;
}

void cg_destroy(struct cg_job *cg)
{
	if (!cg)
		return;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < cg->nh; i++) {
		struct cg_hier *h = &cg->h[i];
		if (h->fd >= 0) {
			/* rmdir first: the kernel refuses it (EBUSY) while any process, dying or not,
			 * is in the cgroup, so a removed cgroup held nothing, and only one that
			 * refuses is killed. A finished job's cgroups are empty already (its init's exit
			 * ended every process of its pid namespace): no read of cgroup.procs then, on
			 * the way to the verdict. Give a dying task up to 1 s. */
			cleanup_close int parent = h->parent_fd >= 0 ? dup(h->parent_fd) : cg_parent_of(h->fd);
			for (;;) {
				if (h->version == 2) /* cg_create_child's leaf, if it made one */
					(void)unlinkat(h->fd, CG_V2_HELD, AT_REMOVEDIR);
				if (unlinkat(parent, cg->name, AT_REMOVEDIR) == 0 || errno == ENOENT)
					break;
				if (errno != EBUSY)
					break;
				clock_gettime(CLOCK_MONOTONIC, &now);
				long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
				if (ms > 1000)
					break; /* left for cg_cleanup_stale */
				cg_kill_dir(h->fd, h->version);
				cg_wait_empty(h->fd, 20);
			}
			cg_files_close(&h->files);
			close(h->fd);
		}
		if (h->parent_fd >= 0)
			close(h->parent_fd);
	}
	free(cg);
}

/* ---- names ------------------------------------------------------------------------ */

int cg_nhier(const struct cg_job *cg)
{
	return cg ? cg->nh : 0;
}

int cg_hier_fd(const struct cg_job *cg, int i, int *version)
{
	*version = cg->h[i].version;
	return cg->h[i].fd;
}

unsigned cg_hier_ctrls(const struct cg_job *cg, int i)
{
	return cg->h[i].ctrls;
}

int cg_hier_parent_open(const struct cg_job *cg, int i)
{
	const struct cg_hier *h = &cg->h[i];
	return h->parent_fd >= 0 ? fcntl(h->parent_fd, F_DUPFD_CLOEXEC, 0) : cg_parent_of(h->fd);
}

const char *cg_name(const struct cg_job *cg)
{
	return cg->name;
}

const char *cg_freezer_why(const struct cg_job *cg)
{
	if (!cg)
		return "the sandbox has no cgroup";
	return cg->no_freezer[0] ? cg->no_freezer : "the sandbox's cgroup has no freezer";
}

int cg_ctrl_version(const struct cg_job *cg, enum host_cg_ctrl c)
{
	for (int i = 0; cg && i < cg->nh; i++)
		if (cg->h[i].ctrls & CG_BIT(c))
			return cg->h[i].version;
	return 0;
}

const char *cg_job_path(const struct cg_job *cg, enum host_cg_ctrl c)
{
	for (int i = 0; cg && i < cg->nh; i++)
		if (cg->h[i].ctrls & CG_BIT(c))
			return cg->h[i].path;
	return NULL;
}

/* "v2" or "v1" when every controller used is on that version; "hybrid" when both are in
 * use (cg_ctrl_version says which is where); "none" without a job cgroup. */
const char *cg_version_name(const struct cg_job *cg)
{
	bool v1 = false, v2 = false;
	for (int i = 0; cg && i < cg->nh; i++) {
		v1 |= cg->h[i].version == 1;
		v2 |= cg->h[i].version == 2;
	}
	return v1 && v2 ? "hybrid" : v2 ? "v2" : v1 ? "v1" : "none";
}
