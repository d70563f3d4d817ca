/* SPDX-License-Identifier: MIT */
/* `plugdisk explore --shard I/N`: a run that checks one deterministic share of the chosen
 * states, and the fingerprints of its inputs that `--merge` checks before it joins shards'
 * reports (daemon/explore/explore_shard.c). */
#ifndef PLUGDISK_EXPLORE_SHARD_H
#define PLUGDISK_EXPLORE_SHARD_H

#include <signal.h>
#include <stdint.h>

#define XP_MAX_SHARDS 1000000

/* --shard I/N. */
struct xp_shard {
	uint64_t index, count;	/* count 0: no --shard, the whole selection */
	uint64_t states;	/* the states of this share (of the planned ones) */
};

/* What a report was made from: the same log, base image and chosen states give the same
 * fingerprints, whatever the machine or the paths. */
struct xp_print {
	uint64_t log_size, log_hash;
	uint64_t base_size, base_hash;	/* the base's data; a hole hashes as zeros */
	uint64_t plan_hash;		/* the planned states' ids, in order */
};

struct xp;
struct ws_state;
struct extmap;

/* --shard's argument "I/N" (0 <= I < N <= XP_MAX_SHARDS). 0, or -EINVAL with a message
 * naming the option. */
int xp_parse_shard(struct xp_shard *sh, const char *arg);

/* The key that identifies a state's check: its overlay @map (the same writes at the same
 * places) and the marks its checker is told. Equal keys are one check: explore skips the
 * later ones as identical. */
void xp_state_key(const struct xp *x, const struct ws_state *s, const struct extmap *map,
		  uint64_t h[2]);

/* x->print.plan_hash of the planned states *@ids (NULL: 0..planned-1); then, under --shard,
 * replace *@ids by this shard's share, in the same order, and set x->shard.states. A state
 * goes to the shard its key (xp_state_key) names, so identical states share a shard and the
 * shards' checks and skips add up to one run's. 0, -ENOMEM or -EINTR (*@stop set). */
int xp_shard_select(struct xp *x, uint64_t **ids, const volatile sig_atomic_t *stop);

/* The states the run walks: the planned ones, or the shard's share. */
uint64_t xp_run_states(const struct xp *x);

/* x->print's log and base fingerprints, the base read from @base_fd (-1: none). 0 or -errno
 * (printed). */
int xp_print_inputs(struct xp *x, int base_fd);

#endif
