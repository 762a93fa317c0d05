/* skip.h — the one way a cmocka case skips: AL_SKIP("reason %s", ...) says why and skips, but with
 * CI=true it fails the case instead, unless tests/skips.allow lists "unit.test_x" or
 * "unit.test_x:case" (AL_CTEST and AL_SRC come from tests/CMakeLists.txt). Include after cmocka.h. */
#ifndef AL_TEST_SKIP_H
#define AL_TEST_SKIP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is `test` or `test:func` the first word of a line of tests/skips.allow? */
static inline bool al_skip_listed(const char *test, const char *func)
{
	const char *src = getenv("AL_SRC");
	char path[4096], line[1024], id[512];
	if (!src || !test)
		return false;
	snprintf(path, sizeof(path), "%s/tests/skips.allow", src);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, " \t\r\n");
		if (line[0] == '#' || n == 0 || n >= sizeof(id))
			continue;
		memcpy(id, line, n);
		id[n] = '\0';
		char *colon = strchr(id, ':');
		if (colon)
			*colon = '\0';
		found = strcmp(id, test) == 0 && (!colon || strcmp(colon + 1, func) == 0);
	}
	fclose(f);
	return found;
}

__attribute__((format(printf, 2, 3))) static inline void al_skip_say(const char *func, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	const char *test = getenv("AL_CTEST");
	const char *ci = getenv("CI");
	if (ci && strcmp(ci, "true") == 0 && !al_skip_listed(test, func))
		fail_msg("%s: would skip (%s), but CI=true makes a skip an error unless tests/skips.allow lists "
			 "%s:%s",
			 func, why, test ? test : "unit.?", func);
	print_message("SKIP: %s: %s\n", func, why);
}

#define AL_SKIP(...)                                \
	do {                                        \
		al_skip_say(__func__, __VA_ARGS__); \
		skip();                             \
	} while (0)

#endif
