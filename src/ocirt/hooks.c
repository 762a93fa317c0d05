/* hooks.c — config.json's hooks: parsed strictly, checked against the profile, run as runc runs them.
 *
 * Hooks come from the engine that wrote the bundle (Docker's libnetwork-setkey, a device plugin's
 * prestart), never from the image: the engine that chooses the config's mounts and namespaces is
 * trusted as much as the config itself, so the host-side points (prestart, createRuntime,
 * poststart, poststop) run as runc runs them, as the runtime's caller in its namespaces. What a
 * confined profile forbids is an image's own program running outside the confinement: a hook whose
 * path resolves beneath the container's rootfs at a point that runs before airlock confines it.
 * startContainer runs inside the container after the whole confinement, as the process will.
 *
 * Each hook gets the OCI state on stdin (a memfd: no pipe to fill when the hook does not read it),
 * its args and env as given (no env: the runtime's environment, as Go's exec gives runc's hooks),
 * and is killed past its timeout. The first that fails stops its point's list.
 */
#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit/pidfd.h"
#include "util/cleanup.h"
#include "util/error.h"

extern char **environ;

static const char *const point_names[ORT_HOOK__COUNT] = {
	[ORT_HOOK_PRESTART] = "prestart",
	[ORT_HOOK_CREATE_RUNTIME] = "createRuntime",
	[ORT_HOOK_CREATE_CONTAINER] = "createContainer",
	[ORT_HOOK_START_CONTAINER] = "startContainer",
	[ORT_HOOK_POSTSTART] = "poststart",
	[ORT_HOOK_POSTSTOP] = "poststop",
};

const char *ort_hook_name(enum ort_hook_point p)
{
	return point_names[p];
}

/* ---- parsing (pure) ------------------------------------------------------------------------ */

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int strv(json_t *j, const char *what, char ***out, struct al_error *err)
{
	if (!json_is_array(j))
		return al_err(err, EINVAL, "config.json: %s must be an array of strings", what);
	char **v = calloc(json_array_size(j) + 1, sizeof(*v));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(j); i++) {
		json_t *s = json_array_get(j, i);
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s) ||
		    !(v[i] = strdup(json_string_value(s)))) {
			free_strv(v);
			return json_is_string(s) && strlen(json_string_value(s)) == json_string_length(s)
				       ? al_err(err, ENOMEM, "out of memory")
				       : al_err(err, EINVAL, "config.json: %s must be an array of strings", what);
		}
	}
	*out = v;
	return 0;
}

static int parse_hook(json_t *j, const char *point, struct ort_hook *hk, struct al_error *err)
{
	if (!json_is_object(j))
		return al_err(err, EINVAL, "config.json: hooks.%s[] must be objects", point);
	json_t *path = json_object_get(j, "path"), *args = json_object_get(j, "args"), *env = json_object_get(j, "env"),
	       *to = json_object_get(j, "timeout");
	if (!json_is_string(path) || json_string_value(path)[0] != '/' ||
	    strlen(json_string_value(path)) != json_string_length(path))
		return al_err(err, EINVAL, "config.json: hooks.%s[].path must be an absolute path", point);
	if (to && (!json_is_integer(to) || json_integer_value(to) <= 0 || json_integer_value(to) > INT_MAX / 1000))
		return al_err(err, EINVAL, "config.json: hooks.%s[].timeout must be a positive number of seconds",
			      point);
	hk->timeout = to ? (int)json_integer_value(to) : 0;
	if (!(hk->path = strdup(json_string_value(path))))
		return al_err(err, ENOMEM, "out of memory");
	char what[64];
	snprintf(what, sizeof(what), "hooks.%s[].args", point);
	int r = args ? strv(args, what, &hk->argv, err) : 0;
	if (r < 0)
		return r;
	/* No args (or none at all): argv[0] is the path, as Go's exec.Cmd makes it for runc. */
	if (!hk->argv || !hk->argv[0]) {
		free_strv(hk->argv);
		if (!(hk->argv = calloc(2, sizeof(char *))) || !(hk->argv[0] = strdup(hk->path)))
			return al_err(err, ENOMEM, "out of memory");
	}
	snprintf(what, sizeof(what), "hooks.%s[].env", point);
	return env ? strv(env, what, &hk->envp, err) : 0;
}

static void free_hook(struct ort_hook *hk)
{
	free(hk->path);
	free_strv(hk->argv);
	free_strv(hk->envp);
}

void ort_hooks_free(struct ort_hooks *h)
{
	for (int p = 0; p < ORT_HOOK__COUNT; p++) {
		for (size_t i = 0; i < h->n[p]; i++)
			free_hook(&h->v[p][i]);
		free(h->v[p]);
	}
	memset(h, 0, sizeof(*h));
}

static int hooks_parse(json_t *j, struct ort_hooks *h, struct al_error *err)
{
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_object(j))
		return al_err(err, EINVAL, "config.json: hooks must be an object");
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v) {
		int p = 0;
		while (p < ORT_HOOK__COUNT && strcmp(point_names[p], k) != 0)
			p++;
		/* An unknown point is refused: a hook the engine expects to run must not be skipped. */
		if (p == ORT_HOOK__COUNT)
			return al_err(err, EINVAL, "config.json: unknown hook point hooks.%s", k);
		if (!json_is_array(v))
			return al_err(err, EINVAL, "config.json: hooks.%s must be an array", k);
		if (!(h->v[p] = calloc(json_array_size(v) + 1, sizeof(struct ort_hook))))
			return al_err(err, ENOMEM, "out of memory");
		for (size_t i = 0; i < json_array_size(v); i++) {
			int r = parse_hook(json_array_get(v, i), k, &h->v[p][h->n[p]++], err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int ort_hooks_parse(json_t *j, struct ort_hooks *h, struct al_error *err)
{
	memset(h, 0, sizeof(*h));
	int r = hooks_parse(j, h, err);
	if (r < 0)
		ort_hooks_free(h);
	return r;
}

bool ort_hooks_any(const struct ort_hooks *h, enum ort_hook_point first, enum ort_hook_point last)
{
	for (int p = (int)first; p <= (int)last; p++)
		if (h->n[p])
			return true;
	return false;
}

char *ort_hook_state(const char *id, const char *status, pid_t pid, const char *bundle, json_t *annotations)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:s}", "ociVersion", "1.0.2", "id", id, "status", status, "pid",
			      (int)pid, "bundle", bundle);
	if (o && annotations)
		json_object_set(o, "annotations", annotations);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

/* ---- the runtime's side -------------------------------------------------------------------- */

/* What a hook printed on one stream: the first bytes kept, the rest drained. */
struct capture {
	int fd;
	char buf[2048];
	size_t len;
};

/* One read: into the kept bytes while there is room, else thrown away. EOF or an error closes. */
static bool read_some(struct capture *c)
{
	char junk[4096];
	bool keep = c->len < sizeof(c->buf);
	ssize_t n = read(c->fd, keep ? c->buf + c->len : junk, keep ? sizeof(c->buf) - c->len : sizeof(junk));
	if (n > 0) {
		if (keep)
			c->len += (size_t)n;
		return true;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return false;
	close(c->fd);
	c->fd = -1;
	return false;
}

static int memfd_with(const char *text)
{
	int fd = memfd_create("oci-state", MFD_CLOEXEC);
	size_t len = strlen(text);
	if (fd >= 0 && (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms = (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms;
}

/* Waits for the hook (its pidfd) while reading its output; -ETIMEDOUT once past the deadline. */
static int supervise(int pidfd, struct capture *out, struct capture *errc, int timeout, int *wstatus)
{
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout;
	bool exited = false;
	while (!exited) {
		struct pollfd p[3] = {{pidfd, POLLIN, 0}, {out->fd, POLLIN, 0}, {errc->fd, POLLIN, 0}};
		int n = poll(p, 3, timeout ? (int)ms_left(&deadline) : -1);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0) {
			pfd_send_signal(pidfd, SIGKILL);
			siginfo_t si;
			pfd_wait(pidfd, &si, NULL, WEXITED);
			return -ETIMEDOUT;
		}
		if (p[1].revents)
			read_some(out);
		if (p[2].revents)
			read_some(errc);
		exited = p[0].revents != 0;
	}
	siginfo_t si = {0};
	if (pfd_wait(pidfd, &si, NULL, WEXITED) < 0)
		return -errno;
	*wstatus = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f;
	/* What is in the pipes now; a child the hook left behind holding them is not waited for. */
	for (struct capture *c = out; c; c = c == out ? errc : NULL)
		if (c->fd >= 0) {
			fcntl(c->fd, F_SETFL, O_NONBLOCK);
			while (c->fd >= 0 && read_some(c))
				;
		}
	return 0;
}

static int run_one(const struct ort_hook *hk, const char *point, size_t idx, int state_fd, struct al_error *err)
{
	int op[2] = {-1, -1}, ep[2] = {-1, -1};
	if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		int e = errno;
		al_close_pair(op);
		return al_err_sys(err, e, "%s hook #%zu: pipe", point, idx);
	}
	if (lseek(state_fd, 0, SEEK_SET) < 0)
		return al_close_pair(op), al_close_pair(ep), al_err_sys(err, errno, "%s hook: state", point);
	int pidfd = -1;
	pid_t pid = pfd_clone3(0, &pidfd, -1);
	if (pid == 0) {
		if (dup2(state_fd, 0) < 0 || dup2(op[1], 1) < 0 || dup2(ep[1], 2) < 0)
			_exit(127);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve(hk->path, hk->argv, hk->envp ? hk->envp : environ);
		_exit(127);
	}
	close(op[1]);
	close(ep[1]);
	struct capture out = {.fd = op[0]}, errc = {.fd = ep[0]};
	int r = 0, ws = 0;
	if (pid < 0)
		r = al_err(err, (int)-pid, "%s hook #%zu (%s): %s", point, idx, hk->path, strerror((int)-pid));
	else if ((r = supervise(pidfd, &out, &errc, hk->timeout, &ws)) == -ETIMEDOUT)
		r = al_err(err, ETIMEDOUT, "%s hook #%zu (%s) ran past its timeout of %d s", point, idx, hk->path,
			   hk->timeout);
	else if (r < 0)
		al_err(err, -r, "%s hook #%zu (%s): waiting: %s", point, idx, hk->path, strerror(-r));
	else if (ws != 0)
		r = al_err(err, ECANCELED, "%s hook #%zu (%s) %s %d, stdout: %.*s, stderr: %.*s", point, idx, hk->path,
			   WIFEXITED(ws) ? "exited with status" : "was killed by signal",
			   WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws), (int)out.len, out.buf, (int)errc.len,
			   errc.buf);
	if (pidfd >= 0)
		close(pidfd);
	if (out.fd >= 0)
		close(out.fd);
	if (errc.fd >= 0)
		close(errc.fd);
	return r;
}

int ort_hooks_run(const struct ort_hooks *h, enum ort_hook_point p, const char *state, struct al_error *err)
{
	if (!h->n[p])
		return 0;
	cleanup_close int fd = state ? memfd_with(state) : -1;
	if (fd < 0)
		return al_err_sys(err, errno ? errno : ENOMEM, "%s hooks: the state for stdin", point_names[p]);
	for (size_t i = 0; i < h->n[p]; i++) {
		int r = run_one(&h->v[p][i], point_names[p], i, fd, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the container's side (no allocation) -------------------------------------------------- */

int ort_hooks_run_child(const struct ort_hooks *h, enum ort_hook_point p, int state_fd, char *const *fallback_env,
			int *why)
{
	for (size_t i = 0; i < h->n[p]; i++) {
		const struct ort_hook *hk = &h->v[p][i];
		if (lseek(state_fd, 0, SEEK_SET) < 0) {
			*why = errno;
			return (int)i + 1;
		}
		pid_t pid = fork();
		if (pid == 0) {
			if (dup2(state_fd, 0) < 0)
				_exit(127);
			execve(hk->path, hk->argv, hk->envp ? hk->envp : fallback_env);
			_exit(127);
		}
		if (pid < 0) {
			*why = errno;
			return (int)i + 1;
		}
		/* Polled rather than waited on a pidfd: the fewest system calls, as this may run under the
		 * container's seccomp filter (startContainer). 10 ms steps; the timeout in seconds. */
		long waited_ms = 0;
		int ws = 0;
		pid_t w;
		while ((w = waitpid(pid, &ws, WNOHANG)) == 0) {
			if (hk->timeout && waited_ms >= (long)hk->timeout * 1000) {
				kill(pid, SIGKILL);
				waitpid(pid, &ws, 0);
				*why = ETIMEDOUT;
				return (int)i + 1;
			}
			struct timespec step = {0, 10L * 1000 * 1000};
			nanosleep(&step, NULL);
			waited_ms += 10;
		}
		if (w < 0 || ws != 0) {
			*why = w < 0 ? errno : WIFEXITED(ws) && WEXITSTATUS(ws) == 127 ? ENOEXEC : ECANCELED;
			return (int)i + 1;
		}
	}
	return 0;
}

/* ---- what the profile allows ---------------------------------------------------------------- */

int ort_hooks_check(const struct ort_hooks *h, const char *rootfs, bool confined, const char *profile,
		    struct al_error *err)
{
	if (!confined)
		return 0;
	cleanup_free char *root = realpath(rootfs, NULL);
	if (!root)
		return al_err_sys(err, errno, "rootfs %s", rootfs);
	size_t rl = strlen(root);
	for (int p = 0; p < ORT_HOOK__COUNT; p++) {
		/* startContainer runs inside the container after its whole confinement, as its process. */
		if (p == ORT_HOOK_START_CONTAINER)
			continue;
		for (size_t i = 0; i < h->n[p]; i++) {
			cleanup_free char *real = realpath(h->v[p][i].path, NULL);
			if (!real)
				return al_err_sys(err, errno, "%s hook #%zu: %s", point_names[p], i, h->v[p][i].path);
			/* The image's own program would run before (or outside) the confinement, as the
			 * runtime's caller or the container's unconfined root. */
			if (strncmp(real, root, rl) == 0 && (real[rl] == '/' || real[rl] == 0 || rl == 1))
				return al_err(err, EPERM,
					      "%s hook #%zu: %s is the container's own file (beneath its rootfs), "
					      "which would run unconfined: refused under profile %s",
					      point_names[p], i, h->v[p][i].path, profile);
		}
	}
	return 0;
}
