/* SPDX-License-Identifier: MIT */
/* Failures grouped by cause: a signature of the lost writes' owners and the checker's first
 * line with its numbers and hashes blanked, so that 947 failing states read as 3 causes.
 * Used by `plugdisk explore`'s report and by --merge on merged shards' failures. */
#ifndef PLUGDISK_EXPLORE_GROUPS_H
#define PLUGDISK_EXPLORE_GROUPS_H

#include <stddef.h>
#include <stdint.h>

/* One cause: the failures that share a signature, by the caller's key (explore: the state
 * id). */
struct xp_group {
	char *signature;
	uint64_t *members;	/* the failures' keys, in the order added */
	uint64_t count, cap;
	uint64_t kept;		/* --keep-failing: images kept of this group */
};

struct xp_groups {
	struct xp_group *g;
	uint64_t n, cap;
};

/* The signature of a failure: the owners of its culprit (or of its lost writes), sorted and
 * without repeats, then " | " and the first line of @output with every number and hash
 * blanked as '#'. @owners may repeat and be in any order. A new string (free it), or NULL
 * (-ENOMEM). */
char *xp_group_signature(const char *const *owners, size_t nowners, const char *output);

/* The first line of @output, numbers and hashes blanked, into a new string, or NULL. */
char *xp_group_blank_line(const char *output);

/* Add the failure keyed @member under @signature (copied): its group's index, or -ENOMEM. */
int64_t xp_groups_add(struct xp_groups *gs, const char *signature, uint64_t member);

/* Order the groups by count, greatest first; ties by their first member, lowest first. Sort
 * each group's members too, so that the same failures give the same report. */
void xp_groups_sort(struct xp_groups *gs);

void xp_groups_free(struct xp_groups *gs);

struct xp;
struct ws_state;
struct ws_op;

/* What write @op of window @win belongs to, as a new string (free it), or NULL. */
char *xp_write_owner(const struct xp *x, uint64_t win, const struct ws_op *op);

/* The signature of explore's failing state @s, whose checker said @output: the owners of
 * the pending ops @culprit lists (@nculprit), or with @culprit NULL of the writes it dropped
 * or tore. A new string, or NULL (-ENOMEM). */
char *xp_state_signature(const struct xp *x, const struct ws_state *s, const uint64_t *culprit,
			 uint64_t nculprit, const char *output);

#endif
