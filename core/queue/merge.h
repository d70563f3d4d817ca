/* SPDX-License-Identifier: MIT */
/* Merge decisions of the request queue (internal to core/). */
#ifndef PLUGDISK_MERGE_H
#define PLUGDISK_MERGE_H

#include <stdbool.h>

#include "core/stage/request.h"

struct queue;

/* Try to merge @bio into a queued request: back merge, front merge, and, when the bio fills
 * the gap between two queued requests, join them (the block layer's attempt_merge).
 * Honours queue.nomerges and queue.max_request_size, never merges across ops, never merges
 * flushes, never merges past a queued flush, never lets a bio overtake a queued request
 * whose range it overlaps and never joins two requests across a queued request that overlaps
 * the one that moves: overlapping requests are dispatched in submission order. Counts the
 * merges. Returns the request the bio went into, or NULL if it must become a request of its
 * own. q->lock held. */
struct request *merge_bio(struct queue *q, struct bio *bio);

/* Set up and free @q's merge index. init returns 0 or -ENOMEM. */
int merge_index_init(struct queue *q);
void merge_index_destroy(struct queue *q);

/* Give @rq, just appended to the FIFO, its seq and index it (a flush only gets its seq and
 * ends the mergeable part of the queue). q->lock held. */
void merge_index_add(struct queue *q, struct request *rq);

/* Take @rq out of the index as it leaves the FIFO. q->lock held. */
void merge_index_del(struct queue *q, struct request *rq);

/* Whether a queued request other than a flush, with @lo_seq < seq < @hi_seq (FIFO order),
 * overlaps [@start, @end). O(log n + k) in the queued requests. q->lock held. */
bool merge_index_overlaps(const struct queue *q, uint64_t start, uint64_t end, uint64_t lo_seq,
			  uint64_t hi_seq);

#endif
