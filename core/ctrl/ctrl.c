// SPDX-License-Identifier: MIT
/* The disk controller emulator.
 *
 * Notes on the design.
 *
 * The controller has p.queue_depth command slots. The queue asks ctrl_admit_locked() before
 * it dispatches each request; the answer is one of
 *   OK      a slot is free and every rate bucket that covers the command is out of debt:
 *           the slot is taken and the buckets are charged the command's full cost;
 *   SLOTS   every slot is busy: the queue stops, and the next completion starts it
 *           (blk_stop_queue() from a full driver, blk_start_queue() from its completion);
 *   BUDGET  a bucket is in debt: the queue stops, and a timer armed for the moment the debt
 *           clears starts it;
 *   HEAD    the seek model's one head is busy: the queue stops likewise until it is free.
 * Which request is offered is ctrl_pick_locked()'s choice: the queue's head, or with
 * controller.reorder = sptf the one of the first queue_depth nearest the head.
 * While stopped, the queue keeps merging what arrives, which is where plugging pays off.
 *
 * Admitted requests go to a pool of worker threads (core/ctrl/pool.c) that run the backing I/O
 * (preadv, pwritev, fdatasync, punch hole), or run in the dispatching thread (ctrl_issue()).
 * A command completes at the later of its backing I/O's
 * end and dispatch + service latency: if the I/O finishes early, the completion is deferred
 * to the timer thread, so the slot stays busy for the service time without holding a worker.
 * That makes the device's peak rate queue_depth / latency commands per second, as on a real
 * device (Little's law).
 *
 * Device time. A timer fires a little after its deadline, and a slot freed by it is reused
 * only then. Left alone, that lateness would add to every command's service time and the
 * device would fall short of queue_depth / latency. So a slot freed at its deadline D
 * remembers D, and the command that next takes a free slot starts, in device time, at
 * max(D, the last submit of its bios, when the queue last became runnable: unplugged, or
 * out of rate debt), never later than now. Its deadline counts from there. Each bio still
 * completes no earlier than its submit + latency, plugging and rate waits still count, and
 * timer lateness is absorbed instead of accumulated.
 *
 * The path's own cost. What the user sees is the service time plus what comes after the
 * deadline: the timer's wake-up, the completion and the reply through FUSE (some 70 us).
 * With p.latency_absorb, the timer thread measures that lateness at each deadline (its
 * median, see ctrl_note_late()) and each deadline comes that much earlier, by at most half
 * the service time, so that the user sees the service time itself. A bio may then end that
 * much before its submit + latency, which is the point. The device itself stays busy until
 * the service's end: the slot freed early records that end, and a command waiting for it
 * starts no earlier. Absorbing shortens the round trip one user sees, never the device's
 * period, so queue_depth / latency still holds at any iodepth.
 *
 * The host's turnaround. A user who waits for each command before sending the next also pays
 * the way between the daemon and itself: the reply's way out and the next request's way in
 * (through a loop device, 50 to 300 us here). A device's data sheet rate at queue depth 1
 * has none of that. With p.latency_absorb_host, a command that reaches an idle device
 * within CTRL_HOST_MAX_NS of the end of the command before starts, in device time, where
 * that one's service ended, as if the device had not been idle: a synchronous stream gets
 * 1 / latency, and the way's cost is taken out of the service time the user sees. Across a
 * way back slower than the service the device keeps its own time, up to CTRL_HOST_MAX_NS
 * behind (ctrl_io_done()), so that a stream gets 1 / the mean service time. What the
 * daemon cannot tell apart from that way is a submitter's own pause: one shorter than
 * CTRL_HOST_MAX_NS between commands is absorbed too, which is why it is a setting of its own
 * (on in the device profiles). The turnarounds' median is shown in stats.
 *
 * Locking: admission state (slots, buckets, parameters) is guarded by the queue's lock,
 * which the queue holds whenever it calls in. The pool's work list has its own lock, taken
 * after q->lock and never held across I/O. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/barrier.h"
#include "core/util/clock.h"
#include "core/ctrl/ctrl.h"
#include "core/util/lock.h"
#include "core/util/log.h"
#include "core/queue/merge.h"
#include "core/queue/queue.h"

/* The caller holds the lock the admission state is under, its queue's (unit tests that
 * drive a controller without a queue check nothing). */
static void ctrl_assert_held(const struct ctrl *c)
{
	if (c->q)
		lock_assert_held(&c->q->lock);
}

/* One step of a running median: @est moves a small step towards @sample, so that rare long
 * stalls of a loaded machine do not drag it. */
static uint64_t median_step(uint64_t est, uint64_t sample)
{
	uint64_t step = NSEC_PER_USEC + est / 64;

	if (sample > est)
		return est + step;
	if (sample < est)
		return est > step ? est - step : 0;
	return est;
}

/* Track the median of @late. Timer thread only. */
static void ctrl_note_late(struct ctrl *c, uint64_t late)
{
	WRITE_ONCE(c->late_ns, median_step(READ_ONCE(c->late_ns), late));
}

/* A gap between a command's end and the next arrival at an idle device longer than this is
 * the submitter's pause, not the host's way. */
#define CTRL_HOST_MAX_NS (500 * NSEC_PER_USEC)

/* Whether @rq came back to an idle device within the host's turnaround of the last
 * command's end (not if it waited while the device was busy, nor after a pause). Tracks the
 * turnarounds' median in c->host_ns, for stats. q->lock held. */
static bool ctrl_turnaround(struct ctrl *c, const struct request *rq)
{
	uint64_t gap;

	if (c->in_flight || !c->idle_ns || rq->last_submit_ns < c->idle_ns)
		return false;
	gap = rq->last_submit_ns - c->idle_ns;
	if (gap > CTRL_HOST_MAX_NS)
		return false;
	WRITE_ONCE(c->host_ns, median_step(c->host_ns, gap));
	return true;
}

/* Latency timer: the service time of an already-executed command has passed. The time from
 * its deadline until its bios have been ended (the timer's wake-up, the completion, the
 * reply to the kernel) is the path's own cost, which the next deadlines absorb. */
static void ctrl_deadline_fn(struct timer_entry *e, uint64_t now)
{
	struct request *rq = (struct request *)((char *)e - offsetof(struct request, tmr));
	struct queue *q = rq->queue;
	struct ctrl *c = q->ctrl;
	uint64_t due = rq->deadline_ns;

	(void)now;
	queue_complete(q, rq); /* frees rq */
	now = queue_now(q);
	ctrl_note_late(c, now > due ? now - due : 0);
}

enum ctrl_admit_result ctrl_admit_locked(struct ctrl *c, struct request *rq, uint64_t now,
				  uint64_t not_before, uint64_t *ready_at)
{
	bool timed = latency_is_on(&c->p), back;
	uint64_t start;
	int64_t at;

	ctrl_assert_held(c);

	if (c->in_flight >= c->p.queue_depth)
		return CTRL_ADMIT_SLOTS;
	if (!rate_has_budget(&c->rate, rq->op, (int64_t)now, &at)) {
		*ready_at = (uint64_t)at;
		return CTRL_ADMIT_BUDGET;
	}
	/* A rotating disk takes its next read or write when the head is free: until then it
	 * waits in the queue, where it may merge and where SPTF may pick among the waiting. */
	if (latency_needs_head(&c->p, rq->op) && c->lat.head_free_ns > now) {
		*ready_at = c->lat.head_free_ns;
		return CTRL_ADMIT_HEAD;
	}
	rate_charge(&c->rate, rq->op, rq->op == BIO_OP_DISCARD ? 0 : rq->len, (int64_t)now);
	back = timed && ctrl_turnaround(c, rq);
	rq->host_back = false;
	c->idle_ns = 0;
	c->in_flight++;
	start = now;
	if (c->slot_free_nr) {
		uint64_t freed = c->slot_free[c->slot_free_head];

		c->slot_free_head = (c->slot_free_head + 1) % CTRL_MAX_SLOTS;
		c->slot_free_nr--;
		if (timed) {
			start = rq->last_submit_ns;
			if (start < not_before)
				start = not_before;
			if (start > now)
				start = now;
			/* The slot may come back before the device is done with it, when its
			 * deadline absorbed the path's cost: the device starts no earlier. */
			if (freed > start)
				start = freed;
			/* Back from the host's turnaround: the device was not idle, it goes on
			 * where it stopped. */
			else if (back && c->p.latency_absorb_host) {
				start = freed > c->idle_dev_ns ? freed : c->idle_dev_ns;
				rq->host_back = true;
				c->host_starts++;
			}
		}
	}
	/* The head takes its next command when it is free, in device time: a restart timer's
	 * lateness must not leave it idle (it would cost a sequential stream its rate). */
	if (latency_needs_head(&c->p, rq->op)) {
		uint64_t dev = c->lat.head_free_ns;

		if (dev < rq->last_submit_ns)
			dev = rq->last_submit_ns;
		if (dev < not_before)
			dev = not_before;
		if (dev < start)
			start = dev;
	}
	rq->dispatch_ns = start;
	rq->absorbed_ns = 0;
	rq->deadline_ns = timed ? latency_complete_ns(&c->lat, &c->p, rq->op, rq->offset, rq->len,
						      start)
				: start;
	/* An injected latency is service time: the command holds its slot for it. */
	if (c->admit_ns)
		rq->deadline_ns += c->admit_ns(c->admit_arg, rq);
	/* A cache flush ends after every command started before it, as on a device with a
	 * write cache: its service runs from when the last of them is due. */
	if (rq->op == BIO_OP_FLUSH) {
		uint64_t svc = rq->deadline_ns - start;

		if (rq->deadline_ns < c->last_deadline_ns + svc)
			rq->deadline_ns = c->last_deadline_ns + svc;
	}
	/* The user sees the service time plus what the path itself costs after the deadline:
	 * end the service that much early, up to half of it, so that what they see is the
	 * service time. */
	if (timed && c->p.latency_absorb) {
		uint64_t late = READ_ONCE(c->late_ns);
		uint64_t half = (rq->deadline_ns - start) / 2;

		rq->absorbed_ns = late < half ? late : half;
		rq->deadline_ns -= rq->absorbed_ns;
	}
	if (rq->deadline_ns > c->last_deadline_ns)
		c->last_deadline_ns = rq->deadline_ns;
	timer_entry_init(&rq->tmr, ctrl_deadline_fn);
	return CTRL_ADMIT_OK;
}

struct request *ctrl_pick_locked(const struct ctrl *c, struct request *head, uint64_t now)
{
	struct request *best = head, *rq;
	uint64_t best_pos = UINT64_MAX;
	unsigned int n = 0;

	ctrl_assert_held(c);

	if (c->p.reorder != CTRL_REORDER_SPTF || !latency_needs_head(&c->p, head->op))
		return head;
	for (rq = head; rq && n < c->p.queue_depth; rq = rq->next, n++) {
		uint64_t pos;

		if (rq->op == BIO_OP_FLUSH)
			break; /* nothing passes a flush */
		if (!latency_needs_head(&c->p, rq->op))
			continue;
		/* nor a request it overlaps: one from the head up to it, found in the merge
		 * index rather than by a walk, as queue_depth may be in the thousands */
		if (merge_index_overlaps(c->q, rq->offset, rq_end(rq), head->seq - 1, rq->seq))
			continue;
		pos = latency_position_ns(&c->lat, &c->p, rq->offset, now);
		if (pos < best_pos) {
			best_pos = pos;
			best = rq;
		}
	}
	return best;
}

void ctrl_snapshot_models_locked(const struct ctrl *c, struct stats_snapshot *ss, uint64_t now)
{
	const struct rate_credit *cr = &c->rate.credit;

	ctrl_assert_held(c);

	ss->credit_capacity = cr->capacity;
	ss->credit_baseline = cr->capacity ? cr->b.rate : 0;
	ss->credit_level = cr->capacity ? rate_bucket_level(&cr->b, (int64_t)now) : 0;
	ss->credit_earn = rate_credit_earn_rate(&c->rate, (int64_t)now);
	ss->credit_spend = rate_credit_spend_rate(&c->rate, (int64_t)now);
	ss->credits_spent = cr->spent;
	ss->cache_bytes = latency_cache_bytes(&c->lat, &c->p, now);
	ss->cliff_bytes = c->lat.cliff_bytes;
	ss->absorb_ns = c->p.latency_absorb ? READ_ONCE(c->late_ns) : 0;
	ss->host_ns = READ_ONCE(c->host_ns);
	ss->host_starts = c->host_starts;
}

bool ctrl_may_hold_locked(const struct ctrl *c)
{
	ctrl_assert_held(c);
	return latency_is_on(&c->p) || rate_is_limited(&c->rate);
}

void ctrl_release_locked(struct ctrl *c, struct request *rq, uint64_t now)
{
	bool timed = rq->deadline_ns != rq->dispatch_ns;

	ctrl_assert_held(c);

	if (!--c->in_flight) {
		c->idle_ns = now;
		c->idle_dev_ns = timed ? rq->free_ns : now;
	}
	if (!timed)
		return; /* no service latency: nothing to carry over */
	if (c->slot_free_nr == CTRL_MAX_SLOTS) {
		c->slot_free_head = (c->slot_free_head + 1) % CTRL_MAX_SLOTS;
		c->slot_free_nr--;
	}
	c->slot_free[(c->slot_free_head + c->slot_free_nr) % CTRL_MAX_SLOTS] = rq->free_ns;
	c->slot_free_nr++;
}

void ctrl_reconfigure_locked(struct ctrl *c, const struct ctrl_params *p, uint64_t now)
{
	unsigned int workers = c->p.workers;

	ctrl_assert_held(c);

	rate_reconfigure(&c->rate, p, (int64_t)now);
	latency_reconfigure(&c->lat, p);
	c->p = *p;
	c->p.workers = workers;
}

/* The backing I/O of @rq has finished, at @now: complete it now, or at its deadline. */
static void ctrl_io_done(struct ctrl *c, struct request *rq, uint64_t now)
{
	if (rq->deadline_ns > rq->dispatch_ns) {
		uint64_t end = rq->deadline_ns + rq->absorbed_ns; /* the service's end */

		/* The device frees the slot when its service ends, however late the timer and
		 * however early the absorbing deadline; or when the backing I/O, the slower
		 * part, ended. */
		rq->free_ns = now > end ? now : end;
		/* Back within the host's turnaround, a command can start so far in the past
		 * that its service ended before it even came (a short service, a slow way
		 * back). The device keeps its own time then, up to CTRL_HOST_MAX_NS behind: the
		 * next command starts where this one's service ended, so that a stream's
		 * longer services make up for the shorter ones and it gets 1 / the mean. */
		if (rq->host_back && now > end)
			rq->free_ns = now - end > CTRL_HOST_MAX_NS ? now - CTRL_HOST_MAX_NS : end;
		if (now < rq->deadline_ns) {
			timer_arm(c->timer, &rq->tmr, rq->deadline_ns);
			return;
		}
	}
	queue_complete_at(rq->queue, rq, now);
}

/* An asynchronous stage ended @rq's backing I/O (core/stage/request.h). */
static void ctrl_rq_io_done(struct request *rq, int error)
{
	struct ctrl *c = rq->io_done_arg;

	rq->error = error;
	ctrl_io_done(c, rq, queue_now(rq->queue));
}

/* An inline request whose backing I/O took longer than this hands the rest of its list to
 * the workers, once the recent average is as slow: about what waking a worker and switching
 * to it costs. */
#define CTRL_INLINE_SLOW_NS (30 * 1000)

/* Run @rq's backing I/O and complete it. Returns whether the backing I/O alone (not the
 * completion, whose reply may be preempted by the task it wakes) was slow: longer than
 * CTRL_INLINE_SLOW_NS, and the running average (1/8 per sample) over it too. One long
 * sample alone is most often the thread preempted on a busy CPU, not a backing store that
 * blocks, and handing the rest of the list to workers then only adds their wake-ups: on a
 * 2-CPU machine at iodepth 32 it cost a third of the 4 KiB reads. A store that blocks for
 * about 250 us or more (a page-cache miss on a disk) lifts the average over the bound at its
 * first slow I/O; one of 100 us at its third.
 * *@clock: when not 0, the time the I/O starts at, read by the caller (the end of the request
 * it ran before: clock reads cost here as much as the rest of the queue); set to the time the
 * I/O ended, or 0 when it runs on. */
static bool ctrl_exec(struct ctrl *c, struct request *rq, uint64_t *clock)
{
	uint64_t t0 = *clock ? *clock : queue_now(rq->queue), t1, t, avg;
	bool slow;
	int ret;

	rq->io_done = ctrl_rq_io_done;
	rq->io_done_arg = c;
	ret = c->exec(c->exec_arg, rq);
	*clock = 0;
	if (ret == IO_ASYNC)
		return false; /* started: the stage ends it through ctrl_rq_io_done() */
	rq->error = ret;
	t1 = queue_now(rq->queue);
	*clock = t1;
	t = t1 - t0;
	avg = READ_ONCE(c->exec_avg_ns);
	avg = avg - avg / 8 + t / 8;
	WRITE_ONCE(c->exec_avg_ns, avg);
	slow = t > CTRL_INLINE_SLOW_NS && avg > CTRL_INLINE_SLOW_NS;
	ctrl_io_done(c, rq, t1);
	return slow;
}

/* A pool thread runs one request. */
static void ctrl_worker_run(void *arg, struct request *rq)
{
	uint64_t clock = 0;

	ctrl_exec(arg, rq, &clock);
}

/* Set while this thread runs I/O inline: the completion of that I/O dispatches more, and
 * running that inline too would recurse once per queued request. */
static __thread bool tls_in_inline;

/* Unit-test mode (no workers): run everything in this thread. Completions dispatch more;
 * those are appended to the list of the outermost call instead of recursing. */
static void ctrl_run_here(struct ctrl *c, struct request *list)
{
	static __thread struct request *defer;

	if (tls_in_inline) {
		struct request **pp = &defer;

		while (*pp)
			pp = &(*pp)->work_next;
		*pp = list;
		return;
	}
	tls_in_inline = true;
	defer = list;
	while (defer) {
		struct request *rq = defer;
		uint64_t clock = 0;

		defer = rq->work_next;
		rq->work_next = NULL;
		ctrl_exec(c, rq, &clock);
	}
	tls_in_inline = false;
}

void ctrl_issue(struct ctrl *c, struct request *list)
{
	struct request *mine;
	uint64_t clock = 0;
	io_inline_fn inline_fn;
	void *inline_arg;

	if (!list)
		return;
	if (!c->pool.nr_threads) {
		ctrl_run_here(c, list); /* no workers (tests) */
		return;
	}
	if (pool_in_thread()) {
		/* A completion a worker ran dispatched more: the worker goes back to the list
		 * itself, so only the requests beyond its own need another worker. */
		pool_queue(&c->pool, list, 1);
		return;
	}
	/* A backing store that answers in a few microseconds (page cache, tmpfs) is run here
	 * whatever else waits for this thread: the hand-off to a worker and the worker's reply
	 * cost more than the I/O. Otherwise the thread asks whether it may. Never while a stage
	 * below may keep a request: the I/O could wait for it here. */
	inline_fn = io_thread_inline(&inline_arg);
	if (tls_in_inline || !inline_fn || (c->may_hold && c->may_hold(c->may_hold_arg)) ||
	    (READ_ONCE(c->exec_avg_ns) > CTRL_INLINE_SLOW_NS && !inline_fn(inline_arg))) {
		pool_queue(&c->pool, list, 0);
		return;
	}
	/* This thread runs the requests itself, in order, while each is quicker than handing it
	 * to a worker would be (page-cache or tmpfs I/O of a few microseconds). Once one is
	 * slow and the running average is too (ctrl_exec()), the backing store is doing real
	 * I/O: the rest go to the workers, to run in parallel, while this thread returns to its
	 * submitter. */
	tls_in_inline = true;
	while (list) {
		mine = list;
		list = list->work_next;
		mine->work_next = NULL;
		if (ctrl_exec(c, mine, &clock) && list) {
			pool_queue(&c->pool, list, 0);
			break;
		}
	}
	tls_in_inline = false;
}

int ctrl_init(struct ctrl *c, const struct ctrl_params *p, struct timer *t, ctrl_exec_fn exec,
	      void *exec_arg, int64_t now)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->p = *p;
	c->timer = t;
	c->exec = exec;
	c->exec_arg = exec_arg;
	rate_init(&c->rate, p, now);
	latency_init(&c->lat, p, (uint64_t)now);
	c->slot_free = calloc(CTRL_MAX_SLOTS, sizeof(*c->slot_free));
	if (!c->slot_free)
		return -ENOMEM;
	ret = pool_init(&c->pool, p->workers, "plugdisk-io", ctrl_worker_run, c);
	if (ret) {
		free(c->slot_free);
		c->slot_free = NULL;
	}
	return ret;
}

void ctrl_destroy(struct ctrl *c)
{
	pool_destroy(&c->pool);
	free(c->slot_free);
	c->slot_free = NULL;
}
