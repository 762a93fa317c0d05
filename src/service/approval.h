/* approval.h — the queue of tool calls waiting for a human's decision, shared by every front end that can ask. */
#ifndef AL_SERVICE_APPROVAL_H
#define AL_SERVICE_APPROVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "service/gate.h"

/*
 * When the risk rules answer ASK, the front end that received the call (the HTTP JSON API, or
 * an MCP session through apq_approver) registers it here and waits; whoever can decide
 * (POST /v1/approvals/{id}, the terminal prompt of `airlock mcp`) lists the queue and resolves
 * one entry.
 *
 *  - The queue has no timers and no threads of its own. A waiter keeps its own deadline and,
 *    when it passes (or the waiter gives up), calls apq_cancel: silence is a denial.
 *  - done() is called exactly once per apq_ask that returned 0: by apq_resolve (approved or
 *    declined), by apq_cancel (with the caller's reason: SRV_GATE_TIMED_OUT, SRV_GATE_ABANDONED)
 *    or by apq_free (SRV_GATE_ABANDONED). It runs on the thread that made that call, after the
 *    entry left the queue and without the queue's lock held, so it may call back into the queue.
 *    Because resolve and cancel can race, a waiter that cancels must still wait for done() before
 *    it frees the cookie: done() may be running on the resolver's thread at that very moment.
 *  - by names who decided, for the audit log (SRV_BY_HTTP, SRV_BY_TERMINAL; SRV_BY_NOBODY when
 *    the waiter gave up).
 *  - apq_fd is readable after any change (an ask, a resolve, a cancel): a prompt polls it and
 *    then reads apq_list, so it notices both new questions and withdrawn ones.
 *  - Every function is thread-safe. Ids are never reused within one queue.
 *  - The arguments kept for apq_list are reduced as in the audit log (audit_params): secrets
 *    dropped, code and file content replaced by their SHA-256, size and an escaped excerpt. A
 *    reviewer sees what the call is, not a payload that could drive their terminal.
 */

struct apq;

typedef srv_approver_done apq_done_fn;

int apq_new(struct apq **out);
/* Every entry still pending ends with done(SRV_GATE_ABANDONED, SRV_BY_NOBODY). */
void apq_free(struct apq *q);

/* "sha256:" and 64 hex digits. */
#define APQ_DIGEST_LEN 71

/* Registers a pending approval of qn->tool with qn->args (borrowed; copies are kept), reason (what
 * the human is asked about), timeout_ms (reported to reviewers; the waiter enforces it) and the
 * principal that made the call (nobody may approve their own). *id_out gets its id. 0 or -ENOMEM
 * (done is then never called). */
int apq_ask(struct apq *q, const struct srv_question *qn, apq_done_fn done, void *cookie, uint64_t *id_out);
/* The waiter gives up on id (timed out, abandoned): done(why) unless it was already decided. */
void apq_cancel(struct apq *q, uint64_t id, enum srv_gate_outcome why);
/* The pending approvals, oldest first (only those asked by principal `only`, unless NULL):
 * [{id, tool, reason, arguments (reduced, as in the audit log), request (the arguments exactly as
 * they will run), digest (of tool + request: what an approval must name), code_bytes, code_visible
 * (the code with invisible and control characters spelled \u{XXXX}), marks ([{start, end, line,
 * column, text}]: where the deciding rule's pattern matched the code), code_marked (code_visible
 * with each mark between >>> and <<<; only with marks), principal, age_ms, timeout_ms}]. New
 * reference; NULL on ENOMEM. */
json_t *apq_list(struct apq *q, const char *only);

/* A human's decision on one pending approval. */
struct apq_decision {
	uint64_t id;
	bool approve;
	enum srv_gate_by by; /* SRV_BY_HTTP, SRV_BY_TERMINAL */
	const char *decider; /* the principal deciding, or NULL (the operator's own terminal) */
	const char *digest;  /* approve: the request's digest as the reviewer was shown it */
};
/* done(SRV_GATE_APPROVED or SRV_GATE_DECLINED, by) and 0; or, leaving the entry pending: -ENOENT
 * (unknown id, already decided or cancelled), -EPERM (the decider made the call), -ESTALE (an
 * approval without the request's digest, or naming another). */
int apq_resolve(struct apq *q, const struct apq_decision *d);
/* The digest of tool with args as they will run (e->digest of apq_list): 0 or -ENOMEM. */
int apq_digest(const char *tool, const json_t *args, char out[APQ_DIGEST_LEN + 1]);
/* s[0..n) (UTF-8) with every invisible or control character but newline and tab spelled
 * \u{XXXX}; malloc'd, NULL on ENOMEM. What a reviewer reads is what runs. */
char *apq_visible(const char *s, size_t n);
/* The same, with APQ_MARK_OPEN before and APQ_MARK_CLOSE after each of the marks m[0..nm) (byte
 * ranges of s, in order, not overlapping): what a rule's pattern matched, as the terminal prompt
 * and the MCP elicitation message show it. */
#define APQ_MARK_OPEN	  ">>>"
#define APQ_MARK_CLOSE	  "<<<"
#define APQ_MARK_TEXT_MAX 200 /* bytes of one match quoted in apq_marks_text */
char *apq_visible_marked(const char *s, size_t n, const struct srv_mark *m, size_t nm);
/* "line L, column C: >>>TEXT<<<; ..." for each mark (columns in characters, 1-based; TEXT as
 * apq_visible shows it, cut at APQ_MARK_TEXT_MAX bytes with "..."): a line the code itself cannot
 * forge, since it stands outside the code. malloc'd ("" without marks), NULL on ENOMEM. */
char *apq_marks_text(const char *s, size_t n, const struct srv_mark *m, size_t nm);
/* The 1-based line and column (in characters) of byte offset at of s. */
void apq_position(const char *s, size_t at, unsigned *line, unsigned *column);
/* A count of the queue's changes (asks, decisions, cancels): what apq_wait compares. */
uint64_t apq_generation(struct apq *q);
/* Waits up to ms for the count to differ from seen; returns it (a live view's wake-up). */
uint64_t apq_wait(struct apq *q, uint64_t seen, int ms);
/* How many are pending. */
size_t apq_pending(struct apq *q);
/* Readable after a change (an eventfd, non-blocking, O_CLOEXEC); apq_drain resets it. */
int apq_fd(const struct apq *q);
void apq_drain(struct apq *q);
/* q as an MCP session's approver (gate.h): ask is apq_ask, cancel is apq_cancel. */
void apq_approver(struct apq *q, struct srv_approver *out);

#endif
