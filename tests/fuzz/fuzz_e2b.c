/* fuzz_e2b.c — fuzz target for the E2B front end's request parsers: Connect's envelope (one, or a client stream's) and JSON message, multipart/form-data, E2B paths. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/e2b.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte picks the parser; a form's Content-Type is the text up to the first newline. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned mode = data[0] % 4;
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	char why[256];
	if (mode < 2) {
		json_t *msg = NULL;
		int r = cx_parse_request(mode == 0, in, n, &msg, why, sizeof(why));
		if ((r == 0) != (msg != NULL) || (msg && !json_is_object(msg)) ||
		    (r < 0 && !memchr(why, 0, sizeof(why))))
			abort();
		json_decref(msg);
		/* The same bytes as a client stream's envelopes: each read moves on, within the body. */
		for (size_t off = 0, last = 0; mode == 0; last = off) {
			r = cx_next_message(in, n, &off, &msg, why, sizeof(why));
			if ((r == 1) != (msg != NULL) || off > n || (r == 1 && off <= last) || (r == 0 && off < n))
				abort();
			json_decref(msg);
			if (r <= 0)
				break;
		}
		return 0;
	}
	char *s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, in, n);
	s[n] = 0;
	if (mode == 2) {
		char *nl = memchr(s, '\n', n);
		const char *type = s, *body = nl ? nl + 1 : s + n;
		if (nl)
			*nl = 0;
		size_t blen = (size_t)(s + n - body);
		struct e2b_part parts[8];
		char names[512];
		int k = e2b_form_parse(type, body, blen, parts, 8, names, sizeof(names), why, sizeof(why));
		for (int i = 0; i < k; i++)
			if (parts[i].data < body || parts[i].data + parts[i].len > body + blen || !parts[i].name ||
			    parts[i].name < names || parts[i].name >= names + sizeof(names))
				abort();
	} else {
		char *rel = e2b_path_in(s, why, sizeof(why));
		/* What is accepted is workspace-relative: never absolute. */
		if (rel && rel[0] == '/')
			abort();
		char *out = rel ? e2b_path_out(rel) : NULL;
		if (rel && (!out || strncmp(out, E2B_HOME, strlen(E2B_HOME)) != 0))
			abort();
		free(out);
		free(rel);
	}
	free(s);
	return 0;
}
