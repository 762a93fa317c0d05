/* text.c — UTF-8 checking and repair and base64, so program output and file bytes can travel as JSON. */
#include "util/text.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t txt_utf8_seq(const unsigned char *s, size_t n)
{
	if (n == 0)
		return 0;
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned lo = 0x80, hi = 0xBF; /* bounds of the second byte (excludes overlongs, surrogates) */
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		lo = c == 0xE0 ? 0xA0 : 0x80;
		hi = c == 0xED ? 0x9F : 0xBF;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		lo = c == 0xF0 ? 0x90 : 0x80;
		hi = c == 0xF4 ? 0x8F : 0xBF;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

bool txt_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = txt_utf8_seq(u + i, n - i);
		if (!l)
			return false;
		i += l;
	}
	return true;
}

json_t *txt_json_lossy(const char *s, size_t n)
{
	if (txt_utf8_valid(s, n))
		return json_stringn(s ? s : "", n);
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	const unsigned char *u = (const unsigned char *)s;
	char *o = malloc(n * 3 + 1); /* each bad byte becomes three */
	if (!o)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		size_t l = txt_utf8_seq(u + i, n - i);
		if (l) {
			memcpy(o + k, s + i, l);
			k += l;
			i += l;
		} else {
			/* NOLINTNEXTLINE(bugprone-not-null-terminated-result): o is length-counted (json_stringn) */
			memcpy(o + k, "\xEF\xBF\xBD", 3);
			k += 3;
			i++;
		}
	}
	json_t *j = json_stringn(o, k);
	free(o);
	return j;
}

size_t txt_utf8_complete(const char *buf, size_t n)
{
	const unsigned char *u = (const unsigned char *)buf;
	/* Look back at most 3 bytes for the start of a sequence that the chunk cuts short. */
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned c = u[n - back];
		if ((c & 0xC0) == 0x80)
			continue; /* a continuation byte: keep looking for its lead */
		size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		return need > back ? n - back : n;
	}
	return n;
}

int txt_carry_take(struct txt_carry *c, const char *buf, size_t n, bool final, char **out, size_t *out_len)
{
	size_t total = c->len + n;
	char *joined = malloc(total + 1);
	if (!joined)
		return -ENOMEM;
	memcpy(joined, c->held, c->len);
	if (n)
		memcpy(joined + c->len, buf, n);
	size_t send = final ? total : txt_utf8_complete(joined, total);
	c->len = total - send;
	memcpy(c->held, joined + send, c->len);
	*out = joined;
	*out_len = send;
	return 0;
}

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *txt_base64_encode(const void *data, size_t n)
{
	if (n > (SIZE_MAX / 4) * 3 - 3)
		return NULL;
	const unsigned char *in = data;
	char *o = malloc((n + 2) / 3 * 4 + 1);
	if (!o)
		return NULL;
	size_t k = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		o[k++] = b64_alphabet[v >> 18 & 63];
		o[k++] = b64_alphabet[v >> 12 & 63];
		o[k++] = b64_alphabet[v >> 6 & 63];
		o[k++] = b64_alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
		o[k++] = b64_alphabet[v >> 18 & 63];
		o[k++] = b64_alphabet[v >> 12 & 63];
		if (i + 1 < n)
			o[k++] = b64_alphabet[v >> 6 & 63];
		else
			o[k++] = '=';
		o[k++] = '=';
	}
	o[k] = 0;
	return o;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64_alphabet, c) : NULL;
	return p ? (int)(p - b64_alphabet) : -1;
}

long txt_base64_decode(const char *s, size_t n, unsigned char **out)
{
	if (n % 4)
		return -EINVAL;
	size_t pad = n && s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
	unsigned char *o = malloc(n / 4 * 3 + 1);
	if (!o)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		uint32_t v = 0;
		for (size_t j = 0; j < 4; j++) {
			int d = last && j >= 4 - pad ? 0 : b64_value(s[i + j]);
			if (d < 0) {
				free(o);
				return -EINVAL;
			}
			v = v << 6 | (uint32_t)d;
		}
		o[k++] = (unsigned char)(v >> 16);
		if (!last || pad < 2)
			o[k++] = (unsigned char)(v >> 8);
		if (!last || pad < 1)
			o[k++] = (unsigned char)v;
		/* Canonical form only: the bits the padding hides must be zero. */
		if (last && ((pad == 2 && (v & 0xFFFF)) || (pad == 1 && (v & 0xFF)))) {
			free(o);
			return -EINVAL;
		}
	}
	*out = o;
	return (long)k;
}

const char *txt_rfc3339(struct timespec t, unsigned digits, char buf[TXT_RFC3339_MAX])
{
	while (t.tv_nsec < 0) {
		t.tv_sec--;
		t.tv_nsec += 1000000000L;
	}
	struct tm tm;
	size_t n = gmtime_r(&t.tv_sec, &tm) ? strftime(buf, TXT_RFC3339_MAX, "%Y-%m-%dT%H:%M:%S", &tm) : 0;
	if (!n) {
		buf[0] = '\0';
		return buf;
	}
	if (digits == 3)
		snprintf(buf + n, TXT_RFC3339_MAX - n, ".%03ldZ", t.tv_nsec / 1000000L);
	else if (digits == 9)
		snprintf(buf + n, TXT_RFC3339_MAX - n, ".%09ldZ", t.tv_nsec);
	else
		snprintf(buf + n, TXT_RFC3339_MAX - n, "Z");
	return buf;
}

const char *txt_rfc3339_now(unsigned digits, char buf[TXT_RFC3339_MAX])
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return txt_rfc3339(t, digits, buf);
}

json_t *txt_json_time(uint64_t unix_ms)
{
	char buf[TXT_RFC3339_MAX];
	struct timespec t = {(time_t)(unix_ms / 1000), (long)(unix_ms % 1000) * 1000000L};
	return *txt_rfc3339(t, 3, buf) ? json_string(buf) : json_null();
}
