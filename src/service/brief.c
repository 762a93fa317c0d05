/* brief.c — the text content of a tool's result: what a model needs to read, short (its output, a
 * cell's value or error, a one-line status only when the program did not simply exit 0); the whole
 * result stays in structuredContent and the JSON API. Pure: built from the structured result.
 *
 * Measured with airlock mcp (characters of text content per call, before → after):
 *   print(6*7), a cell of the session's sandbox       1697 → 2   ("42")
 *   print(6*7), fresh: true                           1417 → 2
 *   a failing Python cell (print('a'), then 1/0)      2036 → 144 (stdout, stderr: the traceback)
 *   the same, fresh: true                             1556 → 151 (... and "exit 1")
 *   a shell `ls -la /`                                2254 → 818 (the listing itself)
 *   a cell whose value is 6*7                         1735 → 10  ("Out[3]: 42")
 *   a timed-out `sleep 5` (timeout 1)                 1410 → 19  ("timed out after 1 s")
 *   code_write_file / code_read_file / code_list_files: 26 → 22, 64 → 5, 64 → 14
 */
#include "service/tools.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

#define TRACEBACK_LINES 12 /* a short traceback: its last lines say where and what */
#define TAIL_LINES	15 /* what an install's failure shows of its output */
#define TAIL_CHARS	2000
/* A stream's text beyond this shows its head and tail only (the whole kept output is in
 * structuredContent): a chatty program costs a model at most about 64 kB per stream. */
#define STREAM_HEAD (48u << 10)
#define STREAM_TAIL (16u << 10)

static const char *sv(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static size_t slen(const json_t *o, const char *key)
{
	return json_string_length(json_object_get(o, key));
}

/* A JSON string's bytes as they are (it may hold NUL: fwrite, not fputs). */
static void put(FILE *f, const json_t *s)
{
	if (json_is_string(s))
		fwrite(json_string_value(s), 1, json_string_length(s), f);
}

/* A JSON string as one or more whole lines. */
static void put_lines(FILE *f, const json_t *s)
{
	size_t n = json_string_length(s);
	put(f, s);
	if (n && json_string_value(s)[n - 1] != '\n')
		fputc('\n', f);
}

/* A value for %s: never NULL. */
static const char *or_q(const char *s)
{
	return s ? s : "?";
}

/* "1.2 MB", "512 bytes": a count a reader takes in at a glance. */
static void size_text(uint64_t n, char *out, size_t cap)
{
	if (n < 1000)
		snprintf(out, cap, "%llu bytes", (unsigned long long)n);
	else if (n < 1000000)
		snprintf(out, cap, "%.1f kB", (double)n / 1e3);
	else if (n < 1000000000)
		snprintf(out, cap, "%.1f MB", (double)n / 1e6);
	else
		snprintf(out, cap, "%.1f GB", (double)n / 1e9);
}

/* The last `lines` lines of s[0..n), at most `chars` bytes of them (from a line's or at least a
 * character's start). */
static const char *tail(const char *s, size_t n, unsigned lines, size_t chars)
{
	size_t i = n && s[n - 1] == '\n' ? n - 1 : n;
	for (unsigned seen = 0; i > 0; i--)
		if (s[i - 1] == '\n' && ++seen == lines)
			break;
	if (n - i > chars) {
		i = n - chars;
		const char *nl = memchr(s + i, '\n', n - i);
		if (nl && (size_t)(nl + 1 - s) < n)
			i = (size_t)(nl + 1 - s);
		while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
			i++;
	}
	return s + i;
}

/* The start of the character at or after s + i (never inside a UTF-8 sequence). */
static size_t char_start(const char *s, size_t n, size_t i)
{
	while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
		i++;
	return i;
}

/* A stream's text, its middle left out past STREAM_HEAD + STREAM_TAIL. */
static void put_stream(FILE *f, const json_t *js)
{
	const char *s = json_string_value(js);
	size_t n = json_string_length(js);
	if (n <= STREAM_HEAD + STREAM_TAIL) {
		put_lines(f, js);
		return;
	}
	size_t head = char_start(s, n, STREAM_HEAD), tail = char_start(s, n, n - STREAM_TAIL);
	char gap[32];
	size_text(tail - head, gap, sizeof(gap));
	fwrite(s, 1, head, f);
	fprintf(f, "\n[... %s not shown here: the whole output is in structuredContent ...]\n", gap);
	fwrite(s + tail, 1, n - tail, f);
	if (s[n - 1] != '\n')
		fputc('\n', f);
}

/* stdout, and stderr labelled when there is any (stdout too is labelled then, so the two read apart). */
static void streams(FILE *f, const json_t *st)
{
	bool out = slen(st, "stdout") > 0, err = slen(st, "stderr") > 0;
	if (out && err)
		fputs("stdout:\n", f);
	if (out)
		put_stream(f, json_object_get(st, "stdout"));
	if (err) {
		fputs("stderr:\n", f);
		put_stream(f, json_object_get(st, "stderr"));
	}
}

/* "Out[N]: value", a short traceback unless stderr shows it already, figures, changed files and
 * what happened to the interpreter's state. */
static void cell_parts(FILE *f, const json_t *st, const json_t *cell)
{
	const json_t *value = json_object_get(cell, "value"), *error = json_object_get(cell, "error");
	const char *vt = sv(value, "text");
	if (vt) {
		fprintf(f, "Out[%lld]: ", (long long)json_integer_value(json_object_get(cell, "execution_count")));
		put(f, json_object_get(value, "text"));
		fputc('\n', f);
	}
	const char *tb = sv(error, "traceback"), *err = sv(st, "stderr");
	if (json_is_object(error) && !(tb && *tb && err && strstr(err, tb))) {
		if (tb && *tb) {
			const char *t = tail(tb, strlen(tb), TRACEBACK_LINES, TAIL_CHARS);
			fprintf(f, "%s%s%s", t == tb ? "" : "...\n", t, t[0] && t[strlen(t) - 1] != '\n' ? "\n" : "");
		} else {
			fprintf(f, "%s: %s\n", sv(error, "ename") ? sv(error, "ename") : "error",
				sv(error, "evalue") ? sv(error, "evalue") : "");
		}
	}
	size_t i;
	const json_t *im;
	json_array_foreach(json_object_get(cell, "images"), i, im) {
		fprintf(f, "[figure %zu: PNG %lldx%lld, an image content block]\n", i + 1,
			(long long)json_integer_value(json_object_get(im, "width")),
			(long long)json_integer_value(json_object_get(im, "height")));
	}
	json_int_t dropped = json_integer_value(json_object_get(cell, "images_dropped"));
	if (dropped > 0)
		fprintf(f, "%lld figure(s) dropped: over the image limit\n", (long long)dropped);
	const json_t *files = json_object_get(cell, "files");
	if (json_array_size(files)) {
		fputs("files changed:", f);
		const json_t *one;
		json_array_foreach(files, i, one) {
			if (i == 10) {
				fprintf(f, " (and %zu more)", json_array_size(files) - 10);
				break;
			}
			fprintf(f, "%s %s", i ? "," : "", sv(one, "path") ? sv(one, "path") : "?");
		}
		fputc('\n', f);
	}
	const char *state = sv(cell, "state");
	const json_t *killed = json_object_get(cell, "kernel_killed");
	if (state && strcmp(state, "lost") == 0)
		fprintf(f, "the interpreter's state was lost%s%s\n", killed ? ": " : "",
			killed ? sv(killed, "detail") : "");
	else if (json_is_true(json_object_get(cell, "restarted")))
		fputs("the interpreter was restarted: earlier variables are gone\n", f);
	json_int_t procs = json_integer_value(json_object_get(cell, "processes_killed"));
	json_int_t timers = json_integer_value(json_object_get(cell, "timers_cancelled"));
	if (procs > 0)
		fprintf(f, "%lld process(es) the cell left running were killed\n", (long long)procs);
	if (timers > 0)
		fprintf(f, "%lld pending timer(s) cancelled\n", (long long)timers);
}

/* The one-line status of a program that did not simply exit 0 (a cell's error is its own status). */
static void status_line(FILE *f, const json_t *args, const json_t *st, bool cell_error)
{
	const char *status = sv(st, "status");
	const json_t *code = json_object_get(st, "exit_code"), *sig = json_object_get(st, "signal");
	const json_t *peak = json_object_get(st, "peak_memory_bytes");
	if (!status)
		return;
	if (strcmp(status, "timeout") == 0) {
		const json_t *t = json_object_get(args, "timeout");
		double s = t ? json_number_value(t)
			     : json_number_value(json_object_get(json_object_get(st, "timing"), "wall_s"));
		fprintf(f, "timed out after %.3g s\n", s);
	} else if (strcmp(status, "oom") == 0) {
		if (json_is_integer(peak))
			fprintf(f, "killed: out of memory (peak %.0f MiB)\n",
				(double)json_integer_value(peak) / (1024.0 * 1024.0));
		else
			fputs("killed: out of memory\n", f);
	} else if (strcmp(status, "setup-error") == 0) {
		fprintf(f, "the sandbox failed (not the program): %s\n", sv(st, "error") ? sv(st, "error") : "?");
	} else if (json_is_integer(sig)) {
		fprintf(f, "killed by signal %lld%s\n", (long long)json_integer_value(sig),
			strcmp(status, "output-limit") == 0 ? " (output limit)" : "");
	} else if (json_is_integer(code) && json_integer_value(code) != 0 && !cell_error) {
		fprintf(f, "exit %lld\n", (long long)json_integer_value(code));
	}
	static const char *const names[] = {"stdout", "stderr"};
	for (int k = 0; k < 2; k++) {
		if (!json_is_true(json_object_get(json_object_get(st, "truncated"), names[k])))
			continue;
		json_int_t all = json_integer_value(json_object_get(json_object_get(st, "output_bytes"), names[k]));
		size_t kept = slen(st, names[k]);
		char more[32];
		size_text(all > 0 && (uint64_t)all > kept ? (uint64_t)all - kept : 0, more, sizeof(more));
		fprintf(f, "%s truncated: %s more not shown\n", names[k], more);
	}
}

/* One process as a line: its pid, how it stands, its command. */
static void process_line(FILE *f, const json_t *p)
{
	const json_t *code = json_object_get(p, "exit_code"), *sig = json_object_get(p, "signal");
	fprintf(f, "pid %lld ", (long long)json_integer_value(json_object_get(p, "pid")));
	if (json_is_true(json_object_get(p, "running")))
		fputs("running", f);
	else if (json_is_integer(code))
		fprintf(f, "exited %lld", (long long)json_integer_value(code));
	else if (json_is_integer(sig))
		fprintf(f, "%s by signal %lld", or_q(sv(p, "status")), (long long)json_integer_value(sig));
	else
		fputs(or_q(sv(p, "status")), f);
	const json_t *pty = json_object_get(p, "pty");
	if (pty) /* a terminal session: its size, which the model resizes with code_process resize */
		fprintf(f, " on a %lldx%lld terminal", (long long)json_integer_value(json_object_get(pty, "cols")),
			(long long)json_integer_value(json_object_get(pty, "rows")));
	fprintf(f, ": %s", or_q(sv(p, "command")));
}

/* code_process: the list, or what one printed (as it printed it) and how it stands. */
static void brief_process(FILE *f, const json_t *st)
{
	const json_t *list = json_object_get(st, "processes");
	if (list) {
		if (!json_array_size(list))
			fputs("no background processes", f);
		size_t i;
		const json_t *p;
		json_array_foreach(list, i, p) {
			if (i)
				fputc('\n', f);
			process_line(f, p);
		}
		return;
	}
	const char *out = sv(st, "output");
	if (out && *out)
		fprintf(f, "%s%s", out, out[slen(st, "output") - 1] == '\n' ? "" : "\n");
	process_line(f, st);
	if (json_object_get(st, "next_offset"))
		fprintf(f, " (next offset %lld)", (long long)json_integer_value(json_object_get(st, "next_offset")));
}

static void brief_fork(FILE *f, const json_t *st)
{
	const json_t *list = json_object_get(st, "sandboxes");
	fprintf(f, "sandbox %s forked into %zu:", or_q(sv(st, "sandbox_id")), json_array_size(list));
	size_t i;
	const json_t *c;
	json_array_foreach(list, i, c) {
		fprintf(f, " %s", or_q(sv(c, "sandbox_id")));
	}
	fputs(" (pass one as sandbox_id)", f);
}

static void brief_snapshot(FILE *f, const json_t *st)
{
	fprintf(f, "snapshot %s of sandbox %s (%lld bytes): pass it as code_create_sandbox's snapshot",
		or_q(sv(st, "snapshot_id")), or_q(sv(st, "sandbox_id")),
		(long long)json_integer_value(json_object_get(st, "bytes")));
}

static void brief_snapshots(FILE *f, const json_t *st)
{
	const json_t *list = json_object_get(st, "snapshots");
	fprintf(f, "%zu snapshot%s", json_array_size(list), json_array_size(list) == 1 ? "" : "s");
	size_t i;
	const json_t *c;
	json_array_foreach(list, i, c) {
		const char *name = sv(c, "name");
		fprintf(f, "%s %s%s%s%s of %s, %s", i ? ";" : ":", or_q(sv(c, "snapshot_id")), name ? " (" : "",
			name ? name : "", name ? ")" : "", or_q(sv(c, "sandbox_id")), or_q(sv(c, "created_at")));
	}
}

static void brief_execute(FILE *f, const json_t *args, const json_t *st)
{
	const json_t *cell = json_object_get(st, "cell");
	const json_t *proc = json_object_get(st, "process");
	if (proc && strcmp(or_q(sv(st, "status")), "started") == 0) {
		fprintf(f,
			"started in the background as pid %lld%s (code_process reads its output, sends stdin, kills "
			"it)",
			(long long)json_integer_value(json_object_get(proc, "pid")),
			json_object_get(proc, "pty") ? " on a terminal" : "");
		return;
	}
	streams(f, st);
	if (cell)
		cell_parts(f, st, cell);
	status_line(f, args, st, json_is_object(json_object_get(cell, "error")));
	if (ftell(f) == 0)
		fputs("(no output)", f);
}

/* An install: what was installed, or why not with the end of what the package manager said. */
static void brief_install(FILE *f, const json_t *args, const json_t *st)
{
	const json_t *code = json_object_get(st, "exit_code");
	bool ok = json_is_integer(code) && json_integer_value(code) == 0 && strcmp(sv(st, "status"), "exited") == 0;
	fprintf(f, "%s with %s:", ok ? "installed" : "not installed", sv(args, "manager") ? sv(args, "manager") : "?");
	size_t i;
	const json_t *p, *pkgs = json_object_get(args, "packages");
	json_array_foreach(pkgs, i, p) {
		fprintf(f, " %s", json_string_value(p));
	}
	fputc('\n', f);
	if (ok)
		return;
	const char *which = slen(st, "stderr") ? "stderr" : "stdout";
	const char *s = sv(st, which);
	if (s && *s) {
		const char *t = tail(s, slen(st, which), TAIL_LINES, TAIL_CHARS);
		fprintf(f, "%s%s", t == s ? "" : "...\n", t);
		if (s[slen(st, which) - 1] != '\n')
			fputc('\n', f);
	}
	status_line(f, args, st, false);
}

static void brief_read(FILE *f, const json_t *st)
{
	const char *enc = sv(st, "encoding");
	if (enc && strcmp(enc, "base64") == 0) {
		fprintf(f, "%s: %lld bytes of binary content, base64:\n", or_q(sv(st, "path")),
			(long long)json_integer_value(json_object_get(st, "size")));
		put(f, json_object_get(st, "content"));
	} else if (!slen(st, "content")) {
		fprintf(f, "%s: an empty file", or_q(sv(st, "path")));
	} else {
		put(f, json_object_get(st, "content"));
	}
}

static void brief_list(FILE *f, const json_t *st)
{
	const json_t *entries = json_object_get(st, "entries");
	if (!json_array_size(entries))
		fprintf(f, "%s: an empty directory", or_q(sv(st, "path")));
	size_t i;
	const json_t *e;
	json_array_foreach(entries, i, e) {
		const char *type = sv(e, "type") ? sv(e, "type") : "other";
		fprintf(f, "%s", i ? "\n" : "");
		put(f, json_object_get(e, "name"));
		if (strcmp(type, "directory") == 0)
			fputc('/', f);
		else if (strcmp(type, "symlink") == 0)
			fputc('@', f);
		else if (strcmp(type, "file") == 0)
			fprintf(f, "  %lld bytes", (long long)json_integer_value(json_object_get(e, "size")));
		else
			fputs("  (not a regular file)", f);
	}
}

static void brief_context(FILE *f, const json_t *args, const json_t *st)
{
	const json_t *list = json_object_get(st, "contexts");
	if (list) {
		if (!json_array_size(list))
			fputs("no interpreter contexts yet", f);
		size_t i;
		const json_t *c;
		json_array_foreach(list, i, c) {
			fprintf(f, "%s%s (%s): %lld cells, %s", i ? "\n" : "", sv(c, "context_id"), sv(c, "language"),
				(long long)json_integer_value(json_object_get(c, "execution_count")),
				json_is_true(json_object_get(c, "busy"))      ? "busy"
				: json_is_true(json_object_get(c, "running")) ? "running"
									      : "not running");
		}
		return;
	}
	const char *action = sv(args, "action") ? sv(args, "action") : "";
	const char *done = strcmp(action, "create") == 0   ? "created"
			   : strcmp(action, "delete") == 0 ? "deleted"
							   : "restarted";
	fprintf(f, "context %s%s%s%s %s", sv(st, "context_id") ? sv(st, "context_id") : "?",
		sv(st, "language") ? " (" : "", sv(st, "language") ? sv(st, "language") : "",
		sv(st, "language") ? ")" : "", done);
}

char *tl_brief(enum tl_id id, const json_t *args, const json_t *st)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	switch (id) {
	case TL_EXECUTE:
		brief_execute(f, args, st);
		break;
	case TL_INSTALL_PACKAGE:
		brief_install(f, args, st);
		break;
	case TL_WRITE_FILE:
		fprintf(f, "wrote %lld bytes to %s", (long long)json_integer_value(json_object_get(st, "bytes")),
			or_q(sv(st, "path")));
		break;
	case TL_READ_FILE:
		brief_read(f, st);
		break;
	case TL_LIST_FILES:
		brief_list(f, st);
		break;
	case TL_CREATE_SANDBOX:
		fprintf(f, "sandbox %s created: pass it as sandbox_id", or_q(sv(st, "sandbox_id")));
		break;
	case TL_DESTROY_SANDBOX:
		fprintf(f, "sandbox %s destroyed", or_q(sv(st, "sandbox_id")));
		break;
	case TL_CONTEXT:
		brief_context(f, args, st);
		break;
	case TL_PROCESS:
		brief_process(f, st);
		break;
	case TL_SET_TIMEOUT:
		fprintf(f, "sandbox %s ends at %s", or_q(sv(st, "sandbox_id")), or_q(sv(st, "ends_at")));
		break;
	case TL_FORK:
		brief_fork(f, st);
		break;
	case TL_SNAPSHOT:
		brief_snapshot(f, st);
		break;
	case TL_LIST_SNAPSHOTS:
		brief_snapshots(f, st);
		break;
	case TL_DELETE_SNAPSHOT:
		fprintf(f, "snapshot %s deleted", or_q(sv(st, "snapshot_id")));
		break;
	case TL_PAUSE:
	case TL_RESUME:
		fprintf(f, "sandbox %s is %s", or_q(sv(st, "sandbox_id")), or_q(sv(st, "state")));
		break;
	case TL_FILE:	/* small objects: as they are */
	case TL_WATCH:	/* the events, as they came */
	case TL_UPLOAD: /* (not an MCP tool) */
		json_dumpf(st, f, JSON_COMPACT);
		break;
	case TL__COUNT:
		break;
	}
	/* Whatever the call, a model must read that its changes were not kept (tools.c). */
	if (sv(st, "not_kept"))
		fprintf(f, "\nwarning: %s", sv(st, "not_kept"));
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	/* One line or many, without the last newline (the text ends where the result does). */
	if (len && text[len - 1] == '\n')
		text[len - 1] = 0;
	return text;
}
