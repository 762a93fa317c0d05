/* tools.c — the tool table: one JSON Schema per tool (published and enforced), the manager call
 * it turns into, and the structured result it gives back. */
#include "service/tools.h"
#include "service/tlproc.h"
#include "service/tlfork.h"
#include "service/tlpause.h"
#include "service/tlsnap.h"
#include "service/tlwatch.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/text.h"
#include "util/cleanup.h"
#include "util/error.h"

/* ---- schemas (JSON text; every keyword is one schema.c enforces) ---------------------------- */

#define SANDBOX_ID_PROP                                                                                       \
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                              \
	"\"description\":\"A sandbox made by code_create_sandbox. Omit it to use this session's own sandbox " \
	"(made on first use, destroyed when the session ends).\"}"
/* code_destroy_sandbox: without an id, the session's own (a reset: the next call gets a new one). */
#define DESTROY_ID_PROP                                                                                        \
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                               \
	"\"description\":\"The sandbox to destroy. Omit it to destroy this session's own sandbox (its files, " \
	"packages and interpreter state): the next call without sandbox_id gets a new, empty one.\"}"
#define LANGUAGE_PROP                                                                                                 \
	"\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\",\"shell\",\"ruby\",\"php\",\"perl\"]," \
	"\"description\":\"The interpreter that runs the code.\"}"
/* code_create_sandbox: the sandbox's network, fixed for its life. */
#define NETWORK_PROPS                                                                                             \
	"\"network_enabled\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Allow outbound "           \
	"connections, only to allowed_domains (or the profile's list), through an egress proxy. Off by "          \
	"default.\"},"                                                                                            \
	"\"allowed_domains\":{\"type\":\"array\",\"maxItems\":64,\"items\":{\"type\":\"string\",\"minLength\":1," \
	"\"maxLength\":253},\"description\":\"Host names the code may reach when network_enabled is true, e.g. "  \
	"pypi.org or *.pythonhosted.org.\"}"
/* code_execute: per execution, never more than the sandbox has. */
#define EXEC_NETWORK_PROPS                                                                                         \
	"\"network_enabled\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Allow this execution "      \
	"outbound connections, only to allowed domains, through an egress proxy. Off by default. Decided per "     \
	"execution: without sandbox_id, the code runs in a throwaway sandbox made with this network "              \
	"(allowed_domains, or the "                                                                                \
	"profile's list). With sandbox_id, an execution cannot ask for more network than its sandbox has: the "    \
	"sandbox must have network (created with network_enabled, or by a profile with an allowlist), and the "    \
	"execution reaches the sandbox's domains; false (or omitted) runs this execution with no network at all, " \
	"even in a sandbox that has network.\"},"                                                                  \
	"\"allowed_domains\":{\"type\":\"array\",\"maxItems\":64,\"items\":{\"type\":\"string\",\"minLength\":1,"  \
	"\"maxLength\":253},\"description\":\"Host names the code may reach when network_enabled is true, e.g. "   \
	"pypi.org or *.pythonhosted.org. With sandbox_id: omit it, or give exactly the sandbox's own list (the "   \
	"domains it was created with); any other list is refused.\"}"
/* code_create_sandbox and code_set_sandbox_timeout: the sandbox's own end (config.c caps
 * max_lifetime at 30 days, so no lifetime above that could be granted anyway). */
#define LIFETIME_PROP                                                                                     \
	"\"lifetime\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":2592000,\"description\":"   \
	"\"Seconds until the sandbox ends (counted from its creation on create, from now on "             \
	"code_set_sandbox_timeout): it is then destroyed, with whatever runs in it. Within the server's " \
	"max_lifetime, counted from the creation: more is refused. Without it, only the server's limits.\"}"
#define PATH_PROP(what) "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"" what "\"}"

/* Interpreter contexts (manager/context.h): a sandbox's Python code runs as a cell of a context. */
#define CONTEXT_ID_PROP                                                         \
	"\"context_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64," \
	"\"description\":\"A named interpreter context of the sandbox (default: the language's own).\"}"
#define CONTEXT_EXEC_PROPS                                                                                   \
	CONTEXT_ID_PROP                                                                                      \
	",\"fresh\":{\"type\":\"boolean\",\"default\":false,\"description\":\"With sandbox_id, "             \
	"Python, JavaScript and shell run as cells of an interpreter context that keeps its state between "  \
	"calls "                                                                                             \
	"(variables and imports; for shell: variables, functions, aliases, directory) and returns the last " \
	"expression's "                                                                                      \
	"value, figures (PNG) and changed files. Every process a cell starts ends with it. true runs a new " \
	"process instead.\"}"

static const char context_input[] =
	"{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP ","
	"\"action\":{\"type\":\"string\",\"enum\":[\"create\",\"list\",\"restart\",\"delete\"],"
	"\"description\":\"create a context (language, optional context_id), list them, restart one (its state is "
	"lost) or delete one.\"},"
	"\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"shell\",\"javascript\"],\"description\":\"create: "
	"the interpreter.\"}," CONTEXT_ID_PROP "},"
	"\"required\":[\"action\"],\"additionalProperties\":false}";

static const char context_output[] = "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
				     "\"contexts\":{\"type\":\"array\"},\"context_id\":{\"type\":\"string\"}}}";

/* A terminal's columns or rows (manager/api.h SRV_PTY_MAX). */

/* code_execute: one process's run, and a life of its own. */
#define RUN_PROPS                                                                                                     \
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"maxLength\":32768},"            \
	"\"description\":\"Environment variables added to the sandbox's scrubbed environment (names: letters, "       \
	"digits, _). A new process only (not a cell).\"},"                                                            \
	"\"cwd\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"The working directory: "   \
	"relative to /workspace, or absolute inside the sandbox; one in the workspace must exist.\"},"                \
	"\"stdin\":{\"type\":\"string\",\"description\":\"Text given to the program as its standard input.\"},"       \
	"\"background\":{\"type\":\"boolean\",\"default\":false,\"description\":\"With sandbox_id: start the "        \
	"program and answer at once with its pid; it keeps running between calls (a server, a watcher) until it "     \
	"ends, is killed (code_process), or the sandbox goes.\"},"                                                    \
	"\"keep_stdin\":{\"type\":\"boolean\",\"default\":false,\"description\":\"With background: its stdin stays "  \
	"open for code_process stdin until close_stdin.\"},"                                                          \
	"\"pty\":{\"type\":\"object\",\"properties\":{\"cols\":" TL_PTY_SIZE_PROP ",\"rows\":" TL_PTY_SIZE_PROP "},"  \
	"\"additionalProperties\":false,\"description\":\"With sandbox_id: a terminal session, a background process " \
	"whose stdin, stdout and stderr are a terminal of this size (default 80 x 24; code \\\"exec bash -i\\\" "     \
	"gives an "                                                                                                   \
	"interactive shell with job control); code_process stdin types into it, resize changes its size.\"}"

static const char execute_input[] =
	"{\"type\":\"object\",\"properties\":{" LANGUAGE_PROP ","
	"\"code\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The program's source text.\"},"
	"\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":3600,\"description\":\"Wall-clock "
	"limit in seconds (default: the sandbox's).\"}," EXEC_NETWORK_PROPS ","
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"Run in this "
	"persistent sandbox (from code_create_sandbox): files and installed packages stay between calls. "
	"Without it the code runs in this session's own sandbox (made on first use, destroyed when the "
	"session ends), where the files of code_write_file are; with network_enabled and no sandbox_id, "
	"in a throwaway sandbox with that network.\"}," CONTEXT_EXEC_PROPS "," RUN_PROPS "},"
	"\"required\":[\"language\",\"code\"],\"additionalProperties\":false}";

static const char install_input[] =
	"{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP ","
	"\"manager\":{\"type\":\"string\",\"enum\":[\"pip\",\"npm\"],\"description\":\"The package manager.\"},"
	"\"packages\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":64,\"items\":{\"type\":\"string\","
	"\"minLength\":1,\"maxLength\":256},\"description\":\"Package specs, e.g. numpy or requests==2.32.3 "
	"(no options).\"}},"
	"\"required\":[\"manager\",\"packages\"],\"additionalProperties\":false}";

static const char write_input[] = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP "," PATH_PROP(
	"File path beneath the workspace.") ","
					    "\"content\":{\"type\":\"string\",\"description\":\"The file's new "
					    "content.\"},"
					    "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],"
					    "\"default\":\"utf-8\","
					    "\"description\":\"How content is encoded.\"}},"
					    "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}";

static const char read_input[] =
	"{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
	"," PATH_PROP("File path beneath the workspace.") "},"
							  "\"required\":[\"path\"],\"additionalProperties\":false}";

static const char list_input[] = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP "," PATH_PROP(
	"Directory beneath the workspace (default: the workspace itself).") "},"
									    "\"additionalProperties\":false}";

static const char create_input[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"profile\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"description\":\"A profile name "
	"(default: the server's default profile). A profile fixes the posture; limits only tune resources.\"},"
	"\"image\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":127,\"description\":\"An image the "
	"profile offers (the operator's images list): its system directories instead of the host's. The "
	"posture is the profile's either way.\"}," LANGUAGE_PROP "," NETWORK_PROPS ","
	"\"limits\":{\"type\":\"object\",\"description\":\"Resource limits (defaults: the profile's).\","
	"\"properties\":{"
	"\"memory_mb\":{\"type\":\"integer\",\"minimum\":16,\"maximum\":1048576},"
	"\"cpus\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":1024},"
	"\"pids\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576},"
	"\"disk_mb\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576},"
	"\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":3600,\"description\":\"Default "
	"wall-clock limit of each execution, seconds.\"}},\"additionalProperties\":false}," LIFETIME_PROP ","
	"\"metadata\":{\"type\":\"object\",\"maxProperties\":64,\"propertyNames\":{\"minLength\":1,"
	"\"maxLength\":64},\"additionalProperties\":{\"type\":\"string\",\"maxLength\":512},\"description\":"
	"\"Labels of the sandbox, string to string (at most 64; a key is 1-64 bytes of A-Z a-z 0-9 . _ - /, a value "
	"at most 512 bytes): shown by its info and matched by the list's metadata filter.\"},"
	"\"auto_pause\":{\"type\":\"boolean\",\"description\":\"When its idle time or its lifetime ends, pause "
	"it (code_pause_sandbox) instead of destroying it; its next call resumes it.\"},"
	"\"lifetime_runs_paused\":{\"type\":\"boolean\",\"description\":\"Its lifetime runs on while it is paused "
	"(default: it stops, and what was left is kept).\"},"
	"\"snapshot\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"description\":\"A snapshot "
	"(code_snapshot_sandbox): the new sandbox starts with its files (no processes, no interpreter state), "
	"and with its profile, image and limits unless given here. Network is never taken from it: ask "
	"for it with network_enabled.\"}},"
	"\"additionalProperties\":false}";

static const char timeout_input[] =
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"
	"\"description\":\"The sandbox (from code_create_sandbox).\"}," LIFETIME_PROP "},"
	"\"required\":[\"sandbox_id\",\"lifetime\"],\"additionalProperties\":false}";

static const char destroy_input[] = "{\"type\":\"object\",\"properties\":{" DESTROY_ID_PROP "},"
				    "\"additionalProperties\":false}";

static const char file_input[] =
	"{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP ","
	"\"action\":{\"type\":\"string\",\"enum\":[\"stat\",\"mkdir\",\"move\",\"remove\"],\"description\":"
	"\"stat: what is at path (type, size, mode, owner, mtime, a symlink's target; never followed); mkdir: "
	"a directory with its parents; move: path to 'to' (replacing what is there, as rename(2)); remove: a "
	"file, link or empty directory (recursive: a whole tree).\"}," PATH_PROP(
		"Path beneath the workspace.") ","
					       "\"to\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,"
					       "\"description\":\"move: the new "
					       "path.\"},"
					       "\"recursive\":{\"type\":\"boolean\",\"default\":false,\"description\":"
					       "\"remove: a directory with "
					       "everything in it.\"},"
					       "\"overwrite\":{\"type\":\"boolean\",\"default\":true,\"description\":"
					       "\"move: false refuses to "
					       "replace an existing 'to'.\"}},"
					       "\"required\":[\"action\",\"path\"],\"additionalProperties\":false}";

static const char file_output[] =
	"{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
	"\"size\":{\"type\":\"integer\",\"minimum\":0},\"mode\":{\"type\":\"string\"},"
	"\"uid\":{\"type\":\"integer\"},\"gid\":{\"type\":\"integer\"},\"mtime\":{\"type\":\"string\"},"
	"\"link_target\":{\"type\":[\"string\",\"null\"]},\"created\":{\"type\":\"boolean\"},"
	"\"to\":{\"type\":\"string\"},\"removed\":{\"type\":\"integer\",\"minimum\":0}},"
	"\"required\":[\"path\"]}";

/* The JSON API's streamed upload: its bytes are in the upload, not in the arguments, so the rules
 * and the audit record see its size and SHA-256 digest. */
static const char upload_input[] =
	"{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP ","
	"\"path\":{\"type\":\"string\",\"maxLength\":4096},"
	"\"kind\":{\"type\":\"string\",\"enum\":[\"file\",\"archive\"]},"
	"\"size\":{\"type\":\"integer\",\"minimum\":0},"
	"\"sha256\":{\"type\":\"string\",\"minLength\":64,\"maxLength\":64}},"
	"\"required\":[\"sandbox_id\",\"path\",\"kind\",\"size\"],\"additionalProperties\":false}";

static const char upload_output[] = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
				    "\"bytes\":{\"type\":\"integer\",\"minimum\":0},\"members\":{\"type\":"
				    "\"integer\",\"minimum\":0}},\"required\":[\"path\"]}";

#define NULLABLE_INT "{\"type\":[\"integer\",\"null\"]}"
#define STREAM_PAIR(t)                                                             \
	"{\"type\":\"object\",\"properties\":{\"stdout\":" t ",\"stderr\":" t "}," \
	"\"required\":[\"stdout\",\"stderr\"]}"

static const char verdict_output[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"status\":{\"type\":\"string\",\"enum\":[\"exited\",\"signaled\",\"timeout\",\"output-limit\","
	"\"setup-error\",\"oom\",\"killed\",\"started\"],\"description\":\"How the program ended; setup-error means "
	"the sandbox failed, not the program; started: a background process now runs (see process).\"},"
	"\"exit_code\":" NULLABLE_INT ",\"signal\":" NULLABLE_INT ","
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
	"\"truncated\":" STREAM_PAIR("{\"type\":\"boolean\"}") ","
							       "\"output_bytes\":" STREAM_PAIR(
								       "{\"type\":\"integer\",\"minimum\":"
								       "0}") ","
									     "\"timing\":{\"type\":"
									     "\"object\",\"properties\":{"
									     "\"wall_s\":{\"type\":"
									     "\"number\"},"
									     "\"cpu_user_s\":{\"type\":"
									     "\"number\"},\"cpu_system_s\":{"
									     "\"type\":\"number\"}},"
									     "\"required\":[\"wall_s\","
									     "\"cpu_user_s\",\"cpu_system_"
									     "s\"]},"
									     "\"peak_memory_"
									     "bytes\":" NULLABLE_INT
									     ",\"oom_killed\":{\"type\":"
									     "\"boolean\"},"
									     "\"backend\":{\"type\":"
									     "\"string\"},\"sandbox_id\":{"
									     "\"type\":[\"string\",\"null\"]"
									     "},"
									     "\"error\":{\"type\":["
									     "\"string\",\"null\"]},"
									     "\"sandbox_ended\":{"
									     "\"type\":\"string\","
									     "\"description\":\"Why "
									     "the sandbox ended while "
									     "this ran (lifetime, "
									     "max_lifetime, destroyed, "
									     "...): error says it in "
									     "words.\"},"
									     "\"verdict\":{\"type\":"
									     "\"object\",\"description\":"
									     "\"The "
									     "verdict of airlock run --json "
									     "(without the output): CPU, "
									     "peak memory, OOM and "
									     "pids-limit hits, enforced "
									     "layers, proxy decisions.\"}},"
									     "\"required\":[\"status\","
									     "\"exit_code\",\"signal\","
									     "\"stdout\",\"stderr\","
									     "\"truncated\",\"output_"
									     "bytes\","
									     "\"timing\",\"oom_killed\","
									     "\"sandbox_id\",\"error\"]}";

static const char write_output[] = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
				   "\"bytes\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"path\",\"bytes\"]}";

static const char read_output[] =
	"{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\","
	"\"minimum\":0},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
	"\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"size\",\"encoding\",\"content\"]}";

static const char list_output[] =
	"{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"entries\":{\"type\":\"array\","
	"\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"type\":{\"type\":"
	"\"string\",\"enum\":[\"file\",\"directory\",\"symlink\",\"other\"]},\"size\":{\"type\":\"integer\","
	"\"minimum\":0}},\"required\":[\"name\",\"type\",\"size\"]}}},\"required\":[\"path\",\"entries\"]}";

static const char created_output[] =
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"ends_at\":{\"type\":[\"string\","
	"\"null\"],\"description\":\"When the sandbox ends (RFC 3339), by its lifetime or the server's "
	"max_lifetime; null: never.\"}},\"required\":[\"sandbox_id\",\"ends_at\"]}";

static const char sandbox_output[] = "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"}},"
				     "\"required\":[\"sandbox_id\"]}";

/* ---- the table ------------------------------------------------------------------------------ */

typedef int (*start_fn)(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
			struct srv_op **op, struct al_error *err);
typedef json_t *(*result_fn)(const json_t *args, const struct srv_result *r, bool *is_error);

struct tool_def {
	const char *name, *title, *description;
	const char *input, *output;
	const char *annotations; /* ToolAnnotations as JSON text: hints for the client, never trusted */
	start_fn start;
	result_fn result;
};

/* A call the JSON API makes itself (its streamed uploads): not listed, not callable over MCP. */
static bool internal(enum tl_id id)
{
	return id == TL_UPLOAD;
}

static int start_execute(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
			 struct srv_op **, struct al_error *);
static int start_install(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
			 struct srv_op **, struct al_error *);
static int start_write(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
		       struct srv_op **, struct al_error *);
static int start_read(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
		      struct srv_op **, struct al_error *);
static int start_list(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
		      struct srv_op **, struct al_error *);
static int start_create(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
			struct srv_op **, struct al_error *);
static int start_destroy(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
			 struct srv_op **, struct al_error *);
static json_t *result_verdict(const json_t *, const struct srv_result *, bool *);
static json_t *result_install(const json_t *, const struct srv_result *, bool *);
static json_t *result_write(const json_t *, const struct srv_result *, bool *);
static json_t *result_read(const json_t *, const struct srv_result *, bool *);
static json_t *result_list(const json_t *, const struct srv_result *, bool *);
static json_t *result_sandbox(const json_t *, const struct srv_result *, bool *);
static int start_timeout(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
			 struct srv_op **, struct al_error *);
static json_t *result_created(const json_t *, const struct srv_result *, bool *);
static int start_context(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
			 struct srv_op **, struct al_error *);
static json_t *result_context(const json_t *, const struct srv_result *, bool *);
static int start_file(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
		      struct srv_op **, struct al_error *);
static json_t *result_file(const json_t *, const struct srv_result *, bool *);
static int start_upload(const struct srv_mgr_api *, const json_t *, const char *, const struct srv_sink *,
			struct srv_op **, struct al_error *);
static json_t *result_upload(const json_t *, const struct srv_result *, bool *);

static const struct tool_def tools[TL__COUNT] = {
	[TL_EXECUTE] = {"code_execute", "Run code in a sandbox",
			"Runs a program (Python, JavaScript, shell, Ruby, PHP or Perl) in an isolated sandbox: no "
			"network unless enabled, no access to the host, bounded time, memory and output. Without "
			"sandbox_id it runs in this session's own sandbox, so files written with code_write_file "
			"are there and files it makes stay for later calls. Returns stdout, stderr, the exit code "
			"and how the program ended; isError is true when it did not exit with 0.",
			execute_input, verdict_output,
			"{\"readOnlyHint\":false,\"destructiveHint\":true,"
			"\"idempotentHint\":false,\"openWorldHint\":true}",
			start_execute, result_verdict},
	[TL_INSTALL_PACKAGE] = {"code_install_package", "Install packages into a sandbox",
				"Installs pip or npm packages into a sandbox's workspace (without sandbox_id: this "
				"session's own sandbox), through the network allowlist of that registry; later "
				"code_execute calls in the same sandbox can import them. The result's fetched "
				"lists each package file the registry served, by name, version and the SHA-256 "
				"of its bytes, where airlock terminated the registry's TLS (fetched_unseen: the "
				"connections it could not see into).",
				install_input, verdict_output,
				"{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,"
				"\"openWorldHint\":true}",
				start_install, result_install},
	[TL_WRITE_FILE] =
		{"code_write_file", "Write a file in a sandbox",
		 "Creates or replaces a file beneath a sandbox's workspace (without sandbox_id: this session's "
		 "own sandbox, where code_execute without sandbox_id runs).",
		 write_input, write_output,
		 "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
		 "\"openWorldHint\":false}",
		 start_write, result_write},
	[TL_READ_FILE] = {"code_read_file", "Read a file from a sandbox",
			  "Reads a file beneath a sandbox's workspace (without sandbox_id: this session's own "
			  "sandbox); binary content comes back as base64.",
			  read_input, read_output, "{\"readOnlyHint\":true,\"openWorldHint\":false}", start_read,
			  result_read},
	[TL_LIST_FILES] = {"code_list_files", "List files in a sandbox",
			   "Lists a directory beneath a sandbox's workspace (without sandbox_id: this session's own "
			   "sandbox).",
			   list_input, list_output, "{\"readOnlyHint\":true,\"openWorldHint\":false}", start_list,
			   result_list},
	[TL_CREATE_SANDBOX] =
		{"code_create_sandbox", "Create a persistent sandbox",
		 "Creates another sandbox whose files and installed packages persist across code_execute "
		 "calls until code_destroy_sandbox (or its idle timeout); pass its sandbox_id to use it. "
		 "Not needed for one workspace: calls without sandbox_id share this session's own sandbox. "
		 "Returns its sandbox_id.",
		 create_input, created_output,
		 "{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":false,"
		 "\"openWorldHint\":false}",
		 start_create, result_created},
	[TL_DESTROY_SANDBOX] = {"code_destroy_sandbox", "Destroy a sandbox",
				"Destroys a sandbox: its processes, files and packages are gone. Without sandbox_id "
				"it resets this session's own sandbox: the next call gets a new, empty one.",
				destroy_input, sandbox_output,
				"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
				"\"openWorldHint\":false}",
				start_destroy, result_sandbox},
	[TL_PROCESS] =
		{"code_process", "Manage background processes",
		 "Lists a sandbox's background processes (started by code_execute with background), reads what "
		 "one printed, sends it stdin, signals or kills it. A process lives until it exits, is killed, or "
		 "its sandbox is destroyed.",
		 tl_process_input, tl_process_output,
		 "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,"
		 "\"openWorldHint\":false}",
		 tl_process_start, tl_process_result},
	[TL_CONTEXT] = {"code_context", "Manage interpreter contexts",
			"Creates, lists, restarts or deletes the interpreter contexts of a sandbox: long-lived "
			"interpreters whose state (variables, imports) code_execute cells share.",
			context_input, context_output,
			"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,"
			"\"openWorldHint\":false}",
			start_context, result_context},
	[TL_FILE] = {"code_file", "Stat, make, move or remove files in a sandbox",
		     "Acts on a path beneath a sandbox's workspace (without sandbox_id: this session's own "
		     "sandbox): stat it, make a directory with its parents, move it, or remove a file or a "
		     "whole tree. Links are never followed.",
		     file_input, file_output,
		     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,"
		     "\"openWorldHint\":false}",
		     start_file, result_file},
	[TL_UPLOAD] = {"code_upload", "Upload a file or an archive", "The JSON API's streamed upload.", upload_input,
		       upload_output, "{\"readOnlyHint\":false,\"destructiveHint\":true}", start_upload, result_upload},
	[TL_SET_TIMEOUT] = {"code_set_sandbox_timeout", "Set a sandbox's lifetime",
			    "Sets when a persistent sandbox ends: lifetime seconds from now (longer or shorter "
			    "than before), within the server's max_lifetime counted from its creation. At its end "
			    "the sandbox is destroyed with whatever runs in it. Returns ends_at.",
			    timeout_input, created_output,
			    "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
			    "\"openWorldHint\":false}",
			    start_timeout, result_created},
	[TL_WATCH] = {"code_watch", "Watch a directory of a sandbox",
		      "Watches a directory beneath a sandbox's workspace (without sandbox_id: this session's own "
		      "sandbox), recursively or not, for wait seconds, and returns what happened there: files "
		      "created, written, removed, renamed, their mode changed. Runs nothing.",
		      tl_watch_input, tl_watch_output, "{\"readOnlyHint\":true,\"openWorldHint\":false}",
		      tl_watch_start, tl_watch_result},
	[TL_FORK] = {"code_fork_sandbox", "Fork a sandbox",
		     "Makes count new sandboxes (default 1), each with a sandbox's files as they are "
		     "now (without sandbox_id: this session's own sandbox), its profile, image, network and "
		     "limits; from then on each changes on its own. Running processes and interpreter state "
		     "are not copied. Returns the new sandbox_ids: pass one to later calls to work in it.",
		     tl_fork_input, tl_fork_output,
		     "{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":false,"
		     "\"openWorldHint\":false}",
		     tl_fork_start, tl_fork_result},
	[TL_PAUSE] = {"code_pause_sandbox", "Pause a sandbox in place",
		      "Freezes every process of a persistent sandbox where it is (background processes and "
		      "interpreter contexts keep their memory and state; no CPU is used) until "
		      "code_resume_sandbox or the next call that needs it, which resumes it first and says "
		      "resumed. Its own lifetime stops while it is paused. Refused while a call runs in it. "
		      "With to_disk, its files and metadata are kept in the state directory and its processes "
		      "and memory released instead: the resume makes it again, files only.",
		      tl_pause_input, tl_pause_output,
		      "{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,"
		      "\"openWorldHint\":false}",
		      tl_pause_start, tl_pause_result},
	[TL_RESUME] = {"code_resume_sandbox", "Resume a paused sandbox",
		       "Thaws a paused sandbox: its processes go on where they were (paused to disk: it is made again "
		       "with its files; its processes and memory were not kept).",
		       tl_resume_input, tl_pause_output,
		       "{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,"
		       "\"openWorldHint\":false}",
		       tl_resume_start, tl_pause_result},
	[TL_SNAPSHOT] = {"code_snapshot_sandbox", "Snapshot a sandbox's files",
			 "Keeps a sandbox's files as they are now (without sandbox_id: this session's own "
			 "sandbox) as a named snapshot that outlives the sandbox and a restart of the server; "
			 "code_create_sandbox with snapshot makes new sandboxes that start with those files. "
			 "Running processes and interpreter state are not part of a snapshot. Returns its "
			 "snapshot_id.",
			 tl_snapshot_input, tl_snapshot_output,
			 "{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":false,"
			 "\"openWorldHint\":false}",
			 tl_snapshot_start, tl_snapshot_result},
	[TL_LIST_SNAPSHOTS] = {"code_list_snapshots", "List snapshots",
			       "Lists this client's snapshots (or one, by snapshot_id): id, name, when it was "
			       "taken, the sandbox it was taken of, its bytes.",
			       tl_snapshots_input, tl_snapshots_output,
			       "{\"readOnlyHint\":true,\"openWorldHint\":false}", tl_snapshots_start,
			       tl_snapshot_result},
	[TL_DELETE_SNAPSHOT] = {"code_delete_snapshot", "Delete a snapshot",
				"Deletes one of this client's snapshots; sandboxes already made from it keep their "
				"files.",
				tl_snapshot_delete_input, tl_snapshot_delete_output,
				"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
				"\"openWorldHint\":false}",
				tl_snapshot_delete_start, tl_snapshot_result},
};

int tl_lookup(const char *name)
{
	for (int i = 0; i < TL__COUNT; i++)
		if (name && !internal((enum tl_id)i) && strcmp(name, tools[i].name) == 0)
			return i;
	return -1;
}

const char *tl_name(enum tl_id id)
{
	return id < TL__COUNT ? tools[id].name : "?";
}

static int load_json(const char *text, json_t **out, char *msg)
{
	json_error_t jerr;
	*out = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!*out) {
		snprintf(msg, SCH_MSG_MAX, "tool table: %s", jerr.text);
		return -EINVAL;
	}
	return sch_check_schema(*out, msg);
}

static json_t *tool_entry(const struct tool_def *t, json_t *input, json_t *output)
{
	json_t *ann = json_loads(t->annotations, 0, NULL);
	if (!ann)
		return NULL;
	return json_pack("{s:s,s:s,s:s,s:O,s:O,s:o}", "name", t->name, "title", t->title, "description", t->description,
			 "inputSchema", input, "outputSchema", output, "annotations", ann);
}

int tl_catalog_load(struct tl_catalog *c, char msg[SCH_MSG_MAX])
{
	memset(c, 0, sizeof(*c));
	c->tools = json_array();
	if (!c->tools)
		return -ENOMEM;
	for (int i = 0; i < TL__COUNT; i++) {
		int r = load_json(tools[i].input, &c->input[i], msg);
		if (r == 0)
			r = load_json(tools[i].output, &c->output[i], msg);
		if (r == 0 && !internal((enum tl_id)i) &&
		    json_array_append_new(c->tools, tool_entry(&tools[i], c->input[i], c->output[i])) < 0)
			r = -ENOMEM;
		if (r < 0) {
			tl_catalog_clear(c);
			return r;
		}
	}
	return 0;
}

void tl_catalog_clear(struct tl_catalog *c)
{
	json_decref(c->tools);
	for (int i = 0; i < TL__COUNT; i++) {
		json_decref(c->input[i]);
		json_decref(c->output[i]);
	}
	memset(c, 0, sizeof(*c));
}

/* ---- starting operations -------------------------------------------------------------------- */

/* The strings of a JSON array of strings, borrowed; *n set. NULL with *n 0 when empty. */
static const char **strings_of(const json_t *arr, size_t *n, int *rc)
{
	*n = json_array_size(arr);
	*rc = 0;
	if (!*n)
		return NULL;
	const char **v = calloc(*n, sizeof(*v));
	if (!v) {
		*rc = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < *n; i++)
		v[i] = json_string_value(json_array_get(arr, i));
	return v;
}

static uint64_t seconds_ms(const json_t *v)
{
	return v ? (uint64_t)ceil(json_number_value(v) * 1000.0) : 0;
}

/* The env object as "NAME=VALUE" strings (malloc'd, NULL-terminated; the manager checks the names). */
static int env_of(json_t *o, char ***out, size_t *n, struct al_error *err)
{
	*out = NULL;
	*n = 0;
	if (!o)
		return 0;
	char **v = calloc(json_object_size(o) + 1, sizeof(char *));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	*out = v;
	const char *key;
	json_t *val;
	json_object_foreach(o, key, val) {
		if (strchr(key, '=') || memchr(json_string_value(val), 0, json_string_length(val)))
			return al_err(err, EINVAL, "env: \"%.64s\" is not a variable name with a value", key);
		if (asprintf(&v[*n], "%s=%s", key, json_string_value(val)) < 0) {
			v[*n] = NULL;
			return al_err(err, ENOMEM, "out of memory");
		}
		(*n)++;
	}
	return 0;
}

static int start_execute(const struct srv_mgr_api *m, const json_t *args, const char *owner,
			 const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	int rc;
	const json_t *code = json_object_get(args, "code");
	struct srv_exec_req req = {
		.owner = owner,
		.sandbox_id = tl_str_arg(args, "sandbox_id"),
		.language = tl_str_arg(args, "language"),
		.code = json_string_value(code),
		.code_len = json_string_length(code),
		.timeout_ms = seconds_ms(json_object_get(args, "timeout")),
		.network_enabled = tl_flag_arg(args, "network_enabled"),
		.fresh = tl_flag_arg(args, "fresh"),
		.context_id = tl_str_arg(args, "context_id"),
	};
	const json_t *in = json_object_get(args, "stdin");
	req.cwd = tl_str_arg(args, "cwd");
	req.stdin_data = json_string_value(in);
	req.stdin_len = json_string_length(in);
	req.background = tl_flag_arg(args, "background");
	req.keep_stdin = tl_flag_arg(args, "keep_stdin");
	const json_t *pty = json_object_get(args, "pty");
	if (pty) { /* the schema bounds both; a terminal's usual 80 x 24 when one is left out */
		const json_t *cols = json_object_get(pty, "cols"), *rows = json_object_get(pty, "rows");
		req.pty_cols = cols ? (unsigned)json_integer_value(cols) : 80;
		req.pty_rows = rows ? (unsigned)json_integer_value(rows) : 24;
		req.background = true;
	}
	cleanup_free const char **domains =
		strings_of(json_object_get(args, "allowed_domains"), &req.n_allowed_domains, &rc);
	if (rc < 0)
		return al_err(err, ENOMEM, "out of memory");
	req.allowed_domains = domains;
	cleanup_free char **env = NULL;
	if ((rc = env_of(json_object_get(args, "env"), &env, &req.n_env, err)) < 0) {
		for (size_t i = 0; env && env[i]; i++)
			free(env[i]);
		return rc;
	}
	req.env = (const char *const *)env;
	rc = m->exec(m->ctx, &req, sink, op, err);
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	return rc;
}

static int start_install(const struct srv_mgr_api *m, const json_t *args, const char *owner,
			 const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	int rc;
	struct srv_install_req req = {
		.owner = owner, .sandbox_id = tl_str_arg(args, "sandbox_id"), .manager = tl_str_arg(args, "manager")};
	cleanup_free const char **pkgs = strings_of(json_object_get(args, "packages"), &req.n_packages, &rc);
	if (rc < 0)
		return al_err(err, ENOMEM, "out of memory");
	req.packages = pkgs;
	return m->install_package(m->ctx, &req, sink, op, err);
}

static int start_write(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		       struct srv_op **op, struct al_error *err)
{
	const json_t *content = json_object_get(args, "content");
	const char *enc = tl_str_arg(args, "encoding");
	struct srv_write_req req = {
		.owner = owner, .sandbox_id = tl_str_arg(args, "sandbox_id"), .path = tl_str_arg(args, "path")};
	cleanup_free unsigned char *bytes = NULL;
	if (enc && strcmp(enc, "base64") == 0) {
		long n = txt_base64_decode(json_string_value(content), json_string_length(content), &bytes);
		if (n < 0)
			return al_err(err, (int)-n, "content: not valid base64");
		req.data = bytes;
		req.len = (size_t)n;
	} else {
		req.data = json_string_value(content);
		req.len = json_string_length(content);
	}
	return m->write_file(m->ctx, &req, sink, op, err);
}

static int start_read(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		      struct srv_op **op, struct al_error *err)
{
	struct srv_path_req req = {
		.owner = owner, .sandbox_id = tl_str_arg(args, "sandbox_id"), .path = tl_str_arg(args, "path")};
	return m->read_file(m->ctx, &req, sink, op, err);
}

static int start_list(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		      struct srv_op **op, struct al_error *err)
{
	struct srv_path_req req = {
		.owner = owner, .sandbox_id = tl_str_arg(args, "sandbox_id"), .path = tl_str_arg(args, "path")};
	return m->list_files(m->ctx, &req, sink, op, err);
}

static void limits_of(const json_t *l, struct srv_limits *out)
{
	const json_t *v;
	if ((v = json_object_get(l, "memory_mb")))
		out->memory_bytes = (uint64_t)json_number_value(v) << 20;
	if ((v = json_object_get(l, "cpus")))
		out->milli_cpus = (uint32_t)ceil(json_number_value(v) * 1000.0);
	if ((v = json_object_get(l, "pids")))
		out->pids = (uint32_t)json_number_value(v);
	if ((v = json_object_get(l, "disk_mb")))
		out->disk_bytes = (uint64_t)json_number_value(v) << 20;
	out->timeout_ms = seconds_ms(json_object_get(l, "timeout"));
}

static int start_create(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
			struct srv_op **op, struct al_error *err)
{
	int rc;
	struct srv_create_req req = {
		.owner = owner,
		.profile = tl_str_arg(args, "profile"),
		.image = tl_str_arg(args, "image"),
		.language = tl_str_arg(args, "language"),
		.network_enabled = tl_flag_arg(args, "network_enabled"),
	};
	limits_of(json_object_get(args, "limits"), &req.limits);
	req.lifetime_ms = seconds_ms(json_object_get(args, "lifetime"));
	req.auto_pause = tl_flag_arg(args, "auto_pause");
	req.lifetime_runs_paused = tl_flag_arg(args, "lifetime_runs_paused");
	req.snapshot = tl_str_arg(args, "snapshot");
	cleanup_free const char **domains =
		strings_of(json_object_get(args, "allowed_domains"), &req.n_allowed_domains, &rc);
	if (rc < 0)
		return al_err(err, ENOMEM, "out of memory");
	req.allowed_domains = domains;
	/* The labels as two borrowed arrays (the arguments outlive the start call). */
	cleanup_free const char **keys = NULL;
	cleanup_free const char **values = NULL;
	if (tl_metadata_args(json_object_get(args, "metadata"), &keys, &values, &req.n_metadata) < 0)
		return al_err(err, ENOMEM, "out of memory");
	req.metadata_keys = keys;
	req.metadata_values = values;
	return m->create_sandbox(m->ctx, &req, sink, op, err);
}

int tl_metadata_args(json_t *meta, const char ***keys, const char ***values, size_t *n)
{
	size_t k = json_object_size(meta);
	*n = 0;
	*keys = calloc(k ? k : 1, sizeof(**keys));
	*values = calloc(k ? k : 1, sizeof(**values));
	if (!*keys || !*values)
		return -ENOMEM;
	const char *key;
	json_t *v;
	json_object_foreach(meta, key, v) {
		(*keys)[*n] = key;
		(*values)[(*n)++] = json_string_value(v);
	}
	return 0;
}

static int start_timeout(const struct srv_mgr_api *m, const json_t *args, const char *owner,
			 const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	if (!m->set_timeout)
		return al_err(err, ENOTSUP, "this server cannot change a sandbox's lifetime");
	struct srv_timeout_req req = {.owner = owner,
				      .sandbox_id = tl_str_arg(args, "sandbox_id"),
				      .lifetime_ms = seconds_ms(json_object_get(args, "lifetime"))};
	return m->set_timeout(m->ctx, &req, sink, op, err);
}

static int start_destroy(const struct srv_mgr_api *m, const json_t *args, const char *owner,
			 const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	struct srv_path_req req = {.owner = owner, .sandbox_id = tl_str_arg(args, "sandbox_id")};
	return m->destroy_sandbox(m->ctx, &req, sink, op, err);
}

static int start_context(const struct srv_mgr_api *m, const json_t *args, const char *owner,
			 const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	if (!m->context)
		return al_err(err, ENOTSUP, "this server has no interpreter contexts");
	struct srv_context_req req = {.owner = owner,
				      .sandbox_id = tl_str_arg(args, "sandbox_id"),
				      .action = tl_str_arg(args, "action"),
				      .language = tl_str_arg(args, "language"),
				      .context_id = tl_str_arg(args, "context_id")};
	return m->context(m->ctx, &req, sink, op, err);
}

static int start_file(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		      struct srv_op **op, struct al_error *err)
{
	if (!m->file_op)
		return al_err(err, ENOTSUP, "this server has no file operations");
	static const char *const actions[] = {[SRV_FILE_STAT] = "stat",
					      [SRV_FILE_MKDIR] = "mkdir",
					      [SRV_FILE_MOVE] = "move",
					      [SRV_FILE_REMOVE] = "remove"};
	const char *action = tl_str_arg(args, "action");
	struct srv_file_req req = {.owner = owner,
				   .sandbox_id = tl_str_arg(args, "sandbox_id"),
				   .path = tl_str_arg(args, "path"),
				   .to = tl_str_arg(args, "to"),
				   .recursive = tl_flag_arg(args, "recursive"),
				   .no_replace = json_is_false(json_object_get(args, "overwrite"))};
	size_t i = 0;
	while (i < AL_ARRAY_SIZE(actions) && strcmp(actions[i], action ? action : "") != 0)
		i++;
	if (i == AL_ARRAY_SIZE(actions))
		return al_err(err, EINVAL, "no such action");
	req.action = (enum srv_file_action)i;
	return m->file_op(m->ctx, &req, sink, op, err);
}

/* Its bytes come only with the JSON API's upload (runner.c's spool): without it there is nothing to write. */
static int start_upload(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
			struct srv_op **op, struct al_error *err)
{
	return al_err(err, ENOTSUP, "an upload's bytes come only with the JSON API's PUT");
}

int tl_precheck(const struct srv_mgr_api *m, enum tl_id id, const json_t *args, const char *owner, struct al_error *err)
{
	if (id != TL_INSTALL_PACKAGE || !m->install_check)
		return 0;
	int rc;
	struct srv_install_req req = {
		.owner = owner, .sandbox_id = tl_str_arg(args, "sandbox_id"), .manager = tl_str_arg(args, "manager")};
	cleanup_free const char **pkgs = strings_of(json_object_get(args, "packages"), &req.n_packages, &rc);
	if (rc < 0)
		return al_err(err, ENOMEM, "out of memory");
	req.packages = pkgs;
	return m->install_check(m->ctx, &req, err);
}

int tl_start(const struct srv_mgr_api *m, enum tl_id id, const json_t *args, const char *owner,
	     const struct srv_sink *sink, struct srv_op **op, struct al_error *err)
{
	if (id >= TL__COUNT)
		return al_err(err, EINVAL, "no such tool");
	return tools[id].start(m, args, owner, sink, op, err);
}

/* ---- results -------------------------------------------------------------------------------- */

json_t *tl_error_result(const char *text)
{
	return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text ? text : "error", "isError", 1);
}

bool tl_is_request_error(int neg_errno)
{
	static const int request_errnos[] = {EINVAL, ENOENT,	ENOTDIR,   EISDIR,    EXDEV,	    ELOOP,  EACCES,
					     EPERM,  EEXIST,	EFBIG,	   E2BIG,     ENAMETOOLONG, EBUSY,  EAGAIN,
					     ENOSPC, EDQUOT,	ENOTEMPTY, ETIMEDOUT, ESRCH,	    EMLINK, ENOTSUP,
					     EROFS,  EOVERFLOW, ERANGE,	   EPIPE};
	for (size_t i = 0; i < AL_ARRAY_SIZE(request_errnos); i++)
		if (-neg_errno == request_errnos[i])
			return true;
	return false;
}

static json_t *lossy_stream(const struct al_stream_result *s)
{
	return txt_json_lossy(s->data ? s->data : "", s->data ? s->kept : 0);
}

static json_t *nullable_int(bool have, long long v)
{
	return have ? json_integer(v) : json_null();
}

/* airlock run --json's verdict, built by the same code, without the output that stdout and
 * stderr above already carry. */
static json_t *run_verdict(const struct al_verdict *v)
{
	cleanup_free char *s = NULL;
	json_t *o = al_verdict_to_json(v, &s, NULL) == 0 ? json_loads(s, 0, NULL) : NULL;
	json_object_del(json_object_get(o, "stdout"), "data");
	json_object_del(json_object_get(o, "stderr"), "data");
	return o ? o : json_null();
}

static json_t *verdict_json(const struct al_verdict *v, const char *sandbox_id)
{
	bool exited = v->status == AL_STATUS_EXITED || (v->status == AL_STATUS_OUTPUT_LIMIT && !v->signal);
	json_t *o = json_pack(
		"{s:s,s:o,s:o,s:o,s:o,s:{s:b,s:b},s:{s:I,s:I},s:{s:f,s:f,s:f},s:o,s:b,s:s,s:o,s:o}", "status",
		al_status_name(v->status), "exit_code", nullable_int(exited, v->exit_code), "signal",
		nullable_int(v->signal != 0, v->signal), "stdout", lossy_stream(&v->out), "stderr",
		lossy_stream(&v->err), "truncated", "stdout", v->out.truncated, "stderr", v->err.truncated,
		"output_bytes", "stdout", (json_int_t)v->out.bytes, "stderr", (json_int_t)v->err.bytes, "timing",
		"wall_s", v->wall_s, "cpu_user_s", v->user_s, "cpu_system_s", v->system_s, "peak_memory_bytes",
		nullable_int(v->cgroup_used, (long long)v->peak_memory_bytes), "oom_killed",
		v->status == AL_STATUS_OOM || v->oom_kills > 0, "backend", v->backend ? v->backend : "native",
		"sandbox_id", sandbox_id ? json_string(sandbox_id) : json_null(), "error",
		v->status == AL_STATUS_SETUP_ERROR ? json_string(v->setup.msg) : json_null());
	if (o)
		json_object_set_new(o, "verdict", run_verdict(v));
	return o;
}

/* A background exec's start, in the shape of a verdict (the tool's outputSchema), with its process. */
static json_t *started_json(const struct srv_result *r)
{
	json_t *proc = json_loads(r->process_json, 0, NULL);
	return json_pack("{s:s,s:n,s:n,s:s,s:s,s:{s:b,s:b},s:{s:i,s:i},s:{s:f,s:f,s:f},s:b,s:s?,s:n,s:o}", "status",
			 "started", "exit_code", "signal", "stdout", "", "stderr", "", "truncated", "stdout", 0,
			 "stderr", 0, "output_bytes", "stdout", 0, "stderr", 0, "timing", "wall_s", 0.0, "cpu_user_s",
			 0.0, "cpu_system_s", 0.0, "oom_killed", 0, "sandbox_id", r->sandbox_id, "error", "process",
			 proc ? proc : json_null());
}

static json_t *result_verdict(const json_t *args, const struct srv_result *r, bool *is_error)
{
	if (!r->verdict && r->process_json)
		return started_json(r);
	if (!r->verdict)
		return NULL;
	const struct al_verdict *v = r->verdict;
	/* Anything but a clean exit 0 is the program failing: the model should see it as an error. */
	*is_error = !(v->status == AL_STATUS_EXITED && v->exit_code == 0);
	json_t *o = verdict_json(v, r->sandbox_id ? r->sandbox_id : tl_str_arg(args, "sandbox_id"));
	/* The sandbox ended while this ran (its lifetime, a destroy): why, in words, as the error. */
	if (o && r->ended &&
	    (json_object_set_new(o, "error", json_string(r->ended)) < 0 ||
	     json_object_set_new(o, "sandbox_ended", json_string(r->ended_reason ? r->ended_reason : "destroyed")) <
		     0)) {
		json_decref(o);
		return NULL;
	}
	json_t *cell = r->cell_json ? json_loads(r->cell_json, 0, NULL) : NULL;
	if (o && cell && json_object_set_new(o, "cell", cell) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *result_context(const json_t *args, const struct srv_result *r, bool *is_error)
{
	json_t *o = r->cell_json ? json_loads(r->cell_json, 0, NULL) : json_object();
	const char *id = r->sandbox_id ? r->sandbox_id : tl_str_arg(args, "sandbox_id");
	if (o && json_object_set_new(o, "sandbox_id", json_string(id ? id : "")) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A cell's figures as MCP image content (the text content names each one). */
static int add_images(json_t *content, const json_t *structured)
{
	json_t *ims = json_object_get(json_object_get(structured, "cell"), "images");
	size_t i;
	json_t *im;
	json_array_foreach(ims, i, im) {
		json_t *item = json_pack("{s:s,s:O,s:s}", "type", "image", "data", json_object_get(im, "data"),
					 "mimeType", "image/png");
		if (!item || json_array_append_new(content, item) < 0)
			return -ENOMEM;
	}
	return 0;
}

static json_t *result_write(const json_t *args, const struct srv_result *r, bool *is_error)
{
	return json_pack("{s:s,s:I}", "path", tl_str_arg(args, "path"), "bytes", (json_int_t)r->bytes);
}

static json_t *result_read(const json_t *args, const struct srv_result *r, bool *is_error)
{
	const char *data = r->data ? r->data : "";
	bool text = txt_utf8_valid(data, r->len);
	json_t *content;
	if (text) {
		content = json_stringn(data, r->len);
	} else {
		cleanup_free char *b64 = txt_base64_encode(data, r->len);
		content = b64 ? json_string(b64) : NULL;
	}
	return json_pack("{s:s,s:I,s:s,s:o}", "path", tl_str_arg(args, "path"), "size", (json_int_t)r->len, "encoding",
			 text ? "utf-8" : "base64", "content", content);
}

static const char *file_type_name(enum srv_file_type t)
{
	switch (t) {
	case SRV_FILE_REGULAR:
		return "file";
	case SRV_FILE_DIRECTORY:
		return "directory";
	case SRV_FILE_SYMLINK:
		return "symlink";
	case SRV_FILE_OTHER:
		break;
	}
	return "other";
}

static json_t *result_list(const json_t *args, const struct srv_result *r, bool *is_error)
{
	json_t *entries = json_array();
	for (size_t i = 0; entries && i < r->n_entries; i++) {
		const struct srv_file_entry *e = &r->entries[i];
		json_t *name = txt_json_lossy(e->name ? e->name : "", e->name ? strlen(e->name) : 0);
		if (json_array_append_new(entries, json_pack("{s:o,s:s,s:I}", "name", name, "type",
							     file_type_name(e->type), "size", (json_int_t)e->size)) <
		    0) {
			json_decref(entries);
			return NULL;
		}
	}
	const char *path = tl_str_arg(args, "path");
	return json_pack("{s:s,s:o}", "path", path ? path : ".", "entries", entries);
}

static json_t *result_created(const json_t *args, const struct srv_result *r, bool *is_error)
{
	const char *id = r->sandbox_id ? r->sandbox_id : tl_str_arg(args, "sandbox_id");
	return json_pack("{s:s,s:o}", "sandbox_id", id ? id : "", "ends_at",
			 r->ends_unix_ms ? txt_json_time(r->ends_unix_ms) : json_null());
}

static json_t *result_sandbox(const json_t *args, const struct srv_result *r, bool *is_error)
{
	const char *id = r->sandbox_id ? r->sandbox_id : tl_str_arg(args, "sandbox_id");
	return json_pack("{s:s}", "sandbox_id", id ? id : "");
}

/* RFC 3339 UTC with nanoseconds (a file's mtime, as precise as the file system keeps it). */
static json_t *rfc3339_ns(int64_t ns)
{
	char buf[TXT_RFC3339_MAX];
	struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	return *txt_rfc3339(t, 9, buf) ? json_string(buf) : json_null();
}

static json_t *stat_json(const char *path, const struct srv_file_stat *st)
{
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", (unsigned)st->mode);
	json_t *target = st->link_target ? txt_json_lossy(st->link_target, strlen(st->link_target)) : json_null();
	return json_pack("{s:s,s:s,s:I,s:s,s:I,s:I,s:o,s:o}", "path", path, "type", st->kind, "size",
			 (json_int_t)st->size, "mode", mode, "uid", (json_int_t)st->uid, "gid", (json_int_t)st->gid,
			 "mtime", rfc3339_ns(st->mtime_ns), "link_target", target);
}

static json_t *result_file(const json_t *args, const struct srv_result *r, bool *is_error)
{
	const char *path = tl_str_arg(args, "path"), *action = tl_str_arg(args, "action");
	if (r->stat)
		return stat_json(path, r->stat);
	if (strcmp(action, "mkdir") == 0)
		return json_pack("{s:s,s:b}", "path", path, "created", r->bytes != 0);
	if (strcmp(action, "move") == 0)
		return json_pack("{s:s,s:s}", "path", path, "to", tl_str_arg(args, "to"));
	return json_pack("{s:s,s:I}", "path", path, "removed", (json_int_t)r->bytes);
}

static json_t *result_upload(const json_t *args, const struct srv_result *r, bool *is_error)
{
	bool archive = strcmp(tl_str_arg(args, "kind"), "archive") == 0;
	return json_pack("{s:s,s:I}", "path", tl_str_arg(args, "path"), archive ? "members" : "bytes",
			 (json_int_t)r->bytes);
}

/* An install's verdict, and what it fetched: each package file by its digest, and what went by
 * unseen (a tunnel: the registry's TLS was not terminated, so no file can be named). */
static json_t *result_install(const json_t *args, const struct srv_result *r, bool *is_error)
{
	json_t *o = result_verdict(args, r, is_error);
	json_int_t unseen = 0;
	json_t *fetched = o && r->verdict ? tl_fetched(r->verdict->proxy_json, &unseen) : NULL;
	if (o && r->verdict &&
	    (!fetched || json_object_set_new(o, "fetched", fetched) < 0 ||
	     json_object_set_new(o, "fetched_unseen", json_integer(unseen)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *tl_result(enum tl_id id, const json_t *args, const struct srv_result *r)
{
	if (id >= TL__COUNT)
		return NULL;
	if (r->error)
		return tl_error_result(r->err.msg[0] ? r->err.msg : "the request failed");
	bool is_error = false;
	json_t *structured = tools[id].result(args, r, &is_error);
	if (!structured)
		return NULL;
	/* The sandbox was paused and this call resumed it first (manager/sbpause.c). */
	if (r->resumed && json_object_set_new(structured, "resumed", json_true()) < 0) {
		json_decref(structured);
		return NULL;
	}
	/* It ran, but its changes are not on disk (manager/sbmgr.c op_end). */
	if (r->not_kept && json_object_set_new(structured, "not_kept", json_string(r->not_kept)) < 0) {
		json_decref(structured);
		return NULL;
	}
	/* The text is what a model reads, short (tl_brief); the whole result is structuredContent. */
	json_t *images = json_array();
	int rc = images ? add_images(images, structured) : -ENOMEM;
	cleanup_free char *text = rc == 0 ? tl_brief(id, args, structured) : NULL;
	if (!text) {
		json_decref(images);
		json_decref(structured);
		return NULL;
	}
	/* json_pack releases structured ("o") on failure as well. */
	json_t *out = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text", text, "structuredContent",
				structured, "isError", is_error);
	if (!out) {
		json_decref(images);
		return NULL;
	}
	json_array_extend(json_object_get(out, "content"), images);
	json_decref(images);
	return out;
}
