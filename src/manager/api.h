/* api.h — the sandbox manager's contract with the front ends above it: a table of asynchronous operations. */
#ifndef AL_MANAGER_API_H
#define AL_MANAGER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"

/*
 * Contract (the MCP session relies on every point; the HTTP front end can use the same table)
 *
 *  - Every operation is started by one call of the table below. The request and everything it
 *    points to are borrowed for the duration of that call only: copy what you keep. The sink is
 *    copied by value.
 *  - A start call that returns -errno has failed: it has not called and will never call the
 *    sink, and *op is left alone. err says why, in words fit for the model ("no sandbox
 *    \"sb-7\"", "path escapes the workspace").
 *  - A start call that returns 0 has started the operation: the manager then calls
 *    sink->on_output zero or more times and sink->on_done exactly once, and nothing after
 *    on_done. Both may be called from any thread, and even synchronously from inside the start
 *    call. They never block (they copy and queue; see mcp.c). on_done takes ownership of the
 *    result (allocate it with srv_result_new; the session frees it with srv_result_free).
 *  - *op (may be set to NULL by managers that finish synchronously) is the manager's handle.
 *    The session calls cancel(op) at most once, at any time before release, when the client
 *    cancels the request or goes away: the manager stops the work as soon as it can (kills
 *    the exec's process tree) and still calls on_done. The session calls release(op) exactly
 *    once, after on_done was processed or when it shuts down, and never touches op again;
 *    the manager frees op once it is both released and done.
 *  - Failures of the request (unknown sandbox, path outside the workspace, file too big,
 *    limit on live sandboxes reached) are reported as -errno + err, from the start call or in
 *    result->error: the session turns them into tool results with isError (the MCP spec's
 *    "tool execution errors", which the model can act on). -ENOMEM, -EIO and other errnos
 *    that are not the client's doing become JSON-RPC internal errors.
 *  - A program that ran and failed (non-zero exit, timeout, OOM, setup error) is not a
 *    failure of the request: result->error is 0 and result->verdict says what happened.
 *  - Output passed to on_output is also kept (capped) in the verdict: the verdict is the
 *    record, on_output is only a live view and may be dropped by the session when the client
 *    reads too slowly.
 */

/* Every request names the principal making it (owner: "uid:1000", "token:alice"; NULL is "", the
 * anonymous principal of a server without any). A sandbox belongs to the principal that created
 * it: a request naming another principal's sandbox fails exactly as an unknown id does. */
#define SRV_OWNER_MAX 96
/* A sandbox id's bytes with its NUL (the tools' schema allows 128). */
#define SRV_SANDBOX_ID_MAX 129

enum srv_stream {
	SRV_STDOUT = 1,
	SRV_STDERR = 2,
	SRV_EVENT = 3, /* one event of a watch: a JSON object's text (not program output) */
};

/* Resource knobs a client may set on a sandbox (a profile's posture cannot be widened).
 * Zero means "the profile's default". */
struct srv_limits {
	uint64_t memory_bytes;
	uint32_t milli_cpus; /* 500 = half a CPU */
	uint32_t pids;
	uint64_t disk_bytes;
	uint64_t timeout_ms; /* default wall-clock limit of each exec in this sandbox */
};

struct srv_create_req {
	const char *owner;
	const char *profile;  /* NULL: the manager's default profile */
	const char *image;    /* NULL: the profile's; else one of the profile's images (config) */
	const char *language; /* NULL: none preselected; else one of the language names */
	bool network_enabled;
	const char *const *allowed_domains; /* n_allowed_domains host names (empty: the profile's list) */
	size_t n_allowed_domains;
	struct srv_limits limits;
	/* The sandbox's own lifetime: it ends this long after its creation (0: only the server's
	 * caps). Above server.max_lifetime the create is refused (EINVAL), never clamped. */
	uint64_t lifetime_ms;
	/* Labels (metadata): n_metadata keys and values, each a C string; checked again here
	 * (SRV_META_MAX keys, a key of 1-SRV_META_KEY_MAX bytes of [A-Za-z0-9._/-], a value of at
	 * most SRV_META_VALUE_MAX bytes of UTF-8). */
	const char *const *metadata_keys;
	const char *const *metadata_values;
	size_t n_metadata;
	/* Paused instead of destroyed when its idle time (server.idle_ttl) or its own lifetime ends
	 * (E2B's autoPause); resumed by its next call. */
	bool auto_pause;
	/* Its own lifetime runs on while it is paused (default: it stops, and what was left is kept). */
	bool lifetime_runs_paused;
	/* A snapshot of owner's (NULL: an empty workspace): the new sandbox's files are the snapshot's,
	 * and its profile, image and limits the snapshot's record's where the request leaves them
	 * unset (profile NULL, image NULL, a limit 0). Its network is the request's, never the
	 * snapshot's sandbox's: a create asks for network itself. */
	const char *snapshot;
};

/* Snapshots of a sandbox's workspace (sbsnap.c): its files frozen into a read-only layer of the
 * state directory that outlives the sandbox; new sandboxes are made over it (create's snapshot).
 * Processes, memory and interpreter contexts are not part of one. A snapshot is owner's alone
 * (another principal's id is unknown: ENOENT); it is on disk before it is answered, counted in
 * server.quota.snapshots (and snapshot_bytes), and without a state directory refused (ENOTSUP). */
enum srv_snapshot_action {
	SRV_SNAP_CREATE, /* of sandbox_id, with name and labels: result->snapshot_json, the snapshot */
	SRV_SNAP_LIST,	 /* owner's: {"snapshots": [...]} */
	SRV_SNAP_GET,	 /* snapshot_id: the list of that one, {"snapshots": [...]} */
	SRV_SNAP_DELETE, /* snapshot_id: {"snapshot_id", "deleted": true}; its last layer goes with it */
};

struct srv_snapshot_req {
	const char *owner;
	enum srv_snapshot_action action;
	const char *sandbox_id;		  /* SRV_SNAP_CREATE */
	const char *snapshot_id;	  /* SRV_SNAP_GET, SRV_SNAP_DELETE */
	const char *name;		  /* SRV_SNAP_CREATE: 1 to SRV_SNAP_NAME_MAX bytes of UTF-8, or NULL */
	const char *const *metadata_keys; /* SRV_SNAP_CREATE: labels, checked as create's */
	const char *const *metadata_values;
	size_t n_metadata;
};

#define SRV_SNAP_NAME_MAX 128

/* pause_sandbox and resume_sandbox: the sandbox's processes frozen in place (the cgroup freezer)
 * and thawed. Pause is refused (EBUSY) while a call runs in it in the foreground (an exec, a cell)
 * and (ENOTSUP) where no freezer can be had, saying why. by_approver: as srv_path_req's. */
struct srv_pause_req {
	const char *owner;
	const char *sandbox_id;
	const char *by_approver;
	/* pause: to disk (its files and record kept in the state directory, its processes and memory
	 * released; the next call that needs it, or a resume, makes it again under the same id). */
	bool to_disk;
};

#define SRV_META_MAX	   64
#define SRV_META_KEY_MAX   64
#define SRV_META_VALUE_MAX 512

/* set_timeout: the sandbox ends lifetime_ms from now (as E2B's setTimeout), within
 * server.max_lifetime counted from its creation. */
struct srv_timeout_req {
	const char *owner;
	const char *sandbox_id;
	uint64_t lifetime_ms;
};

/* fork: count new sandboxes of owner's, each with sandbox_id's files as they are now (copied: the
 * children and the parent diverge from here), its profile, image, network and limits; its
 * metadata unless n_metadata labels are given (as create's); lifetime_ms from now (0: the parent's
 * lifetime, counted afresh). Processes and contexts are not copied. */
struct srv_fork_req {
	const char *owner;
	const char *sandbox_id;
	unsigned count; /* 1 to SRV_FORK_MAX */
	uint64_t lifetime_ms;
	const char *const *metadata_keys;
	const char *const *metadata_values;
	size_t n_metadata;
};

#define SRV_FORK_MAX 16

struct srv_exec_req {
	const char *owner;
	const char *sandbox_id; /* NULL: a throwaway sandbox, destroyed when the call ends */
	const char *language;	/* python, javascript, shell, ruby, php, perl */
	const char *code;	/* code_len bytes, valid UTF-8, no NUL */
	size_t code_len;
	uint64_t timeout_ms; /* 0: the sandbox's (or profile's) default */
	bool network_enabled;
	const char *const *allowed_domains;
	size_t n_allowed_domains;
	/* Interpreter contexts (manager/context.h): in a sandbox, a language with a kernel runs as a
	 * cell of its default context, or of context_id; fresh runs a new process as before. */
	bool fresh;
	const char *context_id;
	/* A fresh exec's run (not a cell's): env entries "NAME=VALUE" (a name --env takes) added to the
	 * scrubbed environment; cwd, a directory of the sandbox (relative: beneath the workspace; one
	 * of the workspace must exist); stdin_len bytes as its standard input (NULL: /dev/null). */
	const char *const *env;
	size_t n_env;
	const char *cwd;
	const char *stdin_data;
	size_t stdin_len;
	/* Start it and answer at once with its process (result->process_json): it runs on until it
	 * ends, is killed or its sandbox goes. keep_stdin: its stdin stays open for the process
	 * call's "stdin" (after stdin_data), until "close_stdin". */
	bool background, keep_stdin;
	/* A terminal session: with pty_cols x pty_rows (each 1 to SRV_PTY_MAX; 0 x 0: none) the
	 * background process gets a pty of the sandbox's own devpts as its stdin, stdout, stderr and
	 * controlling terminal (job control works), first of that size; the process call's "stdin"
	 * writes to it and "resize" changes its size. Needs background; no stdin_data. */
	unsigned pty_cols, pty_rows;
};

#define SRV_PTY_MAX 1000 /* a terminal's columns or rows at most */

/* A sandbox's background processes: action "list"; "get", "connect" (its output kept so far from
 * offset, then with follow live until it ends: on_output, and on_done at its end), "stdin" (data),
 * "close_stdin", "signal" (signal), "kill", "resize" (cols, rows: a terminal's) — of the process pid. */
struct srv_process_req {
	const char *owner;
	const char *sandbox_id;
	const char *action;
	int pid;
	const char *data;
	size_t len;
	int signal;
	uint64_t offset;
	bool follow;
	uint64_t wait_ms;    /* connect with follow: at most this long (0: until the end) */
	bool collect;	     /* connect: the output read also in the answer's "output" (text, bounded) */
	unsigned cols, rows; /* resize (a terminal's process): its new size, 1 to SRV_PTY_MAX each */
};

/* Interpreter contexts of a sandbox: action "create" (language, context_id), "list", "restart"
 * and "delete" (context_id). */
struct srv_context_req {
	const char *owner;
	const char *sandbox_id;
	const char *action;
	const char *language;
	const char *context_id;
};

struct srv_install_req {
	const char *owner;
	const char *sandbox_id;
	const char *manager;	     /* "pip" or "npm" */
	const char *const *packages; /* n_packages specs; none starts with '-' (no option injection) */
	size_t n_packages;
};

struct srv_write_req {
	const char *owner;
	const char *sandbox_id;
	const char *path; /* as the client gave it: resolve beneath the workspace (RESOLVE_BENEATH) */
	const void *data;
	size_t len;
	/* Instead of data: the bytes are in spool_fd, a file open_upload made beneath the workspace
	 * (borrowed); archive: it is a tar stream to unpack beneath path (a directory). */
	bool spooled;
	int spool_fd;
	bool archive;
};

/* The file operations beyond read, write and list (file_op). */
enum srv_file_action {
	SRV_FILE_STAT,	 /* path: what is there (a symlink itself, never followed) */
	SRV_FILE_MKDIR,	 /* path: a directory, with its parents (as mkdir -p) */
	SRV_FILE_MOVE,	 /* path to "to", as rename(2) does (replacing; no_replace: refused if "to" exists) */
	SRV_FILE_REMOVE, /* path: a file, a link, an empty directory; recursive: a whole tree */
};

struct srv_file_req {
	const char *owner;
	const char *sandbox_id;
	enum srv_file_action action;
	const char *path; /* as the client gave it: resolved beneath the workspace */
	const char *to;	  /* SRV_FILE_MOVE */
	bool recursive;	  /* SRV_FILE_REMOVE */
	bool no_replace;  /* SRV_FILE_MOVE */
};

/* A watch of a directory of the workspace (watch.c): its events (on_output with SRV_EVENT, one JSON
 * object each: type create|write|remove|rename|chmod|overflow, path relative to the workspace,
 * is_dir) until the caller cancels, wait_ms passes, or the sandbox ends; then on_done with the
 * summary (result->watch_json). collect: the events in the summary too (bounded), none on_output. */
struct srv_watch_req {
	const char *owner;
	const char *sandbox_id;
	const char *path; /* NULL or "": the workspace */
	bool recursive;
	uint64_t wait_ms; /* 0: until cancelled or the sandbox ends */
	bool collect;
};

/* read_file, list_files (path NULL: the workspace root), destroy_sandbox (path NULL). */
struct srv_path_req {
	const char *owner;
	const char *sandbox_id;
	const char *path;
	bool want_fd; /* read_file: answer with result->fd (the open file) instead of its bytes */
	/* destroy_sandbox: the approver ending another principal's sandbox (owner is the owner's),
	 * or NULL: the owner itself. Only words: what a later call of the owner is told. */
	const char *by_approver;
};

enum srv_file_type {
	SRV_FILE_REGULAR,
	SRV_FILE_DIRECTORY,
	SRV_FILE_SYMLINK,
	SRV_FILE_OTHER,
};

struct srv_file_entry {
	char *name; /* malloc'd; one path component */
	enum srv_file_type type;
	uint64_t size;
};

/* What SRV_FILE_STAT found; the owner as the sandbox sees it. */
struct srv_file_stat {
	enum srv_file_type type;
	char kind[16]; /* "file", "directory", "symlink", "fifo", "socket", "char-device", "block-device" */
	uint64_t size;
	uint32_t mode; /* permission bits with set-id and sticky (07777) */
	uint32_t uid, gid;
	int64_t mtime_ns;  /* since the epoch */
	char *link_target; /* a symlink's target (malloc'd), never followed; else NULL */
};

/* What an operation produced. Allocated by the manager (srv_result_new), owned by the session
 * once passed to on_done. Every pointer is malloc'd (or NULL) and freed by srv_result_free. */
struct srv_result {
	int error; /* 0, or -errno: the request failed, err.msg says why */
	struct al_error err;
	struct al_verdict *verdict; /* exec and install_package: what the program did */
	char *sandbox_id;	    /* create: the new sandbox; exec: the sandbox used, if persistent */
	char *data;		    /* read_file: the file's bytes */
	size_t len;		    /* read_file: their count (with want_fd: the file's size when opened) */
	int fd; /* read_file with want_fd: the file open for reading, else -1 (closed by srv_result_free) */
	struct srv_file_entry *entries; /* list_files */
	size_t n_entries;
	uint64_t bytes;	 /* write_file: bytes written */
	char *cell_json; /* a cell of a context: its value, error, images, files (JSON object); contexts: the answer */
	char *process_json;	    /* a background exec, the process calls: the answer (JSON object) */
	struct srv_file_stat *stat; /* file_op SRV_FILE_STAT (malloc'd); mkdir: bytes is 1 when it was made;
				     * remove: bytes counts the entries removed; archive: the members unpacked */
	/* exec, cell, files: the sandbox ended while the call ran (its lifetime, the server's caps, a
	 * destroy, the server stopping): why, in words ("sandbox sb-1 reached its lifetime (3 s) and
	 * was destroyed while this call ran", malloc'd) and as a keyword (a static string: "lifetime",
	 * "max_lifetime", "idle_ttl", "destroyed", "destroyed_by_approver", "server_stopping",
	 * "died"); else both NULL. */
	char *ended;
	const char *ended_reason;
	uint64_t ends_unix_ms; /* create, set_timeout: when the sandbox ends (wall clock, ms), 0: never */
	char *watch_json;      /* watch: the summary (JSON object) */
	char *sandboxes_json;  /* fork: {"sandboxes": [{"sandbox_id", "ends_at"}...], "entries", "bytes"} */
	/* pause, resume: the sandbox's state (JSON object: sandbox_id, state, paused_at, paused_by,
	 * freezer, took_ms). */
	char *state_json;
	/* snapshot: a snapshot {snapshot_id, name, created_unix_ms, bytes, entries, sandbox_id,
	 * profile, image, metadata}, a list {"snapshots": [...]}, or a deletion's answer (JSON object). */
	char *snapshot_json;
	/* A call that needed the sandbox found it paused and resumed it first (said in its result). */
	bool resumed;
	/* exec and the other calls synced after they ran: what the call changed could not be kept in
	 * the state directory (no room left, an error): why, in words (malloc'd); else NULL. The call
	 * itself ran: its changes are in the sandbox, and lost if the server stops first. */
	char *not_kept;
};

struct srv_result *srv_result_new(void);
void srv_result_free(struct srv_result *r);

/* One live sandbox, as list_sandboxes describes it to its owner. */
struct srv_sandbox_info {
	char id[SRV_SANDBOX_ID_MAX];
	char profile[64];
	uint64_t created_unix_ms; /* wall clock (ms since the epoch) */
	uint64_t used_unix_ms;	  /* its last use: an operation started or ended */
	bool busy;		  /* an exec runs in it now */
	/* GET /v1/sandboxes/{id} (and the list): what E2B's getInfo answers. */
	char state[16];			    /* "running" or "paused" */
	uint64_t paused_unix_ms;	    /* paused: since when (wall clock, ms) */
	char paused_by[SRV_OWNER_MAX + 16]; /* paused: "owner", "approver <name>", "idle_ttl", "lifetime" */
	bool auto_pause;		    /* create's auto_pause */
	char image[128];		    /* the image it was made with, "host" without one */
	char image_digest[72];		    /* the content it stands on ("sha256:<hex>"), "" without one */
	char network[16];		    /* its posture: "none", "allowlist", "host" */
	uint64_t ends_unix_ms;		    /* when it ends (its lifetime or server.max_lifetime), 0: never */
	char *metadata_json;		    /* its labels, a JSON object (malloc'd: srv_sandbox_infos_free) */
	bool have_usage;		    /* the sandbox's cgroup was read: */
	double cpu_s;			    /* CPU time so far (-1 unknown) */
	uint64_t memory_bytes;		    /* in use now (0 unknown) */
	uint64_t peak_memory_bytes;
	unsigned processes; /* executions running in it now */
};

/* Frees what n infos hold (their metadata_json; the array itself is the caller's to free). */
void srv_sandbox_infos_free(struct srv_sandbox_info *v, size_t n);
/* A port of a sandbox's own loopback (sbports.c): its owner's, or reached with a port token. */
struct srv_port_req {
	const char *owner; /* the requesting principal (ignored when token is set) */
	const char *sandbox_id;
	uint16_t port;	   /* 1-65535 */
	const char *token; /* NULL: owner's credentials; else a port token (port_token) for this sandbox and port */
	uint64_t ttl_ms;   /* port_token: how long the token lives (0: as long as the sandbox) */
};

/* A listening TCP socket of a sandbox (list_ports): on loopback or on any address. */
struct srv_port_info {
	uint16_t port;
	char addr[48]; /* "127.0.0.1", "0.0.0.0", "::1", "::" */
};

#define SRV_PORT_TOKEN_LEN 43 /* characters of a port token (256 random bits, base64url) */

struct srv_op; /* the manager's handle of one running operation; opaque to the session */

struct srv_sink {
	void (*on_output)(void *cookie, enum srv_stream stream, const char *data, size_t len);
	void (*on_done)(void *cookie, struct srv_result *result); /* result NULL: out of memory */
	void *cookie;
};

/* The manager: a context pointer and one entry per operation. Every start entry is required;
 * cancel and release may be NULL (a manager that finishes everything synchronously). */
struct srv_mgr_api {
	void *ctx;
	int (*create_sandbox)(void *ctx, const struct srv_create_req *req, const struct srv_sink *sink,
			      struct srv_op **op, struct al_error *err);
	int (*exec)(void *ctx, const struct srv_exec_req *req, const struct srv_sink *sink, struct srv_op **op,
		    struct al_error *err);
	int (*install_package)(void *ctx, const struct srv_install_req *req, const struct srv_sink *sink,
			       struct srv_op **op, struct al_error *err);
	int (*write_file)(void *ctx, const struct srv_write_req *req, const struct srv_sink *sink, struct srv_op **op,
			  struct al_error *err);
	int (*read_file)(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **op,
			 struct al_error *err);
	int (*list_files)(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **op,
			  struct al_error *err);
	int (*destroy_sandbox)(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink,
			       struct srv_op **op, struct al_error *err);
	int (*context)(void *ctx, const struct srv_context_req *req, const struct srv_sink *sink, struct srv_op **op,
		       struct al_error *err);
	void (*cancel)(void *ctx, struct srv_op *op);
	void (*release)(void *ctx, struct srv_op *op);
	/* Synchronous and optional (NULL: the manager cannot list): owner's live sandboxes (never a
	 * spare, never another principal's) in *out (malloc'd, free()) and *n. 0 or -ENOMEM. */
	int (*list_sandboxes)(void *ctx, const char *owner, struct srv_sandbox_info **out, size_t *n,
			      struct al_error *err);
	int (*process)(void *ctx, const struct srv_process_req *req, const struct srv_sink *sink, struct srv_op **op,
		       struct al_error *err);
	/* Optional (NULL: ENOTSUP): stat, mkdir, move, remove; asynchronous like the start entries. */
	int (*file_op)(void *ctx, const struct srv_file_req *req, const struct srv_sink *sink, struct srv_op **op,
		       struct al_error *err);
	/* Synchronous and optional (NULL: no streamed uploads): checks that owner's sandbox exists and
	 * that path is one a write may name, then opens in *fd (O_RDWR | O_CLOEXEC, owned by the caller)
	 * an unnamed file beneath its workspace, counted against its disk limit and invisible to the
	 * sandbox, that write_file (spooled) later puts in place. Closing it unused leaves nothing. */
	int (*open_upload)(void *ctx, const char *owner, const char *sandbox_id, const char *path, int *fd,
			   struct al_error *err);
	/* Optional: the sandbox's lifetime from now (finishes in the start call; result->ends_unix_ms). */
	int (*set_timeout)(void *ctx, const struct srv_timeout_req *req, const struct srv_sink *sink,
			   struct srv_op **op, struct al_error *err);
	/* Synchronous and optional: one of owner's sandboxes, as list_sandboxes describes it (*out
	 * filled; free its metadata_json with srv_sandbox_infos_free(out, 1)). -ENOENT, as for an
	 * unknown id, for another principal's. */
	int (*sandbox_info)(void *ctx, const char *owner, const char *id, struct srv_sandbox_info *out,
			    struct al_error *err);
	/* Synchronous, cheap and optional (NULL: none): 0 when install_package could start, else
	 * -errno with err set for what it would refuse at once (an unknown sandbox, a registry the
	 * sandbox's network cannot reach). Asked before the call is classified: nobody is asked to
	 * approve what cannot run. */
	int (*install_check)(void *ctx, const struct srv_install_req *req, struct al_error *err);
	/* Ports (synchronous, optional). port_connect: a TCP connection to req->port of the sandbox's
	 * loopback, made inside its network namespace: 0 and *fd (the caller's, O_NONBLOCK), or -errno
	 * (-ENOENT: no such sandbox of owner's; -EACCES: the token is not valid for this sandbox and
	 * port; -ECONNREFUSED: nothing listens there). list_ports: the sandbox's listening ports in
	 * *out (malloc'd, free()), sorted by port. port_token: a new token for req->port of owner's
	 * sandbox into token (SRV_PORT_TOKEN_LEN + 1 bytes), its end in *expires_unix_ms (0: never but
	 * with the sandbox); only its digest is kept. */
	int (*port_connect)(void *ctx, const struct srv_port_req *req, int *fd, struct al_error *err);
	int (*list_ports)(void *ctx, const struct srv_port_req *req, struct srv_port_info **out, size_t *n,
			  struct al_error *err);
	int (*port_token)(void *ctx, const struct srv_port_req *req, char *token, uint64_t *expires_unix_ms,
			  struct al_error *err);
	/* Optional (NULL: ENOTSUP): a watch of a directory; a bad path fails the start call. */
	int (*watch)(void *ctx, const struct srv_watch_req *req, const struct srv_sink *sink, struct srv_op **op,
		     struct al_error *err);
	/* Optional (NULL: ENOTSUP): a fork; an unknown sandbox fails the start call. */
	int (*fork)(void *ctx, const struct srv_fork_req *req, const struct srv_sink *sink, struct srv_op **op,
		    struct al_error *err);
	/* Optional (NULL: ENOTSUP): pause and resume in place (finish in the start call; result->state_json). */
	int (*pause_sandbox)(void *ctx, const struct srv_pause_req *req, const struct srv_sink *sink,
			     struct srv_op **op, struct al_error *err);
	int (*resume_sandbox)(void *ctx, const struct srv_pause_req *req, const struct srv_sink *sink,
			      struct srv_op **op, struct al_error *err);
	/* Optional (NULL: ENOTSUP): snapshots (srv_snapshot_req); an unknown sandbox or snapshot fails
	 * the start call. */
	int (*snapshot)(void *ctx, const struct srv_snapshot_req *req, const struct srv_sink *sink, struct srv_op **op,
			struct al_error *err);
};

#endif
