// SPDX-License-Identifier: MIT
/* The crash states of a write log (see wlog_states.h).
 *
 * Notes on the model. The cache logs writes and discards as they complete, under its lock, so
 * their epochs never decrease along the log. A completed flush of epoch e makes every op of
 * an epoch <= e durable, and those are a prefix of the ops; a discard destages everything
 * before it, so the ops before it survive any later cut too. Flushes and discards are the
 * barriers; between two of them (a window) a cut can leave the durable ops plus any subset
 * of the pending ones (the cache destages in its own order and a cut keeps, drops or tears
 * each pending write), the pending ones being those logged before the next barrier and not
 * durable. A window's states, in id order: the barrier's own state; every prefix of the
 * pending ops in completion order (a cut earlier in the window, or the prefix mode); every
 * other subset when the window is small, else every subset that drops 1..k ops, and, when
 * later writes of their epoch covered some pending writes whole (the cache supersedes those,
 * so its prefix cuts skip them), every prefix of the others with those lost; then, for
 * each write that spans atomic units, the ops before it with some of its units (the first m
 * or the last m). A write's unit is the one in force when it was logged: the header's, or
 * that of the last ATOMIC record (a reload) before it, as the cache tears it. Ids run over the windows in log order, so an id names the same state for
 * the same log and k whatever is sampled. A flush under cache.flush = ignore is a barrier
 * that makes nothing durable. The log is read up to its first power cut. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/prng.h"
#include "core/crash/wlog_states.h"

const char *const ws_kind_names[] = { "flush", "prefix", "subset", "drop", "overwritten",
				      "torn", NULL };

static int grow(void **v, uint64_t *cap, uint64_t n, size_t size)
{
	void *nv;
	uint64_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 256;
	nv = realloc(*v, c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

uint64_t ws_op_units(const struct ws_log *l, const struct ws_op *op)
{
	uint64_t a = op->unit;

	(void)l;
	if (!op->data)
		return 1;
	return (op->off + op->len - 1) / a - op->off / a + 1;
}

bool ws_op_overwritten(const struct ws_log *l, const struct ws_window *w, uint64_t i)
{
	const struct ws_op *a = &l->ops[w->durable + i];

	if (!a->data)
		return false;
	for (uint64_t j = w->durable + i + 1; j < w->end; j++) {
		const struct ws_op *b = &l->ops[j];

		if (b->data && b->epoch == a->epoch && b->off <= a->off &&
		    a->off + a->len <= b->off + b->len)
			return true;
	}
	return false;
}

static uint64_t tear_variants(const struct ws_log *l, const struct ws_op *op)
{
	uint64_t u = ws_op_units(l, op);

	if (u < 2)
		return 0;
	return 2 * (u - 1 < WS_TEAR_VARIANTS ? u - 1 : WS_TEAR_VARIANTS);
}

static uint64_t binom(uint64_t n, unsigned int k)
{
	uint64_t r = 1;

	if (k > n)
		return 0;
	for (unsigned int i = 0; i < k; i++)
		r = r * (n - i) / (i + 1); /* exact: r * (n - i) is a multiple of i + 1 */
	return r;
}

static int cmp_u64(const void *a, const void *b);

/* For a large window, which pending ops a later write of the same epoch covers whole: a
 * sweep from the window's end, per epoch run, over a Fenwick tree of the greatest end among
 * the later writes by their offset. Fills w->live_before and w->nover. 0 or -ENOMEM. */
static int window_overwritten(const struct ws_log *l, struct ws_window *w)
{
	uint64_t n = w->end - w->durable, m = 0, *offs, *fen, *touched, ntouched = 0, *lb;
	bool *over;
	int ret = -ENOMEM;

	if (n <= WS_SMALL_WINDOW)
		return 0;
	offs = malloc(n * sizeof(*offs));
	fen = calloc(n + 1, sizeof(*fen));
	/* an insert touches at most one position per bit of n */
	touched = malloc(n * (uint64_t)(66 - __builtin_clzll(n)) * sizeof(*touched));
	over = calloc(n, sizeof(*over));
	lb = malloc((n + 1) * sizeof(*lb));
	if (!offs || !fen || !touched || !over || !lb)
		goto out;
	for (uint64_t i = 0; i < n; i++)
		offs[m++] = l->ops[w->durable + i].off;
	qsort(offs, m, sizeof(*offs), cmp_u64);
	for (uint64_t i = n; i-- > 0;) {
		const struct ws_op *a = &l->ops[w->durable + i];
		uint64_t lo = 0, hi = m, best = 0;

		if (i + 1 < n && a->epoch != l->ops[w->durable + i + 1].epoch) {
			while (ntouched) /* a new epoch run: nothing later covers it */
				fen[touched[--ntouched]] = 0;
		}
		if (!a->data)
			continue;
		while (lo < hi) { /* the first offset > a->off: positions 1..lo are <= it */
			uint64_t mid = lo + (hi - lo) / 2;

			if (offs[mid] <= a->off)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint64_t p = lo; p; p &= p - 1)
			best = fen[p] > best ? fen[p] : best;
		over[i] = best >= a->off + a->len;
		for (uint64_t p = lo; p <= m; p += p & -p) {
			/* the first position with an offset equal to a->off or above: lo itself
			 * when the offsets are distinct; equal ones share the query's range */
			if (fen[p] < a->off + a->len) {
				fen[p] = a->off + a->len;
				touched[ntouched++] = p;
			}
		}
	}
	lb[0] = 0;
	for (uint64_t i = 0; i < n; i++) {
		lb[i + 1] = lb[i] + !over[i];
		w->nover += over[i];
	}
	if (w->nover) {
		w->live_before = lb;
		lb = NULL;
	}
	ret = 0;
out:
	free(offs);
	free(fen);
	free(touched);
	free(over);
	free(lb);
	return ret;
}

/* The states of window @w; 0 when they overflow a u64. */
static uint64_t window_states(const struct ws_log *l, const struct ws_window *w)
{
	uint64_t n = w->end - w->durable, cnt = 1 + n, add;

	if (n <= WS_SMALL_WINDOW) {
		cnt += (1ull << n) - n - 1;
	} else {
		for (unsigned int k = 1; k <= l->k; k++)
			if (__builtin_add_overflow(cnt, binom(n, k), &cnt))
				return 0;
		if (w->live_before)
			cnt += n - w->nover;
	}
	for (uint64_t i = w->durable; i < w->end; i++) {
		add = tear_variants(l, &l->ops[i]);
		if (__builtin_add_overflow(cnt, add, &cnt))
			return 0;
	}
	return cnt;
}

static int add_window(struct ws_log *l, uint64_t *cap, enum ws_barrier_kind kind,
		      uint64_t flush_no, uint64_t epoch, uint64_t pos, uint64_t durable)
{
	struct ws_window *w;

	if (grow((void **)&l->win, cap, l->nwin, sizeof(*l->win)))
		return -ENOMEM;
	if (l->nwin) {
		l->win[l->nwin - 1].end = l->nops;
		l->win[l->nwin - 1].end_pos = pos;
	}
	w = &l->win[l->nwin++];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->flush_no = flush_no;
	w->epoch = epoch;
	w->pos = pos;
	w->durable = durable;
	return 0;
}

int ws_log_open(struct ws_log *l, const char *path, unsigned int k, char *err, size_t errlen)
{
	uint64_t opcap = 0, wincap = 0, markcap = 0, flushes = 0, durable = 0, dptr = 0;
	uint64_t max_epoch = 0, rpos = 0;
	uint32_t unit;
	struct wlog_summary sum;
	struct wlog_reader r;
	char msg[256];
	struct wlog_rec rec;
	struct stat st;
	int ret;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	l->k = k;
	/* The one check every reader makes (core/cache/wlog.c), before anything is built. */
	ret = wlog_validate_path(path, &sum, msg, sizeof(msg));
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, msg);
		return ret;
	}
	l->cut_short = sum.cut_short;
	l->cut_short_after = sum.cut_short_after;
	ret = wlog_reader_open(&r, path);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	r.skip_data = true;
	l->hdr = r.hdr;
	unit = r.hdr.atomic_write; /* validated: a power of two */
	l->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (l->fd < 0 || fstat(l->fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto fail;
	}
	l->map_len = (uint64_t)st.st_size;
	l->map = mmap(NULL, l->map_len, PROT_READ, MAP_PRIVATE, l->fd, 0);
	if (l->map == MAP_FAILED) {
		ret = -errno;
		l->map = NULL;
		snprintf(err, errlen, "mmap %s: %s", path, strerror(-ret));
		goto fail;
	}
	ret = add_window(l, &wincap, WS_START, 0, 0, 0, 0);
	while (!ret) {
		rpos = r.pos;
		ret = wlog_next(&r, &rec);
		if (ret <= 0)
			break;
		ret = 0;
		if (rec.type == WLOG_CUT) {
			l->cut = true;
			break;
		}
		if (rec.type == WLOG_MARK) {
			struct ws_mark *m;

			if (grow((void **)&l->marks, &markcap, l->nmarks, sizeof(*l->marks)))
				ret = -ENOMEM;
			else {
				m = &l->marks[l->nmarks++];
				m->pos = rpos;
				m->need = l->nops;
				m->text = strndup((const char *)r.buf, rec.len);
				if (!m->text)
					ret = -ENOMEM;
			}
			continue;
		}
		/* A reload changed the atomic unit: the writes logged after it tear at it. */
		if (rec.type == WLOG_ATOMIC) {
			unit = (uint32_t)rec.len;
			continue;
		}
		/* A failed flush made nothing durable and ends no window: a cut after it may
		 * still lose what it was to flush. */
		if (rec.type == WLOG_FLUSH_FAILED)
			continue;
		if (rec.type == WLOG_FLUSH) {
			bool ignored = rec.reserved & WLOG_F_IGNORED;

			flushes++;
			if (!ignored && rec.epoch > max_epoch) {
				max_epoch = rec.epoch;
				while (dptr < l->nops && l->ops[dptr].epoch <= max_epoch)
					dptr++;
				if (dptr > durable)
					durable = dptr;
			}
			ret = add_window(l, &wincap, ignored ? WS_IGNORED : WS_FLUSH, flushes,
					 rec.epoch, rpos, durable);
			continue;
		}
		if (rec.type == WLOG_DISCARD &&
		    (!rec.len || rec.offset > l->hdr.disk_size ||
		     rec.len > l->hdr.disk_size - rec.offset)) {
			ret = -EINVAL;
			break;
		}
		/* A write or a discard. */
		if (grow((void **)&l->ops, &opcap, l->nops, sizeof(*l->ops))) {
			ret = -ENOMEM;
			break;
		}
		if (l->nops && rec.epoch < l->ops[l->nops - 1].epoch) {
			ret = -EINVAL; /* epochs never go back along the log */
			break;
		}
		if (rec.type == WLOG_DISCARD) /* the window before it ends before it */
			ret = add_window(l, &wincap, WS_DISCARD, flushes, rec.epoch, rpos,
					 l->nops + 1);
		l->ops[l->nops++] = (struct ws_op){
			.off = rec.offset, .len = rec.len, .epoch = rec.epoch, .pos = rpos,
			.unit = unit, .data = rec.type == WLOG_WRITE ? l->map + r.data_pos : NULL,
		};
		if (rec.type == WLOG_DISCARD) {
			durable = l->nops;
			dptr = dptr > durable ? dptr : durable;
		}
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s at byte %llu", path,
			 ret == -EINVAL ? "bad record" : strerror(-ret), (unsigned long long)rpos);
		goto fail;
	}
	l->win[l->nwin - 1].end = l->nops;
	l->win[l->nwin - 1].end_pos = rpos;
	for (uint64_t i = 0; i < l->nwin; i++) {
		struct ws_window *w = &l->win[i];

		ret = window_overwritten(l, w);
		if (ret) {
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
			goto fail;
		}
		w->nstates = window_states(l, w);
		w->first_id = l->nstates;
		if (!w->nstates || __builtin_add_overflow(l->nstates, w->nstates, &l->nstates)) {
			ret = -EOVERFLOW;
			snprintf(err, errlen, "%s: more crash states than fit in 64 bits (lower -k)",
				 path);
			goto fail;
		}
	}
	wlog_reader_close(&r);
	return 0;
fail:
	wlog_reader_close(&r);
	ws_log_close(l);
	return ret;
}

void ws_log_close(struct ws_log *l)
{
	for (uint64_t i = 0; i < l->nmarks; i++)
		free((char *)l->marks[i].text);
	free(l->marks);
	free(l->ops);
	for (uint64_t i = 0; i < l->nwin; i++)
		free(l->win[i].live_before);
	free(l->win);
	if (l->map)
		munmap((void *)l->map, l->map_len);
	if (l->fd >= 0)
		close(l->fd);
	memset(l, 0, sizeof(*l));
	l->fd = -1;
}

void ws_state_decode(const struct ws_log *l, uint64_t id, struct ws_state *s)
{
	uint64_t lo = 0, hi = l->nwin, r, n, c;
	const struct ws_window *w;

	while (hi - lo > 1) { /* the last window whose first id is <= id */
		uint64_t mid = lo + (hi - lo) / 2;

		if (l->win[mid].first_id <= id)
			lo = mid;
		else
			hi = mid;
	}
	w = &l->win[lo];
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->win = lo;
	n = s->n = w->end - w->durable;
	r = id - w->first_id;
	if (r <= n) {
		s->kind = r ? WS_K_PREFIX : WS_K_FLUSH;
		s->j = r;
		return;
	}
	r -= n + 1;
	if (n <= WS_SMALL_WINDOW) {
		c = (1ull << n) - n - 1;
		if (r < c) {
			s->kind = WS_K_SUBSET;
			for (uint64_t mask = 0;; mask++) {
				if (!(mask & (mask + 1))) /* 2^j - 1: a prefix */
					continue;
				if (!r--) {
					s->mask = mask;
					return;
				}
			}
		}
		r -= c;
	} else {
		for (unsigned int k = 1; k <= l->k; k++) {
			c = binom(n, k);
			if (r >= c) {
				r -= c;
				continue;
			}
			/* The r-th k-subset in lexicographic order. */
			s->kind = WS_K_DROP;
			s->ndrop = k;
			for (unsigned int i = 0, a = 0; i < k; i++, a++) {
				for (;; a++) {
					uint64_t rest = binom(n - 1 - a, k - 1 - i);

					if (r < rest)
						break;
					r -= rest;
				}
				s->drop[i] = a;
			}
			return;
		}
		if (w->live_before) {
			c = n - w->nover;
			if (r < c) {
				s->kind = WS_K_OVER;
				s->j = r + 1;
				return;
			}
			r -= c;
		}
	}
	s->kind = WS_K_TORN;
	for (uint64_t i = 0; i < n; i++) {
		const struct ws_op *op = &l->ops[w->durable + i];
		uint64_t v = tear_variants(l, op), u, half;

		if (r >= v) {
			r -= v;
			continue;
		}
		u = ws_op_units(l, op);
		half = v / 2;
		s->j = i;
		s->tail = r >= half;
		r %= half;
		s->m = u - 1 <= WS_TEAR_VARIANTS ? r + 1 : 1 + r * (u - 2) / (half - 1);
		return;
	}
}

int ws_state_keeps(const struct ws_log *l, const struct ws_state *s, uint64_t i)
{
	const uint64_t *lb = l->win[s->win].live_before;

	switch (s->kind) {
	case WS_K_OVER:
		return lb[i + 1] != lb[i] && lb[i] < s->j;
	case WS_K_FLUSH:
		return 0;
	case WS_K_PREFIX:
		return i < s->j;
	case WS_K_SUBSET:
		return (s->mask >> i) & 1;
	case WS_K_DROP:
		for (unsigned int d = 0; d < s->ndrop; d++)
			if (s->drop[d] == i)
				return 0;
		return 1;
	case WS_K_TORN:
		return i < s->j ? 1 : i == s->j ? 2 : 0;
	}
	return 0;
}

void ws_state_torn_range(const struct ws_log *l, const struct ws_state *s, uint64_t *off,
			 uint64_t *len)
{
	const struct ws_op *op = &l->ops[l->win[s->win].durable + s->j];
	uint64_t a = op->unit;
	uint64_t u = ws_op_units(l, op), first = op->off / a, end = op->off + op->len, cut;

	if (!s->tail) { /* units 0 .. m-1 */
		cut = (first + s->m) * a;
		*off = op->off;
		*len = (cut < end ? cut : end) - op->off;
	} else { /* units u-m .. u-1 */
		cut = (first + u - s->m) * a;
		*off = cut > op->off ? cut : op->off;
		*len = end - *off;
	}
}

void ws_builder_init(struct ws_builder *b)
{
	memset(b, 0, sizeof(*b));
	extmap_init(&b->durable);
}

void ws_builder_free(struct ws_builder *b)
{
	extmap_free(&b->durable);
	free(b->batch);
	b->batch = NULL;
	b->batch_cap = 0;
}

/* How often a build looks at b->stop: every this many ops. */
#define WS_STOP_EVERY 65536

static bool builder_stopped(const struct ws_builder *b)
{
	return b->stop && *b->stop;
}

/* Room for @n ops in b->batch. */
static int batch_reserve(struct ws_builder *b, uint64_t n)
{
	struct extent *nb;

	if (n <= b->batch_cap)
		return 0;
	nb = realloc(b->batch, n * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	b->batch = nb;
	b->batch_cap = n;
	return 0;
}

int ws_state_build(const struct ws_log *l, struct ws_builder *b, const struct ws_state *s,
		   struct extmap *out)
{
	const struct ws_window *w = &l->win[s->win];
	uint64_t nb = 0;
	int ret;

	/* The durable ops this window adds, at once. */
	if (b->applied < w->durable) {
		ret = batch_reserve(b, w->durable - b->applied);
		if (ret)
			return ret;
		for (uint64_t i = b->applied; i < w->durable; i++) {
			const struct ws_op *op = &l->ops[i];

			if (!(i % WS_STOP_EVERY) && builder_stopped(b))
				return -EINTR;
			b->batch[nb++] = (struct extent){ op->off, op->len, op->data };
		}
		ret = extmap_put_many(&b->durable, b->batch, nb);
		if (ret)
			return ret;
		b->applied = w->durable;
		if (builder_stopped(b))
			return -EINTR;
	}
	ret = extmap_copy(out, &b->durable);
	if (ret)
		return ret;
	ret = batch_reserve(b, s->n);
	if (ret)
		return ret;
	nb = 0;
	for (uint64_t i = 0; i < s->n; i++) {
		const struct ws_op *op = &l->ops[w->durable + i];
		int k = ws_state_keeps(l, s, i);

		if (!(i % WS_STOP_EVERY) && builder_stopped(b))
			return -EINTR;
		if (k == 1) {
			b->batch[nb++] = (struct extent){ op->off, op->len, op->data };
		} else if (k == 2) {
			uint64_t off, len;

			ws_state_torn_range(l, s, &off, &len);
			b->batch[nb++] = (struct extent){ off, len, op->data + (off - op->off) };
		}
	}
	ret = extmap_put_many(out, b->batch, nb);
	if (!ret && builder_stopped(b))
		ret = -EINTR;
	return ret;
}

uint64_t ws_state_cut_pos(const struct ws_log *l, const struct ws_state *s)
{
	/* The latest cut that can leave the state: the window's end. A cut anywhere in the
	 * window can leave any of its states (background destaging makes any pending op
	 * durable before it, and the cut's mode drops, keeps or tears the rest), so the
	 * checker is told of every mark acknowledged before the next barrier: a commit
	 * acknowledged and then lost is a state too. */
	return l->win[s->win].end_pos;
}

int64_t ws_state_mark(const struct ws_log *l, const struct ws_state *s, uint64_t *nacked)
{
	uint64_t cut = ws_state_cut_pos(l, s), lo = 0, hi = l->nmarks, whole = s->n, have;

	while (lo < hi) { /* marks before the cut */
		uint64_t mid = lo + (hi - lo) / 2;

		if (l->marks[mid].pos < cut)
			lo = mid + 1;
		else
			hi = mid;
	}
	*nacked = lo;
	for (uint64_t i = 0; i < s->n; i++) /* the pending ops kept whole from the first */
		if (ws_state_keeps(l, s, i) != 1) {
			whole = i;
			break;
		}
	have = l->win[s->win].durable + whole;
	while (lo && l->marks[lo - 1].need > have)
		lo--;
	return lo ? (int64_t)lo - 1 : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int ws_sample(const struct ws_log *l, uint64_t budget, uint64_t seed, uint64_t *ids)
{
	uint64_t n = 0, rng = seed, cap = 16, *set;

	if (budget >= l->nstates) {
		for (uint64_t i = 0; i < l->nstates; i++)
			ids[i] = i;
		return 0;
	}
	while (cap < 2 * budget)
		cap *= 2;
	set = malloc(cap * sizeof(*set)); /* open addressing; UINT64_MAX is empty */
	if (!set)
		return -ENOMEM;
	memset(set, 0xff, cap * sizeof(*set));
	while (n < budget) {
		uint64_t id = prng_splitmix64(&rng) % l->nstates, h = id * 0x9e3779b97f4a7c15ull;

		for (h &= cap - 1; set[h] != UINT64_MAX && set[h] != id; h = (h + 1) & (cap - 1))
			;
		if (set[h] == id)
			continue;
		set[h] = id;
		ids[n++] = id;
	}
	free(set);
	qsort(ids, n, sizeof(*ids), cmp_u64);
	return 0;
}
