/* test_audit.c — unit tests for the audit log: records round-trip, secrets dropped, code digested, torn lines skipped and repaired, rotation, whole lines from threads and processes, start records and a full disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit.h"
#include "service/mgate.h"
#include "util/cleanup.h"
#include "util/fsutil.h"

struct tmp {
	char dir[64];
	char path[128];
};

static int setup_tmp(void **state)
{
	static struct tmp t;
	snprintf(t.dir, sizeof(t.dir), "/tmp/al-test-audit.XXXXXX");
	if (!mkdtemp(t.dir))
		return -1;
	snprintf(t.path, sizeof(t.path), "%s/audit.jsonl", t.dir);
	*state = &t;
	return 0;
}

static int teardown_tmp(void **state)
{
	struct tmp *t = *state;
	/* Only our own mkdtemp directory, never following a symlink nor crossing a mount. */
	return al_remove_tree(t->dir) == 0 ? 0 : -1;
}

static struct audit_log *open_log(const char *path, uint64_t rotate, unsigned keep, bool fsync)
{
	struct audit_options o = {.path = path, .fsync = fsync, .rotate_bytes = rotate, .keep = keep};
	struct audit_log *log = NULL;
	struct al_error err = {0};
	if (audit_open(&o, &log, &err) != 0)
		fail_msg("audit_open %s: %s", path, err.msg);
	return log;
}

static void write_rec(struct audit_log *log, const struct audit_record *rec)
{
	struct al_error err = {0};
	if (audit_write(log, rec, &err) != 0)
		fail_msg("audit_write: %s", err.msg);
}

/* Every record of a file into a JSON array (new reference); *st as audit_read counted. */
static int collect(json_t *rec, const char *line, size_t len, void *data)
{
	(void)line;
	(void)len;
	return json_array_append(data, rec) == 0 ? 0 : -ENOMEM;
}

static json_t *read_all(const char *path, struct audit_read_stats *st)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	json_t *all = json_array();
	struct al_error err = {0};
	assert_int_equal(audit_read(fd, collect, all, st, &err), 0);
	return all;
}

static void append_raw(const char *path, const char *bytes)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
	close(fd);
}

static const char *str_at(const json_t *rec, const char *a, const char *b)
{
	const json_t *v = json_object_get(rec, a);
	return json_string_value(b ? json_object_get(v, b) : v);
}

/* ---- records ------------------------------------------------------------------------------------ */

static void test_round_trip(void **state)
{
	struct tmp *t = *state;
	struct audit_log *log = open_log(t->path, AL_UNLIMITED, 1, true);
	struct stat st;
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, AUDIT_FILE_MODE);
	struct risk_decision d = {
		.level = CFG_RISK_HIGH, .rule = "code-execute", .timeout_ms = 60000, .needs_approval = true};
	json_t *params = json_pack("{s:s, s:s, s:i}", "language", "python", "code", "print(1)", "timeout", 5);
	json_t *res = json_pack("{s:i, s:i}", "cpu_ms", 12, "peak_memory", 1048576);
	json_t *proxy = json_pack("[{s:s, s:s}]", "host", "pypi.org", "decision", "allowed");
	struct audit_record rec = {
		.time = {.tv_sec = 1738324800, .tv_nsec = 123456789}, /* 2025-01-31T12:00:00.123Z */
		.transport = "http",
		.peer = "127.0.0.1:41234",
		.sandbox = "sb-1",
		.tool = "code_execute",
		.params = params,
		.risk = &d,
		.decision = AUDIT_APPROVED,
		.by = APPROVAL_BY_ELICITATION,
		.status = "ok",
		.duration_ms = 42,
		.resources = res,
		.proxy = proxy,
	};
	write_rec(log, &rec);
	/* A request refused before classification: no risk, no decision. */
	struct audit_record bad = {.transport = "stdio", .tool = "code_nope", .status = "error"};
	write_rec(log, &bad);
	audit_close(log);
	json_decref(params);
	json_decref(res);
	json_decref(proxy);

	struct audit_read_stats rs;
	json_t *all = read_all(t->path, &rs);
	assert_int_equal(rs.records, 2);
	assert_int_equal(rs.skipped, 0);
	assert_false(rs.torn_tail);
	const json_t *r0 = json_array_get(all, 0), *r1 = json_array_get(all, 1);
	assert_string_equal(str_at(r0, "time", NULL), "2025-01-31T12:00:00.123Z");
	assert_string_equal(str_at(r0, "client", "transport"), "http");
	assert_string_equal(str_at(r0, "client", "peer"), "127.0.0.1:41234");
	assert_string_equal(str_at(r0, "sandbox", NULL), "sb-1");
	assert_string_equal(str_at(r0, "tool", NULL), "code_execute");
	assert_string_equal(str_at(r0, "risk", "level"), "HIGH");
	assert_string_equal(str_at(r0, "risk", "rule"), "code-execute");
	assert_true(json_is_true(json_object_get(json_object_get(r0, "risk"), "needs_approval")));
	assert_string_equal(str_at(r0, "approval", "decision"), "approved");
	assert_string_equal(str_at(r0, "approval", "by"), "elicitation");
	assert_string_equal(str_at(r0, "result", "status"), "ok");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r0, "result"), "duration_ms")), 42);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r0, "resources"), "cpu_ms")), 12);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r0, "proxy"), 0), "host")),
			    "pypi.org");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r0, "params"), "timeout")), 5);
	assert_null(json_object_get(r0, "params_dropped"));
	/* The second: nulls where nothing was known; the current time. */
	assert_true(json_is_null(json_object_get(r1, "risk")));
	assert_true(json_is_null(json_object_get(r1, "sandbox")));
	assert_string_equal(str_at(r1, "approval", "decision"), "none");
	assert_true(json_is_null(json_object_get(json_object_get(r1, "approval"), "by")));
	const char *now = str_at(r1, "time", NULL);
	assert_int_equal(strlen(now), 24);
	assert_true(now[4] == '-' && now[10] == 'T' && now[19] == '.' && now[23] == 'Z');
	assert_true(strncmp(now, "20", 2) == 0);
	json_decref(all);
}

/* ---- the gate's records: who decided, over which transport, for which client ---------------------- */

/* One ended call through mgate's audit hook. */
static void end_call(struct srv_gate *g, const char *tool, const char *args, enum srv_gate_outcome o,
		     enum srv_gate_by by, const char *transport, const char *peer)
{
	json_t *a = json_loads(args, 0, NULL);
	assert_non_null(a);
	bool ran = o == SRV_GATE_ALLOWED || o == SRV_GATE_APPROVED;
	struct srv_call_end e = {.tool = tool,
				 .args = a,
				 .status = ran ? SRV_CALL_OK : SRV_CALL_DENIED,
				 .decided = true,
				 .approval = o,
				 .by = by,
				 .transport = transport,
				 .peer = peer};
	g->finished(g->ctx, &e);
	json_decref(a);
}

static void test_gate_records(void **state)
{
	struct tmp *t = *state;
	struct cfg *cfg = NULL;
	struct al_error err = {0};
	const char *y = "version: 1\napproval: {channels: [http, elicitation]}\n";
	assert_int_equal(cfg_load_buffer(y, strlen(y), "test", &cfg, &err), 0);
	assert_int_equal(cfg_rules_compile(cfg, &err), 0); /* as service_open does */
	struct audit_log *log = open_log(t->path, AL_UNLIMITED, 1, false);
	struct mgate mg = {.cfg = cfg, .log = log, .transport = "stdio", .peer = "pid 1 (init)"};
	struct srv_gate g;
	mgate_init(&mg, &g);
	const char *exec = "{\"language\":\"shell\",\"code\":\"true\"}";
	end_call(&g, "code_create_sandbox", "{}", SRV_GATE_ALLOWED, SRV_BY_NOBODY, NULL, NULL);
	end_call(&g, "code_execute", exec, SRV_GATE_APPROVED, SRV_BY_ELICITATION, NULL, NULL);
	end_call(&g, "code_execute", exec, SRV_GATE_APPROVED, SRV_BY_HTTP, "http", "127.0.0.1:5000");
	end_call(&g, "code_execute", exec, SRV_GATE_DECLINED, SRV_BY_TERMINAL, NULL, NULL);
	end_call(&g, "code_execute", exec, SRV_GATE_TIMED_OUT, SRV_BY_NOBODY, NULL, NULL);
	end_call(&g, "code_execute", exec, SRV_GATE_DENIED, SRV_BY_NOBODY, NULL, NULL);
	end_call(&g, "code_execute", exec, SRV_GATE_UNAVAILABLE, SRV_BY_NOBODY, NULL, NULL);
	end_call(&g, "code_execute", exec, SRV_GATE_ABANDONED, SRV_BY_NOBODY, NULL, NULL);
	end_call(&g, "code_execute", exec, SRV_GATE_ALLOWED, SRV_BY_NOBODY, NULL, NULL); /* auto_approve_up_to */
	audit_close(log);
	static const char *const want[][2] = {
		{"approved", "rule"},	   {"approved", "elicitation"}, {"approved", "http"},
		{"denied", "terminal"},	   {"denied", "timeout"},	{"denied", "auto"},
		{"denied", "unavailable"}, {"denied", "cancelled"},	{"approved", "auto"},
	};
	struct audit_read_stats rs;
	json_t *all = read_all(t->path, &rs);
	assert_int_equal(rs.records, AL_ARRAY_SIZE(want));
	for (size_t i = 0; i < AL_ARRAY_SIZE(want); i++) {
		const json_t *r = json_array_get(all, i);
		assert_string_equal(str_at(r, "approval", "decision"), want[i][0]);
		assert_string_equal(str_at(r, "approval", "by"), want[i][1]);
		/* The call's own transport and peer win over the gate's defaults. */
		assert_string_equal(str_at(r, "client", "transport"), i == 2 ? "http" : "stdio");
		assert_string_equal(str_at(r, "client", "peer"), i == 2 ? "127.0.0.1:5000" : "pid 1 (init)");
	}
	json_decref(all);
	/* The channels in the order the policy lists them. */
	struct mgate_channels ch;
	mgate_channels(&cfg->approval, CFG_CHAN_HTTP, &ch);
	assert_true(ch.elicitation && ch.other && ch.other_first);
	mgate_channels(&cfg->approval, CFG_CHAN_TERMINAL, &ch);
	assert_true(ch.elicitation && !ch.other && !ch.other_first);
	cfg_free(cfg);
}

/* "client_left" is in a record's result only when the client went away: every other record keeps
 * the shape its readers know. */
static void test_client_left(void **state)
{
	(void)state;
	struct audit_record rec = {.event = AUDIT_EVENT_END,
				   .call_id = "c-1",
				   .transport = "http",
				   .tool = "code_execute",
				   .status = "cancelled"};
	for (int left = 0; left < 2; left++) {
		rec.client_left = left;
		json_t *j = NULL;
		struct al_error err = {0};
		assert_int_equal(audit_record_json(&rec, &j, &err), 0);
		const json_t *res = json_object_get(j, "result");
		assert_string_equal(json_string_value(json_object_get(res, "status")), "cancelled");
		if (left)
			assert_true(json_is_true(json_object_get(res, "client_left")));
		else
			assert_null(json_object_get(res, "client_left"));
		assert_int_equal(json_object_size(res), 2 + (size_t)left);
		json_decref(j);
	}
}

/* ---- what is never written ------------------------------------------------------------------------ */

static void test_secrets_dropped(void **state)
{
	(void)state;
	json_t *params =
		json_loads("{\"language\": \"python\", \"api_key\": \"K1\", \"Authorization\": \"Bearer B2\","
			   " \"db-password\": \"P3\", \"clientSecret\": \"S4\", \"max_tokens\": 5,"
			   " \"env\": {\"PATH\": \"/bin\", \"GITHUB_TOKEN\": \"T5\", \"x\": [{\"apiKey\": \"A6\"}]},"
			   " \"path\": \"a.txt\"}",
			   0, NULL);
	assert_non_null(params);
	struct audit_record rec = {.transport = "stdio", .tool = "code_execute", .params = params, .status = "ok"};
	json_t *j = NULL;
	struct al_error err = {0};
	assert_int_equal(audit_record_json(&rec, &j, &err), 0);
	cleanup_free char *text = json_dumps(j, JSON_COMPACT);
	static const char *const secrets[] = {"K1", "B2", "P3", "S4", "T5", "A6"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(secrets); i++)
		if (strstr(text, secrets[i]))
			fail_msg("secret %s written: %s", secrets[i], text);
	const json_t *p = json_object_get(j, "params");
	assert_string_equal(str_at(p, "language", NULL), "python");
	assert_string_equal(str_at(p, "path", NULL), "a.txt");
	assert_string_equal(str_at(json_object_get(p, "env"), "PATH", NULL), "/bin");
	assert_null(json_object_get(p, "max_tokens")); /* errs on the side of dropping */
	cleanup_free char *dropped = json_dumps(json_object_get(j, "params_dropped"), JSON_COMPACT);
	assert_string_equal(dropped, "[\"api_key\",\"Authorization\",\"db-password\",\"clientSecret\",\"max_tokens\","
				     "\"env.GITHUB_TOKEN\",\"env.x.apiKey\"]");
	json_decref(j);
	json_decref(params);
}

static void sha256_hex(const char *s, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned int len = 0;
	assert_true(EVP_Digest(s, n, md, &len, EVP_sha256(), NULL) == 1);
	for (unsigned i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

static void test_code_digest(void **state)
{
	(void)state;
	/* 100 characters: escapes, a NUL, a bidi override, non-ASCII, then more than the excerpt keeps. */
	static const char code[] = "print('hi')\n\x1b[31m\tx\\y\r\0z\xe2\x80\xae\xc3\xa9"
				   "0123456789012345678901234567890123456789012345678901234567890123456789END";
	size_t n = sizeof(code) - 1;
	json_t *params = json_pack("{s:s#, s:s, s:i}", "code", code, (int)n, "content", "file body", "keep", 1);
	assert_non_null(params);
	json_t *reduced = audit_params(params, NULL);
	assert_non_null(reduced);
	const json_t *c = json_object_get(reduced, "code");
	char want[65];
	sha256_hex(code, n, want);
	assert_string_equal(str_at(c, "sha256", NULL), want);
	assert_int_equal(json_integer_value(json_object_get(c, "bytes")), (json_int_t)n);
	assert_true(json_is_true(json_object_get(c, "truncated")));
	const char *ex = str_at(c, "excerpt", NULL);
	static const char want_ex[] = "print('hi')\\n\\x1b[31m\\tx\\\\y\\r\\x00z\\u202e\xc3\xa9"
				      "0123";
	if (strncmp(ex, want_ex, strlen(want_ex)) != 0)
		fail_msg("excerpt '%s', want it to start with '%s'", ex, want_ex);
	for (const char *p = ex; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
	assert_null(strstr(ex, "END")); /* 80 characters, not the whole */
	/* The file body is digested the same way; other parameters stay. */
	const json_t *body = json_object_get(reduced, "content");
	sha256_hex("file body", 9, want);
	assert_string_equal(str_at(body, "sha256", NULL), want);
	assert_string_equal(str_at(body, "excerpt", NULL), "file body");
	assert_true(json_is_false(json_object_get(body, "truncated")));
	assert_int_equal(json_integer_value(json_object_get(reduced, "keep")), 1);
	json_decref(reduced);
	json_decref(params);
	/* Code that is not a string is digested as its JSON text, never kept. */
	params = json_pack("{s:[s]}", "code", "rm -rf /");
	reduced = audit_params(params, NULL);
	sha256_hex("[\"rm -rf /\"]", 12, want);
	assert_string_equal(str_at(json_object_get(reduced, "code"), "sha256", NULL), want);
	json_decref(reduced);
	json_decref(params);
}

/* ---- torn lines ------------------------------------------------------------------------------------ */

static void test_torn_line(void **state)
{
	struct tmp *t = *state;
	struct audit_log *log = open_log(t->path, AL_UNLIMITED, 1, false);
	struct audit_record rec = {.transport = "stdio", .tool = "code_execute", .status = "ok"};
	write_rec(log, &rec);
	write_rec(log, &rec);
	audit_close(log);
	/* A crash mid-write: the record's start, no newline. */
	append_raw(t->path, "{\"time\":\"2025-01-31T12:00:00.000Z\",\"client\":{\"tra");
	struct audit_read_stats st;
	json_t *all = read_all(t->path, &st);
	assert_int_equal(st.records, 2);
	assert_int_equal(json_array_size(all), 2);
	assert_int_equal(st.skipped, 1);
	assert_true(st.torn_tail);
	struct stat sb;
	assert_int_equal(stat(t->path, &sb), 0);
	assert_true(st.consumed < (uint64_t)sb.st_size);
	json_decref(all);

	/* The next writer ends the torn line first: its record stays whole, the torn one stays skipped. */
	log = open_log(t->path, AL_UNLIMITED, 1, false);
	rec.sandbox = "after";
	write_rec(log, &rec);
	audit_close(log);
	/* Lines that are not records: garbage, a JSON non-object, an empty line (ignored). */
	append_raw(t->path, "not json\n[1,2]\n\n");
	log = open_log(t->path, AL_UNLIMITED, 1, false);
	write_rec(log, &rec);
	audit_close(log);
	all = read_all(t->path, &st);
	/* Each reopen marked what it found: the torn tail, then the invalid "[1,2]". */
	assert_int_equal(st.records, 6);
	assert_int_equal(st.skipped, 3);
	assert_false(st.torn_tail);
	assert_int_equal(st.consumed, (uint64_t)(stat(t->path, &sb), sb.st_size));
	assert_string_equal(str_at(json_array_get(all, 2), "event", NULL), "repair");
	assert_string_equal(str_at(json_array_get(all, 2), "repair", "kind"), "unterminated");
	assert_string_equal(str_at(json_array_get(all, 3), "sandbox", NULL), "after");
	assert_string_equal(str_at(json_array_get(all, 4), "repair", "kind"), "invalid");
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(json_array_get(all, 4), "repair"), "bytes")), 5);
	assert_string_equal(str_at(json_array_get(all, 5), "sandbox", NULL), "after");
	json_decref(all);

	/* An overlong line is skipped without holding it all in memory. */
	cleanup_free char *huge = malloc(AUDIT_LINE_MAX + 2);
	memset(huge, 'x', AUDIT_LINE_MAX);
	strcpy(huge + AUDIT_LINE_MAX, "\n");
	append_raw(t->path, huge);
	append_raw(t->path, "{\"ok\":1}\n");
	all = read_all(t->path, &st);
	assert_int_equal(st.records, 7);
	assert_int_equal(st.skipped, 4);
	json_decref(all);
}

/* The callback can stop reading. */
static int stop_at_second(json_t *rec, const char *line, size_t len, void *data)
{
	return ++*(int *)data == 2 ? 7 : 0;
}

static void test_read_stop(void **state)
{
	struct tmp *t = *state;
	struct audit_log *log = open_log(t->path, AL_UNLIMITED, 1, false);
	struct audit_record rec = {.transport = "stdio", .tool = "t", .status = "ok"};
	for (int i = 0; i < 3; i++)
		write_rec(log, &rec);
	audit_close(log);
	cleanup_close int fd = open(t->path, O_RDONLY | O_CLOEXEC);
	int seen = 0;
	struct audit_read_stats st;
	assert_int_equal(audit_read(fd, stop_at_second, &seen, &st, NULL), 7);
	assert_int_equal(seen, 2);
}

/* ---- rotation ---------------------------------------------------------------------------------------- */

static json_t *numbered(int i)
{
	return json_pack("{s:i, s:s}", "n", i, "pad",
			 "................................................................");
}

/* The numbers of a file's records, in order, appended to seen (a JSON array). */
static size_t numbers_of(const char *path, json_t *seen)
{
	struct audit_read_stats st;
	json_t *all = read_all(path, &st);
	assert_int_equal(st.skipped, 0);
	for (size_t i = 0; i < json_array_size(all); i++)
		json_array_append_new(
			seen, json_deep_copy(json_object_get(json_object_get(json_array_get(all, i), "params"), "n")));
	json_decref(all);
	return st.records;
}

static void test_rotation(void **state)
{
	struct tmp *t = *state;
	const uint64_t max = 4096;
	struct audit_log *log = open_log(t->path, max, 3, true);
	for (int i = 0; i < 200; i++) {
		json_t *p = numbered(i);
		struct audit_record rec = {.transport = "stdio", .tool = "code_execute", .params = p, .status = "ok"};
		write_rec(log, &rec);
		json_decref(p);
	}
	audit_close(log);
	/* Oldest first: path.3, path.2, path.1, path; nothing beyond keep. */
	json_t *seen = json_array();
	for (int i = 3; i >= 0; i--) {
		char name[160];
		snprintf(name, sizeof(name), i ? "%s.%d" : "%s", t->path, i);
		struct stat st;
		assert_int_equal(stat(name, &st), 0);
		assert_true((uint64_t)st.st_size <= max);
		assert_int_equal(st.st_mode & 0777, AUDIT_FILE_MODE);
		assert_true(numbers_of(name, seen) > 0);
	}
	char gone[160];
	snprintf(gone, sizeof(gone), "%s.4", t->path);
	assert_int_equal(access(gone, F_OK), -1);
	/* The kept records are the newest ones, consecutive, ending with the last written. */
	size_t n = json_array_size(seen);
	assert_true(n > 4 && n < 200);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(json_integer_value(json_array_get(seen, i)), (json_int_t)(200 - n + i));
	json_decref(seen);
}

/* ---- concurrency: whole lines ------------------------------------------------------------------------ */

#define THREADS	   4
#define PER_WRITER 400

struct writer {
	struct audit_log *log;
	int id;
};

/* Records bigger than PIPE_BUF (4096): whole lines must not depend on the pipe guarantee. */
static void write_many(struct audit_log *log, int id)
{
	char *big = malloc(6000);
	memset(big, 'a' + id, 5999);
	big[5999] = 0;
	for (int i = 0; i < PER_WRITER; i++) {
		json_t *p = json_pack("{s:i, s:i, s:s}", "writer", id, "n", i, "data", big);
		struct audit_record rec = {.transport = "stdio", .tool = "code_execute", .params = p, .status = "ok"};
		struct al_error err = {0};
		if (audit_write(log, &rec, &err) != 0)
			abort();
		json_decref(p);
	}
	free(big);
}

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	write_many(w->log, w->id);
	return NULL;
}

/* Every line whole: each record's data is its writer's letter only, each (writer, n) once. */
static void check_whole(json_t *all, int writers)
{
	int count[THREADS] = {0};
	for (size_t i = 0; i < json_array_size(all); i++) {
		const json_t *p = json_object_get(json_array_get(all, i), "params");
		int w = (int)json_integer_value(json_object_get(p, "writer"));
		const char *data = json_string_value(json_object_get(p, "data"));
		assert_true(w >= 0 && w < writers);
		assert_int_equal(strspn(data, (char[]){(char)('a' + w), 0}), 5999);
		assert_int_equal(json_integer_value(json_object_get(p, "n")), count[w]);
		count[w]++;
	}
	for (int w = 0; w < writers; w++)
		assert_int_equal(count[w], PER_WRITER);
}

static void test_threads(void **state)
{
	struct tmp *t = *state;
	struct audit_log *log = open_log(t->path, AL_UNLIMITED, 1, false);
	pthread_t th[THREADS];
	struct writer w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct writer){log, i};
		assert_int_equal(pthread_create(&th[i], NULL, writer_thread, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	audit_close(log);
	struct audit_read_stats st;
	json_t *all = read_all(t->path, &st);
	assert_int_equal(st.records, THREADS * PER_WRITER);
	assert_int_equal(st.skipped, 0);
	check_whole(all, THREADS);
	json_decref(all);
}

/* Two processes, each with its own open file description (as two servers would have). */
static void run_processes(const char *path, uint64_t rotate, unsigned keep)
{
	pid_t pids[2];
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			struct audit_options o = {.path = path, .rotate_bytes = rotate, .keep = keep};
			struct audit_log *log = NULL;
			if (audit_open(&o, &log, NULL) != 0)
				_exit(1);
			write_many(log, i);
			audit_close(log);
			_exit(0);
		}
	}
	for (int i = 0; i < 2; i++) {
		int status = 0;
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

static void test_processes(void **state)
{
	struct tmp *t = *state;
	run_processes(t->path, AL_UNLIMITED, 1);
	struct audit_read_stats st;
	json_t *all = read_all(t->path, &st);
	assert_int_equal(st.records, 2 * PER_WRITER);
	assert_int_equal(st.skipped, 0);
	check_whole(all, 2);
	json_decref(all);
}

/* Both processes rotating the same log: nothing lost, nothing torn, no file over the limit by
 * more than one record. */
static void test_processes_rotating(void **state)
{
	struct tmp *t = *state;
	const uint64_t max = 256 << 10;
	const unsigned keep = 100; /* enough that nothing written is rotated away */
	run_processes(t->path, max, keep);
	json_t *all = json_array();
	for (int i = (int)keep; i >= 0; i--) {
		char name[160];
		snprintf(name, sizeof(name), i ? "%s.%d" : "%s", t->path, i);
		if (access(name, F_OK) != 0)
			continue;
		struct audit_read_stats st;
		json_t *part = read_all(name, &st);
		assert_int_equal(st.skipped, 0);
		json_array_extend(all, part);
		json_decref(part);
	}
	assert_int_equal(json_array_size(all), 2 * PER_WRITER);
	check_whole(all, 2);
	json_decref(all);
}

/* ---- the file itself ---------------------------------------------------------------------------------- */

static void test_open_refusals(void **state)
{
	struct tmp *t = *state;
	struct audit_options o = {.path = "relative.jsonl", .keep = 1, .rotate_bytes = AL_UNLIMITED};
	struct audit_log *log = NULL;
	struct al_error err = {0};
	assert_int_equal(audit_open(&o, &log, &err), -EINVAL);
	/* A symlink planted at the path is not followed. */
	char target[160];
	snprintf(target, sizeof(target), "%s/elsewhere", t->dir);
	assert_int_equal(symlink(target, t->path), 0);
	o.path = t->path;
	assert_int_equal(audit_open(&o, &log, &err), -ELOOP);
	assert_int_equal(access(target, F_OK), -1);
	unlink(t->path);
	/* Nor a directory or FIFO. */
	assert_int_equal(mkfifo(t->path, 0600), 0);
	assert_true(audit_open(&o, &log, &err) < 0);
	unlink(t->path);
	o.keep = 0;
	assert_int_equal(audit_open(&o, &log, &err), -EINVAL);
	assert_null(log);
}

static void test_default_path(void **state)
{
	(void)state;
	char *p = NULL;
	assert_int_equal(audit_default_path(true, &p), 0);
	assert_string_equal(p, "/var/log/airlock/audit.jsonl");
	free(p);
	setenv("XDG_STATE_HOME", "/srv/state", 1);
	assert_int_equal(audit_default_path(false, &p), 0);
	assert_string_equal(p, "/srv/state/airlock/audit.jsonl");
	free(p);
	setenv("XDG_STATE_HOME", "relative", 1);
	setenv("HOME", "/home/u", 1);
	assert_int_equal(audit_default_path(false, &p), 0);
	assert_string_equal(p, "/home/u/.local/state/airlock/audit.jsonl");
	free(p);
	unsetenv("XDG_STATE_HOME");
	/* From the configuration: its path wins over the fallback. */
	struct cfg_audit a = {.path = NULL, .fsync = true, .rotate_bytes = 1 << 20, .keep = 4};
	struct audit_options o;
	audit_options_from_cfg(&a, "/fallback", &o);
	assert_string_equal(o.path, "/fallback");
	assert_true(o.fsync);
	assert_int_equal(o.keep, 4);
}

/* ---- failing closed: start records, a full disk, the end of a file, records that must fit -------- */

static void test_tail_check(void **state)
{
	(void)state;
	static const struct {
		const char *buf;
		bool whole;
		enum audit_tail_kind kind;
		size_t offset, bytes;
	} cases[] = {
		{"", true, AUDIT_TAIL_OK, 0, 0},
		{"{\"a\":1}\n", true, AUDIT_TAIL_OK, 0, 0},
		{"{\"a\":1}\n\n\n", true, AUDIT_TAIL_OK, 0, 0},
		{"{\"a\":1}\n{\"b\"", true, AUDIT_TAIL_UNTERMINATED, 8, 4},
		{"{\"a\":1}\n{\"b\":2}", true, AUDIT_TAIL_UNTERMINATED, 8, 7}, /* valid JSON, but no newline */
		{"{\"a\":1}\nxx\n\n", true, AUDIT_TAIL_INVALID, 8, 2},
		{"{\"a\":1}\n[1]\n", true, AUDIT_TAIL_INVALID, 8, 3},
		{"{\"a\":1}\n", false, AUDIT_TAIL_INVALID, 0, 7}, /* fills the window: longer than a record */
		{"x\n{\"a\":1}\n", false, AUDIT_TAIL_OK, 0, 0},
		{"{\"a\"", false, AUDIT_TAIL_UNTERMINATED, 0, 4},
	};
	for (size_t i = 0; i < AL_ARRAY_SIZE(cases); i++) {
		struct audit_tail t;
		audit_tail_check(cases[i].buf, strlen(cases[i].buf), cases[i].whole, &t);
		if (t.kind != cases[i].kind ||
		    (t.kind != AUDIT_TAIL_OK && (t.offset != cases[i].offset || t.bytes != cases[i].bytes)))
			fail_msg("case %zu: kind %d offset %zu bytes %zu", i, t.kind, t.offset, t.bytes);
	}
}

/* One admit through mgate with RLIMIT_FSIZE at room bytes past the log's end: the disk is full. */
static int admit_full(const char *path, const struct srv_gate *g, struct srv_call_start *st, off_t room,
		      struct al_error *err)
{
	struct stat sb;
	struct rlimit old, lim;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = (struct rlimit){.rlim_cur = (rlim_t)(sb.st_size + room), .rlim_max = old.rlim_max};
	void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int r = g->admit(g->ctx, st, err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, was);
	struct stat after;
	assert_int_equal(stat(path, &after), 0);
	/* Nothing of the refused record stays: not even the bytes a short write put there. */
	assert_int_equal(after.st_size, sb.st_size);
	return r;
}

static void test_start_records(void **state)
{
	struct tmp *t = *state;
	struct cfg *cfg = NULL;
	struct al_error err = {0};
	assert_int_equal(cfg_load_buffer("version: 1\n", 11, "test", &cfg, &err), 0);
	struct audit_log *log = open_log(t->path, AL_UNLIMITED, 1, false);
	struct mgate mg = {.cfg = cfg, .log = log, .transport = "stdio"};
	struct srv_gate g;
	mgate_init(&mg, &g);
	json_t *args = json_pack("{s:s,s:s}", "language", "shell", "code", "touch /marker");
	struct srv_call_start st = {.tool = "code_execute",
				    .args = args,
				    .approval = SRV_GATE_APPROVED,
				    .by = SRV_BY_HTTP,
				    .transport = "http",
				    .peer = "127.0.0.1:1",
				    .principal = "uid 1000",
				    .approver = "alice"};
	assert_int_equal(g.admit(g.ctx, &st, &err), 0);
	char first[SRV_CALL_ID_MAX];
	memcpy(first, st.call_id, sizeof(first));
	assert_true(first[0]);
	struct srv_call_end e = {.tool = "code_execute",
				 .args = args,
				 .status = SRV_CALL_OK,
				 .decided = true,
				 .approval = SRV_GATE_APPROVED,
				 .by = SRV_BY_HTTP,
				 .transport = "http",
				 .peer = "127.0.0.1:1",
				 .principal = "uid 1000",
				 .call_id = first,
				 .on_behalf_of = "token:alice"};
	g.finished(g.ctx, &e);

	/* A short write (100 bytes of room), then no room at all: refused, counted, degraded. */
	assert_int_equal(admit_full(t->path, &g, &st, 100, &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "audit log"));
	assert_int_equal(st.call_id[0], 0);
	assert_int_equal(admit_full(t->path, &g, &st, 0, &err), -EFBIG);
	struct srv_gate_health h = {0};
	g.health(g.ctx, &h);
	assert_true(h.degraded);
	assert_int_equal(h.audit_failures, 2);
	assert_non_null(strstr(h.reason, "audit log"));
	/* Room again: the next call is admitted, the log is healthy, the failures stay counted. */
	assert_int_equal(g.admit(g.ctx, &st, &err), 0);
	assert_string_not_equal(st.call_id, first);
	memset(&h, 0, sizeof(h));
	g.health(g.ctx, &h);
	assert_false(h.degraded);
	assert_int_equal(h.audit_failures, 2);
	audit_close(log);
	json_decref(args);
	cfg_free(cfg);

	struct audit_read_stats rs;
	json_t *all = read_all(t->path, &rs);
	assert_int_equal(rs.records, 3);
	assert_int_equal(rs.skipped, 0);
	static const char *const events[] = {"start", "end", "start"};
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(str_at(json_array_get(all, i), "event", NULL), events[i]);
	const json_t *r0 = json_array_get(all, 0);
	assert_string_equal(str_at(r0, "call_id", NULL), first);
	assert_string_equal(str_at(json_array_get(all, 1), "call_id", NULL), first);
	assert_string_equal(str_at(r0, "client", "principal"), "uid 1000");
	/* on_behalf_of only where an approver acted for another principal (here: the end record). */
	assert_null(json_object_get(json_object_get(r0, "client"), "on_behalf_of"));
	assert_string_equal(str_at(json_array_get(all, 1), "client", "on_behalf_of"), "token:alice");
	assert_string_equal(str_at(r0, "client", "transport"), "http");
	assert_string_equal(str_at(r0, "approval", "approver"), "alice");
	assert_string_equal(str_at(r0, "approval", "by"), "http");
	assert_string_equal(str_at(r0, "result", "status"), "started");
	assert_non_null(json_object_get(json_object_get(json_object_get(r0, "params"), "code"), "sha256"));
	json_decref(all);
}

static void test_shrink(void **state)
{
	struct tmp *t = *state;
	size_t n = (size_t)2 << 20;
	cleanup_free char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, 'a', n);
	big[n] = 0;
	json_t *p = json_pack("{s:s}", "blob", big);
	struct audit_log *log = open_log(t->path, AL_UNLIMITED, 1, false);
	struct audit_record rec = {.transport = "http", .tool = "code_write_file", .params = p, .status = "ok"};
	write_rec(log, &rec);
	audit_close(log);
	json_decref(p);
	struct audit_read_stats rs;
	json_t *all = read_all(t->path, &rs);
	assert_int_equal(rs.records, 1);
	assert_int_equal(rs.skipped, 0);
	const json_t *r = json_array_get(all, 0);
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "truncated"), 0)), "params");
	const json_t *d = json_object_get(r, "params");
	assert_int_equal(json_integer_value(json_object_get(d, "bytes")), n + 11); /* {"blob":"..."} */
	assert_int_equal(strlen(json_string_value(json_object_get(d, "sha256"))), 64);
	json_decref(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_gate_records, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_client_left),
		cmocka_unit_test(test_secrets_dropped),
		cmocka_unit_test(test_code_digest),
		cmocka_unit_test_setup_teardown(test_torn_line, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_read_stop, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_rotation, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_threads, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_processes, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_processes_rotating, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_open_refusals, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_default_path),
		cmocka_unit_test(test_tail_check),
		cmocka_unit_test_setup_teardown(test_start_records, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_shrink, setup_tmp, teardown_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
