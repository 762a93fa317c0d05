/* fuzz_cell_answer.c — a kernel's cell answer (the sandbox's word) through the manager's re-encoding: never a crash, never an image that is not PNG-like base64, never text past the cap. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manager/context.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, 0, NULL);
	json_t *out = ctx_answer(in, 64, 4096);
	size_t i;
	json_t *im;
	json_array_foreach(json_object_get(out, "images"), i, im) {
		const char *d = json_string_value(json_object_get(im, "data"));
		if (!d || strncmp(d, "iVBORw0KGgo", 11) != 0)
			abort();
	}
	const char *text = json_string_value(json_object_get(json_object_get(out, "value"), "text"));
	if (text && strlen(text) > 64)
		abort();
	if (json_array_size(json_object_get(out, "files")) > 200)
		abort();
	json_decref(out);
	json_decref(in);
	return 0;
}
