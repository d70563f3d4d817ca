// SPDX-License-Identifier: MIT
/* The stats file's names, gathered from the tables of their producers: the queue's
 * (core/queue/stats_table.c), each stage's (stage_ops.stats_table, in core/stage/stages.c's
 * order) and the NBD backend's (core/backend/backend_nbd_stats.c). Each name is written once,
 * in its producer's table, which also writes its lines; `plugdisk stats --list-names` prints
 * them, doc/stats.md's tables are generated from them (doc/gen-stats.sh), and the Prometheus
 * names and `plugdisk top` read them. */
#include <errno.h>
#include <stddef.h>

#include "core/backend/backend_nbd.h"
#include "core/queue/stats.h"
#include "core/stage/chain.h"
#include "daemon/client/stats_names.h"

const struct stats_table *stats_table_at(size_t k)
{
	if (k-- == 0)
		return &queue_stats_table;
	for (size_t i = 0; chain_stages[i]; i++) {
		if (!chain_stages[i]->stats_table)
			continue;
		if (k-- == 0)
			return chain_stages[i]->stats_table;
	}
	return k == 0 ? &backend_nbd_stats_table : NULL;
}

const struct stats_name *stats_name_find(const char *name, const struct stats_table **tp)
{
	const struct stats_table *t;

	for (size_t k = 0; (t = stats_table_at(k)); k++)
		for (size_t i = 0; i < t->nr; i++)
			if (stats_pattern_match(t->names[i].pattern, name)) {
				if (tp)
					*tp = t;
				return &t->names[i];
			}
	return NULL;
}

int stats_names_check(char *err, size_t errlen)
{
	const struct stats_table *t;

	for (size_t k = 0; (t = stats_table_at(k)); k++)
		if (stats_table_check(t, err, errlen))
			return -EINVAL;
	return 0;
}
