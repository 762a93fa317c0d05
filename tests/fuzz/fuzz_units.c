/* fuzz_units.c — fuzz target for the size, duration, count and CPU parsers (CLI flags and config keys). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A parser either succeeds or fails with -errno and a terminated message; nothing else. */
static void check(int r, const struct al_error *err)
{
	if (r > 0 || (r < 0 && (err->code >= 0 || memchr(err->msg, 0, sizeof(err->msg)) == NULL)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0; /* the parsers take C strings: anything after an embedded NUL is ignored */
	uint64_t v = 0;
	struct al_error err = {0};
	check(al_parse_size(s, &v, &err), &err);
	err = (struct al_error){0};
	check(al_parse_duration_ms(s, &v, &err), &err);
	err = (struct al_error){0};
	check(al_parse_cpus(s, &v, &err), &err);
	err = (struct al_error){0};
	int r = al_parse_count(s, UINT32_MAX, &v, &err);
	check(r, &err);
	if (r == 0 && v > UINT32_MAX && v != AL_UNLIMITED)
		abort(); /* the bound is the point of al_parse_count ("none" means unlimited) */
	err = (struct al_error){0};
	r = al_parse_count(s, 10, &v, &err);
	check(r, &err);
	if (r == 0 && v > 10 && v != AL_UNLIMITED)
		abort();
	/* A NULL error struct is allowed everywhere. */
	(void)al_parse_size(s, &v, NULL);
	free(s);
	return 0;
}
