// SPDX-License-Identifier: MIT
/* The block request queue.
 *
 * Notes on the design.
 *
 * States. The queue is a FIFO of requests with two independent flags:
 *   plugged  set when a bio arrives at an empty queue (queue.plug). While plugged nothing
 *            is dispatched, so the bios that follow can merge. It is removed (unplug) when
 *            the submitter has nothing more to submit (idle: the block layer flushes a task's
 *            plug when the task sleeps), when queue.unplug_threshold requests are queued,
 *            when a request reaches queue.max_request_size, when queue.unplug_delay_us has
 *            passed since plugging (timer), or when a flush arrives. A plug by a thread that
 *            unplugs when idle (the FUSE threads, queue_set_unplugs_idle()) is ended on time
 *            by its own next submission, the timer being only a late backstop for it.
 *   stopped  set by the controller's refusal: no free command slot (a completion starts the
 *            queue again) or no rate budget (the rate timer starts it again). This is
 *            blk_stop_queue()/blk_start_queue() of the 2.5 block layer.
 * While plugged or stopped, arriving bios keep merging into queued requests. Three holds by
 * hand (the control file) come on top, each ended only by its own command: held (stop/start),
 * plug_held (plug/unplug, which keeps plugged set) and frozen (freeze/thaw).
 *
 * Dispatch takes requests from the head, in order, while neither flag nor a hold is set and
 * the controller admits them. A flush is dispatched in its place in that order and nothing merges
 * across a queued flush, so no I/O is reordered across a flush. It promises what a block
 * device's cache flush (REQ_PREFLUSH) promises: every write completed before it was submitted
 * is durable when it completes. Writes still in flight when it arrives were not acknowledged
 * to anyone, so it does not wait for them; the controller makes its completion, in device
 * time, follow theirs (see ctrl.c).
 *
 * queue.nr_requests bounds the queued requests. A submitter that finds it full unplugs and
 * sleeps until dispatch frees one (request-depletion throttling).
 *
 * Invariants (q->lock): nr_queued counts the FIFO; queued_bytes is the sum of their lengths;
 * every queued request holds >= 1 bio of its op covering [offset, offset + len) in order;
 * a bio is completed exactly once, by queue_complete(), after its request left the FIFO;
 * every queued request but a flush is in the merge index (merge.c), and seq grows along the
 * FIFO.
 * Counters: op.bios = op.ios + op.merges_{back,front,gap} whenever the queue is idle.
 *
 * Threads: submitters (FUSE receive threads), backend workers and the timer thread all come
 * through here. Everything that changes state holds q->lock; bio completion callbacks and the
 * hand-off of requests to the backend run after it is dropped. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/barrier.h"
#include "core/ctrl/ctrl.h"
#include "core/util/log.h"
#include "core/queue/merge.h"
#include "core/queue/queue.h"
#include "core/queue/queue_int.h"


void queue_unlink(struct queue *q, struct request *rq)
{
	if (rq->prev)
		rq->prev->next = rq->next;
	else
		q->head = rq->next;
	if (rq->next)
		rq->next->prev = rq->prev;
	else
		q->tail = rq->prev;
	rq->prev = rq->next = NULL;
	merge_index_del(q, rq);
	q->nr_queued--;
	q->queued_bytes -= rq->len;
	if (q->last_merge == rq)
		q->last_merge = NULL;
}

uint64_t queue_now(const struct queue *q)
{
	return q->clock ? q->clock(q->clock_arg) : clock_now_ns();
}

/* q->lock held. The plugged flag is also read without the lock as a hint. */
static void queue_set_plugged_locked(struct queue *q, bool v)
{
	lock_assert_held(&q->lock);
	WRITE_ONCE(q->plugged, v);
}

bool queue_needs_unplug(struct queue *q)
{
	/* Read without q->lock (queue_set_plugged_locked() writes it under the lock): a stale answer only
	 * costs one lock round or one idle unplug left to the timer's backstop, never a lost
	 * request. */
	return READ_ONCE(q->plugged);
}

/* q->lock held: integrate busy and weighted time up to @now. Call before any change of
 * nr_queued + in_flight. */
static void queue_account_time_locked(struct queue *q, uint64_t now)
{
	unsigned int n = q->nr_queued + q->ctrl->in_flight;

	lock_assert_held(&q->lock);
	if (now > q->last_acct && n) {
		q->stats.busy_ns += now - q->last_acct;
		q->stats.weighted_ns += (uint64_t)n * (now - q->last_acct);
	}
	if (now > q->last_acct)
		q->last_acct = now;
}

/* Set in the threads that call queue_unplug_idle() before they sleep (queue_set_unplugs_idle()). */
static __thread bool tls_unplugs_idle;

void queue_set_unplugs_idle(bool on)
{
	tls_unplugs_idle = on;
}

void queue_plug_locked(struct queue *q, uint64_t now)
{
	uint64_t backstop = 0;

	lock_assert_held(&q->lock);
	queue_set_plugged_locked(q, true);
	q->plugged_since = now;
	q->stats.plugs++;
	q->unplug_at = now + (uint64_t)q->p.unplug_delay_us * NSEC_PER_USEC;
	/* A plug by a thread that unplugs before it sleeps ends when that thread runs out of
	 * work, or at a later submission once it is due (queue_submit_one()): the timer is only
	 * a backstop, set far enough out that a steady stream of plugs moves it later without
	 * waking the timer thread, which would otherwise wake about twice per unplug delay. */
	if (tls_unplugs_idle)
		backstop = QUEUE_UNPLUG_BACKSTOP_NS;
	timer_arm(q->timer, &q->unplug_tmr, q->unplug_at + backstop);
}

void queue_unplug_locked(struct queue *q, enum unplug_reason why, uint64_t now)
{
	lock_assert_held(&q->lock);
	if (!q->plugged || q->plug_held)
		return;
	queue_set_plugged_locked(q, false);
	q->runnable_since = now;
	q->stats.plugged_ns += now - q->plugged_since;
	q->stats.unplugs[why]++;
	/* The unplug timer is left armed: its callback checks that the queue is still plugged
	 * and due, and the next plug only moves it later. A steady synchronous stream then
	 * costs one timer wake-up per unplug delay instead of one per request. */
}

static void queue_stop_locked(struct queue *q, enum stop_reason why, uint64_t now)
{
	lock_assert_held(&q->lock);
	if (q->stopped)
		return;
	q->stopped = true;
	q->stop_reason = why;
	q->stopped_since = now;
	q->stats.stops[why]++;
}

/* q->lock held: dispatch from the head while the queue is neither plugged nor stopped and
 * the controller admits. Admitted requests are chained on *@list for ctrl_issue(). */
void queue_run_locked(struct queue *q, uint64_t now, struct request **list)
{
	struct request **tailp = list;
	struct request *rq;

	lock_assert_held(&q->lock);
	while (*tailp)
		tailp = &(*tailp)->work_next;
	if (q->plugged || q->stopped || q->held || q->frozen)
		return;
	while (q->head) {
		enum ctrl_admit_result ret;
		uint64_t ready_at = 0;

		/* the head, unless the controller reorders (SPTF) */
		rq = ctrl_pick_locked(q->ctrl, q->head, now);
		ret = ctrl_admit_locked(q->ctrl, rq, now, q->runnable_since, &ready_at);
		switch (ret) {
		case CTRL_ADMIT_OK:
			break;
		case CTRL_ADMIT_SLOTS:
			queue_stop_locked(q, STOP_SLOTS, now);
			return;
		case CTRL_ADMIT_BUDGET:
		case CTRL_ADMIT_HEAD:
			queue_stop_locked(q, ret == CTRL_ADMIT_HEAD ? STOP_HEAD : STOP_BUDGET, now);
			q->restart_at = ready_at;
			timer_arm(q->timer, &q->restart_tmr, ready_at);
			return;
		}
		queue_unlink(q, rq);
		if (rq->op == BIO_OP_READ || rq->op == BIO_OP_WRITE || rq->op == BIO_OP_DISCARD)
			q->stats.op[rq->op].size_hist[size_bucket(rq->len)]++;
		rq->work_next = NULL;
		*tailp = rq;
		tailp = &rq->work_next;
		if (q->waiters)
			pthread_cond_signal(&q->free_wait);
	}
}

static void queue_start_run_locked(struct queue *q, uint64_t now, struct request **list)
{
	lock_assert_held(&q->lock);
	if (q->stopped) {
		q->stats.stopped_ns += now - q->stopped_since;
		q->stats.starts[q->stop_reason]++;
		q->stopped = false;
		q->stop_reason = STOP_NONE;
	}
	queue_run_locked(q, now, list);
}

static void unplug_timer_fn(struct timer_entry *e, uint64_t now)
{
	struct queue *q = (struct queue *)((char *)e - offsetof(struct queue, unplug_tmr));
	struct request *list = NULL;

	lock_take(&q->lock);
	now = queue_now(q);
	if (q->plugged && now >= q->unplug_at) {
		queue_unplug_locked(q, UNPLUG_TIMER, now);
		queue_run_locked(q, now, &list);
	}
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
}

static void restart_timer_fn(struct timer_entry *e, uint64_t now)
{
	struct queue *q = (struct queue *)((char *)e - offsetof(struct queue, restart_tmr));
	struct request *list = NULL;

	lock_take(&q->lock);
	now = queue_now(q);
	if (q->stopped && (q->stop_reason == STOP_BUDGET || q->stop_reason == STOP_HEAD)) {
		if (now >= q->restart_at) {
			q->runnable_since = q->restart_at;
			queue_start_run_locked(q, now, &list);
		}
		else
			timer_arm(q->timer, &q->restart_tmr, q->restart_at);
	}
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
}

int queue_init(struct queue *q, const struct queue_params *p, struct ctrl *c, struct timer *t,
	       clock_fn clock, void *clock_arg)
{
	int ret;

	memset(q, 0, sizeof(*q));
	ret = merge_index_init(q);
	if (ret)
		return ret;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->free_wait, NULL);
	pthread_cond_init(&q->idle_wait, NULL);
	q->p = *p;
	q->ctrl = c;
	q->timer = t;
	q->clock = clock;
	q->clock_arg = clock_arg;
	c->q = q;
	timer_entry_init(&q->unplug_tmr, unplug_timer_fn);
	timer_entry_init(&q->restart_tmr, restart_timer_fn);
	q->last_acct = queue_now(q);
	return 0;
}

void queue_destroy(struct queue *q)
{
	timer_cancel(q->timer, &q->unplug_tmr);
	timer_cancel(q->timer, &q->restart_tmr);
	pthread_cond_destroy(&q->free_wait);
	pthread_cond_destroy(&q->idle_wait);
	pthread_mutex_destroy(&q->lock);
	merge_index_destroy(q);
}

static struct request *rq_alloc(struct queue *q, struct bio *bio, uint64_t now)
{
	/* malloc, not calloc: glibc's calloc skips the per-thread cache, and this is one
	 * allocation per request. */
	struct request *rq = malloc(sizeof(*rq));

	if (!rq)
		return NULL;
	*rq = (struct request){
		.op = bio->op,
		.offset = bio->offset,
		.len = bio->len,
		.bio = bio,
		.biotail = bio,
		.nr_bios = 1,
		.nr_iov = (unsigned int)bio->iovcnt,
		.start_ns = now,
		.last_submit_ns = bio->submit_ns,
		.queue = q,
	};
	timer_entry_init(&rq->tmr, NULL);
	return rq;
}

/* q->lock held */
static void queue_append_locked(struct queue *q, struct request *rq, uint64_t now)
{
	lock_assert_held(&q->lock);
	queue_account_time_locked(q, now);
	rq->prev = q->tail;
	if (q->tail)
		q->tail->next = rq;
	else
		q->head = rq;
	q->tail = rq;
	merge_index_add(q, rq);
	q->nr_queued++;
	q->queued_bytes += rq->len;
	if (rq->op != BIO_OP_FLUSH)
		q->last_merge = rq; /* nomerges=1's one hit: the request of the latest bio */
}

/* The time of the calling thread's burst of submissions, 0 outside one (queue_burst()). */
static __thread uint64_t tls_burst_ns;

void queue_burst(uint64_t now)
{
	tls_burst_ns = now;
}

/* Submit @bio; with @may_wait, wait while queue.nr_requests requests are queued. */
static void queue_submit_one(struct queue *q, struct bio *bio, bool may_wait)
{
	struct request *list = NULL, *rq;
	uint64_t now = tls_burst_ns && !q->clock ? tls_burst_ns : queue_now(q);

	bio->submit_ns = now;
	bio->next = NULL;

	lock_take(&q->lock);
	q->stats.op[bio->op].bios++;

	rq = merge_bio(q, bio);
	while (!rq && may_wait && q->nr_queued >= q->p.nr_requests) {
		/* Request depletion: let the queue drain, then try again. */
		queue_unplug_locked(q, UNPLUG_THRESHOLD, now);
		queue_run_locked(q, now, &list);
		tls_burst_ns = 0; /* time passes from here */
		if (list) {
			lock_drop(&q->lock);
			ctrl_issue(q->ctrl, list);
			list = NULL;
			lock_take(&q->lock);
		}
		if (q->nr_queued >= q->p.nr_requests) {
			q->stats.depletion_waits++;
			q->waiters++;
			pthread_cond_wait(&q->free_wait, &q->lock);
			q->waiters--;
		}
		now = queue_now(q);
		rq = merge_bio(q, bio);
	}
	if (!rq) {
		rq = rq_alloc(q, bio, now);
		if (!rq) {
			lock_drop(&q->lock);
			log_err("queue: malloc: out of memory");
			bio->end_io(bio, -ENOMEM);
			return;
		}
		if (!q->nr_queued && q->p.plug && !q->plugged && !q->stopped &&
		    bio->op != BIO_OP_FLUSH)
			queue_plug_locked(q, now);
		queue_append_locked(q, rq, now);
	}

	if (q->plugged) {
		if (bio->op == BIO_OP_FLUSH)
			queue_unplug_locked(q, UNPLUG_FLUSH, now);
		else if (q->nr_queued >= q->p.unplug_threshold)
			queue_unplug_locked(q, UNPLUG_THRESHOLD, now);
		else if (rq->len >= q->p.max_request_size)
			queue_unplug_locked(q, UNPLUG_SIZE, now);
		else if (now >= q->unplug_at)
			queue_unplug_locked(q, UNPLUG_TIMER, now);
	}
	queue_run_locked(q, now, &list);
	lock_drop(&q->lock);
	if (list)
		tls_burst_ns = 0; /* its I/O may run in this thread: time passes */
	ctrl_issue(q->ctrl, list);
}

void queue_submit(struct queue *q, struct bio *bio)
{
	queue_submit_one(q, bio, true);
}

void queue_submit_nowait(struct queue *q, struct bio *bio)
{
	queue_submit_one(q, bio, false);
}

void queue_unplug_idle(struct queue *q)
{
	struct request *list = NULL;
	uint64_t now;

	if (!queue_needs_unplug(q))
		return;
	lock_take(&q->lock);
	if (q->plugged) {
		now = queue_now(q);
		queue_unplug_locked(q, UNPLUG_IDLE, now);
		queue_run_locked(q, now, &list);
	}
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
}

/* A completer has ended its bios (it raised q->completing under q->lock, its request already
 * out of in_flight, before it dropped the lock): wake whoever waits for the queue to go idle,
 * then drop completing, its last access to @q. Call without q->lock. A waiter raised
 * drain_waiting under q->lock before it found requests in flight, so the completer of the
 * last of them, which took the lock after, sees it; completing itself needs no wake-up
 * (queue_wait_idle_locked()). */
static void queue_put_completing(struct queue *q)
{
	if (smp_load_mb(q->drain_waiting)) {
		lock_take(&q->lock);
		pthread_cond_broadcast(&q->idle_wait);
		lock_drop(&q->lock);
	}
	atomic_sub_return_mb(q->completing, 1);
}

void queue_complete(struct queue *q, struct request *rq)
{
	queue_complete_at(q, rq, queue_now(q));
}

void queue_complete_at(struct queue *q, struct request *rq, uint64_t now)
{
	struct op_stats *st = &q->stats.op[rq->op];
	struct request *list = NULL;
	struct bio *bio, *next;

	lock_take(&q->lock);
	queue_account_time_locked(q, now);
	ctrl_release_locked(q->ctrl, rq, now);
	st->ios++;
	if (rq->error)
		st->errors++;
	else
		st->bytes += rq->len;
	st->ticks_ns += now - rq->dispatch_ns;
	st->wait_ns += now - rq->start_ns;
	for (bio = rq->bio; bio; bio = bio->next)
		lat_hist_add(&st->lat, (now - bio->submit_ns) / NSEC_PER_USEC);

	if (q->stopped && q->stop_reason == STOP_SLOTS)
		queue_start_run_locked(q, now, &list);
	else
		queue_run_locked(q, now, &list);
	atomic_add_return_mb(q->completing, 1); /* dropped below; see queue_drain() */
	lock_drop(&q->lock);

	ctrl_issue(q->ctrl, list);
	for (bio = rq->bio; bio; bio = next) {
		next = bio->next;
		bio->end_io(bio, rq->error);
	}
	free(rq);
	/* Drain returns only once every end_io has returned: the replies it sends use state
	 * (the FUSE session) that the drainer tears down next. */
	queue_put_completing(q);
}

/* q->lock held: end a freeze, and wake a freeze still waiting so that it fails. */
void queue_thaw_locked(struct queue *q)
{
	lock_assert_held(&q->lock);
	if (!q->frozen)
		return;
	q->frozen = false;
	q->thaws++;
	pthread_cond_broadcast(&q->idle_wait);
}

void queue_drain(struct queue *q)
{
	struct request *list = NULL;

	lock_take(&q->lock);
	q->held = q->plug_held = false;
	queue_thaw_locked(q);
	queue_unplug_locked(q, UNPLUG_IDLE, queue_now(q));
	queue_run_locked(q, queue_now(q), &list);
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);

	lock_take(&q->lock);
	queue_wait_idle_locked(q, true, NULL);
	lock_drop(&q->lock);
}

void queue_wait_idle_locked(struct queue *q, bool queued, const uint64_t *thaws)
{
	lock_assert_held(&q->lock);
	atomic_add_return_mb(q->drain_waiting, 1); /* seen by queue_put_completing() */
	while (!thaws || q->thaws == *thaws) {
		if ((queued && q->nr_queued) || q->ctrl->in_flight) {
			pthread_cond_wait(&q->idle_wait, &q->lock);
		} else if (smp_load_mb(q->completing)) {
			/* Completers ending their bios (replies, brief); their drop of completing
			 * is their last access to the queue and wakes nobody. */
			lock_drop(&q->lock);
			sched_yield();
			lock_take(&q->lock);
		} else {
			break;
		}
	}
	atomic_sub_return_mb(q->drain_waiting, 1);
}

unsigned int queue_abort(struct queue *q, int error)
{
	struct request *head = NULL, **tailp = &head, *rq, *list = NULL;
	unsigned int nbios = 0;
	uint64_t now;

	lock_take(&q->lock);
	now = queue_now(q);
	queue_account_time_locked(q, now);
	while ((rq = q->head)) {
		queue_unlink(q, rq);
		rq->work_next = NULL;
		*tailp = rq;
		tailp = &rq->work_next;
		nbios += rq->nr_bios;
		q->stats.op[rq->op].errors++;
	}
	q->held = q->plug_held = false;
	queue_thaw_locked(q);
	queue_unplug_locked(q, UNPLUG_IDLE, now);
	atomic_add_return_mb(q->completing, 1); /* dropped below; see queue_drain() */
	pthread_cond_broadcast(&q->free_wait);
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);

	while ((rq = head)) {
		struct bio *bio, *next;

		head = rq->work_next;
		for (bio = rq->bio; bio; bio = next) {
			next = bio->next;
			bio->end_io(bio, error);
		}
		free(rq);
	}
	queue_put_completing(q);
	return nbios;
}

bool queue_is_idle(struct queue *q)
{
	bool idle;

	lock_take(&q->lock);
	idle = !q->nr_queued && !q->ctrl->in_flight;
	lock_drop(&q->lock);
	return idle;
}

void queue_reconfigure(struct queue *q, const struct queue_params *qp,
		       const struct ctrl_params *cp)
{
	struct request *list = NULL;
	uint64_t now;

	lock_take(&q->lock);
	now = queue_now(q);
	q->p = *qp;
	ctrl_reconfigure_locked(q->ctrl, cp, now);
	if (!qp->plug) {
		queue_unplug_locked(q, UNPLUG_IDLE, now);
	} else if (q->plugged) {
		/* The plug ends by the new delay, counted from when it began. */
		q->unplug_at = q->plugged_since + (uint64_t)qp->unplug_delay_us * NSEC_PER_USEC;
		timer_arm(q->timer, &q->unplug_tmr, q->unplug_at > now ? q->unplug_at : now);
	}
	pthread_cond_broadcast(&q->free_wait);
	/* A stopped queue is started so that the new limits decide at once; it stops again
	 * if they still say so. */
	timer_cancel(q->timer, &q->restart_tmr);
	queue_start_run_locked(q, now, &list);
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
}

void queue_snapshot(struct queue *q, struct stats_snapshot *ss)
{
	uint64_t now;

	lock_take(&q->lock);
	now = queue_now(q);
	queue_account_time_locked(q, now);
	ss->now_ns = now;
	ss->plugged = q->plugged;
	ss->stopped = q->stopped;
	ss->held = q->held || q->plug_held || q->frozen;
	ss->stop_reason = q->stop_reason;
	ss->queued_requests = q->nr_queued;
	ss->queued_bytes = q->queued_bytes;
	ss->in_flight = q->ctrl->in_flight;
	ss->qp = q->p;
	ss->cp = q->ctrl->p;
	for (int d = 0; d < RATE_NR_DIRS; d++) {
		ss->bw_level[d] = rate_bucket_level(&q->ctrl->rate.bw[d], (int64_t)now);
		ss->iops_level[d] = rate_bucket_level(&q->ctrl->rate.iops[d], (int64_t)now);
	}
	ctrl_snapshot_models_locked(q->ctrl, ss, now);
	ss->s = q->stats;
	if (q->plugged)
		ss->s.plugged_ns += now - q->plugged_since;
	if (q->stopped)
		ss->s.stopped_ns += now - q->stopped_since;
	lock_drop(&q->lock);
}

void queue_stats_reset(struct queue *q)
{
	uint64_t now;

	lock_take(&q->lock);
	now = queue_now(q);
	memset(&q->stats, 0, sizeof(q->stats));
	q->plugged_since = q->stopped_since = q->last_acct = now;
	lock_drop(&q->lock);
}
