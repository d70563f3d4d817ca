// SPDX-License-Identifier: MIT
/* The queue's holds by hand, from the control file: stop and start (queue_hold), plug and
 * unplug (queue_plug_hold), freeze and thaw; and whether anything may hold requests
 * (queue_may_hold). Each hold is ended only by its own command; the queue dispatches when
 * none is left (see queue.c for the states). */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "core/ctrl/ctrl.h"
#include "core/util/barrier.h"
#include "core/queue/queue.h"
#include "core/queue/queue_int.h"

/* q->lock held: one hold by hand has ended; dispatch when none is left. */
static void queue_release_locked(struct queue *q, struct request **list)
{
	lock_assert_held(&q->lock);
	if (q->held || q->frozen)
		return;
	q->runnable_since = queue_now(q);
	queue_run_locked(q, q->runnable_since, list);
}

void queue_hold(struct queue *q, bool hold)
{
	struct request *list = NULL;

	lock_take(&q->lock);
	if (hold) {
		q->held = true;
	} else if (q->held) {
		q->held = false;
		queue_release_locked(q, &list);
	}
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
}

void queue_plug_hold(struct queue *q, bool plug)
{
	struct request *list = NULL;
	uint64_t now;

	lock_take(&q->lock);
	now = queue_now(q);
	if (plug) {
		if (!q->plugged)
			queue_plug_locked(q, now);
		q->plug_held = true;
	} else if (q->plug_held) {
		q->plug_held = false;
		queue_unplug_locked(q, UNPLUG_IDLE, now);
		queue_run_locked(q, now, &list);
	}
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
}

/* q->lock held: wait for idle_wait, or 10 ms, whichever comes first. */
static void queue_wait_tick_locked(struct queue *q)
{
	struct timespec ts;

	lock_assert_held(&q->lock);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 10 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&q->idle_wait, &q->lock, &ts);
}

int queue_freeze(struct queue *q, bool (*held)(void *arg), void *arg)
{
	struct request *list = NULL;
	uint64_t thaws;
	int ret = 0;

	lock_take(&q->lock);
	q->frozen = true;
	thaws = q->thaws;
	if (!held) {
		queue_wait_idle_locked(q, false, &thaws);
	} else {
		/* As queue_wait_idle_locked(), but asking @held at each wake-up and every 10 ms: a
		 * stall below signals nothing here. */
		atomic_add_return_mb(q->drain_waiting, 1);
		while (q->thaws == thaws) {
			if (q->ctrl->in_flight) {
				if (held(arg)) {
					ret = -EBUSY;
					break;
				}
				queue_wait_tick_locked(q);
			} else if (smp_load_mb(q->completing)) {
				lock_drop(&q->lock);
				sched_yield();
				lock_take(&q->lock);
			} else {
				break;
			}
		}
		atomic_sub_return_mb(q->drain_waiting, 1);
	}
	if (ret == -EBUSY) {
		/* Not frozen after all: what queued meanwhile goes. */
		queue_thaw_locked(q);
		queue_release_locked(q, &list);
	} else if (q->thaws != thaws) {
		ret = -ECANCELED; /* thawed (or drained) before the image was consistent */
	}
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
	return ret;
}

void queue_thaw(struct queue *q)
{
	struct request *list = NULL;

	lock_take(&q->lock);
	if (q->frozen) {
		queue_thaw_locked(q);
		queue_release_locked(q, &list);
	}
	lock_drop(&q->lock);
	ctrl_issue(q->ctrl, list);
}

void queue_hold_state(struct queue *q, struct queue_hold_state *st)
{
	lock_take(&q->lock);
	st->held = q->held;
	st->plug_held = q->plug_held;
	st->frozen = q->frozen;
	lock_drop(&q->lock);
}

bool queue_may_hold(struct queue *q)
{
	bool hold;

	lock_take(&q->lock);
	hold = q->held || q->plug_held || q->frozen || ctrl_may_hold_locked(q->ctrl);
	lock_drop(&q->lock);
	return hold;
}
