/* SPDX-License-Identifier: MIT */
/* Injected faults: errors, lying and corrupting writes, extra latency, stalls and dm-dust bad
 * blocks, matched by op and byte range, fired by a trigger, drawn from a per-fault seed.
 *
 * A fault is written as words, the same in the config file, --set and the control file:
 *   op=write offset=1M len=64K error=EIO every=3 seed=42
 * (see fault_spec_parse() for the grammar). A fault set holds the active faults and acts in
 * two places: fault_latency_ns() at admission (extra service time that holds the command
 * slot) and fault_exec(), the I/O stage that wraps the backend (errors, lies, corruption,
 * stalls, bad blocks). */
#ifndef PLUGDISK_FAULT_H
#define PLUGDISK_FAULT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stage/request.h"
#include "core/util/clock.h"
#include "core/fault/fault_stats.h"
#include "core/util/timer.h"

/* The most faults a set holds at once (and that `stats` lists). */
#define FAULT_MAX STATS_MAX_FAULTS
/* The most bad blocks one dust fault lists. */
#define FAULT_MAX_BADBLOCKS 65536
/* Longest text of one fault spec. */
#define FAULT_SPEC_LEN 1024

enum fault_effect {
	FAULT_ERROR,	/* fail the request with an errno, no I/O */
	FAULT_LIE,	/* writes: acknowledge, do not write */
	FAULT_CORRUPT,	/* writes: write corrupted data; reads: return corrupted data */
	FAULT_LATENCY,	/* extra service time */
	FAULT_STALL,	/* hold the completion until release or timeout */
	FAULT_DUST,	/* dm-dust: reads of a bad block fail until a write clears it */
	FAULT_EFFECT_NR,
};

enum fault_dist { FAULT_DIST_FIXED, FAULT_DIST_UNIFORM, FAULT_DIST_EXP, FAULT_DIST_PARETO };
enum fault_corrupt { FAULT_CORRUPT_FLIP, FAULT_CORRUPT_ZERO };

/* One parsed fault: plain data, what the words say. */
struct fault_spec {
	unsigned int ops;		/* bit (1 << BIO_OP_*) per matched op */
	uint64_t offset, len;		/* matched byte range; len 0 = to the end of the disk */
	enum fault_effect effect;
	int error;			/* positive errno: error=, stall/dust failure */
	enum fault_corrupt corrupt;	/* corrupt= */
	uint32_t bits;			/* corrupt=flip: bits flipped per request */
	enum fault_dist dist;		/* latency= */
	uint64_t lat_a_ns, lat_b_ns;	/* fixed/exp: a; uniform: a..b; pareto: scale a */
	double shape;			/* pareto: alpha */
	uint64_t lat_max_ns;		/* cap of a drawn latency (max=) */
	uint64_t spike_ns;		/* spike=: extra latency of a spike */
	double spike_prob;		/* spike_prob=: chance of a spike per matched request */
	uint64_t timeout_ns;		/* stall: 0 = until release */
	uint32_t blksz;			/* dust: block size, bytes */
	uint64_t *badblocks;		/* dust: sorted, distinct block numbers (heap) */
	size_t nbad;
	/* trigger */
	double prob;			/* 0 = not set; else fire with this probability */
	uint64_t every, first, after;	/* 0 = not set */
	uint64_t after_ns;		/* active this long after it was added */
	uint64_t seed;
	bool has_seed;
};

/* Parse one fault from @text (words separated by blanks). Returns 0 or -EINVAL with a
 * one-line reason in @err. On success @spec owns heap memory: fault_spec_free(). */
int fault_spec_parse(const char *text, struct fault_spec *spec, char *err, size_t errlen);

void fault_spec_free(struct fault_spec *spec);

/* Write @spec back as words that fault_spec_parse() reads to the same spec (with its seed):
 * a heap string, or NULL when out of memory. */
char *fault_spec_format(const struct fault_spec *spec);

struct fault;
struct fault_held;

/* The set of active faults. Lock order: q->lock, then fs->lock, then timer->lock; fs->lock
 * is never held across I/O or while a request is completed. */
struct fault_set {
	pthread_mutex_t lock;
	struct fault *list;		/* lock: in id order */
	unsigned int nr;		/* lock; also read without it (atomic) as a fast-path hint */
	unsigned int next_id;		/* lock */
	struct fault_held *held;	/* lock: stalled requests, oldest first */
	bool closed;			/* lock: fault_close() ran; no fault may be added */
	struct timer_entry stall_tmr;	/* the earliest stall timeout */
	uint64_t op_errors[BIO_OP_NR];	/* lock: requests failed by error/stall timeout/dust */
	uint64_t op_delays[BIO_OP_NR];	/* lock: requests given extra latency */
	uint64_t op_stalls[BIO_OP_NR];	/* lock: requests stalled */
	uint64_t op_lies[BIO_OP_NR];	/* lock: writes acknowledged and not written */
	uint64_t op_corrupts[BIO_OP_NR];/* lock: requests whose data was corrupted */

	io_exec_fn lower;		/* the stage below (the backend); read-only */
	void *lower_arg;
	/* The chain's power generation, or NULL: a stalled request across a cut ends with EIO
	 * (core/stage/stage.h, powercut). Set before any I/O; read-only. */
	uint64_t (*power_gen)(void *arg);
	void *power_gen_arg;
	struct timer *timer;
	clock_fn clock;			/* NULL: CLOCK_MONOTONIC */
	void *clock_arg;
};

/* Where a fault came from: SIGHUP replaces the configured ones only. */
enum fault_origin { FAULT_FROM_CONFIG, FAULT_FROM_CONTROL };

/* Set up an empty set over the stage @lower. Returns 0 or -errno. */
int fault_set_init(struct fault_set *fs, io_exec_fn lower, void *lower_arg, struct timer *t,
		   clock_fn clock, void *clock_arg);

/* Release every stalled request and free every fault. Nothing may use @fs afterwards. */
void fault_set_destroy(struct fault_set *fs);

/* Add a fault parsed from @text. A missing seed is drawn and logged. Returns its id (> 0)
 * or -EINVAL (@err says why) or -ENOSPC (FAULT_MAX faults already) or -ESHUTDOWN (closed). */
int fault_add(struct fault_set *fs, const char *text, enum fault_origin origin, char *err,
	      size_t errlen);

/* Delete fault @id, releasing the requests it stalls. 0 or -ENOENT. */
int fault_del(struct fault_set *fs, unsigned int id);

/* Delete every fault (and release every stalled request). */
void fault_clear(struct fault_set *fs);

/* As fault_clear(), and from then on fault_add() and fault_replace_configured() fail with
 * -ESHUTDOWN: the daemon's stop, whose drain must not meet a fault added after the clear. */
void fault_close(struct fault_set *fs);

/* Replace the configured faults by @specs (added through control stay). All or nothing:
 * 0, or -EINVAL with @err naming the bad one and nothing changed. */
int fault_replace_configured(struct fault_set *fs, char *const *specs, size_t n, char *err,
			     size_t errlen);

/* Release the requests stalled by fault @id (0: by every fault), which then complete with
 * the result of their I/O. Returns how many were released, or -ENOENT for an unknown id. */
int fault_release(struct fault_set *fs, unsigned int id);

/* Requests stalled now. */
unsigned int fault_nr_held(struct fault_set *fs);

/* Whether any fault is in force (configured or added). */
bool fault_any(struct fault_set *fs);

/* Extra service latency for @rq, admitted at @now: the sum over the latency faults that
 * fire. q->lock held (the controller calls it from ctrl_admit_locked()). */
uint64_t fault_latency_ns(struct fault_set *fs, const struct request *rq);

/* The I/O stage (core/stage/request.h), @arg a struct fault_set: applies errors, lies, corruption,
 * stalls and bad blocks, and runs the rest through the lower stage. */
int fault_exec(void *arg, struct request *rq);

/* Called once per fault, in id order, with one line (no newline), a control command:
 *   "fault add SPEC # id=ID source=config|control matched=N injected=N [held=N]"
 * where SPEC reads back through fault_add() (a dust fault lists the bad blocks left). */
typedef void (*fault_line_fn)(void *arg, const char *line);

/* List the faults through @fn. Returns 0 or -ENOMEM (the listing is cut short). */
int fault_list(struct fault_set *fs, fault_line_fn fn, void *arg);

/* Copy the counters into @st. q->lock may be held. */
void fault_stats(struct fault_set *fs, struct fault_stats *st);

/* The fault stage's lines of the stats file: fault_stats_table's names for @fs, zero when
 * @fs is NULL (no fault stage in the chain). Returns the length written (< @len). */
size_t fault_stats_format(struct fault_set *fs, char *buf, size_t len);

/* Zero the counters (per op and per fault). q->lock may be held. */
void fault_stats_reset(struct fault_set *fs);

/* Parse a positive errno name ("EIO") or number. 0 or -EINVAL. */
int fault_parse_errno(const char *s, int *out);

/* The name of errno @e ("EIO"), or NULL. */
const char *fault_errno_name(int e);

#endif
