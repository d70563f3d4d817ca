// SPDX-License-Identifier: MIT
/* Merging bios into queued requests: back, front and gap-fill merges, and the index that finds
 * the candidates without scanning the queue.
 *
 * Notes on the design.
 *
 * Only queued requests (not yet dispatched) are candidates, and only those that arrived after
 * the latest queued flush, so nothing merges across a flush. Every queued request but a flush
 * is in two indexes (q->lock), as the block layer keeps its elevator hash and sort tree:
 *   end_hash   hashed on rq_end(): the back-merge candidates of a bio at offset X are the
 *              requests of the chain for X that end there;
 *   sort_root  a treap (a search tree balanced by random priorities) ordered by (offset,
 *              seq), each node also holding the greatest end in its subtree, so that it is an
 *              interval tree: it finds the front-merge candidates (requests that start where
 *              the bio ends) and answers "does any request in this sequence window overlap
 *              this range?" in O(log n + k).
 * seq numbers the requests in FIFO order, so "after the latest flush" and "between these two
 * requests in the FIFO" are comparisons of seq.
 *
 * Ordering. A bio that overlaps any mergeable request is not merged at all: merging would let
 * it overtake a request that overlaps it, or be overtaken by it. It becomes a request at the
 * tail, keeping the order of overlapping I/O. A gap fill moves one request to the other's
 * place in the FIFO, so it is done only when no queued request between the two overlaps the
 * one that moves.
 *
 * The promise is about dispatch: overlapping requests leave the queue in the order their bios
 * arrived. Once dispatched, the controller's parallel workers may complete two overlapping
 * in-flight requests in either order, as a real disk's command queue may; a submitter that
 * needs order waits for one completion before it submits the next. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "core/queue/merge.h"
#include "core/queue/queue.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

#define END_HASH_BITS 12
#define END_HASH_SIZE (1u << END_HASH_BITS)

static unsigned int end_hash_of(uint64_t end)
{
	return (unsigned int)((end * 0x9e3779b97f4a7c15ull) >> (64 - END_HASH_BITS));
}

static void end_hash_add(struct queue *q, struct request *rq)
{
	struct request **head = &q->end_hash[end_hash_of(rq_end(rq))];

	rq->hash_next = *head;
	if (*head)
		(*head)->hash_pprev = &rq->hash_next;
	rq->hash_pprev = head;
	*head = rq;
}

static void end_hash_del(struct request *rq)
{
	*rq->hash_pprev = rq->hash_next;
	if (rq->hash_next)
		rq->hash_next->hash_pprev = rq->hash_pprev;
	rq->hash_next = NULL;
	rq->hash_pprev = NULL;
}

/* ---------------------------------------------------------------- the sort treap */

static bool sort_less(const struct request *a, const struct request *b)
{
	return a->offset < b->offset || (a->offset == b->offset && a->seq < b->seq);
}

/* Recompute @n's subtree end from its own and its children's. */
static void sort_pull(struct request *n)
{
	uint64_t m = rq_end(n);

	if (n->sort_l && n->sort_l->sort_max_end > m)
		m = n->sort_l->sort_max_end;
	if (n->sort_r && n->sort_r->sort_max_end > m)
		m = n->sort_r->sort_max_end;
	n->sort_max_end = m;
}

static void sort_rotate_right(struct request **p)
{
	struct request *n = *p, *l = n->sort_l;

	n->sort_l = l->sort_r;
	l->sort_r = n;
	sort_pull(n);
	sort_pull(l);
	*p = l;
}

static void sort_rotate_left(struct request **p)
{
	struct request *n = *p, *r = n->sort_r;

	n->sort_r = r->sort_l;
	r->sort_l = n;
	sort_pull(n);
	sort_pull(r);
	*p = r;
}

static void sort_insert(struct request **p, struct request *rq)
{
	struct request *n = *p;

	if (!n) {
		rq->sort_l = rq->sort_r = NULL;
		rq->sort_max_end = rq_end(rq);
		*p = rq;
		return;
	}
	if (sort_less(rq, n)) {
		sort_insert(&n->sort_l, rq);
		if (n->sort_l->sort_prio > n->sort_prio)
			sort_rotate_right(p);
		else
			sort_pull(n);
	} else {
		sort_insert(&n->sort_r, rq);
		if (n->sort_r->sort_prio > n->sort_prio)
			sort_rotate_left(p);
		else
			sort_pull(n);
	}
}

/* Remove @rq, which is in the tree under *@p with the key it was inserted with. */
static void sort_erase(struct request **p, struct request *rq)
{
	struct request *n = *p;

	if (n != rq) {
		sort_erase(sort_less(rq, n) ? &n->sort_l : &n->sort_r, rq);
		sort_pull(n);
		return;
	}
	if (!n->sort_l) {
		*p = n->sort_r;
	} else if (!n->sort_r) {
		*p = n->sort_l;
	} else if (n->sort_l->sort_prio > n->sort_r->sort_prio) {
		sort_rotate_right(p);
		sort_erase(&(*p)->sort_r, rq);
		sort_pull(*p);
	} else {
		sort_rotate_left(p);
		sort_erase(&(*p)->sort_l, rq);
		sort_pull(*p);
	}
	rq->sort_l = rq->sort_r = NULL;
}

/* @rq's end changed (its key did not): fix the subtree ends on the path down to it. */
static void sort_update(struct request *n, struct request *rq)
{
	if (n != rq)
		sort_update(sort_less(rq, n) ? n->sort_l : n->sort_r, rq);
	sort_pull(n);
}

/* Whether a request under @n overlaps [@a, @b) with lo_seq < seq < hi_seq. */
static bool sort_overlaps(const struct request *n, uint64_t a, uint64_t b, uint64_t lo_seq,
			  uint64_t hi_seq)
{
	while (n && n->sort_max_end > a) {
		if (sort_overlaps(n->sort_l, a, b, lo_seq, hi_seq))
			return true;
		if (n->offset >= b)
			return false; /* it and everything to its right start too late */
		if (rq_end(n) > a && n->seq > lo_seq && n->seq < hi_seq)
			return true;
		n = n->sort_r;
	}
	return false;
}

/* ---------------------------------------------------------------- candidates */

static bool can_grow(const struct queue *q, const struct request *rq, uint64_t len, int iov)
{
	return rq->len + len <= q->p.max_request_size && rq->nr_iov + (unsigned int)iov <= IOV_MAX;
}

static bool mergeable(const struct queue *q, const struct request *rq, const struct bio *bio)
{
	return rq->op == bio->op && rq->seq > q->flush_seq &&
	       can_grow(q, rq, bio->len, bio->iovcnt);
}

/* The earliest mergeable request that ends where @bio starts. */
static struct request *find_back(const struct queue *q, const struct bio *bio)
{
	struct request *rq, *best = NULL;

	for (rq = q->end_hash[end_hash_of(bio->offset)]; rq; rq = rq->hash_next)
		if (rq_end(rq) == bio->offset && mergeable(q, rq, bio) &&
		    (!best || rq->seq < best->seq))
			best = rq;
	return best;
}

/* The earliest mergeable request under @n that starts where @bio ends. */
static struct request *find_front(const struct queue *q, struct request *n,
				  const struct bio *bio)
{
	struct request *rq;

	while (n && bio_end(bio) != n->offset)
		n = bio_end(bio) < n->offset ? n->sort_l : n->sort_r;
	if (!n)
		return NULL;
	/* Equal offsets sit on both sides (the key goes on to seq): earlier ones on the left. */
	if ((rq = find_front(q, n->sort_l, bio)))
		return rq;
	if (mergeable(q, n, bio))
		return n;
	return find_front(q, n->sort_r, bio);
}

/* ---------------------------------------------------------------- the index */

int merge_index_init(struct queue *q)
{
	q->end_hash = calloc(END_HASH_SIZE, sizeof(*q->end_hash));
	return q->end_hash ? 0 : -ENOMEM;
}

void merge_index_destroy(struct queue *q)
{
	free(q->end_hash);
	q->end_hash = NULL;
}

/* splitmix64's finaliser: a priority that looks random but is the same on every run. */
static uint32_t sort_prio_of(uint64_t seq)
{
	uint64_t z = seq * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)(z ^ (z >> 31));
}

void merge_index_add(struct queue *q, struct request *rq)
{
	rq->seq = ++q->next_seq;
	if (rq->op == BIO_OP_FLUSH) {
		q->flush_seq = rq->seq;
		return;
	}
	rq->sort_prio = sort_prio_of(rq->seq);
	end_hash_add(q, rq);
	sort_insert(&q->sort_root, rq);
}

void merge_index_del(struct queue *q, struct request *rq)
{
	if (rq->op == BIO_OP_FLUSH)
		return;
	end_hash_del(rq);
	sort_erase(&q->sort_root, rq);
}

bool merge_index_overlaps(const struct queue *q, uint64_t start, uint64_t end, uint64_t lo_seq,
			  uint64_t hi_seq)
{
	return sort_overlaps(q->sort_root, start, end, lo_seq, hi_seq);
}

/* ---------------------------------------------------------------- merges */

/* @rq grew at its end: move it to its new hash chain and fix the tree's subtree ends. */
static void rq_end_moved(struct queue *q, struct request *rq)
{
	end_hash_del(rq);
	end_hash_add(q, rq);
	sort_update(q->sort_root, rq);
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
	rq_end_moved(q, rq);
}

static void front_merge(struct queue *q, struct request *rq, struct bio *bio)
{
	sort_erase(&q->sort_root, rq); /* its key changes */
	bio->next = rq->bio;
	rq->bio = bio;
	rq->last_submit_ns = bio->submit_ns;
	rq->offset = bio->offset;
	rq->len += bio->len;
	rq->nr_bios++;
	rq->nr_iov += (unsigned int)bio->iovcnt;
	q->queued_bytes += bio->len;
	q->stats.op[bio->op].merges_front++;
	sort_insert(&q->sort_root, rq);
}

/* Whether a queued request strictly between @a and @b in the FIFO overlaps @rq: joining @rq
 * into the other one would move it past that request. */
static bool overlap_between(const struct queue *q, const struct request *a,
			    const struct request *b, const struct request *rq)
{
	uint64_t lo = a->seq < b->seq ? a->seq : b->seq, hi = a->seq < b->seq ? b->seq : a->seq;

	return merge_index_overlaps(q, rq->offset, rq_end(rq), lo, hi);
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
	rq_end_moved(q, rq);
	free(next);
}

struct request *merge_bio(struct queue *q, struct bio *bio)
{
	struct request *back = NULL, *front = NULL, *last = q->last_merge;

	if (q->p.nomerges == NOMERGES_NONE || bio->op == BIO_OP_FLUSH || !bio->len)
		return NULL;
	if (sort_overlaps(q->sort_root, bio->offset, bio_end(bio), q->flush_seq, UINT64_MAX))
		return NULL;

	if (q->p.nomerges == NOMERGES_SIMPLE) {
		/* Only the one-hit cache, and no gap fill. */
		if (last && mergeable(q, last, bio)) {
			if (rq_end(last) == bio->offset)
				back = last;
			else if (last->offset == bio_end(bio))
				front = last;
		}
	} else {
		back = find_back(q, bio);
		front = find_front(q, q->sort_root, bio);
	}

	if (back) {
		back_merge(q, back, bio);
		if (front && q->p.nomerges == NOMERGES_ALL &&
		    can_grow(q, back, front->len, (int)front->nr_iov) &&
		    !overlap_between(q, back, front, front))
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
