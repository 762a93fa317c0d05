/* text.h — bytes to JSON text for every transport: lossy UTF-8, streaming UTF-8 carry, base64. */
#ifndef AL_UTIL_TEXT_H
#define AL_UTIL_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Length of the valid UTF-8 sequence at s[0..n) (1-4), or 0 if it is not one. Overlong forms,
 * surrogates and code points above U+10FFFF are invalid, as in RFC 3629. */
size_t txt_utf8_seq(const unsigned char *s, size_t n);
bool txt_utf8_valid(const char *s, size_t n);

/* A JSON string of s[0..n), every invalid byte replaced by U+FFFD (program output is bytes,
 * JSON text is UTF-8). NULL on ENOMEM. */
json_t *txt_json_lossy(const char *s, size_t n);

/* Cuts a chunk of a byte stream so that a multi-byte character split across two chunks is not
 * mangled: returns how many bytes of buf[0..n) end on a character boundary (the rest, at most 3
 * bytes, should be held back and prepended to the next chunk). */
size_t txt_utf8_complete(const char *buf, size_t n);

/* One stream's character that a chunk boundary cut short, held back for the next chunk. */
struct txt_carry {
	char held[4];
	size_t len;
};

/* What a stream's chunk buf[0..n) sends now: what c held, then buf, without a last character cut
 * short (c holds that back; with final, nothing is held: the stream ended). *out is malloc'd
 * (free it) with *out_len bytes, possibly 0. 0, or -ENOMEM. */
int txt_carry_take(struct txt_carry *c, const char *buf, size_t n, bool final, char **out, size_t *out_len);

/* Standard base64 (RFC 4648, with padding). Encode: malloc'd NUL-terminated text or NULL.
 * Decode: strict (no whitespace, correct padding); returns the length or -EINVAL / -ENOMEM. */
char *txt_base64_encode(const void *data, size_t n);
long txt_base64_decode(const char *s, size_t n, unsigned char **out);

/* The one RFC 3339 formatter (UTC, "Z"): "2025-01-02T03:04:05Z" with digits 0, and 3 or 9 digits of
 * the fraction ("...05.678Z", "...05.678901234Z"). t is a CLOCK_REALTIME time; a negative fraction
 * is borrowed from the seconds. Returns buf; "" when the time has no calendar form. */
#define TXT_RFC3339_MAX 40
const char *txt_rfc3339(struct timespec t, unsigned digits, char buf[TXT_RFC3339_MAX]);
/* Now, as txt_rfc3339 writes it. */
const char *txt_rfc3339_now(unsigned digits, char buf[TXT_RFC3339_MAX]);

/* A wall-clock time (ms since the epoch) as RFC 3339 UTC with milliseconds, as the audit log
 * writes its times: "2025-01-02T03:04:05.678Z" (24 characters). A JSON string, or JSON null when
 * it cannot be written; NULL on ENOMEM. */
json_t *txt_json_time(uint64_t unix_ms);

#endif
