/* SPDX-License-Identifier: MIT */
/* Text into a bounded buffer: the stats files' lines, written by the queue and every stage. */
#ifndef PLUGDISK_TEXT_H
#define PLUGDISK_TEXT_H

#include <stddef.h>

/* Append printf output to @buf (@len bytes, @len > 0) at *@pos and move *@pos past it, never
 * past the buffer's end: a full buffer keeps a NUL-terminated prefix. For stats text. */
void stats_put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
