// SPDX-License-Identifier: MIT
/* The write cache's stats names (core/util/stats_table.h) and its lines of the stats file. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "core/cache/cache.h"

/* What the names read: the cache's counters, and whether there is a cache at all. */
struct cache_stats_view {
	bool writeback;		/* cache.mode = writeback: the stage is in the chain */
	struct cache_stats st;
};

#define F(member) STATS_FIELD(struct cache_stats_view, member)

static const struct stats_name cache_names[] = {
	{ "cache_writeback", STATS_GAUGE, "0/1",
	  "cache.mode is writeback; without it every cache_* value below is 0, but cache_powered, which is 1",
	  "`cache.mode` is `writeback`; without it every `cache_*` value below is 0, but `cache_powered`, which is 1",
	  .section = "cache", F(writeback) },
	{ "cache_powered", STATS_GAUGE, "0/1",
	  "0 after a power cut, until poweron",
	  "0 after a power cut, until `poweron`",
	  F(st.powered) },
	{ "cache_size_bytes", STATS_GAUGE, "bytes",
	  "cache.size",
	  "`cache.size`",
	  F(st.size) },
	{ "cache_dirty_bytes", STATS_GAUGE, "bytes",
	  "completed writes not yet on the image: what a cut now could lose",
	  "completed writes not yet on the image: what a cut now could lose",
	  F(st.dirty_bytes) },
	{ "cache_dirty_writes", STATS_GAUGE, "writes",
	  "the same, in writes",
	  "the same, in writes",
	  F(st.dirty_writes) },
	{ "cache_destaged_bytes", STATS_COUNTER, "bytes",
	  "written from the cache to the image (its rate of change is the destage rate)",
	  "written from the cache to the image (its rate of change is the destage rate)",
	  F(st.destaged_bytes) },
	{ "cache_destaged_writes", STATS_COUNTER, "writes",
	  "the same, in writes",
	  "the same, in writes",
	  F(st.destaged_writes) },
	{ "cache_destage_rate_bytes", STATS_GAUGE, "bytes/s",
	  "cache.destage_rate in force",
	  "`cache.destage_rate` in force",
	  F(st.p.destage_rate) },
	{ "cache_flushes", STATS_COUNTER, "count",
	  "flushes the cache served",
	  "flushes the cache served",
	  F(st.flushes) },
	{ "cache_flushes_ignored", STATS_COUNTER, "count",
	  "of those, flushes that cache.flush = ignore answered without making anything durable",
	  "of those, flushes that `cache.flush = ignore` answered without making anything durable",
	  F(st.flushes_ignored) },
	{ "cache_epoch", STATS_GAUGE, "count",
	  "the open flush epoch (one more than the flushes seen)",
	  "the open flush epoch (one more than the flushes seen)",
	  F(st.epoch) },
	{ "cache_durable_epoch", STATS_GAUGE, "count",
	  "every epoch up to this one is on the image and synced",
	  "every epoch up to this one is on the image and synced",
	  F(st.durable_epoch) },
	{ "cache_powercuts", STATS_COUNTER, "count",
	  "power cuts since the start",
	  "power cuts since the start",
	  F(st.powercuts) },
	{ "cache_last_cut_pending_bytes", STATS_GAUGE, "bytes",
	  "dirty bytes when the last cut came",
	  "dirty bytes when the last cut came",
	  F(st.last_cut_pending) },
	{ "cache_last_cut_dropped_bytes", STATS_GAUGE, "bytes",
	  "of those, bytes the last cut lost",
	  "of those, bytes the last cut lost",
	  F(st.last_cut_dropped) },
	{ "cache_last_cut_seed", STATS_GAUGE, "number",
	  "the seed of the last cut: the same seed over the same writes makes the same choices",
	  "the seed of the last cut: the same seed over the same writes makes the same choices",
	  F(st.last_cut_seed) },
	{ "cache_log_errors", STATS_COUNTER, "count",
	  "write errors on cache.log: the log stops at the first and is cut short there (replay and explore say so, explore exits 5); not zeroed by a reset",
	  "write errors on `cache.log`: the log stops at the first and is cut short there (`replay` and `explore` say so, `explore` exits 5); not zeroed by a reset",
	  F(st.log_errors) },
	{ "cache_log_lost_records", STATS_COUNTER, "records",
	  "records (writes, flushes, marks, ...) cache.log could not hold after its write error; not zeroed by a reset",
	  "records (writes, flushes, marks, ...) `cache.log` could not hold after its write error; not zeroed by a reset",
	  F(st.log_lost_records) },
};

const struct stats_table cache_stats_table = {
	.producer = "cache",
	.names = cache_names,
	.nr = STATS_TABLE_SIZE(cache_names),
};

size_t cache_format_stats(struct cache *c, char *buf, size_t len)
{
	struct cache_stats_view v;

	memset(&v, 0, sizeof(v));
	v.writeback = c != NULL;
	v.st.powered = true;
	if (c)
		cache_snapshot(c, &v.st, NULL);
	return stats_table_format(&cache_stats_table, &v, buf, len);
}
