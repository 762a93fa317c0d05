/* units.h — parsing of sizes, durations and counts, shared by CLI flags and config keys. Pure. */
#ifndef AL_CONFIG_UNITS_H
#define AL_CONFIG_UNITS_H

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

#endif
