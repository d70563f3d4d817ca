/* SPDX-License-Identifier: MIT */
/* The queue's state changes that core/queue/queue.c and core/queue/hold.c share. Each needs
 * q->lock held. */
#ifndef PLUGDISK_QUEUE_INT_H
#define PLUGDISK_QUEUE_INT_H

#include "core/queue/queue.h"

/* Plug the queue at @now (arms the unplug timer). */
void queue_plug_locked(struct queue *q, uint64_t now);

/* End a plug (not one held by hand) for @why at @now. */
void queue_unplug_locked(struct queue *q, enum unplug_reason why, uint64_t now);

/* Dispatch from the head while nothing stops it and the controller admits; admitted
 * requests are chained on *@list for ctrl_issue(). */
void queue_run_locked(struct queue *q, uint64_t now, struct request **list);

/* End a freeze, and wake a freeze still waiting so that it fails. */
void queue_thaw_locked(struct queue *q);

/* Wait until nothing is in flight (nor queued, with @queued) and no completer is ending its
 * bios; or, with @thaws, until q->thaws differs from *@thaws. Returns with q->lock held. */
void queue_wait_idle_locked(struct queue *q, bool queued, const uint64_t *thaws);

#endif
