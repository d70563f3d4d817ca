// SPDX-License-Identifier: MIT
/* The fault stage's stats names (core/util/stats_table.h), read from a struct fault_stats, and
 * its lines of the stats file. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/fault/fault.h"

#define F(member) STATS_FIELD(struct fault_stats, member)

static unsigned int fault_nr(const void *snap)
{
	return ((const struct fault_stats *)snap)->nr;
}

static unsigned int fault_id(const void *snap, unsigned int k)
{
	return ((const struct fault_stats *)snap)->f[k].id;
}

static const struct stats_name fault_names[] = {
	{ "{read,write,flush,discard}_fault_errors", STATS_COUNTER, "requests",
	  "requests failed by an injected fault (error=, a stall's timeout error, a bad block)",
	  "requests failed by an injected fault (`error=`, a stall's timeout error, a bad block)",
	  .section = "faults", F(errors[0]), .step = { sizeof(uint64_t) } },
	{ "{read,write,flush,discard}_fault_delays", STATS_COUNTER, "requests",
	  "requests given extra latency by a latency= fault",
	  "requests given extra latency by a `latency=` fault",
	  F(delays[0]), .step = { sizeof(uint64_t) } },
	{ "{read,write,flush,discard}_fault_stalls", STATS_COUNTER, "requests",
	  "requests held by a stall fault",
	  "requests held by a `stall` fault",
	  F(stalls[0]), .step = { sizeof(uint64_t) } },
	{ "{read,write,flush,discard}_fault_lies", STATS_COUNTER, "requests",
	  "writes acknowledged and not written (lie)",
	  "writes acknowledged and not written (`lie`)",
	  F(lies[0]), .step = { sizeof(uint64_t) } },
	{ "{read,write,flush,discard}_fault_corruptions", STATS_COUNTER, "requests",
	  "requests whose data a corrupt= fault damaged",
	  "requests whose data a `corrupt=` fault damaged",
	  F(corrupts[0]), .step = { sizeof(uint64_t) } },
	{ "faults_active", STATS_GAUGE, "faults",
	  "faults in force (configured and added through control)",
	  "faults in force (configured and added through `control`)",
	  F(nr) },
	{ "faults_held", STATS_GAUGE, "requests",
	  "requests a stall fault holds now",
	  "requests a `stall` fault holds now",
	  F(held) },
	{ "fault_N_matched", STATS_COUNTER, "requests",
	  "requests fault N matched (N is its id; the line comes and goes with the fault)",
	  "requests fault N matched, N being its id in `control`'s listing; the line comes and goes with the fault ([faults.md](faults.md)); `reset` zeroes it, not the fault's trigger count, so an `every=3` fault still fires on every third request",
	  F(f[0].matched), .step = { sizeof(struct fault_stat_one) } },
	{ "fault_N_injected", STATS_COUNTER, "requests",
	  "requests fault N acted on (N is its id)",
	  "requests fault N acted on (failed, delayed, stalled, lied about or corrupted)",
	  F(f[0].injected), .step = { sizeof(struct fault_stat_one) } },
};

const struct stats_table fault_stats_table = {
	.producer = "faults",
	.names = fault_names,
	.nr = STATS_TABLE_SIZE(fault_names),
	.nr_numbers = fault_nr,
	.number = fault_id,
	.number_label = "fault",
};

size_t fault_stats_format(struct fault_set *fs, char *buf, size_t len)
{
	struct fault_stats st;

	memset(&st, 0, sizeof(st));
	if (fs)
		fault_stats(fs, &st);
	return stats_table_format(&fault_stats_table, &st, buf, len);
}
