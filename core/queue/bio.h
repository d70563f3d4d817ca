/* SPDX-License-Identifier: MIT */
/* Bios and requests: the units that flow through the queue and the controller.
 *
 * A bio is what a submitter asks for: one op on one byte range with its buffers and a
 * completion callback. A request is what the controller executes: one or more bios of the
 * same op covering one contiguous range, chained in offset order. */
#ifndef PLUGDISK_BIO_H
#define PLUGDISK_BIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/util/timer.h"

enum bio_op {
	BIO_OP_READ,
	BIO_OP_WRITE,
	BIO_OP_FLUSH,
	BIO_OP_DISCARD,
	BIO_OP_NR,
};

extern const char *const bio_op_name[BIO_OP_NR];

struct bio;

/* Called once per bio, from a completion context (a backend worker or the timer thread),
 * with no queue lock held. @error is 0 or -errno. The callee owns @bio afterwards. */
typedef void (*bio_end_io_t)(struct bio *bio, int error);

struct bio {
	enum bio_op op;
	uint64_t offset;	/* bytes */
	uint32_t len;		/* bytes; 0 for flush */
	int iovcnt;
	struct iovec *iov;	/* len bytes in total; NULL for flush and discard */
	bio_end_io_t end_io;
	void *private;		/* for the submitter */
	uint64_t submit_ns;	/* set by queue_submit() */
	struct bio *next;	/* next bio of the same request, in offset order */
};

static inline uint64_t bio_end(const struct bio *bio)
{
	return bio->offset + bio->len;
}

struct request;

/* How an asynchronous I/O stage reports a request's end (core/stage/io.h). */
typedef void (*rq_io_done_t)(struct request *rq, int error);

struct request {
	enum bio_op op;
	uint64_t offset;		/* bytes */
	uint64_t len;			/* bytes */
	struct bio *bio, *biotail;	/* chained through bio->next */
	unsigned int nr_bios;
	unsigned int nr_iov;		/* sum of bio->iovcnt */
	/* Links in the queue's FIFO while queued; q->lock. */
	struct request *prev, *next;
	/* The merge index while queued (core/queue/merge.c); q->lock. */
	uint64_t seq;				/* FIFO order: later requests have larger seq */
	struct request *hash_next, **hash_pprev;	/* end_hash chain */
	struct request *sort_l, *sort_r;	/* sort treap children */
	uint64_t sort_max_end;			/* greatest rq_end() in this treap subtree */
	uint32_t sort_prio;			/* treap priority */
	uint64_t start_ns;		/* when the request was created (stat's "in queue" time) */
	uint64_t last_submit_ns;	/* latest submit time of its bios */
	uint64_t dispatch_ns;		/* when the emulated device started it (see ctrl.c) */
	uint64_t deadline_ns;		/* earliest completion: dispatch + service latency */
	uint64_t free_ns;		/* when the emulated device freed its slot */
	uint64_t absorbed_ns;		/* how much before its service's end deadline_ns is */
	bool host_back;			/* started where the last one ended, back within the
					 * host's turnaround (ctrl.c) */
	int error;			/* 0 or -errno, set by the backend */
	struct request *work_next;	/* backend work list; ctrl pool lock */
	rq_io_done_t io_done;		/* set by the caller of an I/O stage (core/stage/io.h) */
	void *io_done_arg;		/* for io_done's owner */
	struct timer_entry tmr;		/* completion at deadline_ns when latency is emulated */
	void *queue;			/* the owning queue */
};

static inline uint64_t rq_end(const struct request *rq)
{
	return rq->offset + rq->len;
}

#endif
