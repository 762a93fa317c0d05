/* e2bproc.c — envd's process service (process.Process over Connect JSON) on the manager's background processes and terminals: Start, Connect, List, SendInput, StreamInput, CloseStdin, SendSignal, Update. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/e2b.h"
#include "util/cleanup.h"
#include "util/text.h"

#define PING_DEFAULT_MS 15000 /* a stream's keep-alive when the client names no Keepalive-Ping-Interval */
#define TIMEOUT_MAX_S	3600  /* code_execute's longest timeout */

static const char *header(const struct hx_request *rq, const char *name)
{
	return rq->lookup ? rq->lookup(rq->lookup_ctx, HX_HEADER, name) : NULL;
}

/* ---- the event stream --------------------------------------------------------------------------- */

/* One Start's or Connect's stream: its process, and whether it is a terminal (its output is "pty"). */
struct pstream {
	json_int_t pid;
	bool pty;
};

static int envelope_out(const json_t *msg, unsigned flags, char **out, size_t *n)
{
	struct cx_buf b = {0};
	int r = msg ? cx_envelope(&b, flags, msg) : -ENOMEM;
	*out = b.p;
	*n = b.len;
	return r;
}

/* {"event": {KIND: VALUE}}: a StartResponse / ConnectResponse. */
static int event_out(const char *kind, json_t *steal, char **out, size_t *n)
{
	json_t *msg = steal ? json_pack("{s:{s:o}}", "event", kind, steal) : NULL;
	int r = envelope_out(msg, 0, out, n);
	json_decref(msg);
	return r;
}

static int ps_begin(void *ctx, char **out, size_t *n)
{
	struct pstream *p = ctx;
	return event_out("start", json_pack("{s:I}", "pid", p->pid), out, n);
}

static int ps_keepalive(void *ctx, char **out, size_t *n)
{
	return event_out("keepalive", json_object(), out, n);
}

/* The EndEvent of the process's last state, then the stream's end. */
static int ps_end(const json_t *proc, char **out, size_t *n)
{
	const json_t *code = json_object_get(proc, "exit_code"), *sig = json_object_get(proc, "signal");
	const char *status = json_string_value(json_object_get(proc, "status"));
	bool exited = json_is_integer(code);
	json_int_t exit_code = exited		      ? json_integer_value(code)
			       : json_is_integer(sig) ? 128 + json_integer_value(sig)
						      : -1;
	char text[96];
	if (exited)
		snprintf(text, sizeof(text), "exit status %lld", (long long)exit_code);
	else if (json_is_integer(sig))
		snprintf(text, sizeof(text), "signal: %s", sigabbrev_np((int)json_integer_value(sig)) ?: "?");
	else
		snprintf(text, sizeof(text), "%s", status ? status : "ended");
	json_t *end = json_pack("{s:I,s:b,s:s}", "exitCode", exit_code, "exited", exited, "status", text);
	if (end && exit_code != 0)
		json_object_set_new(end, "error", json_string(text));
	struct cx_buf b = {0};
	json_t *msg = end ? json_pack("{s:{s:o}}", "event", "end", end) : NULL;
	int r = msg ? cx_envelope(&b, 0, msg) : -ENOMEM;
	json_decref(msg);
	r = r ?: cx_end_stream(&b, NULL, NULL);
	*out = b.p;
	*n = b.len;
	return r;
}

static int ps_event(void *ctx, const char *name, const json_t *ev, char **out, size_t *n)
{
	struct pstream *p = ctx;
	*out = NULL;
	*n = 0;
	if (strcmp(name, "output") == 0) {
		const char *stream = json_string_value(json_object_get(ev, "stream"));
		const char *data = json_string_value(json_object_get(ev, "data"));
		const char *kind = p->pty ? "pty" : stream && strcmp(stream, "stderr") == 0 ? "stderr" : "stdout";
		return data ? event_out("data", json_pack("{s:s}", kind, data), out, n) : 0;
	}
	if (strcmp(name, "result") == 0)
		return ps_end(json_object_get(ev, "result"), out, n);
	if (strcmp(name, "error") == 0) {
		const char *msg = json_string_value(json_object_get(ev, "error"));
		int status = (int)json_integer_value(json_object_get(ev, "status"));
		struct cx_buf b = {0};
		int r = cx_end_stream(&b, cx_code_of_status(status ? status : 500), msg ? msg : "the call failed");
		*out = b.p;
		*n = b.len;
		return r;
	}
	return 0; /* "approval" (a reviewer decides; the SDK has nothing to show it) */
}

static const struct hx_framing pstream_framing = {
	.type = "application/connect+json",
	.begin = ps_begin,
	.event = ps_event,
	.keepalive = ps_keepalive,
	.keepalive_ms = PING_DEFAULT_MS,
	.free = free,
};

/* A streaming call that fails before its stream: 200 and the end-of-stream error, as Connect's
 * streaming clients read a failure (an HTTP error status would lose the message). */
static void stream_error(struct hx_response *rs, const char *code, const char *msg)
{
	struct cx_buf b = {0};
	hx_response_clear(rs);
	if (cx_end_stream(&b, code, msg) < 0) {
		free(b.p);
		hx_error(rs, 500, "out of memory");
		return;
	}
	rs->status = 200;
	rs->type = "application/connect+json";
	rs->body = b.p;
	rs->len = b.len;
}

/* A JSON API error answer as a streaming call's end. */
static void stream_from_api(struct hx_response *rs)
{
	json_t *body = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	char msg[AL_ERROR_MAX + 64];
	snprintf(msg, sizeof(msg), "%s", json_string_value(json_object_get(body, "error")) ?: "the call failed");
	json_decref(body);
	stream_error(rs, cx_code_of_status(rs->status), msg);
}

/* The process's output from offset on, live until it ends, as Connect's process events. */
static void output_stream(struct hx_server *s, const struct hx_request *rq, const char *id, json_int_t pid, bool pty,
			  json_int_t offset, struct hx_response *rs)
{
	struct pstream *p = calloc(1, sizeof(*p));
	json_t *args = p ? json_pack("{s:s,s:s,s:I,s:I,s:b}", "sandbox_id", id, "action", "output", "pid", pid,
				     "offset", offset, "follow", 1)
			 : NULL;
	struct hx_call *c = args ? hx_call_new(s, TL_PROCESS, args, rq) : NULL;
	if (!c) {
		free(p);
		stream_error(rs, "internal", "out of memory");
		return;
	}
	*p = (struct pstream){.pid = pid, .pty = pty};
	hx_call_output_base64(c);
	hx_call_framing(c, &pstream_framing, p);
	hx_call_stream(c, false, rs);
	if (!rs->ops)
		stream_from_api(rs);
}

/* ---- requests ------------------------------------------------------------------------------------ */

/* The message of the request (unary or streaming), or NULL with rs holding the error. */
static json_t *message(const struct hx_request *rq, bool streaming, struct hx_response *rs)
{
	char why[160];
	json_t *msg = NULL;
	if (cx_parse_request(streaming, rq->body, rq->len, &msg, why, sizeof(why)) < 0) {
		if (streaming)
			stream_error(rs, "invalid_argument", why);
		else
			cx_unary_error(rs, "invalid_argument", "%s", why);
	}
	return msg;
}

/* The pid of a ProcessSelector ({"pid": N}; JSON names a oneof's member directly); 0 when there is
 * none (a tag: airlock's processes have none). */
static json_int_t selector_pid(const json_t *msg)
{
	const json_t *sel = json_object_get(msg, "process");
	const json_t *pid = json_object_get(sel, "pid");
	json_int_t v = json_is_integer(pid) ? json_integer_value(pid) : 0;
	return v > 0 && v <= 4194304 ? v : 0;
}

static void sh_quote(struct cx_buf *b, const char *s)
{
	(void)cx_append(b, "'", 1);
	for (const char *p = s; *p; p++)
		if (*p == '\'')
			(void)cx_append(b, "'\\''", 4);
		else
			(void)cx_append(b, p, 1);
	(void)cx_append(b, "'", 1);
}

/* The shell code of a ProcessConfig: what bash -c (or -l -c) would run, else the command line
 * quoted for exec. malloc'd, or NULL when cmd is missing. */
static char *config_code(const json_t *proc)
{
	const char *cmd = json_string_value(json_object_get(proc, "cmd"));
	const json_t *args = json_object_get(proc, "args");
	if (!cmd || !*cmd)
		return NULL;
	size_t n = json_array_size(args);
	const char *last = n ? json_string_value(json_array_get(args, n - 1)) : NULL;
	bool shell = strcmp(cmd, "/bin/bash") == 0 || strcmp(cmd, "bash") == 0 || strcmp(cmd, "/bin/sh") == 0 ||
		     strcmp(cmd, "sh") == 0;
	const char *a0 = n ? json_string_value(json_array_get(args, 0)) : NULL;
	if (shell && last &&
	    ((n == 2 && strcmp(a0, "-c") == 0) ||
	     (n == 3 && strcmp(a0, "-l") == 0 && strcmp(json_string_value(json_array_get(args, 1)) ?: "", "-c") == 0)))
		return strdup(last);
	struct cx_buf b = {0};
	(void)cx_append(&b, "exec ", 5);
	sh_quote(&b, cmd);
	for (size_t i = 0; i < n; i++) {
		const char *a = json_string_value(json_array_get(args, i));
		(void)cx_append(&b, " ", 1);
		sh_quote(&b, a ? a : "");
	}
	if (cx_append(&b, "", 1) < 0) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* The sandbox's envVars (labels "e2b.env.NAME", e2b.c), then the call's envs over them. */
static json_t *start_env(struct hx_server *s, const struct hx_request *rq, const char *id, json_t *envs)
{
	const struct srv_mgr_api *m = s->o.mgr;
	json_t *env = json_object();
	struct srv_sandbox_info i;
	struct al_error err = {0};
	if (env && m->sandbox_info &&
	    m->sandbox_info(m->ctx, rq->who->name[0] ? rq->who->name : "anonymous", id, &i, &err) == 0) {
		json_t *meta = json_loads(i.metadata_json ? i.metadata_json : "{}", 0, NULL);
		const char *k;
		json_t *v;
		json_object_foreach(meta, k, v) {
			if (strncmp(k, "e2b.env.", 8) == 0 && k[8])
				json_object_set(env, k + 8, v);
		}
		json_decref(meta);
		srv_sandbox_infos_free(&i, 1);
	}
	if (env && json_is_object(envs))
		json_object_update(env, envs);
	return env;
}

/* code_execute's arguments for a StartRequest; NULL with why. */
static json_t *start_args(struct hx_server *s, const struct hx_request *rq, const char *id, const json_t *msg,
			  char *why, size_t cap)
{
	const json_t *proc = json_object_get(msg, "process"), *pty = json_object_get(msg, "pty");
	cleanup_free char *code = config_code(proc);
	if (!code) {
		snprintf(why, cap, "process.cmd is required");
		return NULL;
	}
	json_t *args =
		json_pack("{s:s,s:s,s:s,s:b}", "sandbox_id", id, "language", "shell", "code", code, "background", 1);
	if (!args)
		return NULL;
	const char *cwd = json_string_value(json_object_get(proc, "cwd"));
	cleanup_free char *rel = e2b_path_in(cwd && *cwd ? cwd : E2B_HOME, why, cap);
	if (!rel) {
		json_decref(args);
		return NULL;
	}
	/* The directory by its workspace name (the manager checks that it is one there); the shell
	 * shows it as E2B's: /home/user links to the workspace, and a PWD naming the same directory
	 * is the one bash's pwd reports. */
	char dir[4200], shown[4200];
	snprintf(dir, sizeof(dir), "/workspace%s%s", *rel ? "/" : "", rel);
	snprintf(shown, sizeof(shown), E2B_HOME "%s%s", *rel ? "/" : "", rel);
	json_object_set_new(args, "cwd", json_string(dir));
	json_t *env = json_pack("{s:s,s:s,s:s,s:s}", "HOME", E2B_HOME, "USER", "user", "LOGNAME", "user", "PWD", shown);
	json_t *more = start_env(s, rq, id, json_object_get(proc, "envs"));
	if (env && more)
		json_object_update(env, more);
	json_decref(more);
	if (env)
		json_object_set_new(args, "env", env);
	if (json_is_object(pty)) {
		const json_t *size = json_object_get(pty, "size");
		json_int_t cols = json_integer_value(json_object_get(size, "cols")),
			   rows = json_integer_value(json_object_get(size, "rows"));
		json_object_set_new(args, "pty",
				    json_pack("{s:I,s:I}", "cols", cols > 0 ? cols : 80, "rows", rows > 0 ? rows : 24));
	} else if (json_is_true(json_object_get(msg, "stdin"))) {
		json_object_set_new(args, "keep_stdin", json_true());
	}
	/* The client's deadline (Connect-Timeout-Ms: the SDK's timeoutMs, 60 s unless told) is the
	 * process's wall-clock limit, as envd ends a command at it; 0 or none: no limit. */
	const char *deadline = header(rq, "Connect-Timeout-Ms");
	double ms = deadline ? strtod(deadline, NULL) : 0;
	if (ms > 0)
		json_object_set_new(args, "timeout", json_real(fmin(ceil(ms / 1000.0), TIMEOUT_MAX_S)));
	return args;
}

static void started_pid(struct hx_call *c, const struct srv_result *r, struct hx_response *rs)
{
	json_t *proc = r->process_json ? json_loads(r->process_json, 0, NULL) : NULL;
	json_t *pid = json_object_get(proc, "pid");
	if (json_is_integer(pid))
		hx_json(rs, 200, json_pack("{s:O,s:b}", "pid", pid, "pty", json_object_get(proc, "pty") != NULL));
	else
		hx_error(rs, 500, "the process started without a pid");
	json_decref(proc);
}

static void start(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, true, rs);
	if (!msg)
		return;
	char why[AL_ERROR_MAX];
	why[0] = 0;
	json_t *args = start_args(s, rq, id, msg, why, sizeof(why));
	json_decref(msg);
	if (!args) {
		stream_error(rs, why[0] ? "invalid_argument" : "internal", why[0] ? why : "out of memory");
		return;
	}
	struct hx_call *c = hx_call_new(s, TL_EXECUTE, args, rq);
	if (!c) {
		stream_error(rs, "internal", "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, started_pid, rs);
	if (rs->status != 200) {
		stream_from_api(rs);
		return;
	}
	json_t *b = json_loadb(rs->body, rs->len, 0, NULL);
	json_int_t pid = json_integer_value(json_object_get(b, "pid"));
	bool pty = json_is_true(json_object_get(b, "pty"));
	json_decref(b);
	hx_response_clear(rs);
	output_stream(s, rq, id, pid, pty, 0, rs);
}

/* ---- unary calls on code_process ------------------------------------------------------------------ */

/* code_process action on pid (0: none) with extra's members; the answer's structuredContent in
 * rs (a JSON API response, converted by the caller). */
static void process_call(struct hx_server *s, const struct hx_request *rq, const char *id, const char *action,
			 json_int_t pid, json_t *steal_extra, struct hx_response *rs)
{
	json_t *args = json_pack("{s:s,s:s}", "sandbox_id", id, "action", action);
	if (args && pid)
		json_object_set_new(args, "pid", json_integer(pid));
	if (args && steal_extra)
		json_object_update(args, steal_extra);
	json_decref(steal_extra);
	struct hx_call *c = args ? hx_call_new(s, TL_PROCESS, args, rq) : NULL;
	if (!c) {
		hx_error(rs, 500, "out of memory");
		return;
	}
	hx_call_run(c, NULL, 0, hx_ok_structured, rs);
}

/* The process's answer ({pid, running, pty, output_bytes ...}) or NULL with rs holding the error. */
static json_t *process_get(struct hx_server *s, const struct hx_request *rq, const char *id, json_int_t pid,
			   struct hx_response *rs)
{
	process_call(s, rq, id, "get", pid, NULL, rs);
	if (rs->status != 200)
		return NULL;
	json_t *p = json_loadb(rs->body, rs->len, 0, NULL);
	hx_response_clear(rs);
	return p;
}

static void connect_process(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, true, rs);
	if (!msg)
		return;
	json_int_t pid = selector_pid(msg);
	json_decref(msg);
	if (!pid) {
		stream_error(rs, "invalid_argument", "process.pid is required (airlock's processes have no tags)");
		return;
	}
	json_t *p = process_get(s, rq, id, pid, rs);
	if (!p) {
		stream_from_api(rs);
		return;
	}
	/* From what it prints next, as envd's Connect subscribes to the live output. */
	json_int_t offset = json_integer_value(json_object_get(p, "output_bytes"));
	bool pty = json_object_get(p, "pty") != NULL;
	json_decref(p);
	output_stream(s, rq, id, pid, pty, offset, rs);
}

static json_t *process_info(const json_t *p)
{
	const char *command = json_string_value(json_object_get(p, "command"));
	json_t *cfg = json_pack("{s:s,s:[s,s,s],s:{}}", "cmd", "/bin/bash", "args", "-l", "-c", command ? command : "",
				"envs");
	return cfg ? json_pack("{s:o,s:O}", "config", cfg, "pid", json_object_get(p, "pid")) : NULL;
}

static void list(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, false, rs);
	if (!msg)
		return;
	json_decref(msg);
	process_call(s, rq, id, "list", 0, NULL, rs);
	if (rs->status != 200) {
		cx_from_api(rs, NULL);
		return;
	}
	json_t *b = json_loadb(rs->body, rs->len, 0, NULL), *out = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(b, "processes"), i, p) {
		if (json_is_true(json_object_get(p, "running")))
			json_array_append_new(out, process_info(p));
	}
	json_decref(b);
	cx_from_api(rs, json_pack("{s:o}", "processes", out ? out : json_array()));
}

/* SendInput's bytes: code_process takes text (UTF-8 without NUL). */
static void send_input(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, false, rs);
	if (!msg)
		return;
	json_int_t pid = selector_pid(msg);
	const json_t *input = json_object_get(msg, "input");
	const char *b64 = json_string_value(json_object_get(input, "stdin"));
	if (!b64)
		b64 = json_string_value(json_object_get(input, "pty"));
	unsigned char *bytes = NULL;
	long n = b64 ? txt_base64_decode(b64, strlen(b64), &bytes) : -EINVAL;
	json_decref(msg);
	if (!pid || n < 0 || !txt_utf8_valid((const char *)bytes, (size_t)n) || memchr(bytes, 0, (size_t)n)) {
		free(bytes);
		cx_unary_error(rs, "invalid_argument",
			       "process.pid and input.stdin (base64 of UTF-8 text without NUL bytes) are required");
		return;
	}
	json_t *extra = json_pack("{s:s%}", "data", (const char *)bytes, (size_t)n);
	free(bytes);
	process_call(s, rq, id, "stdin", pid, extra, rs);
	cx_from_api(rs, NULL);
}

static void close_stdin(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, false, rs);
	json_int_t pid = msg ? selector_pid(msg) : 0;
	json_decref(msg);
	if (!msg)
		return;
	if (!pid) {
		cx_unary_error(rs, "invalid_argument", "process.pid is required");
		return;
	}
	process_call(s, rq, id, "close_stdin", pid, NULL, rs);
	cx_from_api(rs, NULL);
}

/* Signal: "SIGNAL_SIGKILL" / "SIGNAL_SIGTERM" (protobuf JSON writes an enum's name) or the number. */
static int signal_of(const json_t *v)
{
	if (json_is_integer(v))
		return (int)json_integer_value(v);
	const char *name = json_string_value(v);
	if (!name)
		return 0;
	if (strcmp(name, "SIGNAL_SIGKILL") == 0)
		return SIGKILL;
	if (strcmp(name, "SIGNAL_SIGTERM") == 0)
		return SIGTERM;
	return 0;
}

static void send_signal(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, false, rs);
	if (!msg)
		return;
	json_int_t pid = selector_pid(msg);
	int sig = signal_of(json_object_get(msg, "signal"));
	json_decref(msg);
	if (!pid || (sig != SIGKILL && sig != SIGTERM)) {
		cx_unary_error(rs, "invalid_argument",
			       "process.pid and signal (SIGNAL_SIGTERM or SIGNAL_SIGKILL) are required");
		return;
	}
	if (sig == SIGKILL)
		process_call(s, rq, id, "kill", pid, NULL, rs);
	else
		process_call(s, rq, id, "signal", pid, json_pack("{s:i}", "signal", sig), rs);
	cx_from_api(rs, NULL);
}

/* Update: a terminal's new size. */
static void update(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	json_t *msg = message(rq, false, rs);
	if (!msg)
		return;
	json_int_t pid = selector_pid(msg);
	const json_t *size = json_object_get(json_object_get(msg, "pty"), "size");
	json_int_t cols = json_integer_value(json_object_get(size, "cols")),
		   rows = json_integer_value(json_object_get(size, "rows"));
	json_decref(msg);
	if (!pid) {
		cx_unary_error(rs, "invalid_argument", "process.pid is required");
		return;
	}
	if (cols <= 0 || rows <= 0) { /* nothing to change */
		cx_unary_ok(rs, NULL);
		return;
	}
	process_call(s, rq, id, "resize", pid, json_pack("{s:I,s:I}", "cols", cols, "rows", rows), rs);
	cx_from_api(rs, NULL);
}

/* ---- StreamInput: a client stream of input ------------------------------------------------------- */

/* The bytes of a ProcessInput ({"stdin": B64} or {"pty": B64}) appended to b; 0, or -EINVAL. */
static int input_bytes(const json_t *input, struct cx_buf *b)
{
	const char *b64 = json_string_value(json_object_get(input, "stdin"));
	if (!b64)
		b64 = json_string_value(json_object_get(input, "pty"));
	unsigned char *bytes = NULL;
	long n = b64 ? txt_base64_decode(b64, strlen(b64), &bytes) : -EINVAL;
	int r = n < 0 ? -EINVAL : cx_append(b, bytes, (size_t)n);
	free(bytes);
	return r;
}

/* The input gathered for pid, as one code_process stdin call (in the order it came); 0, or 1 with
 * rs holding the stream's error end. */
static int flush_input(struct hx_server *s, const struct hx_request *rq, const char *id, json_int_t pid,
		       struct cx_buf *b, struct hx_response *rs)
{
	if (!b->len)
		return 0;
	if (!txt_utf8_valid(b->p, b->len) || memchr(b->p, 0, b->len)) {
		stream_error(rs, "invalid_argument", "the input must be UTF-8 text without NUL bytes");
		return 1;
	}
	process_call(s, rq, id, "stdin", pid, json_pack("{s:s%}", "data", b->p, b->len), rs);
	b->len = 0;
	if (rs->status == 200) {
		hx_response_clear(rs);
		return 0;
	}
	stream_from_api(rs);
	return 1;
}

/* One StreamInput message: a start names the process (the input before it goes to the one named
 * before), data adds to the input, a keepalive is nothing. 0, or 1 with rs holding the error end. */
static int input_message(struct hx_server *s, const struct hx_request *rq, const char *id, const json_t *msg,
			 json_int_t *pid, struct cx_buf *b, struct hx_response *rs)
{
	const json_t *start = json_object_get(msg, "start"), *data = json_object_get(msg, "data");
	const char *code = "invalid_argument", *bad = NULL;
	if (json_is_object(start)) {
		if (flush_input(s, rq, id, *pid, b, rs))
			return 1;
		if (!(*pid = selector_pid(start)))
			bad = "start.process.pid is required (airlock's processes have no tags)";
	} else if (json_is_object(data)) {
		if (!*pid)
			bad = "a data message before the start message that names the process";
		else if (input_bytes(json_object_get(data, "input"), b) < 0)
			bad = "data.input.stdin (or pty) must be base64";
	} else if (!json_is_object(json_object_get(msg, "keepalive"))) {
		code = "unimplemented";
		bad = "a StreamInput message is start, data or keepalive";
	}
	if (bad)
		stream_error(rs, code, bad);
	return bad != NULL;
}

/* StreamInput: {"start": {"process": SELECTOR}}, then {"data": {"input": ...}} and {"keepalive": {}}
 * messages, as envd takes them. The body is whole when this runs (the server reads a request
 * before its handler): the input reaches the process in order, at the stream's end, one stdin
 * call per process named. The answer is the empty message and the stream's end, or its error. */
static void stream_input(struct hx_server *s, const struct hx_request *rq, const char *id, struct hx_response *rs)
{
	if (!cx_streaming_type(header(rq, "Content-Type"))) {
		cx_unary_error(rs, "invalid_argument", "StreamInput is a client stream (application/connect+json)");
		return;
	}
	struct cx_buf b = {0};
	json_int_t pid = 0;
	size_t off = 0;
	int r = 0, failed = 0;
	json_t *msg = NULL;
	char why[160];
	while (!failed && (r = cx_next_message(rq->body, rq->len, &off, &msg, why, sizeof(why))) > 0) {
		failed = input_message(s, rq, id, msg, &pid, &b, rs);
		json_decref(msg);
	}
	if (!failed && r < 0) {
		stream_error(rs, "invalid_argument", why);
		failed = 1;
	}
	failed = failed || flush_input(s, rq, id, pid, &b, rs);
	free(b.p);
	if (failed)
		return;
	struct cx_buf out = {0};
	json_t *empty = json_object();
	int w = empty ? cx_envelope(&out, 0, empty) : -ENOMEM;
	json_decref(empty);
	w = w ?: cx_end_stream(&out, NULL, NULL);
	if (w < 0) {
		free(out.p);
		stream_error(rs, "internal", "out of memory");
		return;
	}
	rs->status = 200;
	rs->type = "application/connect+json";
	rs->body = out.p;
	rs->len = out.len;
}

void e2b_process(struct hx_server *s, const struct hx_request *rq, const char *id, const char *method,
		 struct hx_response *rs)
{
	static const struct {
		const char *name;
		void (*fn)(struct hx_server *, const struct hx_request *, const char *, struct hx_response *);
	} methods[] = {
		{"Start", start},	   {"Connect", connect_process},  {"List", list},
		{"SendInput", send_input}, {"CloseStdin", close_stdin},	  {"SendSignal", send_signal},
		{"Update", update},	   {"StreamInput", stream_input},
	};
	for (size_t i = 0; i < AL_ARRAY_SIZE(methods); i++)
		if (strcmp(method, methods[i].name) == 0) {
			methods[i].fn(s, rq, id, rs);
			return;
		}
	cx_unary_error(rs, "unimplemented", "process.Process/%.64s: no such method", method);
}
