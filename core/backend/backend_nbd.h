/* SPDX-License-Identifier: MIT */
/* The NBD backend: the disk is an export of an NBD server (nbdkit, qemu-nbd, a storage server),
 * reached through libnbd. Only the daemon links it (libcore.a stays free of libnbd). */
#ifndef PLUGDISK_BACKEND_NBD_H
#define PLUGDISK_BACKEND_NBD_H

#include <stddef.h>
#include <stdint.h>

#include "core/backend/backend.h"

/* Connect to @uri (an NBD URI, see backend_uri_is_nbd()) with @p's connections and timeout,
 * and start one event-loop thread per connection. @size 0 takes the export's size; any other
 * @size must be the export's size (-BACKEND_ESIZE). Returns 0 or -errno / -BACKEND_ESIZE;
 * @err gets a one-line reason. */
int backend_nbd_open(struct backend *be, const char *uri, const struct backend_params *p,
		     uint64_t size, char *err, size_t errlen);

/* The names of the backend's section of the stats file (core/backend/backend_nbd_stats.c). */
extern const struct stats_table backend_nbd_stats_table;

#endif
