/* connect.c — Connect RPC's JSON encoding as E2B's envd speaks it: unary application/json, streaming application/connect+json envelopes with their end-of-stream message, and Connect's error bodies and codes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/e2b.h"
#include "util/cleanup.h"

/* Connect's codes and the HTTP status each stands for (connectrpc.com/docs/protocol, "Error
 * Codes"). A unary error answers with that status; a stream's is in its last envelope. */
static const struct {
	const char *code;
	int status;
} codes[] = {
	{"canceled", 499},
	{"unknown", 500},
	{"invalid_argument", 400},
	{"deadline_exceeded", 504},
	{"not_found", 404},
	{"already_exists", 409},
	{"permission_denied", 403},
	{"resource_exhausted", 429},
	{"failed_precondition", 400},
	{"aborted", 409},
	{"out_of_range", 400},
	{"unimplemented", 501},
	{"internal", 500},
	{"unavailable", 503},
	{"data_loss", 500},
	{"unauthenticated", 401},
};

bool cx_streaming_type(const char *type)
{
	return type && strncasecmp(type, "application/connect+json", 24) == 0;
}

int cx_status_of_code(const char *code)
{
	for (size_t i = 0; code && i < AL_ARRAY_SIZE(codes); i++)
		if (strcmp(codes[i].code, code) == 0)
			return codes[i].status;
	return 500;
}

const char *cx_code_of_status(int status)
{
	switch (status) {
	case 400:
	case 413:
		return status == 413 ? "resource_exhausted" : "invalid_argument";
	case 401:
		return "unauthenticated";
	case 403:
		return "permission_denied";
	case 404:
		return "not_found";
	case 409:
		return "already_exists";
	case 429:
		return "resource_exhausted";
	case 501:
		return "unimplemented";
	case 503:
		return "unavailable";
	case 504:
		return "deadline_exceeded";
	case 507:
		return "resource_exhausted";
	default:
		return status < 300 ? "unknown" : "internal";
	}
}

/* One message's JSON: an object ({} when empty); 0 and *out, or -EINVAL with why. */
static int parse_json(const char *body, size_t len, json_t **out, char *why, size_t cap)
{
	*out = NULL;
	if (len > CX_MESSAGE_MAX) {
		snprintf(why, cap, "the message is over %zu bytes", CX_MESSAGE_MAX);
		return -EINVAL;
	}
	if (len == 0) {
		*out = json_object();
		return *out ? 0 : -ENOMEM;
	}
	json_error_t jerr;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		snprintf(why, cap, "bad JSON at line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		snprintf(why, cap, "the message must be a JSON object");
		return -EINVAL;
	}
	*out = j;
	return 0;
}

/* The envelope at body[*off]: a flags byte, a 32-bit big-endian length, that many bytes of JSON.
 * Its message's place in *msg and *n, *off past it; 0, or -EINVAL with why. */
static int envelope_at(const char *body, size_t len, size_t *off, const char **msg, size_t *n, char *why, size_t cap)
{
	if (len - *off < 5) {
		snprintf(why, cap, "an envelope is cut short (5 bytes of header, then the message)");
		return -EINVAL;
	}
	const unsigned char *h = (const unsigned char *)body + *off;
	size_t k = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | (size_t)h[4];
	if (h[0] & CX_FLAG_COMPRESSED) {
		snprintf(why, cap, "compressed messages are not supported (send them uncompressed)");
		return -EINVAL;
	}
	if (h[0] & ~(unsigned)CX_FLAG_COMPRESSED) {
		snprintf(why, cap, "unknown envelope flags 0x%02x", h[0]);
		return -EINVAL;
	}
	if (k > len - *off - 5) {
		snprintf(why, cap, "the envelope says %zu bytes, the body holds %zu", k, len - *off - 5);
		return -EINVAL;
	}
	*msg = body + *off + 5;
	*n = k;
	*off += 5 + k;
	return 0;
}

int cx_parse_request(bool streaming, const char *body, size_t len, json_t **out, char *why, size_t cap)
{
	*out = NULL;
	if (streaming) {
		/* One envelope and nothing after it (a server-streaming call's client sends exactly
		 * one message). */
		size_t off = 0, n = 0;
		const char *msg = NULL;
		int r = envelope_at(body, len, &off, &msg, &n, why, cap);
		if (r < 0)
			return r;
		if (off != len) {
			snprintf(why, cap, "the envelope says %zu bytes, the body holds %zu", n, len - 5);
			return -EINVAL;
		}
		return parse_json(msg, n, out, why, cap);
	}
	return parse_json(body, len, out, why, cap);
}

int cx_next_message(const char *body, size_t len, size_t *off, json_t **out, char *why, size_t cap)
{
	*out = NULL;
	if (*off >= len)
		return 0;
	size_t n = 0;
	const char *msg = NULL;
	int r = envelope_at(body, len, off, &msg, &n, why, cap);
	r = r ?: parse_json(msg, n, out, why, cap);
	return r < 0 ? r : 1;
}

int cx_append(struct cx_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		char *grown = realloc(b->p, cap);
		if (!grown)
			return -ENOMEM;
		b->p = grown;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

int cx_envelope(struct cx_buf *b, unsigned flags, const json_t *msg)
{
	cleanup_free char *text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (!text)
		return -ENOMEM;
	size_t n = strlen(text);
	unsigned char h[5] = {(unsigned char)flags, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
			      (unsigned char)(n >> 8), (unsigned char)n};
	int r = cx_append(b, h, sizeof(h));
	return r ? r : cx_append(b, text, n);
}

int cx_end_stream(struct cx_buf *b, const char *code, const char *message)
{
	json_t *end = code ? json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message ? message : "")
			   : json_object();
	if (!end)
		return -ENOMEM;
	int r = cx_envelope(b, CX_FLAG_END, end);
	json_decref(end);
	return r;
}

void cx_unary_ok(struct hx_response *rs, json_t *steal)
{
	hx_json(rs, 200, steal ? steal : json_object());
}

void cx_unary_error(struct hx_response *rs, const char *code, const char *fmt, ...)
{
	char msg[AL_ERROR_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *text = json_string(msg);
	if (!text)
		text = json_string("invalid request");
	hx_json(rs, cx_status_of_code(code), json_pack("{s:s,s:o}", "code", code, "message", text));
}

void cx_from_api(struct hx_response *rs, json_t *steal_msg)
{
	if (rs->status >= 200 && rs->status < 300) {
		hx_response_clear(rs);
		cx_unary_ok(rs, steal_msg);
		return;
	}
	json_decref(steal_msg);
	int status = rs->status ? rs->status : 500;
	json_t *body = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(body, "error"));
	char text[AL_ERROR_MAX + 64];
	snprintf(text, sizeof(text), "%s", msg ? msg : "the request failed");
	json_decref(body);
	hx_response_clear(rs);
	cx_unary_error(rs, cx_code_of_status(status), "%s", text);
}
