// SPDX-License-Identifier: MIT
/* `plugdisk explore --from-flush N` and `--from-mark TEXT`: where the explored part of a log
 * begins. The writes logged before that point (mkfs, a first fill) are durable by decree:
 * no state loses or tears one of them, and every state's image starts with them applied.
 * Windows that end before the point have no states; in the window the point falls in, only
 * the states that keep every write logged before it whole are explored. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conf/parse.h"
#include "daemon/explore/explore.h"
#include "daemon/explore/explore_select.h"

int xp_parse_from_flush(struct xp_select *sel, const char *arg)
{
	if (sel->from_mark || sel->has_from_flush) {
		fprintf(stderr, "plugdisk explore: give one --from-flush or --from-mark\n");
		return -EINVAL;
	}
	if (conf_parse_u64_whole(arg, &sel->from_flush)) {
		fprintf(stderr, "plugdisk explore: bad --from-flush (a flush's number): %s\n", arg);
		return -EINVAL;
	}
	sel->has_from_flush = true;
	sel->chosen = true;
	return 0;
}

int xp_parse_from_mark(struct xp_select *sel, const char *arg)
{
	if (sel->from_mark || sel->has_from_flush) {
		fprintf(stderr, "plugdisk explore: give one --from-flush or --from-mark\n");
		return -EINVAL;
	}
	if (!*arg) {
		fprintf(stderr, "plugdisk explore: --from-mark: name a mark's text\n");
		return -EINVAL;
	}
	sel->from_mark = arg;
	sel->chosen = true;
	return 0;
}

/* Ops logged before file offset @pos. */
static uint64_t ops_before(const struct ws_log *l, uint64_t pos)
{
	uint64_t lo = 0, hi = l->nops;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (l->ops[mid].pos < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int xp_from_resolve(const struct ws_log *l, struct xp_select *sel)
{
	uint64_t pos = 0, w;

	sel->from_win = 0;
	sel->from_ops = 0;
	if (sel->has_from_flush) {
		if (!sel->from_flush)
			return 0; /* flush 0: the log's start */
		for (w = 0; w < l->nwin; w++)
			if ((l->win[w].kind == WS_FLUSH || l->win[w].kind == WS_IGNORED) &&
			    l->win[w].flush_no == sel->from_flush)
				break;
		if (w == l->nwin) {
			uint64_t last = l->nwin ? l->win[l->nwin - 1].flush_no : 0;

			fprintf(stderr, "plugdisk explore: --from-flush %" PRIu64 ": the log has %"
				PRIu64 " completed flushes (1-%" PRIu64 ")\n", sel->from_flush, last,
				last);
			return -EINVAL;
		}
		pos = l->win[w].pos;
	} else if (sel->from_mark) {
		uint64_t m;

		for (m = 0; m < l->nmarks; m++)
			if (!strcmp(l->marks[m].text, sel->from_mark))
				break;
		if (m == l->nmarks) {
			fprintf(stderr, "plugdisk explore: --from-mark: no mark '%s' in the log (%"
				PRIu64 " marks; replay --list shows them)\n", sel->from_mark,
				l->nmarks);
			return -EINVAL;
		}
		pos = l->marks[m].pos;
	} else {
		return 0;
	}
	/* The window the point falls in: the last one whose barrier is at or before it. */
	for (w = 0; w + 1 < l->nwin && l->win[w + 1].pos <= pos; w++)
		;
	sel->from_win = w;
	sel->from_ops = ops_before(l, pos);
	return 0;
}

bool xp_from_keeps(const struct ws_log *l, const struct xp_select *sel, uint64_t id)
{
	const struct ws_window *w;
	struct ws_state s;

	ws_state_decode(l, id, &s);
	if (s.win < sel->from_win)
		return false;
	w = &l->win[s.win];
	for (uint64_t i = 0; i < s.n && w->durable + i < sel->from_ops; i++)
		if (ws_state_keeps(l, &s, i) != 1)
			return false;
	return true;
}
