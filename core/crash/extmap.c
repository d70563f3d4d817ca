// SPDX-License-Identifier: MIT
/* The extent overlay (see extmap.h): a sorted array, since a crash state's map is built once
 * by puts in log order and then only read; a put moves the tail of the array, which for the
 * maps of a write log (thousands of extents) costs less than a tree's allocations. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/crash/extmap.h"
#include "core/util/prng.h"

void extmap_init(struct extmap *m)
{
	memset(m, 0, sizeof(*m));
}

void extmap_free(struct extmap *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static int extmap_reserve(struct extmap *m, size_t n)
{
	struct extent *nv;
	size_t cap;

	if (n <= m->cap)
		return 0;
	cap = m->cap ? m->cap : 64;
	while (cap < n)
		cap *= 2;
	nv = realloc(m->v, cap * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	m->v = nv;
	m->cap = cap;
	return 0;
}

int extmap_copy(struct extmap *dst, const struct extmap *src)
{
	if (extmap_reserve(dst, src->n))
		return -ENOMEM;
	if (src->n)
		memcpy(dst->v, src->v, src->n * sizeof(*src->v));
	dst->n = src->n;
	return 0;
}

size_t extmap_find(const struct extmap *m, uint64_t off)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].off + m->v[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int extmap_put(struct extmap *m, uint64_t off, uint64_t len, const uint8_t *src)
{
	uint64_t end = off + len;
	struct extent left = { 0 }, right = { 0 }, *first, *last;
	size_t i, j, nnew;

	if (!len)
		return 0;
	i = extmap_find(m, off);
	for (j = i; j < m->n && m->v[j].off < end; j++)
		;
	/* [i, j) overlap the new extent; the first may keep a head, the last a tail. */
	if (i < j) {
		first = &m->v[i];
		last = &m->v[j - 1];
		if (first->off < off)
			left = (struct extent){ first->off, off - first->off, first->src };
		if (last->off + last->len > end) {
			uint64_t cut = end - last->off;

			right = (struct extent){ end, last->len - cut,
						 last->src ? last->src + cut : NULL };
		}
	}
	nnew = 1 + (left.len != 0) + (right.len != 0);
	if (extmap_reserve(m, m->n - (j - i) + nnew))
		return -ENOMEM;
	memmove(&m->v[i + nnew], &m->v[j], (m->n - j) * sizeof(*m->v));
	m->n = m->n - (j - i) + nnew;
	if (left.len)
		m->v[i++] = left;
	m->v[i++] = (struct extent){ off, len, src };
	if (right.len)
		m->v[i] = right;
	return 0;
}

void extmap_read(const struct extmap *m, uint64_t off, uint64_t len, uint8_t *buf)
{
	uint64_t end = off + len;

	for (size_t i = extmap_find(m, off); i < m->n && m->v[i].off < end; i++) {
		const struct extent *e = &m->v[i];
		uint64_t s = e->off > off ? e->off : off;
		uint64_t t = e->off + e->len < end ? e->off + e->len : end;

		if (e->src)
			memcpy(buf + (s - off), e->src + (s - e->off), t - s);
		else
			memset(buf + (s - off), 0, t - s);
	}
}

void extmap_hash(const struct extmap *m, const uint8_t *base, uint64_t h[2])
{
	uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;

	for (size_t i = 0; i < m->n; i++) {
		const struct extent *e = &m->v[i];
		uint64_t w[3] = { e->off, e->len, e->src ? (uint64_t)(e->src - base) + 1 : 0 };

		for (int k = 0; k < 3; k++) {
			uint64_t x = a ^ w[k], y = b + w[k] * 0x9e3779b97f4a7c15ull;

			a = prng_splitmix64(&x);
			b = prng_splitmix64(&y) ^ (b << 7 | b >> 57);
		}
	}
	h[0] = a ^ m->n;
	h[1] = b;
}
