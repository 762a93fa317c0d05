/* bwrap.c — the bubblewrap backend's spawn: the same policy and supervisor, with /usr/bin/bwrap as the boundary.
 *
 * Theory of operation
 *
 *   supervisor (caller's credentials, host namespaces)
 *     │  refuses what bwrap cannot enforce; builds the native backend's filesystem plan and
 *     │  turns it into bwrap's command line (bwargs.c); the generated /etc files and the
 *     │  seccomp program go into memfds; all allocation happens here
 *     │  clone3(pidfd, into the job's cgroup)
 *     ▼
 *   monitor (this backend's be_proc.pid: what the supervisor waits for and kills)
 *     │  a child subreaper in the job's cgroup; waits for the cgroup attach (v1), forks:
 *     ├─▶ bwrap: RLIMIT_CORE 0; for the egress proxy (--net allow=, brokers) a network namespace
 *     │    of airlock's making with lo up, whose listening socket goes to the supervisor (bwrap
 *     │    offers no way into the namespace it would make); as root, uid/gid id_base+1000 with
 *     │    no groups (so the sandbox user is never host root); no_new_privs; dies with the
 *     │    monitor; execve(/usr/bin/bwrap) with an empty environment. bwrap makes the user, pid,
 *     │    mount, ipc, uts, cgroup and (but for --net host and the proxy's) network namespaces,
 *     │    builds the root, and starts its command under its own pid 1 with --die-with-parent,
 *     │    --new-session, no capabilities and our seccomp filter. Its command is airlock-init
 *     │    (backend/ainit.c: the airlock binary, bound read-only from a descriptor), which
 *     │    builds the native Landlock ruleset, sets the job's rlimits, restricts itself and
 *     │    execs the payload in its place (bwrap's pid 2); a failure before that exec is one
 *     │    record on the init's pipe.
 *     │  relays bwrap's stderr (the payload's too) to the job's stderr pipe, remembering
 *     │  bwrap's own "bwrap: ..." messages; reads --json-status-fd for the exit code;
 *     │  reaps bwrap and then the sandbox's pid 1, which it inherits as subreaper once bwrap
 *     │  is gone (--die-with-parent kills it then, and with it every process of the namespace);
 *     │  sends one nat_record (the payload's wait status, or why it never ran) and exits.
 *
 * Pipes: sync (supervisor → monitor), status (monitor → supervisor: nat_record), json (bwrap's
 * monitor → our monitor), rec (airlock-init → monitor: a failure before the payload's exec), err
 * (bwrap and payload stderr → monitor → the job's stderr pipe), stdout (payload → supervisor,
 * directly), proxy (a socket pair: the listening socket, from bwrap's process before its exec →
 * supervisor). The monitor exits only once everything it started is reaped, so its pidfd reporting
 * the exit means the sandbox is gone. On the deadline or a stop the supervisor sends SIGTERM to the
 * monitor (also its parent-death signal) and kills the job's cgroup; the monitor kills bwrap and,
 * as subreaper, whatever bwrap orphans (its pid 1, when bwrap had not yet armed --die-with-parent),
 * so no cgroup is needed for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/capability.h"
#include "backend/monitor.h"
#include "kit/pidfd.h"
#include "kit/seccomp.h"
#include "bwrap.h"
#include "cgroup/cgroup.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fsutil.h"

struct bw_spawn {
	struct fs_plan plan;
	struct sc_filter filter;
	struct bw_argv argv;
	int *file_fds;	       /* per plan op */
	int data[BW_MAX_PASS]; /* generated files plus the seccomp program */
	size_t ndata;
	int seccomp_fd;
	int init_bin; /* O_PATH: the airlock binary, bwrap's command (one of data) */
	struct ai_rlimit rl[AI_MAX_RLIMITS];
	struct ai_opts init;
	struct ll_spec landlock; /* the payload's ruleset (airlock-init applies it), when ll_abi > 0 */
	struct ll_path *ll_paths;
	int ll_abi;
	int sync_p[2], status_p[2], json_p[2], err_p[2];
	int rec_p[2];	       /* airlock-init's failure record → monitor (the write end is one of data) */
	int px_p[2];	       /* the egress proxy's socket, monitor's bwrap process → supervisor */
	struct cg_view cgview; /* the job's cgroups, shown at FS_CGROUP_VIEW */
};

static void bw_spawn_free(struct bw_spawn *s)
{
	for (size_t i = 0; i < s->ndata; i++)
		close(s->data[i]);
	al_close_pair(s->sync_p);
	al_close_pair(s->status_p);
	al_close_pair(s->json_p);
	al_close_pair(s->err_p);
	al_close_pair(s->px_p);
	al_close_pair(s->rec_p);
	free(s->ll_paths);
	free(s->file_fds);
	bw_argv_free(&s->argv);
	sc_free(&s->filter);
	fs_plan_free(&s->plan);
}

/* Data bwrap reads to its end (a file's content, the BPF program) in a memfd at offset 0. */
static int data_fd(struct bw_spawn *s, const void *data, size_t len)
{
	if (s->ndata == BW_MAX_PASS)
		return -EMFILE;
	int fd = al_fd_above_stdio(memfd_create("airlock-bwrap", MFD_CLOEXEC));
	if (fd < 0)
		return -errno;
	s->data[s->ndata++] = fd;
	int r = al_write_all(fd, data, len);
	return r < 0 ? r : lseek(fd, 0, SEEK_SET) < 0 ? -errno : fd;
}

static int make_data(struct bw_spawn *s, const struct pol_plan *pl, struct al_error *err)
{
	if (!(s->file_fds = malloc((s->plan.n + 1) * sizeof(*s->file_fds))))
		return al_err(err, ENOMEM, "out of memory");
	int r = 0;
	for (size_t i = 0; r >= 0 && i < s->plan.n; i++) {
		const struct fs_op *op = &s->plan.ops[i];
		s->file_fds[i] = -1;
		if (op->kind == FS_FILE)
			r = s->file_fds[i] = data_fd(s, op->text, op->len ? op->len : strlen(op->text));
	}
	s->seccomp_fd = -1;
	struct sc_options so;
	be_sc_options(pl, true, &so);
	if (r >= 0 && (r = sc_build(&so, &s->filter, err)) < 0)
		return r;
	/* bwrap loads the raw sock_filter array as it is (--seccomp FD). */
	if (r >= 0 && s->filter.prog.len)
		r = s->seccomp_fd = data_fd(s, s->filter.prog.filter, s->filter.prog.len * sizeof(struct sock_filter));
	if (r == -EMFILE)
		return al_err(err, EMFILE,
			      "the bwrap backend passes at most %d files to bwrap (the generated /etc files, the "
			      "seccomp filter and the policy's files)",
			      BW_MAX_PASS);
	if (r < 0)
		return al_err_sys(err, -r, "setup: passing data to bwrap");
	return 0;
}

static json_t *enforced_of(const struct al_policy *p, const struct pol_plan *pl, const struct bw_spawn *s,
			   bool cgroupns)
{
	/* What this job's payload is on the host: the caller, or id_base+uid for a root caller (uid
	 * the sandbox user's 1000, or the image's User's). */
	json_int_t host = pl->root ? (json_int_t)p->id_base + p->run_uid : (json_int_t)getuid();
	json_int_t host_gid = pl->root ? (json_int_t)p->id_base + p->run_gid : (json_int_t)getgid();
	struct be_applied a = {
		.tool_key = "bwrap",
		.tool = BW_PATH,
		.ns = BE_NS_ALL & ~(cgroupns ? 0u : (unsigned)BE_NS_CGROUP),
		.pivot_root = true,
		.readonly_root = true,
		.map_mode = "single",
		.map_base = host,
		.map_count = 1,
		.setgroups = "deny",
		.payload_uid = p->run_uid,
		.payload_host_uid = host,
		.payload_gid = p->run_gid,
		.payload_host_gid = host_gid,
		.userns_disabled = true,
		.netns_maker = "bwrap",
		.loopback = true, /* bwrap always raises lo in its network namespace: said, not hidden */
		.seccomp = s->filter.prog.len ? pol_seccomp_name(s->filter.profile) : NULL,
		/* no overlay in bwrap 0.8: the directory itself, read-write, beyond --disk */
		.workdir = p->workdir ? "bind" : "none",
		.landlock = be_landlock_json(s->ll_abi ? &s->landlock : NULL, s->ll_abi),
		.cgroup_key = true,
	};
	return be_enforced(pl, &a);
}

/* Everything the monitor needs, laid out before clone3. */
static void child_setup(struct bw_child *c, const struct al_policy *p, const struct pol_plan *pl,
			const struct be_io *io, struct bw_spawn *s)
{
	bool root = pl->root;
	*c = (struct bw_child){
		.argv = s->argv.v,
		.cmd = p->argv[0],
		.sync_fd = s->sync_p[0],
		.status_fd = s->status_p[1],
		.stdin_fd = io->stdin_fd,
		.stdout_fd = io->stdout_fd,
		.stderr_fd = io->stderr_fd,
		.json_r = s->json_p[0],
		.json_w = s->json_p[1],
		.err_r = s->err_p[0],
		.err_w = s->err_p[1],
		.rec_r = s->rec_p[0],
		.pass_fds = s->data,
		.npass = s->ndata,
		.proxy_sock = s->px_p[1],
		.capture = &pl->net.capture,
		.drop_ids = root,
		.run_uid = (uid_t)(p->id_base + p->run_uid),
		.run_gid = (gid_t)(p->id_base + p->run_gid),
	};
}

static _Noreturn void monitor_main(const void *c)
{
	bw_monitor_main(c);
}

/* The monitor, in the job's cgroup, released (mon_start). */
static int start(const struct bw_child *c, const struct be_io *io, struct bw_spawn *s, pid_t *pid, int *pidfd,
		 struct al_error *err)
{
	const int parent_only[] = {s->sync_p[1], s->status_p[0]};
	struct mon_start m = {.main = monitor_main,
			      .arg = c,
			      .sync_w = s->sync_p[1],
			      .status_w = s->status_p[1],
			      .parent_only = parent_only,
			      .nparent_only = AL_ARRAY_SIZE(parent_only),
			      .what = "the bwrap monitor"};
	return mon_start(&m, io, pid, pidfd, err);
}

/* bwrap's pid 1 in the sandbox is bwrap itself, so bwrap's command line is the job's
 * /proc/1/cmdline: the options (the host paths of the binds, the --setenv values) go to bwrap
 * through --args FD, and only "bwrap --args FD -- AIRLOCK-INIT... -- CMD ARG..." stays visible
 * inside (airlock-init's options name paths inside the sandbox only). */
static int hide_options(struct bw_spawn *s, struct al_error *err)
{
	struct bw_argv *a = &s->argv;
	size_t dd = a->cmd_at, len = 0; /* options are v[1] .. v[dd-1] */
	if (dd < 2 || dd >= a->n || strcmp(a->v[dd], "--") != 0)
		return al_err(err, EINVAL, "internal: the bwrap command line has no -- before its command");
	for (size_t i = 1; i < dd; i++)
		len += strlen(a->v[i]) + 1;
	cleanup_free char *buf = malloc(len + 1); /* + 1: never a zero-byte allocation */
	char *fdarg = NULL, *flag = strdup("--args");
	if (!buf || !flag) {
		free(flag);
		return al_err(err, ENOMEM, "out of memory");
	}
	for (size_t i = 1, at = 0; i < dd; i++) {
		size_t l = strlen(a->v[i]) + 1;
		memcpy(buf + at, a->v[i], l);
		at += l;
	}
	int fd = data_fd(s, buf, len);
	if (fd < 0 || asprintf(&fdarg, "%d", fd) < 0) {
		free(flag);
		return fd == -EMFILE
			       ? al_err(err, EMFILE, "the bwrap backend passes at most %d files to bwrap", BW_MAX_PASS)
			       : al_err_sys(err, fd < 0 ? -fd : ENOMEM, "setup: passing bwrap its options");
	}
	for (size_t i = 1; i < dd; i++)
		free(a->v[i]);
	memmove(&a->v[3], &a->v[dd], (a->n - dd + 1) * sizeof(*a->v)); /* "--", the command, NULL */
	a->v[1] = flag;
	a->v[2] = fdarg;
	a->n = 3 + (a->n - dd);
	return 0;
}

/* A descriptor bwrap inherits (and closes once used): kept in data, so closed with it. */
static int pass_fd(struct bw_spawn *s, int fd)
{
	if (fd < 0)
		return -errno;
	if (s->ndata == BW_MAX_PASS) {
		close(fd);
		return -EMFILE;
	}
	return s->data[s->ndata++] = fd;
}

/* airlock-init as bwrap's command (ainit.h): the running binary, the payload's rlimits and the
 * native ruleset, and a pipe for a failure before the payload's exec. */
static int init_command(struct bw_spawn *s, const struct al_policy *p, struct al_error *err)
{
	int r = ai_landlock(p, &s->landlock, &s->ll_paths, &s->ll_abi, err);
	if (r < 0)
		return r;
	if ((r = al_pipe_above_stdio(s->rec_p)) < 0)
		return al_err_sys(err, -r, "setup: pipe");
	int w = pass_fd(s, steal_fd(s->rec_p[1]));
	r = w < 0 ? w : (s->init_bin = pass_fd(s, al_fd_above_stdio(open("/proc/self/exe", O_PATH | O_CLOEXEC))));
	if (r == -EMFILE)
		return al_err(err, EMFILE, "the bwrap backend passes at most %d files to bwrap", BW_MAX_PASS);
	if (r < 0)
		return al_err_sys(err, -r, "setup: the airlock binary for airlock-init");
	s->init = (struct ai_opts){.rlimits = s->rl,
				   .nrlimits = ai_rlimits(p->limits, s->rl),
				   .landlock = s->ll_abi ? &s->landlock : NULL,
				   .exec = true,
				   .record_fd = w};
	return 0;
}

static int prepare(struct bw_spawn *s, const struct al_policy *p, const struct pol_plan *pl, bool cgroupns,
		   struct al_error *err)
{
	struct fs_host host;
	fs_host_probe(&host, &s->plan, p);
	int r = fs_plan_build(&s->plan, p, &host, err);
	if (r < 0 || (r = make_data(s, pl, err)) < 0)
		return r;
	if ((r = al_pipe_above_stdio(s->sync_p)) < 0 || (r = al_pipe_above_stdio(s->status_p)) < 0 ||
	    (r = al_pipe_above_stdio(s->json_p)) < 0 || (r = al_pipe_above_stdio(s->err_p)) < 0 ||
	    /* The payload's stderr: openable as /dev/stderr by its uid, like the job's pipes (job.c). */
	    (fchmod(s->err_p[1], 0622) < 0 && (r = -errno) < 0))
		return al_err_sys(err, -r, "setup: pipe");
	if (pl->net.proxy && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s->px_p) < 0)
		return al_err_sys(err, errno, "setup: socketpair");
	if ((r = init_command(s, p, err)) < 0)
		return r;
	struct bw_fds fds = {.file_fds = s->file_fds,
			     .seccomp = s->seccomp_fd,
			     .json = s->json_p[1],
			     .init_bin = s->init_bin,
			     .init = &s->init,
			     .mqueue = s->ll_abi > 0,
			     .cgview = &s->cgview};
	return bw_argv_build(&s->argv, p, &s->plan, &fds, cgroupns, err) ?: hide_options(s, err);
}

int be_bwrap_spawn(const struct al_policy *p, const struct pol_plan *pl, const struct be_io *io, struct be_proc *out,
		   struct al_error *err)
{
	/* The kernel's own test, as bwrap's --unshare-cgroup-try makes it. */
	bool cgroupns = access("/proc/self/ns/cgroup", F_OK) == 0;
	int r;
	if (access(BW_PATH, X_OK) < 0)
		return al_err(err, ENOENT, "the bwrap backend needs " BW_PATH " (Debian package bubblewrap): %s",
			      strerror(errno));
	struct bw_spawn s = {.sync_p = {-1, -1},
			     .status_p = {-1, -1},
			     .json_p = {-1, -1},
			     .err_p = {-1, -1},
			     .px_p = {-1, -1},
			     .rec_p = {-1, -1},
			     .init_bin = -1};
	s.plan.sendfd_sock = -1;
	struct bw_child c;
	pid_t pid;
	int pidfd = -1;
	/* Without a cgroup namespace the job would read its cgroup's host path in /proc/self/cgroup. */
	if (cgroupns)
		cg_view_plan(io->cg, &s.cgview);
	if ((r = prepare(&s, p, pl, cgroupns, err)) < 0)
		goto out;
	child_setup(&c, p, pl, io, &s);
	if ((r = start(&c, io, &s, &pid, &pidfd, err)) < 0)
		goto out;
	out->pid = pid;
	out->pidfd = steal_fd(pidfd);
	out->status_fd = steal_fd(s.status_p[0]);
	out->enforced = enforced_of(p, pl, &s, cgroupns);
	out->backend = "bwrap";
	out->seccomp_kills = s.filter.prog.len > 0; /* every profile kills foreign-ABI calls */
	out->kill_signal = SIGTERM;		    /* the monitor kills its children and reaps them (bwchild.c) */
	out->upper_sock = -1;			    /* no overlay, so no upper layer to write back */
	out->proxy_sock = steal_fd(s.px_p[0]);
out:
	if (pidfd >= 0)
		close(pidfd);
	bw_spawn_free(&s);
	return r;
}
