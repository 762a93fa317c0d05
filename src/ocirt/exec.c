/* exec.c — `exec`: a new process in a running container, confined as its init was (same plan, same layers).
 *
 *   airlock oci exec (a subreaper when it waits)
 *     └─ fork ─▶ joiner: joins the container's cgroup (create writes it in), then its user, mount,
 *                ipc, uts, net, cgroup and pid namespaces; forks the process (the pid namespace
 *                applies to children) and exits
 *                  └─▶ process: pid N of the container, ort_payload_main (confinement, execve)
 * With --detach the process is re-parented to the shim (its subreaper) when exec exits; without,
 * exec is the subreaper that inherits it, waits and returns its status.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "kit/pidfd.h"
#include "kit/rawsys.h"
#include "ctr.h"
#include "occg.h"
#include "rtstate.h"
#include "runtime.h"
#include "util/cleanup.h"
#include "util/error.h"

/* In joining order: the user namespace first (it gives the rights over the others), pid last. */
static const struct {
	const char *name;
	int flag;
} join_order[] = {{"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS},	{"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
		  {"net", CLONE_NEWNET},   {"cgroup", CLONE_NEWCGROUP}, {"pid", CLONE_NEWPID}};
#define NJOIN (sizeof(join_order) / sizeof(join_order[0]))

/* The init's namespaces that differ from ours (setns into our own user namespace fails). */
static int open_namespaces(pid_t pid, int fds[NJOIN], struct al_error *err)
{
	for (size_t i = 0; i < NJOIN; i++) {
		char p[64], q[64];
		struct stat a, b;
		snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, join_order[i].name);
		snprintf(q, sizeof(q), "/proc/self/ns/%s", join_order[i].name);
		fds[i] = -1;
		if (stat(p, &a) < 0)
			return al_err_sys(err, errno, "%s", p);
		if (stat(q, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			continue;
		if ((fds[i] = open(p, O_RDONLY | O_CLOEXEC)) < 0)
			return al_err_sys(err, errno, "%s", p);
	}
	return 0;
}

/* The joiner (a child of exec): nothing allocated; failures go to the status pipe. */
static _Noreturn void joiner(struct ort_payload *pl, const int fds[NJOIN], const struct ort_cg_join *cj, int sync_fd,
			     int pid_fd)
{
	char go;
	if (cj->v2 >= 0)
		close(cj->v2);
	if (read(sync_fd, &go, 1) != 1)
		_exit(1);
	/* Born in the container's v2 cgroup; the v1 ones joined the cheap way (occg.h). */
	int r = cg_join_self(cj->tasks, cj->n);
	if (r < 0)
		ort_die(pl->status_fd, ORT_CGROUP, -r, NULL);
	for (size_t i = 0; i < NJOIN; i++)
		if (fds[i] >= 0 && setns(fds[i], join_order[i].flag) < 0)
			ort_die(pl->status_fd, ORT_SETNS, errno, join_order[i].name);
	/* Root of the container's user namespace (when it has one), as its init was before confining. */
	if (fds[0] >= 0 && (raw_setresgid(0, 0, 0) < 0 || raw_setresuid(0, 0, 0) < 0))
		ort_die(pl->status_fd, ORT_IDS, errno, "the namespace's root");
	pid_t pid = raw_fork();
	if (pid < 0)
		ort_die(pl->status_fd, ORT_SETNS, errno, "fork");
	if (pid == 0) {
		if (pl->console_fd >= 0)
			ort_setup_terminal(pl);
		ort_payload_main(pl);
	}
	if (write(pid_fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		_exit(1);
	_exit(0);
}

struct exec_run {
	struct ort_spec spec;
	struct ort_process proc;
	struct ort_plan plan;
	struct ort_payload pl;
	int ns[NJOIN];
	int sync_p[2], status_p[2], pid_p[2];
};

static void exec_free(struct exec_run *x)
{
	for (size_t i = 0; i < NJOIN; i++)
		if (x->ns[i] >= 0)
			close(x->ns[i]);
	al_close_pair(x->sync_p);
	al_close_pair(x->status_p);
	al_close_pair(x->pid_p);
	if (x->pl.console_fd >= 0)
		close(x->pl.console_fd);
	ort_payload_free(&x->pl);
	ort_process_free(&x->proc);
	ort_spec_free(&x->spec);
}

static int load_process(const char *path, struct ort_process *p, struct al_error *err)
{
	json_error_t je;
	json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return al_err(err, EINVAL, "exec --process %s: %s", path, je.text);
	int r = ort_process_parse(j, p, err);
	json_decref(j);
	return r;
}

static int prepare(struct exec_run *x, const struct ort_loaded *st, const struct ort_exec_opts *o, struct al_error *err)
{
	int r;
	if ((r = ort_state_load_spec(st->bundle, &x->spec, err)) < 0 ||
	    (r = ort_plan_decide(&x->spec, geteuid() == 0, &x->plan, err)) < 0 ||
	    (r = load_process(o->process, &x->proc, err)) < 0)
		return r;
	/* The process gets the container's plan: what its config asks beyond that is not granted. */
	if ((r = ort_payload_prepare(&x->pl, &x->spec, &x->plan, &x->proc, err)) < 0)
		return r;
	x->pl.fifo_fd = x->pl.console_fd = -1;
	if (x->proc.terminal && !o->console_socket)
		return al_err(err, EINVAL, "process.terminal is set: --console-socket is needed");
	if (x->proc.terminal && (x->pl.console_fd = ort_connect_console(o->console_socket, err)) < 0)
		return x->pl.console_fd;
	if ((r = open_namespaces(st->pid, x->ns, err)) < 0)
		return r;
	if (pipe2(x->sync_p, O_CLOEXEC) < 0 || pipe2(x->status_p, O_CLOEXEC) < 0 || pipe2(x->pid_p, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "pipe");
	return 0;
}

static int await(struct exec_run *x, pid_t joiner_pid, pid_t *out, struct al_error *err)
{
	int st;
	waitpid(joiner_pid, &st, 0);
	struct ort_record rec;
	ssize_t n = read(x->status_p[0], &rec, sizeof(rec));
	if (n == (ssize_t)sizeof(rec) && rec.stage != ORT_READY) {
		rec.what[sizeof(rec.what) - 1] = 0;
		return al_err(err, rec.err ? rec.err : EIO, "exec: %s%s%s: %s", ort_stage_name(rec.stage),
			      rec.what[0] ? " " : "", rec.what, strerror(rec.err));
	}
	if (n != (ssize_t)sizeof(rec) || read(x->pid_p[0], out, sizeof(*out)) != (ssize_t)sizeof(*out))
		return al_err(err, EIO, "exec: the process ended during setup");
	return 0;
}

int ort_exec(const struct ort_ctx *c, const char *id, const struct ort_exec_opts *o, int *exit_code,
	     struct al_error *err)
{
	struct ort_loaded st;
	int r = ort_state_open(c->root, id, &st, err);
	if (r < 0)
		return r;
	struct exec_run x = {.sync_p = {-1, -1}, .status_p = {-1, -1}, .pid_p = {-1, -1}};
	for (size_t i = 0; i < NJOIN; i++)
		x.ns[i] = -1;
	x.pl.console_fd = -1;
	if (strcmp(st.status, "running") != 0 && strcmp(st.status, "created") != 0) {
		r = al_err(err, EINVAL, "cannot exec in container %s that is %s", id, st.status);
		goto out;
	}
	if ((r = prepare(&x, &st, o, err)) < 0)
		goto out;
	/* Without --detach the process comes back to us when the joiner exits. */
	if (!o->detach)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	x.pl.status_fd = x.status_p[1];
	struct ort_cg_join cj;
	/* The container's cgroup, as it is (no limit set): the process is born in it and joins it. */
	static const struct ort_resources as_is = {.memory = -1, .pids = -1, .cpu_quota = -1};
	if ((r = ort_cg_apply(st.cgroup, &as_is, err)) < 0 || (r = ort_cg_join_open(st.cgroup, &cj, err)) < 0)
		goto out;
	int jpfd = -1;
	pid_t jp = pfd_clone3(0, &jpfd, cj.v2);
	if (jp == 0) {
		close(x.sync_p[1]);
		close(x.status_p[0]);
		close(x.pid_p[0]);
		joiner(&x.pl, x.ns, &cj, x.sync_p[0], x.pid_p[1]);
	}
	ort_cg_join_close(&cj);
	if (jp < 0) {
		r = al_err(err, (int)-jp, "exec: starting the process in cgroup %s: %s", st.cgroup, strerror((int)-jp));
		goto out;
	}
	close(jpfd);
	close(x.status_p[1]);
	close(x.pid_p[1]);
	x.status_p[1] = x.pid_p[1] = -1;
	if (write(x.sync_p[1], "g", 1) != 1) {
		kill(jp, SIGKILL);
		waitpid(jp, NULL, 0);
		r = al_err_sys(err, errno, "exec: releasing the process");
		goto out;
	}
	pid_t pid;
	if ((r = await(&x, jp, &pid, err)) < 0 || (o->pid_file && (r = ort_write_pid_file(o->pid_file, pid, err)) < 0))
		goto out;
	if (!o->detach) {
		ort_state_unlock(&st); /* kill and delete must reach the container meanwhile */
		int ws;
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
		*exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	}
	r = 0;
out:
	exec_free(&x);
	ort_loaded_free(&st);
	return r;
}
