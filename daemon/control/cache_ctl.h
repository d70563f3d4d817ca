/* SPDX-License-Identifier: MIT */
/* The daemon's side of the write cache (core/cache/cache.c): setting it up in front of the backend,
 * its control commands (powercut, poweron), its stats lines. */
#ifndef PLUGDISK_CACHE_CTL_H
#define PLUGDISK_CACHE_CTL_H

#include <stddef.h>

#include "core/stage/io.h"
#include "daemon/control/control.h"

struct pd;
struct pd_config;

/* With cache.mode = writeback, set up the cache over @*exec/@*exec_arg (the backend) and
 * make it the stage the controller calls: @*exec/@*exec_arg are replaced. With none, leave
 * them. 0 or -errno (logged). Main thread, before the controller starts. */
int pd_cache_start(struct pd *pd, io_exec_fn *exec, void **exec_arg);

/* Destage what the cache holds (when the power is on) and free it. Nothing in flight.
 * 0, or the destage error (logged, with the acknowledged writes it lost). */
int pd_cache_stop(struct pd *pd);

/* Apply @nc's live cache settings (flush, destage delay and rate, atomic unit, cut mode);
 * warn that mode and size wait for a restart. Main thread. */
void pd_cache_reload(struct pd *pd, const struct pd_config *nc);

/* Zero the cache's counters (`echo reset > stats`); its state stays. */
void pd_cache_stats_reset(struct pd *pd);

/* Append the cache's "name value" lines for MOUNTPOINT/stats. Returns the bytes written. */
size_t pd_cache_format_stats(struct pd *pd, char *buf, size_t len);

/* Control commands: "powercut [mode=M] [seed=S]", "powercut arm ...", "powercut disarm",
 * "poweron" (usage in cache_ctl.c), and the cache's part of the listing. */
int pd_cache_ctl_powercut(struct pd *pd, int argc, char **argv, struct ctl_out *out);
int pd_cache_ctl_poweron(struct pd *pd, int argc, char **argv, struct ctl_out *out);

/* The cache's part of freeze, once the queue is frozen: destage everything acknowledged and
 * pause destaging. 0, or -errno with the reason in @out (the cache is thawed again). */
int pd_cache_freeze(struct pd *pd, struct ctl_out *out);

/* The cache's part of thaw: destaging goes on. */
void pd_cache_thaw(struct pd *pd);
void pd_cache_ctl_show(struct pd *pd, struct ctl_out *out);
/* "mark TEXT": a mark in the write log, for `plugdisk explore`. */
int pd_cache_ctl_mark(struct pd *pd, int argc, char **argv, struct ctl_out *out);

#define PD_CACHE_POWERCUT_USAGE                                                                   \
	"powercut [mode=drop|prefix|subset|tear] [seed=N]: cut the power now (returns when the "  \
	"disk is down); powercut arm flush=N | write=N [after_flush=F] | random=N [seed=S] | "     \
	"after_ms=N [mode=M]: cut on its own; powercut disarm"
#define PD_CACHE_MARK_USAGE                                                                       \
	"mark TEXT: record TEXT in the write log (cache.log) after the writes so far"
#define PD_CACHE_POWERON_USAGE "poweron: power the disk back on after a cut"

#endif
