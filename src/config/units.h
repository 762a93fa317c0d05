/* units.h — parsing of sizes, durations and counts, shared by CLI flags and config keys. Pure. */
#ifndef AL_CONFIG_UNITS_H
#define AL_CONFIG_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"

/* "512", "64K", "1.5M", "2GiB", "1g" -> bytes (powers of 1024). "none"/"unlimited" -> AL_UNLIMITED. */
int al_parse_size(const char *s, uint64_t *out, struct al_error *err);
/* "10" (seconds), "10s", "250ms", "1.5s", "2m", "1h" -> milliseconds. */
int al_parse_duration_ms(const char *s, uint64_t *out, struct al_error *err);
/* "0.5", "2" CPUs -> milli-CPUs (500, 2000). "none"/"unlimited" -> AL_UNLIMITED. */
int al_parse_cpus(const char *s, uint64_t *out, struct al_error *err);
/* A non-negative integer, at most max. */
int al_parse_count(const char *s, uint64_t max, uint64_t *out, struct al_error *err);

/* The inverse, for values the parsers above read back: "512M", "30s", "0.5", "1024"; "none" for
 * AL_UNLIMITED. Into buf (n >= 24 always suffices). */
void al_format_size(uint64_t v, char *buf, size_t n);
void al_format_duration_ms(uint64_t v, char *buf, size_t n);
void al_format_cpus(uint64_t v, char *buf, size_t n);
void al_format_count(uint64_t v, char *buf, size_t n);

#endif
