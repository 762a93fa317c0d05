/* error.h — the one error convention: return -errno, explain in an optional al_error. */
#ifndef AL_UTIL_ERROR_H
#define AL_UTIL_ERROR_H

#include "airlock/airlock.h"

/* Sets err (if any) to "fmt..." with code -errnum and returns -errnum (errnum > 0). */
int al_err(struct al_error *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like al_err but appends ": strerror(errnum)". */
int al_err_sys(struct al_error *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefixes the existing message with "prefix: " (context as the error climbs). */
void al_err_prefix(struct al_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
