/* evq.h — the thread-safe queue that carries the manager's callbacks to the MCP session's thread. */
#ifndef AL_MCP_EVQ_H
#define AL_MCP_EVQ_H

#include <stddef.h>
#include <stdint.h>

#include "manager/api.h"
#include "service/gate.h"

/*
 * Threads: the manager calls a sink from any thread; the sink only copies the event into the
 * queue and bumps an eventfd. The session drains the queue on its own thread (the transport's
 * loop polls evq_fd), so all session state is touched by one thread and needs no lock.
 * The queue and each link are reference-counted, so a manager that calls on_done after the
 * session is gone writes into a closed queue instead of freed memory.
 */

struct evq;	 /* the queue: one per session */
struct evq_link; /* one operation's sink cookie */

enum evq_kind {
	EVQ_OUTPUT, /* a chunk of output (only when the call wants progress) */
	EVQ_DONE,   /* the operation ended: result is the manager's */
	EVQ_ANSWER, /* the approver answered (or gave up): outcome, by */
};

struct evq_event {
	struct evq_event *next;
	enum evq_kind kind;
	uint64_t call_id;
	enum srv_stream stream;
	struct srv_result *result;     /* EVQ_DONE (NULL: the manager ran out of memory) */
	enum srv_gate_outcome outcome; /* EVQ_ANSWER */
	enum srv_gate_by by;	       /* EVQ_ANSWER */
	char approver[96];	       /* EVQ_ANSWER: who decided, or "" */
	size_t len;
	char data[]; /* EVQ_OUTPUT: len bytes */
};

int evq_new(struct evq **out);
/* The session is done with the queue: later events are dropped as they arrive. */
void evq_close(struct evq *q);
void evq_unref(struct evq *q);
/* Readable while events wait (an eventfd; O_CLOEXEC, non-blocking). */
int evq_fd(const struct evq *q);
/* Every waiting event, oldest first (free each with evq_event_free); NULL when none. */
struct evq_event *evq_take(struct evq *q);
void evq_event_free(struct evq_event *e);

/*
 * A link for operation call_id, holding a reference on q. stream_budget: how many output bytes
 * the operation may queue in all (0: output is not wanted and never queued): a client that reads
 * slowly cannot make the server buffer without bound. The link starts with two references: the
 * session's and the manager's (dropped by on_done, or by evq_link_not_started).
 */
struct evq_link *evq_link_new(struct evq *q, uint64_t call_id, size_t stream_budget);
void evq_link_sink(struct evq_link *l, struct srv_sink *out);
/* The start call failed: the manager will never call on_done, so drop its reference here. */
void evq_link_not_started(struct evq_link *l);
/* Output bytes the budget refused so far. */
uint64_t evq_link_dropped(const struct evq_link *l);
void evq_link_unref(struct evq_link *l);
/* An approver's done callback (gate.h) whose cookie is a link: queues EVQ_ANSWER for the link's
 * call and drops the approver's reference (the link's second one, as the manager's above). */
void evq_link_answer(void *cookie, enum srv_gate_outcome outcome, enum srv_gate_by by, const char *approver);

#endif
