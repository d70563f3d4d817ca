/* SPDX-License-Identifier: MIT */
/* Which crash states `plugdisk explore` checks: a chosen set (--kinds, --windows, --states),
 * and under --budget a stratified sample that covers every kind and every window before it
 * repeats one (daemon/explore/explore_select.c); the listing of states (--list-states). */
#ifndef PLUGDISK_EXPLORE_SELECT_H
#define PLUGDISK_EXPLORE_SELECT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define XP_MAX_KINDS 8	/* at least the kinds of core/crash/wlog_states.h */

struct xp_range {
	uint64_t lo, hi;	/* inclusive */
};

struct xp_select {
	uint32_t kinds;			/* --kinds: bit per enum ws_kind; 0 = every kind */
	bool has_windows;
	struct xp_range windows;	/* --windows A-B */
	struct xp_range *states;	/* --states: sorted, merged; NULL = every state */
	uint64_t nstates;
	unsigned int weight[XP_MAX_KINDS];	/* --weights: states per round, default 1 */
	bool uniform;			/* --sampler uniform: the plain random sample */
	bool list, list_json;		/* --list-states [--json] */
	bool chosen;			/* any of --kinds, --windows, --states, --from-* */
	bool has_from_flush;
	uint64_t from_flush;		/* --from-flush N */
	const char *from_mark;		/* --from-mark TEXT */
	uint64_t from_win, from_ops;	/* resolved: the first window, the ops decreed durable */
};

/* Per kind: states in the log (within the chosen set), picked, checked, failed. */
struct xp_kind_count {
	uint64_t states, planned, checked, failed;
};

struct xp;

/* The number of kinds (ws_kind_names' entries). */
unsigned int xp_nkinds(void);

/* Option parsers: 0, or -EINVAL with a message on stderr naming the option. */
int xp_parse_kinds(struct xp_select *sel, const char *arg);
int xp_parse_windows(struct xp_select *sel, const char *arg);
int xp_parse_states(struct xp_select *sel, const char *arg);
int xp_parse_weights(struct xp_select *sel, const char *arg);
int xp_parse_sampler(struct xp_select *sel, const char *arg);

/* --from-flush, --from-mark (daemon/explore/explore_from.c). */
int xp_parse_from_flush(struct xp_select *sel, const char *arg);
int xp_parse_from_mark(struct xp_select *sel, const char *arg);

struct ws_log;

/* Find the point --from-flush or --from-mark names in @l: sel->from_win, sel->from_ops (both
 * 0 without either). 0, or -EINVAL with a message when the log has no such flush or mark. */
int xp_from_resolve(const struct ws_log *l, struct xp_select *sel);

/* Whether state @id is explored under --from-*: its window does not end before the point,
 * and it keeps whole every write logged before it. */
bool xp_from_keeps(const struct ws_log *l, const struct xp_select *sel, uint64_t id);

/* Choose the states to check into *@ids (increasing; NULL: every state 0..nstates-1) and
 * x->planned, x->sampled, x->kinds[].states/.planned. 0, -EINVAL (a selection outside the
 * log: printed) or -ENOMEM. */
int xp_select_states(struct xp *x, uint64_t **ids);

/* Count a checked state of @id in its kind (failed or not). */
void xp_count_checked(struct xp *x, uint64_t id, bool failed);

/* --list-states: print the chosen states, as text or JSON (x->sel.list_json). */
void xp_list_states(const struct xp *x, const uint64_t *ids, FILE *f);

/* Write state @id's description as a JSON object to @path (PLUGDISK_STATE_JSON). 0 or
 * -errno. */
int xp_state_json_file(const struct xp *x, uint64_t id, const char *path);

void xp_select_free(struct xp_select *sel);

#endif
