// SPDX-License-Identifier: MIT
/* Merging bios into queued requests: back, front and gap-fill merges.
 *
 * Only queued requests (not yet dispatched) are candidates. The scan walks the FIFO from the
 * tail and stops at the first queued flush, so nothing merges across a flush. A bio that
 * overlaps any request it would have to overtake is not merged at all: it becomes a request
 * at the tail, keeping the order of overlapping I/O. A gap fill moves one request to the
 * other's place in the FIFO, so it is done only when no queued request between the two
 * overlaps the one that moves.
 *
 * The promise is about dispatch: overlapping requests leave the queue in the order their bios
 * arrived. Once dispatched, the controller's parallel workers may complete two overlapping
 * in-flight requests in either order, as a real disk's command queue may; a submitter that
 * needs order waits for one completion before it submits the next. */
#include <limits.h>
#include <stdlib.h>

#include "core/merge.h"
#include "core/queue.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

static bool rq_overlaps(const struct request *rq, const struct bio *bio)
{
	return bio->offset < rq_end(rq) && rq->offset < bio_end(bio);
}

static bool can_grow(const struct queue *q, const struct request *rq, uint64_t len, int iov)
{
	return rq->len + len <= q->p.max_request_size && rq->nr_iov + (unsigned int)iov <= IOV_MAX;
}

static void back_merge(struct queue *q, struct request *rq, struct bio *bio)
{
	rq->biotail->next = bio;
	rq->biotail = bio;
	rq->last_submit_ns = bio->submit_ns;
	rq->len += bio->len;
	rq->nr_bios++;
	rq->nr_iov += (unsigned int)bio->iovcnt;
	q->queued_bytes += bio->len;
	q->stats.op[bio->op].merges_back++;
}

static void front_merge(struct queue *q, struct request *rq, struct bio *bio)
{
	bio->next = rq->bio;
	rq->bio = bio;
	rq->last_submit_ns = bio->submit_ns;
	rq->offset = bio->offset;
	rq->len += bio->len;
	rq->nr_bios++;
	rq->nr_iov += (unsigned int)bio->iovcnt;
	q->queued_bytes += bio->len;
	q->stats.op[bio->op].merges_front++;
}

void queue_unlink(struct queue *q, struct request *rq)
{
	if (rq->prev)
		rq->prev->next = rq->next;
	else
		q->head = rq->next;
	if (rq->next)
		rq->next->prev = rq->prev;
	else
		q->tail = rq->prev;
	rq->prev = rq->next = NULL;
	q->nr_queued--;
	q->queued_bytes -= rq->len;
	if (q->last_merge == rq)
		q->last_merge = NULL;
}

/* Whether a queued request strictly between @a and @b in the FIFO overlaps @rq: joining @rq
 * into the other one would move it past that request. */
static bool overlap_between(const struct request *a, const struct request *b,
			    const struct request *rq)
{
	const struct request *first = a, *last = b, *it;

	for (it = a; it && it != b; it = it->next)
		;
	if (!it) { /* @b comes first */
		first = b;
		last = a;
	}
	for (it = first->next; it && it != last; it = it->next)
		if (it->offset < rq_end(rq) && rq->offset < rq_end(it))
			return true;
	return false;
}

/* @next starts where @rq ends: move its bios into @rq and free it (attempt_merge). */
static void join(struct queue *q, struct request *rq, struct request *next)
{
	uint64_t len = next->len;

	queue_unlink(q, next);
	q->queued_bytes += len; /* the bytes stay queued, now in @rq */
	rq->biotail->next = next->bio;
	rq->biotail = next->biotail;
	rq->len += len;
	rq->nr_bios += next->nr_bios;
	rq->nr_iov += next->nr_iov;
	if (next->start_ns < rq->start_ns)
		rq->start_ns = next->start_ns;
	if (next->last_submit_ns > rq->last_submit_ns)
		rq->last_submit_ns = next->last_submit_ns;
	q->stats.op[rq->op].merges_gap++;
	free(next);
}

struct request *merge_bio(struct queue *q, struct bio *bio)
{
	struct request *back = NULL, *front = NULL, *rq;

	if (q->p.nomerges == NOMERGES_NONE || bio->op == BIO_OP_FLUSH || !bio->len)
		return NULL;

	/* One pass over the mergeable part of the queue: find the candidates and make sure
	 * the bio overtakes nothing it overlaps. */
	for (rq = q->tail; rq && rq->op != BIO_OP_FLUSH; rq = rq->prev) {
		if (rq_overlaps(rq, bio))
			return NULL;
		if (rq->op != bio->op)
			continue;
		if (rq_end(rq) == bio->offset)
			back = rq;
		else if (rq->offset == bio_end(bio))
			front = rq;
	}

	if (q->p.nomerges == NOMERGES_SIMPLE) {
		/* Only the one-hit cache, and no gap fill. */
		if (back != q->last_merge)
			back = NULL;
		if (front != q->last_merge)
			front = NULL;
	}

	if (back && !can_grow(q, back, bio->len, bio->iovcnt))
		back = NULL;
	if (front && !can_grow(q, front, bio->len, bio->iovcnt))
		front = NULL;

	if (back) {
		back_merge(q, back, bio);
		if (front && q->p.nomerges == NOMERGES_ALL &&
		    can_grow(q, back, front->len, (int)front->nr_iov) &&
		    !overlap_between(back, front, front))
			join(q, back, front);
		q->last_merge = back;
		return back;
	}
	if (front) {
		front_merge(q, front, bio);
		q->last_merge = front;
		return front;
	}
	return NULL;
}
