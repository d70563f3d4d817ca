/* SPDX-License-Identifier: MIT */
/* What the fault set's files share and nobody else sees: a fault, a stalled request, and the
 * calls between the set (core/fault/fault.c), the effects (core/fault/fault_effect.c) and the spec's
 * parser and formatter (core/fault/fault_spec*.c). Include only from core/fault/. Locking as in
 * struct fault_set (core/fault/fault.h): fs->lock after q->lock, before the timer's lock, never
 * across I/O or a completion. */
#ifndef PLUGDISK_FAULT_INT_H
#define PLUGDISK_FAULT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fault/fault.h"

struct fault {
	unsigned int id;
	enum fault_origin origin;
	struct fault_spec s;		/* s.badblocks: fs->lock (writes clear blocks) */
	uint64_t added_ns;
	uint64_t rng[4];		/* fs->lock */
	uint64_t matched, injected;	/* fs->lock */
	uint64_t seen;			/* fs->lock: matches since after=DURATION passed */
	bool seed_drawn;		/* no seed= was given: the log names the drawn one */
	struct fault *next;		/* fs->lock */
};

/* A stalled request: its I/O is done, its completion waits. */
struct fault_held {
	struct request *rq;
	const struct fault_set *fs;
	uint64_t gen;			/* fs->power_gen's before its I/O */
	int result;			/* of its I/O */
	int timeout_error;		/* negative errno on timeout, or 0: complete with result */
	unsigned int fault_id;
	uint64_t until;			/* timeout (0: none) */
	rq_io_done_t done;		/* the caller's completion */
	void *done_arg;
	struct fault_held *next;	/* fs->lock */
};

/* The set's clock, in ns. */
static inline uint64_t fs_now(const struct fault_set *fs)
{
	return fs->clock ? fs->clock(fs->clock_arg) : clock_now_ns();
}

/* A latency fault's max= when none is given: the parser sets it, the formatter leaves it out
 * (core/fault/fault_spec.c, core/fault/fault_spec_format.c). */
#define DEFAULT_LAT_MAX_NS (10 * NSEC_PER_SEC)

/* The words of a fault spec, said once: the parser (core/fault/fault_spec.c) reads them and the
 * formatter (core/fault/fault_spec_format.c) writes them. X(ID, "word") */
#define FAULT_WORDS(X)                                                                             \
	X(OP, "op")                                                                                \
	X(OFFSET, "offset")                                                                        \
	X(LEN, "len")                                                                              \
	X(ERROR, "error")                                                                          \
	X(LIE, "lie")                                                                              \
	X(CORRUPT, "corrupt")                                                                      \
	X(BITS, "bits")                                                                            \
	X(LATENCY, "latency")                                                                      \
	X(MAX, "max")                                                                              \
	X(SPIKE, "spike")                                                                          \
	X(SPIKE_PROB, "spike_prob")                                                                \
	X(STALL, "stall")                                                                          \
	X(TIMEOUT, "timeout")                                                                      \
	X(BADBLOCKS, "badblocks")                                                                  \
	X(BLKSZ, "blksz")                                                                          \
	X(PROB, "prob")                                                                            \
	X(EVERY, "every")                                                                          \
	X(FIRST, "first")                                                                          \
	X(AFTER, "after")                                                                          \
	X(SEED, "seed")

enum fault_word_id {
#define FW_ENUM(id, name) FW_##id,
	FAULT_WORDS(FW_ENUM)
#undef FW_ENUM
	FW_NR
};

/* fault_word[FW_OP] is "op"; the values' words: corrupt=flip|zero, latency=uniform:..., and
 * op=any (every op). */
extern const char *const fault_word[FW_NR];
extern const char *const fault_corrupt_name[];
extern const char *const fault_dist_name[];	/* [FAULT_DIST_FIXED] is NULL: a bare duration */
#define FAULT_OPS_ANY "any"

/* vsnprintf into @err unless it is NULL or @errlen is 0 (core/fault/fault_spec.c). */
void fault_put_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Without fs->lock: end each request of @list, with its I/O's result (@timed_out: with its
 * timeout error when it has one), or with EIO when the power went since its I/O began, and
 * free the list (core/fault/fault.c). */
void fault_complete_held(struct fault_held *list, bool timed_out);

/* The stall timer's callback: ends the stalled requests whose timeout has passed and arms
 * the timer for the next (core/fault/fault_effect.c). Timer thread, no lock held. */
void fault_stall_timer_fn(struct timer_entry *e, uint64_t now);

#endif
