/* jsonrpc.h — one JSON-RPC 2.0 message at a time: strict parsing, error objects, encoding. */
#ifndef AL_MCP_JSONRPC_H
#define AL_MCP_JSONRPC_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* The standard codes (JSON-RPC 2.0, section 5.1). */
enum jr_code {
	JR_PARSE_ERROR = -32700,
	JR_INVALID_REQUEST = -32600,
	JR_METHOD_NOT_FOUND = -32601,
	JR_INVALID_PARAMS = -32602,
	JR_INTERNAL_ERROR = -32603,
};

/* Default limit on one message; a transport may lower or raise it (jr_parse's max). */
#define JR_DEFAULT_MAX_MESSAGE ((size_t)4 << 20)
#define JR_ERROR_MSG_MAX       200

enum jr_kind {
	JR_REQUEST,	 /* method + id: must be answered */
	JR_NOTIFICATION, /* method, no id: must never be answered */
	JR_RESULT,	 /* id + result: the answer to one of our requests */
	JR_ERROR,	 /* id (or null) + error: the peer refused one of our requests */
};

/* A parsed message. Every pointer is borrowed from root, which the message owns. */
struct jr_message {
	enum jr_kind kind;
	json_t *root;
	json_t *id;	    /* string or integer; JR_ERROR may carry JSON null; NULL for notifications */
	const char *method; /* requests and notifications */
	json_t *params;	    /* object or array, or NULL when absent */
	json_t *result;	    /* JR_RESULT */
	json_t *error;	    /* JR_ERROR: an object with an integer code and a string message */
};

/* Why a message was refused: what to answer (jr_failure_response). */
struct jr_failure {
	int code;   /* enum jr_code */
	json_t *id; /* the request's id when it could be read, else NULL (answered with null) */
	char message[JR_ERROR_MSG_MAX];
};

/*
 * Parses buf[0..len) as exactly one JSON-RPC 2.0 message. max is the size limit (0: the
 * default). Batches (a top-level array) are refused: MCP removed them in 2025-06-18.
 * Strict: "jsonrpc" must be "2.0", ids are strings or integers (never null, never fractions),
 * params an object or an array, no duplicate keys and no member JSON-RPC does not define.
 * Returns 0 and fills *out (release with jr_message_clear), or -EBADMSG / -EMSGSIZE and fills
 * *fail (release with jr_failure_clear), or -ENOMEM. Never reads past len; buf need not be
 * NUL-terminated.
 */
int jr_parse(const char *buf, size_t len, size_t max, struct jr_message *out, struct jr_failure *fail);
void jr_message_clear(struct jr_message *m);
void jr_failure_clear(struct jr_failure *f);

/* Builders; each returns a new reference or NULL on ENOMEM. Arguments named "steal" are
 * consumed even on failure; id is borrowed (copied by reference). */
json_t *jr_result(json_t *id, json_t *steal_result);
json_t *jr_error(json_t *id, int code, const char *message, json_t *steal_data);
json_t *jr_request(json_t *id, const char *method, json_t *steal_params);
json_t *jr_notification(const char *method, json_t *steal_params);
json_t *jr_failure_response(const struct jr_failure *f);

/* One message as one line of UTF-8 JSON without the newline (malloc'd; JSON escapes every
 * newline inside strings, so the line never contains one). Returns its length or -ENOMEM. */
ssize_t jr_encode(const json_t *msg, char **out);

/* True for a valid id: a string or an integer. */
int jr_valid_id(const json_t *id);

#endif
