/* SPDX-License-Identifier: MIT */
/* Every name of MOUNTPOINT/stats, with its kind, unit and meaning: the tables of the producers
 * that write them (core/util/stats_table.h), gathered in the stats file's order. */
#ifndef PLUGDISK_STATS_NAMES_H
#define PLUGDISK_STATS_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/util/stats_table.h"

/* The @k-th of the stats file's tables (the queue's, each stage's in core/stage/stages.c's
 * order, the NBD backend's); NULL past the last. */
const struct stats_table *stats_table_at(size_t k);

/* The entry whose pattern matches @name, and in *@t (when not NULL) its table; or NULL. */
const struct stats_name *stats_name_find(const char *name, const struct stats_table **t);

/* stats_table_check() on every table: 0, or -EINVAL with the first fault in @err. */
int stats_names_check(char *err, size_t errlen);

/* Print the stats file's @text (split in place) in Prometheus' text format to @f, as
 * `plugdisk stats --format=prometheus` does (daemon/client/stats_client.c). 0 or -ENOMEM. */
int stats_to_prometheus(char *text, FILE *f);

#endif
