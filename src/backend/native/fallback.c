/* fallback.c — the native backend without namespaces, for hosts that refuse user namespaces.
 *
 * Used only when the policy allows it (al_policy_allow_fallback) and always reported. The job
 * runs in the host's namespaces under a subreaper init (child.c: nat_fallback_main), confined
 * by what needs no namespace: Landlock (read/execute on the system directories, read-write
 * only on a throwaway workspace directory and a few device nodes; no TCP from ABI 4; signals
 * and abstract sockets scoped from ABI 6), the seccomp filter (no AF_INET sockets, no mount,
 * ptrace, ...), rlimits, no_new_privs, no capabilities and, as root, an unprivileged uid. What
 * it cannot give — a private /proc, /tmp, hostname or filesystem view, the disk cap — is
 * reported as not enforced.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/capability.h"
#include "backend/monitor.h"
#include "cgroup/cgroup.h"
#include "child.h"
#include "native.h"
#include "kit/pidfd.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fsutil.h"

#define NS_REQS (REQ_USERNS | REQ_PIDNS | REQ_MNTNS | REQ_NETNS | REQ_IPCNS | REQ_UTSNS | REQ_CGROUPNS | REQ_PIVOT_ROOT)

struct fb_state {
	char *ws; /* the workspace directory (host path) */
	bool ws_made;
	char **envp;
	struct ll_path *paths;
	size_t npaths;
	struct ll_spec spec;
	struct sc_filter seccomp;
};

static void fb_free(struct fb_state *s, bool keep_ws)
{
	if (s->ws_made && !keep_ws)
		al_remove_tree(s->ws);
	if (!keep_ws)
		free(s->ws);
	pol_free_strv(s->envp);
	free(s->paths);
	sc_free(&s->seccomp);
}

static int refuse(const struct al_policy *p, int clone_errno, struct al_error *err)
{
	if (p->require & NS_REQS)
		return al_err(err, EPERM,
			      "user namespaces are unavailable here (clone3: %s) and the floor requires namespaces",
			      strerror(clone_errno));
	if (!p->landlock || ll_abi() < 1)
		return al_err(
			err, EPERM,
			"user namespaces are unavailable here (clone3: %s), and the fallback needs Landlock, which %s",
			strerror(clone_errno), p->landlock ? "this kernel lacks" : "this policy turns off");
	if (p->seccomp == AL_SECCOMP_OFF)
		return al_err(err, EPERM,
			      "user namespaces are unavailable here (clone3: %s), and the fallback needs seccomp",
			      strerror(clone_errno));
	/* "none" runs here without any inet socket (seccomp, Landlock): there is no private lo to
	 * give the job, and the host's is not its to use. The proxy lives on that private lo. */
	if (pol_needs_proxy(p))
		return al_err(err, EPERM,
			      "user namespaces are unavailable here (clone3: %s): --net %s%s needs a network namespace",
			      strerror(clone_errno), pol_net_name(p->net),
			      p->net == AL_NET_NONE ? " with --broker" : "");
	if (p->checkout)
		return al_err(err, EPERM,
			      "user namespaces are unavailable here (clone3: %s): --checkout needs a mount namespace",
			      strerror(clone_errno));
	/* Without a mount namespace the host's tree is the job's: an image or --rootfs cannot be
	 * shown, and the store's files (owned by the sandbox range's ids, one of which the payload
	 * would run as on the host) must not be within its reach outside a read-only mount. */
	if (p->rootfs)
		return al_err(err, EPERM,
			      "user namespaces are unavailable here (clone3: %s): --%s needs a mount namespace",
			      strerror(clone_errno), p->image ? "image" : "rootfs");
	for (size_t i = 0; i < p->nbinds; i++)
		if (strcmp(p->binds[i].src, p->binds[i].dest) != 0)
			return al_err(err, EINVAL,
				      "without user namespaces there is no mount namespace: bind %s can only be seen "
				      "at its own path, not at %s",
				      p->binds[i].src, p->binds[i].dest);
	return 0;
}

/* The policy's environment with HOME and TMPDIR pointing at the workspace directory. */
static char **fb_envp(const struct al_policy *p, const char *ws)
{
	char **base = pol_build_envp(p);
	if (!base)
		return NULL;
	for (char **e = base; *e; e++) {
		const char *name = strncmp(*e, "HOME=", 5) == 0	    ? "HOME"
				   : strncmp(*e, "TMPDIR=", 7) == 0 ? "TMPDIR"
								    : NULL;
		if (!name)
			continue;
		char *n = NULL;
		if (asprintf(&n, "%s=%s", name, ws) < 0) {
			pol_free_strv(base);
			return NULL;
		}
		free(*e);
		*e = n;
	}
	return base;
}

static int fb_paths(const struct al_policy *p, struct fb_state *s)
{
	static const struct ll_path sys[] = {
		{"/usr", false, true},	     {"/bin", false, true},	   {"/sbin", false, true},
		{"/lib", false, true},	     {"/lib32", false, true},	   {"/lib64", false, true},
		{"/libx32", false, true},    {"/etc", false, true},	   {"/proc", false, true},
		{"/dev/null", true, true},   {"/dev/zero", true, true},	   {"/dev/full", true, true},
		{"/dev/random", true, true}, {"/dev/urandom", true, true},
	};
	size_t n = AL_ARRAY_SIZE(sys) + 1 + p->nbinds;
	s->paths = calloc(n, sizeof(*s->paths));
	if (!s->paths)
		return -ENOMEM;
	memcpy(s->paths, sys, sizeof(sys));
	size_t k = AL_ARRAY_SIZE(sys);
	s->paths[k++] = (struct ll_path){s->ws, true, false};
	for (size_t i = 0; i < p->nbinds; i++)
		s->paths[k++] = (struct ll_path){p->binds[i].src, p->binds[i].writable, false};
	s->npaths = k;
	/* No network namespace: the seccomp filter allows no AF_INET socket, Landlock no TCP. */
	s->spec = (struct ll_spec){.paths = s->paths, .npaths = k, .deny_tcp = p->net == AL_NET_NONE, .scope = true};
	return 0;
}

static int fb_workspace(const struct al_policy *p, uid_t uid, gid_t gid, struct fb_state *s, struct al_error *err)
{
	if (p->workdir) {
		s->ws = strdup(p->workdir);
		return s->ws ? 0 : al_err(err, ENOMEM, "out of memory");
	}
	const char *tmp = getenv("TMPDIR");
	if (asprintf(&s->ws, "%s/airlock-ws-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") < 0) {
		s->ws = NULL;
		return al_err(err, ENOMEM, "out of memory");
	}
	if (!mkdtemp(s->ws))
		return al_err_sys(err, errno, "setup: creating the fallback workspace under %s", tmp ? tmp : "/tmp");
	s->ws_made = true;
	/* As root the payload runs as an unprivileged uid: the workspace must be its own. */
	if (geteuid() == 0 && chown(s->ws, uid, gid) < 0)
		return al_err_sys(err, errno, "setup: chown of the fallback workspace");
	return 0;
}

static int fb_write_files(const struct al_policy *p, const struct fb_state *s, uid_t uid, gid_t gid,
			  struct al_error *err);

static json_t *fb_enforced(const struct pol_plan *pl, const struct fb_state *s, uid_t uid, gid_t gid)
{
	struct be_applied a = {
		.fallback = true,
		.setgroups = pl->root ? "cleared" : "unchanged",
		.payload_uid = (json_int_t)uid,
		.payload_host_uid = (json_int_t)uid,
		.payload_gid = (json_int_t)gid,
		.payload_host_gid = (json_int_t)gid,
		.network = pl->net.own_netns ? "no inet sockets (seccomp), no TCP (Landlock)" : NULL,
		.seccomp = pol_seccomp_name(s->seccomp.profile),
		.landlock = be_landlock_json(&s->spec, ll_abi() > LL_ABI_MAX ? LL_ABI_MAX : ll_abi()),
		.cgroup_key = true,
		.disk_key = true,
		.workspace = s->ws,
	};
	return be_enforced(pl, &a);
}

/* Init and payload in the host's namespaces, in the workspace directory, as uid/gid (dropping the
 * supplementary groups as root); the Landlock ruleset is the caller's to add. */
static void fb_child(struct nat_child *c, const struct al_policy *p, const struct be_io *io, struct fb_state *s,
		     uid_t uid, gid_t gid)
{
	*c = (struct nat_child){
		.limits = p->limits,
		.argv = p->argv,
		.envp = s->envp,
		.path = "/usr/local/bin:/usr/bin:/bin",
		.cwd = s->ws,
		.stdin_fd = io->stdin_fd,
		.stdout_fd = io->stdout_fd,
		.stderr_fd = io->stderr_fd,
		.landlock_fd = -1,
		.seccomp = &s->seccomp,
		.run_uid = uid,
		.run_gid = gid,
		.drop_groups = geteuid() == 0,
		.fallback = true,
		.proxy_sock = -1,
		.ctl_sock = -1,
		.tty_sock = -1,
	};
}

static int fb_start(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct fb_state *s,
		    struct nat_child *c, struct al_error *err)
{
	int sync_p[2] = {-1, -1}, status_p[2] = {-1, -1}, pidfd = -1, r = 0;
	if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(status_p, O_CLOEXEC) < 0) {
		r = al_err_sys(err, errno, "setup: pipe");
		goto out;
	}
	c->sync_fd = sync_p[0];
	c->status_fd = status_p[1];
	/* The native backend's fallback: its cgroup may not be made yet (be_native_spawn). */
	if (io->cg && (r = cg_make(io->cg, err)) < 0)
		goto out;
	int cgfd = io->cg ? cg_clone_fd(io->cg) : -1;
	/* v1: init moves itself into the job's cgroups (cg_join_fds) before it runs anything. */
	int join[CG_JOIN_MAX], njoin = 0;
	bool joins = io->cg && cgfd < 0 && cg_joins_self(io->cg);
	if (joins && (r = njoin = cg_join_fds(io->cg, join, err)) < 0)
		goto out;
	pid_t supervisor = getpid();
	pid_t pid = pfd_clone3(0, &pidfd, cgfd);
	if (pid == 0) {
		/* SIGTERM, not SIGKILL: see nat_fallback_main. */
		if (!mon_tie_to(supervisor, SIGTERM))
			_exit(126);
		close(sync_p[1]);
		close(status_p[0]);
		int jr = cg_join_self(join, njoin);
		if (jr < 0)
			nat_die(c, NS_CGROUP, -jr, "the job's cgroups (writing 0 to tasks)");
		nat_fallback_main(c);
	}
	for (int i = 0; i < njoin; i++)
		close(join[i]);
	if (pid < 0) {
		r = al_err(err, -pid, "setup: starting the fallback init: %s", strerror(-pid));
		goto out;
	}
	if ((io->cg && cgfd < 0 && !joins && (r = cg_attach(io->cg, pid, err)) < 0) || write(sync_p[1], "g", 1) != 1) {
		if (r == 0)
			r = al_err_sys(err, errno, "setup: releasing the fallback init");
		pfd_send_signal(pidfd, SIGTERM);
		siginfo_t si;
		struct rusage ru;
		pfd_wait(pidfd, &si, &ru, WEXITED);
		goto out;
	}
	out->pid = pid;
	out->pidfd = steal_fd(pidfd);
	out->status_fd = steal_fd(status_p[0]);
	out->kill_signal = SIGTERM;		      /* init kills every descendant, then exits */
	out->cleanup_dir = s->ws_made ? s->ws : NULL; /* the caller's fb_free keeps it then */
out:
	if (pidfd >= 0)
		close(pidfd);
	al_close_pair(sync_p);
	al_close_pair(status_p);
	return r;
}

int nat_fallback_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io,
		       struct be_proc *out, int clone_errno, struct al_error *err)
{
	int r = refuse(p, clone_errno, err);
	if (r < 0)
		return r;
	/* A pty from the host's own devpts would be one of the host's terminals. */
	if (io->tty)
		return al_err(err, ENOTSUP,
			      "setup: --tty needs the sandbox's own devpts, which the fallback without namespaces "
			      "does not have (user namespaces: %s)",
			      strerror(clone_errno));
	bool root = pl->root;
	uid_t uid = root ? p->id_base + AL_SANDBOX_UID : getuid();
	gid_t gid = root ? p->id_base + AL_SANDBOX_UID : getgid();
	struct fb_state s = {0};
	struct sc_options so;
	be_sc_options(pl, false, &so); /* no network namespace: inet sockets only under host */
	if ((r = fb_workspace(p, uid, gid, &s, err)) < 0 || (r = fb_write_files(p, &s, uid, gid, err)) < 0 ||
	    (r = sc_build(&so, &s.seccomp, err)) < 0)
		goto out;
	if (!(s.envp = fb_envp(p, s.ws)) || fb_paths(p, &s) < 0) {
		r = al_err(err, ENOMEM, "out of memory");
		goto out;
	}
	struct nat_child c;
	fb_child(&c, p, io, &s, uid, gid);
	c.landlock = &s.spec;
	if ((r = fb_start(p, io, out, &s, &c, err)) < 0)
		goto out;
	out->enforced = fb_enforced(pl, &s, uid, gid);
	out->backend = "native";
	out->seccomp_kills = true;
	fb_free(&s, s.ws_made);
	return 0;
out:
	fb_free(&s, false);
	return r;
}

/* The policy's files (airlock exec's code) in the workspace directory, owned by the payload. */
static int fb_write_files(const struct al_policy *p, const struct fb_state *s, uid_t uid, gid_t gid,
			  struct al_error *err)
{
	if (!s->ws)
		return p->nfiles ? al_err(err, EINVAL, "setup: no workspace for the job's files") : 0;
	for (size_t i = 0; i < p->nfiles; i++) {
		const struct al_file *f = &p->files[i];
		const char *base = strrchr(f->dest, '/') + 1;
		int dir = open(s->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int fd =
			dir < 0 ? -1 : openat(dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, f->mode);
		/* fchmod: the file's own mode, whatever the caller's umask. */
		bool ok = fd >= 0 && write(fd, f->data, f->len) == (ssize_t)f->len && fchmod(fd, f->mode) == 0 &&
			  (geteuid() != 0 || fchown(fd, uid, gid) == 0);
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (dir >= 0)
			close(dir);
		if (!ok)
			return al_err_sys(err, e ? e : EIO, "setup: writing %s into the workspace", base);
	}
	return 0;
}

static json_t *none_enforced(const struct pol_plan *pl, uid_t uid, gid_t gid)
{
	struct be_applied a = {
		.isolation = "none",
		.payload_uid = (json_int_t)uid,
		.payload_host_uid = (json_int_t)uid,
		.payload_gid = (json_int_t)gid,
		.payload_host_gid = (json_int_t)gid,
		.network = "host",
	};
	return be_enforced(pl, &a);
}

/* No layer at all: what the none backend refuses is be_refuse's (refuse_no_isolation). */
const struct be_caps be_none_caps = {
	.name = "none", .isolation = false, .lacks = {[PN_HOLD] = BE_WHY_NO_HOLD, [PN_TTY] = BE_WHY_NO_TTY}};

/*
 * No isolation at all (profile none: local development, an explicit opt-out): the host's
 * filesystem and network, no namespaces, no Landlock, no seccomp. What remains is the
 * supervisor's: a throwaway working directory, the scrubbed environment, rlimits,
 * no_new_privs, an unprivileged uid as root, the cgroup's limits and accounting, the deadline
 * that kills every descendant. The verdict says "isolation": "none".
 */
int be_none_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io, struct be_proc *out,
		  struct al_error *err)
{
	bool root = pl->root;
	uid_t uid = root ? p->id_base + AL_SANDBOX_UID : getuid();
	gid_t gid = root ? p->id_base + AL_SANDBOX_UID : getgid();
	struct fb_state s = {0};
	int r = fb_workspace(p, uid, gid, &s, err);
	r = r ?: fb_write_files(p, &s, uid, gid, err);
	if (r == 0 && !(s.envp = fb_envp(p, s.ws)))
		r = al_err(err, ENOMEM, "out of memory");
	if (r < 0)
		goto out;
	struct nat_child c;
	fb_child(&c, p, io, &s, uid, gid); /* no Landlock, and no filter (profile none's is off) */
	if ((r = fb_start(p, io, out, &s, &c, err)) < 0)
		goto out;
	out->enforced = none_enforced(pl, uid, gid);
	out->backend = "none";
	fb_free(&s, s.ws_made);
	return 0;
out:
	fb_free(&s, false);
	return r;
}
