/* read.c — the audit log's reader: whole records are delivered, torn and invalid lines skipped and counted; the check of a file's last line. */
#include "audit/audit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/error.h"

#define CHUNK 65536

/* The line being assembled across reads; an overlong one is dropped as it arrives (memory stays
 * bounded by AUDIT_LINE_MAX whatever the file holds). */
struct reader {
	char *line;
	size_t len, cap;
	uint64_t bytes; /* of the current line so far, kept also while an overlong one is dropped */
	bool overlong;
	audit_record_fn fn;
	void *data;
	struct audit_read_stats *st;
};

static int append(struct reader *rd, const char *p, size_t n)
{
	if (rd->overlong)
		return 0;
	if (rd->len + n >= AUDIT_LINE_MAX) {
		rd->overlong = true;
		rd->len = 0;
		return 0;
	}
	if (rd->len + n + 1 > rd->cap) {
		size_t cap = rd->cap ? rd->cap : 4096;
		while (cap < rd->len + n + 1)
			cap *= 2;
		char *g = realloc(rd->line, cap);
		if (!g)
			return -ENOMEM;
		rd->line = g;
		rd->cap = cap;
	}
	memcpy(rd->line + rd->len, p, n);
	rd->len += n;
	return 0;
}

/* One complete line (its newline seen): a record, or a skipped line. */
static int finish_line(struct reader *rd)
{
	bool overlong = rd->overlong;
	size_t len = rd->len;
	rd->overlong = false;
	rd->len = 0;
	if (overlong) {
		rd->st->skipped++;
		return 0;
	}
	if (len == 0) /* a writer's newline after a torn line it found: nothing lost here */
		return 0;
	json_t *rec = json_loadb(rd->line, len, 0, NULL);
	if (!json_is_object(rec)) {
		json_decref(rec);
		rd->st->skipped++;
		return 0;
	}
	rd->st->records++;
	int r = rd->fn ? rd->fn(rec, rd->line, len, rd->data) : 0;
	json_decref(rec);
	return r;
}

/* Splits one buffer into lines; st->consumed advances past each newline. */
static int feed(struct reader *rd, const char *buf, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(buf, '\n', n);
		size_t part = nl ? (size_t)(nl - buf) : n;
		int r = append(rd, buf, part);
		rd->bytes += part;
		if (r < 0 || !nl)
			return r;
		rd->st->consumed += rd->bytes + 1;
		rd->bytes = 0;
		if ((r = finish_line(rd)) != 0)
			return r;
		buf += part + 1;
		n -= part + 1;
	}
	return 0;
}

static int read_all(int fd, struct reader *rd, struct al_error *err)
{
	cleanup_free char *buf = malloc(CHUNK);
	if (!buf)
		return al_err(err, ENOMEM, "audit: out of memory");
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return al_err_sys(err, errno, "audit: reading the log");
		if (n == 0)
			return 0;
		int r = feed(rd, buf, (size_t)n);
		if (r == -ENOMEM)
			return al_err(err, ENOMEM, "audit: out of memory");
		if (r != 0)
			return r; /* the callback's stop or error */
	}
}

int audit_read(int fd, audit_record_fn fn, void *data, struct audit_read_stats *st, struct al_error *err)
{
	*st = (struct audit_read_stats){0};
	struct reader rd = {.fn = fn, .data = data, .st = st};
	int r = read_all(fd, &rd, err);
	/* The end of the input without a newline: a record cut short by a crash (or, to a reader
	 * that follows the file, one still being written: it reads again from st->consumed). */
	if (r == 0 && rd.bytes > 0) {
		st->skipped++;
		st->torn_tail = true;
	}
	free(rd.line);
	return r;
}

/* ---- the last line ---------------------------------------------------------------------------- */

void audit_tail_check(const char *buf, size_t len, bool whole, struct audit_tail *out)
{
	*out = (struct audit_tail){.kind = AUDIT_TAIL_OK};
	size_t end = len;
	bool terminated = len > 0 && buf[len - 1] == '\n';
	while (end > 0 && buf[end - 1] == '\n') /* trailing empty lines: readers ignore them */
		end--;
	if (end == 0)
		return;
	size_t start = end;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	out->offset = start;
	out->bytes = end - start;
	if (!terminated) {
		out->kind = AUDIT_TAIL_UNTERMINATED;
		return;
	}
	/* No newline before it within the window: longer than any record a writer makes. */
	bool overlong = start == 0 && !whole;
	json_t *rec = overlong ? NULL : json_loadb(buf + start, end - start, 0, NULL);
	if (!json_is_object(rec))
		out->kind = AUDIT_TAIL_INVALID;
	json_decref(rec);
}
