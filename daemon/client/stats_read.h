/* SPDX-License-Identifier: MIT */
/* Reading a mount's stats file whole, for the client tools (top, stats). */
#ifndef PLUGDISK_STATS_READ_H
#define PLUGDISK_STATS_READ_H

#include <stddef.h>

/* The largest stats file a client accepts. */
#define STATS_READ_MAX (1u << 20)

/* Read @path in one open (one open is one consistent snapshot) into *@buf, NUL-terminated,
 * growing it as needed (*@cap is its size; both may start as NULL, 0 and are kept for reuse).
 * 0, or -errno: -EFBIG over STATS_READ_MAX, -ENOMEM, pd_mount_file_open()'s error (-ENODEV:
 * @path is not a plugdisk mount's file), or the read's error. */
int stats_read_file(const char *path, char **buf, size_t *cap);

#endif
