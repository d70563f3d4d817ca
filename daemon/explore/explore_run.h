/* SPDX-License-Identifier: MIT */
/* The checker runner of `plugdisk explore` (daemon/explore/explore_run.c). */
#ifndef PLUGDISK_EXPLORE_RUN_H
#define PLUGDISK_EXPLORE_RUN_H

#include <signal.h>
#include <stdint.h>

#include "daemon/explore/explore.h"

/* Set by xp_on_signal (SIGINT, SIGTERM): the run stops between states and checkers. */
extern volatile sig_atomic_t xp_stop;
void xp_on_signal(int sig);

/* Check the states @ids (x->planned of them) through explore's mount, -j at once, over the
 * base image @base_fd; failures in x->fails and x->groups. 0, -EINTR when stopped, or
 * -errno (printed). */
int xp_run(struct xp *x, int base_fd, const uint64_t *ids);

/* qsort order of struct xp_fail: by state id. */
int xp_cmp_fail(const void *a, const void *b);

#endif
