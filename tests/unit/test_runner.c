/* test_runner.c — unit tests for the one call runner (src/service/runner.c): what reaches the manager, the
 * approval, the refusal, and exactly one audit record per call, with a scripted gate, port and manager. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "service/runner.h"

/* ---- a scripted world: the manager, the gate, the port, the observer -------------------------- */

struct srv_op {
	int unused;
};

struct world {
	/* manager */
	int starts, cancels, releases;
	int start_rc; /* what the exec start returns */
	char last_code[64];
	struct srv_op op;
	/* gate */
	enum srv_gate_verdict verdict;
	const char *reason;
	int checks, records;
	enum srv_gate_outcome last_record;
	int ends;
	struct srv_call_end last_end;
	char last_peer[32];
	/* port */
	int asks, sinks, unsinks;
	int ask_rc;
	char last_ask_reason[SRV_GATE_REASON_MAX];
	/* observer */
	int observed_decisions, observed_ends;
	/* the order of events, one letter each: c(heck) r(ecord) a(sk) s(ink) S(tart) e(nd) */
	char trace[32];
};

static void trace(struct world *w, char c)
{
	size_t n = strlen(w->trace);
	if (n + 1 < sizeof(w->trace))
		w->trace[n] = c;
}

static int m_exec(void *ctx, const struct srv_exec_req *req, const struct srv_sink *sink, struct srv_op **op,
		  struct al_error *err)
{
	struct world *w = ctx;
	w->starts++;
	trace(w, 'S');
	snprintf(w->last_code, sizeof(w->last_code), "%.*s", (int)req->code_len, req->code);
	if (w->start_rc < 0) {
		snprintf(err->msg, sizeof(err->msg), "no sandbox \"sb-x\"");
		return w->start_rc;
	}
	*op = &w->op;
	return 0;
}

static char destroy_owner[64]; /* the owner the manager was asked to destroy for */

static int m_destroy(void *ctx, const struct srv_path_req *req, const struct srv_sink *sink, struct srv_op **op,
		     struct al_error *err)
{
	struct world *w = ctx;
	w->starts++;
	snprintf(destroy_owner, sizeof(destroy_owner), "%s", req->owner ? req->owner : "");
	*op = &w->op;
	return 0;
}

static void m_cancel(void *ctx, struct srv_op *op)
{
	((struct world *)ctx)->cancels++;
}

static void m_release(void *ctx, struct srv_op *op)
{
	((struct world *)ctx)->releases++;
}

static void g_check(void *ctx, const char *tool, const json_t *args, struct srv_gate_decision *out)
{
	struct world *w = ctx;
	w->checks++;
	trace(w, 'c');
	out->verdict = w->verdict;
	snprintf(out->reason, sizeof(out->reason), "%s", w->reason ? w->reason : "");
	out->timeout_ms = 1234;
}

static void g_record(void *ctx, const char *tool, const json_t *args, enum srv_gate_outcome outcome)
{
	struct world *w = ctx;
	w->records++;
	w->last_record = outcome;
	trace(w, 'r');
}

static void g_finished(void *ctx, const struct srv_call_end *end)
{
	struct world *w = ctx;
	w->ends++;
	w->last_end = *end;
	snprintf(w->last_peer, sizeof(w->last_peer), "%s", end->peer ? end->peer : "");
	w->last_end.peer = w->last_peer;
	trace(w, 'e');
}

static int p_ask(void *owner, const struct srv_gate_decision *d, char *why, size_t cap)
{
	struct world *w = owner;
	w->asks++;
	trace(w, 'a');
	snprintf(w->last_ask_reason, sizeof(w->last_ask_reason), "%s", d->reason);
	if (w->ask_rc < 0)
		snprintf(why, cap, "denied: nobody here");
	return w->ask_rc;
}

static void s_output(void *cookie, enum srv_stream stream, const char *data, size_t len)
{
}

static void s_done(void *cookie, struct srv_result *result)
{
	srv_result_free(result);
}

static int p_sink(void *owner, struct srv_sink *out)
{
	struct world *w = owner;
	w->sinks++;
	trace(w, 's');
	*out = (struct srv_sink){.on_output = s_output, .on_done = s_done, .cookie = w};
	return 0;
}

static void p_unsink(void *owner)
{
	((struct world *)owner)->unsinks++;
}

static void o_decided(void *ctx, enum srv_gate_outcome o)
{
	((struct world *)ctx)->observed_decisions++;
}

static void o_ended(void *ctx, const struct srv_call_end *end)
{
	((struct world *)ctx)->observed_ends++;
}

static const struct svc_port port = {.ask = p_ask, .sink = p_sink, .unsink = p_unsink};

struct fixture {
	struct world w;
	struct tl_catalog cat;
	struct srv_mgr_api mgr;
	struct srv_gate gate;
	struct svc_observer obs;
	struct svc_runner rn;
	json_t *args;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	char msg[SCH_MSG_MAX];
	assert_int_equal(tl_catalog_load(&f->cat, msg), 0);
	/* Only exec is ever started here; the runner calls no other entry for code_execute. */
	f->mgr = (struct srv_mgr_api){
		.ctx = &f->w, .exec = m_exec, .destroy_sandbox = m_destroy, .cancel = m_cancel, .release = m_release};
	f->gate = (struct srv_gate){.ctx = &f->w, .check = g_check, .record = g_record, .finished = g_finished};
	f->obs = (struct svc_observer){.ctx = &f->w, .decided = o_decided, .ended = o_ended};
	f->rn = (struct svc_runner){
		.mgr = &f->mgr, .gate = &f->gate, .observer = &f->obs, .cat = &f->cat, .transport = "test"};
	f->args = json_pack("{s:s,s:s}", "language", "shell", "code", "echo one-path");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	json_decref(f->args);
	tl_catalog_clear(&f->cat);
	free(f);
	return 0;
}

/* A call of code_execute, validated and begun. */
static struct svc_call *begun(struct fixture *f, enum svc_step expect, struct svc_refusal *ref)
{
	struct svc_principal who = {.kind = SVC_PRINCIPAL_PEER, .name = "tester", .uid = 1000};
	struct svc_call *c = svc_call_new(&f->rn, TL_EXECUTE, f->args, &who, "peer-1");
	assert_non_null(c);
	assert_int_equal(svc_call_validate(c, ref), 0);
	assert_int_equal(svc_call_begin(c, &port, &f->w, ref), expect);
	return c;
}

/* ---- the tests ------------------------------------------------------------------------------------ */

static void test_allowed_runs_once(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_ALLOW;
	struct svc_call *c = begun(f, SVC_RUNNING, &ref);
	assert_string_equal(f->w.last_code, "echo one-path");
	assert_int_equal(f->w.last_record, SRV_GATE_ALLOWED);
	assert_string_equal(f->w.trace, "crsS"); /* classified, decided, then (before run) started */
	assert_int_equal(f->w.ends, 0);
	svc_call_end(c, SRV_CALL_OK, NULL, NULL);
	svc_call_end(c, SRV_CALL_REQUEST_FAILED, NULL, "late"); /* only the first end counts */
	svc_call_free(c);
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.observed_ends, 1);
	assert_int_equal(f->w.observed_decisions, 1);
	assert_int_equal(f->w.last_end.status, SRV_CALL_OK);
	assert_true(f->w.last_end.decided);
	assert_int_equal(f->w.last_end.approval, SRV_GATE_ALLOWED);
	assert_string_equal(f->w.last_end.transport, "test");
	assert_string_equal(f->w.last_peer, "peer-1");
	assert_int_equal(f->w.releases, 1);
	assert_int_equal(f->w.cancels, 0);
}

static void test_denied_never_starts(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_DENY;
	f->w.reason = "risk CRITICAL (rule x)";
	struct svc_call *c = begun(f, SVC_REFUSED, &ref);
	svc_call_free(c);
	assert_int_equal(f->w.starts + f->w.sinks + f->w.asks, 0);
	assert_int_equal(ref.status, SRV_CALL_DENIED);
	assert_int_equal(ref.approval, SRV_GATE_DENIED);
	assert_string_equal(ref.text, "denied: risk CRITICAL (rule x)");
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.last_end.status, SRV_CALL_DENIED);
	assert_int_equal(f->w.releases, 0);
}

/* A verdict the runner does not know is a denial: fail closed. */
static void test_unknown_verdict_denies(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = (enum srv_gate_verdict)77;
	struct svc_call *c = begun(f, SVC_REFUSED, &ref);
	svc_call_free(c);
	assert_int_equal(f->w.starts, 0);
	assert_int_equal(ref.status, SRV_CALL_DENIED);
	assert_int_equal(f->w.ends, 1);
}

static void test_asked_then_approved(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_ASK;
	f->w.reason = "risk HIGH (rule r)";
	struct svc_call *c = begun(f, SVC_ASKING, &ref);
	assert_int_equal(f->w.starts, 0); /* nothing runs while a human is asked */
	assert_string_equal(f->w.last_ask_reason, "risk HIGH (rule r)");
	assert_string_equal(svc_call_reason(c), "risk HIGH (rule r)");
	assert_int_equal(f->w.records, 0);
	assert_int_equal(svc_call_answer(c, SRV_GATE_APPROVED, SRV_BY_HTTP, NULL, &ref), SVC_RUNNING);
	assert_string_equal(f->w.trace, "carsS");
	svc_call_end(c, SRV_CALL_PROGRAM_FAILED, NULL, NULL);
	svc_call_free(c);
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.last_end.approval, SRV_GATE_APPROVED);
	assert_int_equal(f->w.last_end.by, SRV_BY_HTTP);
	assert_int_equal(f->w.last_end.status, SRV_CALL_PROGRAM_FAILED);
}

static void test_asked_then_declined(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_ASK;
	struct svc_call *c = begun(f, SVC_ASKING, &ref);
	assert_int_equal(svc_call_answer(c, SRV_GATE_DECLINED, SRV_BY_ELICITATION, NULL, &ref), SVC_REFUSED);
	assert_int_equal(ref.status, SRV_CALL_DENIED);
	assert_int_equal(ref.approval, SRV_GATE_DECLINED);
	assert_string_equal(ref.text, svc_denial_text(SRV_GATE_DECLINED));
	svc_call_free(c);
	assert_int_equal(f->w.starts, 0);
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.last_end.by, SRV_BY_ELICITATION);
	/* Silence: the transport's words, the same record shape. */
	f->w.ends = 0;
	c = begun(f, SVC_ASKING, &ref);
	assert_int_equal(svc_call_answer(c, SRV_GATE_TIMED_OUT, SRV_BY_NOBODY, "denied: too slow", &ref), SVC_REFUSED);
	assert_string_equal(ref.text, "denied: too slow");
	svc_call_free(c);
	assert_int_equal(f->w.starts, 0);
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.last_end.approval, SRV_GATE_TIMED_OUT);
}

static void test_nobody_to_ask(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_ASK;
	f->w.ask_rc = -EPERM;
	struct svc_call *c = begun(f, SVC_REFUSED, &ref);
	svc_call_free(c);
	assert_int_equal(f->w.starts, 0);
	assert_int_equal(ref.approval, SRV_GATE_UNAVAILABLE);
	assert_string_equal(ref.text, "denied: nobody here");
	assert_int_equal(f->w.ends, 1);
}

/* Abandoned while asking (the client went away): CANCELLED, never started. */
static void test_abandoned(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_ASK;
	struct svc_call *c = begun(f, SVC_ASKING, &ref);
	svc_call_abandon(c);
	svc_call_free(c);
	assert_int_equal(f->w.starts, 0);
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.last_end.status, SRV_CALL_CANCELLED);
	assert_int_equal(f->w.last_end.approval, SRV_GATE_ABANDONED);
}

static void test_invalid_never_classified(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	json_t *bad = json_pack("{s:s,s:s}", "language", "cobol", "code", "x");
	struct svc_call *c = svc_call_new(&f->rn, TL_EXECUTE, bad, NULL, NULL);
	json_decref(bad); /* the call holds its own reference */
	assert_int_equal(svc_call_validate(c, &ref), -EINVAL);
	assert_int_equal(ref.status, SRV_CALL_INVALID);
	assert_non_null(strstr(ref.text, "language"));
	assert_string_equal(svc_call_principal(c)->name, "anonymous");
	svc_call_free(c);
	assert_int_equal(f->w.checks + f->w.starts, 0);
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.last_end.status, SRV_CALL_INVALID);
	assert_false(f->w.last_end.decided);
}

static void test_start_refused(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_ALLOW;
	f->w.start_rc = -ENOENT;
	struct svc_call *c = begun(f, SVC_REFUSED, &ref);
	svc_call_free(c);
	assert_int_equal(ref.status, SRV_CALL_REQUEST_FAILED);
	assert_int_equal(ref.error, -ENOENT);
	assert_string_equal(ref.text, "no sandbox \"sb-x\"");
	assert_int_equal(f->w.unsinks, 1); /* the sink will never be called: the transport drops it */
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.releases, 0);
}

/* A running call the transport drops: cancelled once, released, one CANCELLED record; a call
 * dropped before it began leaves none. */
static void test_dropped(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->w.verdict = SRV_GATE_ALLOW;
	struct svc_call *c = begun(f, SVC_RUNNING, &ref);
	svc_call_cancel(c);
	svc_call_cancel(c);
	svc_call_free(c);
	assert_int_equal(f->w.cancels, 1);
	assert_int_equal(f->w.releases, 1);
	assert_int_equal(f->w.ends, 1);
	assert_int_equal(f->w.last_end.status, SRV_CALL_CANCELLED);
	c = svc_call_new(&f->rn, TL_EXECUTE, f->args, NULL, NULL);
	assert_int_equal(svc_call_validate(c, &ref), 0);
	svc_call_free(c);
	assert_int_equal(f->w.ends, 1);
}

/* Without a gate (no risk rules configured) every valid call runs, and the observer still sees it. */
static void test_no_gate(void **state)
{
	struct fixture *f = *state;
	struct svc_refusal ref;
	f->rn.gate = NULL;
	struct svc_call *c = begun(f, SVC_RUNNING, &ref);
	svc_call_end(c, SRV_CALL_OK, NULL, NULL);
	svc_call_free(c);
	assert_int_equal(f->w.starts, 1);
	assert_int_equal(f->w.ends, 0);
	assert_int_equal(f->w.observed_decisions, 1);
	assert_int_equal(f->w.observed_ends, 1);
}

/* An approver's destroy on another principal's sandbox: the manager is asked as the owner, the
 * record names the approver as principal and the owner beside it; nothing else may act for. */
static void test_act_for(void **state)
{
	struct fixture *f = *state;
	struct svc_principal who = {.kind = SVC_PRINCIPAL_TOKEN, .name = "token:reviewer", .uid = (uid_t)-1};
	struct svc_refusal ref;
	struct svc_call *x = svc_call_new(&f->rn, TL_EXECUTE, f->args, &who, "peer-1");
	assert_int_equal(svc_call_act_for(x, "token:alice"), -EINVAL); /* run nothing in another's sandbox */
	svc_call_free(x);
	/* A snapshot of another's is deleted for its owner (it ends what is kept), never taken. */
	json_t *sa = json_pack("{s:s}", "snapshot_id", "snap-1");
	x = svc_call_new(&f->rn, TL_DELETE_SNAPSHOT, sa, &who, "peer-1");
	assert_int_equal(svc_call_act_for(x, "token:alice"), 0);
	svc_call_free(x);
	x = svc_call_new(&f->rn, TL_SNAPSHOT, sa, &who, "peer-1");
	assert_int_equal(svc_call_act_for(x, "token:alice"), -EINVAL);
	svc_call_free(x);
	json_decref(sa);
	json_t *args = json_pack("{s:s}", "sandbox_id", "sb-1");
	struct svc_call *c = svc_call_new(&f->rn, TL_DESTROY_SANDBOX, args, &who, "peer-1");
	json_decref(args);
	assert_int_equal(svc_call_act_for(c, ""), -EINVAL);
	assert_int_equal(svc_call_act_for(c, "token:alice"), 0);
	assert_int_equal(svc_call_validate(c, &ref), 0);
	assert_int_equal(svc_call_begin(c, &port, &f->w, &ref), SVC_RUNNING);
	assert_string_equal(destroy_owner, "token:alice");
	assert_int_equal(svc_call_act_for(c, "token:bob"), -EINVAL); /* not once it began */
	svc_call_end(c, SRV_CALL_OK, NULL, NULL);
	assert_int_equal(f->w.ends, 1);
	assert_string_equal(f->w.last_end.principal, "token:reviewer");
	assert_string_equal(f->w.last_end.on_behalf_of, "token:alice");
	svc_call_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_allowed_runs_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denied_never_starts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_verdict_denies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_asked_then_approved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_asked_then_declined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nobody_to_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abandoned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_never_classified, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_gate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_act_for, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
