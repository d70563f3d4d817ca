// SPDX-License-Identifier: MIT
/* Histograms, and the text forms of the counters: the `stats` file (its names in
 * core/queue/stats_table.c) and the `stat` file. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util/clock.h"
#include "core/queue/stats.h"

const char *const unplug_reason_name[UNPLUG_NR] = { "idle", "threshold", "size", "timer", "flush" };
const char *const stop_reason_name[STOP_NR] = { "none", "slots", "budget", "head" };

static unsigned int lat_index(uint64_t us)
{
	unsigned int msb, shift;

	if (us < LAT_SUB)
		return (unsigned int)us;
	msb = 63 - (unsigned int)__builtin_clzll(us);
	shift = msb - LAT_SUB_BITS;
	return (msb - LAT_SUB_BITS + 1) * LAT_SUB + (unsigned int)((us >> shift) & (LAT_SUB - 1));
}

/* Lowest value and width of bucket @i. */
static void lat_bounds(unsigned int i, uint64_t *lo, uint64_t *width)
{
	unsigned int group = i / LAT_SUB, sub = i % LAT_SUB;

	if (group == 0) {
		*lo = sub;
		*width = 1;
		return;
	}
	*width = 1ull << (group - 1);
	*lo = ((uint64_t)(LAT_SUB + sub)) << (group - 1);
}

void lat_hist_add(struct lat_hist *h, uint64_t us)
{
	unsigned int i = lat_index(us);

	if (i >= LAT_BUCKETS)
		i = LAT_BUCKETS - 1;
	h->bucket[i]++;
	h->count++;
	h->sum_us += us;
	if (us > h->max_us)
		h->max_us = us;
}

uint64_t lat_hist_quantile(const struct lat_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	rank = (uint64_t)(q * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	for (unsigned int i = 0; i < LAT_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t lo, width, v;

			lat_bounds(i, &lo, &width);
			v = lo + width / 2;
			return v > h->max_us ? h->max_us : v;
		}
	}
	return h->max_us;
}

uint64_t lat_hist_count_below(const struct lat_hist *h, uint64_t us)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < LAT_BUCKETS; i++) {
		uint64_t lo, width;

		lat_bounds(i, &lo, &width);
		if (lo + width > us)
			break;
		n += h->bucket[i];
	}
	return n;
}

unsigned int size_bucket(uint64_t bytes)
{
	unsigned int b;

	if (bytes < (1u << SIZE_MIN_SHIFT))
		return 0;
	b = 63 - (unsigned int)__builtin_clzll(bytes) - SIZE_MIN_SHIFT;
	return b >= SIZE_BUCKETS ? SIZE_BUCKETS - 1 : b;
}

size_t stats_format(const struct stats_snapshot *ss, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	stats_put(buf, len, &pos, "# plugdisk %s\n", ss->name);
	stats_table_write(&queue_stats_table, ss, buf, len, &pos);
	return pos;
}

size_t stats_format_stat(const struct stats_snapshot *ss, char *buf, size_t len)
{
	const struct op_stats *r = &ss->s.op[BIO_OP_READ], *w = &ss->s.op[BIO_OP_WRITE];
	const struct op_stats *d = &ss->s.op[BIO_OP_DISCARD], *f = &ss->s.op[BIO_OP_FLUSH];
#define MERGES(st) ((st)->merges_back + (st)->merges_front + (st)->merges_gap)
#define MS(ns) ((uint64_t)((ns) / NSEC_PER_MSEC))
	int n = snprintf(buf, len,
			 "%8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " "
			 "%8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " "
			 "%8" PRIu64 " %8" PRIu64 " %8" PRIu64 " "
			 "%8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " "
			 "%8" PRIu64 " %8" PRIu64 "\n",
			 r->ios, MERGES(r), r->bytes / 512, MS(r->wait_ns),
			 w->ios, MERGES(w), w->bytes / 512, MS(w->wait_ns),
			 ss->queued_requests + ss->in_flight, MS(ss->s.busy_ns), MS(ss->s.weighted_ns),
			 d->ios, MERGES(d), d->bytes / 512, MS(d->wait_ns),
			 f->ios, MS(f->wait_ns));
#undef MERGES
#undef MS
	return n < 0 ? 0 : ((size_t)n >= len ? len - 1 : (size_t)n);
}
