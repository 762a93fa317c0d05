/* payload.c — a container process's confinement: prepared by the parent, applied by the child in airlock's order.
 *
 * Child order (no allocation): setsid, rlimits, capabilities bounded, groups and ids, the
 * plan's capability sets, no_new_privs, Landlock, seccomp (the config's, then airlock's
 * allowlist stacked on it: the kernel answers with the stricter), ready; then, for a created
 * container, wait for `start` on the exec fifo; execve. Everything that can fail fails before
 * "ready", so create reports it and the payload never runs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "kit/caps.h"
#include "kit/mnt.h"
#include "kit/rawsys.h"
#include "kit/userns.h"
#include "ctr.h"
#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/openat2.h"

static const char *const stage_names[] = {
	[ORT_READY] = "ready",
	[ORT_SYNC] = "sync",
	[ORT_IDS] = "ids",
	[ORT_MOUNT] = "mount",
	[ORT_ROOT] = "rootfs",
	[ORT_DEV] = "/dev",
	[ORT_MASK] = "masked/read-only paths",
	[ORT_PIVOT] = "pivot_root",
	[ORT_HOST] = "hostname",
	[ORT_CGROUPNS] = "cgroup namespace",
	[ORT_TTY] = "terminal",
	[ORT_RLIMIT] = "rlimits",
	[ORT_CAPS] = "capabilities",
	[ORT_NNP] = "no_new_privs",
	[ORT_LANDLOCK] = "Landlock",
	[ORT_SECCOMP] = "seccomp",
	[ORT_CWD] = "cwd",
	[ORT_EXEC] = "exec",
	[ORT_SETNS] = "joining the container's namespaces",
	[ORT_SYSCTL] = "linux.sysctl",
	[ORT_CGROUP] = "joining the container's cgroup",
	[ORT_HOOKS] = "hooks",
	[ORT_HOOK] = "hook",
};

const char *ort_stage_name(int stage)
{
	return stage >= 0 && (size_t)stage < AL_ARRAY_SIZE(stage_names) && stage_names[stage] ? stage_names[stage]
											      : "setup";
}

/* ---- child ---------------------------------------------------------------------------- */

#define PDIE(pl, stage, e, what) ort_die((pl)->status_fd, stage, e, what)

static void set_caps(struct ort_payload *pl)
{
	const struct ort_caps *c = pl->caps;
	/* Bounding first (needs CAP_SETPCAP, which we hold as the namespace's root): a capability
	 * the plan does not grant cannot come back through an execve of a file with capabilities. */
	for (unsigned long cap = 0; cap < 64; cap++)
		if (!(c->bounding & (1ull << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			PDIE(pl, ORT_CAPS, errno, "bounding set");
		}
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		PDIE(pl, ORT_CAPS, errno, "keepcaps");
	const struct ort_process *p = pl->proc;
	if (syscall(SYS_setgroups, p->ngids, p->gids) < 0 && errno != EPERM)
		PDIE(pl, ORT_IDS, errno, "setgroups");
	if (raw_setresgid(p->gid, p->gid, p->gid) < 0 || raw_setresuid(p->uid, p->uid, p->uid) < 0)
		PDIE(pl, ORT_IDS, errno, "uid/gid");
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2] = {
		{(uint32_t)c->effective, (uint32_t)c->permitted, (uint32_t)c->inheritable},
		{(uint32_t)(c->effective >> 32), (uint32_t)(c->permitted >> 32), (uint32_t)(c->inheritable >> 32)}};
	if (syscall(SYS_capset, &hdr, data) < 0)
		PDIE(pl, ORT_CAPS, errno, "capset");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		PDIE(pl, ORT_CAPS, errno, "ambient");
	for (unsigned long cap = 0; cap < 64; cap++)
		if ((c->ambient & (1ull << cap)) && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
			PDIE(pl, ORT_CAPS, errno, "ambient raise");
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
}

static void load_seccomp(struct ort_payload *pl)
{
	if (pl->config_sc.len && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &pl->config_sc) < 0)
		PDIE(pl, ORT_SECCOMP, errno, "the config's filter");
	int r;
	if (pl->airlock_sc.prog.len && (r = sc_load(&pl->airlock_sc)) < 0)
		PDIE(pl, ORT_SECCOMP, -r, "airlock's allowlist");
}

/* argv[0] against the process's PATH, into pl->path_buf (no allocation): found now, so a
 * missing program fails create, as runc's does. */
static const char *resolve(struct ort_payload *pl)
{
	const char *prog = pl->proc->argv[0], *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? prog : NULL;
	for (char **e = pl->proc->envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	size_t plen = strlen(prog);
	for (const char *d = path; *d;) {
		const char *end = strchrnul(d, ':');
		size_t dlen = (size_t)(end - d);
		if (dlen && dlen + plen + 2 <= sizeof(pl->path_buf)) {
			memcpy(pl->path_buf, d, dlen);
			pl->path_buf[dlen] = '/';
			memcpy(pl->path_buf + dlen + 1, prog, plen + 1);
			if (access(pl->path_buf, X_OK) == 0)
				return pl->path_buf;
		}
		d = *end ? end + 1 : end;
	}
	return NULL;
}

_Noreturn void ort_payload_main(struct ort_payload *pl)
{
	const struct ort_process *p = pl->proc;
	/* A session of its own unless the terminal made one: no TIOCSTI into the caller's tty. */
	if (getsid(0) != getpid())
		setsid();
	/* As airlock's rl_apply: a limit above the current hard one (which a user namespace's root
	 * cannot raise) is clamped to it, stricter than asked, never weaker. */
	for (size_t i = 0; i < p->nrlimits; i++) {
		struct rlimit cur, rl = {.rlim_cur = p->rlimits[i].soft, .rlim_max = p->rlimits[i].hard};
		if (getrlimit(p->rlimits[i].resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
			if (rl.rlim_max > cur.rlim_max)
				rl.rlim_max = cur.rlim_max;
			if (rl.rlim_cur > rl.rlim_max)
				rl.rlim_cur = rl.rlim_max;
		}
		if (setrlimit(p->rlimits[i].resource, &rl) < 0)
			PDIE(pl, ORT_RLIMIT, errno, NULL);
	}
	if (chdir(p->cwd) < 0)
		PDIE(pl, ORT_CWD, errno, p->cwd);
	int ll_fd = -1;
	if (pl->landlock_on) {
		struct ll_result res;
		if ((ll_fd = ll_build(&pl->landlock, &res)) < 0)
			PDIE(pl, ORT_LANDLOCK, -ll_fd, res.failed_path ? res.failed_path : "ruleset");
	}
	const char *exe = resolve(pl);
	if (!exe)
		PDIE(pl, ORT_EXEC, ENOENT, p->argv[0]);
	/* Without no_new_privs (profile none, config says so) a filter needs CAP_SYS_ADMIN: load it
	 * while we hold it. */
	if (!pl->nnp)
		load_seccomp(pl);
	set_caps(pl);
	if (pl->nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		PDIE(pl, ORT_NNP, errno, NULL);
	int r;
	if (ll_fd >= 0 && (r = ll_restrict(ll_fd)) < 0)
		PDIE(pl, ORT_LANDLOCK, -r, "restrict_self");
	if (pl->nnp)
		load_seccomp(pl);
	struct ort_record ready = {.stage = ORT_READY};
	if (write(pl->status_fd, &ready, sizeof(ready)) != (ssize_t)sizeof(ready))
		_exit(1);
	close(pl->status_fd);
	if (pl->fifo_fd >= 0) {
		/* `start` writes one byte; EOF (nobody will) ends us before the payload ran. */
		char go;
		if (read(pl->fifo_fd, &go, 1) != 1)
			_exit(1);
		close(pl->fifo_fd);
	}
	int why = 0;
	if (pl->start_hooks &&
	    ort_hooks_run_child(pl->start_hooks, ORT_HOOK_START_CONTAINER, pl->hook_state_fd, p->envp, &why) != 0) {
		/* start has returned: nobody to send a record to but the container's own stderr. */
		static const char msg[] = "airlock-runc: a startContainer hook failed; the process does not run\n";
		if (write(2, msg, sizeof(msg) - 1) < 0) {
			/* nobody to tell */
		}
		_exit(1);
	}
	execve(exe, p->argv, p->envp);
	_exit(127);
}

/* ---- parent ---------------------------------------------------------------------------- */

int ort_seccomp_compile(json_t *sc, struct sock_fprog *out, struct al_error *err);

static bool writable_mount(const struct ort_mount *m)
{
	if (m->flags & MS_RDONLY)
		return false;
	return m->bind || strcmp(m->type, "tmpfs") == 0;
}

/* A path's first component ("/a" of "/a/b"), malloc'd. */
static char *top_of(const char *path)
{
	const char *e = strchr(path + 1, '/');
	return strndup(path, e ? (size_t)(e - path) : strlen(path));
}

static bool is_kernel_fs_top(const char *top)
{
	return strcmp(top, "/proc") == 0 || strcmp(top, "/sys") == 0;
}

static int add_rule(struct ort_payload *pl, size_t *cap, char *path)
{
	if (!path)
		return -ENOMEM;
	for (size_t i = 0; i < pl->landlock.npaths; i++)
		if (strcmp(pl->ll_paths[i].path, path) == 0) {
			free(path);
			return 0;
		}
	if (pl->landlock.npaths == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		struct ll_path *v = realloc(pl->ll_paths, n * sizeof(*v));
		if (!v) {
			free(path);
			return -ENOMEM;
		}
		pl->ll_paths = v;
		*cap = n;
	}
	pl->ll_paths[pl->landlock.npaths++] = (struct ll_path){.path = path, .writable = true, .optional = true};
	return 0;
}

/* Landlock's write rules for the container's layout: whatever the mounts leave writable, except
 * the kernel's own files (/proc, /sys), which no container process needs to write (a write to
 * /proc/self/attr, /proc/sys or /sys/fs/cgroup is refused even where the mount would allow it). */
static int landlock_rules(struct ort_payload *pl, const struct ort_spec *s)
{
	size_t cap = 0;
	int r = 0;
	if (!s->root_ro) {
		DIR *d = opendir(s->root);
		struct dirent *e;
		while (d && r == 0 && (e = readdir(d))) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			char *t;
			if (asprintf(&t, "/%s", e->d_name) < 0)
				t = NULL;
			if (t && is_kernel_fs_top(t))
				free(t);
			else
				r = add_rule(pl, &cap, t);
		}
		if (d)
			closedir(d);
	}
	for (size_t i = 0; r == 0 && i < s->nmounts; i++) {
		const struct ort_mount *m = &s->mounts[i];
		char *t = top_of(m->dest);
		if (t && is_kernel_fs_top(t)) {
			free(t);
			continue;
		}
		if (s->root_ro) {
			free(t);
			if (!writable_mount(m))
				continue;
			t = strdup(m->dest);
		}
		r = add_rule(pl, &cap, t);
	}
	/* The process's cwd, which the init makes when the image lacks it (as runc does for docker run
	 * -w): a top-level entry the listing above could not see yet. Never the root directory itself:
	 * a rule there would grant /proc and /sys as well. */
	char *cwd_top = top_of(pl->proc->cwd);
	if (r == 0 && !s->root_ro && cwd_top && cwd_top[1] && !is_kernel_fs_top(cwd_top))
		r = add_rule(pl, &cap, steal_ptr(cwd_top));
	free(cwd_top);
	if (r == 0)
		r = add_rule(pl, &cap, strdup("/dev"));
	return r;
}

int ort_payload_prepare(struct ort_payload *pl, const struct ort_spec *s, const struct ort_plan *plan,
			const struct ort_process *proc, struct al_error *err)
{
	memset(pl, 0, sizeof(*pl));
	pl->proc = proc;
	pl->caps = &plan->caps;
	pl->nnp = plan->nnp;
	pl->fifo_fd = pl->console_fd = pl->status_fd = pl->hook_state_fd = -1;
	int r;
	if (s->seccomp && (r = ort_seccomp_compile(s->seccomp, &pl->config_sc, err)) < 0)
		return r;
	if (plan->airlock_seccomp) {
		struct sc_options so = {.profile = AL_SECCOMP_DEFAULT, .allow_inet = true};
		if ((r = sc_build(&so, &pl->airlock_sc, err)) < 0)
			return r;
	}
	if (!plan->landlock)
		return 0;
	if (ll_abi() == 0)
		return al_err(err, EPERM, "Landlock is not available on this kernel, and profile %s requires it",
			      plan->profile);
	if ((r = landlock_rules(pl, s)) < 0)
		return al_err(err, -r, "Landlock rules: out of memory");
	pl->landlock = (struct ll_spec){.paths = pl->ll_paths,
					.npaths = pl->landlock.npaths,
					.scope = true,
					.writes_only = true,
					.mqueue = s->ns[ORT_NS_IPC]};
	pl->landlock_on = true;
	return 0;
}

void ort_payload_free(struct ort_payload *pl)
{
	/* The rule paths are ours (add_rule strdup'd them): the struct only borrows them as const. */
	for (size_t i = 0; pl->ll_paths && i < pl->landlock.npaths; i++)
		free((void *)(uintptr_t)pl->ll_paths[i].path);
	free(pl->ll_paths);
	free(pl->config_sc.filter);
	sc_free(&pl->airlock_sc);
	memset(pl, 0, sizeof(*pl));
}

/* ---- the rootfs, from the host's side ------------------------------------------------------ */

static int open_in_root(int rootfd, const char *path, int flags)
{
	return al_openat2(rootfd, path, flags, 0, AL_RESOLVE_IN_ROOT);
}

/* mkdir -p of dest beneath rootfd (the last component a file when file is set), every step
 * resolved inside the root: the image's symlinks cannot make the host's root write outside it. */
int ort_make_mount_point(int rootfd, const char *dest, bool file)
{
	char buf[4096];
	size_t len = strlen(dest);
	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dest, len + 1);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char save = *p;
		*p = 0;
		int fd = open_in_root(rootfd, buf, O_PATH);
		if (fd >= 0) {
			close(fd);
		} else if (fd == -ENOENT) {
			char *slash = strrchr(buf, '/');
			*slash = 0;
			cleanup_close int parent = open_in_root(rootfd, *buf ? buf : "/", O_PATH | O_DIRECTORY);
			*slash = '/';
			if (parent < 0)
				return parent;
			bool last = save == 0;
			if (last && file) {
				int f = openat(parent, slash + 1, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
					       0644);
				if (f < 0)
					return -errno;
				close(f);
			} else if (mkdirat(parent, slash + 1, 0755) < 0 && errno != EEXIST) {
				return -errno;
			}
		} else {
			return fd;
		}
		*p = save;
		if (!save)
			return 0;
	}
}

int ort_prepare_rootfs(const struct ort_spec *s, struct al_error *err)
{
	cleanup_close int rootfd = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return al_err_sys(err, errno, "rootfs %s", s->root);
	static const char *const always[] = {"/proc", "/dev"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(always); i++) {
		int r = ort_make_mount_point(rootfd, always[i], false);
		if (r < 0)
			return al_err(err, -r, "rootfs: making %s: %s", always[i], strerror(-r));
	}
	for (size_t i = 0; i < s->nmounts; i++) {
		const struct ort_mount *m = &s->mounts[i];
		struct stat st;
		bool file = m->bind && stat(m->source, &st) == 0 && !S_ISDIR(st.st_mode);
		int r = ort_make_mount_point(rootfd, m->dest, file);
		if (r < 0)
			return al_err(err, -r, "rootfs: making the mount point %s: %s", m->dest, strerror(-r));
	}
	/* process.cwd too (runc makes it; docker run -w names one the image may lack), here where the
	 * host's root can, idmapped rootfs or not; one beneath a mount is made by the init (make_cwd). */
	int r = ort_make_mount_point(rootfd, s->proc.cwd, false);
	if (r < 0)
		return al_err(err, -r, "rootfs: making process.cwd %s: %s", s->proc.cwd, strerror(-r));
	return 0;
}

/* A clone of a shared mount (Docker's data root, every mount of a systemd host) joins its peer
 * group: the container's mounts inside it would propagate back to the host, and pivot_root
 * refuses a shared new root. Private before it is attached, whatever the source's propagation;
 * the config's own propagation is applied by the init afterwards. */
static int make_private(int tree)
{
	struct mount_attr a = {.propagation = MS_PRIVATE};
	return (int)syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a));
}

int ort_open_trees(const struct ort_spec *s, int *root_tree, int *trees, struct al_error *err)
{
	*root_tree = (int)syscall(SYS_open_tree, AT_FDCWD, s->root, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (*root_tree < 0)
		return al_err_sys(err, errno, "rootfs %s", s->root);
	if (make_private(*root_tree) < 0)
		return al_err_sys(err, errno, "rootfs %s: making its clone private", s->root);
	for (size_t i = 0; i < s->nmounts; i++) {
		const struct ort_mount *m = &s->mounts[i];
		trees[i] = -1;
		if (!m->bind)
			continue;
		trees[i] = (int)syscall(SYS_open_tree, AT_FDCWD, m->source,
					OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (m->rec ? AT_RECURSIVE : 0));
		if (trees[i] < 0)
			return al_err_sys(err, errno, "bind mount source %s", m->source);
		if (make_private(trees[i]) < 0)
			return al_err_sys(err, errno, "bind mount %s: making its clone private", m->dest);
		struct mount_attr a = {0};
		if (m->flags & MS_RDONLY)
			a.attr_set |= MOUNT_ATTR_RDONLY;
		if (m->flags & MS_NOSUID)
			a.attr_set |= MOUNT_ATTR_NOSUID;
		if (m->flags & MS_NODEV)
			a.attr_set |= MOUNT_ATTR_NODEV;
		if (m->flags & MS_NOEXEC)
			a.attr_set |= MOUNT_ATTR_NOEXEC;
		if (a.attr_set && syscall(SYS_mount_setattr, trees[i], "", AT_EMPTY_PATH | (m->rec ? AT_RECURSIVE : 0),
					  &a, sizeof(a)) < 0)
			return al_err_sys(err, errno, "bind mount %s: setting its flags", m->dest);
	}
	return 0;
}

/*
 * Why this is safe. The map is the container's own (ids 0-65535 to the host's from id_base), so
 * through this mount the container's root owns what host root owns on the image's disk, and
 * nothing else: the mapping is the rootfs's top mount's (never a mount beneath it, never a bind of
 * the config's: a host path given as a volume keeps the host's owners), and it changes what ids
 * mean, not who the processes are (still host uid id_base+N, no capability, no_new_privs). What the
 * container writes there is written as the image's ids: a file its root makes is host uid 0 on the
 * snapshot's disk, as under runc without a user namespace, in a directory only the engine's root
 * reaches (docs/oci-runtime.md). The namespace is made by create, as host root, before the init
 * exists: the init, a user namespace's root, could not idmap a host filesystem's mount.
 */
int ort_idmap_root(int root_tree, const struct ort_spec *s, const struct ort_plan *plan, struct ort_rootmap *rm,
		   struct al_error *err)
{
	memset(rm, 0, sizeof(*rm));
	rm->mode = ort_rootmap_wanted(s, plan);
	if (rm->mode != ORT_ROOTMAP_IDMAPPED)
		return 0;
	struct statfs sf;
	char buf[24];
	if (fstatfs(root_tree, &sf) == 0)
		snprintf(rm->fs, sizeof(rm->fs), "%s", ort_fs_name((unsigned long)sf.f_type, buf));
	struct uns_map m = {.range = true, .host_base = plan->id_base, .count = AL_IDS_PER_SANDBOX};
	char why[96] = "";
	cleanup_close int ns = uns_open_ns(&m, why, sizeof(why));
	if (ns < 0)
		return al_err(err, -ns, "rootfs %s: a user namespace for its id mapping: %s: %s", s->root, why,
			      strerror(-ns));
	int r = mnt_idmap_tree(root_tree, ns), mode = ort_rootmap_after(-r);
	if (mode < 0)
		return al_err(err, -r, "rootfs %s (%s): idmapping its mount: %s", s->root, rm->fs, strerror(-r));
	rm->mode = (enum ort_rootmap_mode)mode;
	rm->err = -r;
	return 0;
}
