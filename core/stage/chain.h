/* SPDX-License-Identifier: MIT */
/* The chain of stages below the controller, built from the configuration (core/stage/stage.h
 * has the ops and the contract every stage keeps). From the top, in stages.order's order
 * (default "cache, faults"):
 *
 *     controller -> [write cache] -> faults -> backend (file, block device, NBD; or a test's)
 *
 * The write cache, when cache.mode is writeback, sits over the faults by default, so that a
 * fault hits the cache's destaging as it would hit a disk's media, and only a flush sees it;
 * "faults, cache" puts the faults over the cache, so that a write meets its fault when it is
 * written. What a power cut keeps goes from the cache to its image, the first stage below it
 * that keeps data (the faults pass it by: it stands for what had reached the media when the
 * power went, and a stall must not hold the cut).
 *
 * The chain's operations walk the stages: freeze, stop and write-out from the top down (what
 * a stage writes out must reach a stage still running), thaw and power on from the bottom up,
 * power cut, reload and stats over every stage that has the op. Control, stats and reload find
 * a stage by its name (chain_find()).
 *
 * Locking: the chain itself is read-only once built; each stage has its own locks. Lock
 * order: a stage's exec is called with no lock of the caller held, so no lock of one stage
 * is ever held while another stage's is taken. The one op called under a caller's lock is
 * admit_ns, under q->lock: q->lock comes before any stage's lock. In the checking builds
 * (SANITIZE=1, TSAN=1) every stage is called through a checking stage (core/stage/check.h)
 * that aborts on a broken promise: a bad op or range, a caller's lock held, a request ended
 * twice or never.
 *
 * How to add a stage: see core/stage/stage.h's end, and doc/design.md. */
#ifndef PLUGDISK_CHAIN_H
#define PLUGDISK_CHAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/stage/check.h"
#include "core/stage/stage.h"
#include "core/util/clock.h"

struct backend;
struct cache_params;
struct crc_params;
struct timer;

#define CHAIN_MAX_STAGES 8

/* stages.order's default: the write cache over the faults. */
#define CHAIN_DEFAULT_ORDER "cache, faults"

/* What the chain is built from, and what a reload may change. Each stage reads its part. */
struct chain_params {
	/* Build only. */
	const char *order;		/* stages.order; NULL: CHAIN_DEFAULT_ORDER */
	struct timer *timer;		/* the faults' timer (delays, stall timeouts) */
	clock_fn clock;			/* NULL: CLOCK_MONOTONIC (a test's fake clock) */
	void *clock_arg;
	bool cache_thread;		/* start the cache's destage thread (else: cache_tick) */
	uint64_t disk_size;		/* bytes: the write log's header */
	/* Build and reload. */
	const struct cache_params *cache; /* NULL or not writeback: no write cache (build) */
	char *const *faults;		/* the configured faults' specs */
	size_t nfaults;
	bool keep_faults;		/* reload: leave the configured faults as they are */
	const struct crc_params *crc;	/* the crc stage's (build) */
	/* Set by chain_build() for the stages' init: the chain's power generation
	 * (chain_power_gen()), for a stage that holds requests across a cut. */
	uint64_t (*power_gen)(void *arg);
	void *power_gen_arg;
};

struct chain {
	struct stage st[CHAIN_MAX_STAGES];	/* top first; st[n - 1] is the backend */
	unsigned int n;
	bool written_out;		/* chain_writeout() ran: only destroy is left */
	const char *failed;		/* chain_build() failed: the stage's name */
	struct stage top;		/* what the controller calls: st[0], or its check */
#ifdef PLUGDISK_CHECKS
	/* The checking builds: each stage's exec, checked (core/stage/check.h), bottom
	 * first: chk[0] checks the backend. What a stage calls below, and top, are these. */
	struct stage_check chk[CHAIN_MAX_STAGES];
#endif
};

/* Every stage the chain can build (core/stage/stages.c), NULL-terminated. */
extern const struct stage_ops *const chain_stages[];

/* The stage of the file or NBD backend @be (opened by the caller, who closes it). */
struct stage backend_stage(struct backend *be);

/* Parse stages.order @text ("cache, faults": stage names from the top down, separated by
 * commas and blanks) into @ops (top first) and *@n. Refused, -EINVAL with @why: an unknown
 * name, a name twice, "backend" (always at the bottom), or an order that leaves out the
 * cache or the faults (their keys and control commands would have no stage to act on). */
int chain_order_parse(const char *text, const struct stage_ops **ops, unsigned int *n,
		      char *why, size_t whylen);

/* Build the chain over @bottom (the backend's stage) from @p: check every stage's settings,
 * then init the stages of @p->order from the bottom up, each over the one below. 0, or -errno
 * with @err saying why and ch->failed naming the stage: -EINVAL from a check is bad input
 * (nothing was done, no write log truncated); others could not start (a log, a thread). On
 * error nothing is left to destroy. */
int chain_build(struct chain *ch, const struct stage *bottom, const struct chain_params *p,
		char *err, size_t errlen);

/* The top stage: what the controller hands requests to (its exec and self). */
static inline const struct stage *chain_top(const struct chain *ch)
{
	return &ch->top;
}

/* The state of the stage named @name ("cache", "faults"), or NULL when the chain has none. */
void *chain_find(const struct chain *ch, const char *name);

/* The extra service time the stages add to @rq at admission (ctrl.admit_ns's shape; @arg is
 * the chain). */
uint64_t chain_admit_ns(void *arg, const struct request *rq);

/* Freeze every stage, top down; on an error thaw those frozen and return it. */
int chain_freeze(struct chain *ch);
void chain_thaw(struct chain *ch);

/* Cut the power / turn it on again: every stage that keeps volatile state. -EOPNOTSUPP when
 * none does (no write cache), else the first stage's answer (-EALREADY, ...). */
int chain_powercut(struct chain *ch, int mode, uint64_t seed, const char *why);
int chain_poweron(struct chain *ch);

/* The chain's power generation: the sum of its stages' (power_gen), so it changes at every
 * cut, fired by control or inside a stage. @arg is the chain, built. Any thread, no lock. */
uint64_t chain_power_gen(void *arg);

/* Stopping: end every hold (see stage.h). */
void chain_stop(struct chain *ch);

/* After the last drain: write out every stage, top down. 0 or the first -errno (acknowledged
 * writes lost, logged by the stage). Once only. */
int chain_writeout(struct chain *ch);

/* Reload: every stage takes what applies to it. 0, or the first refusal (@err); the other
 * stages took theirs. */
int chain_reconfigure(struct chain *ch, const struct chain_params *p, char *err,
		      size_t errlen);

/* The stages' `stats` lines, bottom up (the backend's first), then those of the stages with
 * stats_absent that the chain does not hold, zero, so that the names are stable. Returns the
 * length. */
size_t chain_stats(struct chain *ch, char *buf, size_t len);

/* Whether a stage may keep a request longer than a local store would: a fault is in force
 * (a delay, a stall), or the backend is a server behind a network (NBD). The write cache
 * answers at memory speed and holds nothing back. */
bool chain_may_hold(struct chain *ch);

/* How many requests the stages hold until a command lets them go (stalls); and whether any
 * (@arg is the chain: queue_freeze()'s shape). */
unsigned int chain_held(struct chain *ch);
bool chain_any_held(void *arg);

/* Whether a stage that waits in its caller's thread for the stage below (waits_below) has
 * one below it that may hold a request: a request may then keep the thread that runs it for
 * as long as that stage holds (ctrl.may_hold). @arg is the chain. */
bool chain_may_block(void *arg);

/* Zero the stages' counters (their state stays). */
void chain_stats_reset(struct chain *ch);

/* Free every stage but the backend (the caller's). No timer callback may run. */
void chain_destroy(struct chain *ch);

#endif
