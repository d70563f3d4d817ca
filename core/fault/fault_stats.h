/* SPDX-License-Identifier: MIT */
/* The fault stage's counters, and the names the stats file gives them (fault_stats.c). */
#ifndef PLUGDISK_FAULT_STATS_H
#define PLUGDISK_FAULT_STATS_H

#include <stdint.h>

#include "core/stage/request.h"
#include "core/util/stats_table.h"

/* Injected faults (core/fault/fault.c): counters per op, and per active fault. */
#define STATS_MAX_FAULTS 64

struct fault_stat_one {
	unsigned int id;
	uint64_t matched;	/* requests it matched */
	uint64_t injected;	/* requests it acted on */
};

struct fault_stats {
	uint64_t errors[BIO_OP_NR];	/* requests failed by a fault */
	uint64_t delays[BIO_OP_NR];	/* requests given extra latency */
	uint64_t stalls[BIO_OP_NR];	/* requests stalled */
	uint64_t lies[BIO_OP_NR];	/* writes acknowledged and not written */
	uint64_t corrupts[BIO_OP_NR];	/* requests whose data was corrupted */
	unsigned int held;		/* requests stalled now */
	unsigned int nr;		/* active faults, the first nr of f[] */
	struct fault_stat_one f[STATS_MAX_FAULTS];
};

extern const struct stats_table fault_stats_table;

#endif
