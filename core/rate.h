/* SPDX-License-Identifier: MIT */
/* Token buckets with debt for the controller's bandwidth and IOPS limits.
 *
 * Each bucket is kept as the time at which it will be empty (a "theoretical arrival time",
 * as in GCRA) rather than as a token count: level = (now - tat) * rate, capped at the burst.
 * A command may start when every bucket that covers it has a level >= 0 (tat <= now).
 * Starting charges its whole cost and may drive a bucket into debt (tat > now), so a large
 * merged request is never starved by a small bucket; the debt is the wait for the next one.
 * The division remainder is carried, so the long-run rate is exact to the nanosecond.
 * Every function takes the time as a parameter: unit tests drive them with a fake clock.
 * No locking here: the controller calls these with its queue lock held. */
#ifndef PLUGDISK_RATE_H
#define PLUGDISK_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/bio.h"
#include "core/params.h"

struct rate_bucket {
	uint64_t rate;		/* units per second; 0 = unlimited */
	uint64_t burst_ns;	/* the most budget that can build up while idle, as time */
	int64_t tat;		/* ns: when the bucket is empty */
	uint64_t rem;		/* carried remainder of units * 1e9 / rate */
};

enum { RATE_ALL, RATE_READ, RATE_WRITE, RATE_NR_DIRS };

struct rate {
	struct rate_bucket bw[RATE_NR_DIRS];	/* bytes per second */
	struct rate_bucket iops[RATE_NR_DIRS];	/* commands per second */
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

/* Whether any bucket is limited. */
bool rate_is_limited(const struct rate *r);

#endif
