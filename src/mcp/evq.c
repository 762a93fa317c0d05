/* evq.c — a mutex-protected FIFO plus an eventfd: the only place where manager threads meet the session. */
#include "mcp/evq.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct evq {
	pthread_mutex_t lock;
	struct evq_event *head, *tail; /* under lock */
	bool closed;		       /* under lock */
	int efd;
	atomic_int refs;
};

struct evq_link {
	struct evq *q;
	uint64_t call_id;
	size_t budget;
	atomic_size_t queued; /* output bytes accepted so far */
	atomic_uint_least64_t dropped;
	atomic_int refs;
};

int evq_new(struct evq **out)
{
	struct evq *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0) {
		int e = errno;
		free(q);
		return -e;
	}
	pthread_mutex_init(&q->lock, NULL);
	atomic_init(&q->refs, 1);
	*out = q;
	return 0;
}

void evq_event_free(struct evq_event *e)
{
	if (!e)
		return;
	srv_result_free(e->result);
	free(e);
}

static void free_list(struct evq_event *e)
{
	while (e) {
		struct evq_event *next = e->next;
		evq_event_free(e);
		e = next;
	}
}

void evq_close(struct evq *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	struct evq_event *e = q->head;
	q->head = q->tail = NULL;
	pthread_mutex_unlock(&q->lock);
	free_list(e);
}

void evq_unref(struct evq *q)
{
	if (!q || atomic_fetch_sub(&q->refs, 1) != 1)
		return;
	free_list(q->head);
	close(q->efd);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

int evq_fd(const struct evq *q)
{
	return q->efd;
}

static void push(struct evq *q, struct evq_event *e)
{
	pthread_mutex_lock(&q->lock);
	if (q->closed) {
		pthread_mutex_unlock(&q->lock);
		evq_event_free(e);
		return;
	}
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	pthread_mutex_unlock(&q->lock);
	uint64_t one = 1;
	/* Cannot block (EFD_NONBLOCK); the counter saturating (EAGAIN) still leaves it readable. */
	if (write(q->efd, &one, sizeof(one)) < 0) {
		/* Nothing to do: the fd stays readable either way. */
	}
}

struct evq_event *evq_take(struct evq *q)
{
	uint64_t n;
	/* Drain the counter first: an event pushed after this read bumps it again. */
	if (read(q->efd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing was signalled; the list may still hold events pushed meanwhile. */
	}
	pthread_mutex_lock(&q->lock);
	struct evq_event *e = q->head;
	q->head = q->tail = NULL;
	pthread_mutex_unlock(&q->lock);
	return e;
}

static void link_on_output(void *cookie, enum srv_stream stream, const char *data, size_t len)
{
	struct evq_link *l = cookie;
	if (!len || !l->budget)
		return;
	size_t before = atomic_fetch_add(&l->queued, len);
	if (before >= l->budget || len > l->budget - before) {
		atomic_fetch_add(&l->dropped, len);
		return;
	}
	struct evq_event *e = malloc(sizeof(*e) + len);
	if (!e) {
		atomic_fetch_add(&l->dropped, len);
		return;
	}
	*e = (struct evq_event){.kind = EVQ_OUTPUT, .call_id = l->call_id, .stream = stream, .len = len};
	memcpy(e->data, data, len);
	push(l->q, e);
}

static void link_on_done(void *cookie, struct srv_result *result)
{
	struct evq_link *l = cookie;
	struct evq_event *e = calloc(1, sizeof(*e));
	if (e) {
		e->kind = EVQ_DONE;
		e->call_id = l->call_id;
		e->result = result;
		push(l->q, e);
	} else {
		/* The session would wait for this call forever: an event-less DONE is worse than
		 * losing the result, so keep trying once; the result alone cannot travel. */
		srv_result_free(result);
		struct evq_event *bare = calloc(1, sizeof(*bare));
		if (bare) {
			bare->kind = EVQ_DONE;
			bare->call_id = l->call_id;
			push(l->q, bare);
		}
	}
	evq_link_unref(l);
}

void evq_link_answer(void *cookie, enum srv_gate_outcome outcome, enum srv_gate_by by, const char *approver)
{
	struct evq_link *l = cookie;
	struct evq_event *e = calloc(1, sizeof(*e));
	/* Without memory the call cannot hear its answer: it stays waiting until its deadline, and
	 * the timeout denies it (fail closed: only an answer that arrived can approve). */
	if (e) {
		*e = (struct evq_event){.kind = EVQ_ANSWER, .call_id = l->call_id, .outcome = outcome, .by = by};
		snprintf(e->approver, sizeof(e->approver), "%s", approver ? approver : "");
		push(l->q, e);
	}
	evq_link_unref(l);
}

struct evq_link *evq_link_new(struct evq *q, uint64_t call_id, size_t stream_budget)
{
	struct evq_link *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->q = q;
	atomic_fetch_add(&q->refs, 1);
	l->call_id = call_id;
	l->budget = stream_budget;
	atomic_init(&l->queued, 0);
	atomic_init(&l->dropped, 0);
	atomic_init(&l->refs, 2);
	return l;
}

void evq_link_sink(struct evq_link *l, struct srv_sink *out)
{
	*out = (struct srv_sink){.on_output = link_on_output, .on_done = link_on_done, .cookie = l};
}

void evq_link_not_started(struct evq_link *l)
{
	evq_link_unref(l);
}

uint64_t evq_link_dropped(const struct evq_link *l)
{
	return atomic_load(&l->dropped);
}

void evq_link_unref(struct evq_link *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	evq_unref(l->q);
	free(l);
}
