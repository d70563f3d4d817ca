/* SPDX-License-Identifier: MIT */
/* What the write cache's files share and nobody else sees: a pending write, the block map
 * of pending writes (core/cache/cache_map.c), the power cut's hooks (core/cache/cache_cut.c) and
 * destaging (core/cache/cache_destage.c). Include only from core/cache/. */
#ifndef PLUGDISK_CACHE_INT_H
#define PLUGDISK_CACHE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cache/cache.h"
#include "core/util/clock.h"

struct cache_write {
	struct cache_write *prev, *next;	/* c->lock: the pending list, oldest first */
	struct chunk_link *links;	/* nlinks, allocated with the write */
	uint32_t nlinks;
	uint64_t seq;		/* completion order */
	uint64_t epoch;
	uint64_t offset, len;	/* bytes */
	uint32_t unit;		/* cache.atomic_write when it was cached: a cut tears it at
				 * this, as the write log's ATOMIC records say */
	uint64_t cached_ns;	/* when it completed */
	bool destaging;		/* c->lock: being written to the image */
	bool detached;		/* c->lock: off the list, freed by the last reader */
	bool older_overlap;	/* c->lock: an older pending write overlapped it when cached */
	bool orphan;		/* c->lock: being destaged when a cut took the list; the
				 * destage frees it when it comes back */
	bool behind;		/* the cut's: overlaps a write being destaged at the cut */
	uint64_t mark;		/* c->lock: the query that last saw it (see overlaps()) */
	unsigned int refs;	/* c->lock: readers laying it over their data */
	uint8_t data[];
};

/* The cache's clock, in ns. */
static inline uint64_t cache_now(const struct cache *c)
{
	return c->clock ? c->clock(c->clock_arg) : clock_now_ns();
}

/* Has the power gone since a request noted generation @gen? c->lock held. */
static inline bool cache_power_lost(const struct cache *c, uint64_t gen)
{
	return !c->powered || c->gen != gen;
}

/* --- the block map of pending writes (core/cache/cache_map.c); every call with c->lock held
 * except the allocation and cache_map_init/cache_map_free. */

/* Allocate the buckets of @c's chunk index. 0 or -ENOMEM. */
int cache_map_init(struct cache *c);

/* Free the buckets (the list must be empty). */
void cache_map_free(struct cache *c);

/* A zeroed write of [@offset, @offset + @len) with room for its data and its index links,
 * or NULL. @len > 0. */
struct cache_write *cache_write_alloc(uint64_t offset, uint64_t len);

/* Put @w at the tail of the pending list and in the index, and count it dirty. Returns
 * whether the list was empty before. */
bool cache_map_add(struct cache *c, struct cache_write *w);

/* Take @w off the list and the index, uncount it, and free it (or, while readers hold it,
 * mark it detached for the last of them to free). */
void cache_map_del(struct cache *c, struct cache_write *w);

/* Free @w, off the map, now; or, while readers hold it, mark it detached for the last of
 * them to free. */
void cache_write_release(struct cache_write *w);

/* Take the whole pending list (oldest first) off the map at once and zero the dirty counts:
 * the power cut's. The writes stay allocated; the caller frees them. */
struct cache_write *cache_map_take_all(struct cache *c);

/* Call @fn for every pending write that overlaps [off, off+len) and is older than @max_seq,
 * each once, in no particular order; stop when it returns true. Returns whether it stopped.
 * @fn may not change the map. */
bool cache_map_overlaps(struct cache *c, uint64_t off, uint64_t len, uint64_t max_seq,
			bool (*fn)(struct cache_write *o, void *arg), void *arg);

/* --- destaging to the lower stage (core/cache/cache_destage.c) */

/* Which writes a destage pass may take. */
struct destage_filter {
	uint64_t max_epoch;	/* only writes of epochs <= this */
	uint64_t due_ns;	/* only writes cached at or before this */
};

/* Every pending write. */
extern const struct destage_filter cache_filter_all;

/* A random eligible write that matches @f, or NULL. c->lock held. */
struct cache_write *cache_pick_eligible(struct cache *c, const struct destage_filter *f);

/* Write @w to the image and take it off the list. c->lock held; dropped meanwhile. -EIO
 * when a cut came meanwhile: it took @w off the list and left it to us to free. */
int cache_destage_one(struct cache *c, struct cache_write *w);

/* Destage every write matching @f, waiting for those others are destaging, for a request
 * that came at power generation @gen. c->lock held. 0, -EIO when the power goes, or the
 * lower stage's error. */
int cache_drain(struct cache *c, const struct destage_filter *f, uint64_t gen);

/* c->lock held: wait until no destage, discard or cut write-out is in flight; 0, or -EBUSY
 * while a stage below holds a request until a command lets it go (cache.c). */
int cache_wait_in_flight(struct cache *c);

/* Write @len bytes of @data at @off through the stage @exec/@arg (c->lower, or c->image for
 * what a cut keeps), synchronously. c->lock not held. 0 or -errno. */
int cache_lower_write(io_exec_fn exec, void *arg, uint64_t off, const void *data, uint64_t len);

/* --- the power cut and armed cuts (core/cache/cache_cut.c); c->lock held */

/* Cut the power now, by the armed cut's mode (else cache.powercut), from inside the data
 * path or the tick; c->lock is dropped meanwhile and held again on return. */
void cache_cut_locked(struct cache *c, const char *why);

/* Count @op against an armed cut and fire it if this is its op. Only while powered. */
void cache_arm_fire_locked(struct cache *c, enum bio_op op);

#endif
