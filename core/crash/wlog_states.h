/* SPDX-License-Identifier: MIT */
/* The crash states of a write log (cache.log): which states a power cut may leave, by the
 * write cache's own rules, numbered so that a state's number names it for good, and the
 * overlay of the base image that each one is. For `plugdisk explore`. */
#ifndef PLUGDISK_WLOG_STATES_H
#define PLUGDISK_WLOG_STATES_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/crash/extmap.h"
#include "core/cache/wlog.h"

/* A write or a discard, in log (completion) order. */
struct ws_op {
	uint64_t off, len;
	const uint8_t *data;	/* in the mapped log; NULL for a discard (zeros) */
	uint64_t epoch;
	uint64_t pos;		/* the record's file offset */
	uint32_t unit;		/* the atomic write unit it tears at: the header's, or the
				 * last ATOMIC record's before it */
};

enum ws_barrier_kind {
	WS_START,	/* the log's beginning: nothing durable */
	WS_FLUSH,	/* a completed flush */
	WS_IGNORED,	/* a flush completed under cache.flush = ignore: nothing made durable */
	WS_DISCARD,	/* a discard: the cache destaged everything before it */
};

/* A window: from a barrier (a flush, a discard, the start) to the next. */
struct ws_window {
	enum ws_barrier_kind kind;
	uint64_t flush_no;	/* completed flushes up to this barrier (the N of "flush N") */
	uint64_t epoch;		/* a flush's epoch */
	uint64_t pos;		/* the barrier record's file offset (0 for the start) */
	uint64_t end_pos;	/* the next barrier's (or the cut's, or the log end's) offset */
	uint64_t durable;	/* ops [0, durable) survive any cut in this window */
	uint64_t end;		/* ops [durable, end) are pending at a cut at the window's end */
	uint64_t nstates, first_id;	/* its states: ids first_id .. first_id + nstates - 1 */
	/* A large window with writes that a later write of their epoch covers whole (the
	 * cache drops those, so its prefix cuts skip them): live_before[i] counts the pending
	 * ops in [0, i) that none covers (n + 1 entries); NULL otherwise. */
	uint64_t *live_before;
	uint64_t nover;		/* the pending ops covered so */
};

struct ws_mark {
	uint64_t pos;		/* the record's file offset */
	uint64_t need;		/* ops logged before it: those it claims durable */
	const char *text;
};

/* The kinds of state inside a window, in the order their ids run. */
enum ws_kind {
	WS_K_FLUSH,	/* the barrier's state: durable ops only (prefix 0) */
	WS_K_PREFIX,	/* the first j pending ops, j = 1..n */
	WS_K_SUBSET,	/* a small window: every other subset of the pending ops */
	WS_K_DROP,	/* all pending ops but 1..K of them */
	WS_K_OVER,	/* a large window: the first j pending ops no later write overwrote,
			 * the overwritten ones lost (the cache's prefix) */
	WS_K_TORN,	/* the pending ops before one write, and some atomic units of it */
};

extern const char *const ws_kind_names[];

#define WS_SMALL_WINDOW 10	/* pending ops up to which every subset is a state */
#define WS_MAX_K 3
#define WS_TEAR_VARIANTS 8	/* most head (and tail) tears of one write */

struct ws_log {
	struct wlog_hdr hdr;
	int fd;
	const uint8_t *map;	/* the whole log, mapped read-only */
	uint64_t map_len;
	struct ws_op *ops;
	uint64_t nops;
	struct ws_window *win;
	uint64_t nwin;
	struct ws_mark *marks;
	uint64_t nmarks;
	bool cut;		/* the log ends at a power cut; what follows it is not read */
	uint64_t cut_short;	/* 0, or the byte where a write error cut the log short, before
				 * any power cut: the states after it are unknown */
	uint64_t cut_short_after;	/* with cut_short: the records before it */
	unsigned int k;		/* drop up to k pending ops in a large window */
	uint64_t nstates;	/* all windows' states */
};

/* A decoded state. */
struct ws_state {
	uint64_t id;
	uint64_t win;
	enum ws_kind kind;
	uint64_t n;		/* pending ops in its window */
	uint64_t j;		/* PREFIX, OVER: ops kept; TORN: the torn op (pending index) */
	uint64_t mask;		/* SUBSET: bit i keeps pending op i */
	uint64_t drop[WS_MAX_K];	/* DROP: pending indexes dropped, increasing */
	unsigned int ndrop;
	bool tail;		/* TORN: the last m units survive, else the first m */
	uint64_t m;		/* TORN: units kept, 1 .. units - 1 */
};

/* Read the log at @path into @l, dropping up to @k writes per large window. 0, -EINVAL (not
 * a write log, or a bad record: @err says which), or -errno. */
int ws_log_open(struct ws_log *l, const char *path, unsigned int k, char *err, size_t errlen);
void ws_log_close(struct ws_log *l);

/* Decode state @id (< l->nstates) into @s. */
void ws_state_decode(const struct ws_log *l, uint64_t id, struct ws_state *s);

/* What the state keeps of pending op @i: 0 dropped, 1 kept, 2 torn. */
int ws_state_keeps(const struct ws_log *l, const struct ws_state *s, uint64_t i);

/* Is pending op @i (an index in window @w) covered whole by a later write of the window in
 * the same epoch? The cache then dropped it, unless it was being destaged or read then. */
bool ws_op_overwritten(const struct ws_log *l, const struct ws_window *w, uint64_t i);

/* Atomic units (of its own unit, op->unit) a pending op spans (a discard: 1). */
uint64_t ws_op_units(const struct ws_log *l, const struct ws_op *op);

/* The kept range of the torn op's unit run: [*off, *off + *len). */
void ws_state_torn_range(const struct ws_log *l, const struct ws_state *s, uint64_t *off,
			 uint64_t *len);

/* Walks windows in order, keeping the durable ops of the current one laid on a map. */
struct ws_builder {
	struct extmap durable;
	uint64_t applied;	/* ops laid on durable */
	struct extent *batch;	/* the ops of one build, laid at once (extmap_put_many) */
	uint64_t batch_cap;
	const volatile sig_atomic_t *stop;	/* NULL, or set (a signal): a build stops */
};

void ws_builder_init(struct ws_builder *b);
void ws_builder_free(struct ws_builder *b);

/* Build @s's overlay into @out (the builder must not have passed @s's window: states go in
 * increasing id order), in O(n log n) for n ops. 0, -ENOMEM, or -EINTR when *b->stop was
 * set during the build. */
int ws_state_build(const struct ws_log *l, struct ws_builder *b, const struct ws_state *s,
		   struct extmap *out);

/* The file offset of the latest cut that can leave the state (its window's end): marks
 * before it were acknowledged before that cut, and the checker is told of them all. */
uint64_t ws_state_cut_pos(const struct ws_log *l, const struct ws_state *s);

/* The last mark the state made durable (every op before it kept whole and acknowledged
 * before its cut), or -1; and the number of marks acknowledged before the cut. */
int64_t ws_state_mark(const struct ws_log *l, const struct ws_state *s, uint64_t *nacked);

/* Pick @budget distinct ids in 0..l->nstates-1 from @seed, increasing, into @ids. 0 or
 * -ENOMEM. */
int ws_sample(const struct ws_log *l, uint64_t budget, uint64_t seed, uint64_t *ids);

#endif
