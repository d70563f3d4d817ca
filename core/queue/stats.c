// SPDX-License-Identifier: MIT
/* Histograms and the text forms of the counters: the `stats` and `stat` files. */
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

struct out {
	char *buf;
	size_t len, pos;
};


#define put(o, ...) stats_put((o)->buf, (o)->len, &(o)->pos, __VA_ARGS__)

static void kv(struct out *o, const char *name, uint64_t v)
{
	put(o, "%s %" PRIu64 "\n", name, v);
}

static void kv_op(struct out *o, const char *op, const char *name, uint64_t v)
{
	put(o, "%s_%s %" PRIu64 "\n", op, name, v);
}

static void size_label(unsigned int i, char *buf, size_t len)
{
	uint64_t b = 1ull << (i + SIZE_MIN_SHIFT);

	if (b >= 1024 * 1024)
		snprintf(buf, len, "%" PRIu64 "m", b >> 20);
	else if (b >= 1024)
		snprintf(buf, len, "%" PRIu64 "k", b >> 10);
	else
		snprintf(buf, len, "%" PRIu64, b);
}

static const char *const dir_name[RATE_NR_DIRS] = { "", "read_", "write_" };

size_t stats_format(const struct stats_snapshot *ss, char *buf, size_t len)
{
	const struct queue_stats *s = &ss->s;
	const uint64_t bw[RATE_NR_DIRS] = { ss->cp.bandwidth, ss->cp.read_bandwidth,
					    ss->cp.write_bandwidth };
	const uint64_t io[RATE_NR_DIRS] = { ss->cp.iops, ss->cp.read_iops, ss->cp.write_iops };
	struct out o = { buf, len, 0 };
	uint64_t stops = 0, starts = 0;
	char name[64];

	buf[0] = '\0';
	put(&o, "# plugdisk %s\n", ss->name);
	kv(&o, "disk_size_bytes", ss->disk_size);
	/* CLOCK_MONOTONIC at the snapshot: rates computed from two snapshots use its delta. */
	kv(&o, "snapshot_us", ss->now_ns / NSEC_PER_USEC);

	put(&o, "\n# state\n");
	kv(&o, "plugged", (uint64_t)ss->plugged);
	kv(&o, "stopped", (uint64_t)ss->stopped);
	put(&o, "stop_reason %s\n", stop_reason_name[ss->stopped ? ss->stop_reason : STOP_NONE]);
	kv(&o, "held", (uint64_t)ss->held);
	kv(&o, "queued_requests", ss->queued_requests);
	kv(&o, "queued_bytes", ss->queued_bytes);
	kv(&o, "in_flight", ss->in_flight);
	kv(&o, "queue_depth", ss->cp.queue_depth);
	for (int d = 0; d < RATE_NR_DIRS; d++) {
		put(&o, "bucket_%sbandwidth_bytes %" PRId64 "\n", dir_name[d], ss->bw_level[d]);
		put(&o, "bucket_%siops %" PRId64 "\n", dir_name[d], ss->iops_level[d]);
	}
	put(&o, "credit_balance %" PRId64 "\n", ss->credit_level);
	kv(&o, "credit_earn_per_s", ss->credit_earn);
	kv(&o, "credit_spend_per_s", ss->credit_spend);
	kv(&o, "credits_spent", ss->credits_spent);
	kv(&o, "write_cache_bytes", ss->cache_bytes);
	kv(&o, "write_cliff_bytes", ss->cliff_bytes);
	kv(&o, "latency_absorbed_us", ss->absorb_ns / NSEC_PER_USEC);
	kv(&o, "latency_host_us", ss->host_ns / NSEC_PER_USEC);
	kv(&o, "latency_host_starts", ss->host_starts);

	put(&o, "\n# limits and settings\n");
	for (int d = 0; d < RATE_NR_DIRS; d++) {
		put(&o, "limit_%sbandwidth_bytes %" PRIu64 "\n", dir_name[d], bw[d]);
		put(&o, "limit_%siops %" PRIu64 "\n", dir_name[d], io[d]);
	}
	kv(&o, "limit_burst_ms", ss->cp.burst_ms);
	kv(&o, "limit_iops_size_bytes", ss->cp.iops_size);
	kv(&o, "limit_credit_capacity", ss->credit_capacity);
	kv(&o, "limit_credit_baseline_iops", ss->credit_baseline);
	kv(&o, "limit_latency_us", ss->cp.latency_us);
	kv(&o, "limit_read_latency_us", ss->cp.read_latency_us);
	kv(&o, "limit_write_latency_us", ss->cp.write_latency_us);
	kv(&o, "limit_flush_latency_us", ss->cp.flush_latency_us);
	kv(&o, "latency_absorb_host", ss->cp.latency_absorb_host);
	kv(&o, "queue_plug", ss->qp.plug);
	kv(&o, "queue_unplug_threshold", ss->qp.unplug_threshold);
	kv(&o, "queue_unplug_delay_us", ss->qp.unplug_delay_us);
	kv(&o, "queue_nomerges", ss->qp.nomerges);
	kv(&o, "queue_max_request_size_bytes", ss->qp.max_request_size);
	kv(&o, "queue_nr_requests", ss->qp.nr_requests);

	put(&o, "\n# FUSE transport\n");
	put(&o, "fuse_transport %s\n", ss->transport ? ss->transport : "classic");
	kv(&o, "fuse_ring_queues", ss->ring_queues);
	kv(&o, "fuse_ring_depth", ss->ring_depth);
	kv(&o, "fuse_ring_requests", ss->ring_requests);
	kv(&o, "fuse_ring_commit_waits", ss->ring_commit_waits);
	kv(&o, "fuse_parked", ss->parked);
	kv(&o, "fuse_parks", ss->parks);
	kv(&o, "fuse_parked_peak", ss->parked_peak);
	kv(&o, "fuse_max_background", ss->max_background);
	kv(&o, "disk_opens_fenced", ss->opens_fenced);
	kv(&o, "disk_requests_fenced", ss->requests_fenced);

	put(&o, "\n# plugging, stop and start\n");
	kv(&o, "plugs", s->plugs);
	for (int r = 0; r < UNPLUG_NR; r++) {
		snprintf(name, sizeof(name), "unplug_%s", unplug_reason_name[r]);
		kv(&o, name, s->unplugs[r]);
	}
	kv(&o, "plugged_us", s->plugged_ns / NSEC_PER_USEC);
	kv(&o, "stopped_us", s->stopped_ns / NSEC_PER_USEC);
	for (int r = STOP_SLOTS; r < STOP_NR; r++) {
		stops += s->stops[r];
		starts += s->starts[r];
	}
	kv(&o, "queue_stops", stops);
	kv(&o, "queue_starts", starts);
	for (int r = STOP_SLOTS; r < STOP_NR; r++) {
		snprintf(name, sizeof(name), "queue_stops_%s", stop_reason_name[r]);
		kv(&o, name, s->stops[r]);
		snprintf(name, sizeof(name), "queue_starts_%s", stop_reason_name[r]);
		kv(&o, name, s->starts[r]);
	}
	kv(&o, "depletion_waits", s->depletion_waits);

	put(&o, "\n# device time (as in /sys/block/<dev>/stat)\n");
	kv(&o, "io_ticks_us", s->busy_ns / NSEC_PER_USEC);
	kv(&o, "time_in_queue_us", s->weighted_ns / NSEC_PER_USEC);

	for (int op = 0; op < BIO_OP_NR; op++) {
		const struct op_stats *st = &s->op[op];
		const char *n = bio_op_name[op];
		uint64_t merges = st->merges_back + st->merges_front + st->merges_gap;

		put(&o, "\n# %s\n", n);
		kv_op(&o, n, "bios", st->bios);
		kv_op(&o, n, "ios", st->ios);
		kv_op(&o, n, "merges", merges);
		kv_op(&o, n, "merges_back", st->merges_back);
		kv_op(&o, n, "merges_front", st->merges_front);
		kv_op(&o, n, "merges_gap", st->merges_gap);
		kv_op(&o, n, "bytes", st->bytes);
		kv_op(&o, n, "errors", st->errors);
		kv_op(&o, n, "ticks_us", st->ticks_ns / NSEC_PER_USEC);
		kv_op(&o, n, "wait_us", st->wait_ns / NSEC_PER_USEC);
		kv_op(&o, n, "avg_request_bytes", st->ios ? st->bytes / st->ios : 0);
		kv_op(&o, n, "lat_p50_us", lat_hist_quantile(&st->lat, 0.50));
		kv_op(&o, n, "lat_p90_us", lat_hist_quantile(&st->lat, 0.90));
		kv_op(&o, n, "lat_p99_us", lat_hist_quantile(&st->lat, 0.99));
		kv_op(&o, n, "lat_p999_us", lat_hist_quantile(&st->lat, 0.999));
		kv_op(&o, n, "lat_max_us", st->lat.max_us);
		kv_op(&o, n, "fault_errors", ss->faults.errors[op]);
		kv_op(&o, n, "fault_delays", ss->faults.delays[op]);
		kv_op(&o, n, "fault_stalls", ss->faults.stalls[op]);
		kv_op(&o, n, "fault_lies", ss->faults.lies[op]);
		kv_op(&o, n, "fault_corruptions", ss->faults.corrupts[op]);
		if (op == BIO_OP_FLUSH)
			continue;
		for (unsigned int i = 0; i < SIZE_BUCKETS; i++) {
			char label[16];

			size_label(i, label, sizeof(label));
			snprintf(name, sizeof(name), "size_%s", label);
			kv_op(&o, n, name, st->size_hist[i]);
		}
	}

	/* Cumulative, as Prometheus histograms are: bios of each op completed in under 1, 2,
	 * 4 ... us, and all of them (the lat_p* lines above are read off the same counts). */
	put(&o, "\n# latency histogram: bios completed in under N us, and all\n");
	for (int op = 0; op < BIO_OP_NR; op++) {
		const struct lat_hist *h = &s->op[op].lat;

		for (unsigned int k = 0; k <= LAT_LE_MAX; k++)
			put(&o, "%s_lat_le_%" PRIu64 "us %" PRIu64 "\n", bio_op_name[op], (uint64_t)1 << k,
			    lat_hist_count_below(h, (uint64_t)1 << k));
		kv_op(&o, bio_op_name[op], "lat_count", h->count);
		kv_op(&o, bio_op_name[op], "lat_sum_us", h->sum_us);
	}

	/* Per active fault: its id is in the name, so these lines come and go with faults. */
	put(&o, "\n# faults\n");
	kv(&o, "faults_active", ss->faults.nr);
	kv(&o, "faults_held", ss->faults.held);
	for (unsigned int i = 0; i < ss->faults.nr; i++) {
		snprintf(name, sizeof(name), "fault_%u_matched", ss->faults.f[i].id);
		kv(&o, name, ss->faults.f[i].matched);
		snprintf(name, sizeof(name), "fault_%u_injected", ss->faults.f[i].id);
		kv(&o, name, ss->faults.f[i].injected);
	}
	return o.pos;
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
