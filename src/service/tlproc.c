/* tlproc.c — code_process's part of the tool table: its schemas, the start of each action on the manager, its result. */
#include "service/tlproc.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <strings.h>

#include "service/tools.h"
#include "util/error.h"

#define SANDBOX_ID_PROP                                                                                       \
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                              \
	"\"description\":\"A sandbox made by code_create_sandbox. Omit it to use this session's own sandbox " \
	"(made on first use, destroyed when the session ends).\"}"

static const char *str_arg(const json_t *args, const char *key)
{
	return json_string_value(json_object_get(args, key));
}

static uint64_t seconds_ms(const json_t *v)
{
	return v ? (uint64_t)ceil(json_number_value(v) * 1000.0) : 0;
}

const char tl_process_input[] =
	"{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP ","
	"\"action\":{\"type\":\"string\",\"enum\":[\"list\",\"get\",\"output\",\"stdin\",\"close_stdin\",\"signal\","
	"\"kill\",\"resize\"],\"description\":\"list the sandbox's background processes; get one (its exit when it "
	"ended); output: what it printed (from offset), waiting up to wait seconds for more or its end; stdin: send "
	"data; close_stdin; signal; kill; resize: a terminal session's new size (cols, rows).\"},"
	"\"cols\":" TL_PTY_SIZE_PROP ",\"rows\":" TL_PTY_SIZE_PROP ","
	"\"pid\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4194304,\"description\":\"The process (from "
	"code_execute with background).\"},"
	"\"data\":{\"type\":\"string\",\"description\":\"stdin: the text to send.\"},"
	"\"signal\":{\"type\":[\"integer\",\"string\"],\"description\":\"signal: a number or a name (TERM, INT, HUP, "
	"SIGUSR1 ...).\"},"
	"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"output: from this byte of its output on.\"},"
	"\"wait\":{\"type\":\"number\",\"minimum\":0,\"maximum\":60,\"description\":\"output: seconds to wait for "
	"its end (default 0: what it printed so far).\"},"
	"\"follow\":{\"type\":\"boolean\",\"description\":\"output: then live until it ends (or wait passes).\"}},"
	"\"required\":[\"action\"],\"additionalProperties\":false}";

const char tl_process_output[] = "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
				 "\"processes\":{\"type\":\"array\"},\"pid\":{\"type\":\"integer\"},"
				 "\"running\":{\"type\":\"boolean\"},\"output\":{\"type\":\"string\"}}}";

/* A signal's number from a number or a name ("TERM", "SIGTERM", "term"): 0 when it names none. */
static int signal_of(const json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v) > 0 && json_integer_value(v) <= SIGRTMAX ? (int)json_integer_value(v) : -1;
	const char *name = json_string_value(v);
	if (!name)
		return 0;
	if (strncasecmp(name, "SIG", 3) == 0)
		name += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev && strcasecmp(abbrev, name) == 0)
			return sig;
	}
	return -1;
}

int tl_process_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		     struct srv_op **op, struct al_error *err)
{
	if (!m->process)
		return al_err(err, ENOTSUP, "this server has no background processes");
	const char *action = str_arg(args, "action");
	bool output = action && strcmp(action, "output") == 0;
	const json_t *data = json_object_get(args, "data"), *wait = json_object_get(args, "wait");
	int sig = signal_of(json_object_get(args, "signal"));
	bool follow = json_is_true(json_object_get(args, "follow"));
	if (sig < 0)
		return al_err(err, EINVAL, "signal: not a signal's number (1 to %d) or name (TERM, KILL, SIGINT ...)",
			      SIGRTMAX);
	struct srv_process_req req = {.owner = owner,
				      .sandbox_id = str_arg(args, "sandbox_id"),
				      .action = output ? "connect" : action,
				      .pid = (int)json_integer_value(json_object_get(args, "pid")),
				      .data = json_string_value(data),
				      .len = json_string_length(data),
				      .signal = action && strcmp(action, "kill") == 0 ? SIGKILL
						: sig				      ? sig
										      : SIGTERM,
				      .offset = (uint64_t)json_integer_value(json_object_get(args, "offset")),
				      .follow = follow || (wait && json_number_value(wait) > 0),
				      .wait_ms = seconds_ms(wait),
				      /* A follow to the end is a stream (its output is the stream's); a bounded
				       * read answers with what it read. */
				      .collect = !(follow && !wait),
				      .cols = (unsigned)json_integer_value(json_object_get(args, "cols")),
				      .rows = (unsigned)json_integer_value(json_object_get(args, "rows"))};
	return m->process(m->ctx, &req, sink, op, err);
}

/* A process call's answer; its output (connect) comes as the stream's output, and is kept in the
 * answer's "output" too for the MCP result (bounded by the session's own budget). */
json_t *tl_process_result(const json_t *args, const struct srv_result *r, bool *is_error)
{
	json_t *o = r->process_json ? json_loads(r->process_json, 0, NULL) : json_object();
	return o ? o : json_object();
}
