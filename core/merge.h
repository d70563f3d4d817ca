/* SPDX-License-Identifier: MIT */
/* Merge decisions of the request queue (internal to core/). */
#ifndef PLUGDISK_MERGE_H
#define PLUGDISK_MERGE_H

#include <stdbool.h>

#include "core/bio.h"

struct queue;

/* Try to merge @bio into a queued request: back merge, front merge, and, when the bio fills
 * the gap between two queued requests, join them (the block layer's attempt_merge).
 * Honours queue.nomerges and queue.max_request_size, never merges across ops, never merges
 * flushes, never merges past a queued flush, never lets a bio overtake a queued request
 * whose range it overlaps and never joins two requests across a queued request that overlaps
 * the one that moves: overlapping requests are dispatched in submission order. Counts the merges. Returns the request the bio went into, or
 * NULL if it must become a request of its own. q->lock held. */
struct request *merge_bio(struct queue *q, struct bio *bio);

/* Unlink @rq from the queue's FIFO and its counters (not freed). q->lock held. */
void queue_unlink(struct queue *q, struct request *rq);

#endif
