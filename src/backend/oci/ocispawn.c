/* ocispawn.c — the OCI backends' spawn: the same policy and supervisor, with an OCI runtime (crun, runsc) as the boundary.
 *
 * Theory of operation
 *
 *   supervisor (caller's credentials, host namespaces)
 *     │  refuses what the runtime cannot enforce; makes a private directory (mkdtemp, 0711)
 *     │  holding the bundle (config.json from the native backend's filesystem plan, bundle.c;
 *     │  the generated /etc files; a rootfs directory with the root's skeleton: the
 *     │  top-level symlinks and every mount point), the runtime's --root state and its log;
 *     │  all allocation happens here. clone3(pidfd, into the job's cgroup)
 *     ▼
 *   monitor (be_proc.pid: what the supervisor waits for; kill_signal SIGTERM)
 *     │  in the job's cgroup; waits for the cgroup attach (v1); makes the runtime's
 *     │  surroundings (ocichild.c): a private mount and a new pid namespace (and as an
 *     │  ordinary user a user namespace mapping only the caller, as 0; for the egress proxy a
 *     │  network namespace with lo up whose listening socket goes to the supervisor); forks:
 *     ├─▶ runtime, pid 1 of that pid namespace: its own /proc, the cgroup2 hierarchy of a
 *     │    hybrid host hidden (crun refuses that layout; the runtimes manage no cgroup here, the
 *     │    supervisor's job cgroup holds them and everything they start); no_new_privs;
 *     │    dies with the monitor; execve(crun|runsc ... run) with an empty environment. The
 *     │    runtime makes the container: user namespace (the sandbox user is id_base+1000 as
 *     │    root, the caller otherwise; never host root), pid, mount, ipc, uts, network and
 *     │    (crun) cgroup namespaces, the read-only root, no capabilities, no_new_privs, rlimits
 *     │    (crun: airlock-init's arguments, set in the payload alone, ainit.c; runsc: process.rlimits,
 *     │    or the init's when it copies the policy's files), and (crun) airlock's own seccomp
 *     │    program; it waits for the payload and exits with its status (128+N for signal N).
 *     │  waits for the runtime; since it was pid 1, the kernel has killed and reaped every
 *     │  other process of the namespace by then (containers, gVisor's sentry and gofer);
 *     │  sends one nat_record (the payload's status, or the runtime's logged error when it
 *     │  refused before the payload ran), removes the private directory, exits.
 *
 * The supervisor's deadline (and al_job_free) sends SIGTERM to the monitor, whose handler
 * SIGKILLs the runtime: the pid namespace goes with it, then the monitor reports and exits, so
 * its pidfd reporting the exit means the sandbox is gone. The supervisor also SIGKILLs the
 * job's cgroup. If the supervisor dies, the monitor gets SIGTERM (parent-death signal) and does
 * the same; if the monitor dies, the runtime gets SIGKILL (its parent-death signal). The
 * directory is removed by the monitor and again (if still there) by the supervisor
 * (be_proc.cleanup_dir). No cgroup is created by either runtime, so none can be left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/monitor.h"
#include "kit/fsplan.h"
#include "kit/pidfd.h"
#include "kit/seccomp.h"
#include "bundle.h"
#include "cgroup/cgroup.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fsutil.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct oci_spawn {
	char tmp[PATH_MAX]; /* "" until made */
	char bundle[PATH_MAX], state[PATH_MAX], log[PATH_MAX];
	struct fs_plan plan;
	struct sc_filter filter;
	struct sc_options sc; /* runsc: the profile given as linux.seccomp (when sc_on) */
	bool sc_on;
	char init_src[PATH_MAX]; /* the airlock binary, the container's init (crun; runsc with files); "" if none */
	bool files_mnt;		 /* runsc: the bundle's files directory is bound at OCI_FILES_PATH */
	char **file_src;	 /* per plan op */
	char *seccomp_b64;
	struct ll_spec landlock; /* crun: the payload's ruleset (airlock-init applies it), when ll_abi > 0 */
	struct ll_path *ll_paths;
	int ll_abi; /* 0: no Landlock (gvisor, --landlock off, or the kernel has none) */
	char **argv;
	int sync_p[2], status_p[2], px_p[2], init_p[2];
	struct cg_view cgview; /* crun: the job's cgroups, bound read-only at FS_CGROUP_VIEW (n 0: none) */
};

int oci_strv_dup(char ***out, const char *const *list)
{
	size_t n = 0;
	while (list[n])
		n++;
	char **v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		if (!(v[i] = strdup(list[i]))) {
			while (i > 0)
				free(v[--i]);
			free(v);
			v = NULL;
		}
	*out = v;
	return v ? 0 : -ENOMEM;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void oci_spawn_free(struct oci_spawn *s, bool remove)
{
	al_close_pair(s->sync_p);
	al_close_pair(s->status_p);
	al_close_pair(s->px_p);
	al_close_pair(s->init_p);
	strv_free(s->file_src, s->plan.n);
	size_t n = 0;
	while (s->argv && s->argv[n])
		n++;
	strv_free(s->argv, n);
	free(s->seccomp_b64);
	sc_free(&s->filter);
	free(s->ll_paths);
	fs_plan_free(&s->plan);
	if (remove && s->tmp[0])
		al_remove_tree(s->tmp);
}

static int pathf(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* A new file holding n bytes. */
static int write_file(const char *path, const char *data, size_t n, mode_t mode)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	int r = al_write_all(fd, data, n);
	return r < 0 ? r : fchmod(fd, mode) < 0 ? -errno : 0;
}

/* mkdir -p of a path relative to the rootfs directory. */
static int mkdirs(int root, const char *rel, mode_t mode)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf; p;) {
		p = strchr(p + 1, '/');
		if (p)
			*p = 0;
		/* The exact mode, whatever the umask: only for a directory made here. */
		if (mkdirat(root, buf, mode) == 0 ? fchmodat(root, buf, mode, 0) < 0 : errno != EEXIST)
			return -errno;
		if (p)
			*p = '/';
	}
	return 0;
}

static int parent_dirs(int root, const char *rel)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return 0;
	*slash = 0;
	return mkdirs(root, buf, 0755);
}

/* A mount point of the read-only root: a directory, or an empty file for a file's bind. */
static int mount_point(int root, const struct fs_op *op)
{
	int r = parent_dirs(root, op->dest);
	bool dir = true;
	struct stat st;
	if (op->kind == FS_FILE)
		dir = false;
	else if (op->kind == FS_BIND && stat(op->src, &st) == 0)
		dir = S_ISDIR(st.st_mode);
	if (r < 0)
		return r;
	if (dir)
		return mkdirs(root, op->dest, 0755);
	cleanup_close int fd = openat(root, op->dest, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	return fd < 0 || fchmod(fd, 0644) < 0 ? -errno : 0;
}

/* The root's skeleton in the rootfs directory: what the runtime mounts over, and the
 * symlinks and directories of the native view that live on the root itself. */
/* /sys/fs/cgroup and the mount points of the job's cgroup hierarchies in it (bundle.c binds them),
 * made first, 0755 with their parents: the plan's nested 0555 for /sys, /sys/fs and /sys/fs/cgroup
 * would keep a runtime that runs as an unprivileged uid from making the mount points, and an
 * ordinary user's airlock from removing the bundle afterwards (rmdir needs write access to the
 * parent). Inside, the root is read-only whatever the modes. */
static int cgview_points(const struct oci_spawn *s, int root)
{
	if (!s->plan.cgroup_view)
		return 0;
	const char *view = &FS_CGROUP_VIEW[1]; /* relative to the bundle's root */
	int r = mkdirs(root, view, 0755);
	for (int i = 0; r == 0 && !s->cgview.whole && i < s->cgview.n; i++) {
		char rel[PATH_MAX];
		snprintf(rel, sizeof(rel), "%s/%s", view, s->cgview.h[i].name);
		r = mkdirs(root, rel, 0755);
	}
	return r;
}

static int skeleton(struct oci_spawn *s, struct al_error *err)
{
	char rootfs[PATH_MAX];
	int r = pathf(rootfs, s->bundle, "rootfs");
	if (r < 0 || mkdir(rootfs, 0755) < 0 || chmod(rootfs, 0755) < 0)
		return al_err_sys(err, r < 0 ? -r : errno, "setup: the bundle's rootfs");
	cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return al_err_sys(err, errno, "setup: the bundle's rootfs");
	if (s->init_src[0]) {
		cleanup_close int fd =
			openat(root, &AI_PATH[1], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
		if (fd < 0 || fchmod(fd, 0755) < 0)
			return al_err_sys(err, errno, "setup: the mount point %s in the bundle", ai_path());
	}
	if (s->files_mnt &&
	    (mkdirat(root, &OCI_FILES_PATH[1], 0755) < 0 || fchmodat(root, &OCI_FILES_PATH[1], 0755, 0) < 0))
		return al_err_sys(err, errno, "setup: the mount point %s in the bundle", OCI_FILES_PATH);
	if ((r = cgview_points(s, root)) < 0)
		return al_err_sys(err, -r, "setup: the mount points of %s in the bundle", FS_CGROUP_VIEW);
	for (size_t i = 0; r == 0 && i < s->plan.n; i++) {
		const struct fs_op *op = &s->plan.ops[i];
		if (!oci_on_rootfs(&s->plan, i))
			continue;
		/* At most 0755: the bundle sits in the host's /tmp, and no directory of it may be
		 * writable by another host user (the plan's /tmp is 01777: the tmpfs mounted over it
		 * carries that mode inside). */
		if (op->kind == FS_MKDIR)
			r = mkdirs(root, op->dest, op->mode & 0755);
		else if (op->kind == FS_SYMLINK)
			r = parent_dirs(root, op->dest) ?: symlinkat(op->text, root, op->dest) < 0 ? -errno : 0;
		else
			r = mount_point(root, op);
		if (r < 0)
			return al_err_sys(err, -r, "setup: the mount point /%s in the bundle", op->dest);
	}
	return 0;
}

/* The plan's file contents as bundle files, bound read-only by the runtime. */
static int files(struct oci_spawn *s, struct al_error *err)
{
	char dir[PATH_MAX];
	int r = pathf(dir, s->bundle, "files");
	if (r < 0 || mkdir(dir, 0755) < 0 || chmod(dir, 0755) < 0)
		return al_err_sys(err, r < 0 ? -r : errno, "setup: the bundle's files");
	if (!(s->file_src = calloc(s->plan.n + 1, sizeof(*s->file_src))))
		return al_err(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < s->plan.n; i++) {
		const struct fs_op *op = &s->plan.ops[i];
		if (op->kind != FS_FILE)
			continue;
		if (asprintf(&s->file_src[i], "%s/%zu", dir, i) < 0) {
			s->file_src[i] = NULL;
			return al_err(err, ENOMEM, "out of memory");
		}
		size_t len = op->len ? op->len : strlen(op->text);
		/* Readable by the sandbox user whatever it is on the host; never writable. */
		if ((r = write_file(s->file_src[i], op->text, len, (op->mode & 0555) | 0444)) < 0)
			return al_err_sys(err, -r, "setup: writing /%s into the bundle", op->dest);
	}
	return 0;
}

static int bundle(struct oci_spawn *s, const struct oci_runtime_desc *d, const struct al_policy *p,
		  const struct pol_plan *pl, struct al_error *err)
{
	struct fs_host host;
	fs_host_probe(&host, &s->plan, p);
	int r = fs_plan_build(&s->plan, p, &host, err);
	if (r < 0)
		return r;
	/* Optional sources the host lacks are left out, as the native child skips them. */
	for (size_t i = 0; i < s->plan.n; i++) {
		struct fs_op *op = &s->plan.ops[i];
		op->skip = op->kind == FS_BIND && (op->flags & FS_OPTIONAL) && access(op->src, F_OK) < 0;
	}
	/* crun: airlock-init always (ainit.c); runsc: only to copy the policy's files into place */
	bool exec_init = d->runtime == OCI_RUNSC && p->nfiles > 0;
	if ((d->runtime == OCI_CRUN || exec_init) && (r = ai_binary(s->init_src, sizeof(s->init_src), err)) < 0)
		return r;
	s->files_mnt = exec_init;
	if ((r = files(s, err)) < 0 || (r = skeleton(s, err)) < 0)
		return r;
	char files_dir[PATH_MAX];
	if ((r = pathf(files_dir, s->bundle, "files")) < 0)
		return al_err_sys(err, -r, "setup: the bundle's files");
	struct oci_opts o = {.runtime = d->runtime,
			     .root = pl->root,
			     .file_src = (const char *const *)s->file_src,
			     .init_src = s->init_src[0] ? s->init_src : NULL,
			     .init_exec = exec_init,
			     .files_dir = files_dir,
			     .cgview = s->cgview.n ? &s->cgview : NULL};
	if (d->runtime == OCI_RUNSC && p->seccomp != AL_SECCOMP_OFF) {
		be_sc_options(pl, true, &s->sc);
		o.oci_seccomp = &s->sc;
		s->sc_on = true;
	}
	if (d->runtime == OCI_CRUN) {
		struct sc_options so;
		be_sc_options(pl, true, &so);
		if ((r = sc_build(&so, &s->filter, err)) < 0)
			return r;
		if (s->filter.prog.len &&
		    !(s->seccomp_b64 =
			      oci_base64(s->filter.prog.filter, s->filter.prog.len * sizeof(struct sock_filter))))
			return al_err(err, ENOMEM, "out of memory");
		o.seccomp_b64 = s->seccomp_b64;
	}
	o.nrlimits = ai_rlimits(p->limits, o.rlimits);
	/* crun: the native ruleset, which airlock-init builds and the payload enforces (ainit.c) */
	if (d->runtime == OCI_CRUN && (r = ai_landlock(p, &s->landlock, &s->ll_paths, &s->ll_abi, err)) < 0)
		return r;
	o.landlock = s->ll_abi ? &s->landlock : NULL;
	json_t *cfg;
	if ((r = oci_config_build(p, &s->plan, &o, &cfg, err)) < 0)
		return r;
	char path[PATH_MAX];
	r = pathf(path, s->bundle, "config.json");
	cleanup_free char *text = r == 0 ? json_dumps(cfg, JSON_INDENT(1)) : NULL;
	json_decref(cfg);
	if (r == 0 && !text)
		r = -ENOMEM;
	if (r == 0)
		r = write_file(path, text, strlen(text), 0644);
	return r < 0 ? al_err_sys(err, -r, "setup: writing config.json") : 0;
}

static int make_dirs(struct oci_spawn *s, const struct oci_runtime_desc *d, struct al_error *err)
{
	const char *base = getenv("TMPDIR");
	if (!base || base[0] != '/' || geteuid() == 0)
		base = "/tmp"; /* root: never a directory named by the environment */
	/* The supervisor's pid in the name: a directory whose supervisor is gone is a leftover. */
	if (snprintf(s->tmp, sizeof(s->tmp), "%s/airlock-%s.%d.XXXXXX", base, d->name, (int)getpid()) >=
		    (int)sizeof(s->tmp) ||
	    !mkdtemp(s->tmp)) {
		s->tmp[0] = 0;
		return al_err_sys(err, errno, "setup: a directory for the %s bundle under %s", d->name, base);
	}
	/* 0711: gVisor's gofer runs as the sandbox's root id and must reach the rootfs. */
	int r = chmod(s->tmp, 0711) < 0 ? -errno : 0;
	r = r ?: pathf(s->bundle, s->tmp, "bundle") ?: pathf(s->state, s->tmp, "state") ?: pathf(s->log, s->tmp, "log");
	if (r == 0 && (mkdir(s->bundle, 0711) < 0 || chmod(s->bundle, 0711) < 0 || mkdir(s->state, 0700) < 0 ||
		       chmod(s->state, 0700) < 0))
		r = -errno;
	return r < 0 ? al_err_sys(err, -r, "setup: the %s bundle directory", d->name) : 0;
}

static json_t *enforced_of(const struct oci_runtime_desc *d, const struct al_policy *p, const struct pol_plan *pl,
			   const struct oci_spawn *s)
{
	bool root = pl->root;
	struct be_applied a = {
		.tool_key = "runtime",
		.tool = d->path,
		.ns = d->ns,
		.pivot_root = d->pivot_root,
		.readonly_root = true,
		.map_mode = root ? "pair" : "single",
		.map_base = root ? (json_int_t)p->id_base : (json_int_t)getuid(),
		.map_count = root ? 2 : 1,
		.setgroups = "deny",
		.payload_uid = p->run_uid,
		/* the payload as the host sees it: the caller, or id_base+uid for a root caller */
		.payload_host_uid = root ? (json_int_t)p->id_base + p->run_uid : (json_int_t)getuid(),
		.payload_gid = p->run_gid,
		.payload_host_gid = root ? (json_int_t)p->id_base + p->run_gid : (json_int_t)getgid(),
		.netns_maker = d->netns_maker,
		.loopback = true,
		.seccomp = s->filter.prog.len || s->sc_on ? pol_seccomp_name(p->seccomp) : NULL,
		.landlock = be_landlock_json(s->ll_abi ? &s->landlock : NULL, s->ll_abi),
		/* no overlay: the directory itself, read-write, beyond --disk */
		.workdir = p->workdir ? "bind" : "none",
		/* airlock exec's files: read-only binds of files in the bundle (crun), or copies of
		 * them, the sandbox user's, made by airlock-init (runsc) */
		.files = !p->nfiles		   ? "none"
			 : d->runtime == OCI_RUNSC ? "copied"
						   : "read-only",
		.cgroup_key = true,
		.kernel = d->kernel,
		.platform = d->platform,
	};
	return be_enforced(pl, &a);
}

/* On a hybrid host the cgroup2 hierarchy sits at /sys/fs/cgroup/unified. */
static bool hybrid_unified(void)
{
	struct statfs fs;
	return statfs("/sys/fs/cgroup/unified", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

/* crun's view of the job's cgroups (bundle.c binds them). gVisor has a cgroupfs of its own and
 * shows none of the host's. On a hybrid host the runtime's mount namespace hides the unified
 * hierarchy (ocichild.c), so a job cgroup there could not be bound: it is left out. */
static void oci_cgview(struct cg_view *v, const struct oci_runtime_desc *d, const struct cg_job *cg)
{
	cg_view_plan(d->runtime == OCI_CRUN ? cg : NULL, v);
	if (!hybrid_unified())
		return;
	int k = 0;
	for (int i = 0; i < v->n; i++)
		if (v->h[i].version == 1)
			v->h[k++] = v->h[i];
	v->n = k;
	v->whole = false;
}

static _Noreturn void monitor_main(const void *c)
{
	oci_monitor_main(c);
}

/* The monitor, in the job's cgroup, released (mon_start). */
/* Is the payload's command, a name PATH resolves, in none of its PATH's directories in the tree
 * it runs on (its image's, else the host's, whose /usr the sandbox binds)? A path is not judged:
 * it may be one of the files the init is about to write. runsc gives airlock-init no descriptor for its
 * record, so an exec that failed there is only the job's 127: with this, the monitor reports it
 * as every other backend does (ocichild.c). */
static bool cmd_absent(const struct al_policy *p)
{
	if (strchr(p->argv[0], '/'))
		return false;
	const char *root = pol_rootfs(p) ? pol_rootfs(p) : "", *path = NULL;
	char **envp = pol_build_envp(p), buf[PATH_MAX];
	for (char **e = envp; e && *e && !path; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	bool absent = envp && !al_find_program(root, path ? path : "/usr/bin:/bin", p->argv[0], buf, sizeof(buf));
	pol_free_strv(envp);
	return absent;
}

static int start(const struct oci_child *c, const struct be_io *io, struct oci_spawn *s, pid_t *pid, int *pidfd,
		 struct al_error *err)
{
	const int parent_only[] = {s->sync_p[1], s->status_p[0], s->px_p[0]};
	struct mon_start m = {.main = monitor_main,
			      .arg = c,
			      .sync_w = s->sync_p[1],
			      .status_w = s->status_p[1],
			      .parent_only = parent_only,
			      .nparent_only = AL_ARRAY_SIZE(parent_only),
			      .what = c->runtime == OCI_RUNSC ? "the gvisor monitor" : "the oci monitor"};
	return mon_start(&m, io, pid, pidfd, err);
}

static int prepare(struct oci_spawn *s, const struct oci_runtime_desc *d, const struct al_policy *p,
		   const struct pol_plan *pl, struct al_error *err)
{
	int r = make_dirs(s, d, err);
	if (r < 0 || (r = bundle(s, d, p, pl, err)) < 0)
		return r;
	if (pipe2(s->sync_p, O_CLOEXEC) < 0 || pipe2(s->status_p, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "setup: pipe");
	if (pl->net.proxy && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s->px_p) < 0)
		return al_err_sys(err, errno, "setup: socketpair");
	if (s->init_src[0] && pipe2(s->init_p, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "setup: pipe");
	static unsigned long counter;
	char id[64];
	snprintf(id, sizeof(id), "airlock-%d-%lu", (int)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
	if ((r = d->argv(&s->argv, p, s->state, s->bundle, s->log, id)) < 0)
		return al_err(err, -r, "setup: the %s command line: %s", d->name, strerror(-r));
	return 0;
}

int oci_spawn(const struct oci_runtime_desc *d, const struct al_policy *p, const struct pol_plan *pl,
	      const struct be_io *io, struct be_proc *out, struct al_error *err)
{
	int r;
	if (access(d->path, X_OK) < 0)
		return al_err(err, ENOENT, "the %s backend needs %s (Debian package %s): %s", d->name, d->path,
			      d->package, strerror(errno));
	struct oci_spawn s = {.sync_p = {-1, -1}, .status_p = {-1, -1}, .px_p = {-1, -1}, .init_p = {-1, -1}};
	s.plan.sendfd_sock = -1;
	pid_t pid;
	int pidfd = -1;
	oci_cgview(&s.cgview, d, io->cg);
	if ((r = prepare(&s, d, p, pl, err)) < 0)
		goto out;
	struct oci_child c = {
		.argv = s.argv,
		.cmd = p->argv[0],
		.log = s.log,
		.tmp = s.tmp,
		.runtime = d->runtime,
		.sync_fd = s.sync_p[0],
		.status_fd = s.status_p[1],
		.stdin_fd = io->stdin_fd,
		.stdout_fd = io->stdout_fd,
		.stderr_fd = io->stderr_fd,
		.proxy_sock = s.px_p[1],
		.capture = &pl->net.capture,
		.init_r = s.init_p[0],
		.init_w = s.init_p[1],
		.root = pl->root,
		.mask_unified = hybrid_unified(),
		.uid = getuid(),
		.gid = getgid(),
		.cmd_absent = s.files_mnt && cmd_absent(p),
	};
	if ((r = start(&c, io, &s, &pid, &pidfd, err)) < 0)
		goto out;
	out->pid = pid;
	out->pidfd = steal_fd(pidfd);
	out->status_fd = steal_fd(s.status_p[0]);
	out->enforced = enforced_of(d, p, pl, &s);
	out->backend = d->name;
	/* crun: every profile kills foreign-ABI calls; runsc: strict kills its always-denied calls */
	out->seccomp_kills = s.filter.prog.len > 0 || (d->runtime == OCI_RUNSC && p->seccomp == AL_SECCOMP_STRICT);
	/* The monitor's handler kills the runtime and waits for its pid namespace to empty. */
	out->kill_signal = SIGTERM;
	out->upper_sock = -1; /* no overlay, so no upper layer to write back */
	out->proxy_sock = steal_fd(s.px_p[0]);
	/* The monitor removes the directory; this is for a monitor that never got that far. */
	out->cleanup_dir = strdup(s.tmp);
	s.tmp[0] = 0;
out:
	if (pidfd >= 0)
		close(pidfd);
	oci_spawn_free(&s, r < 0);
	return r;
}
