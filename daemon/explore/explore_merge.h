/* SPDX-License-Identifier: MIT */
/* `plugdisk explore --merge REPORT.json...`: the --json reports of shards 0..N-1 of one run
 * (--shard I/N) joined into the report that run without --shard prints
 * (daemon/explore/explore_merge.c). */
#ifndef PLUGDISK_EXPLORE_MERGE_H
#define PLUGDISK_EXPLORE_MERGE_H

struct xp;

/* Merge the reports @argv[0..argc-1] into one and print it (text, or JSON by x->json); @x
 * holds the options parsed, of which only --json may be given. The exit status: 0 (every
 * state passed), 1 (a state failed), 2 (bad input: a report unreadable, of other inputs, a
 * shard missing or twice; the message names the report and the field), 3 (out of memory). */
int xp_merge_main(struct xp *x, int argc, char **argv);

#endif
