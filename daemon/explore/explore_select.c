// SPDX-License-Identifier: MIT
/* Which crash states `plugdisk explore` checks.
 *
 * Notes on the design. A crash tester's budget is small and the states that fail are a sliver:
 * a torn page, the window that holds a commit. A uniform sample of a log's states mostly draws
 * the kind that has the most states (the subsets of small windows), and misses the rest. So
 * a budget is spread in strata: a stratum is one kind in one window (a window's states run
 * by kind in id order, so a stratum is a run of ids). The budget goes to the kinds in rounds,
 * the kind with the fewest states first, each taking its weight (--weights, default 1) per
 * round, so that every kind present gets states before any gets many. A kind's share goes to
 * its windows in rounds too, one state per window per round: windows that hold a mark first,
 * then windows with a write that spans atomic units, then the rest, each group in an order
 * spread evenly over the log from a seeded start. Inside a stratum, states are drawn from the
 * seed, preferring one whose lost or torn write was not yet the subject of another (the
 * writes that differ), and a write that spans atomic units. Everything is drawn from --seed:
 * the same log, selection and seed pick the same states. --sampler uniform keeps the plain
 * random sample (ws_sample()) for comparison. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/prng.h"
#include "daemon/explore/explore.h"
#include "daemon/explore/explore_select.h"

/* A run of ids of one kind in one window, inside the chosen set. */
struct piece {
	uint64_t win;
	unsigned int kind;
	uint64_t lo, hi;	/* ids [lo, hi) */
};

/* One kind in one window: pieces [first, first + npieces). */
struct stratum {
	uint64_t win;
	unsigned int kind;
	size_t first, npieces;
	uint64_t size;		/* states */
	uint64_t quota;		/* states to pick */
	unsigned int prio;	/* 2: the window holds a mark; 1: a write spans atomic units */
	uint64_t order;		/* the even spread's key */
};

/* ---- the chosen set, as pieces ---- */

struct pieces {
	struct piece *v;
	size_t n, cap;
};

static int piece_add(struct pieces *ps, uint64_t win, unsigned int kind, uint64_t lo,
		     uint64_t hi)
{
	if (lo >= hi)
		return 0;
	if (ps->n && ps->v[ps->n - 1].win == win && ps->v[ps->n - 1].kind == kind &&
	    ps->v[ps->n - 1].hi == lo) {
		ps->v[ps->n - 1].hi = hi;
		return 0;
	}
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 64;
		struct piece *nv = realloc(ps->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		ps->v = nv;
		ps->cap = cap;
	}
	ps->v[ps->n++] = (struct piece){ win, kind, lo, hi };
	return 0;
}

static unsigned int kind_of(const struct ws_log *l, uint64_t id)
{
	struct ws_state s;

	ws_state_decode(l, id, &s);
	return (unsigned int)s.kind;
}

/* The end of the run of kind @k that starts at @lo, inside [lo, end): ids of one kind in a
 * window are consecutive. */
static uint64_t run_end(const struct ws_log *l, uint64_t lo, uint64_t end, unsigned int k)
{
	uint64_t step = 1, good = lo, bad_at = end;

	while (good + step < end) { /* gallop */
		if (kind_of(l, good + step) != k) {
			bad_at = good + step;
			break;
		}
		good += step;
		step *= 2;
	}
	while (bad_at - good > 1) {
		uint64_t mid = good + (bad_at - good) / 2;

		if (kind_of(l, mid) == k)
			good = mid;
		else
			bad_at = mid;
	}
	return good + 1;
}

/* Add the part of [lo, hi) inside --states. */
static int add_chosen(const struct xp_select *sel, struct pieces *ps, uint64_t win,
		      unsigned int kind, uint64_t lo, uint64_t hi)
{
	int ret = 0;

	if (!sel->states)
		return piece_add(ps, win, kind, lo, hi);
	for (uint64_t i = 0; i < sel->nstates && !ret; i++) {
		uint64_t a = sel->states[i].lo, b = sel->states[i].hi + 1;

		if (b == 0) /* hi = UINT64_MAX */
			b = UINT64_MAX;
		a = a > lo ? a : lo;
		b = b < hi ? b : hi;
		if (a < b)
			ret = piece_add(ps, win, kind, a, b);
	}
	return ret;
}

static int build_pieces(const struct xp *x, struct pieces *ps)
{
	const struct ws_log *l = &x->log;
	const struct xp_select *sel = &x->sel;
	uint64_t w0 = 0, w1 = l->nwin;

	if (sel->has_windows) {
		w0 = sel->windows.lo;
		w1 = sel->windows.hi < l->nwin ? sel->windows.hi + 1 : l->nwin;
	}
	if (w0 < sel->from_win)
		w0 = sel->from_win;
	for (uint64_t w = w0; w < w1; w++) {
		uint64_t id = l->win[w].first_id, end = id + l->win[w].nstates;
		/* --from-*: the window the point falls in keeps its setup writes whole */
		bool filter = w == sel->from_win && l->win[w].durable < sel->from_ops;

		while (id < end) {
			unsigned int k = kind_of(l, id);
			uint64_t e = run_end(l, id, end, k);
			int ret = 0;

			if (sel->kinds && !((sel->kinds >> k) & 1))
				;
			else if (!filter)
				ret = add_chosen(sel, ps, w, k, id, e);
			else
				for (uint64_t i = id; i < e && !ret; i++)
					if (xp_from_keeps(l, sel, i))
						ret = add_chosen(sel, ps, w, k, i, i + 1);
			if (ret)
				return ret;
			id = e;
		}
	}
	return 0;
}

/* ---- picking ---- */

/* Whether window @w holds a mark, and whether a pending write of it spans atomic units. */
static unsigned int window_prio(const struct ws_log *l, uint64_t w)
{
	const struct ws_window *win = &l->win[w];
	uint64_t lo = 0, hi = l->nmarks;

	while (lo < hi) { /* the first mark at or after the window's barrier (marks in log order) */
		uint64_t mid = lo + (hi - lo) / 2;

		if (l->marks[mid].pos < win->pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < l->nmarks && l->marks[lo].pos < win->end_pos)
		return 2;
	for (uint64_t i = win->durable; i < win->end; i++)
		if (ws_op_units(l, &l->ops[i]) > 1)
			return 1;
	return 0;
}

static uint64_t bit_reverse(uint64_t v)
{
	uint64_t r = 0;

	for (int i = 0; i < 64; i++, v >>= 1)
		r = (r << 1) | (v & 1);
	return r;
}

static int cmp_stratum_order(const void *a, const void *b)
{
	const struct stratum *p = *(struct stratum *const *)a, *q = *(struct stratum *const *)b;

	if (p->prio != q->prio)
		return p->prio > q->prio ? -1 : 1;
	return p->order < q->order ? -1 : p->order > q->order;
}

/* The op a state is about: the torn write, the first write a prefix loses, the first one a
 * drop loses; the subset's size; and whether that op spans atomic units. */
static uint64_t state_subject(const struct ws_log *l, uint64_t id, bool *spans)
{
	struct ws_state s;
	uint64_t op = UINT64_MAX, subj = 0;

	ws_state_decode(l, id, &s);
	switch (s.kind) {
	case WS_K_FLUSH:
		break;
	case WS_K_SUBSET:
		subj = (uint64_t)__builtin_popcountll(s.mask);
		break;
	case WS_K_DROP:
		op = s.drop[0];
		subj = op;
		break;
	default: /* prefix and torn, and kinds that keep the first j */
		op = s.j;
		subj = op;
		break;
	}
	*spans = op < s.n && ws_op_units(l, &l->ops[l->win[s.win].durable + op]) > 1;
	return subj;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;

	return p < q ? -1 : p > q;
}

/* The @i-th id of stratum @st. */
static uint64_t stratum_id(const struct pieces *ps, const struct stratum *st, uint64_t i)
{
	for (size_t p = st->first; p < st->first + st->npieces; p++) {
		uint64_t n = ps->v[p].hi - ps->v[p].lo;

		if (i < n)
			return ps->v[p].lo + i;
		i -= n;
	}
	return UINT64_MAX; /* not reached */
}

#define XP_POOL_MIN 256	/* candidates a large stratum's picks are chosen from */

/* Pick st->quota ids of @st into @out: from a seeded pool of candidates, each time one whose
 * subject was picked least so far, preferring one that spans atomic units. */
static int pick_stratum(const struct ws_log *l, const struct pieces *ps,
			const struct stratum *st, uint64_t rng[4], uint64_t *out)
{
	uint64_t npool = st->size, *pool, *subj, *uses = NULL, maxs = 0;
	bool *spans;
	int ret = -ENOMEM;

	if (st->quota >= st->size) {
		for (uint64_t i = 0; i < st->size; i++)
			out[i] = stratum_id(ps, st, i);
		return 0;
	}
	if (npool > XP_POOL_MIN && npool > 4 * st->quota)
		npool = 4 * st->quota > XP_POOL_MIN ? 4 * st->quota : XP_POOL_MIN;
	pool = calloc(npool, sizeof(*pool));
	subj = calloc(npool, sizeof(*subj));
	spans = calloc(npool, sizeof(*spans));
	if (!pool || !subj || !spans)
		goto out;
	if (npool == st->size) {
		for (uint64_t i = 0; i < npool; i++)
			pool[i] = stratum_id(ps, st, i);
		for (uint64_t i = npool - 1; i > 0; i--) { /* seeded shuffle */
			uint64_t j = prng_next(rng) % (i + 1), t = pool[i];

			pool[i] = pool[j];
			pool[j] = t;
		}
	} else {
		/* Distinct draws: indexes sorted and checked, drawn again where they repeat. */
		uint64_t *idx = calloc(npool, sizeof(*idx)), n = 0;

		if (!idx)
			goto out;
		while (n < npool) {
			for (uint64_t i = n; i < npool; i++)
				idx[i] = prng_next(rng) % st->size;
			qsort(idx, npool, sizeof(*idx), cmp_u64);
			n = 0;
			for (uint64_t i = 0; i < npool; i++)
				if (!n || idx[i] != idx[n - 1])
					idx[n++] = idx[i];
		}
		for (uint64_t i = 0; i < npool; i++)
			pool[i] = stratum_id(ps, st, idx[i]);
		free(idx);
		for (uint64_t i = npool - 1; i > 0; i--) {
			uint64_t j = prng_next(rng) % (i + 1), t = pool[i];

			pool[i] = pool[j];
			pool[j] = t;
		}
	}
	for (uint64_t i = 0; i < npool; i++) {
		subj[i] = state_subject(l, pool[i], &spans[i]);
		if (subj[i] > maxs)
			maxs = subj[i];
	}
	uses = calloc(maxs + 1, sizeof(*uses));
	if (!uses)
		goto out;
	for (uint64_t q = 0; q < st->quota; q++) {
		uint64_t best = UINT64_MAX;

		for (uint64_t i = 0; i < npool; i++) {
			if (pool[i] == UINT64_MAX)
				continue;
			if (best == UINT64_MAX || uses[subj[i]] < uses[subj[best]] ||
			    (uses[subj[i]] == uses[subj[best]] && spans[i] && !spans[best]))
				best = i;
		}
		out[q] = pool[best];
		uses[subj[best]]++;
		pool[best] = UINT64_MAX;
	}
	ret = 0;
out:
	free(pool);
	free(subj);
	free(spans);
	free(uses);
	return ret;
}

/* Give @budget states to the kinds, then to each kind's windows, in rounds. */
static void allocate(const struct xp *x, struct stratum *st, size_t nst, uint64_t budget,
		     uint64_t quota[XP_MAX_KINDS], uint64_t rng[4])
{
	unsigned int nk = xp_nkinds(), order[XP_MAX_KINDS], no = 0;
	uint64_t avail[XP_MAX_KINDS] = { 0 }, left = budget;
	bool more = true;

	for (size_t i = 0; i < nst; i++)
		avail[st[i].kind] += st[i].size;
	for (unsigned int k = 0; k < nk; k++)
		if (avail[k])
			order[no++] = k;
	for (unsigned int a = 1; a < no; a++) /* the kind with the fewest states first */
		for (unsigned int b = a; b > 0 && avail[order[b]] < avail[order[b - 1]]; b--) {
			unsigned int t = order[b];

			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	memset(quota, 0, XP_MAX_KINDS * sizeof(*quota));
	while (left && more) {
		more = false;
		for (unsigned int i = 0; i < no && left; i++) {
			unsigned int k = order[i];
			uint64_t w = x->sel.weight[k] ? x->sel.weight[k] : 1, room = avail[k] - quota[k];

			if (!room)
				continue;
			w = w < room ? w : room;
			w = w < left ? w : left;
			quota[k] += w;
			left -= w;
			more = true;
		}
	}
	/* Each kind's windows: marked ones first, then those with a multi-unit write, each
	 * group spread evenly over the log from a seeded start. */
	for (unsigned int k = 0; k < nk; k++) {
		struct stratum **v;
		uint64_t n = 0, q = quota[k], start = prng_next(rng);

		if (!q)
			continue;
		v = calloc(nst, sizeof(*v));
		if (!v)
			continue; /* the caller finds the quotas short and fails */
		for (size_t i = 0; i < nst; i++)
			if (st[i].kind == k) {
				st[i].order = bit_reverse(n + start);
				v[n++] = &st[i];
			}
		qsort(v, n, sizeof(*v), cmp_stratum_order);
		while (q) {
			for (uint64_t i = 0; i < n && q; i++) {
				if (v[i]->quota < v[i]->size) {
					v[i]->quota++;
					q--;
				}
			}
		}
		free(v);
	}
}

static int stratified(struct xp *x, const struct pieces *ps, uint64_t budget, uint64_t *ids)
{
	const struct ws_log *l = &x->log;
	struct stratum *st = NULL;
	uint64_t quota[XP_MAX_KINDS], rng[4], n = 0;
	size_t nst = 0;
	int ret = 0;

	st = calloc(ps->n ? ps->n : 1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i < ps->n; i++) {
		if (!nst || st[nst - 1].win != ps->v[i].win || st[nst - 1].kind != ps->v[i].kind) {
			st[nst] = (struct stratum){ .win = ps->v[i].win, .kind = ps->v[i].kind,
						    .first = i };
			st[nst].prio = window_prio(l, ps->v[i].win);
			nst++;
		}
		st[nst - 1].npieces++;
		st[nst - 1].size += ps->v[i].hi - ps->v[i].lo;
	}
	prng_seed(rng, x->seed);
	allocate(x, st, nst, budget, quota, rng);
	for (size_t i = 0; i < nst && !ret; i++) {
		if (!st[i].quota)
			continue;
		ret = pick_stratum(l, ps, &st[i], rng, ids + n);
		n += st[i].quota;
		x->kinds[st[i].kind].planned += st[i].quota;
	}
	free(st);
	if (!ret && n != budget)
		ret = -ENOMEM; /* a quota could not be spread */
	if (!ret)
		qsort(ids, n, sizeof(*ids), cmp_u64);
	return ret;
}

int xp_select_states(struct xp *x, uint64_t **ids_out)
{
	const struct ws_log *l = &x->log;
	struct pieces ps = { 0 };
	uint64_t total = 0, *ids = NULL;
	int ret;

	*ids_out = NULL;
	if (x->sel.has_windows && x->sel.windows.lo >= l->nwin) {
		fprintf(stderr, "plugdisk explore: --windows %" PRIu64 "-%" PRIu64 ": the log has %"
			PRIu64 " windows (0-%" PRIu64 ")\n", x->sel.windows.lo, x->sel.windows.hi,
			l->nwin, l->nwin - 1);
		return -EINVAL;
	}
	if (x->sel.states && x->sel.states[x->sel.nstates - 1].hi >= l->nstates) {
		fprintf(stderr, "plugdisk explore: --states: the log has %" PRIu64
			" states (0-%" PRIu64 ", with -k %u)\n", l->nstates, l->nstates - 1, x->k);
		return -EINVAL;
	}
	ret = xp_from_resolve(l, &x->sel);
	if (ret)
		return ret;
	ret = build_pieces(x, &ps);
	if (ret)
		goto out;
	for (size_t i = 0; i < ps.n; i++) {
		total += ps.v[i].hi - ps.v[i].lo;
		x->kinds[ps.v[i].kind].states += ps.v[i].hi - ps.v[i].lo;
	}
	x->planned = total;
	if (x->budget && x->budget < total) {
		x->planned = x->budget;
		x->sampled = true;
		ids = calloc(x->budget, sizeof(*ids));
		if (!ids) {
			ret = -ENOMEM;
			goto out;
		}
		if (x->sel.uniform && !x->sel.chosen) {
			ret = ws_sample(l, x->budget, x->seed, ids);
			for (uint64_t i = 0; !ret && i < x->budget; i++)
				x->kinds[kind_of(l, ids[i])].planned++;
		} else if (x->sel.uniform) {
			fprintf(stderr, "plugdisk explore: --sampler uniform samples the whole log: "
				"no --kinds, --windows or --states with it\n");
			ret = -EINVAL;
		} else {
			ret = stratified(x, &ps, x->budget, ids);
		}
	} else if (x->sel.chosen) {
		uint64_t n = 0;

		ids = calloc(total ? total : 1, sizeof(*ids));
		if (!ids) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < ps.n; i++)
			for (uint64_t id = ps.v[i].lo; id < ps.v[i].hi; id++)
				ids[n++] = id;
		for (unsigned int k = 0; k < xp_nkinds(); k++)
			x->kinds[k].planned = x->kinds[k].states;
	} else {
		for (unsigned int k = 0; k < xp_nkinds(); k++)
			x->kinds[k].planned = x->kinds[k].states;
	}
out:
	free(ps.v);
	if (ret) {
		free(ids);
		if (ret == -ENOMEM)
			fprintf(stderr, "plugdisk explore: out of memory\n");
		return ret;
	}
	*ids_out = ids;
	return 0;
}

void xp_count_checked(struct xp *x, uint64_t id, bool failed)
{
	unsigned int k = kind_of(&x->log, id);

	x->kinds[k].checked++;
	x->kinds[k].failed += failed;
}

void xp_list_states(const struct xp *x, const uint64_t *ids, FILE *f)
{
	const struct ws_log *l = &x->log;

	if (x->sel.list_json)
		fprintf(f, "{\"states_total\":%" PRIu64 ",\"windows\":%" PRIu64 ",\"k\":%u,"
			"\"listed\":%" PRIu64 ",\"states\":[", l->nstates, l->nwin, x->k, x->planned);
	for (uint64_t i = 0; i < x->planned; i++) {
		struct ws_state s;

		ws_state_decode(l, ids ? ids[i] : i, &s);
		if (x->sel.list_json) {
			fputs(i ? ",\n" : "\n", f);
			xp_put_state_json(f, x, &s);
			fputc('}', f);
		} else {
			xp_put_state_line(f, x, &s);
		}
	}
	if (x->sel.list_json)
		fprintf(f, "\n]}\n");
}

int xp_state_json_file(const struct xp *x, uint64_t id, const char *path)
{
	FILE *f = fopen(path, "we");
	struct ws_state s;

	if (!f)
		return -errno;
	ws_state_decode(&x->log, id, &s);
	xp_put_state_json(f, x, &s);
	fputs("}\n", f);
	return fclose(f) ? -errno : 0;
}
