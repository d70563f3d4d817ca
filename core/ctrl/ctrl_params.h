/* SPDX-License-Identifier: MIT */
/* Tunables of the controller emulator (the controller.* keys).
 * Filled in by conf/ (or by tests), consumed by core/ctrl. Plain data, no locks. */
#ifndef PLUGDISK_CTRL_PARAMS_H
#define PLUGDISK_CTRL_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

struct ctrl_params {
	uint32_t queue_depth;		/* controller.queue_depth: command slots */
	uint32_t workers;		/* controller.workers: backend threads */
	uint64_t bandwidth;		/* controller.bandwidth: B/s, 0 = unlimited */
	uint64_t read_bandwidth;	/* controller.read_bandwidth */
	uint64_t write_bandwidth;	/* controller.write_bandwidth */
	uint64_t iops;			/* controller.iops: commands/s, 0 = unlimited */
	uint64_t read_iops;		/* controller.read_iops */
	uint64_t write_iops;		/* controller.write_iops */
	uint32_t burst_ms;		/* controller.burst_ms */
	uint64_t latency_us;		/* controller.latency_us: every command */
	uint64_t read_latency_us;	/* controller.read_latency_us: 0 = latency_us */
	uint64_t write_latency_us;	/* controller.write_latency_us: 0 = latency_us */
	uint64_t flush_latency_us;	/* controller.flush_latency_us: 0 = latency_us */
	bool latency_absorb;		/* controller.latency_absorb: subtract the path's lateness */
	bool latency_absorb_host;	/* controller.latency_absorb_host: a command back within
					 * the host's turnaround starts where the last one ended */

	/* Latency models (core/ctrl/latency.h). The *_latency_us keys above are the medians. */
	uint32_t latency_dist;		/* controller.latency_dist: enum lat_dist */
	uint32_t latency_tail;		/* controller.latency_tail: enum lat_tail (p99, p99.9) */
	uint64_t latency_tail_us;	/* controller.latency_tail_us: 0 = constant */
	uint64_t read_latency_tail_us;	/* controller.read_latency_tail_us: 0 = latency_tail_us */
	uint64_t write_latency_tail_us;	/* controller.write_latency_tail_us */
	uint64_t flush_latency_tail_us;	/* controller.flush_latency_tail_us */
	uint64_t latency_seed;		/* controller.latency_seed */
	uint32_t rpm;			/* controller.rpm: 0 = no seek model */
	uint64_t seek_settle_us;	/* controller.seek_settle_us: shortest seek */
	uint64_t seek_full_us;		/* controller.seek_full_us: full-stroke seek */
	uint64_t media_rate_outer;	/* controller.media_rate_outer: B/s at LBA 0 */
	uint64_t media_rate_inner;	/* controller.media_rate_inner: B/s at the last LBA */
	uint32_t reorder;		/* controller.reorder: enum ctrl_reorder */
	uint64_t write_cliff_bytes;	/* controller.write_cliff_bytes: 0 = no cliff */
	uint64_t write_cliff_window_ms;	/* controller.write_cliff_window_ms: drain time */
	uint64_t write_cliff_bandwidth;	/* controller.write_cliff_bandwidth: B/s past it */

	/* Cost rule and burst credits (core/ctrl/rate.h). */
	uint32_t iops_size;		/* controller.iops_size: bytes per I/O, 0 = per command */
	uint64_t credit_capacity;	/* controller.credit_capacity: 0 = no credit bucket */
	uint64_t credit_baseline_iops;	/* controller.credit_baseline_iops: the least baseline */
	uint64_t credit_iops_per_gib;	/* controller.credit_iops_per_gib: baseline per GiB */

	uint64_t disk_size;		/* not a key: the disk's size, for per-GiB rates */
};

/* controller.reorder */
enum ctrl_reorder {
	CTRL_REORDER_FIFO,	/* commands start in queue order */
	CTRL_REORDER_SPTF,	/* shortest positioning time first (NCQ), with the seek model */
};

/* Built-in defaults. */
#define CTRL_DEFAULT_QUEUE_DEPTH	32u
#define CTRL_DEFAULT_WORKERS		4u
#define CTRL_DEFAULT_BURST_MS		10u
#define CTRL_DEFAULT_LATENCY_SEED	1u
/* Off for the core's own ideal device (unit tests); conf/ turns it on for the daemon. */
#define CTRL_DEFAULT_LATENCY_ABSORB	false

void ctrl_params_default(struct ctrl_params *cp);
/* Clear every key of @cp that slows the disk down (the stop drains without them). */
void ctrl_params_lift_limits(struct ctrl_params *cp);

#endif
