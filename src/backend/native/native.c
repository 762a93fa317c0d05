/* native.c — the native backend's spawn: plan in the parent, clone3 into new namespaces, release the child.
 *
 * Theory of operation
 *
 *   supervisor (caller's credentials, host namespaces)
 *     │  builds the filesystem plan, the environment and the id map (all allocation happens here)
 *     │  clone3(NEWUSER|NEWPID|NEWNS|NEWIPC|NEWUTS, pidfd [, into the v2 cgroup])
 *     ▼
 *   init = pid 1 of the new pid namespace, full capabilities in the new user namespace only
 *     │  starts a helper that makes the job's network namespace (lo up) beside it (child.c),
 *     │  opens the bind sources, then waits on the sync pipe while the supervisor writes
 *     │  uid_map/gid_map; becomes sandbox root (host id_base as root, the caller otherwise);
 *     │  assembles a tmpfs root from the plan, pivot_root, detaches the old root,
 *     │  makes / read-only, sets the hostname, joins the helper's network namespace (setns);
 *     │  waits until it is in the job's cgroups, enters a
 *     │  new cgroup namespace and mounts the job's cgroups read-only at /sys/fs/cgroup (whose
 *     │  root that namespace makes the job's cgroup); fork()s the payload and reaps until it exits
 *     ▼
 *   payload: setsid, stdio from the supervisor's pipes, every other descriptor closed,
 *     rlimits, bounding/ambient caps dropped, uid/gid 1000 (or the image's User), caps cleared,
 *     no_new_privs, execve. With a terminal (be_io.tty) the payload drops its privileges first,
 *     opens a pty of the sandbox's devpts as its own user, sends the master to the supervisor on
 *     the sync socket (which init keeps open until the payload's fork for it) and takes the slave
 *     as stdio and controlling terminal (payload.c); the supervisor waits for that master
 *     (nx_recv_terminal) before returning, and its pump reads the job's stdout from it.
 *
 * Pipes: sync (supervisor → init, two bytes: "maps written", then "in the job's cgroups", which
 * init waits for only before its cgroup namespace and the payload's fork: on v1 the supervisor
 * makes the job's cgroups and moves it in while it mounts), status (init and payload → supervisor: struct nat_record; the
 * payload's copy closes on exec), stdout and stderr (payload → supervisor). When init exits the
 * kernel kills every process left in its pid namespace, so the pidfd reporting init's exit means
 * the whole job is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/capability.h"
#include "cgroup/cgroup.h"
#include "child.h"
#include "execmsg.h"
#include "native.h"
#include "kit/oomadj.h"
#include "kit/pidfd.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fdpass.h"

/* The cgroup namespace is unshared by init once the job's cgroup holds it (see child.c). */
#define NS_FLAGS (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS)

/* The layers this backend sets up beyond the namespaces, decided before clone3. */
struct nat_layers {
	struct sc_filter seccomp;
	struct ll_path *ll_paths;
	size_t ll_npaths;
	struct ll_spec landlock;
	bool landlock_on;
	int landlock_abi;
};

static json_t *enforced_of(const struct pol_plan *pl, const struct uns_map *m, const struct nat_layers *l)
{
	/* The payload's ids: the sandbox user's, or the image's User's (uns_choose placed them). */
	struct be_applied a = {
		.ns = BE_NS_ALL,
		.pivot_root = true,
		.readonly_root = true,
		.map_mode = m->range	? "range"
			    : m->subids ? "subids"
					: "single",
		.map_base = (json_int_t)m->host_base,
		.map_count = (json_int_t)m->count,
		.setgroups = m->range ? "cleared" : "deny",
		.payload_uid = m->uid,
		.payload_host_uid = (json_int_t)uns_host_uid(m, m->uid),
		.payload_gid = m->gid,
		.payload_host_gid = (json_int_t)uns_host_gid(m, m->gid),
		.loopback = true,
		.seccomp = l->seccomp.prog.len ? pol_seccomp_name(l->seccomp.profile) : NULL,
		.landlock = be_landlock_json(l->landlock_on ? &l->landlock : NULL, l->landlock_abi),
		.cgroup_key = true,
	};
	return be_enforced(pl, &a);
}

static const char *find_path(char *const *envp)
{
	for (; *envp; envp++)
		if (strncmp(*envp, "PATH=", 5) == 0)
			return *envp + 5;
	return "/usr/bin:/bin";
}

/* Kills and reaps a child that never got released. */
static void abort_child(pid_t pid, int pidfd)
{
	pfd_send_signal(pidfd, SIGKILL);
	siginfo_t si;
	struct rusage ru;
	pfd_wait(pidfd, &si, &ru, WEXITED);
	(void)pid;
}

/* Seccomp and Landlock for this policy (be_refuse has checked the floor). */
static int prepare_layers(const struct al_policy *p, const struct pol_plan *pl, struct nat_layers *l,
			  struct al_error *err)
{
	struct sc_options so;
	be_sc_options(pl, true, &so);
	int r = sc_build(&so, &l->seccomp, err);
	if (r < 0)
		return r;
	l->landlock_abi = ll_abi();
	if (l->landlock_abi > LL_ABI_MAX)
		l->landlock_abi = LL_ABI_MAX; /* newer rights stay unhandled: report what we use */
	l->landlock_on = p->landlock && l->landlock_abi > 0;
	if (!l->landlock_on)
		return 0;
	r = fs_landlock_spec(p, &l->landlock, &l->ll_paths, &l->ll_npaths);
	return r < 0 ? al_err(err, -r, "setup: Landlock rules: out of memory") : 0;
}

static void free_layers(struct nat_layers *l)
{
	sc_free(&l->seccomp);
	free(l->ll_paths);
}

bool nat_userns_refused(int e)
{
	return e == EPERM || e == EACCES || e == ENOSPC || e == EUSERS || e == EINVAL;
}

/* Everything a floor can name, the held sandbox, and the fallback. */
const struct be_caps be_native_caps = {
	.name = "native",
	.isolation = true,
	.kernel_cgroupns = true,
	.kernel_landlock = true,
	.makes_cgroup = true, /* on v1 while init builds its root (be_native_spawn) */
};

/*
 * A held sandbox's init (its keeper: hold.c) is never the OOM killer's choice where we hold
 * CAP_SYS_RESOURCE: -1000, written by us before init runs anything of its own, so that it is init's
 * floor too (the kernel moves oom_score_adj_min only for such a writer), and every exec init it forks
 * inherits both. Safe: both run only our code in a few fixed pages, and nothing of the sandbox can
 * change either value (its /proc and every exec's are read-only; it holds no capability outside its
 * user namespace). A payload never keeps it (it would be unkillable at the host's limit too): each
 * spare payload is raised to 1000 by us before its request goes out, or never runs (attach.c,
 * spare_oom_adj), which alone already makes the sandbox's code the first choice. Without the
 * capability (an ordinary user; root in a container that dropped it) the write is refused and init
 * keeps the server's value.
 */
static void protect_keeper(pid_t pid)
{
	(void)oom_adj_write(pid, OOM_ADJ_MIN);
}

static int clone_error(struct al_error *err, int e)
{
	const char *hint = e == EPERM
				   ? "user namespaces may be disabled for this user (or seccomp/AppArmor forbids them)"
			   : e == ENOSPC || e == EUSERS ? "the namespace limit is reached (user.max_*_namespaces)"
			   : e == EINVAL		? "this kernel lacks one of the namespace types"
							: "";
	return al_err(err, e,
		      "setup: clone3 with new user, pid, mount, ipc, uts and cgroup namespaces failed: %s%s%s%s",
		      strerror(e), *hint ? "; " : "", hint,
		      nat_userns_refused(e) ? " (--fallback runs on Landlock and seccomp alone, reported)" : "");
}

/* The channels between the supervisor and init, each a pair: sync[1], status[0], fd[0], px[0]
 * and ctl[0] are ours, the other ends init's. -1 where the job has no use for one. */
struct nat_chans {
	int sync[2], status[2], fd[2], px[2], ctl[2];
};

static int open_chans(const struct pol_plan *pl, const struct be_io *io, struct nat_chans *ch, struct al_error *err)
{
	/* sync is a socket: its second release carries the job's cgroup files (cg_join_fds). */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch->sync) < 0 || pipe2(ch->status, O_CLOEXEC) < 0 ||
	    (pl->sends_uppers && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch->fd) < 0) ||
	    (pl->net.proxy && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch->px) < 0) ||
	    (io->hold && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch->ctl) < 0))
		return al_err_sys(err, errno, "setup: pipe");
	return 0;
}

static void close_chans(struct nat_chans *ch)
{
	al_close_pair(ch->sync);
	al_close_pair(ch->status);
	al_close_pair(ch->fd);
	al_close_pair(ch->px);
	al_close_pair(ch->ctl);
}

/* In init, before anything else: the supervisor's ends are not init's to hold. */
static void close_ours(const struct nat_chans *ch)
{
	const int ours[] = {ch->sync[1], ch->status[0], ch->fd[0], ch->px[0], ch->ctl[0]};
	for (size_t i = 0; i < AL_ARRAY_SIZE(ours); i++)
		if (ours[i] >= 0)
			close(ours[i]);
}

/* What init is given: everything it reads after the clone, prepared before it. */
static int child_spec(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io,
		      const struct nat_chans *ch, struct fs_plan *plan, char **envp, struct nat_layers *layers,
		      struct nat_child *c, struct al_error *err)
{
	*c = (struct nat_child){
		.plan = plan,
		.limits = p->limits,
		.argv = p->argv,
		.envp = envp,
		.path = find_path(envp),
		.hostname = p->hostname ? p->hostname : AL_DEFAULT_HOSTNAME,
		.cwd = p->cwd ? p->cwd : AL_WORKSPACE,
		.staging = "/tmp",
		.sync_fd = ch->sync[0],
		.status_fd = ch->status[1],
		.stdin_fd = io->stdin_fd,
		.stdout_fd = io->stdout_fd,
		.stderr_fd = io->stderr_fd,
		.landlock = layers->landlock_on ? &layers->landlock : NULL,
		.landlock_fd = -1,
		.seccomp = &layers->seccomp,
		.lo_up = pl->net.own_netns,
		.proxy_sock = ch->px[1],
		.capture = &pl->net.capture,
		.ctl_sock = ch->ctl[1],
		.shed_libs = ch->ctl[1] >= 0 && nat_hold_can_shed(),
		.tty = io->tty,
		.tty_cols = io->tty_cols,
		.tty_rows = io->tty_rows,
		.tty_sock = io->tty ? ch->sync[0] : -1,
	};
	int r = uns_choose(&c->map, p->id_base, p->subids, p->run_uid, p->run_gid, err);
	if (r < 0)
		return r;
	c->run_uid = p->run_uid;
	c->run_gid = p->run_gid;
	c->drop_groups = c->map.range;
	cg_view_plan(io->cg, &c->cgview);
	return 0;
}

/*
 * Lets the new init go on, in three steps: its id maps written, then two releases. "g": the maps
 * are written, init may build its root. "c": init may join the job's cgroups, and only then does
 * it enter its cgroup namespace and fork the payload (child.c, join_cgroups). On cgroup v1 the
 * job's cgroups are made (mkdir, limits) here while init mounts, and "c" carries their `tasks`
 * files: init moves itself in, which costs the kernel no global lock, where our move of its pid
 * would take one that after a quiet moment waits for an RCU grace period (cg_join_fds). The
 * payload is born inside every cgroup and under every limit; only init's own set-up (a few tmpfs
 * pages, its CPU time) is charged to our cgroup. A cgroup that cannot be made or joined is refused
 * as before it was started: init is killed and reaped, and the supervisor removes what was made
 * (cg_destroy). On v2 the child was born in the job's cgroup (CLONE_INTO_CGROUP, cgfd) and "c"
 * carries nothing. On failure init is gone.
 */
static int release_init(pid_t pid, int pidfd, const struct be_io *io, const struct uns_map *map, int cgfd, int sync,
			struct al_error *err)
{
	char why[96] = "";
	int r = uns_write_maps(pid, map, why, sizeof(why));
	if (r < 0) {
		abort_child(pid, pidfd);
		return al_err(err, -r, "setup: writing the user namespace id maps (%s): %s", why, strerror(-r));
	}
	if (io->hold)
		protect_keeper(pid);
	if (send(sync, "g", 1, MSG_NOSIGNAL) != 1) {
		r = al_err_sys(err, errno, "setup: releasing the sandbox");
		abort_child(pid, pidfd);
		return r;
	}
	int join[CG_JOIN_MAX], njoin = 0;
	if (io->cg && cgfd < 0) {
		if ((r = cg_make(io->cg, err)) == 0)
			r = cg_joins_self(io->cg) ? (njoin = cg_join_fds(io->cg, join, err))
						  : cg_attach(io->cg, pid, err);
		if (r < 0) {
			abort_child(pid, pidfd);
			return r;
		}
	}
	r = al_send_fds(sync, join, njoin, 'c');
	for (int i = 0; i < njoin; i++)
		close(join[i]);
	if (r < 0) {
		r = al_err_sys(err, -r, "setup: releasing the sandbox");
		abort_child(pid, pidfd);
		return r;
	}
	return 0;
}

/* What the supervisor keeps of a started init: its ends of the channels move into out. */
static void hand_over(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io,
		      struct nat_chans *ch, const struct nat_child *c, const struct nat_layers *layers, pid_t pid,
		      int *pidfd, struct be_proc *out)
{
	out->tty_master = io->tty ? nx_recv_terminal(ch->sync[1]) : -1;
	out->pid = pid;
	out->pidfd = steal_fd(*pidfd);
	out->status_fd = steal_fd(ch->status[0]);
	out->enforced = enforced_of(pl, &c->map, layers);
	if (pl->sends_uppers) {
		out->upper_sock = steal_fd(ch->fd[0]);
		out->workdir = p->workdir ? strdup(p->workdir) : NULL;
		out->keep_changes = p->keep_changes ? strdup(p->keep_changes) : NULL;
		out->checkout = p->keep_changes ? strdup(p->checkout) : NULL;
	}
	out->proxy_sock = steal_fd(ch->px[0]);
	out->ctl_sock = steal_fd(ch->ctl[0]);
	out->backend = "native";
	/* Every profile kills foreign-ABI calls (and strict kills its always-denied calls). */
	out->seccomp_kills = layers->seccomp.prog.len > 0;
}

int be_native_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io, struct be_proc *out,
		    struct al_error *err)
{
	struct fs_plan plan = {.sendfd_sock = -1};
	struct fs_host host;
	char **envp = NULL;
	struct nat_layers layers = {0};
	struct nat_chans ch = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
	struct nat_child c;
	int pidfd = -1, r;
	fs_host_probe(&host, &plan, p);
	if ((r = fs_plan_build(&plan, p, &host, err)) < 0 || (r = prepare_layers(p, pl, &layers, err)) < 0)
		goto out;
	if (!(envp = pol_build_envp(p))) {
		r = al_err(err, ENOMEM, "out of memory");
		goto out;
	}
	if ((r = open_chans(pl, io, &ch, err)) < 0)
		goto out;
	plan.sendfd_sock = ch.fd[1];
	if ((r = child_spec(p, pl, io, &ch, &plan, envp, &layers, &c, err)) < 0)
		goto out;
	/* v2: init is born in the job's cgroup, which must exist first. */
	if (cg_clone_into(io->cg) && (r = cg_make(io->cg, err)) < 0)
		goto out;
	int cgfd = io->cg ? cg_clone_fd(io->cg) : -1;
	/* Every posture but "host" gets its own network namespace: init makes it beside itself
	 * (child.c, netns_start), off this clone3's path. */
	pid_t pid = pfd_clone3(NS_FLAGS, &pidfd, cgfd);
	if (pid == 0) {
		close_ours(&ch);
		nat_child_main(&c);
	}
	if (pid < 0 && p->fallback && nat_userns_refused(-pid) && !io->hold) {
		r = nat_fallback_spawn(p, pl, io, out, -pid, err);
		goto out;
	}
	if (pid < 0) {
		r = clone_error(err, -pid);
		goto out;
	}
	if ((r = release_init(pid, pidfd, io, &c.map, cgfd, ch.sync[1], err)) < 0)
		goto out;
	/* Our copy of init's end goes first, or the wait would never see it end. */
	close(ch.sync[0]);
	ch.sync[0] = -1;
	hand_over(p, pl, io, &ch, &c, &layers, pid, &pidfd, out);
	r = 0;
out:
	if (pidfd >= 0)
		close(pidfd);
	close_chans(&ch);
	pol_free_strv(envp);
	fs_plan_free(&plan);
	free_layers(&layers);
	return r;
}
