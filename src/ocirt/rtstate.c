/* rtstate.c — state.json, the exec fifo and the status of a container, read from the world each time. */
#include "rtstate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "keeper.h"
#include "occg.h"
#include "record.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

#define FIFO  "exec.fifo"
#define STATE "state.json"

bool ort_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > 128 ||
	    !((id[0] >= 'a' && id[0] <= 'z') || (id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= '0' && id[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-", id[i]))
			return false;
	return true;
}

static int container_dir(const char *root, const char *id, char **dir, struct al_error *err)
{
	if (!ort_id_valid(id))
		return al_err(err, EINVAL, "invalid container id '%s'", id);
	if (asprintf(dir, "%s/%s", root, id) < 0)
		return al_err(err, ENOMEM, "out of memory");
	return 0;
}

int ort_state_mkdir(const char *root, const char *id, char **dir, struct al_error *err)
{
	int r = container_dir(root, id, dir, err);
	if (r < 0)
		return r;
	/* The root and its parents, as runc makes them (containerd's is <runc-root>/<namespace>). */
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", root);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(buf, 0711);
			*p = '/';
		}
	if (mkdir(root, 0711) < 0 && errno != EEXIST)
		return al_err_sys(err, errno, "state root %s", root);
	if (mkdir(*dir, 0711) < 0)
		return errno == EEXIST ? al_err(err, EEXIST, "container with id %s already exists", id)
				       : al_err_sys(err, errno, "state directory %s", *dir);
	return 0;
}

void ort_state_rmdir(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/" FIFO, dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/" STATE, dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/" ORT_EXIT_FILE, dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/" ORT_EXIT_FILE_TMP, dir);
	unlink(p);
	rmdir(dir);
}

int ort_state_load_spec(const char *bundle, struct ort_spec *s, struct al_error *err)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/config.json", bundle);
	FILE *f = fopen(p, "re");
	if (!f)
		return al_err_sys(err, errno, "%s", p);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	char buf[8192];
	size_t n;
	while (m && (n = fread(buf, 1, sizeof(buf), f)) > 0 && len < (16u << 20))
		fwrite(buf, 1, n, m);
	fclose(f);
	if (m)
		fclose(m);
	if (!text)
		return al_err(err, ENOMEM, "out of memory");
	int r = len >= (16u << 20) ? al_err(err, EFBIG, "%s: larger than 16 MiB", p)
				   : ort_spec_parse(text, len, bundle, s, err);
	free(text);
	return r;
}

/* /proc/PID/stat, its start time and its state letter. */
static int read_stat(pid_t pid, char *buf, size_t size, uint64_t *start, char *state)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	cleanup_close int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	char *rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ')
		return -EINVAL;
	*state = rp[2];
	return cg_parse_proc_start(buf, start);
}

int ort_proc_stat(pid_t pid, uint64_t *start, char *state)
{
	char buf[1024];
	return read_stat(pid, buf, sizeof(buf), start, state);
}

int ort_zombie_status(pid_t pid, uint64_t start, int *wstatus)
{
	char buf[1024], state;
	uint64_t now, code;
	int r = read_stat(pid, buf, sizeof(buf), &now, &state);
	if (r < 0 || now != start || state != 'Z')
		return -ESRCH;
	/* The kernel shows a reader without ptrace access to the process 0 there, which would read as
	 * "exited 0": only the host's root, who always has that access, takes the field at its word. */
	if (geteuid() != 0)
		return -EACCES;
	if (cg_parse_proc_field(buf, 52, &code) < 0 || code > 0xffff)
		return -EINVAL;
	*wstatus = (int)code;
	return 0;
}

int ort_state_save(const char *dir, const struct ort_saved *sv, struct al_error *err)
{
	uint64_t start = 0, kstart = 0;
	char st, created[TXT_RFC3339_MAX];
	if (ort_proc_stat(sv->pid, &start, &st) < 0)
		return al_err(err, ESRCH, "the container's init is gone");
	/* The keeper is create's child, so it is there to read (a zombie at worst) until create exits. */
	if (sv->keeper > 0 && ort_proc_stat(sv->keeper, &kstart, &st) < 0)
		return al_err(err, ESRCH, "the exit status keeper is gone");
	txt_rfc3339_now(9, created);
	json_t *o = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:I,s:s,s:s*,s:s*}", "id", sv->id, "pid", (int)sv->pid,
			      "bundle", sv->bundle, "rootfs", sv->rootfs, "created", created, "cgroup", sv->cgroup,
			      "start_ticks", (json_int_t)start, "profile", sv->profile, "verdict", sv->verdict,
			      "verdict_dir", sv->verdict_dir);
	if (o && sv->keeper > 0)
		json_object_set_new(o, "keeper",
				    json_pack("{s:i,s:I}", "pid", (int)sv->keeper, "start_ticks", (json_int_t)kstart));
	if (o && sv->annotations)
		json_object_set(o, "annotations", sv->annotations);
	if (o && sv->enforced)
		json_object_set(o, "enforced", sv->enforced);
	if (o && sv->hooks)
		json_object_set(o, "hooks", sv->hooks);
	char p[4200], tmp[4210];
	snprintf(p, sizeof(p), "%s/" STATE, dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	int r = o ? json_dump_file(o, tmp, JSON_COMPACT) : -1;
	json_decref(o);
	if (r < 0 || rename(tmp, p) < 0)
		return al_err_sys(err, errno ? errno : EIO, "writing %s", p);
	return 0;
}

int ort_pidfd_checked(pid_t pid, uint64_t start)
{
	uint64_t now;
	char state;
	if (ort_proc_stat(pid, &now, &state) < 0 || now != start || state == 'Z' || state == 'X')
		return -1;
	/* Opened after the start time matched: if the pid were reused between the two, the new
	 * process would have a later start time, which the next reading catches. */
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static const char *status_of(struct ort_loaded *st)
{
	st->pidfd = ort_pidfd_checked(st->pid, st->start);
	if (st->pidfd < 0)
		return "stopped";
	char p[4200];
	snprintf(p, sizeof(p), "%s/" FIFO, st->dir);
	if (access(p, F_OK) == 0)
		return "created";
	return ort_cg_frozen(st->cgroup) ? "paused" : "running";
}

int ort_state_open(const char *root, const char *id, struct ort_loaded *st, struct al_error *err)
{
	memset(st, 0, sizeof(*st));
	st->pidfd = st->lock_fd = -1;
	int r = container_dir(root, id, &st->dir, err);
	if (r < 0)
		return r;
	char p[4200];
	snprintf(p, sizeof(p), "%s/" STATE, st->dir);
	json_error_t je;
	/* Operations on one container are serialized (delete removes what a concurrent kill reads):
	 * a lock on its directory, held until ort_loaded_free (exec lets go once its process runs). */
	st->lock_fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->lock_fd >= 0)
		flock(st->lock_fd, LOCK_EX);
	st->doc = json_load_file(p, 0, &je);
	if (!st->doc) {
		r = access(p, F_OK) == 0 ? al_err(err, EIO, "%s: %s", p, je.text)
					 : al_err(err, ENOENT, "container %s does not exist", id);
		ort_loaded_free(st);
		return r;
	}
	json_int_t pid = 0, start = 0;
	if (json_unpack(st->doc, "{s:I,s:s,s:s,s:s,s:s,s:I,s?s,s?s,s?s}", "pid", &pid, "bundle", &st->bundle, "rootfs",
			&st->rootfs, "created", &st->created, "cgroup", &st->cgroup, "start_ticks", &start, "profile",
			&st->profile, "verdict", &st->verdict, "verdict_dir", &st->verdict_dir) < 0) {
		ort_loaded_free(st);
		return al_err(err, EIO, "%s: malformed", p);
	}
	st->annotations = json_object_get(st->doc, "annotations");
	st->enforced = json_object_get(st->doc, "enforced");
	st->hooks = json_object_get(st->doc, "hooks");
	st->pid = (pid_t)pid;
	st->start = (uint64_t)start;
	json_int_t kpid = 0, kstart = 0;
	if (json_unpack(st->doc, "{s:{s:I,s:I}}", "keeper", "pid", &kpid, "start_ticks", &kstart) == 0) {
		st->keeper_pid = (pid_t)kpid;
		st->keeper_start = (uint64_t)kstart;
	}
	st->status = status_of(st);
	return 0;
}

void ort_state_unlock(struct ort_loaded *st)
{
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	st->lock_fd = -1;
}

void ort_loaded_free(struct ort_loaded *st)
{
	ort_state_unlock(st);
	if (st->pidfd >= 0)
		close(st->pidfd);
	json_decref(st->doc);
	free(st->dir);
	memset(st, 0, sizeof(*st));
	st->pidfd = st->lock_fd = -1;
}

int ort_fifo_make(const char *dir, int *fd, struct al_error *err)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/" FIFO, dir);
	if (mkfifo(p, 0600) < 0)
		return al_err_sys(err, errno, "%s", p);
	if ((*fd = open(p, O_RDWR | O_CLOEXEC)) < 0)
		return al_err_sys(err, errno, "%s", p);
	return 0;
}

int ort_fifo_release(const char *dir, struct al_error *err)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/" FIFO, dir);
	cleanup_close int fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENXIO ? al_err(err, ESRCH, "the container's init is gone")
				      : al_err_sys(err, errno, "%s", p);
	/* Removed first: from here on the container counts as running, so a second start is refused. */
	unlink(p);
	if (write(fd, "0", 1) != 1)
		return al_err_sys(err, errno, "releasing the container's process");
	return 0;
}

/* The memory limit's kills, in the cgroup's figures (ort_cg_stats: memory.oom_kills). */
static bool oom_killed(json_t *usage)
{
	return json_integer_value(json_object_get(json_object_get(usage, "memory"), "oom_kills")) > 0;
}

void ort_state_finish(const struct ort_loaded *st, struct ort_end *end)
{
	json_t *usage = ort_usage_json(st->cgroup);
	/* As airlock run decides it: a SIGKILL with an OOM kill in the container's cgroup is the
	 * memory limit's doing. */
	if (end->known && end->status == AL_STATUS_SIGNALED && end->signal == SIGKILL && oom_killed(usage))
		end->status = AL_STATUS_OOM;
	struct al_error e = {0};
	const char *id = strrchr(st->dir, '/') + 1;
	if (st->verdict)
		ort_verdict_write(st->verdict_dir ? st->verdict_dir : ort_verdict_dir(), st->verdict, id, end, usage,
				  st->enforced, st->created, &e);
	ort_audit(false, id, NULL, usage, ort_end_status(end), &e);
	json_decref(usage);
}
