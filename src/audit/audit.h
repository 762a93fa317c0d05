/* audit.h — the server's append-only audit log: JSON Lines records (a durable start before a call runs, one at its end), written whole, read back skipping torn lines. */
#ifndef AL_AUDIT_AUDIT_H
#define AL_AUDIT_AUDIT_H

/*
 * A record (one line, keys in this order):
 *   {"time":"2025-01-31T12:00:00.123Z",            RFC 3339, UTC, milliseconds
 *    "event":"start"|"end"|"call",                 below
 *    "call_id":"5f3a9c1e-12",                      start and end only: pairs them
 *    "client":{"transport":"stdio","peer":"pid 1234 (claude), tty /dev/pts/3",  http: "127.0.0.1:41234"
 *              "principal":"uid 1000" | null,      who made the call
 *              "on_behalf_of":"uid 1000"},        only when an approver acted on another's sandbox: its owner
 *    "sandbox":"sb-1" | null, "tool":"code_execute",
 *    "params":{...},                                the arguments, reduced (below)
 *    "params_dropped":["api_key"],                  only when a secret was dropped
 *    "risk":{"level":"HIGH","rule":"code-execute","needs_approval":true,"undecided":false} | null,
 *    "approval":{"decision":"approved"|"denied"|"none","by":"rule"|"auto"|"elicitation"|"http"|"terminal"|
 *                "timeout"|"unavailable"|"cancelled"|null,      approval_by in risk.h
 *                "approver":"name" | null},                    who answered, when known
 *    "result":{"status":"ok","duration_ms":12},      a start record: "started", 0
 *              "client_left":true                   only when the client's connection closed before
 *                                                   it had the answer (its call was cancelled)
 *    "resources":{...} | null, "proxy":[...] | null}  as the caller passed them
 *
 * Events. A call that passed the gate gets a "start" record, written and synced before it runs
 * (the server refuses the call when that write fails: see mgate.c), and an "end" record with the
 * same call_id when it ends; a crash in between leaves the start alone. A call that never ran
 * (denied, invalid) gets one "call" record. "repair" records (no client, tool or params) say
 * what audit_open found at the end of the file: {"time","event":"repair","repair":{"offset":N,
 * "bytes":N,"kind":"unterminated"|"invalid"}}. A "recovered" record, written by a server as it
 * starts, names the calls of its predecessors that have a start and no end (it crashed, or was
 * killed, while they ran): {"time","event":"recovered","unfinished":["call_id",...]}; a later
 * server names only those started after it.
 *
 * Parameters are reduced before they are written, at every depth of nested objects:
 *  - Never secrets: a parameter whose name, lowercased and without '_', '-', '.' and spaces,
 *    contains token, secret, password, passwd, authorization, apikey, credential, privatekey
 *    or cookie is dropped (its name goes to params_dropped). This errs on the side of dropping
 *    ("max_tokens" goes too). Secrets inside values (a token pasted into code) cannot be
 *    recognised: that is why code is not kept whole.
 *  - Top-level "code" and "content" (a file's body) become {"sha256": hex of the exact bytes,
 *    "bytes": N, "excerpt": the first AUDIT_EXCERPT_CHARS characters with control characters,
 *    backslashes and bidirectional-override characters escaped (\n, \t, \\, \x1b, \u202e),
 *    "truncated": whether there was more}: the digest proves which code ran, the excerpt lets a
 *    human recognise it, and neither lets a reviewer's terminal be driven by it.
 *
 * Writing: missing directories above the file are created (0700); the file is opened
 * O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode 0600
 * when created (an existing file keeps the mode its operator gave it). Each record is one
 * write(2) of the whole line, at most AUDIT_LINE_MAX bytes: a record that would be longer keeps
 * digests ({"sha256","bytes","truncated":true}) of its params, proxy and resources instead of
 * their text, in that order until it fits, and lists them in "truncated" (a write of 1 MiB to a
 * local regular file is whole on Linux unless the disk fills: below).
 *  - Threads: a mutex serializes records (and rotation) within a process.
 *  - Processes: O_APPEND makes the kernel pick the end of the file and write there as one step.
 *    Linux's local filesystems (ext4, xfs, btrfs, tmpfs) hold the inode lock for a whole write
 *    to a regular file, so records of several processes never interleave, whatever their size.
 *    POSIX promises less (only pipe writes up to PIPE_BUF are atomic) and NFS emulates
 *    O_APPEND: do not put the log on NFS.
 *  - A failed or short write (disk full, file size limit, I/O error) is reported as -errno (a
 *    short write as -ENOSPC) and counted (audit_health); a short write's bytes are cut off again
 *    (ftruncate) when no other writer appended after them, else the torn line is ended with a
 *    newline, so later records always start on a line of their own.
 *  - On open, the file's last line is checked (audit_tail_check): one without its newline (a
 *    crash mid-write) is ended with one, and a torn or invalid last line gets a "repair" record
 *    after it. The torn bytes are kept, not truncated: they are evidence, and readers skip them.
 *  - fsync: fdatasync(2) after each record, before audit_write returns, when configured; always
 *    after a start record, which must be durable before its call runs. audit_open syncs the
 *    log's directory once, so that a log it created keeps its name after a crash.
 *  - Rotation by size: before a record that would take the file past rotate_bytes, path.N-1 is
 *    renamed to path.N ... path to path.1 (path.keep is replaced, so keep files remain) and a
 *    new path is created. Processes sharing a log serialize rotation with flock(2) on the file
 *    being rotated, and each writer reopens path when it no longer names the file it holds;
 *    a record that races a rotation lands whole in path.1.
 *
 * Reading: lines are parsed one by one; a line that is not a JSON object, longer than
 * AUDIT_LINE_MAX, or the last one without its newline (a crash mid-write) is skipped and
 * counted; every other record is delivered intact. Empty lines are ignored.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "airlock/airlock.h"
#include "config/config.h"
#include "risk/risk.h"

#define AUDIT_EXCERPT_CHARS 80
#define AUDIT_LINE_MAX	    (1u << 20) /* a reader skips longer lines; a writer refuses to write them */
#define AUDIT_FILE_MODE	    0600

struct audit_options {
	const char *path;      /* absolute */
	bool fsync;	       /* fdatasync after every record */
	uint64_t rotate_bytes; /* AL_UNLIMITED: never rotate */
	unsigned keep;	       /* rotated files kept, at least 1 */
};

/* The options of a configuration's audit section; path is a.path, or fallback when NULL. */
void audit_options_from_cfg(const struct cfg_audit *a, const char *fallback, struct audit_options *o);
/* Where the log goes when the configuration names no path: /var/log/airlock/audit.jsonl for
 * root (privileged), else $XDG_STATE_HOME/airlock/audit.jsonl (~/.local/state when unset).
 * *out is malloc'd. 0, -ENOENT (no usable home) or -ENOMEM. */
int audit_default_path(bool privileged, char **out);

struct audit_log;

/* Opens (creating if needed) the log; the directory must exist. o is copied. */
int audit_open(const struct audit_options *o, struct audit_log **out, struct al_error *err);
void audit_close(struct audit_log *log);

enum audit_event {
	AUDIT_EVENT_CALL,  /* the one record of a call that never ran (denied, invalid) */
	AUDIT_EVENT_START, /* a call about to run: always synced */
	AUDIT_EVENT_END,   /* a call that started, ended (call_id names its start) */
};

enum audit_decision {
	AUDIT_NOT_DECIDED, /* refused before any approval (bad input, unknown sandbox) */
	AUDIT_APPROVED,
	AUDIT_DENIED,
};

/* One request, as the server saw it. Pointers are borrowed for the call; NULL ones are null. */
struct audit_record {
	struct timespec time; /* CLOCK_REALTIME when the request arrived; {0, 0}: now */
	enum audit_event event;
	const char *call_id;		  /* START and END: the same id; else NULL */
	const char *transport;		  /* "stdio", "http" */
	const char *peer;		  /* "127.0.0.1:41234", "pid 1234 (name), tty /dev/pts/3", or NULL */
	const char *principal;		  /* who made the call ("uid 1000", a token's name), or NULL */
	const char *on_behalf_of;	  /* the owner of the sandbox an approver acted on, or NULL (left out) */
	const char *sandbox;		  /* sandbox id, or NULL */
	const char *tool;		  /* "code_execute", ... */
	const json_t *params;		  /* the tool's arguments (reduced before writing) */
	const struct risk_decision *risk; /* NULL: not classified */
	enum audit_decision decision;
	enum approval_by by;  /* meaningful unless AUDIT_NOT_DECIDED */
	const char *approver; /* who answered, when known, or NULL */
	const char *status;   /* "ok", "error", "timeout", "denied", ... */
	bool client_left;     /* END and CALL: the client went away first ("client_left":true in result) */
	uint64_t duration_ms;
	const json_t *resources; /* object: CPU time, peak memory, ... */
	const json_t *proxy;	 /* array: the proxy's connections */
};

/* The record as a JSON object (new reference; pure). */
int audit_record_json(const struct audit_record *rec, json_t **out, struct al_error *err);
/* params reduced as described above (new reference; *dropped, if not NULL, gets a new array of
 * the dropped names). NULL only when out of memory. */
json_t *audit_params(const json_t *params, json_t **dropped);
/* rec (an object from audit_record_json) made to fit in max bytes of compact JSON: params, proxy
 * and resources in turn become digests of their text, named in "truncated". 0, -E2BIG (still too
 * long) or -ENOMEM. */
int audit_shrink(json_t *rec, size_t max);
/* Appends one record (one write; fsync and rotation as configured, fsync always for a START).
 * Thread-safe. A failure leaves no partial line behind (see above) and marks the log degraded
 * until a record is written again. */
int audit_write(struct audit_log *log, const struct audit_record *rec, struct al_error *err);

/* Appends rec, an object of the log's own (a "recovered" record), as one synced line. */
int audit_write_json(struct audit_log *log, const json_t *rec, struct al_error *err);

/* ---- what the log says of the servers before this one (past.c) ---- */

struct audit_past {
	json_t *open;	   /* object: call_id -> true, for each start without its end (nor a later
			    * "recovered" record naming it): the calls a crash cut short */
	json_t *sandboxes; /* object: sandbox id -> the principal of a call that named it ("" for
			    * none), unless a code_destroy_sandbox of it ended "ok" */
};
/* Reads the log at path (a missing file is an empty one): 0 and *out (audit_past_free), or -errno. */
int audit_past_read(const char *path, struct audit_past *out, struct al_error *err);
void audit_past_free(struct audit_past *p);
/* When past names unfinished calls: appends {"time","event":"recovered","unfinished":[call_id...]},
 * synced. 0 or -errno. */
int audit_write_recovered(struct audit_log *log, const struct audit_past *past, struct al_error *err);
/* That record (new reference; takes ids; NULL: ENOMEM). */
json_t *audit_recovered_json(json_t *ids);

/* The writer's state, for /v1/health and the metrics. */
struct audit_health {
	bool degraded;		   /* the last record could not be written */
	int error;		   /* its -errno */
	uint64_t failures;	   /* records that could not be written since audit_open */
	char reason[AL_ERROR_MAX]; /* when degraded: why */
};
void audit_health(struct audit_log *log, struct audit_health *out);

/* ---- the end of a file, as audit_open checks it (pure) ---- */

enum audit_tail_kind {
	AUDIT_TAIL_OK,		 /* empty, or the last line is a whole record */
	AUDIT_TAIL_UNTERMINATED, /* the last line has no newline: a write cut short */
	AUDIT_TAIL_INVALID,	 /* the last line is not a JSON object (or longer than AUDIT_LINE_MAX) */
};

struct audit_tail {
	enum audit_tail_kind kind;
	size_t offset; /* not OK: where the bad line starts in buf */
	size_t bytes;  /* not OK: its length, without its newline */
};

/* Judges the last line of a file from buf, its last len bytes; whole: buf starts at the file's
 * beginning (else a line without a newline before it in buf is longer than the window). Trailing
 * empty lines are passed over. */
void audit_tail_check(const char *buf, size_t len, bool whole, struct audit_tail *out);
/* The "repair" record for a bad tail found at file offset at (new reference; NULL: ENOMEM). */
json_t *audit_repair_json(const struct audit_tail *t, uint64_t at);

struct audit_read_stats {
	size_t records;	   /* delivered to the callback */
	size_t skipped;	   /* torn or invalid lines */
	bool torn_tail;	   /* the last skipped line was the unterminated end of the input */
	uint64_t consumed; /* bytes read up to and including the last newline */
};

/* Called per record with the parsed object (borrowed for the call) and its line (without the
 * newline). 0 goes on; a positive value stops reading (audit_read returns it); negative is an
 * error returned as is. */
typedef int (*audit_record_fn)(json_t *rec, const char *line, size_t len, void *data);

/* Reads fd from its current offset to its end. Returns 0 (or fn's positive value) or -errno;
 * *st (zeroed first) counts what was read. */
int audit_read(int fd, audit_record_fn fn, void *data, struct audit_read_stats *st, struct al_error *err);

#endif
