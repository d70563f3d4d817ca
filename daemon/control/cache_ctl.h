/* SPDX-License-Identifier: MIT */
/* The daemon's side of the write cache (core/cache/): its control commands (powercut,
 * poweron, mark) and its settings across a reload. */
#ifndef PLUGDISK_CACHE_CTL_H
#define PLUGDISK_CACHE_CTL_H

#include <stddef.h>

#include "daemon/control/control.h"

struct pd;
struct pd_config;

/* Keep in pd->cfg the cache settings in force after a reload took @nc's live ones: mode,
 * size, seed and log stay until the next start. Main thread. */
void pd_cache_reload_cfg(struct pd *pd, const struct pd_config *nc);

/* Control commands: "powercut [mode=M] [seed=S]", "powercut arm ...", "powercut disarm",
 * "poweron" (usage in cache_ctl.c), and the cache's part of the listing. */
int pd_cache_ctl_powercut(struct pd *pd, int argc, char **argv, struct ctl_out *out);
int pd_cache_ctl_poweron(struct pd *pd, int argc, char **argv, struct ctl_out *out);
/* The stop, once no request is in flight and before the FUSE session goes: end the thread
 * that drops the kernel's pages of the disk after a poweron (waiting for the one under way). */
void pd_cache_ctl_stop(void);

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
