/* SPDX-License-Identifier: MIT */
/* Latency models of the controller: how long the emulated device takes over one command.
 *
 * Three models add up:
 *   - a distribution per op: constant, uniform, normal, lognormal or a Pareto tail, given by
 *     its median (controller.{,read_,write_,flush_}latency_us) and its p99 or p99.9
 *     (controller.*latency_tail_us, controller.latency_tail), drawn from a seeded generator
 *     (controller.latency_seed) so that a run can be repeated;
 *   - a seek model for a rotating disk (controller.rpm > 0): reads and writes wait for the
 *     head to move (settle plus a square-root curve up to the full stroke, over the LBA
 *     distance from where the previous command ended), for the sector to come round (the
 *     platter turns at rpm from time 0, so the wait is known in advance, as SPTF needs), and
 *     for the transfer at the media rate of the sector's zone (16 zones from
 *     media_rate_outer at LBA 0 down to media_rate_inner at the last). There is one head:
 *     these commands run one after the other, whatever the queue depth; the controller
 *     admits the next only when the head is free (ctrl_admit_locked: CTRL_ADMIT_HEAD), so that
 *     the waiting ones stay in the queue for SPTF (ctrl_pick_locked) to choose from;
 *   - a write cliff for flash (controller.write_cliff_bytes > 0): a fast write cache (an SLC
 *     cache) of that many bytes drains in write_cliff_window_ms; writes that find it full
 *     run at write_cliff_bandwidth, one after the other, on top of their other latency.
 *
 * No locking here: the controller calls these with its queue lock held. Every function takes
 * the time as a parameter, so unit tests drive them with a fake clock. */
#ifndef PLUGDISK_LATENCY_H
#define PLUGDISK_LATENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/stage/request.h"
#include "core/ctrl/ctrl_params.h"

enum lat_dist {
	LAT_DIST_CONSTANT,
	LAT_DIST_UNIFORM,	/* symmetric about the median */
	LAT_DIST_NORMAL,	/* cut at 0 */
	LAT_DIST_LOGNORMAL,
	LAT_DIST_PARETO,	/* Pareto: a heavy tail above a floor */
	LAT_DIST_NR,
};

enum lat_tail {
	LAT_TAIL_P99,
	LAT_TAIL_P999,
	LAT_TAIL_NR,
};

/* Names as the config spells them: "constant", ...; "p99", "p99.9"; "fifo", "sptf".
 * NULL-terminated, as conf/'s enum keys take them. */
extern const char *const lat_dist_name[LAT_DIST_NR + 1];
extern const char *const lat_tail_name[LAT_TAIL_NR + 1];
extern const char *const ctrl_reorder_name[3];

/* Zones of the seek model's media rate. */
#define LAT_ZONES 16

struct latency {
	uint64_t rng[4];	/* xoshiro256** state */
	uint64_t seed;		/* the seed it came from */
	uint64_t head_pos;	/* seek model: byte where the last command ended */
	uint64_t head_free_ns;	/* seek model: when the head is done with it */
	uint64_t cache_bytes;	/* write cliff: bytes in the fast write cache at cache_at_ns */
	uint64_t cache_at_ns;
	uint64_t slow_free_ns;	/* write cliff: when the slow write path is done */
	uint64_t cliff_bytes;	/* write cliff: bytes written past it, since start */
};

/* Set up @l from @p at @now: seed the generator, park the head at LBA 0, empty the cache. */
void latency_init(struct latency *l, const struct ctrl_params *p, uint64_t now);

/* Apply new parameters: reseed only if the seed changed; head and cache keep their state. */
void latency_reconfigure(struct latency *l, const struct ctrl_params *p);

/* Whether a command of @op needs the head of the seek model under @p. */
bool latency_needs_head(const struct ctrl_params *p, enum bio_op op);

/* Whether any command has a service time under @p (else commands end with their I/O). */
bool latency_is_on(const struct ctrl_params *p);

/* The time at which a command of @op on [@offset, @offset + @len) that the device starts at
 * @start completes, drawing from the distribution and moving the head and the cache. */
uint64_t latency_complete_ns(struct latency *l, const struct ctrl_params *p, enum bio_op op,
			     uint64_t offset, uint64_t len, uint64_t start);

/* Seek model: the positioning time (seek and rotation, no transfer) of a command at @offset
 * if the device were to pick it next, with the head free at max(@now, its own free time).
 * 0 without the seek model. Changes nothing. */
uint64_t latency_position_ns(const struct latency *l, const struct ctrl_params *p,
			     uint64_t offset, uint64_t now);

/* Write cliff: bytes in the fast cache at @now (after draining). Changes nothing. */
uint64_t latency_cache_bytes(const struct latency *l, const struct ctrl_params *p, uint64_t now);

/* Seek model pieces, for tests and the docs: the seek over @dist bytes; the media rate at
 * @offset in B/s; the rotational wait for @offset with the head arriving at @at. */
uint64_t latency_seek_ns(const struct ctrl_params *p, uint64_t dist);
uint64_t latency_media_rate(const struct ctrl_params *p, uint64_t offset);
uint64_t latency_rotation_ns(const struct ctrl_params *p, uint64_t offset, uint64_t at);

/* The distribution's value for the uniforms @u1, @u2 in (0, 1], median @median and value
 * @tail at quantile @q (0.99 or 0.999), in the unit of @median. Pure: for tests. */
double lat_dist_value(enum lat_dist d, double median, double tail, double q, double u1,
		      double u2);

/* @op's median service time under @p, in ns: its own key, or controller.latency_us. */
uint64_t latency_median_ns(const struct ctrl_params *p, enum bio_op op);

/* One draw of @op's service time from the distribution, in ns. */
uint64_t latency_sample_ns(struct latency *l, const struct ctrl_params *p, enum bio_op op);

#endif
