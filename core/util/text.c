// SPDX-License-Identifier: MIT
/* Text into a bounded buffer (see core/util/text.h). */
#include <stdarg.h>
#include <stdio.h>

#include "core/util/text.h"

void stats_put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos + 1 >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*pos += (size_t)n;
	if (*pos >= len)
		*pos = len - 1;
}
