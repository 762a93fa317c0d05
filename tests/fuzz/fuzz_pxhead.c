/* fuzz_pxhead.c — fuzz target for the response heads airlock relays over terminated TLS
 * (network/pxhead.c): any head through its first blank line gives a status of three digits or 0,
 * and the head the client gets stays within its bound, keeps every other line in order, carries no
 * Connection, Keep-Alive or Proxy-Connection line of the upstream's, ends with the blank line, and
 * says "Connection: close" exactly when the message is not framed. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "network/pxhead.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

/* Whether the line at p (ll bytes, its CRLF excluded) is one the rewrite drops. */
static bool dropped(const char *p, size_t ll)
{
	return pxh_hdr_is(p, ll, "connection") || pxh_hdr_is(p, ll, "keep-alive") ||
	       pxh_hdr_is(p, ll, "proxy-connection");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The head as relay_head hands it over: through its first "\r\n\r\n". */
	const char *in = (const char *)data, *e = size >= 4 ? memmem(in, size, "\r\n\r\n", 4) : NULL;
	if (!e)
		return 0;
	size_t n = (size_t)(e - in) + 4;
	struct pxh_facts f;
	for (int head_req = 0; head_req < 2; head_req++) {
		pxh_facts(in, n, head_req, &f);
		CHECK(f.status >= 0 && f.status <= 999);
		CHECK(!head_req || f.framed);
	}
	char *out = malloc(n + PXH_GROWTH);
	CHECK(out);
	for (int framed = 0; framed < 2; framed++) {
		size_t ol = pxh_rewrite(in, n, framed, out);
		CHECK(ol <= n + PXH_GROWTH && ol >= 2);
		CHECK(memcmp(out + ol - 2, "\r\n", 2) == 0);
		/* Line by line: the input's kept lines, in order, then our own. */
		size_t o = 0;
		for (const char *p = in, *end = in + n - 2; p < end;) {
			const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
			size_t ll = eol ? (size_t)(eol - p) : (size_t)(end - p), step = eol ? ll + 2 : ll;
			if (!dropped(p, step)) {
				CHECK(o + step <= ol && memcmp(out + o, p, step) == 0);
				o += step;
			}
			p += step;
		}
		static const char close_line[] = "Connection: close\r\n";
		if (!framed) {
			CHECK(o + sizeof(close_line) - 1 <= ol &&
			      memcmp(out + o, close_line, sizeof(close_line) - 1) == 0);
			o += sizeof(close_line) - 1;
		}
		CHECK(o + 2 == ol);
	}
	free(out);
	return 0;
}
