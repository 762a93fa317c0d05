/* approval.c — the approval queue: pending calls listed for reviewers, each decided exactly once. */
#include "service/approval.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "manager/audit.h"

struct apq_entry {
	struct apq_entry *next;
	uint64_t id;
	char *tool, *reason;
	json_t *args; /* reduced (audit_params) */
	uint64_t asked_ms;
	uint32_t timeout_ms;
	apq_done_fn done;
	void *cookie;
};

struct apq {
	pthread_mutex_t mu;
	struct apq_entry *head, *tail; /* oldest first */
	uint64_t next_id;
	size_t n;
	int efd; /* bumped on every change */
};

static void changed(struct apq *q)
{
	uint64_t one = 1;
	/* Non-blocking; a saturated counter (EAGAIN) stays readable, which is all a reader needs. */
	if (write(q->efd, &one, sizeof(one)) < 0) {
	}
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void entry_free(struct apq_entry *e)
{
	if (!e)
		return;
	free(e->tool);
	free(e->reason);
	json_decref(e->args);
	free(e);
}

int apq_new(struct apq **out)
{
	struct apq *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0) {
		int e = -errno;
		free(q);
		return e;
	}
	pthread_mutex_init(&q->mu, NULL);
	*out = q;
	return 0;
}

void apq_free(struct apq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	struct apq_entry *e = q->head;
	q->head = q->tail = NULL;
	q->n = 0;
	pthread_mutex_unlock(&q->mu);
	while (e) {
		struct apq_entry *next = e->next;
		e->done(e->cookie, SRV_GATE_ABANDONED, SRV_BY_NOBODY);
		entry_free(e);
		e = next;
	}
	close(q->efd);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

int apq_ask(struct apq *q, const char *tool, const json_t *args, const char *reason, uint32_t timeout_ms,
	    apq_done_fn done, void *cookie, uint64_t *id_out)
{
	struct apq_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->tool = strdup(tool ? tool : "");
	e->reason = strdup(reason ? reason : "");
	e->args = args ? audit_params(args, NULL) : json_object();
	if (!e->tool || !e->reason || !e->args) {
		entry_free(e);
		return -ENOMEM;
	}
	e->asked_ms = mono_ms();
	e->timeout_ms = timeout_ms;
	e->done = done;
	e->cookie = cookie;
	pthread_mutex_lock(&q->mu);
	e->id = ++q->next_id;
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	q->n++;
	*id_out = e->id;
	pthread_mutex_unlock(&q->mu);
	changed(q);
	return 0;
}

/* Unlinks entry id; NULL when it is not (or no longer) pending. Call with the lock held. */
static struct apq_entry *take(struct apq *q, uint64_t id)
{
	struct apq_entry *prev = NULL;
	for (struct apq_entry *e = q->head; e; prev = e, e = e->next) {
		if (e->id != id)
			continue;
		if (prev)
			prev->next = e->next;
		else
			q->head = e->next;
		if (q->tail == e)
			q->tail = prev;
		q->n--;
		e->next = NULL;
		return e;
	}
	return NULL;
}

void apq_cancel(struct apq *q, uint64_t id, enum srv_gate_outcome why)
{
	pthread_mutex_lock(&q->mu);
	struct apq_entry *e = take(q, id);
	pthread_mutex_unlock(&q->mu);
	if (!e)
		return; /* already decided: its done() ran (or is running) on the resolver's thread */
	changed(q);
	e->done(e->cookie, why, SRV_BY_NOBODY);
	entry_free(e);
}

int apq_resolve(struct apq *q, uint64_t id, bool approve, enum srv_gate_by by)
{
	pthread_mutex_lock(&q->mu);
	struct apq_entry *e = take(q, id);
	pthread_mutex_unlock(&q->mu);
	if (!e)
		return -ENOENT;
	changed(q);
	/* Outside the lock: done() wakes a waiter that may call back into the queue. */
	e->done(e->cookie, approve ? SRV_GATE_APPROVED : SRV_GATE_DECLINED, by);
	entry_free(e);
	return 0;
}

json_t *apq_list(struct apq *q)
{
	json_t *list = json_array();
	if (!list)
		return NULL;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&q->mu);
	for (struct apq_entry *e = q->head; e; e = e->next) {
		json_t *item = json_pack("{s:I,s:s,s:s,s:O,s:I,s:I}", "id", (json_int_t)e->id, "tool", e->tool,
					 "reason", e->reason, "arguments", e->args, "age_ms",
					 (json_int_t)(now - e->asked_ms), "timeout_ms", (json_int_t)e->timeout_ms);
		if (json_array_append_new(list, item) < 0) {
			json_decref(list);
			list = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&q->mu);
	return list;
}

size_t apq_pending(struct apq *q)
{
	pthread_mutex_lock(&q->mu);
	size_t n = q->n;
	pthread_mutex_unlock(&q->mu);
	return n;
}

int apq_fd(const struct apq *q)
{
	return q->efd;
}

void apq_drain(struct apq *q)
{
	uint64_t n;
	if (read(q->efd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing changed since the last drain */
	}
}

static int approver_ask(void *ctx, const char *tool, const json_t *args, const char *reason, uint32_t timeout_ms,
			srv_approver_done done, void *cookie, uint64_t *id)
{
	return apq_ask(ctx, tool, args, reason, timeout_ms, done, cookie, id);
}

static void approver_cancel(void *ctx, uint64_t id, enum srv_gate_outcome why)
{
	apq_cancel(ctx, id, why);
}

void apq_approver(struct apq *q, struct srv_approver *out)
{
	*out = (struct srv_approver){.ctx = q, .ask = approver_ask, .cancel = approver_cancel};
}
