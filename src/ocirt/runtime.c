/* runtime.c — airlock-runc's lifecycle: create (init waits on the exec fifo), start, state, kill, delete, pause.
 *
 * Theory of operation
 *
 *   shim (containerd's, a subreaper) ── runs ──▶ airlock oci create  (exits once the container is ready)
 *        ▲                                         │ parses config.json, decides the plan (plan.c), clones the
 *        │ re-parented once create exits           │ rootfs and bind sources (open_tree), compiles seccomp,
 *        │                                         │ clone3 into the container's namespaces
 *        └──────────────────────────────────── init (pid 1 of the container, ctr init.c): mounts, pivot_root,
 *                                                  confinement (payload.c), "ready" to create, then blocks
 *                                                  reading <root>/<id>/exec.fifo
 *   airlock oci start ── writes one byte into exec.fifo, removes it ──▶ init execve()s the process.
 *
 * State lives in <root>/<id>/state.json (written once by create); the status is read from the
 * world each time: the fifo still there means created, the init gone (or a zombie, or its pid
 * reused: its start time differs) means stopped, a frozen cgroup means paused. The shim reaps
 * the container's init as runc's; the one process of airlock that may stay with a container is
 * the keeper of its exit status, forked by create where a verdict is asked (keeper.c), which ends
 * at the reap or at delete.
 */
#include "runtime.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit/pidfd.h"
#include "ctr.h"
#include "hooks.h"
#include "keeper.h"
#include "occg.h"
#include "record.h"
#include "rtstate.h"
#include "util/cleanup.h"
#include "util/error.h"

/* ---- create ------------------------------------------------------------------------------ */

int ort_connect_console(const char *path, struct al_error *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		return al_err(err, ENAMETOOLONG, "console socket path too long");
	memcpy(a.sun_path, path, strlen(path) + 1); /* the length was checked */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return al_err_sys(err, e, "console socket %s", path);
	}
	return fd;
}

/* Namespaces the config joins by path are entered by create itself before clone3 (its child
 * inherits them; pid's applies to children only), while create still holds the host's
 * privileges over them: a new user namespace could not join a host-owned one afterwards. */
static int join_paths(const struct ort_spec *s, struct al_error *err)
{
	static const char *const ns_proc_names[ORT_NS__COUNT] = {"pid", "net", "ipc", "uts", "mnt", "user", "cgroup"};
	for (int i = 0; i < ORT_NS__COUNT; i++) {
		if (!s->ns_path[i])
			continue;
		cleanup_close int fd = open(s->ns_path[i], O_RDONLY | O_CLOEXEC);
		struct stat a, b;
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/ns/%s", ns_proc_names[i]);
		if (fd < 0 || fstat(fd, &a) < 0)
			return al_err_sys(err, errno, "the namespace %s", s->ns_path[i]);
		/* A pod's namespace, not ours: create runs in the host's (the shim's) namespaces. */
		if (stat(self, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return al_err(err, EPERM, "the namespace %s is the host's: refused", s->ns_path[i]);
		if (setns(fd, ort_ns_flag((enum ort_ns)i)) < 0)
			return al_err_sys(err, errno, "joining the namespace %s", s->ns_path[i]);
	}
	return 0;
}

static uint64_t clone_flags(const struct ort_spec *s, const struct ort_plan *plan)
{
	uint64_t f = 0;
	for (int i = 0; i < ORT_NS__COUNT; i++)
		if (s->ns[i] && !s->ns_path[i] && i != ORT_NS_CGROUP)
			f |= (uint64_t)ort_ns_flag((enum ort_ns)i);
	if (plan->add_userns)
		f |= CLONE_NEWUSER;
	return f;
}

static int write_map(pid_t pid, const char *file, const struct ort_idmap *m, size_t n, struct al_error *err)
{
	char path[64], buf[ORT_MAX_IDMAPS * 40] = "";
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%u %u %u\n", m[i].inside, m[i].host, m[i].size);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		return al_err_sys(err, errno, "writing %s", file);
	return 0;
}

static int write_maps(pid_t pid, const struct ort_spec *s, const struct ort_plan *plan, struct al_error *err)
{
	if (plan->add_userns) {
		struct ort_idmap m = {0, plan->id_base, 65536};
		int r = write_map(pid, "uid_map", &m, 1, err);
		return r < 0 ? r : write_map(pid, "gid_map", &m, 1, err);
	}
	if (!s->ns[ORT_NS_USER])
		return 0;
	int r = write_map(pid, "uid_map", s->uidmap, s->nuidmap, err);
	return r < 0 ? r : write_map(pid, "gid_map", s->gidmap, s->ngidmap, err);
}

int ort_write_pid_file(const char *path, pid_t pid, struct al_error *err)
{
	char tmp[4200], buf[16];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int len = snprintf(buf, sizeof(buf), "%d", (int)pid);
	cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)len) != len || rename(tmp, path) < 0)
		return al_err_sys(err, errno, "pid file %s", path);
	return 0;
}

struct create_run {
	struct ort_spec spec;
	struct ort_plan plan;
	struct ort_init init;
	int root_tree;
	int *trees;
	int sync_p[2], status_p[2];
	pid_t pid;
	int pidfd;
	pid_t keeper;
	char *cgpath;
	json_t *enforced;
	const char *id, *bundle;
	int hook_state_fd; /* the state createContainer and startContainer hooks read, or -1 */
};

static void run_free(struct create_run *cr)
{
	if (cr->root_tree >= 0)
		close(cr->root_tree);
	for (size_t i = 0; cr->trees && i < cr->spec.nmounts; i++)
		if (cr->trees[i] >= 0)
			close(cr->trees[i]);
	free(cr->trees);
	al_close_pair(cr->sync_p);
	al_close_pair(cr->status_p);
	if (cr->init.pl.fifo_fd >= 0)
		close(cr->init.pl.fifo_fd);
	if (cr->init.pl.console_fd >= 0)
		close(cr->init.pl.console_fd);
	if (cr->pidfd >= 0)
		close(cr->pidfd);
	if (cr->hook_state_fd >= 0)
		close(cr->hook_state_fd);
	ort_payload_free(&cr->init.pl);
	ort_spec_free(&cr->spec);
	free(cr->cgpath);
	json_decref(cr->enforced);
}

/* airlock's default pids limit (the policy's, written once there). */
static int default_pids(int64_t *out, struct al_error *err)
{
	struct al_policy *p = NULL;
	int r = al_policy_new(&p);
	if (r < 0)
		return al_err(err, -r, "out of memory");
	*out = (int64_t)al_policy_get_limit(p, AL_LIMIT_PIDS);
	al_policy_free(p);
	return 0;
}

/* Filesystems a user namespace's root cannot mount: cgroup v1 never, sysfs of a network namespace
 * and mqueue of an IPC namespace it does not own (a pod's, joined). Such a mount (podman's
 * /sys/fs/cgroup, a pod's /sys) becomes an empty read-only tmpfs: the container sees less, never
 * more (runc would bind the host's /sys instead); the enforced record counts them. */
static bool unmountable(const struct ort_spec *s, const struct ort_mount *m)
{
	if (m->bind)
		return false;
	return strcmp(m->type, "cgroup") == 0 || (strcmp(m->type, "sysfs") == 0 && s->ns_path[ORT_NS_NET]) ||
	       (strcmp(m->type, "mqueue") == 0 && s->ns_path[ORT_NS_IPC]);
}

static int hide_unmountable(struct ort_spec *s, const struct ort_plan *plan, struct al_error *err)
{
	if (!plan->add_userns && !s->ns[ORT_NS_USER])
		return 0;
	for (size_t i = 0; i < s->nmounts; i++) {
		struct ort_mount *m = &s->mounts[i];
		if (!unmountable(s, m))
			continue;
		char *t = strdup("tmpfs"), *d = strdup("size=0,mode=555");
		if (!t || !d) {
			free(t);
			free(d);
			return al_err(err, ENOMEM, "out of memory");
		}
		free(m->type);
		free(m->data);
		m->type = t;
		m->data = d;
		m->flags |= MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
		s->hidden_mounts++;
	}
	return 0;
}

/* Docker's --network host names the host's network namespace by a path (a bind of it under its
 * exec root) rather than leaving the namespace out: said as what it is, before the plan's
 * general refusal of a joined namespace would word it as a pod's. */
static int host_net_path(const struct ort_spec *s, struct al_error *err)
{
	const char *p = s->ns_path[ORT_NS_NET];
	struct stat a, b;
	if (!p || stat(p, &a) < 0 || stat("/proc/self/ns/net", &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return 0;
	return al_err(err, EPERM,
		      "the config joins the host's network namespace (%s; docker --network host): refused (a "
		      "container gets a network namespace of its own: --network none, or the default)",
		      p);
}

/* Parse, decide, prepare: everything that allocates, before clone3. */
static int prepare(struct create_run *cr, const char *dir, const char *id, const struct ort_create_opts *o,
		   struct al_error *err)
{
	int r = ort_state_load_spec(o->bundle, &cr->spec, err);
	if (r < 0 || (r = host_net_path(&cr->spec, err)) < 0 ||
	    (r = ort_plan_decide(&cr->spec, geteuid() == 0, &cr->plan, err)) < 0)
		return r;
	if (cr->spec.proc.terminal && !o->console_socket)
		return al_err(err, EINVAL, "process.terminal is set: --console-socket is needed");
	/* Under a confined profile a container the config gives no pids limit gets airlock's default
	 * (a fork bomb stays bounded); memory stays the config's, which a pod's orchestrator sizes. */
	if (cr->plan.confined && cr->spec.res.pids < 0 && (r = default_pids(&cr->spec.res.pids, err)) < 0)
		return r;
	if ((r = ort_sysctls_clamp(&cr->spec, &cr->plan, err)) < 0)
		return r;
	if ((r = ort_hooks_check(&cr->spec.hooks, cr->spec.root, cr->plan.confined, cr->plan.profile, err)) < 0)
		return r;
	if ((r = hide_unmountable(&cr->spec, &cr->plan, err)) < 0 || (r = ort_prepare_rootfs(&cr->spec, err)) < 0)
		return r;
	if (!(cr->trees = calloc(cr->spec.nmounts + 1, sizeof(int))))
		return al_err(err, ENOMEM, "out of memory");
	if ((r = ort_open_trees(&cr->spec, &cr->root_tree, cr->trees, err)) < 0 ||
	    (r = ort_idmap_root(cr->root_tree, &cr->spec, &cr->plan, &cr->spec.rootmap, err)) < 0)
		return r;
	if ((r = ort_payload_prepare(&cr->init.pl, &cr->spec, &cr->plan, &cr->spec.proc, err)) < 0)
		return r;
	cr->init.pl.fifo_fd = cr->init.pl.console_fd = -1;
	/* The container's side of the hooks reads its state from a file shared with the init, which
	 * create fills once the init's pid is known (the init cannot allocate or format it). */
	const struct ort_hooks *h = &cr->spec.hooks;
	if (ort_hooks_any(h, ORT_HOOK_CREATE_CONTAINER, ORT_HOOK_START_CONTAINER) &&
	    (cr->hook_state_fd = memfd_create("oci-state", MFD_CLOEXEC)) < 0)
		return al_err_sys(err, errno, "memfd for the hooks' state");
	cr->init.pl.hook_state_fd = cr->hook_state_fd;
	cr->init.pl.start_hooks = h->n[ORT_HOOK_START_CONTAINER] ? h : NULL;
	cr->init.hooks_sync = ort_hooks_any(h, ORT_HOOK_PRESTART, ORT_HOOK_CREATE_CONTAINER);
	if ((r = ort_fifo_make(dir, &cr->init.pl.fifo_fd, err)) < 0)
		return r;
	if (cr->spec.proc.terminal && (cr->init.pl.console_fd = ort_connect_console(o->console_socket, err)) < 0)
		return cr->init.pl.console_fd;
	if (cr->spec.cgroups_path)
		cr->cgpath =
			strdup(cr->spec.cgroups_path[0] == '/' ? cr->spec.cgroups_path + 0 : cr->spec.cgroups_path);
	else if (asprintf(&cr->cgpath, "/airlock-runc/%s", id) < 0)
		cr->cgpath = NULL;
	if (cr->cgpath && cr->cgpath[0] != '/') {
		char *abs;
		if (asprintf(&abs, "/%s", cr->cgpath) < 0)
			abs = NULL;
		free(cr->cgpath);
		cr->cgpath = abs;
	}
	if (!cr->cgpath || !(cr->enforced = ort_enforced_json(&cr->spec, &cr->plan, &cr->init.pl)))
		return al_err(err, ENOMEM, "out of memory");
	/* A cgroup that already holds processes is someone else's: kill --all and delete act on
	 * every process of the container's cgroup, so sharing one would reach theirs. */
	pid_t *pids = NULL;
	size_t npids = 0;
	if (ort_cg_pids(cr->cgpath, &pids, &npids) == 0 && npids > 0)
		r = al_err(err, EBUSY, "cgroup %s already holds processes (another container's?): refused", cr->cgpath);
	free(pids);
	if (r < 0)
		return r;
	if (cr->plan.verdict && (r = ort_verdict_prepare(ort_verdict_dir(), cr->plan.verdict, err)) < 0)
		return r;
	/* The audit record is durable before the container's init exists, or nothing runs. */
	json_t *args = json_array();
	for (char **a = cr->spec.proc.argv; args && *a; a++)
		json_array_append_new(args, json_string(*a));
	json_t *params = json_pack("{s:s,s:s,s:o,s:O}", "bundle", o->bundle, "rootfs", cr->spec.root, "args", args,
				   "enforced", cr->enforced);
	r = params ? ort_audit(true, id, params, NULL, "started", err) : al_err(err, ENOMEM, "out of memory");
	json_decref(params);
	if (r < 0)
		al_err_prefix(err, "audit record (nothing runs without it)");
	return r;
}

/* The OCI state, as the hooks of the container's side will read it, into their shared file. */
static int fill_hook_state(const struct create_run *cr, const char *status, struct al_error *err)
{
	if (cr->hook_state_fd < 0)
		return 0;
	cleanup_free char *st = ort_hook_state(cr->id, status, cr->pid, cr->bundle, cr->spec.annotations);
	size_t len = st ? strlen(st) : 0;
	if (!st)
		return al_err(err, ENOMEM, "out of memory");
	if (ftruncate(cr->hook_state_fd, 0) < 0 || pwrite(cr->hook_state_fd, st, len, 0) != (ssize_t)len)
		return al_err_sys(err, errno, "the hooks' state");
	return 0;
}

/* The init's mounts are made: prestart, then createRuntime, in create's own namespaces (the
 * runtime's), then the init is let go to run createContainer's. */
static int runtime_hooks(struct create_run *cr, struct al_error *err)
{
	cleanup_free char *st = ort_hook_state(cr->id, "creating", cr->pid, cr->bundle, cr->spec.annotations);
	if (!st)
		return al_err(err, ENOMEM, "out of memory");
	int r;
	if ((r = ort_hooks_run(&cr->spec.hooks, ORT_HOOK_PRESTART, st, err)) < 0 ||
	    (r = ort_hooks_run(&cr->spec.hooks, ORT_HOOK_CREATE_RUNTIME, st, err)) < 0 ||
	    (r = fill_hook_state(cr, "creating", err)) < 0)
		return r;
	return write(cr->sync_p[1], "g", 1) == 1 ? 0 : al_err_sys(err, errno, "releasing the container's init");
}

/* The child's reports: the hooks' moment, then ready, or the step that failed. */
static int await_ready(struct create_run *cr, struct al_error *err)
{
	for (;;) {
		struct ort_record rec;
		ssize_t n = read(cr->status_p[0], &rec, sizeof(rec));
		if (n != (ssize_t)sizeof(rec))
			return al_err(err, EIO, "the container's init ended during setup");
		if (rec.stage == ORT_READY)
			return fill_hook_state(cr, "created", err);
		int r;
		if (rec.stage == ORT_HOOKS && cr->init.hooks_sync) {
			if ((r = runtime_hooks(cr, err)) < 0)
				return r;
			continue;
		}
		rec.what[sizeof(rec.what) - 1] = 0;
		return al_err(err, rec.err ? rec.err : EIO, "container init: %s%s%s: %s", ort_stage_name(rec.stage),
			      rec.what[0] ? " " : "", rec.what, strerror(rec.err));
	}
}

static int spawn(struct create_run *cr, struct al_error *err)
{
	if (pipe2(cr->sync_p, O_CLOEXEC) < 0 || pipe2(cr->status_p, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "pipe");
	int r = join_paths(&cr->spec, err);
	if (r < 0)
		return r;
	cr->init.s = &cr->spec;
	cr->init.plan = &cr->plan;
	cr->init.root_tree = cr->root_tree;
	cr->init.bind_trees = cr->trees;
	cr->init.sync_fd = cr->sync_p[0];
	cr->init.pl.status_fd = cr->status_p[1];
	/* The init is born in the v2 cgroup and joins the v1 ones itself: no move by pid (occg.h). */
	struct ort_cg_join cj;
	if ((r = ort_cg_apply(cr->cgpath, &cr->spec.res, err)) < 0 || (r = ort_cg_join_open(cr->cgpath, &cj, err)) < 0)
		return r;
	cr->init.cg_tasks = cj.tasks;
	cr->init.cg_ntasks = cj.n;
	pid_t pid = pfd_clone3(clone_flags(&cr->spec, &cr->plan), &cr->pidfd, cj.v2);
	if (pid == 0) {
		close(cr->sync_p[1]);
		close(cr->status_p[0]);
		if (cj.v2 >= 0)
			close(cj.v2);
		ort_init_main(&cr->init);
	}
	ort_cg_join_close(&cj);
	if (pid < 0)
		return al_err(err, (int)-pid, "clone3 into the container's namespaces and cgroup %s: %s", cr->cgpath,
			      strerror((int)-pid));
	cr->pid = pid;
	close(cr->status_p[1]);
	cr->status_p[1] = -1;
	if ((r = write_maps(pid, &cr->spec, &cr->plan, err)) < 0)
		return r;
	if (write(cr->sync_p[1], "g", 1) != 1)
		return al_err_sys(err, errno, "releasing the container's init");
	return await_ready(cr, err);
}

static void warn(const struct ort_ctx *c, const struct al_error *e)
{
	if (c->warn)
		c->warn(e->msg);
}

/* poststop: the container is gone; a failing hook is a warning, the rest still run (the spec). */
static void run_poststop(const struct ort_ctx *c, const struct ort_hooks *h, const char *id, pid_t pid,
			 const char *bundle, json_t *annotations)
{
	if (!h->n[ORT_HOOK_POSTSTOP])
		return;
	cleanup_free char *st = ort_hook_state(id, "stopped", pid, bundle, annotations);
	struct ort_hooks one = {0};
	for (size_t i = 0; st && i < h->n[ORT_HOOK_POSTSTOP]; i++) {
		one.v[ORT_HOOK_POSTSTOP] = &h->v[ORT_HOOK_POSTSTOP][i];
		one.n[ORT_HOOK_POSTSTOP] = 1;
		struct al_error e = {0};
		if (ort_hooks_run(&one, ORT_HOOK_POSTSTOP, st, &e) < 0)
			warn(c, &e);
	}
}

/* The hooks create kept in state.json (start's poststart, delete's poststop). */
static int saved_hooks(const struct ort_loaded *st, struct ort_hooks *h, struct al_error *err)
{
	int r = ort_hooks_parse(st->hooks, h, err);
	if (r < 0)
		al_err_prefix(err, "state.json");
	return r;
}

/* The fallback is told, not silent: the record has it, and the caller's log says it once. */
static void warn_rootmap(const struct ort_ctx *c, const struct ort_spec *s)
{
	if (s->rootmap.mode != ORT_ROOTMAP_UNSUPPORTED)
		return;
	struct al_error e = {0};
	al_err(&e, s->rootmap.err,
	       "rootfs %s (%s): no idmapped mount (%s): the container's root sees the image's root-owned "
	       "files as nobody and cannot write them",
	       s->root, s->rootmap.fs, strerror(s->rootmap.err));
	warn(c, &e);
}

int ort_create(const struct ort_ctx *c, const char *id, const struct ort_create_opts *o, struct al_error *err)
{
	cleanup_free char *dir = NULL;
	int r = ort_state_mkdir(c->root, id, &dir, err);
	if (r < 0)
		return r;
	struct create_run cr = {.root_tree = -1,
				.sync_p = {-1, -1},
				.status_p = {-1, -1},
				.pidfd = -1,
				.hook_state_fd = -1,
				.id = id,
				.bundle = o->bundle};
	cr.init.pl.fifo_fd = cr.init.pl.console_fd = -1;
	if ((r = prepare(&cr, dir, id, o, err)) < 0)
		goto fail;
	warn_rootmap(c, &cr.spec);
	if ((r = spawn(&cr, err)) < 0)
		goto fail;
	/* Before the state is saved: a container whose end could not be kept is not made. */
	if (cr.plan.verdict && (cr.keeper = ort_keeper_start(cr.pidfd, dir, err)) < 0) {
		r = cr.keeper;
		cr.keeper = 0;
		goto fail;
	}
	struct ort_saved sv = {.id = id,
			       .pid = cr.pid,
			       .keeper = cr.keeper,
			       .bundle = o->bundle,
			       .rootfs = cr.spec.root,
			       .cgroup = cr.cgpath,
			       .annotations = cr.spec.annotations,
			       .profile = cr.plan.profile,
			       .verdict = cr.plan.verdict,
			       .verdict_dir = cr.plan.verdict ? ort_verdict_dir() : NULL,
			       .enforced = cr.enforced,
			       .hooks = cr.spec.hooks_json};
	if ((r = ort_state_save(dir, &sv, err)) < 0 ||
	    (o->pid_file && (r = ort_write_pid_file(o->pid_file, cr.pid, err)) < 0))
		goto fail;
	run_free(&cr);
	return 0;
fail:
	ort_keeper_abort(cr.keeper);
	if (cr.pidfd >= 0) {
		pfd_send_signal(cr.pidfd, SIGKILL);
		siginfo_t si;
		pfd_wait(cr.pidfd, &si, NULL, WEXITED);
	}
	if (cr.cgpath)
		ort_cg_remove(cr.cgpath);
	/* As runc's destroy after a failed create: a container that existed has its poststop hooks. */
	if (cr.pid > 0)
		run_poststop(c, &cr.spec.hooks, id, cr.pid, o->bundle, cr.spec.annotations);
	/* The start record is closed: this container never ran (a refusal before it has none). */
	if (cr.enforced) {
		struct al_error e2 = {0};
		ort_audit(false, id, NULL, NULL, "setup_error", &e2);
	}
	run_free(&cr);
	ort_state_rmdir(dir);
	return r;
}

/* ---- the others ---------------------------------------------------------------------------- */

int ort_start(const struct ort_ctx *c, const char *id, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	if (strcmp(st.status, "created") != 0) {
		r = al_err(err, EINVAL, "cannot start a container that is %s (only a created one)", st.status);
		goto out;
	}
	struct ort_hooks h;
	if ((r = saved_hooks(&st, &h, err)) < 0 || (r = ort_fifo_release(st.dir, err)) < 0)
		goto out;
	/* poststart: the process runs; a failing hook is a warning, the container goes on (the spec;
	 * runc instead runs them at the end of create and kills the container on a failure). */
	if (h.n[ORT_HOOK_POSTSTART]) {
		cleanup_free char *state = ort_hook_state(id, "running", st.pid, st.bundle, st.annotations);
		struct al_error e = {0};
		if (!state || ort_hooks_run(&h, ORT_HOOK_POSTSTART, state, &e) < 0)
			warn(c, &e);
	}
	ort_hooks_free(&h);
out:
	ort_loaded_free(&st);
	return r;
}

int ort_status(const struct ort_ctx *c, const char *id, const char **status, pid_t *pid, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	*status = st.status;
	*pid = st.pid;
	ort_loaded_free(&st);
	return 0;
}

int ort_state(const struct ort_ctx *c, const char *id, char **json, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:s}", "ociVersion", "1.0.2", "id", id, "status", st.status,
			      "pid", strcmp(st.status, "stopped") == 0 ? 0 : (int)st.pid, "bundle", st.bundle, "rootfs",
			      st.rootfs, "created", st.created, "owner", "");
	if (o && st.annotations)
		json_object_set(o, "annotations", st.annotations);
	*json = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
	json_decref(o);
	ort_loaded_free(&st);
	return *json ? 0 : al_err(err, ENOMEM, "out of memory");
}

int ort_kill(const struct ort_ctx *c, const char *id, int sig, bool all, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	if (strcmp(st.status, "stopped") == 0 && !all) {
		r = al_err(err, ESRCH, "container %s is not running", id);
	} else if (all) {
		r = ort_cg_kill(st.cgroup, sig);
		if (r < 0)
			al_err(err, -r, "signalling the container's processes: %s", strerror(-r));
	} else if (pfd_send_signal(st.pidfd, sig) < 0) {
		r = al_err_sys(err, errno, "signalling the container's init");
	}
	ort_loaded_free(&st);
	return r;
}

int ort_delete(const struct ort_ctx *c, const char *id, bool force, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	bool stopped = strcmp(st.status, "stopped") == 0, created = strcmp(st.status, "created") == 0;
	if (!stopped && !created && !force) {
		r = al_err(err, EBUSY, "cannot delete container %s: it is %s, not stopped (kill it first, or --force)",
			   id, st.status);
		goto out;
	}
	/* Whatever is left (a created init, a forced delete, a process that escaped the pid
	 * namespace's end into the cgroup) is killed before the cgroup goes. */
	if (!stopped && st.pidfd >= 0)
		pfd_send_signal(st.pidfd, SIGKILL);
	ort_cg_kill(st.cgroup, SIGKILL);
	struct ort_end end;
	ort_keeper_collect(&st, !stopped, &end);
	/* Read before the cgroup goes: the record of what the container used. */
	ort_state_finish(&st, &end);
	ort_cg_remove(st.cgroup);
	ort_state_rmdir(st.dir);
	struct ort_hooks h;
	struct al_error e = {0};
	if (saved_hooks(&st, &h, &e) < 0)
		warn(c, &e);
	else
		run_poststop(c, &h, id, st.pid, st.bundle, st.annotations);
	ort_hooks_free(&h);
	r = 0;
out:
	ort_loaded_free(&st);
	return r;
}

int ort_pause(const struct ort_ctx *c, const char *id, bool pause, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	const char *want = pause ? "running" : "paused";
	if (strcmp(st.status, want) != 0)
		r = al_err(err, EINVAL, "container %s is %s, not %s", id, st.status, want);
	else if ((r = ort_cg_freeze(st.cgroup, pause)) < 0)
		al_err(err, -r, "freezer: %s", strerror(-r));
	ort_loaded_free(&st);
	return r;
}

int ort_ps(const struct ort_ctx *c, const char *id, pid_t **pids, size_t *n, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	if ((r = ort_cg_pids(st.cgroup, pids, n)) < 0)
		al_err(err, -r, "reading the container's cgroup: %s", strerror(-r));
	ort_loaded_free(&st);
	return r;
}

int ort_stats(const struct ort_ctx *c, const char *id, char **json, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	json_t *data = NULL;
	if ((r = ort_cg_stats(st.cgroup, &data)) < 0) {
		al_err(err, -r, "reading the container's cgroup: %s", strerror(-r));
	} else {
		json_t *o = json_pack("{s:s,s:s,s:o}", "type", "stats", "id", id, "data", data);
		*json = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		r = *json ? 0 : al_err(err, ENOMEM, "out of memory");
	}
	ort_loaded_free(&st);
	return r;
}

int ort_update(const struct ort_ctx *c, const char *id, const char *resources, struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	cleanup_free char *text = NULL;
	struct ort_spec s;
	/* The resources object is parsed as a config's linux.resources, by the same code. */
	if (asprintf(&text,
		     "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"/\"},\"process\":{\"args\":[\"-\"]},"
		     "\"linux\":{\"resources\":%s}}",
		     resources) < 0) {
		r = al_err(err, ENOMEM, "out of memory");
		goto out;
	}
	if ((r = ort_spec_parse(text, strlen(text), "/", &s, err)) < 0) {
		al_err_prefix(err, "update --resources");
		goto out;
	}
	r = ort_cg_apply(st.cgroup, &s.res, err);
	ort_spec_free(&s);
out:
	ort_loaded_free(&st);
	return r;
}

int ort_list(const struct ort_ctx *c, char ***ids, struct al_error *err)
{
	DIR *d = opendir(c->root);
	size_t n = 0;
	char **v = calloc(1, sizeof(*v));
	struct dirent *e;
	while (v && d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char **nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n++] = strdup(e->d_name);
		v[n] = NULL;
	}
	if (d)
		closedir(d);
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	*ids = v;
	return 0;
}
