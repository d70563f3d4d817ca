// SPDX-License-Identifier: MIT
/* The write cache's I/O stage: reads laid over the pending writes, writes that complete once
 * cached, flushes that destage the epochs they close, discards. Locking: core/cache/cache.c.
 *
 * Pending writes. A write completes once its data is copied into a struct cache_write on
 * c->head..c->tail, in completion order (seq). It belongs to the open flush epoch
 * (c->epoch). A flush closes that epoch (epoch++) the moment it reaches the cache, so a write
 * still in flight then, which nobody has been told is done, falls into the next epoch; that is
 * the order dm-log-writes records. The flush then destages every write of the epochs it
 * closed, calls the lower stage's flush (fdatasync) and only then completes: every write that
 * completed before the flush was issued is on the image and synced. With cache.flush =
 * ignore it completes at once and nothing is made durable (a disk that lies).
 * A new write that covers a pending write of the same epoch supersedes it, as a drive
 * overwrites a cache line: a hot block does not pile up copies.
 *
 * Reads. A read takes a reference on every pending write it overlaps, reads the image, then
 * lays those writes over what it read, oldest first. A write destaged meanwhile is then laid
 * over its own data, which is harmless; one that was destaged before is in what was read.
 *
 * Power generations. c->gen grows at each cut. A request notes it when it enters and fails
 * with EIO if it changed by the time it ends (cache_power_lost()), even when the power is
 * back by then: a read would otherwise lay over its data writes the cut dropped, and the
 * kernel keep that page; a flush would report epochs durable that the cut threw away.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache/cache_int.h"
#include "core/util/full_rw.h"
#include "core/util/lock.h"

static int lower_simple(struct cache *c, struct request *orig, enum bio_op op)
{
	struct request rq = { .op = op, .offset = orig->offset, .len = orig->len,
			      .bio = orig->bio, .biotail = orig->biotail,
			      .nr_bios = orig->nr_bios, .nr_iov = orig->nr_iov };

	return io_exec_wait(c->lower, c->lower_arg, &rq);
}

/* The overlapping writes a read lays over its data. */
struct collect {
	struct cache_write **v;
	size_t n, cap;
	bool oom;
	struct cache_write **stackv;
};

static bool collect_one(struct cache_write *o, void *arg)
{
	struct collect *col = arg;

	if (col->n == col->cap) {
		struct cache_write **nv = malloc(2 * col->cap * sizeof(*nv));

		if (!nv) {
			col->oom = true;
			return true;
		}
		memcpy(nv, col->v, col->n * sizeof(*nv));
		if (col->v != col->stackv)
			free(col->v);
		col->v = nv;
		col->cap *= 2;
	}
	col->v[col->n++] = o;
	return false;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct cache_write *x = *(struct cache_write *const *)a;
	const struct cache_write *y = *(struct cache_write *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cache_read(struct cache *c, struct request *rq)
{
	struct cache_write *stackv[16], **v = stackv;
	size_t n = 0;
	uint64_t gen;
	int ret;

	lock_take(&c->lock);
	if (!c->powered) {
		lock_drop(&c->lock);
		return -EIO;
	}
	gen = c->gen;
	if (c->head) {
		struct collect col = { stackv, 0, 16, false, stackv };

		cache_map_overlaps(c, rq->offset, rq->len, UINT64_MAX, collect_one, &col);
		v = col.v;
		n = col.n;
		if (col.oom) {
			ret = -ENOMEM;
			goto out_unref;
		}
		qsort(v, n, sizeof(*v), cmp_seq);
		for (size_t i = 0; i < n; i++)
			v[i]->refs++;
	}
	lock_drop(&c->lock);

	ret = lower_simple(c, rq, BIO_OP_READ);
	for (size_t i = 0; i < n && ret == 0; i++) {
		uint64_t s = v[i]->offset > rq->offset ? v[i]->offset : rq->offset;
		uint64_t e = v[i]->offset + v[i]->len < rq_end(rq) ? v[i]->offset + v[i]->len
								     : rq_end(rq);

		rq_copy(rq, s - rq->offset, v[i]->data + (s - v[i]->offset), e - s, true);
	}

	lock_take(&c->lock);
	if (cache_power_lost(c, gen))
		ret = -EIO; /* what it laid over its data may be what the cut dropped */
	for (size_t i = 0; i < n; i++)
		if (--v[i]->refs == 0 && v[i]->detached)
			free(v[i]);
out_unref:
	lock_drop(&c->lock);
	if (v != stackv)
		free(v);
	return ret;
}

static int cache_write(struct cache *c, struct request *rq)
{
	struct cache_write *w, *o, *stackv[16];
	bool was_empty;
	uint64_t gen;

	if (!rq->len)
		return 0;
	w = cache_write_alloc(rq->offset, rq->len);
	if (!w)
		return -ENOMEM;
	rq_copy(rq, 0, w->data, rq->len, false);

	lock_take(&c->lock);
	if (c->powered)
		cache_arm_fire_locked(c, BIO_OP_WRITE);
	gen = c->gen;
	/* Room: destage in this thread, as a full drive cache makes the host wait. */
	while (!cache_power_lost(c, gen) && c->dirty + w->len > c->p.size) {
		o = cache_pick_eligible(c, &cache_filter_all);
		if (o) {
			int ret = cache_destage_one(c, o);

			if (ret) {
				lock_drop(&c->lock);
				free(w);
				return ret;
			}
		} else {
			c->room_waiters++;
			pthread_cond_wait(&c->cond, &c->lock);
			c->room_waiters--;
		}
	}
	if (cache_power_lost(c, gen)) {
		lock_drop(&c->lock);
		free(w);
		return -EIO;
	}
	w->seq = ++c->seq;
	w->epoch = c->epoch;
	w->unit = c->p.atomic_write;
	w->cached_ns = cache_now(c);
	/* Supersede what it covers in its epoch; note whether an older write overlaps. */
	if (c->head) {
		struct collect col = { stackv, 0, 16, false, stackv };

		cache_map_overlaps(c, w->offset, w->len, UINT64_MAX, collect_one, &col);
		for (size_t i = 0; i < col.n; i++) {
			o = col.v[i];
			if (o->epoch == w->epoch && !o->destaging && !o->refs &&
			    o->offset >= w->offset && o->offset + o->len <= w->offset + w->len)
				cache_map_del(c, o);
			else
				w->older_overlap = true;
		}
		if (col.oom)
			w->older_overlap = true; /* some went unseen: check at destage time */
		if (col.v != stackv)
			free(col.v);
	}
	was_empty = cache_map_add(c, w);
	if (c->has_log)
		wlog_append(&c->wlog, WLOG_WRITE, w->epoch, w->offset, w->len, w->data);
	if (was_empty)
		pthread_cond_broadcast(&c->cond); /* the destage thread sleeps without work */
	lock_drop(&c->lock);
	return 0;
}

static int cache_flush(struct cache *c, struct request *rq)
{
	struct destage_filter f = { 0, UINT64_MAX };
	uint64_t epoch, gen;
	int ret;

	lock_take(&c->lock);
	if (c->powered)
		cache_arm_fire_locked(c, BIO_OP_FLUSH);
	if (!c->powered) {
		lock_drop(&c->lock);
		return -EIO;
	}
	gen = c->gen;
	epoch = c->epoch++;
	c->st.flushes++;
	if (c->p.flush == CACHE_FLUSH_IGNORE) {
		c->st.flushes_ignored++;
		if (c->has_log) /* the host saw it complete: so does the log, flagged */
			wlog_append_flags(&c->wlog, WLOG_FLUSH, WLOG_F_IGNORED, epoch, 0, 0, NULL);
		lock_drop(&c->lock);
		return 0;
	}
	f.max_epoch = epoch;
	ret = cache_drain(c, &f, gen);
	if (!ret) {
		lock_drop(&c->lock);
		ret = lower_simple(c, rq, BIO_OP_FLUSH);
		lock_take(&c->lock);
		if (cache_power_lost(c, gen))
			ret = -EIO;
	}
	if (!ret && epoch > c->durable_epoch)
		c->durable_epoch = epoch;
	/* A failed flush has used its epoch up: the log says so, so that replay numbers flushes
	 * by the ones that completed. */
	if (c->has_log)
		wlog_append(&c->wlog, ret ? WLOG_FLUSH_FAILED : WLOG_FLUSH, epoch, 0, 0, NULL);
	lock_drop(&c->lock);
	return ret;
}

static int cache_discard(struct cache *c, struct request *rq)
{
	uint64_t gen;
	int ret;

	/* Rare: every pending write goes first, so none lands on the discarded range later. */
	lock_take(&c->lock);
	gen = c->gen;
	ret = cache_drain(c, &cache_filter_all, gen);
	if (ret) {
		lock_drop(&c->lock);
		return ret;
	}
	c->discarding++; /* a poweron waits for it: it must not land after */
	/* Logged as it goes down, with every write before it on the image: a write that
	 * completes while it is in flight is cached after it, pending, and lands over it. */
	if (c->has_log)
		wlog_append(&c->wlog, WLOG_DISCARD, c->epoch, rq->offset, rq->len, NULL);
	lock_drop(&c->lock);
	ret = lower_simple(c, rq, BIO_OP_DISCARD);
	lock_take(&c->lock);
	if (--c->discarding == 0)
		pthread_cond_broadcast(&c->cond);
	if (cache_power_lost(c, gen))
		ret = -EIO;
	lock_drop(&c->lock);
	return ret;
}

int cache_exec(void *arg, struct request *rq)
{
	struct cache *c = arg;

	switch (rq->op) {
	case BIO_OP_READ:
		return cache_read(c, rq);
	case BIO_OP_WRITE:
		return cache_write(c, rq);
	case BIO_OP_FLUSH:
		return cache_flush(c, rq);
	case BIO_OP_DISCARD:
		return cache_discard(c, rq);
	default:
		return -EINVAL;
	}
}
