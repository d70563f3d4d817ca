/* SPDX-License-Identifier: MIT */
/* The names of MOUNTPOINT/stats with their units and meanings (daemon/client/stats_names.c). */
#ifndef PLUGDISK_STATS_NAMES_H
#define PLUGDISK_STATS_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A counter only grows, between resets of the stats; a gauge is a figure of the moment. */
enum stats_kind { STATS_GAUGE, STATS_COUNTER };

struct stats_name {
	const char *pattern;	/* "{read,write}_bios": {a,b,} alternatives, N a number */
	enum stats_kind kind;
	const char *unit;	/* as doc/stats.md gives it: bytes, µs, 0/1, count... */
	const char *help;	/* one line: Prometheus' HELP */
	const char *doc;	/* its meaning in doc/stats.md's tables (markdown), generated from here */
};

extern const struct stats_name stats_names[];
extern const size_t stats_nr_names;

/* Print the stats file's @text (split in place) in Prometheus' text format to @f, as
 * `plugdisk stats --format=prometheus` does (daemon/client/stats_client.c). 0 or -ENOMEM. */
int stats_to_prometheus(char *text, FILE *f);

/* The entry whose pattern matches @name, or NULL. */
const struct stats_name *stats_name_find(const char *name);

/* Whether @pattern matches the whole of @name. */
bool stats_pattern_match(const char *pattern, const char *name);

#endif
