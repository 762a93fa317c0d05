/* fuzz_subid.c — fuzz target for the /etc/subuid and /etc/subgid parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kit/userns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Input: 4 bytes of uid (little-endian), then "name\0file text". */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint32_t uid = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
	char *buf = malloc(size - 4 + 2);
	if (!buf)
		return 0;
	memcpy(buf, data + 4, size - 4);
	buf[size - 4] = 0;
	buf[size - 3] = 0; /* so text below is a valid (maybe empty) string whatever the input */
	const char *name = buf, *text = buf + strlen(buf) + 1;
	uint32_t start = 0, count = 0;
	if (uns_parse_subid(text, name, uid, &start, &count) == 0) {
		/* A range that leaves the 32-bit id space would map ids the kernel cannot hold. */
		if ((uint64_t)start + count > 0xFFFFFFFFull)
			abort();
	}
	free(buf);
	return 0;
}
