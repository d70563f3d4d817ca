/* SPDX-License-Identifier: MIT */
/* Precise one-shot timers on CLOCK_MONOTONIC, run by one thread.
 *
 * Used for the unplug delay, for restarting a queue stopped by the rate limiter, and for
 * completing commands at dispatch + service latency. The thread sleeps until the earliest
 * deadline with 1 ns timer slack, so callbacks run within tens of microseconds of their
 * deadline; nothing polls. Entries are embedded in their owners (no allocation). */
#ifndef PLUGDISK_TIMER_H
#define PLUGDISK_TIMER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct timer_entry;
typedef void (*timer_fn)(struct timer_entry *e, uint64_t now);

struct timer_entry {
	uint64_t deadline;	/* t->lock */
	int heap_idx;		/* t->lock; -1 when not armed */
	timer_fn fn;		/* set once by timer_entry_init() */
};

struct timer {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* signalled when the earliest deadline moves or on stop */
	struct timer_entry **heap;	/* t->lock: min-heap on deadline */
	int nr, cap;			/* t->lock */
	bool stop;			/* t->lock */
	uint64_t sleep_until;		/* t->lock: the thread's wake-up time; 0 while it runs */
	bool threaded;
	pthread_t thread;
	uint64_t fired;			/* t->lock: callbacks run, for stats */
};

void timer_entry_init(struct timer_entry *e, timer_fn fn);

/* Start the timer. threaded=false is for unit tests: they call timer_run_due() by hand.
 * Returns 0 or -errno. */
int timer_init(struct timer *t, bool threaded);

/* Stop and join the thread: no callback runs after this returns. Idempotent. */
void timer_stop(struct timer *t);

/* Stop the thread (pending entries never fire) and free the heap. */
void timer_destroy(struct timer *t);

/* Arm @e for @deadline, or move it if already armed. Any lock may be held: the timer lock
 * is always taken last. */
void timer_arm(struct timer *t, struct timer_entry *e, uint64_t deadline);

/* Disarm @e if armed. The callback may still run if it was already being fired; callbacks
 * re-check their own state under their own lock. */
void timer_cancel(struct timer *t, struct timer_entry *e);

/* Whether @e is armed. */
bool timer_is_armed(struct timer *t, struct timer_entry *e);

/* Run every entry whose deadline is <= @now (unthreaded timers; also used by the thread).
 * Returns the number run. Callbacks run without t->lock. */
int timer_run_due(struct timer *t, uint64_t now);

/* Earliest armed deadline, or UINT64_MAX. */
uint64_t timer_next_deadline(struct timer *t);

#endif
