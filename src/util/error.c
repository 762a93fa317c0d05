/* error.c — formatting for the error struct; fixed-size, never allocates. */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A message cut at the struct's size ends in "..." so that nobody reads it as whole. */
static void mark_cut(char *msg, size_t size)
{
	memcpy(msg + size - 4, "...", 4);
}

__attribute__((format(printf, 4, 0))) /* lets the compiler check every caller's format */
static int
vset(struct al_error *err, int errnum, bool with_strerror, const char *fmt, va_list ap)
{
	if (errnum <= 0)
		errnum = EINVAL;
	if (!err)
		return -errnum;
	err->code = -errnum;
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: the callers va_start ap */
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (with_strerror && n >= 0 && (size_t)n < sizeof(err->msg))
		n += snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(errnum));
	if (n >= 0 && (size_t)n >= sizeof(err->msg))
		mark_cut(err->msg, sizeof(err->msg));
	return -errnum;
}

int al_err(struct al_error *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vset(err, errnum, false, fmt, ap);
	va_end(ap);
	return r;
}

int al_err_sys(struct al_error *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vset(err, errnum, true, fmt, ap);
	va_end(ap);
	return r;
}

void al_err_prefix(struct al_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	char prefix[96];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	/* Shift the old message right and truncate it: the context matters more than its tail. */
	size_t pl = strlen(prefix), room = sizeof(err->msg) - pl - 2;
	size_t ml = strnlen(err->msg, sizeof(err->msg) - 1);
	bool cut = ml > room - 1;
	if (cut)
		ml = room - 1;
	memmove(err->msg + pl + 2, err->msg, ml);
	err->msg[pl + 2 + ml] = 0;
	memcpy(err->msg, prefix, pl);
	err->msg[pl] = ':';
	err->msg[pl + 1] = ' ';
	if (cut)
		mark_cut(err->msg, sizeof(err->msg));
}
