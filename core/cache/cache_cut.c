// SPDX-License-Identifier: MIT
/* The write cache's power cut: what a cut keeps of the pending writes, armed cuts, and
 * power on.
 *
 * c->powered goes false and c->gen grows under the lock, so nothing new gets in and what
 * is in flight fails. The cut waits for nothing, as a real one: a destage in flight is on
 * its way to the image (a stall fault below has even written it and holds only its
 * completion), so it is left to land, or not, before poweron, which waits for it; a
 * pending write overlapping it is lost (a disk writes overlapping writes in order). The
 * cut takes the rest of the pending list and decides for each write from a seeded
 * generator what reaches the image, by cache.powercut:
 *   drop    nothing;
 *   prefix  the first k pending writes in completion order, whatever their epochs, k
 *           uniform in 0..n: no kept write is newer than a dropped one;
 *   subset  each write independently: kept, dropped, or torn;
 *   tear    every write torn.
 * Torn: the write is split at the atomic unit's boundaries (cache.atomic_write when the write
 * was cached, aligned on the disk: a reload changes the unit of the writes cached after it,
 * as the write log's ATOMIC record says) and each piece is kept or dropped on its own;
 * inside a unit it is all or nothing.
 * Kept pieces are written in completion order, to c->image (the backend below the faults,
 * in the daemon), so that no stall holds the cut. Bytes outside a write's range never change.
 * The seed is logged with the cut's summary, every choice at debug level, and the same seed
 * over the same pending writes makes the same choices. Until cache_poweron() every request
 * fails with EIO. Locking as in core/cache/cache.c: c->lock, never held across the lower stage. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache/cache_int.h"
#include "core/util/barrier.h"
#include "core/util/log.h"
#include "core/util/prng.h"
#include "core/util/lock.h"

/* What the cut keeps of @w, torn at @unit: a bitmap of its atomic units, returned in @keep
 * (nunits bits). Returns the bytes kept. */
static uint64_t cut_tear(const struct cache_write *w, uint64_t unit, uint64_t *rng,
			 uint8_t *keep, uint64_t nunits)
{
	uint64_t kept = 0, u = 0;

	for (uint64_t off = w->offset; off < w->offset + w->len; u++) {
		uint64_t end = (off / unit + 1) * unit;

		if (end > w->offset + w->len)
			end = w->offset + w->len;
		if (u < nunits && (prng_splitmix64(rng) & 1)) {
			keep[u / 8] |= (uint8_t)(1u << (u % 8));
			kept += end - off;
		}
		off = end;
	}
	return kept;
}

static uint64_t write_units(const struct cache_write *w, uint64_t unit)
{
	return (w->offset + w->len - 1) / unit - w->offset / unit + 1;
}

/* Write the kept units (of @unit bytes) of @w to the image, each run of kept units as one
 * write. c->lock not held. */
static int cut_apply(struct cache *c, const struct cache_write *w, const uint8_t *keep,
		     uint64_t unit)
{
	uint64_t end = w->offset + w->len, off = w->offset, u = 0;
	uint64_t run = 0;
	bool in_run = false;
	int ret = 0, r;

	while (off < end) {
		uint64_t next = (off / unit + 1) * unit;
		bool k = keep[u / 8] & (1u << (u % 8));

		if (next > end)
			next = end;
		if (k && !in_run) {
			run = off;
			in_run = true;
		} else if (!k && in_run) {
			r = cache_lower_write(c->image, c->image_arg, run,
					      w->data + (run - w->offset), off - run);
			if (r && !ret)
				ret = r;
			in_run = false;
		}
		off = next;
		u++;
	}
	if (in_run) {
		r = cache_lower_write(c->image, c->image_arg, run, w->data + (run - w->offset),
				      end - run);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

/* Take the writes being destaged off @*list: they are on their way to the image, and their
 * destages free them when they come back (orphan). Mark the writes left that overlap one
 * of them (behind): a disk writes overlapping writes in their order, so a newer write to
 * blocks that were being written when the power went had not reached the media; and were
 * the cut to write it, the older one could land over it later. Returns how many went, and
 * their bytes in @bytes. c->lock held. */
static uint64_t cut_take_in_flight(struct cache_write **list, uint64_t *bytes)
{
	struct cache_write *w, *next, *going = NULL;
	uint64_t nr = 0;

	*bytes = 0;
	for (w = *list; w; w = next) {
		next = w->next;
		if (!w->destaging)
			continue;
		if (w->prev)
			w->prev->next = w->next;
		else
			*list = w->next;
		if (w->next)
			w->next->prev = w->prev;
		w->orphan = true;
		w->prev = NULL;
		w->next = going;
		going = w;
		nr++;
		*bytes += w->len;
	}
	for (w = *list; w && going; w = w->next)
		for (struct cache_write *o = going; o && !w->behind; o = o->next)
			w->behind = w->offset < o->offset + o->len && o->offset < w->offset + w->len;
	for (w = going; w; w = next) { /* theirs from now on */
		next = w->next;
		w->next = NULL;
	}
	return nr;
}

/* Finish a cut begun by setting c->powered = false. c->lock held; dropped meanwhile, while
 * the kept data goes to the image; nothing in flight is waited for. */
static void cut_finish(struct cache *c, int mode, uint64_t seed, const char *why)
{
	struct cache_write *list, *w, *next;
	uint64_t rng = seed, pending = 0, kept_bytes = 0, nkept = 0, ntorn = 0, ndropped = 0;
	uint64_t n = 0, prefix = 0, nflight, flight_bytes;
	int ret = 0;

	if (mode < 0 || mode >= CACHE_CUT_NR)
		mode = (int)c->p.powercut;
	/* Every request in flight fails, even if the power is back when it ends. Atomic for
	 * cache_power_gen(), which reads it without the lock. */
	WRITE_ONCE(c->gen, c->gen + 1);
	c->cutting = true;
	if (c->has_log)
		wlog_append(&c->wlog, WLOG_CUT, c->epoch, 0, 0, NULL);
	pthread_cond_broadcast(&c->cond); /* flushes and full-cache writers fail now */
	pending = c->dirty;
	n = c->nr_dirty;
	list = cache_map_take_all(c); /* every write leaves */
	nflight = cut_take_in_flight(&list, &flight_bytes);
	n -= nflight;
	c->arm.kind = CACHE_ARM_NONE;
	lock_drop(&c->lock);
	/* One prefix over every pending write, whatever its epoch: a disk destaging in order
	 * has written the oldest ones first. Drawn as before for a single epoch, so that a
	 * replayed crash between two flushes keeps its seed's outcome. */
	if (mode == CACHE_CUT_PREFIX)
		prefix = prng_splitmix64(&rng) % (n + 1);

	for (w = list; w; w = w->next) {
		uint64_t unit = w->unit, nunits = write_units(w, unit);
		uint8_t keepbuf[64], *keep = keepbuf;
		const char *what;
		uint64_t kept = 0;

		if ((nunits + 7) / 8 > sizeof(keepbuf)) {
			keep = calloc(1, (nunits + 7) / 8);
			if (!keep) {
				log_err("powercut: out of memory: dropping write seq %" PRIu64,
					w->seq);
				ndropped++;
				continue;
			}
		} else {
			memset(keepbuf, 0, sizeof(keepbuf));
		}
		switch (mode) {
		case CACHE_CUT_PREFIX:
			if (w->behind)
				prefix = 0; /* the rest is newer still */
			if (prefix) {
				kept = w->len;
				prefix--;
			}
			break;
		case CACHE_CUT_SUBSET:
			switch (prng_splitmix64(&rng) % 3) {
			case 0:
				kept = w->len;
				break;
			case 1:
				break;
			default:
				kept = cut_tear(w, unit, &rng, keep, nunits);
				break;
			}
			break;
		case CACHE_CUT_TEAR:
			kept = cut_tear(w, unit, &rng, keep, nunits);
			break;
		default: /* CACHE_CUT_DROP */
			break;
		}
		if (w->behind)
			kept = 0; /* drawn all the same, so that the other writes' draws stay */
		if (kept == w->len) {
			memset(keep, 0xff, (nunits + 7) / 8);
			what = "kept";
			nkept++;
		} else if (kept) {
			what = "torn";
			ntorn++;
		} else {
			what = "dropped";
			ndropped++;
		}
		log_debug("powercut: write seq %" PRIu64 " epoch %" PRIu64 " offset %" PRIu64
			  " len %" PRIu64 ": %s (%" PRIu64 " bytes kept)",
			  w->seq, w->epoch, w->offset, w->len, what, kept);
		if (kept) {
			int r = cut_apply(c, w, keep, unit);
			if (r && !ret)
				ret = r;
		}
		kept_bytes += kept;
		if (keep != keepbuf)
			free(keep);
	}

	lock_take(&c->lock);
	for (w = list; w; w = next) {
		next = w->next;
		w->prev = w->next = NULL;
		cache_write_release(w);
	}
	c->st.powercuts++;
	c->st.last_cut_pending = pending;
	c->st.last_cut_dropped = pending - flight_bytes - kept_bytes;
	c->st.last_cut_seed = seed;
	log_info("powercut (%s): mode %s seed %" PRIu64 ": %" PRIu64 " pending writes (%" PRIu64
		 " bytes): %" PRIu64 " kept, %" PRIu64 " torn, %" PRIu64 " dropped, %" PRIu64
		 " going to the image; %" PRIu64 " bytes lost; epochs up to %" PRIu64
		 " were durable%s",
		 why, cache_cut_names[mode], seed, n + nflight, pending, nkept, ntorn, ndropped,
		 nflight, pending - flight_bytes - kept_bytes, c->durable_epoch,
		 ret ? "; writing kept data failed" : "");
	c->cutting = false;
	pthread_cond_broadcast(&c->cond);
}

uint64_t cache_power_gen(struct cache *c)
{
	return READ_ONCE(c->gen);
}

void cache_cut_locked(struct cache *c, const char *why)
{
	int mode = c->arm.has_mode ? (int)c->arm.mode : -1;

	lock_assert_held(&c->lock);
	c->powered = false;
	cut_finish(c, mode, prng_splitmix64(&c->cut_rng), why);
}

/* Does an armed cut fire at this op? c->lock held. */
static bool arm_fires(struct cache *c, enum bio_op op)
{
	struct cache_arm *a = &c->arm;

	switch (a->kind) {
	case CACHE_ARM_FLUSH:
		return op == BIO_OP_FLUSH && ++a->flushes == a->n;
	case CACHE_ARM_WRITE:
		if (op == BIO_OP_FLUSH && a->flushes < a->after_flush)
			a->flushes++;
		else if (op == BIO_OP_WRITE && a->flushes >= a->after_flush)
			return ++a->writes == a->n;
		return false;
	case CACHE_ARM_RANDOM:
		if (op != BIO_OP_WRITE && op != BIO_OP_FLUSH)
			return false;
		return ++a->writes == a->n;
	case CACHE_ARM_TIME:
		return cache_now(c) >= a->at_ns;
	default:
		return false;
	}
}

static const char *arm_name(enum cache_arm_kind k)
{
	switch (k) {
	case CACHE_ARM_FLUSH: return "armed at a flush";
	case CACHE_ARM_WRITE: return "armed at a write";
	case CACHE_ARM_RANDOM: return "armed at a random op";
	case CACHE_ARM_TIME: return "armed at a time";
	default: return "none";
	}
}

void cache_arm_fire_locked(struct cache *c, enum bio_op op)
{
	lock_assert_held(&c->lock);
	if (arm_fires(c, op))
		cache_cut_locked(c, arm_name(c->arm.kind));
}

int cache_powercut(struct cache *c, int mode, uint64_t seed, const char *why)
{
	lock_take(&c->lock);
	if (!c->powered) {
		/* Another cut (armed, or a second command): answer once the disk is down. */
		while (c->cutting)
			pthread_cond_wait(&c->cond, &c->lock);
		lock_drop(&c->lock);
		return -EALREADY;
	}
	c->powered = false;
	if (!seed)
		seed = prng_splitmix64(&c->cut_rng);
	cut_finish(c, mode, seed, why);
	lock_drop(&c->lock);
	return 0;
}

int cache_poweron(struct cache *c)
{
	lock_take(&c->lock);
	/* On already: nothing to wait for. Waiting behind an ordinary destage held below would
	 * hang the command, and a cut meanwhile would see this poweron end it on release. */
	if (c->powered) {
		lock_drop(&c->lock);
		return -EALREADY;
	}
	/* The cut's kept data goes down before anything new, and so do the destages and
	 * discards it left in flight: landing later, they would overwrite newer writes. One a
	 * stall holds below would hold this poweron until its release: -EBUSY instead. */
	if (cache_wait_in_flight(c)) {
		lock_drop(&c->lock);
		return -EBUSY;
	}
	if (c->powered) {
		lock_drop(&c->lock);
		return -EALREADY;
	}
	c->powered = true;
	c->next_destage_ns = 0;
	pthread_cond_broadcast(&c->cond);
	lock_drop(&c->lock);
	log_info("poweron: the disk serves requests again");
	return 0;
}

int cache_arm(struct cache *c, const struct cache_arm *a)
{
	struct cache_arm n = { .kind = a->kind, .has_mode = a->has_mode, .mode = a->mode };

	if (a->has_mode && a->mode >= CACHE_CUT_NR)
		return -EINVAL;
	switch (a->kind) {
	case CACHE_ARM_NONE:
		break;
	case CACHE_ARM_FLUSH:
	case CACHE_ARM_WRITE:
		if (!a->n)
			return -EINVAL;
		n.n = a->n;
		n.after_flush = a->kind == CACHE_ARM_WRITE ? a->after_flush : 0;
		break;
	case CACHE_ARM_RANDOM: {
		uint64_t s;

		if (!a->n)
			return -EINVAL;
		lock_take(&c->lock);
		n.seed = a->seed ? a->seed : prng_splitmix64(&c->cut_rng) | 1;
		lock_drop(&c->lock);
		s = n.seed;
		n.n = 1 + prng_splitmix64(&s) % a->n;
		n.range = a->n;
		break;
	}
	case CACHE_ARM_TIME:
		n.at_ns = a->at_ns;
		break;
	default:
		return -EINVAL;
	}
	lock_take(&c->lock);
	c->arm = n;
	pthread_cond_broadcast(&c->cond); /* the thread's next wake-up may be the arm's time */
	lock_drop(&c->lock);
	return 0;
}
