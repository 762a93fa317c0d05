/* airlock.h — the library's public API: describe a policy, spawn one confined job, wait for its verdict. */
#ifndef AIRLOCK_AIRLOCK_H
#define AIRLOCK_AIRLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Conventions
 *  - Fallible calls return 0 (or a count) on success and -errno on failure.
 *  - Every fallible call takes an optional `struct al_error *` (may be NULL) that
 *    receives a human-readable message; the library never prints and never exits.
 *  - Objects are opaque; each *_new/_spawn has a matching *_free that accepts NULL.
 *  - libairlock exports exactly the functions declared here (AL_EXPORT): the library is built
 *    with -fvisibility=hidden, so its internal modules never clash with a caller's names.
 */

#if defined(__GNUC__) || defined(__clang__)
#define AL_EXPORT __attribute__((visibility("default")))
#else
#define AL_EXPORT
#endif

#define AL_ERROR_MAX 512 /* room for a refusal that names its cause, what was tried and the way out */

struct al_error {
	int code;		/* -errno, or 0 */
	char msg[AL_ERROR_MAX]; /* "stage: detail", prefixed as it climbs */
};

/* ---- policy ---------------------------------------------------------------------- */

struct al_policy; /* opaque: what the job may see and use */

/* Limits. A value of AL_UNLIMITED lifts the limit (where the policy allows). */
#define AL_UNLIMITED	     UINT64_MAX
#define AL_MIN_ADDRESS_SPACE (16ULL << 20) /* the smallest RLIMIT_AS that still loads a program */
enum al_limit {
	AL_LIMIT_WALL_MS, /* wall clock, milliseconds (default 30 s) */
	AL_LIMIT_CPU_MS,  /* RLIMIT_CPU, milliseconds rounded up to seconds (default unlimited) */
	AL_LIMIT_OUTPUT,  /* bytes kept per stream (default 1 MiB) */
	AL_LIMIT_DISK,	  /* bytes: size of the /workspace and /tmp tmpfs (default 1 GiB) */
	AL_LIMIT_NOFILE,  /* RLIMIT_NOFILE (default 1024) */
	AL_LIMIT_FSIZE,	  /* RLIMIT_FSIZE bytes (default 1 GiB) */
	AL_LIMIT_AS,	  /* RLIMIT_AS bytes (default unlimited; at least AL_MIN_ADDRESS_SPACE) */
	AL_LIMIT_NPROC,	  /* RLIMIT_NPROC (default unlimited; cgroups do this properly) */
	AL_LIMIT_MEMORY,  /* cgroup memory limit, bytes, swap disabled (default 512 MiB) */
	AL_LIMIT_PIDS,	  /* cgroup pids limit (default 1024) */
	AL_LIMIT_CPUS,	  /* cgroup CPU bandwidth in milli-CPUs, e.g. 500 = half a CPU (default 500) */
	AL_LIMIT__COUNT,
};

/* Allocates a policy with airlock's defaults: full isolation, no network. */
AL_EXPORT int al_policy_new(struct al_policy **out);
AL_EXPORT void al_policy_free(struct al_policy *p);

/* argv[0] is resolved inside the sandbox (PATH=/usr/local/bin:/usr/bin:/bin...). Copied. */
AL_EXPORT int al_policy_set_argv(struct al_policy *p, int argc, const char *const *argv, struct al_error *err);
AL_EXPORT int al_policy_set_limit(struct al_policy *p, enum al_limit which, uint64_t value, struct al_error *err);
AL_EXPORT uint64_t al_policy_get_limit(const struct al_policy *p, enum al_limit which);
/* "NAME" passes the caller's value through (if set); "NAME=VALUE" sets it. */
AL_EXPORT int al_policy_add_env(struct al_policy *p, const char *spec, struct al_error *err);
/* Bind SRC (host) at DEST (absolute, inside). DEST NULL means the same path. */
AL_EXPORT int al_policy_add_bind(struct al_policy *p, const char *src, const char *dest, bool writable,
				 struct al_error *err);
/* The system directories (/usr, /bin, /lib..., and /etc's ld.so.cache, certificates,
 * alternatives) come from DIR, e.g. an unpacked distribution tree, instead of the host. */
AL_EXPORT int al_policy_set_rootfs(struct al_policy *p, const char *dir, struct al_error *err);
/* The rootfs is the image NAME (or "sha256:<hex>") of the image store (`airlock image`): its
 * read-only tree, its config's Env as defaults, its config's User (resolved in the image's own
 * /etc/passwd and /etc/group) as the payload's uid:gid inside the sandbox's user namespace — but
 * root (uid 0), which stays the unprivileged sandbox user, and ids past the sandbox's 65536; the
 * image is locked against removal while the policy lives. The posture never changes with the
 * image: no capability, no_new_privs, the same seccomp and Landlock whatever the uid. -EINVAL for
 * a User that is not NAME, UID, NAME:GROUP or UID:GID. */
AL_EXPORT int al_policy_set_image(struct al_policy *p, const char *name, struct al_error *err);
/* The policy's image digest and name, or NULL (owned by the policy). */
AL_EXPORT const char *al_policy_image_digest(const struct al_policy *p);
AL_EXPORT const char *al_policy_image_name(const struct al_policy *p);
/* The image's default command (its config's Entrypoint then Cmd), NULL-terminated, or NULL. */
AL_EXPORT const char *const *al_policy_image_argv(const struct al_policy *p);
/* The image config's WorkingDir and User, for a command run on the image as it is (`airlock run`;
 * an exec's code lives in /workspace, which stays its directory). WorkingDir becomes the working
 * directory unless one was set (--cwd) or /workspace is the caller's (--workdir), and only when
 * it is a directory of the image (or /, /workspace, /tmp). The User is applied by
 * al_policy_set_image; a name the image does not know and ids past the sandbox's are not, and
 * are said here. note receives what was not applied, in one line ("" when everything was). 0, or
 * -errno. */
AL_EXPORT int al_policy_image_config(struct al_policy *p, char *note, size_t note_len, struct al_error *err);
/* A file the sandbox starts with: data[0..len) at DEST (beneath /workspace, e.g. the code of
 * `airlock exec`), owned by the sandbox user. Copied; at most 64 MiB in all. */
AL_EXPORT int al_policy_add_file(struct al_policy *p, const char *dest, const void *data, size_t len, unsigned mode,
				 struct al_error *err);
/* Bind a host directory read-write at /workspace instead of the throwaway tmpfs. */
AL_EXPORT int al_policy_set_workdir(struct al_policy *p, const char *dir, struct al_error *err);
/* A held sandbox's workspace as an overlay: dir (a host directory, read-only to the sandbox)
 * becomes a lower layer, beneath those added before it; what the sandbox writes goes to an upper
 * layer on a tmpfs of --disk bytes (al_sandbox_upper). Its entries should belong to the sandbox's
 * ids (al_sandbox_owner), whose namespace reads them. At most AL_WS_LAYERS. */
AL_EXPORT int al_policy_add_ws_layer(struct al_policy *p, const char *dir, struct al_error *err);
#define AL_WS_LAYERS 64
AL_EXPORT int al_policy_set_hostname(struct al_policy *p, const char *name, struct al_error *err);

/* A view of a checkout (a host directory) inside the sandbox. */
enum al_checkout_mode {
	AL_CHECKOUT_RO,	  /* bound read-only */
	AL_CHECKOUT_COPY, /* a throwaway read-write copy (overlay on the job's tmpfs); the source is never written */
};
/* DIR at DEST (default /workspace/src). */
AL_EXPORT int al_policy_set_checkout(struct al_policy *p, const char *dir, const char *dest, enum al_checkout_mode mode,
				     struct al_error *err);
/* The mode alone (for front ends where the mode and the directory come separately). */
AL_EXPORT int al_policy_set_checkout_mode(struct al_policy *p, enum al_checkout_mode mode, struct al_error *err);
/* With AL_CHECKOUT_COPY: export the files the job changed, as a tree, into DIR (which must not
 * exist yet or be empty) when the job ends. */
AL_EXPORT int al_policy_set_keep_changes(struct al_policy *p, const char *dir, struct al_error *err);
/* Working directory inside the sandbox (default /workspace). */
AL_EXPORT int al_policy_set_cwd(struct al_policy *p, const char *dir, struct al_error *err);
/* Root only: the host uid/gid that sandbox id 0 maps to (65536 ids from there). */
AL_EXPORT int al_policy_set_id_base(struct al_policy *p, uint32_t base, struct al_error *err);

/* Which boundary runs the job. Every backend honours the same policy or refuses it. */
enum al_backend {
	AL_BACKEND_NATIVE, /* airlock's own namespaces, Landlock, seccomp, cgroups (default) */
	AL_BACKEND_BWRAP,  /* bubblewrap, with airlock's seccomp filter and cgroup */
	AL_BACKEND_GVISOR, /* gVisor's runsc: a user-space kernel */
	AL_BACKEND_OCI,	   /* an OCI runtime (crun) with airlock owning the cgroups */
	AL_BACKEND_NONE,   /* no isolation at all (profile none, local development): loudly reported */
};
AL_EXPORT int al_policy_set_backend(struct al_policy *p, enum al_backend backend, struct al_error *err);
AL_EXPORT enum al_backend al_policy_get_backend(const struct al_policy *p);
AL_EXPORT const char *al_backend_name(enum al_backend backend);

/* What the job may reach over the network. */
enum al_net_posture {
	AL_NET_NONE,  /* a private network namespace with only lo, up: the job talks to itself over
		       * 127.0.0.1 and ::1 and reaches nothing else (default; "loopback" is a synonym) */
	AL_NET_HOST,  /* the host's network: explicit opt-in only, the highest risk */
	AL_NET_ALLOW, /* lo up plus the egress proxy on 127.0.0.1:AL_PROXY_PORT: allowed host names only */
};
AL_EXPORT int al_policy_set_network(struct al_policy *p, enum al_net_posture posture, struct al_error *err);

/* The egress proxy's port on the sandbox's own loopback (its network namespace is private). */
#define AL_PROXY_PORT 3128
/* Under an allowlist, the sandbox's resolver (its /etc/resolv.conf names it) answers on UDP and
 * TCP port 53 of this address of its own loopback, and gives each allowed name an address of
 * 127.18.0.0/16, where airlock listens on the allowlist's ports (the capture): programs that
 * ignore HTTPS_PROXY reach allowed names through the proxy's checks. */
#define AL_DNS_ADDR	    "127.53.0.1"
#define AL_CAPTURE_NET	    0x7f120000u /* 127.18.0.0/16, host order */
#define AL_CAPTURE_MAX_PORT 16		/* capture listeners (distinct allowlist ports) at most */
/* Adds "HOST[,HOST...]" to the allowlist (pypi.org, *.pythonhosted.org, host:8443, an IP
 * literal) and selects AL_NET_ALLOW. All or nothing; the error names the bad entry. */
AL_EXPORT int al_policy_allow_hosts(struct al_policy *p, const char *spec, struct al_error *err);
/* "CIDR[,CIDR...]" exempt from the proxy's refusal of loopback, private, link-local, metadata
 * and CGNAT addresses (on-premise registries, tests). */
AL_EXPORT int al_policy_allow_private(struct al_policy *p, const char *spec, struct al_error *err);
/* A hosts(5) file the proxy's resolver consults before DNS (pinning; test resolvers). */
AL_EXPORT int al_policy_set_proxy_hosts(struct al_policy *p, const char *file, struct al_error *err);
/* Also forward plain-HTTP (absolute-form) requests to allowed hosts (default: CONNECT only). */
AL_EXPORT int al_policy_set_proxy_http(struct al_policy *p, bool on, struct al_error *err);
/* Concurrent proxy connections per job (default 64) and their idle timeout (default 60 s). */
AL_EXPORT int al_policy_set_proxy_limits(struct al_policy *p, uint32_t max_conns, uint64_t idle_ms,
					 struct al_error *err);
/* A credential broker: "NAME=https://HOST[:PORT][/BASE],header=HEADER[,scheme=WORD],
 * env=VAR|file=PATH[,ca=CAFILE]". The secret is read now and stays in the supervisor; the job
 * reaches the upstream at $AIRLOCK_BROKER_<NAME>_URL through the proxy port. Needs --net
 * none (the default) or allow=, not host. */
AL_EXPORT int al_policy_add_broker(struct al_policy *p, const char *spec, struct al_error *err);
/* A secret by reference, "NAME,env=VAR|file=PATH,hosts=HOST[|HOST...][,body]" (see
 * network/secrets.h): the job's variable NAME holds a placeholder, the proxy puts the value in
 * its place toward HOST only, over TLS it terminates with the sandbox's own CA. */
AL_EXPORT int al_policy_add_secret(struct al_policy *p, const char *spec, struct al_error *err);
/* PEM certificates that alone verify the upstreams of terminated TLS (default: the host's store). */
AL_EXPORT int al_policy_set_upstream_ca(struct al_policy *p, const char *file, struct al_error *err);

/* The system call filter applied last before execve. */
enum al_seccomp_profile {
	AL_SECCOMP_DEFAULT, /* allowlist tuned for real interpreters; denied calls fail with EPERM/ENOSYS */
	AL_SECCOMP_STRICT,  /* smaller allowlist; the always-denied calls kill the process */
	AL_SECCOMP_OFF,	    /* no filter: always reported, refused where the floor requires seccomp */
};
AL_EXPORT int al_policy_set_seccomp(struct al_policy *p, enum al_seccomp_profile profile, struct al_error *err);
/* Landlock filesystem (and, from ABI 4, network; from ABI 6, scope) rules. On by default. */
AL_EXPORT int al_policy_set_landlock(struct al_policy *p, bool on, struct al_error *err);
/* As an ordinary user, also map the caller's subordinate ids (/etc/subuid, /etc/subgid) around
 * the sandbox user, through the setuid newuidmap/newgidmap (costs two helper runs per start).
 * Refused where they cannot be had, and as root (which always maps a range). */
AL_EXPORT int al_policy_use_subids(struct al_policy *p, bool on, struct al_error *err);
/* As an ordinary user whose cgroup cannot hold the cgroup limits: whether airlock may ask the
 * user's systemd for a delegated scope and run in it (default true; false refuses instead). */
AL_EXPORT int al_policy_use_systemd_scope(struct al_policy *p, bool on, struct al_error *err);
/* Where user namespaces are unavailable (an unprivileged container, Ubuntu's AppArmor
 * restriction), run anyway on Landlock + seccomp + rlimits + no_new_privs, in the host's
 * namespaces, with a throwaway workspace directory; always reported. Off by default; refused
 * when the floor requires any namespace or pivot_root, or the kernel lacks Landlock. */
AL_EXPORT int al_policy_allow_fallback(struct al_policy *p, bool allow, struct al_error *err);
/* Default memory, pids and cpu limits (those not set explicitly) that the host cannot enforce —
 * no delegated cgroup — are refused unless this allows running without them; the verdict then
 * lists them (limits_not_applied). Explicit limits are always enforced or refused. */
/* The limit's name, as its flag and configuration key spell it ("memory", "pids", "cpus", ...). */
AL_EXPORT const char *al_limit_name(enum al_limit which);
AL_EXPORT int al_policy_allow_best_effort_limits(struct al_policy *p, bool allow, struct al_error *err);
/* A floor of protections, e.g. "userns,netns,seccomp,landlock>=4,cgroup-memory". Below it,
 * spawning fails and names what is missing. Repeated calls add to the floor. */
AL_EXPORT int al_policy_require(struct al_policy *p, const char *spec, struct al_error *err);

/* ---- jobs ------------------------------------------------------------------------ */

enum al_stream_mode {
	AL_STREAM_CAPTURE = 0, /* keep up to the output limit in the verdict */
	AL_STREAM_LIVE = 1,    /* copy to live_fd as it arrives (still capped) */
};

/* Size-prefixed so it can grow (like clone3's struct clone_args). Zero means default. */
struct al_spawn_opts {
	size_t size;  /* sizeof(struct al_spawn_opts) */
	int stdin_fd; /* payload's stdin; -1: /dev/null */
	enum al_stream_mode stdout_mode;
	enum al_stream_mode stderr_mode;
	int stdout_live_fd; /* target for AL_STREAM_LIVE */
	int stderr_live_fd;
	/* Optional: every chunk of output as it arrives (stream 1 or 2), up to the output limit;
	 * called on the thread running al_job_wait. Capture and live copies happen as well. */
	void (*on_output)(void *cookie, int stream, const char *data, size_t len);
	void *on_output_cookie;
	/* Optional: a signalfd(2) of the signals that should stop the job (0: none; never one of the
	 * standard descriptors). When one arrives, even during set-up, the job is killed at once and
	 * its verdict says status killed with that signal. The CLI's is SIGTERM, SIGINT, SIGHUP,
	 * SIGQUIT and SIGPIPE, blocked in the caller so none can end the supervisor mid-job. */
	int stop_fd;
	/* Optional (0 or -1: none): the program's text, on a descriptor the payload gets as fd 3
	 * (AL_CODE_FD) and its interpreter opens as AL_CODE_PATH. Only for an exec in a held sandbox,
	 * where other code of the sandbox runs beside it: a file in the workspace could be changed
	 * between its write and the interpreter's open, a sealed memfd (al_code_memfd) cannot. The
	 * caller keeps its descriptor. Any other job refuses it (its files are written before
	 * anything of it runs). */
	int code_fd;
	/* Optional: a terminal (native backend; others refuse). The payload gets a pty of the
	 * sandbox's own devpts as stdin, stdout, stderr and controlling terminal (job control works;
	 * TIOCSTI and TIOCLINUX stay refused). The job's stdout is then what the terminal shows, input
	 * echo included, under the same capture, live copy, on_output and output limit; its stderr is
	 * empty. stdin_fd must be -1: input is written to the master (al_job_tty). tty_cols x tty_rows
	 * is its first size (0 x 0: the kernel's default; al_job_resize changes it). A fresh job or an
	 * exec in a held sandbox, not the creation of one. */
	bool tty;
	uint16_t tty_cols, tty_rows;
};

#define AL_CODE_FD   3
#define AL_CODE_PATH "/dev/fd/3"

/* A sealed, read-only memfd holding data[0..len): nobody can write, grow or shrink it (its seals
 * are sealed too), so what it holds is what the payload reads. The descriptor (O_CLOEXEC) or -errno. */
AL_EXPORT int al_code_memfd(const char *data, size_t len);

struct al_job; /* opaque: one confined running job and its supervisor state */

/* Starts the job. On success *out owns the job (al_job_free). The policy is not
 * retained. A failure to set up isolation is an error here or a setup-error verdict;
 * in both cases the payload never ran. */
AL_EXPORT int al_job_spawn(const struct al_policy *p, const struct al_spawn_opts *opts, struct al_job **out,
			   struct al_error *err);

/* Removes what a crashed airlock left behind: job cgroups whose supervisor is gone and, when p is
 * NULL or runs on a backend that makes them (oci, gvisor), the bundle directories of such
 * supervisors. Those are found by reading the whole temporary directory (every entry of /tmp:
 * a cost that grows with the host's /tmp), so a native or bwrap start leaves them to the next
 * start that could have made them, or to a service's start (p NULL). Best effort; front ends
 * call it once at start. */
AL_EXPORT void al_cleanup_stale(const struct al_policy *p);

/* Supervises the job to its end (output pump, deadline, kill, accounting). */
struct al_verdict;
AL_EXPORT int al_job_wait(struct al_job *job, struct al_verdict **out, struct al_error *err);
/* Kills the job's processes now (from any thread, e.g. to cancel while another waits); the
 * waiter then sees them die. 0 or -errno. */
AL_EXPORT int al_job_kill(struct al_job *job);
/* What a running job's own cgroup has counted so far, as its verdict would say it (a long-lived
 * job: an interpreter context's kernel, between its cells). Call from the thread that owns the job
 * (not concurrently with al_job_free). 0, or -ENOTSUP when the job has no cgroup of its own. */
struct al_job_cgroup {
	uint64_t peak_memory_bytes, oom_kills;
	bool pids_limit_hit;
	bool memory_limited, pids_limited, cpu_limited; /* what the cgroup enforces */
	const char *version;				/* "v1", "v2" or "hybrid" */
};
AL_EXPORT int al_job_cgroup(struct al_job *job, struct al_job_cgroup *out);
/* What runs in a running job now, seen from outside it: its payload and every process the payload
 * started (the job's init not counted), and their threads. What a long-lived job (a kernel between
 * cells) says of itself is the job's word; this is the host's. 0, or -ENOTSUP (a backend whose
 * processes the host cannot see as they are: only the native one's), -ESRCH (it ended). */
struct al_job_census {
	unsigned processes, threads;
};
AL_EXPORT int al_job_census(struct al_job *job, struct al_job_census *out);
/* Sends sig to the job's payload and its process group (the command and the programs it waits for,
 * as a terminal's ^C; not the job's init: in a pid namespace a signal to its init without a
 * handler is dropped); SIGKILL ends the whole job, as al_job_kill. From any thread. 0, -ESRCH (the payload is gone), -ENOTSUP (a backend whose
 * processes the host cannot see: only the native one's), or -errno. */
AL_EXPORT int al_job_signal(struct al_job *job, int sig);
/* The payload's pid as the processes of its held sandbox number it (an exec of a held sandbox:
 * in the sandbox's pid namespace, unique among its live processes; another job: in its own).
 * 0, or -errno as al_job_signal. */
AL_EXPORT int al_job_pid(struct al_job *job, pid_t *pid);
/* A terminal job's pty master (al_spawn_opts.tty), borrowed: valid until al_job_free. Write the
 * job's input to it (from any thread; it is non-blocking, so a full terminal answers EAGAIN: wait
 * for POLLOUT); its output is the job's stdout, read by al_job_wait. -ENOTTY for a job without a
 * terminal, -ESRCH when the sandbox failed before opening one (the verdict says why). */
AL_EXPORT int al_job_tty(struct al_job *job);
/* Sets a terminal job's window size (TIOCSWINSZ on the master: the job gets SIGWINCH), from any
 * thread: 0, -EINVAL for 0 or above 65535, -ENOTTY / -ESRCH as al_job_tty. */
AL_EXPORT int al_job_resize(struct al_job *job, unsigned cols, unsigned rows);
/* Kills anything still running, reaps, releases. */
AL_EXPORT void al_job_free(struct al_job *job);

/* ---- held sandboxes (persistent) ---------------------------------------------------- */

/*
 * A held sandbox is a workspace, a cgroup and a set of namespaces kept by a small init that waits
 * for work (native backend only). Each job started with al_policy_set_sandbox runs a fresh
 * payload inside it — own pid namespace, seccomp, Landlock, rlimits, uid, no capabilities — so
 * files under /workspace persist from one job to the next and processes do not. The sandbox's
 * policy (filesystem, network posture and proxy, cgroup limits, layers) is fixed at creation;
 * a job's policy contributes only its argv, environment, cwd, wall-clock/output limits and its
 * network: the sandbox's posture (al_policy_set_network, allow hosts as the sandbox's), or none —
 * the default, so a job has no network unless it asks — in a fresh empty network namespace.
 */
struct al_sandbox;

/* Creates and starts a held sandbox from p (not retained); waits until it is ready. */
AL_EXPORT int al_sandbox_create(const struct al_policy *p, struct al_sandbox **out, struct al_error *err);
/* The workspace (O_PATH directory descriptor, owned by the sandbox): resolve client paths beneath
 * it with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS). */
AL_EXPORT int al_sandbox_workspace(const struct al_sandbox *sb);
/* With layers (al_policy_add_ws_layer): the overlay's upper layer, what the sandbox changed
 * (O_RDONLY directory descriptor, owned by the sandbox; whiteouts and opaque directories as
 * overlayfs keeps them, user.overlay.* attributes); else -1. */
AL_EXPORT int al_sandbox_upper(const struct al_sandbox *sb);
/* The host uid and gid of the sandbox's user, which should own files put into the workspace. */
AL_EXPORT void al_sandbox_owner(const struct al_sandbox *sb, uid_t *uid, gid_t *gid);
/* False once the sandbox's init is gone (killed, or out of memory). */
AL_EXPORT bool al_sandbox_alive(const struct al_sandbox *sb);
/* The protections applied (JSON object, owned by the sandbox). */
AL_EXPORT const char *al_sandbox_enforced(const struct al_sandbox *sb);
/* What the sandbox's cgroup counted so far, its execs included (the approver's console). */
struct al_sandbox_usage {
	double cpu_s;		    /* user + system CPU time (-1 if not accounted) */
	uint64_t memory_bytes;	    /* in use now (0 if unknown) */
	uint64_t peak_memory_bytes; /* the peak (0 if unknown) */
};
/* 0, or -ENOTSUP when the sandbox has no cgroup of its own. */
AL_EXPORT int al_sandbox_usage(struct al_sandbox *sb, struct al_sandbox_usage *out);
/* OOM kills in the sandbox's cgroup so far (all its execs together): 0 and *out, or -errno
 * (-ENOENT: no cgroup). A caller compares two readings around one piece of work. */
AL_EXPORT int al_sandbox_oom_kills(const struct al_sandbox *sb, uint64_t *out);
/* Kills everything in the sandbox, removes its cgroup and workspace, frees it. NULL is a no-op. */
AL_EXPORT void al_sandbox_destroy(struct al_sandbox *sb);
/* Pauses every process of the sandbox in place (the cgroup freezer, v2 or v1): they keep their
 * memory and state and use no CPU until al_sandbox_resume. From its first pause on, a keeper
 * process ends the sandbox should this process die (nothing stays frozen, nothing outlives it). Not to be
 * called while an exec of it runs in the foreground (its caller's rule: the exec would stop with
 * it). 0 (also when already paused); -ENOTSUP with err saying why no freezer is usable here;
 * -ETIMEDOUT when its processes did not freeze in time (it is left running); -errno. */
AL_EXPORT int al_sandbox_pause(struct al_sandbox *sb, struct al_error *err);
/* Thaws a paused sandbox: 0 (also when it was not paused), or -errno. */
AL_EXPORT int al_sandbox_resume(struct al_sandbox *sb, struct al_error *err);
AL_EXPORT bool al_sandbox_paused(const struct al_sandbox *sb);
/* The freezer the sandbox would pause with: "v2", "v1", or NULL and *why (static or the sandbox's). */
AL_EXPORT const char *al_sandbox_freezer(const struct al_sandbox *sb, const char **why);
/* A TCP connection to port (1-65535) of the sandbox's own loopback, made from inside its network
 * namespace (127.0.0.1, else ::1): 0 and *fd (the caller's; O_CLOEXEC, O_NONBLOCK), or -errno
 * (-ECONNREFUSED: nothing listens there). Never leaves the sandbox's namespace. */
AL_EXPORT int al_sandbox_connect(struct al_sandbox *sb, uint16_t port, int *fd, struct al_error *err);
/* The sandbox's network table name ("tcp" or "tcp6", as in /proc/net), open for reading: an fd, or -errno. */
AL_EXPORT int al_sandbox_net_file(struct al_sandbox *sb, const char *name, struct al_error *err);
/* Runs jobs of this policy in sb (borrowed: it must outlive the jobs); NULL: a new sandbox each. */
AL_EXPORT int al_policy_set_sandbox(struct al_policy *p, struct al_sandbox *sb, struct al_error *err);

/* ---- verdict --------------------------------------------------------------------- */

enum al_status {
	AL_STATUS_EXITED,
	AL_STATUS_SIGNALED,
	AL_STATUS_TIMEOUT,
	AL_STATUS_OUTPUT_LIMIT,
	AL_STATUS_SETUP_ERROR,
	AL_STATUS_OOM,	  /* the memory limit killed the job */
	AL_STATUS_KILLED, /* the caller was told to stop (stop_fd: signal) and killed the job */
};

struct al_stream_result {
	uint64_t bytes; /* everything the job wrote */
	bool truncated; /* bytes > kept */
	char *data;	/* captured bytes (capture mode), NUL-terminated; may be NULL */
	size_t kept;	/* length of data */
};

/* Plain data so callers can read it; al_verdict_free releases it. */
struct al_verdict {
	enum al_status status;
	int exit_code; /* valid when the payload exited (also with output-limit) */
	int signal;    /* valid when killed by a signal */
	double wall_s;
	double user_s, system_s;
	uint64_t peak_rss_kib;
	struct al_stream_result out, err;
	/* From the job's cgroup, when one was used (cgroup_used). */
	bool cgroup_used;
	uint64_t peak_memory_bytes; /* the whole tree's peak */
	uint64_t oom_kills;
	bool pids_limit_hit;
	bool seccomp_killed; /* the payload was killed by the seccomp filter (SIGSYS) */
	/* Default limits the host could not enforce, run without because the policy allows
	 * best-effort limits: bit (1 << enum al_limit) each (AL_LIMIT_MEMORY, _PIDS, _CPUS). */
	uint32_t limits_not_applied;
	/* --workdir: the job's changes, applied to the host directory when it ended. */
	bool workdir_written;
	uint64_t workdir_files, workdir_deleted, workdir_bytes;
	char workdir_error[256]; /* "" unless applying a change failed */
	/* --keep-changes: the copy's changes, exported when the job ended. */
	bool changes_kept;
	uint64_t changes_files, changes_deleted, changes_bytes;
	char changes_error[256];
	const char *backend;
	char image[72]; /* the image's digest ("sha256:<hex>"), or "" without --image */
	char image_name[128];
	struct al_error setup; /* when status == AL_STATUS_SETUP_ERROR */
	char *enforced_json;   /* JSON object naming each protection applied */
	char *proxy_json;      /* JSON object: the egress proxy's counters and connection records, or NULL */
};

AL_EXPORT void al_verdict_free(struct al_verdict *v);
/* The verdict as one JSON object (malloc'd, caller frees). */
AL_EXPORT int al_verdict_to_json(const struct al_verdict *v, char **out, struct al_error *err);
/* The process exit code airlock's CLI uses for this verdict (payload code, 128+sig, 124, 125). */
AL_EXPORT int al_verdict_exit_code(const struct al_verdict *v);
AL_EXPORT const char *al_status_name(enum al_status s);

#ifdef __cplusplus
}
#endif
#endif
