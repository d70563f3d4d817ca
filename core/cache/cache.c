// SPDX-License-Identifier: MIT
/* The volatile write cache's life cycle and control: its parameters, init and destroy, the
 * write log and its marks, freeze and thaw, live reconfiguration and counters.
 *
 * Notes on the design.
 *
 * The cache is an I/O stage between the controller and the backend. With cache.mode =
 * writeback the daemon puts it there; with none it is not in the path at all. Its files:
 * the requests in core/cache/cache_io.c, destaging to the image in core/cache/cache_destage.c, the block
 * map of pending writes in core/cache/cache_map.c, the power cut in core/cache/cache_cut.c, the write log
 * in core/cache/wlog.c; core/cache/cache_int.h is what they share.
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
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cache/cache_int.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "core/util/lock.h"

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
	lock_take(&c->lock);
	if (!c->has_log)
		ret = -ENOENT;
	else if (c->wlog.error)
		ret = c->wlog.error;
	else
		wlog_append(&c->wlog, WLOG_MARK, c->epoch, 0, len, text);
	if (!ret && c->wlog.error)
		ret = c->wlog.error;
	lock_drop(&c->lock);
	return ret;
}

/* Name what a failed destage at exit loses: the writes still pending, acknowledged to the
 * host and never on the image, as a count, bytes and the first ranges. c->lock held. */
static void cache_log_lost_locked(struct cache *c, int err)
{
	char ranges[160] = "";
	size_t len = 0;
	unsigned int shown = 0;

	lock_assert_held(&c->lock);
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

/* Stop the destage thread, if it runs. */
static void cache_stop_thread(struct cache *c)
{
	if (!c->has_thread)
		return;
	lock_take(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->cond);
	lock_drop(&c->lock);
	pthread_join(c->thread, NULL);
	c->has_thread = false;
}

int cache_writeout(struct cache *c)
{
	int ret = 0;

	cache_stop_thread(c);
	lock_take(&c->lock);
	if (c->powered)
		ret = cache_drain(c, &cache_filter_all, c->gen);
	while (c->destaging || c->discarding || c->cutting) /* a cut's: nothing else runs */
		pthread_cond_wait(&c->cond, &c->lock);
	if (ret)
		cache_log_lost_locked(c, ret);
	lock_drop(&c->lock);
	return ret;
}

void cache_free(struct cache *c)
{
	cache_stop_thread(c);
	lock_take(&c->lock);	/* alone by now; the map's calls assert it */
	for (struct cache_write *w = c->head, *next; w; w = next) {
		next = w->next;
		cache_map_del(c, w);
	}
	lock_drop(&c->lock);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	cache_map_free(c);
	if (c->has_log)
		wlog_close(&c->wlog);
	c->has_log = false;
}

int cache_destroy(struct cache *c)
{
	int ret = cache_writeout(c);

	cache_free(c);
	return ret;
}

bool cache_held_below(struct cache *c)
{
	return c->held_below && c->held_below(c->held_below_arg);
}

void cache_set_held_below(struct cache *c, bool (*held)(void *arg), void *arg)
{
	c->held_below = held;
	c->held_below_arg = arg;
}

/* c->lock held: wait for the cond, or 10 ms, whichever comes first: for a wait that must
 * also notice a stage below starting to hold a request (it signals nothing here). */
static void cache_wait_tick(struct cache *c)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 10 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

/* c->lock held: wait until the destages, discards and the cut's write-out in flight are
 * done. -EBUSY (at once) while a stage below holds a request until a command lets it go:
 * the one awaited may be that one. The lock is dropped to ask. */
int cache_wait_in_flight(struct cache *c)
{
	while (c->destaging || c->discarding || c->cutting) {
		if (c->held_below) {
			bool held;

			lock_drop(&c->lock);
			held = c->held_below(c->held_below_arg);
			lock_take(&c->lock);
			if (held && (c->destaging || c->discarding || c->cutting))
				return -EBUSY;
			cache_wait_tick(c);
		} else {
			pthread_cond_wait(&c->cond, &c->lock);
		}
	}
	return 0;
}

int cache_freeze(struct cache *c)
{
	uint64_t thaws;
	int ret = 0;

	/* A write-out would wait for what a stall holds below (a write it destages, or one
	 * destaging already): fail rather than wait for the release. */
	if (cache_held_below(c))
		return -EBUSY;
	lock_take(&c->lock);
	c->frozen = true;
	thaws = c->thaws;
	if (c->powered)
		ret = cache_drain(c, &cache_filter_all, c->gen);
	if (ret == -EIO && !c->powered)
		ret = 0; /* a cut came: the image holds what it left */
	/* Destages a cut left going to the image; with the power on there are none. */
	if (!ret)
		ret = cache_wait_in_flight(c);
	/* A thaw meanwhile ended the freeze: the image may change again. */
	if (!ret && c->thaws != thaws)
		ret = -ECANCELED;
	if (ret == -EBUSY && c->thaws == thaws)
		c->frozen = false;
	lock_drop(&c->lock);
	return ret;
}

void cache_thaw(struct cache *c)
{
	lock_take(&c->lock);
	c->frozen = false;
	c->thaws++;
	pthread_cond_broadcast(&c->cond);
	lock_drop(&c->lock);
}

void cache_reconfigure(struct cache *c, const struct cache_params *p)
{
	lock_take(&c->lock);
	c->p.flush = p->flush;
	c->p.destage_delay_ms = p->destage_delay_ms;
	c->p.destage_rate = p->destage_rate;
	if (p->atomic_write != c->p.atomic_write) {
		/* Writes cached from here on tear at the new unit; the log says so in order with
		 * them (under the same lock), for replay and explore. */
		c->p.atomic_write = p->atomic_write;
		if (c->has_log)
			wlog_append(&c->wlog, WLOG_ATOMIC, c->epoch, 0, p->atomic_write, NULL);
	}
	c->p.powercut = p->powercut;
	pthread_cond_broadcast(&c->cond);
	lock_drop(&c->lock);
}

void cache_stats_reset(struct cache *c)
{
	lock_take(&c->lock);
	memset(&c->st, 0, sizeof(c->st));
	lock_drop(&c->lock);
}

void cache_snapshot(struct cache *c, struct cache_stats *st, struct cache_arm *arm)
{
	lock_take(&c->lock);
	*st = c->st;
	st->powered = c->powered;
	st->dirty_bytes = c->dirty;
	st->dirty_writes = c->nr_dirty;
	st->size = c->p.size;
	st->p = c->p;
	st->epoch = c->epoch;
	st->durable_epoch = c->durable_epoch;
	st->log_errors = c->has_log && c->wlog.error;
	st->log_lost_records = c->has_log ? c->wlog.lost : 0;
	if (arm)
		*arm = c->arm;
	lock_drop(&c->lock);
}
