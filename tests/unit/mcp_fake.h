/* mcp_fake.h — a fake sandbox manager and a fake approval gate for the MCP session's tests and fuzzer.
 * Included by tests/unit/test_mcp.c and tests/fuzz/fuzz_jsonrpc.c (header-only: each test is its own
 * program). */
#ifndef AL_TESTS_MCP_FAKE_H
#define AL_TESTS_MCP_FAKE_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager/api.h"
#include "service/gate.h"
#include "util/error.h"

#define FAKE_UNUSED	   __attribute__((unused))
#define FAKE_MAX_SANDBOXES 16

enum fake_kind {
	FK_CREATE,
	FK_EXEC,
	FK_INSTALL,
	FK_WRITE,
	FK_READ,
	FK_LIST,
	FK_DESTROY,
	FK__COUNT
};

struct fake_mgr;

struct srv_op {
	struct fake_mgr *m;
	struct srv_op *next;
	enum fake_kind kind;
	struct srv_sink sink;
	bool done, released, cancelled;
	char sandbox[64];
};

struct fake_mgr {
	bool async;	      /* exec and install stay running until fake_finish */
	bool cancel_finishes; /* cancel() reports on_done at once (as a real kill would, soon) */
	int calls[FK__COUNT]; /* operations started, per kind */
	int total_calls;
	int cancels, releases, live_ops;
	struct srv_op *ops; /* async operations not yet done */
	int exit_code;	    /* what exec's program "returns" */
	const char *stdout_text;
	int fail_errno;	       /* > 0: every start fails with it */
	const void *file_data; /* what read_file returns */
	size_t file_len;
	char sandboxes[FAKE_MAX_SANDBOXES][64];
	int n_sandboxes, next_sandbox;
	/* The last requests, copied. */
	char last_language[32], last_code[256], last_sandbox[64], last_path[256], last_manager[8];
	char last_profile[64];
	uint64_t last_timeout_ms;
	bool last_network;
	size_t last_n_domains, last_n_packages, last_len;
	unsigned char last_data[256];
	struct srv_limits last_limits;
};

static FAKE_UNUSED bool fake_has_sandbox(const struct fake_mgr *m, const char *id)
{
	for (int i = 0; id && i < m->n_sandboxes; i++)
		if (strcmp(m->sandboxes[i], id) == 0)
			return true;
	return false;
}

static FAKE_UNUSED void fake_add_sandbox(struct fake_mgr *m, const char *id)
{
	if (m->n_sandboxes < FAKE_MAX_SANDBOXES)
		snprintf(m->sandboxes[m->n_sandboxes++], sizeof(m->sandboxes[0]), "%s", id);
}

static FAKE_UNUSED void fake_copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

/* The checks a real manager makes and reports as request failures. */
static FAKE_UNUSED int fake_check(struct fake_mgr *m, const char *sandbox, bool need_sandbox, const char *path,
				  struct al_error *err)
{
	if (m->fail_errno)
		return al_err(err, m->fail_errno, "fake failure");
	if ((need_sandbox || sandbox) && !fake_has_sandbox(m, sandbox))
		return al_err(err, ENOENT, "no sandbox \"%s\"", sandbox ? sandbox : "");
	if (path && (path[0] == '/' || strstr(path, "..")))
		return al_err(err, EXDEV, "path \"%s\" escapes the workspace", path);
	return 0;
}

static FAKE_UNUSED struct al_verdict *fake_verdict(int exit_code, const char *out, int signal)
{
	struct al_verdict *v = calloc(1, sizeof(*v));
	if (!v)
		abort();
	v->status = signal ? AL_STATUS_SIGNALED : AL_STATUS_EXITED;
	v->exit_code = exit_code;
	v->signal = signal;
	v->wall_s = 0.25;
	v->user_s = 0.125;
	v->out.data = strdup(out ? out : "");
	v->out.kept = strlen(v->out.data);
	v->out.bytes = v->out.kept;
	v->err.data = strdup("");
	v->backend = "native";
	return v;
}

static FAKE_UNUSED void fake_free_op(struct fake_mgr *m, struct srv_op *op)
{
	for (struct srv_op **p = &m->ops; *p; p = &(*p)->next)
		if (*p == op) {
			*p = op->next;
			break;
		}
	m->live_ops--;
	free(op);
}

/* Once on_done has been called the session may release (and so free) op from its own thread: read
 * everything needed first, never touch op afterwards. */
static FAKE_UNUSED void fake_done(struct srv_op *op, struct srv_result *r)
{
	struct srv_sink sink = op->sink;
	op->done = true;
	if (op->released)
		fake_free_op(op->m, op);
	sink.on_done(sink.cookie, r);
}

/* Either finishes at once (synchronous manager, *op NULL) or keeps the operation for the test. */
static FAKE_UNUSED int fake_begin(struct fake_mgr *m, enum fake_kind k, const char *sandbox,
				  const struct srv_sink *sink, struct srv_op **op, struct srv_result *r)
{
	m->calls[k]++;
	m->total_calls++;
	bool keep = m->async && (k == FK_EXEC || k == FK_INSTALL);
	if (!keep) {
		*op = NULL;
		sink->on_done(sink->cookie, r);
		return 0;
	}
	srv_result_free(r);
	struct srv_op *o = calloc(1, sizeof(*o));
	if (!o)
		abort();
	*o = (struct srv_op){.m = m, .next = m->ops, .kind = k, .sink = *sink};
	fake_copy(o->sandbox, sizeof(o->sandbox), sandbox);
	m->ops = o;
	m->live_ops++;
	*op = o;
	return 0;
}

static FAKE_UNUSED struct srv_result *fake_result(void)
{
	struct srv_result *r = srv_result_new();
	if (!r)
		abort();
	return r;
}

static FAKE_UNUSED int fake_exec(void *ctx, const struct srv_exec_req *req, const struct srv_sink *sink,
				 struct srv_op **op, struct al_error *err)
{
	struct fake_mgr *m = ctx;
	int rc = fake_check(m, req->sandbox_id, false, NULL, err);
	if (rc < 0)
		return rc;
	fake_copy(m->last_language, sizeof(m->last_language), req->language);
	snprintf(m->last_code, sizeof(m->last_code), "%.*s", (int)req->code_len, req->code);
	fake_copy(m->last_sandbox, sizeof(m->last_sandbox), req->sandbox_id);
	m->last_timeout_ms = req->timeout_ms;
	m->last_network = req->network_enabled;
	m->last_n_domains = req->n_allowed_domains;
	for (size_t i = 0; i < req->n_allowed_domains; i++)
		if (!req->allowed_domains[i])
			abort();
	struct srv_result *r = fake_result();
	r->verdict = fake_verdict(m->exit_code, m->stdout_text ? m->stdout_text : "hello\n", 0);
	if (req->sandbox_id)
		r->sandbox_id = strdup(req->sandbox_id);
	return fake_begin(m, FK_EXEC, req->sandbox_id, sink, op, r);
}

static FAKE_UNUSED int fake_install(void *ctx, const struct srv_install_req *req, const struct srv_sink *sink,
				    struct srv_op **op, struct al_error *err)
{
	struct fake_mgr *m = ctx;
	int rc = fake_check(m, req->sandbox_id, true, NULL, err);
	if (rc < 0)
		return rc;
	fake_copy(m->last_manager, sizeof(m->last_manager), req->manager);
	m->last_n_packages = req->n_packages;
	struct srv_result *r = fake_result();
	r->verdict = fake_verdict(0, "installed\n", 0);
	return fake_begin(m, FK_INSTALL, req->sandbox_id, sink, op, r);
}

/* What the three file operations share: the sandbox must exist and the path stay in the workspace
 * (else nothing is recorded), the path is recorded for the test, and fill records the rest and
 * writes the operation's own result. */
typedef void fake_fill_fn(struct fake_mgr *m, const void *req, struct srv_result *r);

static FAKE_UNUSED int fake_file_op(struct fake_mgr *m, enum fake_kind k, const char *sandbox, const char *path,
				    fake_fill_fn *fill, const void *req, const struct srv_sink *sink,
				    struct srv_op **op, struct al_error *err)
{
	int rc = fake_check(m, sandbox, true, path, err);
	if (rc < 0)
		return rc;
	fake_copy(m->last_path, sizeof(m->last_path), path);
	struct srv_result *r = fake_result();
	fill(m, req, r);
	return fake_begin(m, k, sandbox, sink, op, r);
}

static FAKE_UNUSED void fake_fill_write(struct fake_mgr *m, const void *req, struct srv_result *r)
{
	const struct srv_write_req *w = req;
	m->last_len = w->len;
	memcpy(m->last_data, w->data, w->len < sizeof(m->last_data) ? w->len : sizeof(m->last_data));
	r->bytes = w->len;
}

static FAKE_UNUSED int fake_write(void *ctx, const struct srv_write_req *req, const struct srv_sink *sink,
				  struct srv_op **op, struct al_error *err)
{
	return fake_file_op(ctx, FK_WRITE, req->sandbox_id, req->path, fake_fill_write, req, sink, op, err);
}

/* read_file answers file_data, or a line of text when the test set none. */
static FAKE_UNUSED void fake_fill_read(struct fake_mgr *m, const void *req, struct srv_result *r)
{
	(void)req;
	const char *d = m->file_data ? m->file_data : "file content\n";
	r->len = m->file_data ? m->file_len : strlen(d);
	r->data = malloc(r->len + 1);
	if (!r->data)
		abort();
	memcpy(r->data, d, r->len);
}

static FAKE_UNUSED int fake_read(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink,
				 struct srv_op **op, struct al_error *err)
{
	return fake_file_op(ctx, FK_READ, req->sandbox_id, req->path, fake_fill_read, req, sink, op, err);
}

/* list_files answers one file and one directory, whatever the path. */
static FAKE_UNUSED void fake_fill_list(struct fake_mgr *m, const void *req, struct srv_result *r)
{
	(void)m;
	(void)req;
	r->entries = calloc(2, sizeof(*r->entries));
	if (!r->entries)
		abort();
	r->n_entries = 2;
	r->entries[0] = (struct srv_file_entry){.name = strdup("main.py"), .type = SRV_FILE_REGULAR, .size = 42};
	r->entries[1] = (struct srv_file_entry){.name = strdup("data"), .type = SRV_FILE_DIRECTORY};
}

static FAKE_UNUSED int fake_list(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink,
				 struct srv_op **op, struct al_error *err)
{
	return fake_file_op(ctx, FK_LIST, req->sandbox_id, req->path, fake_fill_list, req, sink, op, err);
}

static FAKE_UNUSED int fake_create(void *ctx, const struct srv_create_req *req, const struct srv_sink *sink,
				   struct srv_op **op, struct al_error *err)
{
	struct fake_mgr *m = ctx;
	int rc = fake_check(m, NULL, false, NULL, err);
	if (rc < 0)
		return rc;
	if (req->profile && strcmp(req->profile, "no-such-profile") == 0)
		return al_err(err, EINVAL, "unknown profile \"%s\"", req->profile);
	fake_copy(m->last_profile, sizeof(m->last_profile), req->profile);
	fake_copy(m->last_language, sizeof(m->last_language), req->language);
	m->last_network = req->network_enabled;
	m->last_n_domains = req->n_allowed_domains;
	m->last_limits = req->limits;
	char id[32];
	snprintf(id, sizeof(id), "sb-%d", ++m->next_sandbox);
	fake_add_sandbox(m, id);
	struct srv_result *r = fake_result();
	r->sandbox_id = strdup(id);
	return fake_begin(m, FK_CREATE, NULL, sink, op, r);
}

static FAKE_UNUSED int fake_destroy(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink,
				    struct srv_op **op, struct al_error *err)
{
	struct fake_mgr *m = ctx;
	int rc = fake_check(m, req->sandbox_id, true, NULL, err);
	if (rc < 0)
		return rc;
	for (int i = 0; i < m->n_sandboxes; i++)
		if (strcmp(m->sandboxes[i], req->sandbox_id) == 0)
			memmove(m->sandboxes[i], m->sandboxes[i + 1],
				sizeof(m->sandboxes[0]) * (size_t)(--m->n_sandboxes - i));
	struct srv_result *r = fake_result();
	r->sandbox_id = strdup(req->sandbox_id);
	return fake_begin(m, FK_DESTROY, req->sandbox_id, sink, op, r);
}

static FAKE_UNUSED void fake_cancel(void *ctx, struct srv_op *op)
{
	struct fake_mgr *m = ctx;
	m->cancels++;
	if (op->cancelled || op->done)
		abort(); /* the session cancels once, and never after it processed on_done */
	op->cancelled = true;
	if (m->cancel_finishes) {
		struct srv_result *r = fake_result();
		r->verdict = fake_verdict(0, "", 9);
		fake_done(op, r);
	}
}

static FAKE_UNUSED void fake_release(void *ctx, struct srv_op *op)
{
	struct fake_mgr *m = ctx;
	m->releases++;
	if (op->released)
		abort(); /* exactly once */
	op->released = true;
	if (op->done)
		fake_free_op(m, op);
}

/* Test side: stream a chunk from a running operation. */
static FAKE_UNUSED void fake_output(struct srv_op *op, enum srv_stream s, const char *data, size_t len)
{
	op->sink.on_output(op->sink.cookie, s, data, len);
}

/* Test side: end a running operation with a clean exit of exit_code and stdout text. */
static FAKE_UNUSED void fake_finish(struct srv_op *op, int exit_code, const char *out)
{
	struct srv_result *r = fake_result();
	r->verdict = fake_verdict(exit_code, out, 0);
	fake_done(op, r);
}

/* The operation started n-th from the end (0: the newest). */
static FAKE_UNUSED struct srv_op *fake_op(struct fake_mgr *m, int n)
{
	struct srv_op *o = m->ops;
	while (o && n-- > 0)
		o = o->next;
	return o;
}

static FAKE_UNUSED struct srv_mgr_api fake_api(struct fake_mgr *m)
{
	return (struct srv_mgr_api){
		.ctx = m,
		.create_sandbox = fake_create,
		.exec = fake_exec,
		.install_package = fake_install,
		.write_file = fake_write,
		.read_file = fake_read,
		.list_files = fake_list,
		.destroy_sandbox = fake_destroy,
		.cancel = fake_cancel,
		.release = fake_release,
	};
}

/* ---- the gate ----------------------------------------------------------------------------- */

struct fake_gate {
	enum srv_gate_verdict verdict;
	const char *reason;
	uint32_t timeout_ms;
	struct srv_mark mark; /* ASK: one mark in the code, when end > 0 */
	int checks;
	int outcomes[SRV_GATE_ABANDONED + 1];
	int finished[SRV_CALL_INVALID + 1]; /* calls ended, per status */
	char last_tool[64];
	bool last_had_result;
	uint64_t last_duration_ms;
	enum srv_gate_by last_by; /* of the last call that ended */
	char last_peer[96];	  /* "" when none */
	char last_transport[16];  /* "" when none */
};

static FAKE_UNUSED void fake_gate_check(void *ctx, const char *tool, const json_t *args, struct srv_gate_decision *out)
{
	struct fake_gate *g = ctx;
	g->checks++;
	fake_copy(g->last_tool, sizeof(g->last_tool), tool);
	if (!json_is_object(args))
		abort(); /* the gate only ever sees validated arguments */
	out->verdict = g->verdict;
	fake_copy(out->reason, sizeof(out->reason), g->reason);
	out->timeout_ms = g->timeout_ms;
	if (g->mark.end) {
		out->marks[0] = g->mark;
		out->nmarks = 1;
	}
}

static FAKE_UNUSED void fake_gate_record(void *ctx, const char *tool, const json_t *args, enum srv_gate_outcome outcome)
{
	struct fake_gate *g = ctx;
	g->outcomes[outcome]++;
}

static FAKE_UNUSED void fake_gate_finished(void *ctx, const struct srv_call_end *end)
{
	struct fake_gate *g = ctx;
	if ((unsigned)end->status > SRV_CALL_INVALID || !end->tool)
		abort();
	g->finished[end->status]++;
	g->last_had_result = end->result != NULL;
	g->last_duration_ms = end->duration_ms;
	g->last_by = end->by;
	fake_copy(g->last_peer, sizeof(g->last_peer), end->peer ? end->peer : "");
	fake_copy(g->last_transport, sizeof(g->last_transport), end->transport ? end->transport : "");
}

static FAKE_UNUSED struct srv_gate fake_gate_api(struct fake_gate *g)
{
	return (struct srv_gate){
		.ctx = g, .check = fake_gate_check, .record = fake_gate_record, .finished = fake_gate_finished};
}

/* ---- an approver (gate.h): remembers the question; the test answers through done ------------ */

struct fake_approver {
	bool fail; /* ask refuses (-ENOMEM) */
	int asks, cancels;
	enum srv_gate_outcome cancel_why;
	char last_tool[64], last_reason[128], last_principal[96];
	uint32_t last_timeout_ms;
	uint64_t next_id, id;
	srv_approver_done done; /* of the question still open, else NULL */
	void *cookie;
};

static FAKE_UNUSED int fake_approver_ask(void *ctx, const struct srv_question *q, srv_approver_done done, void *cookie,
					 uint64_t *id)
{
	struct fake_approver *a = ctx;
	if (a->fail)
		return -ENOMEM;
	if (a->done || !json_is_object(q->args))
		abort(); /* the tests ask one question at a time, with validated arguments */
	a->asks++;
	fake_copy(a->last_tool, sizeof(a->last_tool), q->tool);
	fake_copy(a->last_reason, sizeof(a->last_reason), q->reason);
	fake_copy(a->last_principal, sizeof(a->last_principal), q->principal ? q->principal : "");
	a->last_timeout_ms = q->timeout_ms;
	a->done = done;
	a->cookie = cookie;
	*id = a->id = ++a->next_id;
	return 0;
}

/* Answers the open question (as a reviewer would, from any thread). */
static FAKE_UNUSED void fake_approver_answer(struct fake_approver *a, enum srv_gate_outcome o, enum srv_gate_by by)
{
	srv_approver_done done = a->done;
	a->done = NULL;
	if (done)
		done(a->cookie, o, by, by == SRV_BY_NOBODY ? NULL : "fake-reviewer");
}

static FAKE_UNUSED void fake_approver_cancel(void *ctx, uint64_t id, enum srv_gate_outcome why)
{
	struct fake_approver *a = ctx;
	a->cancels++;
	a->cancel_why = why;
	if (id == a->id)
		fake_approver_answer(a, why, SRV_BY_NOBODY); /* like apq_cancel: done, on this thread */
}

static FAKE_UNUSED struct srv_approver fake_approver_api(struct fake_approver *a)
{
	return (struct srv_approver){.ctx = a, .ask = fake_approver_ask, .cancel = fake_approver_cancel};
}

#endif
