/* http_fake.h — mcp_fake.h's fake manager and gate made safe for the HTTP server's threads: every entry
 * point runs under one lock, which tests also take to drive running operations. */
#ifndef AL_TESTS_HTTP_FAKE_H
#define AL_TESTS_HTTP_FAKE_H

#include <pthread.h>

#include "mcp_fake.h"

/* Lock order: this lock, then the server's locks (the fake calls sinks while holding it); the
 * server never calls the manager or the gate while holding one of its own locks. */
static pthread_mutex_t hf_mu = PTHREAD_MUTEX_INITIALIZER;

#define HF_WRAP(name, req_type, inner)                                                                               \
	static FAKE_UNUSED int name(void *ctx, const req_type *req, const struct srv_sink *sink, struct srv_op **op, \
				    struct al_error *err)                                                            \
	{                                                                                                            \
		pthread_mutex_lock(&hf_mu);                                                                          \
		int r = inner(ctx, req, sink, op, err);                                                              \
		pthread_mutex_unlock(&hf_mu);                                                                        \
		return r;                                                                                            \
	}

HF_WRAP(hf_create, struct srv_create_req, fake_create)
HF_WRAP(hf_exec, struct srv_exec_req, fake_exec)
HF_WRAP(hf_install, struct srv_install_req, fake_install)
HF_WRAP(hf_write, struct srv_write_req, fake_write)
HF_WRAP(hf_read, struct srv_path_req, fake_read)
HF_WRAP(hf_list, struct srv_path_req, fake_list)
HF_WRAP(hf_destroy, struct srv_path_req, fake_destroy)

/* manager/api.h allows cancel at any time before release, even after the manager called on_done (the
 * client went away at that moment); mcp_fake.h aborts on that, so it is filtered here. */
static FAKE_UNUSED void hf_cancel(void *ctx, struct srv_op *op)
{
	pthread_mutex_lock(&hf_mu);
	if (op->done || op->cancelled)
		((struct fake_mgr *)ctx)->cancels++;
	else
		fake_cancel(ctx, op);
	pthread_mutex_unlock(&hf_mu);
}

static FAKE_UNUSED void hf_release(void *ctx, struct srv_op *op)
{
	pthread_mutex_lock(&hf_mu);
	fake_release(ctx, op);
	pthread_mutex_unlock(&hf_mu);
}

static FAKE_UNUSED struct srv_mgr_api hf_api(struct fake_mgr *m)
{
	return (struct srv_mgr_api){
		.ctx = m,
		.create_sandbox = hf_create,
		.exec = hf_exec,
		.install_package = hf_install,
		.write_file = hf_write,
		.read_file = hf_read,
		.list_files = hf_list,
		.destroy_sandbox = hf_destroy,
		.cancel = hf_cancel,
		.release = hf_release,
	};
}

static FAKE_UNUSED void hf_gate_check(void *ctx, const char *tool, const json_t *args, struct srv_gate_decision *out)
{
	pthread_mutex_lock(&hf_mu);
	fake_gate_check(ctx, tool, args, out);
	pthread_mutex_unlock(&hf_mu);
}

static FAKE_UNUSED void hf_gate_record(void *ctx, const char *tool, const json_t *args, enum srv_gate_outcome o)
{
	pthread_mutex_lock(&hf_mu);
	fake_gate_record(ctx, tool, args, o);
	pthread_mutex_unlock(&hf_mu);
}

static FAKE_UNUSED void hf_gate_finished(void *ctx, const struct srv_call_end *end)
{
	pthread_mutex_lock(&hf_mu);
	fake_gate_finished(ctx, end);
	pthread_mutex_unlock(&hf_mu);
}

static FAKE_UNUSED struct srv_gate hf_gate_api(struct fake_gate *g)
{
	return (struct srv_gate){
		.ctx = g, .check = hf_gate_check, .record = hf_gate_record, .finished = hf_gate_finished};
}

/* Reads an int of the fake under the lock. */
static FAKE_UNUSED int hf_get(const int *p)
{
	pthread_mutex_lock(&hf_mu);
	int v = *p;
	pthread_mutex_unlock(&hf_mu);
	return v;
}

#endif
