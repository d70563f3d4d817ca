/* SPDX-License-Identifier: MIT */
/* The block request queue: plugging, merging, stop/start, dispatch to the controller. */
#ifndef PLUGDISK_QUEUE_H
#define PLUGDISK_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/stage/request.h"
#include "core/util/clock.h"
#include "core/util/lock.h"
#include "core/queue/params.h"
#include "core/ctrl/ctrl_params.h"
#include "core/queue/stats.h"
#include "core/util/timer.h"

struct ctrl;

struct queue {
	/* Guards everything below marked q->lock, and the controller's admission state
	 * (struct ctrl fields marked q->lock): the controller shares its queue's lock, as a
	 * block driver shares the queue lock. Lock order: q->lock, then ctrl->pool.lock, then
	 * timer->lock. Never call a bio's end_io with q->lock held. */
	pthread_mutex_t lock;
	pthread_cond_t free_wait;	/* q->lock: a request slot in the queue freed */
	pthread_cond_t idle_wait;	/* q->lock: the queue drained (nothing queued or in flight) */

	struct queue_params p;		/* q->lock */
	struct request *head, *tail;	/* q->lock: FIFO of queued requests */
	unsigned int nr_queued;		/* q->lock */
	uint64_t queued_bytes;		/* q->lock */
	struct request *last_merge;	/* q->lock: one-hit cache, as the block layer's */
	/* The merge index (core/queue/merge.c): every queued request but flushes. */
	struct request **end_hash;	/* q->lock: chains by rq_end() */
	struct request *sort_root;	/* q->lock: treap by (offset, seq) */
	uint64_t next_seq;		/* q->lock: seq of the latest queued request */
	uint64_t flush_seq;		/* q->lock: seq of the latest queued flush, 0 if none */

	bool plugged;			/* q->lock */
	bool stopped;			/* q->lock */
	/* Holds by hand, each ended only by its own command; the queue dispatches when
	 * neither held nor frozen is set (and it is not plugged or stopped). */
	bool held;			/* q->lock: stopped by hand (queue_hold: stop/start) */
	bool plug_held;			/* q->lock: plugged by hand (queue_plug_hold) */
	bool frozen;			/* q->lock: held by queue_freeze() until queue_thaw() */
	uint64_t thaws;			/* q->lock: freezes ended, so a waiting freeze sees its end */
	enum stop_reason stop_reason;	/* q->lock */
	uint64_t plugged_since;		/* q->lock */
	uint64_t stopped_since;		/* q->lock */
	uint64_t unplug_at;		/* q->lock: when the armed unplug timer may unplug */
	uint64_t restart_at;		/* q->lock: when the rate timer may start the queue */
	uint64_t runnable_since;	/* q->lock: last unplug, or the rate wait's end */
	uint64_t last_acct;		/* q->lock: last update of busy/weighted time */
	unsigned int waiters;		/* q->lock: submitters waiting in free_wait */
	/* Requests whose bios are being ended after q->lock was dropped (atomic: raised under
	 * q->lock, dropped as the completer's last access to the queue), and how many wait in
	 * queue_drain() or queue_freeze() (atomic; changed under q->lock), whom a completer
	 * wakes before its drop. A waiter never sleeps on completing: it sees it under q->lock
	 * and yields until it is 0 (queue_wait_idle_locked()), so that once it returns no completer
	 * touches the queue, which its caller may then free. */
	unsigned int completing;
	int drain_waiting;

	struct timer_entry unplug_tmr;	/* the unplug delay */
	struct timer_entry restart_tmr;	/* restart after a budget stop */

	struct queue_stats stats;	/* q->lock */

	struct ctrl *ctrl;
	struct timer *timer;
	clock_fn clock;
	void *clock_arg;
};

/* Set up @q over controller @c; timers go to @t. @clock may be NULL (CLOCK_MONOTONIC).
 * Returns 0 or -errno. */
int queue_init(struct queue *q, const struct queue_params *p, struct ctrl *c, struct timer *t,
	       clock_fn clock, void *clock_arg);

/* Free @q. It must be idle (queue_drain()). */
void queue_destroy(struct queue *q);

/* Submit @bio. Merges it into a queued request or queues a new one, plugs an idle queue,
 * unplugs on the threshold, size or flush rules, and dispatches what the controller takes.
 * Never fails: errors come back through bio->end_io. May sleep while queue.nr_requests
 * requests are queued (request-depletion throttling). Call without q->lock. */
void queue_submit(struct queue *q, struct bio *bio);

/* queue_submit() that never sleeps: at queue.nr_requests, @bio is queued beyond the bound.
 * For a completion callback (a backend worker, the timer thread, a thread running I/O
 * inline) that submits a follow-up bio, which must not wait for the completions it runs. */
void queue_submit_nowait(struct queue *q, struct bio *bio);

/* The calling thread starts a burst of submissions, all taken in at @now (a FUSE ring thread
 * woken with several requests): they are stamped @now instead of each reading the clock,
 * which costs here about as much as the rest of a submission. The burst ends with
 * queue_burst(0), and by itself as soon as the thread runs or waits for anything (I/O run
 * inline, a full queue). Ignored on a queue with its own clock (unit tests). */
void queue_burst(uint64_t now);

/* The submitter has nothing more to submit right now: unplug, as the block layer flushes a
 * task's plug when it sleeps. Cheap when not plugged. Call without q->lock. */
void queue_unplug_idle(struct queue *q);

/* Whether the queue may be plugged; a racy hint, so callers can skip work when false. */
bool queue_needs_unplug(struct queue *q);

/* @on: the calling thread calls queue_unplug_idle() whenever it runs out of work (a FUSE
 * receive or ring thread). A plug it starts is ended by that, or by a submission once the
 * plug is queue.unplug_delay_us old; its timer only fires QUEUE_UNPLUG_BACKSTOP_NS later,
 * should the thread block without either. */
void queue_set_unplugs_idle(bool on);
#define QUEUE_UNPLUG_BACKSTOP_NS (100ull * 1000 * 1000)


/* Complete @rq: called by the controller once its backing I/O has finished and its service
 * time has passed. Frees the command slot, accounts, restarts the queue if it was stopped
 * for slots, dispatches, then ends every bio of @rq. Call without q->lock. */
void queue_complete(struct queue *q, struct request *rq);

/* queue_complete() at @now, a time on the queue's clock the caller has just read. */
void queue_complete_at(struct queue *q, struct request *rq, uint64_t now);

/* Wait until nothing is queued or in flight (unplugging first). Call without q->lock. */
void queue_drain(struct queue *q);

/* Apply new queue and controller parameters live, together under q->lock (buckets keep
 * their debt, queued requests keep their shape), then run the queue so that the new limits
 * take effect at once. No I/O is failed or lost. Call without q->lock. */
void queue_reconfigure(struct queue *q, const struct queue_params *qp,
		       const struct ctrl_params *cp);

/* Copy the state and the counters of the queue and the controller; the stages below fill
 * their part (ss->faults) from the fault stage (daemon/fuse/statfile.c). */
void queue_snapshot(struct queue *q, struct stats_snapshot *ss);

/* Zero the counters (the state stays). */
void queue_stats_reset(struct queue *q);

/* Hold the queue stopped (@hold) or let it go, by hand, as blk_stop_queue() and
 * blk_start_queue(): while held nothing is dispatched and arriving bios queue and merge.
 * Independent of the controller's own stops and of a freeze, which it neither ends nor
 * is ended by; letting go of a queue not held does nothing. Call without q->lock. */
void queue_hold(struct queue *q, bool hold);

/* Hold the queue plugged (@plug) until called again with false; while held, none of the
 * automatic unplug rules applies. Call without q->lock. */
void queue_plug_hold(struct queue *q, bool plug);

/* Hold the queue frozen and wait until nothing is in flight: the image is then consistent
 * and stays so until queue_thaw(). Queued requests stay queued. A hold of its own: start
 * does not end it. 0, or -ECANCELED when a thaw (or a drain or an abort) ended the freeze
 * before nothing was in flight, or -EBUSY, nothing frozen, when @held (may be NULL; called
 * with q->lock held, so it takes only a stage's own lock) says that a stage below holds a
 * request until a command lets it go while requests are in flight: the freeze would wait
 * for that command. Call without q->lock. */
int queue_freeze(struct queue *q, bool (*held)(void *arg), void *arg);

/* End a freeze (not a stop); does nothing on a queue not frozen. Call without q->lock. */
void queue_thaw(struct queue *q);

struct queue_hold_state {
	bool held, plug_held, frozen;
};

/* The holds in force. */
void queue_hold_state(struct queue *q, struct queue_hold_state *st);

/* Fail every queued request that has not started with @error (-errno), and release every
 * hold. In-flight requests are left to complete. Returns how many bios were failed. Call
 * without q->lock. */
unsigned int queue_abort(struct queue *q, int error);

/* Whether the queue or its controller may keep a request beyond its backing I/O: a hold by
 * hand (stop, plug, freeze), a service latency or a rate limit. Call without q->lock. */
bool queue_may_hold(struct queue *q);

/* Whether nothing is queued or in flight. */
bool queue_is_idle(struct queue *q);

/* The time on @q's clock (a fake one in unit tests), in ns. Any thread. */
uint64_t queue_now(const struct queue *q);

/* Internal to core/. */

/* Unlink @rq from the queue's FIFO, its merge index and its counters (not freed).
 * q->lock held. */
void queue_unlink(struct queue *q, struct request *rq);

#endif
