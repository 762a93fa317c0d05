/* fuzz_cell_answer.c — a kernel's cell answer frame (the sandbox's word) through the manager's bounds and re-encoding: never a crash, never a parse past the budget, never an image that is not PNG-like base64, never text past the cap. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manager/context.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[200] = "";
	json_t *in = ctx_load_answer((const char *)data, size, 64, 4096, why, sizeof(why));
	/* The bound holds: what it took parses within the budget, what it refused says why. */
	if (!in && !*why)
		abort();
	if (in && !ctx_json_within((const char *)data, size, CTX_ANSWER_ELEMENTS, CTX_ANSWER_DEPTH))
		abort();
	json_t *out = in ? ctx_answer(in, 64, 4096) : NULL;
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
