/* own.c — the MCP session's own sandbox: every call that names no sandbox runs in it; the first such call makes it, the session's end destroys it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/session.h"

/*
 * An agent that never heard of sandbox ids writes a file, runs code that reads it, and reads what
 * the code wrote: each call names no sandbox, so all of them must land in one sandbox that lives
 * as long as the session. It is made lazily, by a code_create_sandbox call of the session's
 * principal on the same runner as any other call (schema, risk rules, approval, audit): the
 * session has no privilege a client's own create would not have, and the audit log shows who made
 * the sandbox and when. Calls arriving while it is being made wait (CALL_SANDBOX, not yet begun
 * on the runner) and begin once it exists — with its id in their arguments, so the risk rules,
 * the approval and the audit record see the sandbox they act on. When the session ends, the
 * sandbox is destroyed through the manager directly: that is cleanup the client did not ask for
 * and cannot refuse, as the manager's own expiry is.
 *
 * code_execute with network_enabled and no sandbox_id keeps its throwaway sandbox made with that
 * network: the session's sandbox has the default profile's posture, and an execution may never
 * widen the network of the sandbox it runs in.
 */

bool own_wanted(const struct call *c)
{
	const json_t *args = svc_call_args(c->sc);
	if (json_object_get(args, "sandbox_id"))
		return false;
	switch (c->tool) {
	case TL_EXECUTE:
		return !json_is_true(json_object_get(args, "network_enabled"));
	case TL_INSTALL_PACKAGE:
	case TL_CONTEXT:
	case TL_PROCESS:
	case TL_WRITE_FILE:
	case TL_READ_FILE:
	case TL_LIST_FILES:
	case TL_FILE:
	case TL_DESTROY_SANDBOX: /* a reset: own_destroyed forgets it, the next call makes a new one */
	case TL_WATCH:
	case TL_FORK:
	case TL_SNAPSHOT: /* an agent keeps its session's work */
		return true;
	case TL_UPLOAD:
	case TL_CREATE_SANDBOX:
	case TL_SET_TIMEOUT:
	case TL_PAUSE: /* the session's own sandbox is the session's to use, not to pause by omission */
	case TL_RESUME:
	case TL_LIST_SNAPSHOTS: /* a snapshot's, not a sandbox's */
	case TL_DELETE_SNAPSHOT:
	case TL__COUNT:
		break;
	}
	return false;
}

/* Puts the session's sandbox into c's arguments and begins c. */
static int begin_in_own(struct mcp_session *s, struct call *c, json_t *out)
{
	if (svc_call_set_sandbox(c->sc, s->own_id) < 0) {
		svc_call_free(c->sc); /* never begun: no record */
		c->sc = NULL;
		call_free(s, c);
		return -ENOMEM;
	}
	c->uses_own = true;
	return call_begin(s, c, out);
}

/* Starts the session's code_create_sandbox: default profile, no network, no limits. */
static int start_making(struct mcp_session *s, json_t *out)
{
	json_t *args = json_object();
	struct svc_principal who = call_principal(s);
	struct svc_call *sc =
		args ? svc_call_new(&s->rn, TL_CREATE_SANDBOX, args, &who, s->peer[0] ? s->peer : NULL) : NULL;
	json_decref(args);
	struct svc_refusal ref;
	if (!sc || svc_call_validate(sc, &ref) < 0) {
		svc_call_free(sc);
		return -ENOMEM; /* {} is valid: only memory can fail here */
	}
	struct call *mk = call_new(s, NULL, TL_CREATE_SANDBOX, sc, NULL);
	if (!mk) {
		svc_call_free(sc);
		return -ENOMEM;
	}
	mk->own_create = true;
	s->own_making = mk;
	snprintf(s->own_owner, sizeof(s->own_owner), "%s", svc_call_principal(sc)->name);
	(void)ses_logf(s, NULL, MCP_LOG_DEBUG, "making the session's own sandbox");
	return call_begin(s, mk, out); /* its end (now or later) reaches own_made */
}

/* A reset of a sandbox not made yet: nothing to destroy, and nothing is made just for that. */
static int nothing_to_destroy(struct mcp_session *s, struct call *c, json_t *out)
{
	json_t *res = json_pack("{s:[{s:s,s:s}],s:{s:s},s:b}", "content", "type", "text", "text",
				"this session has no sandbox yet: nothing to destroy", "structuredContent",
				"sandbox_id", "", "isError", 0);
	int r = res ? ses_reply(out, c->req_id, res) : -ENOMEM;
	call_free(s, c); /* never begun: nothing ran, nothing to record */
	return r;
}

int own_route(struct mcp_session *s, struct call *c, json_t *out)
{
	if (s->own_id[0])
		return begin_in_own(s, c, out);
	if (c->tool == TL_DESTROY_SANDBOX && !s->own_making)
		return nothing_to_destroy(s, c, out);
	c->state = CALL_SANDBOX;
	if (s->own_making)
		return 0;
	int r = start_making(s, out);
	if (r < 0 && !s->own_making) /* nothing will call own_made: answer the waiting calls now */
		return own_made(s, NULL, "out of memory", out) < 0 ? -ENOMEM : r;
	return r;
}

int own_made(struct mcp_session *s, const char *id, const char *why, json_t *out)
{
	s->own_making = NULL;
	if (id) {
		snprintf(s->own_id, sizeof(s->own_id), "%s", id);
		(void)ses_logf(s, NULL, MCP_LOG_INFO, "the session's own sandbox is %s", id);
	}
	char text[SVC_TEXT_MAX + 64];
	snprintf(text, sizeof(text), "this session's sandbox could not be made: %s", why);
	int r = 0;
	for (struct call *c = s->calls, *next; c; c = next) {
		next = c->next; /* begin may free c (refused), never another call */
		if (c->state != CALL_SANDBOX)
			continue;
		int x = id ? begin_in_own(s, c, out) : call_fail(s, c, SRV_CALL_REQUEST_FAILED, text, out);
		r = r < 0 ? r : x;
	}
	return r;
}

/* The manager's words for an id it does not hold (sbmgr.c sbx_get) name the id; a missing file's
 * name its path. */
static bool names_own(const struct mcp_session *s, const char *msg)
{
	char quoted[SRV_SANDBOX_ID_MAX + 2];
	snprintf(quoted, sizeof(quoted), "\"%s\"", s->own_id);
	return s->own_id[0] && msg && strstr(msg, quoted);
}

const char *own_failed(struct mcp_session *s, const struct call *c, const char *msg, char *buf, size_t cap)
{
	const char *id = json_string_value(json_object_get(svc_call_args(c->sc), "sandbox_id"));
	if (!id || strcmp(id, s->own_id) != 0 || !names_own(s, msg))
		return msg;
	/* Expired (server.idle_ttl, max_lifetime) or destroyed: the next call makes a new one rather
	 * than failing for the rest of the session. */
	s->own_id[0] = 0;
	snprintf(buf, cap,
		 "%s; this session's own sandbox is gone, with its files: the next call gets a new, empty one", msg);
	return buf;
}

void own_destroyed(struct mcp_session *s, const char *id)
{
	if (id && s->own_id[0] && strcmp(id, s->own_id) == 0)
		s->own_id[0] = 0;
}

static void drop_result(void *cookie, struct srv_result *r)
{
	(void)cookie;
	srv_result_free(r);
}

void own_destroy(struct mcp_session *s)
{
	if (!s->own_id[0])
		return;
	const struct srv_mgr_api *m = s->o.mgr;
	struct srv_path_req req = {.owner = s->own_owner, .sandbox_id = s->own_id};
	struct srv_sink sink = {.on_done = drop_result};
	struct srv_op *op = NULL;
	struct al_error err = {0};
	int r = m->destroy_sandbox(m->ctx, &req, &sink, &op, &err);
	if (r == 0 && op && m->release)
		m->release(m->ctx, op); /* nobody waits for its end: the manager frees it once done */
	(void)ses_logf(s, NULL, r < 0 ? MCP_LOG_WARNING : MCP_LOG_INFO, "the session ended: its sandbox %s %s%s",
		       s->own_id, r < 0 ? "was already gone: " : "is destroyed", r < 0 ? err.msg : "");
	s->own_id[0] = 0;
}
