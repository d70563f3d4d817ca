// SPDX-License-Identifier: MIT
/* --minimize: Zeller's ddmin over a failing state's lost writes (see explore_minimize.h).
 *
 * The set under test starts as every op the state dropped or tore, which fails (it is the
 * state). Each round splits it into g chunks and checks the chunks, then their complements:
 * the first that fails becomes the set (g back to 2 for a chunk, g - 1 for a complement);
 * when none fails g doubles, up to the set's size, where the set is 1-minimal. A round's
 * candidates are checked side by side (-j), and the first failing one in order is taken,
 * so the result does not depend on which checker ended first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/explore/explore_minimize.h"

int xp_build_lost(const struct ws_log *l, const struct ws_state *s, const bool *lost,
		  struct extmap *out)
{
	const struct ws_window *w = &l->win[s->win];
	struct extent *v = malloc((w->durable + s->n + 1) * sizeof(*v));
	uint64_t nv = 0;
	int ret;

	if (!v)
		return -ENOMEM;
	for (uint64_t i = 0; i < w->durable; i++)
		v[nv++] = (struct extent){ l->ops[i].off, l->ops[i].len, l->ops[i].data };
	for (uint64_t i = 0; i < s->n; i++) {
		const struct ws_op *op = &l->ops[w->durable + i];

		if (!lost[i]) {
			v[nv++] = (struct extent){ op->off, op->len, op->data };
		} else if (ws_state_keeps(l, s, i) == 2) {
			uint64_t off, len;

			ws_state_torn_range(l, s, &off, &len);
			v[nv++] = (struct extent){ off, len, op->data + (off - op->off) };
		}
	}
	extmap_free(out);
	extmap_init(out);
	ret = extmap_put_many(out, v, nv);
	free(v);
	return ret;
}

/* A round's candidates: @set split in @g chunks, then (for g > 2) their complements. Each
 * a bool per pending op of @n. */
static int round_candidates(const uint64_t *set, uint64_t nset, uint64_t g, uint64_t n,
			    bool **cand, size_t *ncand)
{
	size_t k = 0;

	for (uint64_t c = 0; c < g; c++) {
		uint64_t lo = nset * c / g, hi = nset * (c + 1) / g;

		cand[k] = calloc(n ? n : 1, sizeof(bool));
		if (!cand[k])
			goto nomem;
		for (uint64_t i = lo; i < hi; i++)
			cand[k][set[i]] = true;
		k++;
	}
	for (uint64_t c = 0; g > 2 && c < g; c++) {
		cand[k] = calloc(n ? n : 1, sizeof(bool));
		if (!cand[k])
			goto nomem;
		for (uint64_t i = 0; i < nset; i++)
			cand[k][set[i]] = !cand[c][set[i]];
		k++;
	}
	*ncand = k;
	return 0;
nomem:
	while (k--)
		free(cand[k]);
	return -ENOMEM;
}

/* Check @cand in order, @batch at a time, within what is left of @budget: the index of
 * the first failing one, or -1; -2 when the budget ran out first; or -errno - 2. */
static int64_t first_failing(const struct ws_state *s, bool **cand, size_t ncand,
			     uint64_t budget, size_t batch, xp_lost_check_fn check, void *ctx,
			     uint64_t *runs)
{
	bool *fails = calloc(ncand, sizeof(*fails));
	int64_t found = -1;

	if (!fails)
		return -ENOMEM - 2;
	for (size_t at = 0; at < ncand && found == -1; at += batch) {
		size_t m = ncand - at < batch ? ncand - at : batch;
		int ret;

		if (budget && *runs >= budget) {
			found = -2;
			break;
		}
		if (budget && *runs + m > budget)
			m = budget - *runs;
		ret = check(ctx, s, cand + at, m, fails + at);
		*runs += m;
		if (ret) {
			found = ret - 2;
			break;
		}
		for (size_t i = at; i < at + m && found == -1; i++)
			if (fails[i])
				found = (int64_t)i;
	}
	free(fails);
	return found;
}

int xp_minimize(const struct ws_log *l, const struct ws_state *s, uint64_t budget,
		xp_lost_check_fn check, void *ctx, struct xp_culprit *c)
{
	uint64_t *set = malloc((s->n ? s->n : 1) * sizeof(*set)), nset = 0, g = 2;
	bool **cand = calloc(2 * (s->n + 2), sizeof(*cand)), *none = calloc(s->n + 1, 1);
	size_t ncand = 0;
	int64_t f;
	int ret = 0;

	*c = (struct xp_culprit){ 0 };
	if (!set || !cand || !none) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < s->n; i++)
		if (ws_state_keeps(l, s, i) != 1)
			set[nset++] = i;
	/* Nothing lost and still failing: the cause is not a lost write. */
	f = first_failing(s, &none, 1, budget, 1, check, ctx, &c->runs);
	if (f < -2) {
		ret = (int)(f + 2);
		goto out;
	}
	if (f == 0) {
		c->no_loss = c->minimal = true;
		nset = 0;
		goto done;
	}
	if (f == -2)
		goto done;
	while (nset >= 2) {
		uint64_t k = 0;

		if (g > nset)
			g = nset;
		ret = round_candidates(set, nset, g, s->n, cand, &ncand);
		if (ret)
			goto out;
		f = first_failing(s, cand, ncand, budget, SIZE_MAX, check, ctx, &c->runs);
		if (f >= 0) {
			for (uint64_t i = 0; i < s->n; i++)
				if (cand[f][i])
					set[k++] = i;
			nset = k;
			g = (uint64_t)f < g ? 2 : (g > 3 ? g - 1 : 2);
		}
		while (ncand)
			free(cand[--ncand]);
		if (f < -2) {
			ret = (int)(f + 2);
			goto out;
		}
		if (f == -2)
			goto done; /* the budget ran out: the set fails, but may not be minimal */
		if (f == -1) {
			if (g == nset)
				break;
			g = 2 * g < nset ? 2 * g : nset;
		}
	}
	c->minimal = true;
done:
	c->ops = malloc((nset ? nset : 1) * sizeof(*c->ops));
	if (!c->ops) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(c->ops, set, nset * sizeof(*set));
	c->n = nset;
out:
	free(set);
	free(cand);
	free(none);
	return ret;
}
