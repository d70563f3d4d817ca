/* SPDX-License-Identifier: MIT */
/* Counters of the queue and the controller, and their text forms (the `stats` and `stat` files).
 *
 * Every counter lives in struct queue_stats, inside the queue, and is updated with q->lock
 * held: the data path takes that lock anyway to submit, merge, dispatch and complete, so the
 * counters add no lock and no atomic operation. Readers copy them out under the same lock. */
#ifndef PLUGDISK_STATS_H
#define PLUGDISK_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/stage/request.h"
#include "core/queue/params.h"
#include "core/ctrl/ctrl_params.h"
#include "core/ctrl/rate.h"
#include "core/util/stats_table.h"
#include "core/util/text.h"

/* Latency histogram: log-linear, 16 sub-buckets per power of two (<= 6.25% error), in us. */
#define LAT_SUB_BITS 4
#define LAT_SUB (1u << LAT_SUB_BITS)
#define LAT_BUCKETS ((64 - LAT_SUB_BITS) * LAT_SUB)

/* Request sizes: power-of-two buckets from 512 B ([512, 1K)) to >= 16 MiB. */
#define SIZE_MIN_SHIFT 9
#define SIZE_BUCKETS 16

enum unplug_reason { UNPLUG_IDLE, UNPLUG_THRESHOLD, UNPLUG_SIZE, UNPLUG_TIMER, UNPLUG_FLUSH, UNPLUG_NR };
enum stop_reason { STOP_NONE, STOP_SLOTS, STOP_BUDGET, STOP_HEAD, STOP_NR };

extern const char *const unplug_reason_name[UNPLUG_NR];
extern const char *const stop_reason_name[STOP_NR];

struct lat_hist {
	uint64_t count;
	uint64_t sum_us;	/* every latency added, summed (a histogram's _sum) */
	uint64_t max_us;
	uint64_t bucket[LAT_BUCKETS];
};

struct op_stats {
	uint64_t bios;		/* bios submitted */
	uint64_t ios;		/* requests the controller completed */
	uint64_t merges_back, merges_front, merges_gap;
	uint64_t bytes;		/* bytes completed */
	uint64_t errors;	/* requests that failed */
	uint64_t ticks_ns;	/* service time: dispatch to completion, summed */
	uint64_t wait_ns;	/* request lifetime: creation to completion, summed */
	uint64_t size_hist[SIZE_BUCKETS];	/* dispatched request sizes */
	struct lat_hist lat;	/* per bio: submit to completion */
};

struct queue_stats {
	struct op_stats op[BIO_OP_NR];
	uint64_t plugs;
	uint64_t unplugs[UNPLUG_NR];
	uint64_t plugged_ns;		/* time spent plugged */
	uint64_t stopped_ns;		/* time spent stopped */
	uint64_t stops[STOP_NR];	/* by reason; [STOP_NONE] unused */
	uint64_t starts[STOP_NR];	/* by the reason of the stop they ended */
	uint64_t depletion_waits;	/* submitters that waited for a free request */
	uint64_t busy_ns;		/* time with requests queued or in flight */
	uint64_t weighted_ns;		/* integral of (queued + in flight) over time */
};

/* A consistent copy of everything the stats files show. */
struct stats_snapshot {
	char name[72];
	uint64_t now_ns;
	uint64_t disk_size;
	int plugged, stopped;
	int held;			/* held by hand: stop, plug or freeze */
	enum stop_reason stop_reason;
	uint64_t queued_requests, queued_bytes;
	uint64_t in_flight;		/* commands the controller holds */
	struct queue_params qp;
	struct ctrl_params cp;
	int64_t bw_level[RATE_NR_DIRS], iops_level[RATE_NR_DIRS];
	int64_t credit_level;		/* burst credits: balance (see core/ctrl/rate.h) */
	uint64_t credit_capacity, credit_baseline;	/* 0, 0 without a credit bucket */
	uint64_t credit_earn, credit_spend;	/* credits/s */
	uint64_t credits_spent;		/* since start */
	uint64_t cache_bytes;		/* write cliff: bytes in the fast cache */
	uint64_t cliff_bytes;		/* write cliff: bytes written past it since start */
	uint64_t absorb_ns;		/* path's cost absorbed into each service time now */
	uint64_t host_ns;		/* the host's turnaround, median */
	uint64_t host_starts;		/* commands started at the last one's end across it */
	struct queue_stats s;
	/* The FUSE transport, filled in by the daemon (NULL: "classic"). */
	const char *transport;		/* "classic" or "io_uring" */
	uint32_t ring_queues, ring_depth;	/* io_uring queues and entries per queue */
	uint64_t ring_requests;		/* requests received through the rings */
	uint64_t ring_commit_waits;	/* replies that had to wake their queue's thread */
	uint64_t parked;		/* classic: requests parked by the last free thread now */
	uint64_t parks;			/* classic: requests ever parked */
	uint64_t parked_peak;		/* classic: most requests parked at once */
	uint32_t max_background;	/* the kernel's background limit in force */
	uint64_t opens_fenced;		/* opens of disk a power cut fenced, counted at poweron */
	uint64_t requests_fenced;	/* requests of those opens refused with EIO */
};

void lat_hist_add(struct lat_hist *h, uint64_t us);
/* The value at quantile @q (0..1) in us: a bucket's midpoint, never above the max. */
uint64_t lat_hist_quantile(const struct lat_hist *h, double q);
/* How many values were under @us (a power of two: a bucket boundary, so the count is
 * exact). For the stats file's latency histogram, whose bounds are 1 us << 0..LAT_LE_MAX. */
uint64_t lat_hist_count_below(const struct lat_hist *h, uint64_t us);
#define LAT_LE_MAX 24	/* the last bound: 2^24 us, about 16.8 s */
unsigned int size_bucket(uint64_t bytes);

/* The names stats_format() writes (core/queue/stats_table.c). */
extern const struct stats_table queue_stats_table;

/* Render the queue's part of the `stats` file: "# plugdisk NAME", then queue_stats_table's
 * names (the stages' follow, chain_stats()). Returns the length written (always < @len,
 * NUL-terminated). */
size_t stats_format(const struct stats_snapshot *ss, char *buf, size_t len);

/* Render the 17-field /sys/block/<dev>/stat line. */
size_t stats_format_stat(const struct stats_snapshot *ss, char *buf, size_t len);

#endif
