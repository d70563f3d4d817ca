/* SPDX-License-Identifier: MIT */
/* The words of a configuration value: decimal numbers, sizes and durations (core/util/units.h),
 * booleans.
 * Used for --set values and size strings; libconfig parses the file's own literals. */
#ifndef PLUGDISK_CONF_PARSE_H
#define PLUGDISK_CONF_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Read the decimal digits at the start of @s into @out and point @end (may be NULL) past
 * them; what follows is the caller's. 0, -EINVAL if @s does not start with a digit (no sign,
 * no space), -ERANGE if the digits do not fit in 64 bits. @out is written only on success. */
int conf_parse_u64(const char *s, const char **end, uint64_t *out);

/* @s whole as a decimal: as conf_parse_u64(), and -EINVAL if anything follows the digits. */
int conf_parse_u64_whole(const char *s, uint64_t *out);

/* "true", "1", "yes", "on" and "false", "0", "no", "off", in any case. 0 or -EINVAL. */
int conf_parse_bool(const char *s, bool *out);

/* conf_parse_size() is declared in config.h. */

#endif
