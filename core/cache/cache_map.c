// SPDX-License-Identifier: MIT
/* The write cache's block map: the pending writes in completion order, and a chunk index
 * that finds the ones overlapping a range without walking the list. Every call with the
 * cache's lock held (core/cache/cache_int.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache/cache_int.h"
#include "core/util/lock.h"

/* One link of a pending write in the chunk index: a write is on the bucket list of every
 * CACHE_CHUNK-sized chunk of the disk it touches, so that finding the writes that overlap a
 * range costs the chunks it spans, not the whole list. */
struct chunk_link {
	struct chunk_link *prev, *next;	/* c->lock: the bucket's list */
	uint64_t chunk;			/* offset >> CACHE_CHUNK_SHIFT */
	struct cache_write *w;
};

#define CACHE_CHUNK_SHIFT 16
#define CACHE_BUCKETS (1u << 16)

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static size_t chunk_bucket(const struct cache *c, uint64_t chunk)
{
	return (size_t)((chunk * 0x9e3779b97f4a7c15ull) >> 32) & (c->nbuckets - 1);
}

static void index_add(struct cache *c, struct cache_write *w)
{
	uint64_t first = w->offset >> CACHE_CHUNK_SHIFT;

	for (uint32_t i = 0; i < w->nlinks; i++) {
		struct chunk_link *l = &w->links[i];
		struct chunk_link **head = &c->buckets[chunk_bucket(c, first + i)];

		l->chunk = first + i;
		l->w = w;
		l->prev = NULL;
		l->next = *head;
		if (*head)
			(*head)->prev = l;
		*head = l;
	}
}

static void index_del(struct cache *c, struct cache_write *w)
{
	for (uint32_t i = 0; i < w->nlinks; i++) {
		struct chunk_link *l = &w->links[i];

		if (l->prev)
			l->prev->next = l->next;
		else
			c->buckets[chunk_bucket(c, l->chunk)] = l->next;
		if (l->next)
			l->next->prev = l->prev;
	}
}

int cache_map_init(struct cache *c)
{
	c->nbuckets = CACHE_BUCKETS;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	return c->buckets ? 0 : -ENOMEM;
}

void cache_map_free(struct cache *c)
{
	free(c->buckets);
	c->buckets = NULL;
}

struct cache_write *cache_write_alloc(uint64_t offset, uint64_t len)
{
	uint64_t nlinks = ((offset + len - 1) >> CACHE_CHUNK_SHIFT) - (offset >> CACHE_CHUNK_SHIFT) + 1;
	struct cache_write *w = malloc(sizeof(*w) + len + nlinks * sizeof(struct chunk_link) + 8);

	if (!w)
		return NULL;
	memset(w, 0, sizeof(*w));
	w->offset = offset;
	w->len = len;
	w->nlinks = (uint32_t)nlinks;
	/* The links follow the data, 8-byte aligned. */
	w->links = (struct chunk_link *)(((uintptr_t)(w->data + len) + 7) & ~(uintptr_t)7);
	return w;
}

bool cache_map_add(struct cache *c, struct cache_write *w)
{
	bool was_empty = !c->head;

	lock_assert_held(&c->lock);
	index_add(c, w);
	w->prev = c->tail;
	if (c->tail)
		c->tail->next = w;
	else
		c->head = w;
	c->tail = w;
	c->dirty += w->len;
	c->nr_dirty++;
	return was_empty;
}

void cache_map_del(struct cache *c, struct cache_write *w)
{
	lock_assert_held(&c->lock);
	index_del(c, w);
	if (w->prev)
		w->prev->next = w->next;
	else
		c->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		c->tail = w->prev;
	w->prev = w->next = NULL;
	c->dirty -= w->len;
	c->nr_dirty--;
	cache_write_release(w);
}

void cache_write_release(struct cache_write *w)
{
	if (w->refs)
		w->detached = true;
	else
		free(w);
}

struct cache_write *cache_map_take_all(struct cache *c)
{
	struct cache_write *list = c->head;

	lock_assert_held(&c->lock);
	c->head = c->tail = NULL;
	memset(c->buckets, 0, c->nbuckets * sizeof(*c->buckets)); /* every write leaves */
	c->dirty = 0;
	c->nr_dirty = 0;
	return list;
}

bool cache_map_overlaps(struct cache *c, uint64_t off, uint64_t len, uint64_t max_seq,
			bool (*fn)(struct cache_write *o, void *arg), void *arg)
{
	uint64_t first = off >> CACHE_CHUNK_SHIFT, last = (off + len - 1) >> CACHE_CHUNK_SHIFT;
	uint64_t mark = ++c->query;

	lock_assert_held(&c->lock);
	for (uint64_t k = first; k <= last; k++) {
		for (struct chunk_link *l = c->buckets[chunk_bucket(c, k)]; l; l = l->next) {
			struct cache_write *o = l->w;

			if (l->chunk != k || o->mark == mark || o->seq >= max_seq)
				continue;
			o->mark = mark;
			if (ranges_overlap(o->offset, o->len, off, len) && fn(o, arg))
				return true;
		}
	}
	return false;
}
