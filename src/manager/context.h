/* context.h — interpreter contexts: long-lived kernels in a held sandbox that run successive cells and keep their state. */
#ifndef AL_MANAGER_CONTEXT_H
#define AL_MANAGER_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "airlock/airlock.h"
#include "config/config.h"
#include "manager/api.h"

/*
 * A context is a kernel — airlock's own interpreter driver (kernel/pykernel.py, embedded in the
 * binary and started as `python3 -c TEXT`) — run as an ordinary exec of the sandbox: sandbox
 * user, seccomp, Landlock, the sandbox's cgroup and limits, no network (its own lo), its own pid
 * namespace. Its stdin is one end of a socketpair made here; nothing listens anywhere.
 *
 * The protocol on that socket: frames of one type byte, a 4-byte big-endian length, the bytes.
 *   manager → kernel   'x' {"code", "text_max", "image_max"} run a cell
 *                      'i' (empty)                           interrupt the running cell
 *   kernel → manager   'h' {"pid", "version"}                 ready (once, at start)
 *                      'o' / 'e' bytes                         the cell's stdout / stderr
 *                      'r' {"exit_code", "value", "error", "images", "files", ...}  the cell ended
 * The kernel gives each cell fresh pipes as fd 1 and 2 and, when the cell ends (or is
 * interrupted), kills every other process of its pid namespace: nothing a cell started outlives
 * it. Everything the kernel sends is the sandbox's word: sizes are bounded, the result is
 * re-encoded key by key, an image must look like a PNG.
 *
 * A cell's time limit (or a cancel) sends 'i'; if no 'r' comes within CTX_GRACE_MS the kernel is
 * killed and the result says the state was lost. A kernel that dies (OOM, os._exit) is started
 * afresh by the next cell.
 */

struct ctx_set; /* the contexts of one sandbox */

/* What a context needs from its sandbox (borrowed for the call). */
struct ctx_env {
	struct al_sandbox *sb;
	const struct cfg *cfg;
	uint64_t timeout_ms; /* the cell's wall-clock limit: the request's, else the sandbox's, 0: config */
};

struct ctx_cell_req {
	const char *language;
	const char *context_id; /* NULL: the language's default context */
	const char *code;
	size_t code_len;
	int cancel_fd; /* readable once the cell is cancelled (an eventfd), or -1 */
	void (*on_output)(void *cookie, int stream, const char *data, size_t len);
	void *cookie;
};

/* Whether language has a kernel (contexts exist for it). */
bool ctx_language_supported(const char *language);

int ctx_set_new(struct ctx_set **out);
/* Kills every kernel now, without waiting (the sandbox is being destroyed: a running cell ends
 * with its state lost). Safe from any thread, under the manager's lock. */
void ctx_set_kill(struct ctx_set *cs);
/* Kills every kernel and frees the set (before the sandbox it ran in is destroyed). */
void ctx_set_free(struct ctx_set *cs);

/* Runs one cell on the calling thread: 0 and *out (verdict plus cell_json), or -errno with err
 * (unknown language, the context busy with another cell, the kernel would not start). */
int ctx_run_cell(struct ctx_set *cs, const struct ctx_env *env, const struct ctx_cell_req *req, struct srv_result **out,
		 struct al_error *err);

/* Context management (synchronous): create (language, id), list, restart (id), delete (id).
 * The answer is JSON text in (*out)->cell_json. */
int ctx_manage(struct ctx_set *cs, const struct ctx_env *env, const struct srv_context_req *req,
	       struct srv_result **out, struct al_error *err);

/* What a restart of the server keeps of a sandbox's contexts: their names (a JSON array of
 * {context_id, language}, a new reference, NULL on ENOMEM; [] for no set) and *generation, which
 * changes whenever one is made or deleted. */
json_t *ctx_set_names(struct ctx_set *cs, unsigned *generation);
/* Makes context id of language again after a restart of the server, with no kernel: its next cell
 * starts one and says `restarted: true`, `restart_reason: "server-restarted"` (paused_to_disk:
 * "paused-to-disk", its sandbox's processes were released). 0 or -errno. */
int ctx_set_lost(struct ctx_set *cs, const char *id, const char *language, bool paused_to_disk);

/* Pure, for the fuzz target: a kernel's 'r' answer (any JSON, the sandbox's word) re-encoded key
 * by key: value and error texts cut at cap bytes, images only those that look like PNG within
 * image_max base64 bytes (the others counted in images_dropped), at most 200 files. A new reference, or NULL on ENOMEM. */
json_t *ctx_answer(const json_t *answer, size_t cap, size_t image_max);

/* A cell answer costs the server about its own size, whatever the sandbox sends (cellanswer.c):
 * at most ctx_answer_max bytes, CTX_ANSWER_ELEMENTS array elements and object members (a 32 MiB
 * flat array of zeros was 32 million values, 1.4 GB), CTX_ANSWER_DEPTH levels. */
#define CTX_ANSWER_ELEMENTS 50000u
#define CTX_ANSWER_DEPTH    32u
/* The most bytes an answer can need for texts of cap characters and image_max bytes of figures. */
size_t ctx_answer_max(size_t cap, size_t image_max);
/* Whether JSON text s[0..n) stays within max_elements (',' ':' '[' '{' outside strings) and
 * max_depth, counted without parsing it. */
bool ctx_json_within(const char *s, size_t n, unsigned max_elements, unsigned max_depth);
/* A kernel's answer frame, bounded (above), then parsed: a JSON object still to be re-encoded
 * (ctx_answer), or NULL with why set (the kernel broke its protocol: it is not ours any more). */
json_t *ctx_load_answer(const char *body, size_t len, size_t cap, size_t image_max, char *why, size_t why_cap);

#endif
