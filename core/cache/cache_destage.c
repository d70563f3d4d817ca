// SPDX-License-Identifier: MIT
/* Destaging the write cache's pending writes to the image: which write may go next, the
 * drain that flushes, discards and a full cache wait on, and the background thread.
 *
 * Destaging. A background thread (or cache_tick() in unit tests) writes pending writes to the
 * image once they have waited cache.destage_delay_ms, at cache.destage_rate, picking a
 * random eligible one among the oldest (PICK_WINDOW) each time: a drive's cache does not
 * destage in submission order. A chunk index (core/cache/cache_map.c) finds the pending writes
 * that overlap a range without walking the list.
 * A write is eligible when no older pending write overlaps it, so overlapping writes reach
 * the image in their order and the image never holds an older write over a newer one.
 * Flushes, discards and a write that finds the cache full destage in the same random order
 * in their own thread, without the rate (the controller's latency models their cost).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "core/cache/cache_int.h"
#include "core/util/prng.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "core/util/lock.h"

const struct destage_filter cache_filter_all = { UINT64_MAX, UINT64_MAX };

static bool found_one(struct cache_write *o, void *arg)
{
	(void)o, (void)arg;
	return true;
}

int cache_lower_write(io_exec_fn exec, void *arg, uint64_t off, const void *data, uint64_t len)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct bio bio = { .op = BIO_OP_WRITE, .offset = off, .len = (uint32_t)len, .iovcnt = 1,
			   .iov = &iov };
	struct request rq = { .op = BIO_OP_WRITE, .offset = off, .len = len, .bio = &bio,
			      .biotail = &bio, .nr_bios = 1, .nr_iov = 1 };

	return io_exec_wait(exec, arg, &rq);
}

/* May @w go to the image now? c->lock held. */
static bool write_is_eligible(struct cache *c, struct cache_write *w)
{
	if (w->destaging)
		return false;
	if (!w->older_overlap)
		return true;
	if (cache_map_overlaps(c, w->offset, w->len, w->seq, found_one, NULL))
		return false;
	w->older_overlap = false; /* older writes never appear later */
	return true;
}

static bool write_matches(const struct cache_write *w, const struct destage_filter *f)
{
	return w->epoch <= f->max_epoch && w->cached_ns <= f->due_ns;
}

/* How far from the oldest write the random pick may start: the writes that match a filter
 * are a prefix of the list (epochs and cache times grow with seq), so a pick looks at the
 * oldest ones, in a random order within this window, and never walks the whole list. */
#define PICK_WINDOW 64

struct cache_write *cache_pick_eligible(struct cache *c, const struct destage_filter *f)
{
	struct cache_write *start, *w;
	uint64_t r;

	if (!c->head || !write_matches(c->head, f))
		return NULL;
	r = prng_splitmix64(&c->destage_rng) % (c->nr_dirty < PICK_WINDOW ? c->nr_dirty : PICK_WINDOW);
	for (start = c->head; r-- && start->next && write_matches(start->next, f);)
		start = start->next;
	/* From the start to the end of the matching prefix, then from the head to the start. */
	for (w = start; w && write_matches(w, f); w = w->next)
		if (write_is_eligible(c, w))
			return w;
	for (w = c->head; w != start; w = w->next)
		if (write_is_eligible(c, w))
			return w;
	return NULL;
}

int cache_destage_one(struct cache *c, struct cache_write *w)
{
	int ret;

	w->destaging = true;
	c->destaging++;
	lock_drop(&c->lock);
	ret = cache_lower_write(c->lower, c->lower_arg, w->offset, w->data, w->len);
	lock_take(&c->lock);
	w->destaging = false;
	c->destaging--;
	if (w->orphan) {
		cache_write_release(w);
		ret = -EIO;
	} else if (ret == 0) {
		c->st.destaged_bytes += w->len;
		c->st.destaged_writes++;
		cache_map_del(c, w);
	}
	pthread_cond_broadcast(&c->cond);
	return ret;
}

int cache_drain(struct cache *c, const struct destage_filter *f, uint64_t gen)
{
	for (;;) {
		struct cache_write *w;
		int ret;

		if (cache_power_lost(c, gen))
			return -EIO;
		if (!c->head || !write_matches(c->head, f))
			return 0; /* the oldest write is the first to match */
		w = cache_pick_eligible(c, f);
		if (!w) {
			pthread_cond_wait(&c->cond, &c->lock);
			continue;
		}
		ret = cache_destage_one(c, w);
		if (ret)
			return ret;
	}
}

/* --- background destaging --------------------------------------------------------------- */

#define DESTAGE_SLACK_NS NSEC_PER_MSEC

uint64_t cache_tick(struct cache *c)
{
	struct destage_filter f = { UINT64_MAX, 0 };
	uint64_t now, delay, wait = UINT64_MAX;
	struct cache_write *w;

	lock_take(&c->lock);
	now = cache_now(c);
	if (c->powered && c->arm.kind == CACHE_ARM_TIME) {
		if (now >= c->arm.at_ns) {
			cache_cut_locked(c, "armed at a time");
			lock_drop(&c->lock);
			return 0;
		}
		wait = c->arm.at_ns - now;
	}
	if (!c->powered || !c->head || c->frozen)
		goto out; /* cache_thaw() wakes the thread */
	/* The rate allows a burst of DESTAGE_SLACK_NS: waking a thread for every small write
	 * would cost more than the write. */
	if (c->p.destage_rate && now + DESTAGE_SLACK_NS < c->next_destage_ns) {
		if (c->next_destage_ns - DESTAGE_SLACK_NS - now < wait)
			wait = c->next_destage_ns - DESTAGE_SLACK_NS - now;
		goto out;
	}
	delay = (uint64_t)c->p.destage_delay_ms * NSEC_PER_MSEC;
	f.due_ns = now >= delay ? now - delay : 0;
	w = cache_pick_eligible(c, &f);
	if (!w) {
		/* The oldest write is the first due; one blocked by a destage in flight is
		 * retried when that ends (the cond wakes the thread). */
		uint64_t due = c->head->cached_ns + delay;

		if (due > now && due - now < wait)
			wait = due - now;
		else if (due <= now && NSEC_PER_MSEC < wait)
			wait = NSEC_PER_MSEC;
		goto out;
	}
	if (c->p.destage_rate) {
		uint64_t start = c->next_destage_ns > now ? c->next_destage_ns : now;

		c->next_destage_ns = start + w->len * NSEC_PER_SEC / c->p.destage_rate;
	}
	if (cache_destage_one(c, w)) {
		/* A failing image: back off instead of spinning; flushes report the error. */
		wait = 100 * NSEC_PER_MSEC;
		goto out;
	}
	wait = 0;
out:
	lock_drop(&c->lock);
	return wait;
}

static void *cache_thread(void *arg)
{
	struct cache *c = arg;

	pthread_setname_np(pthread_self(), "plugdisk-cache");
	for (;;) {
		uint64_t wait = cache_tick(c);
		struct timespec ts;

		if (!wait)
			continue;
		if (wait > NSEC_PER_SEC)
			wait = NSEC_PER_SEC;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(wait / NSEC_PER_SEC);
		ts.tv_nsec += (long)(wait % NSEC_PER_SEC);
		if (ts.tv_nsec >= (long)NSEC_PER_SEC) {
			ts.tv_sec++;
			ts.tv_nsec -= (long)NSEC_PER_SEC;
		}
		lock_take(&c->lock);
		if (!c->stop)
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		if (c->stop) {
			lock_drop(&c->lock);
			break;
		}
		lock_drop(&c->lock);
	}
	return NULL;
}

int cache_start_thread(struct cache *c)
{
	int err = pthread_create(&c->thread, NULL, cache_thread, c);

	if (err) {
		log_err("pthread_create (cache): %s", strerror(err));
		return -err;
	}
	c->has_thread = true;
	return 0;
}
