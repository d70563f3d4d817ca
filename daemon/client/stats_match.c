// SPDX-License-Identifier: MIT
/* Matching a stats name against the patterns of stats_names.c: "{a,b,}" picks one of its
 * alternatives (the empty one included), "N" stands for one or more digits. */
#include <string.h>

#include "daemon/client/stats_names.h"

/* Whether pattern @p matches all of @s. */
static bool match(const char *p, const char *s)
{
	for (; *p; p++) {
		if (*p == '{') {
			const char *close = strchr(p, '}'), *alt = p + 1;

			if (!close)
				return false;
			for (;;) {
				const char *end = alt;
				char buf[256];
				size_t n;

				while (end < close && *end != ',')
					end++;
				/* this alternative, then the rest of the pattern */
				n = (size_t)(end - alt);
				if (n + strlen(close + 1) < sizeof(buf)) {
					memcpy(buf, alt, n);
					strcpy(buf + n, close + 1);
					if (match(buf, s))
						return true;
				}
				if (end >= close)
					return false;
				alt = end + 1;
			}
		}
		if (*p == 'N') {
			if (*s < '0' || *s > '9')
				return false;
			while (s[1] >= '0' && s[1] <= '9')
				s++;
			s++;
			continue;
		}
		if (*p != *s)
			return false;
		s++;
	}
	return !*s;
}

bool stats_pattern_match(const char *pattern, const char *name)
{
	return match(pattern, name);
}

const struct stats_name *stats_name_find(const char *name)
{
	for (size_t i = 0; i < stats_nr_names; i++)
		if (match(stats_names[i].pattern, name))
			return &stats_names[i];
	return NULL;
}
