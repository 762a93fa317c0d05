/* bwargs.c — the policy as a bwrap command line: pure data, built from the native backend's filesystem plan. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "backend/capability.h"
#include "bwrap.h"
#include "util/cleanup.h"
#include "util/error.h"

/* fsplan.c stages the --workdir overlay's layers under this directory of the new root. */
#define BW_STAGE ".airlock"

/* What bubblewrap 0.8 cannot do; every other layer of a floor is always made (the cgroup ones are the
 * supervisor's). Landlock is the host kernel's, applied by airlock-init, bwrap's command (ainit.h). */
// NOLINTBEGIN(bugprone-suspicious-missing-comma): each reason is one sentence split over lines
const struct be_caps be_bwrap_caps = {
	.name = "bwrap",
	.isolation = true,
	.kernel_cgroupns = true,
	.kernel_landlock = true,
	.lacks =
		{
			[PN_CHECKOUT_COPY] = BE_WHY_NO_COPY,
			[PN_KEEP_CHANGES] = BE_WHY_NO_KEEP,
			[PN_SUBIDS] = "bubblewrap maps only the sandbox user (use --backend native)",
			[PN_FALLBACK] = "bubblewrap itself needs user namespaces (use --backend native)",
			[PN_HOLD] = BE_WHY_NO_HOLD,
			[PN_TTY] = "bubblewrap has no pty support of its own (use --backend native)",
			[PN_WORKDIR_DISK] = "bubblewrap 0.8 has no overlay, so the directory is bound read-write and "
					    "writes reach the host directly (use --backend native)",
			/* Without write-back the job would write the host directory itself: set-id bits,
			 * FIFOs and modes would be there as the job left them, while it runs
			 * (tests/escape/workdir-links.sh). */
			[PN_WORKDIR] = "bubblewrap 0.8 has no overlay, so the host directory would be bound read-write "
				       "and the job's set-id files, FIFOs and modes would land on the host as it left "
				       "them " BE_WHY_NO_WBACK,
		},
};
// NOLINTEND(bugprone-suspicious-missing-comma)

void bw_argv_free(struct bw_argv *a)
{
	for (size_t i = 0; a->v && i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

/* Appends one string (copied), keeping the array NULL-terminated. */
static int push(struct bw_argv *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		char **v = realloc(a->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	char *c = strdup(s);
	if (!c)
		return -ENOMEM;
	a->v[a->n++] = c;
	a->v[a->n] = NULL;
	return 0;
}

static int pushf(struct bw_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pushf(struct bw_argv *a, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= sizeof(buf) ? -EINVAL : push(a, buf);
}

/* Pushes a list of strings: PUSHV(a, "--bind", src, dest). */
static int pushv_arr(struct bw_argv *a, const char *const *list)
{
	int r = 0;
	for (; r == 0 && *list; list++)
		r = push(a, *list);
	return r;
}
#define PUSHV(a, ...) pushv_arr((a), (const char *const[]){__VA_ARGS__, NULL})

/* "/" + a plan destination (plan destinations are relative to the new root). */
static int push_dest(struct bw_argv *a, const char *dest)
{
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "/%s", dest);
	return n < 0 || (size_t)n >= sizeof(buf) ? -ENAMETOOLONG : push(a, buf);
}

static bool under(const char *dest, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(dest, dir, n) == 0 && (dest[n] == 0 || dest[n] == '/');
}

/* The value of KEY= in a tmpfs option string ("size=N,mode=0755,uid=..."), copied to out. */
static bool tmpfs_opt(const char *text, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (strncmp(p, key, klen) != 0 || p[klen] != '=')
			continue;
		size_t vlen = strcspn(p + klen + 1, ",");
		if (vlen == 0 || vlen >= size)
			return false;
		memcpy(out, p + klen + 1, vlen);
		out[vlen] = 0;
		return true;
	}
	return false;
}

/* A plan tmpfs: size and mode carry over; the owner is the sandbox user anyway, since
 * bwrap mounts as the namespace's root, which is the sandbox user's id outside it. */
static int op_tmpfs(struct bw_argv *a, const struct fs_op *op, const struct bw_fds *fds)
{
	/* With the ruleset, the IPC namespace's mqueue filesystem at /dev/mqueue: its root is the
	 * inode of the namespace's internal mount that mq_open uses, so the layout's rule on it lets
	 * the job use its own POSIX queues (the native init reaches it with a detached mount, which
	 * needs a capability airlock-init does not have). Before /dev turns read-only. */
	if (strcmp(op->dest, "dev") == 0)
		return PUSHV(a, "--dev", "/dev") ?: (fds->mqueue ? PUSHV(a, "--mqueue", "/dev/mqueue") : 0);
	char size[32], mode[16];
	int r = 0;
	if (tmpfs_opt(op->text, "size", size, sizeof(size)))
		r = PUSHV(a, "--size", size);
	if (r == 0 && tmpfs_opt(op->text, "mode", mode, sizeof(mode)))
		r = PUSHV(a, "--perms", mode);
	return r ?: push(a, "--tmpfs") ?: push_dest(a, op->dest);
}

/* Device nodes, devpts and the /dev symlinks come with bwrap's --dev; only binds the
 * policy asked for (read-only or read-write: always nodev) are a user's. */
static bool from_dev_setup(const struct fs_op *op)
{
	if (!under(op->dest, "dev") || strcmp(op->dest, "dev") == 0)
		return false;
	return op->kind != FS_BIND || !(op->attr_set & MOUNT_ATTR_NODEV);
}

static int op_bind(struct bw_argv *a, const struct fs_op *op)
{
	bool ro = op->attr_set & MOUNT_ATTR_RDONLY, opt = op->flags & FS_OPTIONAL;
	const char *flag = ro ? (opt ? "--ro-bind-try" : "--ro-bind") : (opt ? "--bind-try" : "--bind");
	return PUSHV(a, flag, op->src) ?: push_dest(a, op->dest);
}

/* /dev is read-only once populated (as in the native view); POSIX shared memory, a
 * symlink to /tmp there, gets its own tmpfs of --disk bytes here, since bwrap's --dev
 * already made /dev/shm a directory. */
static int op_setattr(struct bw_argv *a, const struct fs_op *op, const struct al_policy *p)
{
	int r = 0;
	if (strcmp(op->dest, "dev") == 0)
		r = push(a, "--size") ?: pushf(a, "%llu", (unsigned long long)p->limits[AL_LIMIT_DISK]) ?:
		    PUSHV(a, "--perms", "1777", "--tmpfs", "/dev/shm");
	if (r == 0 && (op->attr_set & MOUNT_ATTR_RDONLY))
		r = push(a, "--remount-ro") ?: push_dest(a, op->dest);
	return r;
}

/* Is op i an FS_FILE that the plan then gives to the sandbox user (the policy's files)? */
static bool file_owned(const struct fs_plan *plan, size_t i)
{
	return plan->ops[i].kind == FS_FILE && i + 1 < plan->n && plan->ops[i + 1].kind == FS_CHOWN &&
	       strcmp(plan->ops[i + 1].dest, plan->ops[i].dest) == 0;
}

/* File contents arrive as memfds: the generated /etc files as read-only binds, the policy's
 * own files (the sandbox user's, in the workspace tmpfs) as plain files bwrap writes there. */
static int op_file(struct bw_argv *a, const struct fs_plan *plan, size_t i, int fd)
{
	const struct fs_op *op = &plan->ops[i];
	if (fd < 0)
		return -EBADF;
	return push(a, "--perms") ?: pushf(a, "%04o", (unsigned)op->mode) ?:
	       push(a, file_owned(plan, i) ? "--file" : "--ro-bind-data") ?: pushf(a, "%d", fd) ?: push_dest(a, op->dest);
}

static int op_overlay(struct bw_argv *a, const struct fs_op *op, const struct al_policy *p)
{
	/* bwrap 0.8 has no overlay: the --workdir is bound read-write (reported as such, and
	 * refused with an explicit --disk, which only the overlay could enforce). */
	if (strcmp(op->dest, &AL_WORKSPACE[1]) != 0 || !p->workdir)
		return -ENOTSUP;
	return PUSHV(a, "--bind", p->workdir, AL_WORKSPACE);
}

static int plan_op(struct bw_argv *a, const struct fs_plan *plan, size_t i, const struct bw_fds *fds,
		   const struct al_policy *p)
{
	const struct fs_op *op = &plan->ops[i];
	if (under(op->dest, BW_STAGE) || from_dev_setup(op))
		return 0;
	switch (op->kind) {
	case FS_MKDIR:
		/* bwrap would make it as a parent of a mount point, with a mode of its own choosing
		 * (0700 for /etc/ssl): the plan's mode instead, exactly (bwrap chmods after --dir). */
		return push(a, "--perms") ?: pushf(a, "%04o", (unsigned)(op->mode & 07777)) ?: push(a, "--dir") ?:
		       push_dest(a, op->dest);
	case FS_SYMLINK:
		return PUSHV(a, "--symlink", op->text) ?: push_dest(a, op->dest);
	case FS_FILE:
		return op_file(a, plan, i, fds->file_fds[i]);
	case FS_CHOWN:
		/* the owner of a policy file: bwrap creates it as the sandbox user already */
		return i > 0 && file_owned(plan, i - 1) ? 0 : -ENOTSUP;
	case FS_BIND:
		return op_bind(a, op);
	case FS_TMPFS:
		return op_tmpfs(a, op, fds);
	case FS_PROC: /* bwrap mounts it read-write: remounted as the plan says */
		return push(a, "--proc") ?: push_dest(a, op->dest) ?:
		       ((op->mflags & MS_RDONLY) ? push(a, "--remount-ro") ?: push_dest(a, op->dest) : 0);
	case FS_SETATTR:
		return op_setattr(a, op, p);
	case FS_OVERLAY:
		return op_overlay(a, op, p);
	case FS_DEVPTS:
	case FS_SENDFD:
	case FS_UMOUNT:
	case FS_RMDIR:
	case FS_COPY:
		break;
	}
	return -ENOTSUP;
}

static int plan_ops(struct bw_argv *a, const struct fs_plan *plan, const struct bw_fds *fds, const struct al_policy *p,
		    struct al_error *err)
{
	for (size_t i = 0; i < plan->n; i++) {
		const struct fs_op *op = &plan->ops[i];
		int r = plan_op(a, plan, i, fds, p);
		if (r == -ENOMEM)
			return al_err(err, ENOMEM, "building the bwrap command line: out of memory");
		if (r < 0)
			return al_err(err, -r, "the bwrap backend cannot set up /%s (plan step %d)", op->dest,
				      (int)op->kind);
	}
	return 0;
}

/* The job's own cgroups, read-only at FS_CGROUP_VIEW, as the native backend shows them
 * (cgroup/view.c). bwrap cannot mount a cgroup filesystem, but binds of the job's cgroup
 * directories show the same files and nothing above them; bwrap starts in the job's cgroups (the
 * monitor waits for the attach, bwchild.c) and unshares its cgroup namespace there, so
 * /proc/self/cgroup and mountinfo inside name the job's cgroup "/". --ro-bind adds nosuid and
 * nodev; bwrap offers no noexec for a bind, and no cgroup file has an execute bit. */
static int argv_cgview(struct bw_argv *a, const struct fs_plan *plan, const struct cg_view *v)
{
	if (!plan->cgroup_view || !v)
		return 0;
	if (v->whole)
		return PUSHV(a, "--ro-bind", v->h[0].path, FS_CGROUP_VIEW);
	int r = 0;
	for (int i = 0; r == 0 && i < v->n; i++) {
		const struct cg_view_hier *h = &v->h[i];
		r = push(a, "--ro-bind") ?: push(a, h->path) ?: pushf(a, FS_CGROUP_VIEW "/%s", h->name);
		for (int k = 0; r == 0 && k < h->nlinks; k++)
			r = PUSHV(a, "--symlink", h->name) ?: pushf(a, FS_CGROUP_VIEW "/%s", h->links[k]);
	}
	return r;
}

/* Namespaces and identity. --unshare-user also as root: the caller runs bwrap as an
 * unprivileged uid (see bwchild.c), so the sandbox user maps to that uid, never to host root.
 * --disable-userns: the payload cannot nest user namespaces (seccomp denies it too).
 * bwrap always brings lo up in a new network namespace; with posture "none" the seccomp
 * filter still refuses every AF_INET socket, and nothing can leave the namespace anyway. */
static int argv_namespaces(struct bw_argv *a, const struct al_policy *p, bool cgroupns)
{
	int r = PUSHV(a, BW_PATH, "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc",
		      "--unshare-uts");
	if (r == 0 && cgroupns)
		r = push(a, "--unshare-cgroup");
	/* With the egress proxy, bwrap starts inside the network namespace made for it. */
	if (r == 0 && p->net != AL_NET_HOST && !pol_needs_proxy(p))
		r = push(a, "--unshare-net");
	r = r ?: PUSHV(a, "--die-with-parent", "--new-session", "--cap-drop", "ALL");
	/* bwrap maps its one uid and gid (the caller's, or id_base+uid:gid for root) to these. */
	r = r ?: push(a, "--uid") ?: pushf(a, "%u", p->run_uid) ?: push(a, "--gid") ?: pushf(a, "%u", p->run_gid);
	return r ?: PUSHV(a, "--hostname", p->hostname ? p->hostname : AL_DEFAULT_HOSTNAME);
}

static int push_ctx(void *a, const char *s)
{
	return push(a, s);
}

/* bwrap's command: airlock-init (ainit.h), bound read-only from the descriptor of the running
 * binary (no path lookup, so a root caller's bwrap, running as an unprivileged uid, reaches it
 * wherever it lies), with its options and its own "--" before the payload's command. It is
 * bwrap's pid 2 and execs the payload in place: bwrap's pid 1 stays the namespace's init. */
static int argv_command(struct bw_argv *a, const struct bw_fds *fds)
{
	return push(a, "--ro-bind-fd") ?: pushf(a, "%d", fds->init_bin) ?: push(a, AI_PATH);
}

/* The scrubbed environment: bwrap itself starts with none, and --clearenv makes sure. */
static int argv_env(struct bw_argv *a, const struct al_policy *p)
{
	char **envp = pol_build_envp(p);
	if (!envp)
		return -ENOMEM;
	int r = push(a, "--clearenv");
	for (char **e = envp; r == 0 && *e; e++) {
		char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		*eq = 0;
		r = PUSHV(a, "--setenv", *e, eq + 1);
		*eq = '=';
	}
	pol_free_strv(envp);
	return r;
}

int bw_argv_build(struct bw_argv *a, const struct al_policy *p, const struct fs_plan *plan, const struct bw_fds *fds,
		  bool cgroupns, struct al_error *err)
{
	memset(a, 0, sizeof(*a));
	int r = argv_namespaces(a, p, cgroupns) ?: argv_env(a, p);
	if (r == 0 && (r = plan_ops(a, plan, fds, p, err)) < 0)
		goto fail;
	r = r ?: argv_cgview(a, plan, fds->cgview);
	/* The root is read-only once assembled, as in the native view; /tmp, /workspace and
	 * /dev/shm are mounts of their own and stay writable. */
	r = r ?: argv_command(a, fds);
	r = r ?: PUSHV(a, "--remount-ro", "/", "--chdir", p->cwd ? p->cwd : AL_WORKSPACE);
	if (r == 0 && fds->seccomp >= 0)
		r = push(a, "--seccomp") ?: pushf(a, "%d", fds->seccomp);
	r = r ?: push(a, "--json-status-fd") ?: pushf(a, "%d", fds->json);
	a->cmd_at = a->n;
	r = r ?: push(a, "--") ?: ai_argv(fds->init, push_ctx, a) ?: push(a, "--");
	for (int i = 0; r == 0 && i < p->argc; i++)
		r = push(a, p->argv[i]);
	if (r == 0)
		return 0;
	r = al_err(err, -r, "building the bwrap command line: %s", strerror(-r));
fail:
	bw_argv_free(a);
	return r;
}
