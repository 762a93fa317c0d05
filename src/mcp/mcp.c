/* mcp.c — the MCP session's lifecycle (initialize, version negotiation) and message dispatch. */
#include "mcp/mcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/session.h"
#include "util/cleanup.h"
#include "util/error.h"

static const char *const protocols[] = {MCP_PROTOCOL_LATEST, MCP_PROTOCOL_PREVIOUS};

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
					  "error", "critical", "alert",	 "emergency"};

static const char default_instructions[] =
	"airlock runs untrusted code in isolated Linux sandboxes. Use code_execute to run a program "
	"(python, javascript, shell, ruby, php or perl); it has no network unless network_enabled is "
	"true, and then only to allowed_domains. This session has its own sandbox: every call without "
	"a sandbox_id (code_write_file, code_execute, code_read_file, code_list_files, "
	"code_install_package) uses it, so files and installed packages persist from call to call until "
	"the session ends. For more sandboxes, or other profiles and limits, create one with "
	"code_create_sandbox and pass its sandbox_id. Paths are relative to the sandbox's workspace. "
	"Some calls need a human's approval and may be denied.";

const char *mcp_log_level_name(enum mcp_log_level level)
{
	return (unsigned)level < AL_ARRAY_SIZE(level_names) ? level_names[level] : "error";
}

static uint64_t monotonic_ms(void *ctx)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t ses_now(const struct mcp_session *s)
{
	return s->o.now_ms(s->o.now_ctx);
}

/* The runner's clock is the session's (which tests inject). */
static uint64_t session_us(void *ctx)
{
	return ses_now(ctx) * 1000;
}

/* ---- replies ------------------------------------------------------------------------------ */

static int append(json_t *out, json_t *msg)
{
	if (!msg)
		return -ENOMEM;
	return json_array_append_new(out, msg) < 0 ? -ENOMEM : 0;
}

int ses_reply(json_t *out, json_t *id, json_t *steal_result)
{
	return append(out, jr_result(id, steal_result));
}

int ses_reply_error(json_t *out, json_t *id, int code, const char *fmt, ...)
{
	char msg[JR_ERROR_MSG_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return append(out, jr_error(id, code, msg, NULL));
}

int mcp_session_log(struct mcp_session *s, enum mcp_log_level level, const char *msg, json_t *out)
{
	if (s->o.log)
		s->o.log(s->o.log_ctx, level, msg);
	/* notifications/message only once initialize is answered, and at the client's level. */
	if (!out || s->state == SESSION_NEW || level < s->level)
		return 0;
	return append(out, jr_notification("notifications/message",
					   json_pack("{s:s,s:s,s:s}", "level", mcp_log_level_name(level), "logger",
						     "airlock", "data", msg)));
}

int ses_logf(struct mcp_session *s, json_t *out, enum mcp_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mcp_session_log(s, level, msg, out);
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static const char *negotiate(const char *asked)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(protocols); i++)
		if (strcmp(asked, protocols[i]) == 0)
			return protocols[i];
	/* The spec: answer with a version we support, our latest; the client may then disconnect. */
	return MCP_PROTOCOL_LATEST;
}

/* Form-mode elicitation: declared as {} (form implied, for older clients) or with "form". A
 * client that only declared "url" cannot show our yes/no form. */
static bool elicits_forms(const json_t *caps)
{
	const json_t *e = json_object_get(caps, "elicitation");
	if (!json_is_object(e))
		return false;
	return json_object_size(e) == 0 || json_object_get(e, "form") != NULL;
}

static json_t *initialize_result(const struct mcp_session *s)
{
	return json_pack("{s:s,s:{s:{s:b},s:{}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", s->protocol, "capabilities",
			 "tools", "listChanged", 0, "logging", "serverInfo", "name", "airlock", "title",
			 "airlock sandbox", "version", s->o.server_version ? s->o.server_version : "0", "instructions",
			 s->o.instructions ? s->o.instructions : default_instructions);
}

static int h_initialize(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	if (s->state != SESSION_NEW)
		return ses_reply_error(out, m->id, JR_INVALID_REQUEST, "the session is already initialized");
	const json_t *version = json_object_get(m->params, "protocolVersion");
	const json_t *caps = json_object_get(m->params, "capabilities");
	const json_t *info = json_object_get(m->params, "clientInfo");
	if (!json_is_string(version))
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS,
				       "initialize: \"protocolVersion\" must be a string");
	if ((caps && !json_is_object(caps)) || (info && !json_is_object(info)))
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS,
				       "initialize: \"capabilities\" and \"clientInfo\" must be objects");
	s->protocol = negotiate(json_string_value(version));
	s->client_elicits = elicits_forms(caps);
	int r = ses_reply(out, m->id, initialize_result(s));
	if (r < 0) {
		s->protocol = NULL;
		return r;
	}
	s->state = SESSION_ANSWERED;
	const char *client = json_string_value(json_object_get(info, "name"));
	mcp_session_log(s, MCP_LOG_INFO, "client initialized", NULL);
	return ses_logf(s, NULL, MCP_LOG_DEBUG, "client %.64s asked for %.32s, got %s", client ? client : "?",
			json_string_value(version), s->protocol);
}

static int h_ping(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	return ses_reply(out, m->id, json_object());
}

static int h_tools_list(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	/* One page holds every tool, so no cursor we could have handed out exists. */
	if (json_object_get(m->params, "cursor"))
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS, "tools/list: unknown cursor");
	return ses_reply(out, m->id, json_pack("{s:O}", "tools", s->cat.tools));
}

static int h_set_level(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	const char *level = json_string_value(json_object_get(m->params, "level"));
	for (size_t i = 0; level && i < AL_ARRAY_SIZE(level_names); i++) {
		if (strcmp(level, level_names[i]) == 0) {
			s->level = (enum mcp_log_level)i;
			return ses_reply(out, m->id, json_object());
		}
	}
	return ses_reply_error(out, m->id, JR_INVALID_PARAMS,
			       "logging/setLevel: \"level\" must be one of debug, info, notice, warning, error, "
			       "critical, alert, emergency");
}

/* ---- dispatch ----------------------------------------------------------------------------- */

struct method {
	const char *name;
	bool before_init; /* allowed before initialize has been answered */
	int (*fn)(struct mcp_session *s, const struct jr_message *m, json_t *out);
};

static const struct method methods[] = {
	{"initialize", true, h_initialize},	  {"ping", true, h_ping},
	{"tools/list", false, h_tools_list},	  {"tools/call", false, call_tools_call},
	{"logging/setLevel", false, h_set_level},
};

static int on_request(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	const struct method *fn = NULL;
	for (size_t i = 0; i < AL_ARRAY_SIZE(methods); i++)
		if (strcmp(m->method, methods[i].name) == 0)
			fn = &methods[i];
	if (s->state == SESSION_NEW && !(fn && fn->before_init))
		return ses_reply_error(out, m->id, JR_INVALID_REQUEST,
				       "the session is not initialized: send \"initialize\" first");
	if (!fn)
		return ses_reply_error(out, m->id, JR_METHOD_NOT_FOUND, "method not found: %.80s", m->method);
	/* Every MCP request's params is an object (the schema's RequestParams). */
	if (m->params && !json_is_object(m->params))
		return ses_reply_error(out, m->id, JR_INVALID_PARAMS, "%s: \"params\" must be an object", fn->name);
	return fn->fn(s, m, out);
}

/* Notifications are never answered, whatever is wrong with them. */
static int on_notification(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	if (s->state == SESSION_NEW)
		return 0;
	if (strcmp(m->method, "notifications/initialized") == 0) {
		s->state = SESSION_READY;
		return 0;
	}
	if (strcmp(m->method, "notifications/cancelled") == 0)
		return call_cancelled(s, m->params, out);
	return ses_logf(s, NULL, MCP_LOG_DEBUG, "ignored notification %.80s", m->method);
}

static int on_failure(struct mcp_session *s, struct jr_failure *f, json_t *out)
{
	ses_logf(s, NULL, MCP_LOG_DEBUG, "refused a message: %s", f->message);
	return append(out, jr_failure_response(f));
}

int mcp_session_feed(struct mcp_session *s, const char *buf, size_t len, json_t *out)
{
	struct jr_message m;
	struct jr_failure f;
	int r = jr_parse(buf, len, s->o.max_message, &m, &f);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		r = on_failure(s, &f, out);
		jr_failure_clear(&f);
		return r;
	}
	r = mcp_session_feed_message(s, &m, out);
	jr_message_clear(&m);
	return r;
}

int mcp_session_feed_message(struct mcp_session *s, const struct jr_message *m, json_t *out)
{
	int r = 0;
	switch (m->kind) {
	case JR_REQUEST:
		r = on_request(s, m, out);
		break;
	case JR_NOTIFICATION:
		r = on_notification(s, m, out);
		break;
	case JR_RESULT:
	case JR_ERROR:
		r = call_answer(s, m, out);
		break;
	}
	/* A manager that finished synchronously has queued its result: answer in the same turn. */
	int p = call_poll(s, out);
	return r < 0 ? r : p;
}

int mcp_session_poll(struct mcp_session *s, json_t *out)
{
	return call_poll(s, out);
}

int mcp_session_fd(const struct mcp_session *s)
{
	return evq_fd(s->q);
}

int mcp_session_timeout(const struct mcp_session *s)
{
	uint64_t now = ses_now(s), next = UINT64_MAX;
	for (const struct call *c = s->calls; c; c = c->next)
		if (c->state == CALL_APPROVAL && c->deadline < next)
			next = c->deadline;
	if (next == UINT64_MAX)
		return -1;
	if (next <= now)
		return 0;
	return next - now > 0x7fffffff ? 0x7fffffff : (int)(next - now);
}

void mcp_session_cancel_all(struct mcp_session *s)
{
	call_cancel_all(s);
}

int mcp_session_client_left(struct mcp_session *s, const json_t *req_id, json_t *out)
{
	return call_client_left(s, req_id, out);
}

size_t mcp_session_inflight(const struct mcp_session *s)
{
	return s->n_calls;
}

void mcp_session_set_peer(struct mcp_session *s, const char *peer)
{
	snprintf(s->peer, sizeof(s->peer), "%s", peer ? peer : "");
}

void mcp_session_set_principal(struct mcp_session *s, const char *principal)
{
	snprintf(s->principal, sizeof(s->principal), "%s", principal ? principal : "");
}

const char *mcp_session_protocol(const struct mcp_session *s)
{
	return s->protocol;
}

/* ---- construction ------------------------------------------------------------------------- */

static int check_opts(const struct mcp_opts *o, struct al_error *err)
{
	if (!o || o->size < offsetof(struct mcp_opts, log_ctx) + sizeof(o->log_ctx) || o->size > sizeof(*o))
		return al_err(err, EINVAL, "mcp: bad options size");
	const struct srv_mgr_api *m = o->mgr;
	if (!m || !m->create_sandbox || !m->exec || !m->install_package || !m->write_file || !m->read_file ||
	    !m->list_files || !m->destroy_sandbox)
		return al_err(err, EINVAL, "mcp: the manager table is incomplete");
	if (o->gate && !o->gate->check)
		return al_err(err, EINVAL, "mcp: the gate has no check function");
	if (o->size > offsetof(struct mcp_opts, approver) && o->approver && (!o->approver->ask || !o->approver->cancel))
		return al_err(err, EINVAL, "mcp: the approver needs ask and cancel");
	return 0;
}

static void apply_defaults(struct mcp_opts *o)
{
	if (!o->max_message)
		o->max_message = JR_DEFAULT_MAX_MESSAGE;
	if (!o->max_inflight)
		o->max_inflight = 32;
	if (!o->stream_budget)
		o->stream_budget = (size_t)1 << 20;
	if (!o->approval_timeout_ms)
		o->approval_timeout_ms = 60000;
	if (!o->now_ms)
		o->now_ms = monotonic_ms;
}

int mcp_session_new(const struct mcp_opts *opts, struct mcp_session **out, struct al_error *err)
{
	int r = check_opts(opts, err);
	if (r < 0)
		return r;
	cleanup_free struct mcp_session *s = calloc(1, sizeof(*s));
	if (!s)
		return al_err(err, ENOMEM, "mcp: out of memory");
	memcpy(&s->o, opts, opts->size);
	s->o.size = sizeof(s->o);
	apply_defaults(&s->o);
	s->level = MCP_LOG_NOTICE;
	char msg[SCH_MSG_MAX];
	r = tl_catalog_load(&s->cat, msg);
	if (r < 0)
		return al_err(err, -r, "mcp: tool schemas: %s", r == -ENOMEM ? "out of memory" : msg);
	s->rn = (struct svc_runner){.mgr = s->o.mgr,
				    .gate = s->o.gate,
				    .observer = s->o.observer,
				    .cat = &s->cat,
				    .transport = s->o.transport,
				    .now_us = session_us,
				    .now_ctx = s};
	r = evq_new(&s->q);
	if (r < 0) {
		tl_catalog_clear(&s->cat);
		return al_err_sys(err, -r, "mcp: event queue");
	}
	*out = steal_ptr(s);
	return 0;
}

void mcp_session_free(struct mcp_session *s)
{
	if (!s)
		return;
	call_free_all(s);
	own_destroy(s); /* after its calls: none of them uses it any more */
	evq_close(s->q);
	evq_unref(s->q);
	tl_catalog_clear(&s->cat);
	free(s);
}
