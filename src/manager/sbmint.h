/* sbmint.h — what the sandbox manager's files share among themselves: the table of held sandboxes
 * and its lock (sbmgr.c), executions and their turns (sbexec.c), interpreter cells (sbcells.c), the
 * workspace file operations (sbfiles.c), the warm pool and expiry (sbpool.c) and the listings
 * (sblist.c). Nothing outside src/manager/sb*.c includes it: the contract is sbmgr.h and api.h. */
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

/* One held sandbox. */
struct sbx {
	struct sbx *next;
	char id[SBM_ID_LEN + 1];
	char owner[SRV_OWNER_MAX]; /* the principal that created or claimed it ("" for a spare) */
	struct al_sandbox *sb;
	char *profile;
	char *net_hosts; /* the allowlist the sandbox was made with ("" when its posture has no proxy) */
	enum al_net_posture net;
	char image[128];	  /* the image it was made with ("" : the host's system directories) */
	char image_digest[72];	  /* its "sha256:<hex>" ("" without an image) */
	uint64_t exec_timeout_ms; /* limits.timeout of code_create_sandbox: an exec's default wall limit, 0: none */
	uint64_t created_ms, used_ms;
	unsigned refs;		/* the table's (while listed) + each operation's */
	bool listed;		/* in m->list (false once destroyed or expired) */
	bool pooled;		/* a warm spare nobody has asked for yet */
	bool busy;		/* an exec holds this sandbox's turn (under m->mu) */
	struct al_job *running; /* the exec holding the turn, for destroy (under m->mu) */
	struct ctx_set *ctxs;	/* interpreter contexts (context.c), made by the first cell (under m->mu) */
	char *pool_image;	/* the image it was made on, or NULL (the profile's root): what a claim matches */
	struct sbm_port_token *port_tokens; /* SBM_PORT_TOKENS_MAX slots (sbports.c), or NULL (under m->mu) */
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
	struct mq_table execs_of; /* executions (queued or running) per principal: server.quota.execs */
};

/* A sandbox to make, queued for the housekeeper by a worker that waits on m->cv for done. */
struct mkreq {
	struct mkreq *next;
	const char *profile, *hosts, *image;
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
	OP_CONTEXT
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
	char *context_id, *action; /* OP_CELL, OP_CONTEXT */
	int cancel_fd;		   /* OP_CELL: an eventfd m_cancel makes readable, or -1 */
	bool network;
	struct srv_limits limits;
};

/* ---- sbmgr.c: the table, policies, operations ---- */

uint64_t sbm_now_ms(void); /* CLOCK_MONOTONIC, in ms */
void sbx_free(struct sbx *s);
/* Drops one reference; the last one destroys the sandbox. */
void sbx_put(struct sbm *m, struct sbx *s);
/* The sandbox id with a reference taken, if owner owns it; NULL with err set otherwise. */
struct sbx *sbx_get(struct sbm *m, const char *id, const char *owner, struct al_error *err);
/* 0 if id is NULL or a sandbox owner owns; -ENOENT with err set otherwise. */
int sbx_known(struct sbm *m, const char *id, const char *owner, struct al_error *err);
/* Under m->mu: takes s off the table, killing what runs in it. */
void sbx_unlist_locked(struct sbm *m, struct sbx *s);
void sbx_set_owner(struct sbx *s, const char *owner);
/* Makes a sandbox on the calling thread (the housekeeper's): 0 and *out, or -errno. */
int sbx_make_now(struct sbm *m, const char *profile, const char *image, bool network, const char *hosts,
		 const struct srv_limits *lim, bool pooled, struct sbx **out, struct al_error *err);
/* Has the housekeeper make a sandbox, and waits for it. */
int sbx_new(struct sbm *m, const char *profile, const char *image, bool network, const char *hosts,
	    const struct srv_limits *lim, bool pooled, struct sbx **out, struct al_error *err);
/* Puts s on the table (the table's reference), within server.max_sandboxes and the owner's quota. */
int sbx_list(struct sbm *m, struct sbx *s, struct al_error *err);
/* Under m->mu: owner's listed sandboxes; the per-principal sandbox quota. */
unsigned sbm_owned_locked(const struct sbm *m, const char *owner);
unsigned sbm_quota_sandboxes(const struct sbm *m);
int sbm_set_limit_if(struct al_policy *p, enum al_limit l, uint64_t v, struct al_error *err);
bool hosts_same(const char *a, const char *b);
char *hosts_join(const char *const *v, size_t n);

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

/* Waits for s's turn and an exec slot within wall_ms of the request, and takes both. */
int exec_turn(struct sbm *m, struct srv_op *op, struct sbx *s, bool persistent, uint64_t wall_ms, struct al_error *err);
void exec_turn_done(struct sbm *m, struct sbx *s);
void *exec_thread(void *arg);
int sbm_exec(void *ctx, const struct srv_exec_req *req, const struct srv_sink *sink, struct srv_op **out,
	     struct al_error *err);
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

#endif
