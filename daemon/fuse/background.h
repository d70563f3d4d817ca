/* SPDX-License-Identifier: MIT */
/* How many asynchronous requests the kernel sends the disk at once (mount.max_background). */
#ifndef PLUGDISK_BACKGROUND_H
#define PLUGDISK_BACKGROUND_H

#include <stdbool.h>
#include <stdint.h>

struct pd;

/* The kernel's own default, what auto gives while nothing in plugdisk holds requests. */
#define PD_BACKGROUND_IDLE 12u

/* FUSE_INIT answered the kernel with @max background requests: the most ever set later.
 * @ring: on FUSE over io_uring, where auto may lower it. */
void pd_background_init(struct pd *pd, unsigned int max, bool ring);

/* mount.max_background is @conf (0 = auto), at start and at each reload. Applies it. */
void pd_background_configure(struct pd *pd, uint32_t conf);

/* Something that may hold requests changed (a control command, a reload): apply the limit
 * that auto now gives. Any thread, without the queue's or a stage's lock. */
void pd_background_update(struct pd *pd);

/* The limit in force (0 before FUSE_INIT), for stats. */
unsigned int pd_background_now(struct pd *pd);

#endif
