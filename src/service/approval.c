/* approval.c — the approval queue: pending calls listed for reviewers, each decided exactly once. */
#include "service/approval.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "audit/audit.h"
#include "util/clock.h"

struct apq_entry {
	struct apq_entry *next;
	uint64_t id;
	char *tool, *reason;
	char *asker;  /* the principal that made the call ("" when the transport named none) */
	json_t *args; /* reduced (audit_params): the short view */
	json_t *full; /* the arguments exactly as they will run */
	char digest[APQ_DIGEST_LEN + 1];
	size_t code_len;
	struct srv_mark marks[SRV_GATE_MARKS_MAX]; /* where the rule's pattern matched the code */
	size_t nmarks;
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
	int efd;	   /* bumped on every change */
	uint64_t gen;	   /* counts the changes (under mu) */
	pthread_cond_t cv; /* CLOCK_MONOTONIC: broadcast on every change, for apq_wait */
};

static void changed(struct apq *q)
{
	pthread_mutex_lock(&q->mu);
	q->gen++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
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
	free(e->asker);
	json_decref(e->args);
	json_decref(e->full);
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
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = q;
	return 0;
}

uint64_t apq_generation(struct apq *q)
{
	pthread_mutex_lock(&q->mu);
	uint64_t g = q->gen;
	pthread_mutex_unlock(&q->mu);
	return g;
}

uint64_t apq_wait(struct apq *q, uint64_t seen, int ms)
{
	struct timespec until = al_deadline_ts(CLOCK_MONOTONIC, ms < 0 ? 0 : (uint64_t)ms);
	pthread_mutex_lock(&q->mu);
	while (q->gen == seen && pthread_cond_timedwait(&q->cv, &q->mu, &until) == 0)
		;
	uint64_t g = q->gen;
	pthread_mutex_unlock(&q->mu);
	return g;
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
		e->done(e->cookie, SRV_GATE_ABANDONED, SRV_BY_NOBODY, NULL);
		entry_free(e);
		e = next;
	}
	close(q->efd);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

/* "sha256:<hex>" of the request as it will run: the tool and its arguments, serialized with sorted
 * keys, so that the same request always has the same digest and any change of a byte changes it. */
int apq_digest(const char *tool, const json_t *full, char out[APQ_DIGEST_LEN + 1])
{
	json_t *req = json_pack("{s:s,s:O}", "tool", tool, "arguments", full);
	char *text = req ? json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII) : NULL;
	json_decref(req);
	if (!text)
		return -ENOMEM;
	unsigned char d[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)text, strlen(text), d);
	free(text);
	int n = snprintf(out, APQ_DIGEST_LEN + 1, "sha256:");
	for (size_t i = 0; i < sizeof(d); i++)
		n += snprintf(out + n, APQ_DIGEST_LEN + 1 - (size_t)n, "%02x", d[i]);
	return 0;
}

int apq_ask(struct apq *q, const struct srv_question *qn, apq_done_fn done, void *cookie, uint64_t *id_out)
{
	struct apq_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->tool = strdup(qn->tool ? qn->tool : "");
	e->reason = strdup(qn->reason ? qn->reason : "");
	e->asker = strdup(qn->principal ? qn->principal : "");
	e->args = qn->args ? audit_params(qn->args, NULL) : json_object();
	e->full = qn->args ? json_deep_copy(qn->args) : json_object();
	if (!e->tool || !e->reason || !e->asker || !e->args || !e->full ||
	    apq_digest(e->tool, e->full, e->digest) < 0) {
		entry_free(e);
		return -ENOMEM;
	}
	e->code_len = json_string_length(json_object_get(e->full, "code"));
	for (size_t i = 0; qn->marks && i < qn->nmarks && i < SRV_GATE_MARKS_MAX; i++)
		if (qn->marks[i].start < qn->marks[i].end && qn->marks[i].end <= e->code_len)
			e->marks[e->nmarks++] = qn->marks[i];
	e->asked_ms = mono_ms();
	e->timeout_ms = qn->timeout_ms;
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
	e->done(e->cookie, why, SRV_BY_NOBODY, NULL);
	entry_free(e);
}

int apq_resolve(struct apq *q, const struct apq_decision *d)
{
	pthread_mutex_lock(&q->mu);
	struct apq_entry *e = NULL;
	for (e = q->head; e && e->id != d->id; e = e->next)
		;
	int r = !e ? -ENOENT : 0;
	/* Nobody approves their own call: an agent holding both a client and a reviewer channel
	 * must not be able to wave its own code through. The decider is the principal the
	 * transport authenticated, never a name the request chose. */
	if (r == 0 && d->decider && e->asker[0] && strcmp(d->decider, e->asker) == 0)
		r = -EPERM;
	/* An approval names the exact request it approves (the digest the reviewer was shown);
	 * a decline needs none: refusing is always safe. */
	if (r == 0 && d->approve && (!d->digest || strcmp(d->digest, e->digest) != 0))
		r = -ESTALE;
	if (r == 0)
		e = take(q, d->id);
	pthread_mutex_unlock(&q->mu);
	if (r < 0)
		return r;
	changed(q);
	/* Outside the lock: done() wakes a waiter that may call back into the queue. */
	e->done(e->cookie, d->approve ? SRV_GATE_APPROVED : SRV_GATE_DECLINED, d->by, d->decider);
	entry_free(e);
	return 0;
}

/* [{start, end, line, column, text}]: each mark's bytes, where it starts (1-based; columns in
 * characters) and the matched text as apq_visible shows it. */
static json_t *marks_json(const char *code, const struct srv_mark *m, size_t n)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < n; i++) {
		unsigned line, col;
		apq_position(code, m[i].start, &line, &col);
		char *text = apq_visible(code + m[i].start, m[i].end - m[i].start);
		json_t *o = text ? json_pack("{s:I,s:I,s:I,s:I,s:s}", "start", (json_int_t)m[i].start, "end",
					     (json_int_t)m[i].end, "line", (json_int_t)line, "column", (json_int_t)col,
					     "text", text)
				 : NULL;
		free(text);
		if (json_array_append_new(list, o) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

static json_t *entry_json(const struct apq_entry *e, uint64_t now)
{
	json_t *item = json_pack("{s:I,s:s,s:s,s:O,s:O,s:s,s:I,s:s,s:I,s:I}", "id", (json_int_t)e->id, "tool", e->tool,
				 "reason", e->reason, "arguments", e->args, "request", e->full, "digest", e->digest,
				 "code_bytes", (json_int_t)e->code_len, "principal", e->asker, "age_ms",
				 (json_int_t)(now - e->asked_ms), "timeout_ms", (json_int_t)e->timeout_ms);
	const char *code = json_string_value(json_object_get(e->full, "code"));
	if (item && code) {
		char *shown = apq_visible(code, e->code_len);
		char *marked = e->nmarks ? apq_visible_marked(code, e->code_len, e->marks, e->nmarks) : NULL;
		json_t *marks = marks_json(code, e->marks, e->nmarks);
		if (!shown || (e->nmarks && !marked) || !marks ||
		    json_object_set_new(item, "code_visible", json_string(shown)) < 0 ||
		    json_object_set_new(item, "marks", marks) < 0 ||
		    (marked && json_object_set_new(item, "code_marked", json_string(marked)) < 0)) {
			json_decref(item);
			item = NULL;
		}
		free(shown);
		free(marked);
	}
	return item;
}

json_t *apq_list(struct apq *q, const char *only)
{
	json_t *list = json_array();
	if (!list)
		return NULL;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&q->mu);
	for (struct apq_entry *e = q->head; e; e = e->next) {
		if (only && strcmp(only, e->asker) != 0)
			continue;
		if (json_array_append_new(list, entry_json(e, now)) < 0) {
			json_decref(list);
			list = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&q->mu);
	return list;
}

/* Appends c as "\u{XXXX}" when a reviewer could not see it: C0 and C1 controls other than
 * newline and tab, DEL, and the invisible or direction-changing code points (zero-width
 * characters, bidirectional overrides and isolates, the BOM) that can make code read
 * differently from how it runs. Everything else is itself. */
static bool invisible(uint32_t c)
{
	return (c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f) || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2060 && c <= 0x2069) || c == 0xfeff || c == 0x00ad ||
	       c == 0x180e || (c >= 0xe0000 && c <= 0xe007f);
}

/* Decodes one UTF-8 sequence of s[0..n) (valid UTF-8: the schema checked it); *len its bytes. */
static uint32_t decode(const unsigned char *s, size_t n, size_t *len)
{
	size_t k = s[0] < 0x80 ? 1 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (k > n)
		k = n;
	uint32_t c = k == 1 ? s[0] : s[0] & (0x3f >> (k - 1));
	for (size_t i = 1; i < k; i++)
		c = c << 6 | (s[i] & 0x3f);
	*len = k;
	return c;
}

/* Appends len bytes of add to the growing *out (used, cap); false on ENOMEM (*out freed). */
static bool append(char **out, size_t *used, size_t *cap, const char *add, size_t len)
{
	if (*used + len + 1 > *cap) {
		*cap = (*used + len + 1) * 2;
		char *grown = realloc(*out, *cap);
		if (!grown) {
			free(*out);
			*out = NULL;
			return false;
		}
		*out = grown;
	}
	memcpy(*out + *used, add, len);
	*used += len;
	return true;
}

char *apq_visible_marked(const char *s, size_t n, const struct srv_mark *m, size_t nm)
{
	size_t cap = n + 1, used = 0, next = 0;
	bool open = false;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	for (size_t i = 0, k = 0; i <= n; i += k) {
		/* Marks open and close at the first character boundary at or past their byte offsets (a
		 * pattern matched without UTF mode may end inside a character). */
		if (open && i >= m[next].end) {
			open = false;
			next++;
			if (!append(&out, &used, &cap, APQ_MARK_CLOSE, strlen(APQ_MARK_CLOSE)))
				return NULL;
		}
		if (!open && next < nm && i >= m[next].start && i < n) {
			open = true;
			if (!append(&out, &used, &cap, APQ_MARK_OPEN, strlen(APQ_MARK_OPEN)))
				return NULL;
		}
		if (i == n)
			break;
		uint32_t c = decode((const unsigned char *)s + i, n - i, &k);
		char esc[16];
		const char *add = s + i;
		size_t len = k;
		if (invisible(c)) {
			len = (size_t)snprintf(esc, sizeof(esc), "\\u{%04X}", (unsigned)c);
			add = esc;
		}
		if (!append(&out, &used, &cap, add, len))
			return NULL;
	}
	out[used] = 0;
	return out;
}

char *apq_visible(const char *s, size_t n)
{
	return apq_visible_marked(s, n, NULL, 0);
}

void apq_position(const char *s, size_t at, unsigned *line, unsigned *column)
{
	*line = 1;
	*column = 1;
	for (size_t i = 0; i < at; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*column = 1;
		} else if (((unsigned char)s[i] & 0xc0) != 0x80) { /* a character's first byte */
			(*column)++;
		}
	}
}

char *apq_marks_text(const char *s, size_t n, const struct srv_mark *m, size_t nm)
{
	size_t cap = 64, used = 0;
	char *out = malloc(cap);
	for (size_t i = 0; out && i < nm && m[i].end <= n; i++) {
		unsigned line, col;
		apq_position(s, m[i].start, &line, &col);
		size_t len = m[i].end - m[i].start;
		char *text = apq_visible(s + m[i].start, len > APQ_MARK_TEXT_MAX ? APQ_MARK_TEXT_MAX : len);
		char head[64];
		int h = snprintf(head, sizeof(head), "%sline %u, column %u: " APQ_MARK_OPEN, i ? "; " : "", line, col);
		bool ok = text && append(&out, &used, &cap, head, (size_t)h) &&
			  append(&out, &used, &cap, text, strlen(text)) &&
			  append(&out, &used, &cap, len > APQ_MARK_TEXT_MAX ? "..." : "",
				 len > APQ_MARK_TEXT_MAX ? 3 : 0) &&
			  append(&out, &used, &cap, APQ_MARK_CLOSE, strlen(APQ_MARK_CLOSE));
		free(text);
		if (!ok) {
			free(out);
			return NULL;
		}
	}
	if (out)
		out[used] = 0;
	return out;
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

static int approver_ask(void *ctx, const struct srv_question *qn, srv_approver_done done, void *cookie, uint64_t *id)
{
	return apq_ask(ctx, qn, done, cookie, id);
}

static void approver_cancel(void *ctx, uint64_t id, enum srv_gate_outcome why)
{
	apq_cancel(ctx, id, why);
}

void apq_approver(struct apq *q, struct srv_approver *out)
{
	*out = (struct srv_approver){.ctx = q, .ask = approver_ask, .cancel = approver_cancel};
}
