/* units.c — strict parsers for sizes, durations and counts: every character must be understood. */
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "util/cleanup.h"
#include "util/error.h"

/* Parses "123" or "1.25" into a value scaled by 1000 (milli-units), without floating point. */
static int parse_decimal_milli(const char *s, const char **end, uint64_t *out)
{
	uint64_t whole = 0, frac = 0, scale = 1000;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (whole > (UINT64_MAX / 10000))
			return -ERANGE;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (whole > UINT64_MAX / 1000)
		return -ERANGE;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
		}
	}
	*end = p;
	*out = whole * 1000 + frac;
	return 0;
}

static int is_unlimited(const char *s)
{
	return strcasecmp(s, "none") == 0 || strcasecmp(s, "unlimited") == 0;
}

struct unit {
	const char *suffix;
	uint64_t mult;
};

/* "<decimal><suffix>" -> value * mult, a fraction of the smallest step rounded down (sizes:
 * "1.5" bytes is 1) or up (durations: "0.0005s" is 1 ms); -EINVAL or -ERANGE. */
static int parse_scaled(const char *s, const struct unit *units, size_t n, bool round_up, uint64_t *out)
{
	const char *end;
	uint64_t milli;
	int r = parse_decimal_milli(s, &end, &milli);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(end, units[i].suffix) != 0)
			continue;
		/* frac < 1000 and mult <= 2^40, so frac * mult cannot overflow. */
		uint64_t whole = milli / 1000, frac = milli % 1000, m = units[i].mult;
		uint64_t part = (frac * m + (round_up ? 999 : 0)) / 1000;
		if (whole > UINT64_MAX / m || whole * m > UINT64_MAX - part)
			return -ERANGE;
		*out = whole * m + part;
		return 0;
	}
	return -EINVAL;
}

int al_parse_size(const char *s, uint64_t *out, struct al_error *err)
{
	static const struct unit units[] = {
		{"", 1},
		{"b", 1},
		{"k", 1ULL << 10},
		{"kb", 1ULL << 10},
		{"kib", 1ULL << 10},
		{"m", 1ULL << 20},
		{"mb", 1ULL << 20},
		{"mib", 1ULL << 20},
		{"g", 1ULL << 30},
		{"gb", 1ULL << 30},
		{"gib", 1ULL << 30},
		{"t", 1ULL << 40},
		{"tb", 1ULL << 40},
		{"tib", 1ULL << 40},
	};
	if (!s || !*s)
		return al_err(err, EINVAL, "empty size");
	if (is_unlimited(s)) {
		*out = AL_UNLIMITED;
		return 0;
	}
	int r = parse_scaled(s, units, AL_ARRAY_SIZE(units), false, out);
	if (r == -ERANGE)
		return al_err(err, ERANGE, "size '%s' is too large", s);
	if (r < 0)
		return al_err(err, EINVAL, "invalid size '%s' (expected a number with an optional K, M, G or T suffix)",
			      s);
	return 0;
}

int al_parse_duration_ms(const char *s, uint64_t *out, struct al_error *err)
{
	static const struct unit units[] = {
		{"", 1000}, {"s", 1000}, {"ms", 1}, {"m", 60000}, {"min", 60000}, {"h", 3600000},
	};
	if (!s || !*s)
		return al_err(err, EINVAL, "empty duration");
	if (is_unlimited(s)) {
		*out = AL_UNLIMITED;
		return 0;
	}
	uint64_t ms;
	int r = parse_scaled(s, units, AL_ARRAY_SIZE(units), true, &ms);
	if (r == -ERANGE)
		return al_err(err, ERANGE, "duration '%s' is too large", s);
	if (r < 0)
		return al_err(
			err, EINVAL,
			"invalid duration '%s' (expected a positive number with an optional ms, s, m or h suffix)", s);
	if (ms == 0)
		return al_err(err, EINVAL, "duration '%s' must be positive", s);
	*out = ms;
	return 0;
}

int al_parse_cpus(const char *s, uint64_t *out, struct al_error *err)
{
	if (!s || !*s)
		return al_err(err, EINVAL, "empty CPU count");
	if (is_unlimited(s)) {
		*out = AL_UNLIMITED;
		return 0;
	}
	const char *end;
	uint64_t milli;
	if (parse_decimal_milli(s, &end, &milli) < 0 || *end || milli == 0)
		return al_err(err, EINVAL, "invalid CPU count '%s' (expected a positive number such as 0.5 or 2)", s);
	*out = milli;
	return 0;
}

int al_parse_count(const char *s, uint64_t max, uint64_t *out, struct al_error *err)
{
	if (!s || !*s)
		return al_err(err, EINVAL, "empty number");
	if (is_unlimited(s)) {
		*out = AL_UNLIMITED;
		return 0;
	}
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return al_err(err, EINVAL, "invalid number '%s'", s);
		if (v > (UINT64_MAX - 9) / 10)
			return al_err(err, ERANGE, "number '%s' is too large", s);
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > max)
		return al_err(err, ERANGE, "number '%s' is larger than %llu", s, (unsigned long long)max);
	*out = v;
	return 0;
}

static bool format_none(uint64_t v, char *buf, size_t n)
{
	if (v == AL_UNLIMITED)
		snprintf(buf, n, "none");
	return v == AL_UNLIMITED;
}

void al_format_size(uint64_t v, char *buf, size_t n)
{
	static const char units[] = "KMGT";
	int u = -1;
	if (format_none(v, buf, n))
		return;
	while (v && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, n, "%llu", (unsigned long long)v);
	else
		snprintf(buf, n, "%llu%c", (unsigned long long)v, units[u]);
}

void al_format_duration_ms(uint64_t v, char *buf, size_t n)
{
	if (format_none(v, buf, n))
		return;
	if (v % 1000 == 0)
		snprintf(buf, n, "%llus", (unsigned long long)(v / 1000));
	else
		snprintf(buf, n, "%llums", (unsigned long long)v);
}

void al_format_cpus(uint64_t v, char *buf, size_t n)
{
	if (format_none(v, buf, n))
		return;
	unsigned frac = (unsigned)(v % 1000), digits = 3;
	while (frac && frac % 10 == 0) { /* 500 -> "5": no trailing zeros */
		frac /= 10;
		digits--;
	}
	if (frac)
		snprintf(buf, n, "%llu.%0*u", (unsigned long long)(v / 1000), (int)digits, frac);
	else
		snprintf(buf, n, "%llu", (unsigned long long)(v / 1000));
}

void al_format_count(uint64_t v, char *buf, size_t n)
{
	if (!format_none(v, buf, n))
		snprintf(buf, n, "%llu", (unsigned long long)v);
}
