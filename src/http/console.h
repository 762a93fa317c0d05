/* console.h — the approver's console: the page's files, embedded in the binary at build time (cmake/embed.cmake). */
#ifndef AL_HTTP_CONSOLE_H
#define AL_HTTP_CONSOLE_H

#include <stddef.h>

struct console_asset {
	const char *name; /* "index.html", "console.js": the file's name under src/http/console/ */
	const unsigned char *bytes;
	size_t len;
};

/* Ends with an entry whose name is NULL. */
extern const struct console_asset console_assets[];

#endif
