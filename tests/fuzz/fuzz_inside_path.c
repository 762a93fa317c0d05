/* fuzz_inside_path.c — fuzz target for the sandbox-side path check and the --require parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	struct al_error err = {0};
	if (pol_check_inside_path(s, &err) == 0) {
		/* Accepted means absolute and free of "." and ".." components: re-check from outside. */
		if (s[0] != '/')
			abort();
		for (const char *c = s; *c;) {
			while (*c == '/')
				c++;
			size_t n = strcspn(c, "/");
			if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
				abort();
			c += n;
		}
	} else if (err.code >= 0 || !memchr(err.msg, 0, sizeof(err.msg))) {
		abort();
	}
	uint32_t bits = 0;
	int abi = 0;
	err = (struct al_error){0};
	if (pol_parse_require(s, &bits, &abi, &err) < 0 && (err.code >= 0 || !memchr(err.msg, 0, sizeof(err.msg))))
		abort();
	free(s);
	return 0;
}
