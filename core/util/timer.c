// SPDX-License-Identifier: MIT
/* Timer thread and its min-heap of embedded entries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "core/util/clock.h"
#include "core/util/log.h"
#include "core/util/timer.h"

void timer_entry_init(struct timer_entry *e, timer_fn fn)
{
	e->deadline = 0;
	e->heap_idx = -1;
	e->fn = fn;
}

static void heap_swap(struct timer *t, int a, int b)
{
	struct timer_entry *x = t->heap[a];

	t->heap[a] = t->heap[b];
	t->heap[b] = x;
	t->heap[a]->heap_idx = a;
	t->heap[b]->heap_idx = b;
}

static void heap_up(struct timer *t, int i)
{
	while (i > 0) {
		int p = (i - 1) / 2;

		if (t->heap[p]->deadline <= t->heap[i]->deadline)
			break;
		heap_swap(t, i, p);
		i = p;
	}
}

static void heap_down(struct timer *t, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < t->nr && t->heap[l]->deadline < t->heap[m]->deadline)
			m = l;
		if (r < t->nr && t->heap[r]->deadline < t->heap[m]->deadline)
			m = r;
		if (m == i)
			break;
		heap_swap(t, i, m);
		i = m;
	}
}

/* t->lock held */
static void heap_remove(struct timer *t, struct timer_entry *e)
{
	int i = e->heap_idx;

	t->nr--;
	if (i != t->nr) {
		t->heap[i] = t->heap[t->nr];
		t->heap[i]->heap_idx = i;
		heap_down(t, i);
		heap_up(t, i);
	}
	e->heap_idx = -1;
}

/* t->lock held. Grows the heap by doubling as entries are armed (it holds at most one entry
 * per request in flight plus the queue's two timers). There is no way to report a failure to
 * the caller, and dropping or running the entry early would be wrong, so a failed realloc
 * aborts. */
static void heap_insert(struct timer *t, struct timer_entry *e)
{
	if (t->nr == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		struct timer_entry **h = realloc(t->heap, (size_t)cap * sizeof(*h));

		if (!h) {
			log_err("timer: realloc: out of memory");
			abort();
		}
		t->heap = h;
		t->cap = cap;
	}
	t->heap[t->nr] = e;
	e->heap_idx = t->nr++;
	heap_up(t, e->heap_idx);
}

void timer_arm(struct timer *t, struct timer_entry *e, uint64_t deadline)
{
	bool wake;

	pthread_mutex_lock(&t->lock);
	if (e->heap_idx >= 0)
		heap_remove(t, e);
	e->deadline = deadline;
	heap_insert(t, e);
	/* The thread looks at the heap before it sleeps, and wakes by itself at sleep_until:
	 * only an earlier deadline needs a signal. Moving an armed entry later never does. */
	wake = deadline < t->sleep_until;
	pthread_mutex_unlock(&t->lock);
	if (wake && t->threaded)
		pthread_cond_signal(&t->cond);
}

void timer_cancel(struct timer *t, struct timer_entry *e)
{
	pthread_mutex_lock(&t->lock);
	if (e->heap_idx >= 0)
		heap_remove(t, e);
	pthread_mutex_unlock(&t->lock);
}

bool timer_is_armed(struct timer *t, struct timer_entry *e)
{
	bool armed;

	pthread_mutex_lock(&t->lock);
	armed = e->heap_idx >= 0;
	pthread_mutex_unlock(&t->lock);
	return armed;
}

uint64_t timer_next_deadline(struct timer *t)
{
	uint64_t d;

	pthread_mutex_lock(&t->lock);
	d = t->nr ? t->heap[0]->deadline : UINT64_MAX;
	pthread_mutex_unlock(&t->lock);
	return d;
}

int timer_run_due(struct timer *t, uint64_t now)
{
	int n = 0;

	pthread_mutex_lock(&t->lock);
	while (t->nr && t->heap[0]->deadline <= now) {
		struct timer_entry *e = t->heap[0];

		heap_remove(t, e);
		t->fired++;
		pthread_mutex_unlock(&t->lock);
		e->fn(e, now);
		n++;
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

static void *timer_thread(void *arg)
{
	struct timer *t = arg;

	pthread_setname_np(pthread_self(), "plugdisk-timer");
	/* The default 50 us slack would make every deadline late by up to 50 us. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		uint64_t now = clock_now_ns();

		if (t->nr && t->heap[0]->deadline <= now) {
			pthread_mutex_unlock(&t->lock);
			timer_run_due(t, now);
			pthread_mutex_lock(&t->lock);
			continue;
		}
		if (!t->nr) {
			t->sleep_until = UINT64_MAX;
			pthread_cond_wait(&t->cond, &t->lock);
		} else {
			uint64_t d = t->heap[0]->deadline;
			struct timespec ts = { .tv_sec = d / NSEC_PER_SEC, .tv_nsec = d % NSEC_PER_SEC };

			t->sleep_until = d;
			pthread_cond_timedwait(&t->cond, &t->lock, &ts);
		}
		t->sleep_until = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int timer_init(struct timer *t, bool threaded)
{
	pthread_condattr_t ca;
	int err;

	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &ca);
	pthread_condattr_destroy(&ca);
	t->threaded = threaded;
	if (!threaded)
		return 0;
	err = pthread_create(&t->thread, NULL, timer_thread, t);
	if (err) {
		log_err("pthread_create (timer): %s", strerror(err));
		t->threaded = false;
		return -err;
	}
	return 0;
}

void timer_stop(struct timer *t)
{
	bool was;

	if (!t->threaded)
		return; /* written once by timer_init(), read-only after */
	pthread_mutex_lock(&t->lock);
	was = t->stop;
	t->stop = true;
	pthread_mutex_unlock(&t->lock);
	if (was)
		return;
	pthread_cond_signal(&t->cond);
	pthread_join(t->thread, NULL);
}

void timer_destroy(struct timer *t)
{
	timer_stop(t);
	free(t->heap);
	t->heap = NULL;
	t->nr = t->cap = 0;
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
}
