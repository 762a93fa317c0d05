/* fuzz_fetched.c — fuzz target for what an install fetched (service/tlfetched.c): the input as a
 * request path a sandbox sent (through the proxy's records, where a job chooses it), and as the
 * records' JSON itself. The parser names a package file or nothing, in bounded strings. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(json_t *f)
{
	size_t i;
	json_t *e;
	if (!f)
		return; /* out of memory */
	json_array_foreach(f, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *ver = json_string_value(json_object_get(e, "version"));
		const char *file = json_string_value(json_object_get(e, "file"));
		if (!name || !ver || !file || strlen(name) >= 128 || strlen(ver) >= 64 || strlen(file) >= 160)
			abort();
	}
	json_decref(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	json_int_t unseen;
	check(tl_fetched(s, &unseen)); /* as the records' JSON */
	/* As a path, truncated as a record keeps it (159 bytes). */
	char path[160];
	snprintf(path, sizeof(path), "%s", s);
	json_t *rec =
		json_pack("{s:[{s:s,s:s,s:s,s:s,s:s,s:s,s:i}]}", "records", "tls", "airlock", "decision", "allowed",
			  "method", "GET", "host", "registry.npmjs.org", "path", path, "sha256", "00", "bytes_down", 1);
	char *px = rec ? json_dumps(rec, JSON_COMPACT) : NULL; /* NULL too for a path that is not UTF-8 */
	if (px)
		check(tl_fetched(px, &unseen));
	free(px);
	json_decref(rec);
	free(s);
	return 0;
}
