// SPDX-License-Identifier: MIT
/* The write cache's lines of the stats file (doc/stats.md names them). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/cache/cache.h"

size_t cache_format_stats(struct cache *c, char *buf, size_t len)
{
	struct cache_stats st;
	int n;

	memset(&st, 0, sizeof(st));
	st.powered = true;
	if (c)
		cache_snapshot(c, &st, NULL);
	n = snprintf(buf, len,
		     "\n# cache\n"
		     "cache_writeback %d\n"
		     "cache_powered %d\n"
		     "cache_size_bytes %" PRIu64 "\n"
		     "cache_dirty_bytes %" PRIu64 "\n"
		     "cache_dirty_writes %" PRIu64 "\n"
		     "cache_destaged_bytes %" PRIu64 "\n"
		     "cache_destaged_writes %" PRIu64 "\n"
		     "cache_destage_rate_bytes %" PRIu64 "\n"
		     "cache_flushes %" PRIu64 "\n"
		     "cache_flushes_ignored %" PRIu64 "\n"
		     "cache_epoch %" PRIu64 "\n"
		     "cache_durable_epoch %" PRIu64 "\n"
		     "cache_powercuts %" PRIu64 "\n"
		     "cache_last_cut_pending_bytes %" PRIu64 "\n"
		     "cache_last_cut_dropped_bytes %" PRIu64 "\n"
		     "cache_last_cut_seed %" PRIu64 "\n"
		     "cache_log_errors %" PRIu64 "\n"
		     "cache_log_lost_records %" PRIu64 "\n",
		     c ? 1 : 0, st.powered ? 1 : 0, st.size, st.dirty_bytes, st.dirty_writes,
		     st.destaged_bytes, st.destaged_writes, st.p.destage_rate, st.flushes,
		     st.flushes_ignored, st.epoch, st.durable_epoch, st.powercuts,
		     st.last_cut_pending, st.last_cut_dropped, st.last_cut_seed, st.log_errors,
		     st.log_lost_records);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len ? len - 1 : 0;
}
