/* cellanswer.c — a kernel's cell answer, the sandbox's word, taken at a cost the server can bear: its
 * size and shape bounded before it is parsed, then re-encoded key by key (see context.h). Pure. */
#include "manager/context.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static json_t *bounded_string(const json_t *s, size_t cap)
{
	if (!json_is_string(s))
		return json_null();
	size_t n = json_string_length(s);
	const char *t = json_string_value(s);
	if (n > cap) { /* cut at a character boundary */
		n = cap;
		while (n > 0 && ((unsigned char)t[n] & 0xC0) == 0x80)
			n--;
	}
	return json_stringn(t, n);
}

static bool looks_png_base64(const char *s, size_t n)
{
	if (n < 12 || strncmp(s, "iVBORw0KGgo", 11) != 0)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == n;
}

/* The kernel's images, those that look like PNG, within image_max bytes; *dropped counts the
 * others (the kernel drops what is over the limit itself: this is the check it cannot dodge). */
static json_t *sane_images(const json_t *in, size_t image_max, json_int_t *dropped)
{
	json_t *out = json_array();
	size_t i, total = 0;
	const json_t *im;
	json_array_foreach(in, i, im) {
		const json_t *d = json_object_get(im, "data");
		size_t n = json_string_length(d);
		if (!out || !json_is_string(d) || !looks_png_base64(json_string_value(d), n) || total + n > image_max) {
			(*dropped)++;
			continue;
		}
		total += n;
		json_array_append_new(out, json_pack("{s:s,s:O,s:I,s:I}", "mime", "image/png", "data", d, "width",
						     json_integer_value(json_object_get(im, "width")), "height",
						     json_integer_value(json_object_get(im, "height"))));
	}
	return out;
}

static json_t *sane_files(const json_t *in)
{
	json_t *out = json_array();
	size_t i;
	const json_t *f;
	json_array_foreach(in, i, f) {
		const json_t *p = json_object_get(f, "path");
		if (out && i < 200 && json_is_string(p))
			json_array_append_new(out, json_pack("{s:o,s:I}", "path", bounded_string(p, 4096), "size",
							     json_integer_value(json_object_get(f, "size"))));
	}
	return out;
}

static json_t *sane_value(const json_t *v, size_t cap)
{
	if (!json_is_object(v))
		return json_null();
	return json_pack("{s:o,s:o,s:o,s:b}", "type", bounded_string(json_object_get(v, "type"), 128), "text",
			 bounded_string(json_object_get(v, "text"), cap), "html",
			 bounded_string(json_object_get(v, "html"), cap), "truncated",
			 json_is_true(json_object_get(v, "truncated")));
}

static json_t *sane_error(const json_t *e, size_t cap)
{
	if (!json_is_object(e))
		return json_null();
	return json_pack("{s:o,s:o,s:o}", "ename", bounded_string(json_object_get(e, "ename"), 256), "evalue",
			 bounded_string(json_object_get(e, "evalue"), cap), "traceback",
			 bounded_string(json_object_get(e, "traceback"), cap));
}

json_t *ctx_answer(const json_t *r, size_t cap, size_t image_max)
{
	json_int_t dropped = json_integer_value(json_object_get(r, "images_dropped"));
	if (dropped < 0 || dropped > 1000000)
		dropped = 0;
	json_t *images = sane_images(json_object_get(r, "images"), image_max, &dropped);
	return json_pack("{s:o,s:o,s:o,s:I,s:I,s:o,s:b,s:b,s:I,s:I,s:I}", "value",
			 sane_value(json_object_get(r, "value"), cap), "error",
			 sane_error(json_object_get(r, "error"), cap), "images", images, "images_dropped", dropped,
			 "image_limit", (json_int_t)image_max, "files", sane_files(json_object_get(r, "files")),
			 "files_truncated", json_is_true(json_object_get(r, "files_truncated")), "interrupted",
			 json_is_true(json_object_get(r, "interrupted")), "processes_killed",
			 json_integer_value(json_object_get(r, "processes_killed")), "timers_cancelled",
			 json_integer_value(json_object_get(r, "timers_cancelled")), "late_output_bytes",
			 json_integer_value(json_object_get(r, "late_output_bytes")));
}

size_t ctx_answer_max(size_t cap, size_t image_max)
{
	/* Four texts of at most cap characters (value text and html, error value and traceback),
	 * each up to 6 bytes once JSON escapes it (\u0001), the figures' base64, and 6 MiB for the
	 * rest: 200 file paths of up to 4096 characters, escaped as much, the counters, the keys. */
	return (size_t)(4 * 6) * cap + image_max + ((size_t)6 << 20);
}

bool ctx_json_within(const char *s, size_t n, unsigned max_elements, unsigned max_depth)
{
	/* Each array element and object member past the first is announced by a ',' or ':', each
	 * container by '[' or '{': their count bounds what jansson would allocate, one value and a
	 * pointer or a table entry each. Inside strings nothing counts. */
	unsigned elements = 0, depth = 0;
	bool in_str = false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		if (ch == '"')
			in_str = true;
		else if ((ch == '[' || ch == '{') && ++depth > max_depth)
			return false;
		else if ((ch == ']' || ch == '}') && depth)
			depth--;
		if ((ch == ',' || ch == ':' || ch == '[' || ch == '{') && ++elements > max_elements)
			return false;
	}
	return true;
}

json_t *ctx_load_answer(const char *body, size_t len, size_t cap, size_t image_max, char *why, size_t why_cap)
{
	size_t max = ctx_answer_max(cap, image_max);
	if (len > max) {
		snprintf(why, why_cap, "its answer was %zu bytes, over the %zu an answer can need", len, max);
		return NULL;
	}
	if (!ctx_json_within(body, len, CTX_ANSWER_ELEMENTS, CTX_ANSWER_DEPTH)) {
		snprintf(why, why_cap,
			 "its answer had more than %u elements or %u levels of nesting, more than an answer holds",
			 CTX_ANSWER_ELEMENTS, CTX_ANSWER_DEPTH);
		return NULL;
	}
	json_t *in = json_loadb(body, len, 0, NULL);
	if (!json_is_object(in)) {
		json_decref(in);
		snprintf(why, why_cap, "its answer was not a JSON object");
		return NULL;
	}
	return in;
}
