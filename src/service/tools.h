/* tools.h — the tools airlock serves on every transport (MCP, the JSON API): their schemas, argument checks, manager calls and results. */
#ifndef AL_SERVICE_TOOLS_H
#define AL_SERVICE_TOOLS_H

#include <jansson.h>
#include <stdbool.h>

#include "manager/api.h"
#include "service/schema.h"

enum tl_id {
	TL_EXECUTE,
	TL_INSTALL_PACKAGE,
	TL_WRITE_FILE,
	TL_READ_FILE,
	TL_LIST_FILES,
	TL_CREATE_SANDBOX,
	TL_DESTROY_SANDBOX,
	TL_CONTEXT,
	TL_PROCESS,
	TL_FILE,   /* code_file: stat, mkdir, move, remove */
	TL_UPLOAD, /* the JSON API's streamed uploads (a file or a tar archive); not an MCP tool */
	TL_SET_TIMEOUT,
	TL_WATCH,	    /* code_watch (tlwatch.c) */
	TL_FORK,	    /* code_fork_sandbox (tlfork.c) */
	TL_PAUSE,	    /* code_pause_sandbox (tlpause.c) */
	TL_RESUME,	    /* code_resume_sandbox (tlpause.c) */
	TL_SNAPSHOT,	    /* code_snapshot_sandbox (tlsnap.c) */
	TL_LIST_SNAPSHOTS,  /* code_list_snapshots (tlsnap.c) */
	TL_DELETE_SNAPSHOT, /* code_delete_snapshot (tlsnap.c) */
	TL__COUNT,
};

/* The schemas, parsed once per session from the tables in tools.c. */
struct tl_catalog {
	json_t *tools; /* the "tools" array of a tools/list result */
	json_t *input[TL__COUNT];
	json_t *output[TL__COUNT];
};

/* Parses every schema and checks it with sch_check_schema (a table typo fails here, loudly).
 * Returns 0 or -EINVAL/-ENOMEM with the reason in msg. */
int tl_catalog_load(struct tl_catalog *c, char msg[SCH_MSG_MAX]);
void tl_catalog_clear(struct tl_catalog *c);

/* The tool's id, or -1 for a name we do not serve. */
int tl_lookup(const char *name);
/* An argument of a tool call: its string (NULL if absent or not one), whether it is true. */
static inline const char *tl_str_arg(const json_t *args, const char *key)
{
	return json_string_value(json_object_get(args, key));
}
static inline bool tl_flag_arg(const json_t *args, const char *key)
{
	return json_is_true(json_object_get(args, key));
}
/* A metadata argument (an object of strings, checked by the schema) as the manager takes labels:
 * two arrays borrowed from meta (*keys and *values malloc'd, the caller frees them). 0 or -ENOMEM. */
int tl_metadata_args(json_t *meta, const char ***keys, const char ***values, size_t *n);
const char *tl_name(enum tl_id id);

/* Arguments against the input schema plus the rules a schema cannot say (base64 that decodes,
 * package names that are not options). 0, or -EINVAL with a message for the model. */
int tl_check_args(const struct tl_catalog *c, enum tl_id id, const json_t *args, char msg[SCH_MSG_MAX]);

/* Starts the tool on the manager (args passed tl_check_args) for principal owner; see manager/api.h for
 * the contract. */
int tl_start(const struct srv_mgr_api *m, enum tl_id id, const json_t *args, const char *owner,
	     const struct srv_sink *sink, struct srv_op **op, struct al_error *err);

/* What the manager would refuse at once (manager/api.h install_check), asked before the call is
 * classified and approved: 0, or -errno with err set. */
int tl_precheck(const struct srv_mgr_api *m, enum tl_id id, const json_t *args, const char *owner,
		struct al_error *err);

/* The CallToolResult for a finished operation: structuredContent, a short text content made of it
 * (tl_brief), a cell's figures as image content, and isError when the program failed or the
 * request did (result->error). NULL on ENOMEM. */
json_t *tl_result(enum tl_id id, const json_t *args, const struct srv_result *r);
/* The text content of a tool's result, made of its structuredContent st: what a model needs (the
 * output, a cell's value or error, a status line when the program did not exit 0), not the whole
 * verdict. malloc'd; NULL on ENOMEM. */
char *tl_brief(enum tl_id id, const json_t *args, const json_t *st);
/* What a package install fetched (tlfetched.c): from an install's egress records (the verdict's
 * proxy_json), each package file airlock saw whole, [{name, version, file, host, path, sha256,
 * bytes}]; *unseen counts the connections let through whose contents airlock could not see (TLS
 * it did not terminate). NULL when out of memory. */
json_t *tl_fetched(const char *proxy_json, json_int_t *unseen);
/* A CallToolResult with isError and one text block. */
json_t *tl_error_result(const char *text);
/* Whether a manager errno is the request's fault (a tool error the model can act on) rather
 * than the server's (a JSON-RPC internal error). */
bool tl_is_request_error(int neg_errno);

#endif
