/* fuzz_options.c — fuzz target for the option table: each input is one "name\0value" applied to a fresh policy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/options.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 2);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	buf[size + 1] = 0;
	const char *name = buf, *value = buf + strlen(buf) + 1;
	const struct al_option *o = NULL;
	for (size_t i = 0; i < al_noptions; i++)
		if (strcmp(al_options[i].name, name) == 0)
			o = &al_options[i];
	/* Front-end options are not opt_apply's; binds and the workdir resolve host paths
	 * (realpath, stat), which would make the fuzzer walk this machine's filesystem. */
	if (!o || !o->policy || o->id == OPT_WORKDIR || o->id == OPT_RO || o->id == OPT_RW) {
		free(buf);
		return 0;
	}
	struct al_policy *p = NULL;
	if (al_policy_new(&p) < 0) {
		free(buf);
		return 0;
	}
	struct al_error err = {0};
	int r = opt_apply(p, o, value, &err);
	if (r > 0 || (r < 0 && (err.code >= 0 || !memchr(err.msg, 0, sizeof(err.msg)))))
		abort();
	/* Applying the same value twice must be as safe as once (the CLI allows repeats). */
	err = (struct al_error){0};
	(void)opt_apply(p, o, value, &err);
	al_policy_free(p);
	free(buf);
	return 0;
}
