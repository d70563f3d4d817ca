/* SPDX-License-Identifier: MIT */
/* An overlay of a disk: sorted, non-overlapping extents, each pointing at bytes held elsewhere
 * (a mapped write log) or standing for zeros; a later put hides what it covers. */
#ifndef PLUGDISK_EXTMAP_H
#define PLUGDISK_EXTMAP_H

#include <stddef.h>
#include <stdint.h>

struct extent {
	uint64_t off, len;
	const uint8_t *src;	/* the extent's first byte, or NULL for zeros */
};

/* Not thread-safe: one owner changes it; readers may share one nobody changes. */
struct extmap {
	struct extent *v;	/* sorted by off, none overlapping, none empty */
	size_t n, cap;
};

void extmap_init(struct extmap *m);
void extmap_free(struct extmap *m);

/* Make @dst a copy of @src. 0 or -ENOMEM (then @dst is unchanged). */
int extmap_copy(struct extmap *dst, const struct extmap *src);

/* Lay [off, off + len) over the map, its bytes at @src (NULL: zeros). 0 or -ENOMEM. */
int extmap_put(struct extmap *m, uint64_t off, uint64_t len, const uint8_t *src);

/* Lay @n extents over the map at once, in their order (a later one hides an earlier one
 * where they overlap, and all hide the map): the same map as @n extmap_put calls, in
 * O(m + n log n) for a map of m extents instead of O(m n). 0 or -ENOMEM (then @m is
 * unchanged). */
int extmap_put_many(struct extmap *m, const struct extent *v, size_t n);

/* Index of the first extent that ends after @off (m->n if none). */
size_t extmap_find(const struct extmap *m, uint64_t off);

/* Copy what the map holds over [off, off + len) into @buf (@buf[0] is byte @off); bytes
 * the map does not cover are left as they are. */
void extmap_read(const struct extmap *m, uint64_t off, uint64_t len, uint8_t *buf);

/* Two independent 64-bit hashes of the map's extents (where each one's bytes come from,
 * by their distance from @base): equal maps over the same @base hash the same. */
void extmap_hash(const struct extmap *m, const uint8_t *base, uint64_t h[2]);

#endif
