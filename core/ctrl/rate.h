/* SPDX-License-Identifier: MIT */
/* Token buckets with debt for the controller's bandwidth and IOPS limits.
 *
 * Each bucket is kept as the time at which it will be empty (a "theoretical arrival time",
 * as in GCRA) rather than as a token count: level = (now - tat) * rate, capped at the burst.
 * A command may start when every bucket that covers it has a level >= 0 (tat <= now).
 * Starting charges its whole cost and may drive a bucket into debt (tat > now), so a large
 * merged request is never starved by a small bucket; the debt is the wait for the next one.
 * The division remainder is carried, so the long-run rate is exact to the nanosecond.
 *
 * Cost rule: with an I/O size (controller.iops_size), a read or write of up to that size
 * counts as one I/O against the IOPS buckets and a larger one as ceil(len / size), as EBS
 * and Azure count I/O. The queue merges before it charges, so merged sequential I/O counts
 * by its merged size, which is EBS's rule too.
 *
 * Burst credits: an optional credit bucket (EBS gp2, and the like) of controller.credit_capacity
 * I/O credits that earns the baseline rate (controller.credit_baseline_iops, or
 * controller.credit_iops_per_gib per GiB of disk if that is more) and starts full. Every I/O
 * spends one credit, so while credits last the disk runs at controller.iops (the burst rate)
 * and once they are gone at the baseline. It is a bucket like the others, only its burst is
 * the capacity. A baseline at or above the burst rate makes the baseline the IOPS limit and
 * the credits moot (gp2 above 1 TiB).
 *
 * Every function takes the time as a parameter: unit tests drive them with a fake clock.
 * No locking here: the controller calls these with its queue lock held. */
#ifndef PLUGDISK_RATE_H
#define PLUGDISK_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/stage/request.h"
#include "core/ctrl/ctrl_params.h"

struct rate_bucket {
	uint64_t rate;		/* units per second; 0 = unlimited */
	uint64_t burst_ns;	/* the most budget that can build up while idle, as time */
	int64_t tat;		/* ns: when the bucket is empty */
	uint64_t rem;		/* carried remainder of units * 1e9 / rate */
};

enum { RATE_ALL, RATE_READ, RATE_WRITE, RATE_NR_DIRS };

struct rate_credit {
	struct rate_bucket b;	/* rate = baseline I/O per second; burst = the capacity */
	uint64_t capacity;	/* credits; 0 = no credit bucket */
	uint64_t spent;		/* credits spent since start */
	int64_t win_start;	/* ns: start of the spend-rate window */
	uint64_t win_spent;	/* credits spent in that window */
	uint64_t last_rate;	/* credits/s spent over the last full window */
};

struct rate {
	struct rate_bucket bw[RATE_NR_DIRS];	/* bytes per second */
	struct rate_bucket iops[RATE_NR_DIRS];	/* I/Os per second (see the cost rule) */
	struct rate_credit credit;		/* burst credits */
	uint32_t iops_size;			/* bytes per I/O; 0 = one I/O per command */
};

/* Set up every bucket from @p, full (a burst's worth of budget) at @now. */
void rate_init(struct rate *r, const struct ctrl_params *p, int64_t now);

/* Apply new rates at @now. A bucket keeps its level in units (tokens or debt) across the
 * change; the debt is then paid at the new rate. A limit set to 0 drops its bucket. */
void rate_reconfigure(struct rate *r, const struct ctrl_params *p, int64_t now);

/* Whether a command of @op may start at @now. If not, *ready_at is when it may. */
bool rate_has_budget(const struct rate *r, enum bio_op op, int64_t now, int64_t *ready_at);

/* Charge a command of @op moving @bytes (discard and flush move none) at @now. */
void rate_charge(struct rate *r, enum bio_op op, uint64_t bytes, int64_t now);

/* A bucket's level at @now in its units: negative is debt. 0 for an unlimited bucket. */
int64_t rate_bucket_level(const struct rate_bucket *b, int64_t now);

/* I/Os a command of @op moving @bytes counts as under the cost rule (@iops_size 0: one). */
uint64_t rate_ios(uint32_t iops_size, enum bio_op op, uint64_t bytes);

/* The baseline rate of the credit bucket of @p for a disk of p->disk_size bytes. */
uint64_t rate_credit_baseline(const struct ctrl_params *p);

/* Credits earned per second at @now: the baseline, or 0 while the bucket is full or off. */
uint64_t rate_credit_earn_rate(const struct rate *r, int64_t now);

/* Credits spent per second over the last second or so at @now. */
uint64_t rate_credit_spend_rate(const struct rate *r, int64_t now);

/* Whether any bucket is limited. */
bool rate_is_limited(const struct rate *r);

#endif
