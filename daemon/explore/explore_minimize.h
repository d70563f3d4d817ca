/* SPDX-License-Identifier: MIT */
/* `plugdisk explore --minimize`: the smallest set of a failing state's lost writes that still
 * fails the checker when every other write of its window is kept, by delta debugging. */
#ifndef PLUGDISK_EXPLORE_MINIMIZE_H
#define PLUGDISK_EXPLORE_MINIMIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/crash/extmap.h"
#include "core/crash/wlog_states.h"

struct xp;

/* Check @n states derived from failing state @s: state c loses the pending ops with
 * lost[c][i] set (as @s lost them: dropped, or torn as @s tore them) and keeps every other
 * op of the window whole. Sets fails[c]. 0 or -errno. Runs up to -j checkers at once. */
typedef int (*xp_lost_check_fn)(void *ctx, const struct ws_state *s, bool *const *lost,
				 size_t n, bool *fails);

/* What --minimize found for one state. */
struct xp_culprit {
	uint64_t *ops;		/* pending indexes in the state's window, increasing */
	uint64_t n;
	uint64_t runs;		/* checker runs spent */
	bool minimal;		/* 1-minimal: losing any one fewer of them passes */
	bool no_loss;		/* the window with nothing lost fails too: not a lost write */
};

/* Shrink failing state @s's lost ops by ddmin within @budget checker runs (0: no bound),
 * checking through @check. Fills @c (free c->ops). 0 or -errno. */
int xp_minimize(const struct ws_log *l, const struct ws_state *s, uint64_t budget,
		xp_lost_check_fn check, void *ctx, struct xp_culprit *c);

/* Lay the window of @s with the ops of @lost lost and every other kept onto @out (emptied
 * first). 0 or -ENOMEM. */
int xp_build_lost(const struct ws_log *l, const struct ws_state *s, const bool *lost,
		  struct extmap *out);

#endif
