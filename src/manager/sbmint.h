/* sbmint.h — what the sandbox manager's files share among themselves: the table of held sandboxes
 * and its lock (sbmgr.c), executions and their turns (sbexec.c), interpreter cells (sbcells.c), the
 * workspace file operations (sbfiles.c), the warm pool and expiry (sbpool.c), the listings
 * (sblist.c) and lifetimes, labels and why a sandbox ended (sblife.c). Nothing outside src/manager/sb*.c includes it: the contract is sbmgr.h and api.h. */
#ifndef AL_MANAGER_SBMINT_H
#define AL_MANAGER_SBMINT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "manager/api.h"
#include "manager/quota.h"
#include "manager/sbmgr.h"

#define SBM_DEFAULT_PROFILE "untrusted-code-read"
#define SBM_ID_LEN	    20
/* A claimed spare is replaced this long after the claim: cloning a sandbox copies the server's
 * page tables and takes a CPU, which would otherwise delay the claim's own answer (measured: a
 * warm create's median 1.3 ms with an immediate refill, 0.23 ms with this delay). */
#define SBM_REFILL_DELAY_MS 5

/* A foreground exec's job while it runs, on its worker's stack. */
struct sbrun {
	struct sbrun *next;
	struct al_job *job;
};

struct sbproc;	/* a background process (sbprocs.c) */
struct pst_box; /* a sandbox's state on disk (persist.h) */
struct pst;
/* Why a sandbox ended (sblife.c words it for the calls it cut short and for later calls). */
enum sbx_end {
	SBX_LIVE,
	SBX_END_LIFETIME,     /* its own lifetime (create's lifetime, or set_timeout) */
	SBX_END_MAX_LIFETIME, /* server.max_lifetime */
	SBX_END_IDLE,	      /* server.idle_ttl */
	SBX_END_DIED,	      /* its init died */
	SBX_END_OWNER,	      /* destroyed by its owner */
	SBX_END_APPROVER,     /* destroyed by an approver */
	SBX_END_STOPPING,     /* the server stopped */
	SBX_END_UNWANTED,     /* its create was cancelled while it was made */
};

/* A sandbox that ended lately, remembered (a ring of SBM_GONE_MAX) so that its owner's next call
 * is told why, not only that the id is unknown. */
#define SBM_GONE_MAX 64
struct sbx_gone {
	char id[SBM_ID_LEN + 1];
	char owner[SRV_OWNER_MAX];
	char why[160];
};

/* One held sandbox. */
struct sbx {
	struct sbx *next;
	char id[SBM_ID_LEN + 1];
	char owner[SRV_OWNER_MAX]; /* the principal that created or claimed it ("" for a spare) */
	struct al_sandbox *sb;
	char *profile;
	char *net_hosts; /* the allowlist the sandbox was made with ("" when its posture has no proxy) */
	/* Its CA and secrets (references; NULL without): an exec with network gets the same placeholders
	 * and trust store (pol_share_tls), its proxy substitutes them. */
	struct tls_ca *tls_ca;
	struct al_secrets *secrets;
	enum al_net_posture net;
	char image[128];	  /* the image it was made with ("" : the host's system directories) */
	char image_digest[72];	  /* its "sha256:<hex>" ("" without an image) */
	uint64_t exec_timeout_ms; /* limits.timeout of code_create_sandbox: an exec's default wall limit, 0: none */
	uint64_t created_ms, used_ms;
	unsigned refs;		  /* the table's (while listed) + each operation's */
	bool listed;		  /* in m->list (false once destroyed or expired) */
	bool pooled;		  /* a warm spare nobody has asked for yet */
	unsigned nrun;		  /* execs, cells and background processes running (under m->mu) */
	struct sbrun *runs;	  /* the foreground execs' jobs, for destroy (under m->mu) */
	struct sbproc *procs;	  /* background processes, running and ended (sbprocs.c; under m->mu) */
	unsigned nprocs;	  /* how many procs lists */
	struct ctx_set *ctxs;	  /* interpreter contexts (context.c), made by the first cell (under m->mu) */
	struct json_t *ctx_names; /* their names as the record keeps them (ctx_set_names), or NULL */
	unsigned ctx_gen;	  /* the set's generation ctx_names was taken at */
	char *pool_image;	  /* the image it was made on, or NULL (the profile's root): what a claim matches */
	char *root;		  /* the rootfs it runs on, or NULL (the host's, or not known after a restart) */
	/* Lifetime and labels (sblife.c), under m->mu. */
	uint64_t ends_ms;	    /* its own end (sbm_now_ms clock), 0: only the server's caps */
	uint64_t lifetime_ms;	    /* the lifetime last asked for (create or set_timeout), for the words */
	char *meta_json;	    /* its metadata, a JSON object's text ("{}" without any; never changed once set) */
	enum sbx_end end;	    /* SBX_LIVE until it ends */
	char end_by[SRV_OWNER_MAX]; /* SBX_END_APPROVER: who */
	unsigned nwatches;	    /* watches of its workspace running (watch.c; under m->mu) */
	struct sbm_port_token *port_tokens; /* SBM_PORT_TOKENS_MAX slots (sbports.c), or NULL (under m->mu) */
	/* What it was made with, for the record that brings it back after a restart (sbpersist.c). */
	struct srv_limits lim; /* the client's knobs */
	bool network;	       /* network_enabled at create */
	uint64_t disk_bytes;   /* its workspace's size limit, as enforced */
	struct pst_box *box;   /* its state on disk, or NULL (no state directory, a spare) */
	json_t *layers;	       /* the layers its workspace stands on (persist.h), the top first, or NULL */
	/* Paused in place (sbpause.c), under m->mu. */
	bool paused; /* its state is "paused" (frozen, or brought back paused after a restart) */
	bool frozen; /* its processes are frozen (al_sandbox_pause) */
	/* Paused to disk (sbpause.c): its held sandbox released (sb NULL: no process, no memory), its
	 * files and record in the state directory; sbx_get makes it again (sbp_remake). */
	bool on_disk;
	bool changing;		   /* a pause or resume of it is under way (outside the lock): wait on m->cv */
	bool auto_pause;	   /* create's auto_pause: idle_ttl or its lifetime pause it instead */
	bool lifetime_runs_paused; /* create's lifetime_runs_paused */
	bool lifetime_restart;	   /* auto-paused at its lifetime's end: the lifetime starts again at the resume */
	unsigned inuse;		   /* calls that need it running now (sbx_use): a pause waits for none */
	uint64_t paused_ms;	   /* since when (sbm_now_ms) */
	uint64_t clock_stop_ms;	   /* its lifetime clock stopped here (paused; or brought back) */
	char paused_by[SRV_OWNER_MAX + 16];
	struct sbx *pause_next; /* the housekeeper's list of sandboxes to auto-pause */
	struct sbm *m;		/* its manager (sbx_free keeps or removes its state) */
};

/* A port token as the manager keeps it: its digest only, bound to one sandbox (the sbx holding it:
 * it dies with it) and one port. */
#define SBM_PORT_TOKENS_MAX 32
struct sbm_port_token {
	unsigned char digest[32]; /* SHA-256 of the token's text */
	uint16_t port;		  /* 0: a free slot */
	uint64_t expires_ms;	  /* sbm_now_ms() clock; 0: with the sandbox */
};

struct sbm {
	struct sbm_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC: operations ended, turns and slots freed, a cancel, mkreq done */
	struct sbx *list;
	size_t live;
	unsigned execs, ops; /* running execs; operations of any kind not yet done */
	bool stopping;
	/* The housekeeper makes every sandbox: PR_SET_PDEATHSIG ties a sandbox's init to the thread
	 * that created it, so that thread must live as long as the server (worker threads do not). */
	pthread_t hk;
	bool hk_started;
	pthread_cond_t hk_cv;	  /* wakes the housekeeper: a request queued, a spare claimed, shutdown */
	struct mkreq *queue;	  /* sandboxes to make, oldest first */
	uint64_t refill_after_ms; /* no spare is made before this (now_ms() clock): see SBM_REFILL_DELAY_MS */
	struct sbm_stats st;
	struct mq_table execs_of;	    /* executions (queued or running) per principal: server.quota.execs */
	struct sbx_gone gone[SBM_GONE_MAX]; /* sandboxes that ended lately (sblife.c), under mu */
	unsigned gone_next;
	int64_t wall_offset_ms;	 /* wall clock minus sbm_now_ms, read once: one sandbox's times never jitter */
	struct pst *pst;	 /* the state directory (sbm_opts.state_dir), or NULL: nothing outlives us */
	struct al_error pst_err; /* why it cannot be used (pst NULL, a state directory asked for) */
	bool pst_broken;
	/* Snapshots (sbsnap.c): their records by id (a JSON object), under snap_mu, which a snapshot's
	 * making holds throughout (its quota checked and its record saved as one step). */
	pthread_mutex_t snap_mu;
	json_t *snaps;
	/* Kept sandboxes this server could not bring back (sbpersist.c): id → {owner, why}, written
	 * before the server serves, then only read. */
	json_t *held_back;
};

/* A sandbox to make, queued for the housekeeper by a worker that waits on m->cv for done. */
struct mkreq {
	struct mkreq *next;
	const char *owner, *profile, *hosts, *image;
	const json_t *layers;
	bool network, done;
	const struct srv_limits *lim;
	struct sbx *s;
	int r;
	struct al_error err;
};

enum op_kind {
	OP_CREATE,
	OP_EXEC,
	OP_INSTALL,
	OP_DESTROY,
	OP_CELL,
	OP_CONTEXT,
	OP_PROCESS,
	OP_WATCH,
	OP_FORK,
	OP_SNAPSHOT
};

struct srv_op {
	struct sbm *m;
	pthread_mutex_t mu;
	enum op_kind kind;
	struct srv_sink sink;
	bool done, released, cancelled;
	struct al_job *job; /* the running job, for cancel */
	/* The request, copied. */
	char *sandbox_id, *language, *code, *profile, *hosts, *manager;
	char owner[SRV_OWNER_MAX]; /* the requesting principal: it may only use its own sandboxes */
	bool counted;		   /* holds one of its principal's executions (m->execs_of) */
	char *image;		   /* create: an image the profile offers (issue 18), or NULL */
	char **packages;
	size_t code_len, npackages;
	uint64_t timeout_ms;
	uint64_t started_ms;	   /* when the request was accepted: a queued exec's wait counts from here */
	char *context_id, *action; /* OP_CELL, OP_CONTEXT, OP_PROCESS */
	/* OP_EXEC: what the caller adds to the program's run. */
	char **env; /* NULL-terminated "NAME=VALUE" */
	char *cwd;  /* NULL: the workspace */
	char *stdin_data;
	size_t stdin_len;
	bool background, keep_stdin;
	/* OP_PROCESS: the process and what is done to it. */
	int pid, signal;
	uint64_t offset;
	bool follow, collect; /* timeout_ms: how long a follow waits (0: to the end) */
	int cancel_fd;	      /* OP_CELL: an eventfd m_cancel makes readable, or -1 */
	bool network;
	struct srv_limits limits;
	uint64_t lifetime_ms;		       /* OP_CREATE: srv_create_req.lifetime_ms */
	char *meta_json;		       /* OP_CREATE: the metadata as a JSON object's text, or NULL */
	unsigned pty_cols, pty_rows;	       /* OP_EXEC (background): its terminal's first size, 0: none */
	struct watch *watch;		       /* OP_WATCH: its state (watch.c), owned by its worker */
	unsigned count;			       /* OP_FORK: how many children */
	bool auto_pause, lifetime_runs_paused; /* OP_CREATE */
	bool inuse, resumed;		       /* holds its sandbox through sbx_use (op_end lets go); it resumed it */
	/* OP_CREATE from a snapshot: the layers its workspace stands on, a reference held on each until
	 * op_free (the new sandbox's box takes its own); OP_SNAPSHOT: its name, or NULL. */
	json_t *layers;
	char *snap_name;
};

/* ---- sbmgr.c: the table, policies, operations ---- */

uint64_t sbm_now_ms(void); /* CLOCK_MONOTONIC, in ms */
void sbx_free(struct sbx *s);
/* Drops one reference; the last one destroys the sandbox. */
void sbx_put(struct sbm *m, struct sbx *s);
/* The sandbox id with a reference taken, if owner owns it; NULL with err set otherwise. One paused
 * to disk is made again first (held, still paused: sbx_back), so that every caller finds s->sb. */
struct sbx *sbx_get(struct sbm *m, const char *id, const char *owner, struct al_error *err);
/* sbx_get without making one paused to disk again (s->sb may be NULL): for the calls that never
 * touch it (destroy, pause, resume, an existence check). */
struct sbx *sbx_find(struct sbm *m, const char *id, const char *owner, struct al_error *err);
/* s (referenced), if paused to disk, made again under its id, still paused; *back set when it was
 * (may be NULL). 0, or -errno with err saying why (s stays on disk). */
int sbx_back(struct sbm *m, struct sbx *s, bool *back, struct al_error *err);
/* 0 if id is NULL or a sandbox owner owns; -ENOENT with err set otherwise. */
int sbx_known(struct sbm *m, const char *id, const char *owner, struct al_error *err);
/* Under m->mu: takes s off the table, killing what runs in it. */
void sbx_unlist_locked(struct sbm *m, struct sbx *s);
void sbx_set_owner(struct sbx *s, const char *owner);
/* Makes a sandbox on the calling thread (the housekeeper's): 0 and *out, or -errno. layers: the
 * ids of the layers its workspace stands on (persist.h), the top first, or NULL for an empty one. */
int sbx_make_now(struct sbm *m, const char *owner, const char *profile, const char *image, bool network,
		 const char *hosts, const struct srv_limits *lim, const json_t *layers, bool pooled, struct sbx **out,
		 struct al_error *err);
/* sbx_new with a workspace over layers (a fork's child, a sandbox from a snapshot, one brought back). */
int sbx_new_layered(struct sbm *m, const char *owner, const char *profile, const char *image, bool network,
		    const char *hosts, const struct srv_limits *lim, const json_t *layers, struct sbx **out,
		    struct al_error *err);
/* Has the housekeeper make a sandbox for owner (whose secrets it gets; NULL: a spare), and waits. */
int sbx_new(struct sbm *m, const char *owner, const char *profile, const char *image, bool network, const char *hosts,
	    const struct srv_limits *lim, bool pooled, struct sbx **out, struct al_error *err);
/* The image s stands on, as what makes it again is to name it: NAME@sha256:<hex> (that content,
 * whatever NAME names later: a sandbox brought back, a fork, a snapshot's), the digest alone, or
 * NULL without an image. buf: SBX_IMAGE_REF bytes. */
#define SBX_IMAGE_REF 208
const char *sbx_image_ref(const struct sbx *s, char *buf);
/* Puts s on the table (the table's reference), within server.max_sandboxes and the owner's quota. */
int sbx_list(struct sbm *m, struct sbx *s, struct al_error *err);
/* Under m->mu: owner's listed sandboxes; the per-principal sandbox quota. */
unsigned sbm_owned_locked(const struct sbm *m, const char *owner);
unsigned sbm_quota_sandboxes(const struct sbm *m);
/* Under m->mu: the disk limits of owner's listed sandboxes together (what they may store). */
uint64_t sbm_disk_owned_locked(const struct sbm *m, const char *owner);
/* Under m->mu: 0 if owner may hold more sandboxes with disk bytes of disk limits beside its own
 * (server.quota.sandboxes and sandbox_bytes); -EAGAIN with err naming the quota otherwise. */
int sbm_quota_check_locked(const struct sbm *m, const char *owner, unsigned more, uint64_t disk, struct al_error *err);
int sbm_set_limit_if(struct al_policy *p, enum al_limit l, uint64_t v, struct al_error *err);
bool hosts_same(const char *a, const char *b);
char *hosts_join(const char *const *v, size_t n);
/* Network asked for a new sandbox of profile with no host to reach (none of the client's, none
 * of the profile's registries): -EINVAL naming the way out; else 0. */
int sbm_network_check(const struct sbm *m, const char *profile, bool network, const char *hosts, struct al_error *err);

struct srv_op *op_new(struct sbm *m, enum op_kind kind, const struct srv_sink *sink);
void op_free(struct srv_op *op);
/* Reports res and marks op done (frees it if released); gives back its execution slot. */
void op_finish(struct srv_op *op, struct srv_result *res);
/* The end of a worker: res, or an error result when r < 0 (res then freed); s put; op finished. */
void op_end(struct srv_op *op, struct sbx *s, int r, const struct al_error *err, struct srv_result *res);
struct srv_result *op_error_result(int r, const struct al_error *e);
/* al_spawn_opts.on_output for an op: to its sink. */
void op_output_cb(void *cookie, int stream, const char *data, size_t len);
/* Runs fn(op) on a detached worker thread, within the principal's execution quota; op is freed on
 * failure. */
int op_start_thread(struct sbm *m, struct srv_op *op, void *(*fn)(void *), struct srv_op **out, struct al_error *err);

/* ---- sbexec.c: executions and package installs ---- */

/* Takes a place among s's running work (server.max_execs_per_sandbox: -EBUSY past it) and, with
 * slot, waits for an exec slot (server.max_execs) within wall_ms of the request. */
int exec_turn(struct sbm *m, struct srv_op *op, struct sbx *s, bool persistent, bool slot, uint64_t wall_ms,
	      struct al_error *err);
void exec_turn_done(struct sbm *m, struct sbx *s, bool slot);
/* Points policy p at s: its execs run there, with the sandbox's network or (network false) none. */
int exec_in_sandbox(struct sbx *s, struct al_policy *p, bool network, struct al_error *err);
/* The policy of op's exec in s (argv, env, cwd, limits): 0 and *out, or -errno. */
int exec_policy(struct sbm *m, const struct sbx *s, const struct srv_op *op, struct al_policy **out,
		struct al_error *err);
void *exec_thread(void *arg);
int sbm_exec(void *ctx, const struct srv_exec_req *req, const struct srv_sink *sink, struct srv_op **out,
	     struct al_error *err);
/* srv_mgr_api.install_check: what install_package would refuse at once (no such sandbox, a
 * registry its network cannot reach), before the call is classified and approved. */
int sbm_install_check(void *ctx, const struct srv_install_req *req, struct al_error *err);
int sbm_install(void *ctx, const struct srv_install_req *req, const struct srv_sink *sink, struct srv_op **out,
		struct al_error *err);

/* ---- sbcells.c: interpreter contexts (context.c runs them) ---- */

bool sbm_cell_wanted(const struct srv_exec_req *req);
int sbm_start_cell(struct sbm *m, struct srv_op *op, const struct srv_exec_req *req, struct srv_op **out,
		   struct al_error *err);
int sbm_context(void *ctx, const struct srv_context_req *req, const struct srv_sink *sink, struct srv_op **out,
		struct al_error *err);

/* ---- sbfiles.c: the workspace file operations (finish in the start call) ---- */

int sbm_write_file(void *ctx, const struct srv_write_req *req, const struct srv_sink *sink, struct srv_op **out,
		   struct al_error *err);
int sbm_read_file(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		  struct al_error *err);
int sbm_list_files(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **out,
		   struct al_error *err);
int sbm_file_op(void *ctx, const struct srv_file_req *req, const struct srv_sink *sink, struct srv_op **out,
		struct al_error *err);
int sbm_open_upload(void *ctx, const char *owner, const char *sandbox_id, const char *path, int *fd,
		    struct al_error *err);

/* ---- sbprocs.c: background processes ---- */

/* The exec of op (a background one) in s, whose place exec_turn took: started, answered at once with
 * the process; it lives on until it ends, is killed, or s goes (sbproc_kill_all). Consumes the
 * policy. */
void sbproc_start(struct srv_op *op, struct sbx *s, struct al_policy *p, int code_fd);
/* Under m->mu: kills every running background process of s (its table entry goes, or the server stops). */
void sbproc_kill_all_locked(struct sbx *s);
/* Frees what is left of s's processes once nothing runs (sbx_free). */
void sbproc_free_all(struct sbx *s);
int sbm_process(void *ctx, const struct srv_process_req *req, const struct srv_sink *sink, struct srv_op **out,
		struct al_error *err);

/* ---- watch.c: directory watches ---- */

int sbm_watch(void *ctx, const struct srv_watch_req *req, const struct srv_sink *sink, struct srv_op **out,
	      struct al_error *err);

/* ---- sbpool.c: the warm pool, expiry, and the housekeeper that makes every sandbox ---- */

/* A spare of profile for owner (keep: within its sandbox quota), listed with a reference; or NULL. */
struct sbx *sbm_claim_pooled(struct sbm *m, const char *profile, const char *image, const char *owner, bool keep);
void *sbm_housekeeper(void *arg);

/* ---- sbports.c: ports of a sandbox's loopback (the srv_mgr_api entries) ---- */

int sbm_port_connect(void *ctx, const struct srv_port_req *req, int *fd, struct al_error *err);
int sbm_list_ports(void *ctx, const struct srv_port_req *req, struct srv_port_info **out, size_t *n,
		   struct al_error *err);
int sbm_port_token(void *ctx, const struct srv_port_req *req, char *token, uint64_t *expires_unix_ms,
		   struct al_error *err);
/* s's listening ports for the approver's console ([{port, address, url}]), or NULL. */
json_t *sbm_ports_json(struct sbx *s);

/* ---- sblist.c: listings ---- */

int sbm_list_sandboxes(void *ctx, const char *owner, struct srv_sandbox_info **out, size_t *n, struct al_error *err);
int sbm_sandbox_info(void *ctx, const char *owner, const char *id, struct srv_sandbox_info *out, struct al_error *err);

/* ---- sblife.c: lifetime, labels, and why a sandbox ended ---- */

/* Executions running in s now (under m->mu): the one place that counts them. */
unsigned sbm_running_in(const struct sbx *s);
/* Under m->mu: takes s off the table for why (by: the approver), remembering it for its owner. */
void sbx_end_locked(struct sbm *m, struct sbx *s, enum sbx_end why, const char *by);
/* Under m->mu: the reason s expires at now (SBX_LIVE: none); *next lowered to its next deadline. */
enum sbx_end life_expiry_locked(const struct sbm *m, const struct sbx *s, uint64_t now, uint64_t *next);
/* The sbm_now_ms stamp t on the wall clock (ms since the epoch), past or future. */
uint64_t sbm_wall_ms(const struct sbm *m, uint64_t t);
/* Under m->mu: when s ends (sbm_now_ms clock), 0: never. */
uint64_t life_ends_locked(const struct sbm *m, const struct sbx *s);
/* Under m->mu: why a call on id by owner finds no sandbox, if it ended lately: true and why set. */
bool life_gone_locked(const struct sbm *m, const char *id, const char *owner, char *why, size_t cap);
/* Whether s ended (or the server stops) since the caller took it: its words (" while this call
 * ran" follows them) and keyword; false with nothing set otherwise. */
bool life_ended(struct sbm *m, const struct sbx *s, char *why, size_t cap, const char **reason);
bool life_ended_locked(const struct sbm *m, const struct sbx *s, char *why, size_t cap, const char **reason);
/* An ended call's result: its verdict a kill (SIGKILL) rather than a setup error, res->ended set. */
int life_mark_result(struct srv_result *res, const char *why, const char *reason);
/* After a call in s that ran (r its outcome so far, res its result or NULL): if s ended meanwhile,
 * the call says so — a failure becomes -ENOENT with the words, a result is marked
 * (life_mark_result). Returns the call's r. */
int sbm_end_note(struct sbm *m, const struct sbx *s, int r, struct al_error *err, struct srv_result *res);
/* create's lifetime against server.max_lifetime and its metadata checked: 0 and *meta_json
 * (malloc'd, NULL without metadata), or -EINVAL/-ENOMEM with err naming the problem. */
int life_check_create(const struct sbm *m, const struct srv_create_req *req, char **meta_json, struct al_error *err);
/* Gives s (not yet listed, or just claimed) the lifetime and labels of create op (its labels move to s). */
void life_apply_create(struct sbm *m, struct sbx *s, struct srv_op *op);
int sbm_set_timeout(void *ctx, const struct srv_timeout_req *req, const struct srv_sink *sink, struct srv_op **out,
		    struct al_error *err);

/* ---- sbfork.c: forks ---- */

int sbm_fork(void *ctx, const struct srv_fork_req *req, const struct srv_sink *sink, struct srv_op **out,
	     struct al_error *err);
/* ---- sbsnap.c: snapshots ---- */

int sbm_snapshot(void *ctx, const struct srv_snapshot_req *req, const struct srv_sink *sink, struct srv_op **out,
		 struct al_error *err);
/* Create op from owner's snapshot id: its layers (referenced for op: op_free lets them go), and its
 * profile, image and limits where op leaves them unset. 0, or -errno (ENOENT: unknown; ENOTSUP: no
 * state directory) with err saying why. */
int sbs_for_create(struct sbm *m, struct srv_op *op, const char *id, struct al_error *err);
/* The snapshots kept in the state directory, each holding its layers (sbp_open, before the layers
 * nothing stands on are removed). */
void sbs_load(struct sbm *m);

/* ---- sbpause.c: paused in place ---- */

int sbm_pause(void *ctx, const struct srv_pause_req *req, const struct srv_sink *sink, struct srv_op **out,
	      struct al_error *err);
int sbm_resume(void *ctx, const struct srv_pause_req *req, const struct srv_sink *sink, struct srv_op **out,
	       struct al_error *err);
/* sbx_get for a call that needs the sandbox running (an exec, a cell, files, process actions, a
 * port): a paused one is resumed first (*resumed set, when not NULL), and while the caller holds
 * it (until sbx_unuse) no pause comes between. NULL with err set, as sbx_get, or when the resume
 * failed. */
struct sbx *sbx_use(struct sbm *m, const char *id, const char *owner, bool *resumed, struct al_error *err);
/* The same for s, found by the caller with a reference: 0, or -errno with s put. */
int sbx_wake(struct sbm *m, struct sbx *s, bool *resumed, struct al_error *err);
/* The end of sbx_use's hold: no sbx_put (unuse_put does both). */
void sbx_unuse(struct sbm *m, struct sbx *s);
void sbx_unuse_put(struct sbm *m, struct sbx *s);
/* Under m->mu, from the housekeeper's sweep: s expired for why; with auto_pause (idle_ttl or its own
 * lifetime) it is to be paused instead: true, a reference taken and s put on *list (or, while a
 * call holds it in the foreground, true and nothing done: a later sweep pauses it). */
bool pause_instead_locked(struct sbm *m, struct sbx *s, enum sbx_end why, struct sbx **list);
/* Outside the lock: pauses each of list (failing that, ends it as it would have ended), puts it. */
void pause_list(struct sbm *m, struct sbx *list);

/* ---- sbpersist.c: sandboxes kept across a restart of the server ---- */

/* Opens the state directory and brings back every sandbox kept there (sbm_new). */
int sbp_open(struct sbm *m, const char *dir, struct al_error *err);
/* A client's new sandbox kept from now on (before it is listed): 0, or the state directory's
 * refusal (no room, read-only), and then the sandbox must not be made. */
int sbp_keep(struct sbm *m, struct sbx *s, struct al_error *err);
/* The image store keeps digest's content while the record of id (a kept sandbox's, or a
 * snapshot's) exists: an `airlock image rm` while no server runs cannot take the tree it comes
 * back on. A failure is said on stderr. */
void sbp_pin_image(struct sbm *m, const char *id, const char *digest, bool snapshot);
/* Its record written again (its lifetime changed). */
void sbp_save(struct sbm *m, struct sbx *s);
/* After a cell or a context call: the record again if the sandbox's contexts were made or deleted,
 * so a restart (even after a crash) knows which contexts to say were lost. */
void sbp_contexts(struct sbm *m, struct sbx *s);
/* A call that may have changed s's files has ended: they are on disk before its result is sent. */
void sbp_sync(struct sbm *m, struct sbx *s);
/* sbp_sync that says whether the files are on disk: 0, or -errno (ENOSPC...) with err. */
int sbp_sync_checked(struct sbm *m, struct sbx *s, struct al_error *err);
/* A fork's child c (kept, empty) given parent p's files, indexed for its next sync and on disk:
 * linked from p's mirror when both are kept, else copied from p's workspace and synced. */
struct wsm_stats;
/* A kept sandbox's files frozen into a new layer (persist.h): *layers, the ids its copy would
 * stand on (the new one, then s's own), with one reference held on each for the caller
 * (pst_layers_unref); without a state directory, *layers is NULL and nothing is done. Refused
 * first, with nothing frozen, unless the state directory has room bytes more (pst_room: what
 * needs them, in the words of its refusal). */
int sbp_freeze(struct sbm *m, struct sbx *s, uint64_t room, const char *what, json_t **layers, struct wsm_stats *st,
	       struct al_error *err);
/* The call that froze layers (sbp_freeze's) was refused: s keeps no freeze of it, so the layer goes
 * with the caller's references unless something else stands on it. */
void sbp_unfreeze(struct sbx *s, const json_t *layers);
int sbp_fork_files(struct sbm *m, struct sbx *p, struct sbx *c, struct wsm_stats *st, struct al_error *err);
/* A new held sandbox for s (paused to disk) made as s was made, its workspace filled from s's
 * mirror: *sb, for s to take. 0, or -errno with err. */
int sbp_remake(struct sbm *m, struct sbx *s, struct al_sandbox **sb, struct al_error *err);
/* s's contexts marked lost (their kernels ended with its processes): the first cell of each says
 * so, as after a restart. Call with no cell running; takes m->mu. */
void sbp_contexts_lost(struct sbm *m, struct sbx *s);
/* sbx_free: a sandbox the server's stop ended is kept (a last sync, its record with the time of
 * the stop); any other is removed from disk. */
void sbp_release(struct sbx *s);

#endif
