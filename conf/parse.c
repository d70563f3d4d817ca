/* SPDX-License-Identifier: MIT */
/* The words of a configuration value: decimal numbers, sizes (core/util/units.c), booleans. */
#include <ctype.h>
#include <errno.h>
#include <strings.h>

#include "conf/config.h"
#include "conf/parse.h"
#include "core/util/units.h"

int conf_parse_u64(const char *s, const char **end, uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0;

	if (!s || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (end)
		*end = p;
	*out = v;
	return 0;
}

int conf_parse_u64_whole(const char *s, uint64_t *out)
{
	const char *end;
	uint64_t v;
	int ret = conf_parse_u64(s, &end, &v);

	if (ret)
		return ret;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int conf_parse_size(const char *s, uint64_t *out)
{
	return units_parse_size(s, out);
}

int conf_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}
