// SPDX-License-Identifier: MIT
/* The checking stage of the checking builds (SANITIZE=1, TSAN=1): chain_build() puts one in
 * front of every stage, as nbdkit's server checks every call into a filter. Each request is
 * checked before it goes on: a valid op, a range inside the disk, no lock of the caller held
 * (core/util/lock.h); and its end: a result or io_done, never both, no positive error, and
 * every IO_ASYNC ended by the time the chain is destroyed. A second io_done is caught only
 * when the stage calls the io_done it was given (a saved copy); one read anew from
 * rq->io_done after the end reaches the caller's. A broken promise aborts with the stage's
 * name. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/stage/check.h"
#include "core/util/lock.h"

struct check_rq {
	struct stage_check *sc;
	rq_io_done_t done;	/* the caller's */
	void *done_arg;
	atomic_int ended;	/* io_done was called */
	atomic_int refs;	/* the exec's return and io_done each drop one */
};

static void check_fail(const struct stage_check *sc, const struct request *rq, const char *what)
{
	fprintf(stderr, "plugdisk: stage %s broke its contract: %s (%s %" PRIu64 "+%" PRIu64 ")\n",
		sc->inner.ops->name, what, rq->op < BIO_OP_NR ? bio_op_name[rq->op] : "?",
		rq->offset, rq->len);
	abort();
}

static void check_put(struct check_rq *cr)
{
	if (atomic_fetch_sub(&cr->refs, 1) == 1)
		free(cr);
}

static void check_done(struct request *rq, int error)
{
	struct check_rq *cr = rq->io_done_arg;
	struct stage_check *sc = cr->sc;
	rq_io_done_t done = cr->done;

	if (atomic_exchange(&cr->ended, 1))
		check_fail(sc, rq, "io_done called twice");
	if (error > 0)
		check_fail(sc, rq, "io_done with a positive error");
	rq->io_done = cr->done;
	rq->io_done_arg = cr->done_arg;
	atomic_fetch_sub(&sc->in_flight, 1);
	check_put(cr);
	done(rq, error);
}

static int check_exec(void *self, struct request *rq)
{
	struct stage_check *sc = self;
	struct check_rq *cr;
	int ret;

	lock_assert_none();
	if (rq->op >= BIO_OP_NR)
		check_fail(sc, rq, "an op out of range");
	if (rq->op == BIO_OP_FLUSH ? rq->len != 0
				   : !rq->len || rq_end(rq) < rq->offset ||
					     (sc->disk_size && rq_end(rq) > sc->disk_size))
		check_fail(sc, rq, "a range outside the disk");
	cr = malloc(sizeof(*cr));
	if (!cr)
		return -ENOMEM;
	*cr = (struct check_rq){ .sc = sc, .done = rq->io_done, .done_arg = rq->io_done_arg,
				 .refs = 2 };
	atomic_fetch_add(&sc->in_flight, 1);
	rq->io_done = check_done;
	rq->io_done_arg = cr;
	ret = sc->inner.ops->exec(sc->inner.self, rq);
	if (ret == IO_ASYNC) {
		check_put(cr);
		return ret;
	}
	if (atomic_load(&cr->ended))
		check_fail(sc, rq, "a result returned after io_done");
	if (ret > 0)
		check_fail(sc, rq, "a positive result");
	rq->io_done = cr->done;
	rq->io_done_arg = cr->done_arg;
	atomic_fetch_sub(&sc->in_flight, 1);
	free(cr);
	return ret;
}

static const struct stage_ops check_ops = {
	.name = "check",
	.exec = check_exec,
};

struct stage stage_check_wrap(struct stage_check *sc, const struct stage *inner,
			      uint64_t disk_size)
{
	sc->inner = *inner;
	sc->disk_size = disk_size;
	atomic_init(&sc->in_flight, 0);
	return (struct stage){ .ops = &check_ops, .self = sc };
}

void stage_check_end(struct stage_check *sc)
{
	if (atomic_load(&sc->in_flight)) {
		fprintf(stderr, "plugdisk: stage %s broke its contract: %d requests never ended\n",
			sc->inner.ops->name, atomic_load(&sc->in_flight));
		abort();
	}
}
