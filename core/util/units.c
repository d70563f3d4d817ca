// SPDX-License-Identifier: MIT
/* Sizes and durations as people write them (see units.h for the suffixes). */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "core/util/units.h"

/* A number "12" or "1.25": every digit in @m (the fraction's too), and @frac the count of
 * digits after the point, so that its value is m / 10^frac. Advances *@p. 0, -EINVAL (no
 * digit), -ERANGE (more digits than 64 bits hold). */
static int parse_number(const char **p, uint64_t *m, unsigned int *frac)
{
	const char *s = *p;
	bool point = false, any = false;

	*m = 0;
	*frac = 0;
	for (;; s++) {
		if (*s == '.' && !point) {
			point = true;
			continue;
		}
		if (!isdigit((unsigned char)*s))
			break;
		uint64_t d = (uint64_t)(*s - '0');

		if (*m > (UINT64_MAX - d) / 10)
			return -ERANGE;
		*m = *m * 10 + d;
		*frac += point;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*p = s;
	return 0;
}

/* m / 10^frac * mult, which must be whole. 0, -EINVAL (a fraction left), -ERANGE. */
static int scale(uint64_t m, unsigned int frac, uint64_t mult, uint64_t *out)
{
	unsigned __int128 v = (unsigned __int128)m * mult, div = 1;

	/* 10^39 does not fit in 128 bits, and v < 2^128 < 10^39: past 38 digits, only a
	 * zero is whole. */
	if (frac > 38) {
		if (v)
			return -EINVAL;
		*out = 0;
		return 0;
	}
	for (unsigned int i = 0; i < frac; i++)
		div *= 10;
	if (v % div)
		return -EINVAL;
	v /= div;
	if (v > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

/* The letters of a unit at *@p ("KiB", "ms", "µs"), after optional blanks; advances *@p. */
static size_t unit_word(const char **p, char *buf, size_t len)
{
	const char *s = *p;
	size_t n = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	while (n + 2 < len && (isalpha((unsigned char)*s) || (unsigned char)*s >= 0x80))
		buf[n++] = *s++;
	buf[n] = '\0';
	if (n)
		*p = s;
	return n;
}

static uint64_t power(uint64_t base, unsigned int n)
{
	uint64_t v = 1;

	while (n--)
		v *= base;
	return v;
}

/* The bytes of size suffix @u, or 0. */
static uint64_t size_mult(const char *u)
{
	static const char prefixes[] = "KMGTPE";
	const char *at;
	size_t n = strlen(u);

	if (n == 0 || !strcasecmp(u, "B"))
		return 1;
	at = strchr(prefixes, toupper((unsigned char)u[0]));
	if (!at || !*at)
		return 0;
	if (n == 1 || !strcasecmp(u + 1, "iB"))
		return power(1024, (unsigned int)(at - prefixes + 1));
	if (!strcasecmp(u + 1, "B"))
		return power(1000, (unsigned int)(at - prefixes + 1));
	return 0;
}

int units_parse_size(const char *s, uint64_t *out)
{
	const char *p = s;
	uint64_t m, mult;
	unsigned int frac;
	char u[8];
	int ret;

	if (!s)
		return -EINVAL;
	ret = parse_number(&p, &m, &frac);
	if (ret)
		return ret;
	unit_word(&p, u, sizeof(u));
	mult = size_mult(u);
	if (!mult || *p)
		return -EINVAL;
	return scale(m, frac, mult, out);
}

#define NS_US 1000ull
#define NS_MS 1000000ull
#define NS_S 1000000000ull

static const struct {
	const char *name;
	uint64_t ns;
} time_units[] = {
	{ "ns", 1 },		{ "nsec", 1 },
	{ "us", NS_US },	{ "usec", NS_US },	{ "\xc2\xb5s", NS_US },	/* µs */
	{ "ms", NS_MS },	{ "msec", NS_MS },
	{ "s", NS_S },		{ "sec", NS_S },	{ "second", NS_S },	{ "seconds", NS_S },
	{ "m", 60 * NS_S },	{ "min", 60 * NS_S },	{ "minute", 60 * NS_S },
	{ "minutes", 60 * NS_S },
	{ "h", 3600 * NS_S },	{ "hr", 3600 * NS_S },	{ "hour", 3600 * NS_S },
	{ "hours", 3600 * NS_S },
	{ "d", 86400 * NS_S },	{ "day", 86400 * NS_S }, { "days", 86400 * NS_S },
};

static uint64_t time_mult(const char *u)
{
	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
		if (!strcasecmp(u, time_units[i].name))
			return time_units[i].ns;
	return 0;
}

int units_parse_duration(const char *s, uint64_t bare_ns, uint64_t *out)
{
	const char *p = s;
	uint64_t sum = 0;
	bool first = true;

	if (!s)
		return -EINVAL;
	do {
		uint64_t m, mult, v;
		unsigned int frac;
		char u[16];
		int ret;

		while (!first && (*p == ' ' || *p == '\t'))
			p++;
		if (!first && !*p)
			break;	/* trailing blanks */
		ret = parse_number(&p, &m, &frac);
		if (ret)
			return ret;
		if (unit_word(&p, u, sizeof(u)))
			mult = time_mult(u);
		else	/* a bare number: only alone, in the key's own unit */
			mult = first && !*p ? bare_ns : 0;
		if (!mult)
			return -EINVAL;
		ret = scale(m, frac, mult, &v);
		if (ret)
			return ret;
		if (v > UINT64_MAX - sum)
			return -ERANGE;
		sum += v;
		first = false;
	} while (*p);
	*out = sum;
	return 0;
}

int units_is_bare(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}
