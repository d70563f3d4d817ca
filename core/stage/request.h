/* SPDX-License-Identifier: MIT */
/* The request and how a stage runs it: the types of the stage contract (core/stage/stage.h).
 *
 * A bio is what a submitter asks for: one op on one byte range with its buffers and a
 * completion callback. A request is what the controller executes and hands to the chain of
 * stages: one or more bios of the same op covering one contiguous range, chained in offset
 * order.
 *
 * How a stage runs a request (an io_exec_fn: a function and its argument): it returns 0 or
 * -errno when the I/O is done, or IO_ASYNC when it has started the I/O and will report the
 * end later by calling rq->io_done(rq, error) exactly once, from any thread, with no lock of
 * the caller's held. The caller sets rq->io_done (and rq->io_done_arg, for its own use)
 * before calling the stage; a stage that passes @rq down to a lower stage may set its own
 * io_done first and chain to the caller's from it. A stage never keeps @rq after it has
 * reported its end. */
#ifndef PLUGDISK_REQUEST_H
#define PLUGDISK_REQUEST_H

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

/* How an asynchronous I/O stage reports a request's end. */
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
	rq_io_done_t io_done;		/* set by the caller of a stage (above) */
	void *io_done_arg;		/* for io_done's owner */
	struct timer_entry tmr;		/* completion at deadline_ns when latency is emulated */
	void *queue;			/* the owning queue */
};

static inline uint64_t rq_end(const struct request *rq)
{
	return rq->offset + rq->len;
}

/* Returned by an io_exec_fn that will end the request through rq->io_done. */
#define IO_ASYNC 1

/* Run @rq's I/O: 0 or -errno when done, or IO_ASYNC. */
typedef int (*io_exec_fn)(void *arg, struct request *rq);

/* Run @rq through @fn and wait for its end, whether @fn ends it synchronously or not.
 * Returns 0 or -errno. Sets rq->io_done and rq->io_done_arg. Any thread that may block. */
int io_exec_wait(io_exec_fn fn, void *arg, struct request *rq);

/* The inline hint, part of the contract: a thread that ends requests (a stage's own thread,
 * such as an NBD connection's loop) or submits them (the daemon's receive threads) may say
 * whether the dispatch that an end or a submission starts may run its I/O on this thread
 * rather than be handed to a worker: @fn(@arg) answers, asked at that time (NULL: never).
 * This is how a stage tells the layer above about its threads, without calling up into it.
 * Per thread; no lock. */
typedef bool (*io_inline_fn)(void *arg);
void io_set_thread_inline(io_inline_fn fn, void *arg);
/* The calling thread's hint: its function (NULL when none was set) and, in *@arg, its
 * argument. */
io_inline_fn io_thread_inline(void **arg);

#endif
