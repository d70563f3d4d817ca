// SPDX-License-Identifier: MIT
/* The volatile write cache: the I/O stage (reads, writes, flushes, discards), destaging to
 * the image, and the cache's life cycle. Its block map of pending writes is core/cache_map.c,
 * the power cut core/cache_cut.c, the write log core/wlog.c.
 *
 * Notes on the design.
 *
 * The cache is an I/O stage between the controller and the backend. With cache.mode =
 * writeback the daemon puts it there; with none it is not in the path at all.
 *
 * Pending writes. A write completes once its data is copied into a struct cache_write on
 * c->head..c->tail, in completion order (seq). It belongs to the open flush epoch
 * (c->epoch). A flush closes that epoch (epoch++) the moment it reaches the cache, so a write
 * still in flight then, which nobody has been told is done, falls into the next epoch; that is
 * the order dm-log-writes records. The flush then destages every write of the epochs it
 * closed, calls the lower stage's flush (fdatasync) and only then completes: every write that
 * completed before the flush was issued is on the image and synced. With cache.flush =
 * ignore it completes at once and nothing is made durable (a disk that lies).
 *
 * Destaging. A background thread (or cache_tick() in unit tests) writes pending writes to the
 * image once they have waited cache.destage_delay_ms, at cache.destage_rate, picking a
 * random eligible one among the oldest (PICK_WINDOW) each time: a drive's cache does not
 * destage in submission order. A chunk index (core/cache_map.c) finds the pending writes
 * that overlap a range without walking the list.
 * A write is eligible when no older pending write overlaps it, so overlapping writes reach
 * the image in their order and the image never holds an older write over a newer one.
 * Flushes, discards and a write that finds the cache full destage in the same random order
 * in their own thread, without the rate (the controller's latency models their cost).
 * A new write that covers a pending write of the same epoch supersedes it, as a drive
 * overwrites a cache line: a hot block does not pile up copies.
 *
 * Reads. A read takes a reference on every pending write it overlaps, reads the image, then
 * lays those writes over what it read, oldest first. A write destaged meanwhile is then laid
 * over its own data, which is harmless; one that was destaged before is in what was read.
 *
 * Power generations. c->gen grows at each cut. A request notes it when it enters and fails
 * with EIO if it changed by the time it ends (power_lost()), even when the power is back by
 * then: a read would otherwise lay over its data writes the cut dropped, and the kernel keep
 * that page; a flush would report epochs durable that the cut threw away.
 *
 * The power cut: core/cache_cut.c.
 *
 * Locking: one mutex, c->lock, guards everything; it is never held across the lower stage.
 * A write being destaged is marked (destaging) and stays on the list until it is on the
 * image. A cut waits for nothing: it hands such a write to its destage (orphan), which
 * frees it when the lower stage gives it back and fails its caller with EIO; a poweron waits
 * for c->destaging and c->discarding to fall to 0, so that nothing from before the cut lands
 * after it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cache_int.h"
#include "core/prng.h"
#include "core/clock.h"
#include "core/full_rw.h"
#include "core/log.h"

const char *const cache_mode_names[] = { "none", "writeback", NULL };
const char *const cache_flush_names[] = { "honour", "ignore", NULL };
const char *const cache_cut_names[] = { "drop", "prefix", "subset", "tear", NULL };

int cache_name_index(const char *const *names, const char *name)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

void cache_params_default(struct cache_params *p)
{
	memset(p, 0, sizeof(*p));
	p->mode = CACHE_MODE_NONE;
	p->size = CACHE_DEFAULT_SIZE;
	p->destage_delay_ms = CACHE_DEFAULT_DESTAGE_DELAY_MS;
	p->destage_rate = CACHE_DEFAULT_DESTAGE_RATE;
	p->flush = CACHE_FLUSH_HONOUR;
	p->atomic_write = CACHE_DEFAULT_ATOMIC_WRITE;
	p->powercut = CACHE_CUT_SUBSET;
	p->seed = 0;
}

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

static int lower_simple(struct cache *c, struct request *orig, enum bio_op op)
{
	struct request rq = { .op = op, .offset = orig->offset, .len = orig->len,
			      .bio = orig->bio, .biotail = orig->biotail,
			      .nr_bios = orig->nr_bios, .nr_iov = orig->nr_iov };

	return io_exec_wait(c->lower, c->lower_arg, &rq);
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

/* Which writes a destage pass may take. */
struct destage_filter {
	uint64_t max_epoch;	/* only writes of epochs <= this */
	uint64_t due_ns;	/* only writes cached at or before this */
};

static bool write_matches(const struct cache_write *w, const struct destage_filter *f)
{
	return w->epoch <= f->max_epoch && w->cached_ns <= f->due_ns;
}

/* How far from the oldest write the random pick may start: the writes that match a filter
 * are a prefix of the list (epochs and cache times grow with seq), so a pick looks at the
 * oldest ones, in a random order within this window, and never walks the whole list. */
#define PICK_WINDOW 64

/* A random eligible write that matches @f, or NULL. c->lock held. */
static struct cache_write *pick_eligible(struct cache *c, const struct destage_filter *f)
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

/* Write @w to the image and take it off the list. c->lock held; dropped meanwhile. -EIO
 * when a cut came meanwhile: it took @w off the list and left it to us to free. */
static int destage_one(struct cache *c, struct cache_write *w)
{
	int ret;

	w->destaging = true;
	c->destaging++;
	pthread_mutex_unlock(&c->lock);
	ret = cache_lower_write(c->lower, c->lower_arg, w->offset, w->data, w->len);
	pthread_mutex_lock(&c->lock);
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

/* Has the power gone since a request noted generation @gen? c->lock held. */
static bool power_lost(const struct cache *c, uint64_t gen)
{
	return !c->powered || c->gen != gen;
}

/* Destage every write matching @f, waiting for those others are destaging, for a request
 * that came at power generation @gen. c->lock held. 0, -EIO when the power goes, or the
 * lower stage's error. */
static int drain(struct cache *c, const struct destage_filter *f, uint64_t gen)
{
	for (;;) {
		struct cache_write *w;
		int ret;

		if (power_lost(c, gen))
			return -EIO;
		if (!c->head || !write_matches(c->head, f))
			return 0; /* the oldest write is the first to match */
		w = pick_eligible(c, f);
		if (!w) {
			pthread_cond_wait(&c->cond, &c->lock);
			continue;
		}
		ret = destage_one(c, w);
		if (ret)
			return ret;
	}
}

static const struct destage_filter filter_all = { UINT64_MAX, UINT64_MAX };
/* --- the stage -------------------------------------------------------------------------- */

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

	pthread_mutex_lock(&c->lock);
	if (!c->powered) {
		pthread_mutex_unlock(&c->lock);
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
	pthread_mutex_unlock(&c->lock);

	ret = lower_simple(c, rq, BIO_OP_READ);
	for (size_t i = 0; i < n && ret == 0; i++) {
		uint64_t s = v[i]->offset > rq->offset ? v[i]->offset : rq->offset;
		uint64_t e = v[i]->offset + v[i]->len < rq_end(rq) ? v[i]->offset + v[i]->len
								     : rq_end(rq);

		rq_copy(rq, s - rq->offset, v[i]->data + (s - v[i]->offset), e - s, true);
	}

	pthread_mutex_lock(&c->lock);
	if (power_lost(c, gen))
		ret = -EIO; /* what it laid over its data may be what the cut dropped */
	for (size_t i = 0; i < n; i++)
		if (--v[i]->refs == 0 && v[i]->detached)
			free(v[i]);
out_unref:
	pthread_mutex_unlock(&c->lock);
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

	pthread_mutex_lock(&c->lock);
	if (c->powered)
		cache_arm_fire_locked(c, BIO_OP_WRITE);
	gen = c->gen;
	/* Room: destage in this thread, as a full drive cache makes the host wait. */
	while (!power_lost(c, gen) && c->dirty + w->len > c->p.size) {
		o = pick_eligible(c, &filter_all);
		if (o) {
			int ret = destage_one(c, o);

			if (ret) {
				pthread_mutex_unlock(&c->lock);
				free(w);
				return ret;
			}
		} else {
			c->room_waiters++;
			pthread_cond_wait(&c->cond, &c->lock);
			c->room_waiters--;
		}
	}
	if (power_lost(c, gen)) {
		pthread_mutex_unlock(&c->lock);
		free(w);
		return -EIO;
	}
	w->seq = ++c->seq;
	w->epoch = c->epoch;
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
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int cache_flush(struct cache *c, struct request *rq)
{
	struct destage_filter f = { 0, UINT64_MAX };
	uint64_t epoch, gen;
	int ret;

	pthread_mutex_lock(&c->lock);
	if (c->powered)
		cache_arm_fire_locked(c, BIO_OP_FLUSH);
	if (!c->powered) {
		pthread_mutex_unlock(&c->lock);
		return -EIO;
	}
	gen = c->gen;
	epoch = c->epoch++;
	c->st.flushes++;
	if (c->p.flush == CACHE_FLUSH_IGNORE) {
		c->st.flushes_ignored++;
		if (c->has_log) /* the host saw it complete: so does the log, flagged */
			wlog_append_flags(&c->wlog, WLOG_FLUSH, WLOG_F_IGNORED, epoch, 0, 0, NULL);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	f.max_epoch = epoch;
	ret = drain(c, &f, gen);
	if (!ret) {
		pthread_mutex_unlock(&c->lock);
		ret = lower_simple(c, rq, BIO_OP_FLUSH);
		pthread_mutex_lock(&c->lock);
		if (power_lost(c, gen))
			ret = -EIO;
	}
	if (!ret && epoch > c->durable_epoch)
		c->durable_epoch = epoch;
	/* A failed flush has used its epoch up: the log says so, so that replay numbers flushes
	 * by the ones that completed. */
	if (c->has_log)
		wlog_append(&c->wlog, ret ? WLOG_FLUSH_FAILED : WLOG_FLUSH, epoch, 0, 0, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static int cache_discard(struct cache *c, struct request *rq)
{
	uint64_t gen;
	int ret;

	/* Rare: every pending write goes first, so none lands on the discarded range later. */
	pthread_mutex_lock(&c->lock);
	gen = c->gen;
	ret = drain(c, &filter_all, gen);
	if (ret) {
		pthread_mutex_unlock(&c->lock);
		return ret;
	}
	c->discarding++; /* a poweron waits for it: it must not land after */
	pthread_mutex_unlock(&c->lock);
	ret = lower_simple(c, rq, BIO_OP_DISCARD);
	pthread_mutex_lock(&c->lock);
	if (--c->discarding == 0)
		pthread_cond_broadcast(&c->cond);
	if (power_lost(c, gen))
		ret = -EIO;
	if (!ret && c->has_log)
		wlog_append(&c->wlog, WLOG_DISCARD, c->epoch, rq->offset, rq->len, NULL);
	pthread_mutex_unlock(&c->lock);
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

/* --- background destaging --------------------------------------------------------------- */

#define DESTAGE_SLACK_NS NSEC_PER_MSEC

uint64_t cache_tick(struct cache *c)
{
	struct destage_filter f = { UINT64_MAX, 0 };
	uint64_t now, delay, wait = UINT64_MAX;
	struct cache_write *w;

	pthread_mutex_lock(&c->lock);
	now = cache_now(c);
	if (c->powered && c->arm.kind == CACHE_ARM_TIME) {
		if (now >= c->arm.at_ns) {
			cache_cut_locked(c, "armed at a time");
			pthread_mutex_unlock(&c->lock);
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
	w = pick_eligible(c, &f);
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
	if (destage_one(c, w)) {
		/* A failing image: back off instead of spinning; flushes report the error. */
		wait = 100 * NSEC_PER_MSEC;
		goto out;
	}
	wait = 0;
out:
	pthread_mutex_unlock(&c->lock);
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
		pthread_mutex_lock(&c->lock);
		if (!c->stop)
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

/* --- control ---------------------------------------------------------------------------- */

int cache_init(struct cache *c, const struct cache_params *p, io_exec_fn lower, void *lower_arg,
	       uint64_t (*clock)(void *), void *clock_arg)
{
	pthread_condattr_t ca;
	uint64_t seed;
	int err;

	memset(c, 0, sizeof(*c));
	c->p = *p;
	c->lower = lower;
	c->lower_arg = lower_arg;
	c->image = lower;
	c->image_arg = lower_arg;
	c->clock = clock;
	c->clock_arg = clock_arg;
	c->powered = true;
	c->epoch = 1;
	seed = p->seed ? p->seed : (clock_now_ns() ^ ((uint64_t)getpid() << 32));
	c->destage_rng = seed;
	c->cut_rng = seed ^ 0x5bd1e995u;
	if (cache_map_init(c))
		return -ENOMEM;
	err = pthread_mutex_init(&c->lock, NULL);
	if (err) {
		cache_map_free(c);
		return -err;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err) {
		pthread_mutex_destroy(&c->lock);
		cache_map_free(c);
		return -err;
	}
	if (p->mode == CACHE_MODE_WRITEBACK)
		log_info("cache: writeback, %" PRIu64 " bytes, flush %s, powercut %s, atomic write "
			 "%" PRIu32 ", seed %" PRIu64,
			 p->size, cache_flush_names[p->flush], cache_cut_names[p->powercut],
			 p->atomic_write, seed);
	return 0;
}

void cache_set_image(struct cache *c, io_exec_fn image, void *image_arg)
{
	c->image = image;
	c->image_arg = image_arg;
}

int cache_open_log(struct cache *c, const char *path, uint64_t disk_size)
{
	int ret = wlog_open(&c->wlog, path, disk_size, c->p.atomic_write);

	if (ret)
		return ret;
	c->has_log = true;
	log_info("cache: logging writes and flushes to %s", path);
	return 0;
}

int cache_mark(struct cache *c, const char *text)
{
	size_t len = strlen(text);
	int ret = 0;

	if (len > WLOG_MARK_MAX)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (!c->has_log)
		ret = -ENOENT;
	else if (c->wlog.error)
		ret = c->wlog.error;
	else
		wlog_append(&c->wlog, WLOG_MARK, c->epoch, 0, len, text);
	if (!ret && c->wlog.error)
		ret = c->wlog.error;
	pthread_mutex_unlock(&c->lock);
	return ret;
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

/* Name what a failed destage at exit loses: the writes still pending, acknowledged to the
 * host and never on the image, as a count, bytes and the first ranges. c->lock held. */
static void cache_log_lost_locked(struct cache *c, int err)
{
	char ranges[160] = "";
	size_t len = 0;
	unsigned int shown = 0;

	for (const struct cache_write *w = c->head; w && shown < 4; w = w->next, shown++) {
		int n = snprintf(ranges + len, sizeof(ranges) - len, "%s%" PRIu64 "+%" PRIu64,
				 shown ? ", " : "", w->offset, w->len);

		if (n < 0 || (size_t)n >= sizeof(ranges) - len)
			break;
		len += (size_t)n;
	}
	log_err("cache: destaging at exit failed: %s; %" PRIu64 " acknowledged writes (%" PRIu64
		" bytes) are lost, never written to the image: offset+len %s%s",
		strerror(-err), c->nr_dirty, c->dirty, ranges, c->nr_dirty > shown ? ", ..." : "");
}

int cache_destroy(struct cache *c)
{
	int ret = 0;

	if (c->has_thread) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
		c->has_thread = false;
	}
	pthread_mutex_lock(&c->lock);
	if (c->powered)
		ret = drain(c, &filter_all, c->gen);
	while (c->destaging || c->discarding || c->cutting) /* a cut's: nothing else runs */
		pthread_cond_wait(&c->cond, &c->lock);
	if (ret)
		cache_log_lost_locked(c, ret);
	for (struct cache_write *w = c->head, *next; w; w = next) {
		next = w->next;
		cache_map_del(c, w);
	}
	pthread_mutex_unlock(&c->lock);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	cache_map_free(c);
	if (c->has_log)
		wlog_close(&c->wlog);
	c->has_log = false;
	return ret;
}

int cache_freeze(struct cache *c)
{
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	c->frozen = true;
	if (c->powered)
		ret = drain(c, &filter_all, c->gen);
	if (ret == -EIO && !c->powered)
		ret = 0; /* a cut came: the image holds what it left */
	/* Destages a cut left going to the image; with the power on there are none. */
	while (!ret && (c->destaging || c->discarding || c->cutting))
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void cache_thaw(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	c->frozen = false;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void cache_reconfigure(struct cache *c, const struct cache_params *p)
{
	pthread_mutex_lock(&c->lock);
	c->p.flush = p->flush;
	c->p.destage_delay_ms = p->destage_delay_ms;
	c->p.destage_rate = p->destage_rate;
	c->p.atomic_write = p->atomic_write;
	c->p.powercut = p->powercut;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void cache_stats_reset(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	memset(&c->st, 0, sizeof(c->st));
	pthread_mutex_unlock(&c->lock);
}

void cache_snapshot(struct cache *c, struct cache_stats *st, struct cache_arm *arm)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->powered = c->powered;
	st->dirty_bytes = c->dirty;
	st->dirty_writes = c->nr_dirty;
	st->size = c->p.size;
	st->p = c->p;
	st->epoch = c->epoch;
	st->durable_epoch = c->durable_epoch;
	if (arm)
		*arm = c->arm;
	pthread_mutex_unlock(&c->lock);
}
