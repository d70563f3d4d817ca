// SPDX-License-Identifier: MIT
/* The extent overlay (see extmap.h): a sorted array, since a crash state's map is built once
 * and then only read. One put moves the array's tail; a state's many puts go in one
 * extmap_put_many: a sweep over the new extents sorted by offset, with a heap of those that
 * cover the sweep's point keyed by their order (the latest wins), resolves them into sorted
 * runs, which one merge lays over the map. Either way a byte belongs to the latest extent
 * that covers it, and extents are the maximal runs of one source, so the two give the same
 * map (the same hash: explore's duplicates do not depend on how a state was built). */
#include <errno.h>
#include <stdbool.h>
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

/* The heap of extmap_put_many: indexes into the new extents, the largest on top. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2] < v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t v = h[--(*n)], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

static int cmp_by_off(const void *a, const void *b, void *arg)
{
	const struct extent *v = arg;
	const struct extent *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Append @e to @out (@n used), joining it to the last one when it continues it from the same
 * source (@src_id: which new extent it comes from; SIZE_MAX for the map's own). */
static void emit(struct extent *out, size_t *n, size_t *last_id, const struct extent *e,
		 size_t src_id)
{
	struct extent *l = *n ? &out[*n - 1] : NULL;

	if (!e->len)
		return;
	if (l && src_id != SIZE_MAX && *last_id == src_id && l->off + l->len == e->off) {
		l->len += e->len;
		return;
	}
	out[(*n)++] = *e;
	*last_id = src_id;
}

int extmap_put_many(struct extmap *m, const struct extent *v, size_t n)
{
	size_t *order = NULL, *heap = NULL, nh = 0, pos = 0, nr = 0, no = 0, last = SIZE_MAX;
	struct extent *runs = NULL, *out = NULL, a = { 0 };
	uint64_t x = 0;
	bool have = false;
	size_t i = 0, cap = m->n + 4 * n;
	int ret = -ENOMEM;

	if (!n)
		return 0;
	if (n == 1)
		return extmap_put(m, v[0].off, v[0].len, v[0].src);
	order = malloc(n * sizeof(*order));
	heap = malloc(n * sizeof(*heap));
	runs = malloc(2 * n * sizeof(*runs)); /* a sweep's runs: at most 2n - 1 */
	out = malloc(cap * sizeof(*out)); /* each run adds itself and one piece of the map */
	if (!order || !heap || !runs || !out)
		goto out;
	for (size_t k = 0; k < n; k++)
		order[k] = k;
	qsort_r(order, n, sizeof(*order), cmp_by_off, (void *)v);
	/* The sweep: at x, the top of the heap is the latest extent covering x; the run it
	 * wins goes to its end or to the next start, whichever comes first. */
	while (pos < n || nh) {
		const struct extent *t;
		uint64_t nx;

		if (!nh)
			x = v[order[pos]].off;
		for (; pos < n && v[order[pos]].off <= x; pos++)
			if (v[order[pos]].len)
				heap_push(heap, &nh, order[pos]);
		while (nh && v[heap[0]].off + v[heap[0]].len <= x)
			heap_pop(heap, &nh);
		if (!nh)
			continue;
		t = &v[heap[0]];
		nx = t->off + t->len;
		if (pos < n && v[order[pos]].off < nx)
			nx = v[order[pos]].off;
		emit(runs, &nr, &last, &(struct extent){ x, nx - x, t->src ? t->src + (x - t->off) :
							 NULL }, heap[0]);
		x = nx;
	}
	/* The merge: the map's extents outside the runs, cut where a run begins or ends. */
	last = SIZE_MAX;
	for (size_t r = 0; r < nr; r++) {
		const struct extent *e = &runs[r];

		for (;;) {
			if (!have && i < m->n) {
				a = m->v[i++];
				have = true;
			}
			if (!have || a.off >= e->off + e->len)
				break;
			if (a.off + a.len <= e->off) {
				emit(out, &no, &last, &a, SIZE_MAX);
				have = false;
				continue;
			}
			if (a.off < e->off)
				emit(out, &no, &last, &(struct extent){ a.off, e->off - a.off, a.src },
				     SIZE_MAX);
			if (a.off + a.len > e->off + e->len) { /* its tail outlives the run */
				uint64_t cut = e->off + e->len - a.off;

				a = (struct extent){ e->off + e->len, a.len - cut,
						     a.src ? a.src + cut : NULL };
				break;
			}
			have = false;
		}
		emit(out, &no, &last, e, SIZE_MAX);
	}
	if (have)
		emit(out, &no, &last, &a, SIZE_MAX);
	while (i < m->n)
		emit(out, &no, &last, &m->v[i++], SIZE_MAX);
	free(m->v);
	m->v = out;
	m->n = no;
	m->cap = cap;
	out = NULL;
	ret = 0;
out:
	free(order);
	free(heap);
	free(runs);
	free(out);
	return ret;
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
