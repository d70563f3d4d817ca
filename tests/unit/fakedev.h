/* SPDX-License-Identifier: MIT */
/* A fake disk for the core unit tests: a fake clock, an unthreaded timer fired by hand, a
 * controller that runs I/O inline through a recording fake backend, and bios that record
 * their completion. Header-only; each test program includes it once. */
#ifndef PLUGDISK_TEST_FAKEDEV_H
#define PLUGDISK_TEST_FAKEDEV_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "core/util/barrier.h"
#include "core/ctrl/ctrl.h"
#include "core/queue/queue.h"
#include "core/util/timer.h"
#include "tests/unit/suite.h"

#define KiB 1024u
#define US  NSEC_PER_USEC
#define MS  NSEC_PER_MSEC
/* Fake time starts far from 0 so that no computation hides behind a zero. */
#define T0	 (1000ull * NSEC_PER_SEC)
#define MAX_EXEC 8192
#define MAX_PENDING 64

/* One command the fake backend executed. */
struct exec_rec {
	enum bio_op op;
	uint64_t offset, len;
	unsigned int nr_bios;
	uint64_t at; /* fake time of the exec */
	uint64_t dispatch_ns, deadline_ns;
	unsigned int seq; /* global event order (exec and end_io share it) */
	pthread_t thread; /* the thread that ran it */
};

struct fake;
/* Decide the result of a command: 0 or -errno. */
typedef int (*fake_result_fn)(struct fake *f, struct request *rq);

struct fake {
	uint64_t now;	  /* fake clock, ns; atomic */
	unsigned int seq; /* event counter; atomic */
	struct timer t;
	struct ctrl c;
	struct queue q;
	struct queue_params qp;
	struct ctrl_params cp;
	pthread_mutex_t log_lock; /* guards the fields below */
	struct exec_rec exec[MAX_EXEC];
	unsigned int nexec;
	unsigned int max_in_flight; /* highest c.in_flight seen by the backend */
	fake_result_fn result;	    /* NULL: every command succeeds */
	uint64_t exec_ns;	    /* backend time per command: the clock moves by this much */
	unsigned int completions;   /* end_io calls */
	bool async;		    /* the backend returns IO_ASYNC; fake_end_async() ends */
	struct request *pending[MAX_PENDING]; /* started asynchronously, not yet ended */
	unsigned int npending;
};

/* A bio with a record of its completion. */
struct tbio {
	struct bio bio;
	struct fake *f;
	int ncomplete;	   /* end_io calls: must end at exactly 1 */
	int error;	   /* as passed to end_io */
	int expect;	   /* the error the backend returned for its request */
	uint64_t deadline; /* its request's deadline_ns, seen by the backend */
	uint64_t exec_at;  /* fake time its request's backing I/O ran */
	uint64_t done_at;  /* fake time of end_io */
	unsigned int seq;  /* event order of end_io */
};

static inline uint64_t fake_now(void *arg)
{
	struct fake *f = arg;

	return smp_load_mb(f->now);
}

static inline void fake_set_now(struct fake *f, uint64_t now)
{
	smp_store_mb(f->now, now);
}

static inline unsigned int fake_next_seq(struct fake *f)
{
	return atomic_add_return_mb(f->seq, 1);
}

static inline int fake_exec(void *arg, struct request *rq)
{
	struct fake *f = arg;
	struct exec_rec *e;
	unsigned int in_flight;
	int err;

	/* in_flight is guarded by q->lock; the backend runs without it. */
	lock_take(&f->q.lock);
	in_flight = f->c.in_flight;
	ck_assert_uint_le(in_flight, f->c.p.queue_depth);
	lock_drop(&f->q.lock);

	err = f->result ? f->result(f, rq) : 0;
	pthread_mutex_lock(&f->log_lock);
	ck_assert_uint_lt(f->nexec, MAX_EXEC);
	e = &f->exec[f->nexec++];
	e->op = rq->op;
	e->offset = rq->offset;
	e->len = rq->len;
	e->nr_bios = rq->nr_bios;
	e->at = fake_now(f);
	e->dispatch_ns = rq->dispatch_ns;
	e->deadline_ns = rq->deadline_ns;
	e->seq = fake_next_seq(f);
	e->thread = pthread_self();
	if (in_flight > f->max_in_flight)
		f->max_in_flight = in_flight;
	for (struct bio *b = rq->bio; b; b = b->next) {
		struct tbio *tb = b->private;

		tb->expect = err;
		tb->deadline = rq->deadline_ns;
		tb->exec_at = e->at;
	}
	if (f->async) {
		ck_assert_uint_lt(f->npending, MAX_PENDING);
		f->pending[f->npending++] = rq;
		pthread_mutex_unlock(&f->log_lock);
		return IO_ASYNC; /* err is given to fake_end_async() by the test */
	}
	pthread_mutex_unlock(&f->log_lock);
	if (f->exec_ns)
		atomic_add_return_mb(f->now, f->exec_ns);
	return err;
}

/* End the asynchronously started request @rq with @err, as an I/O stage would: through
 * rq->io_done, with no lock held. */
static inline void fake_end_async(struct fake *f, struct request *rq, int err)
{
	pthread_mutex_lock(&f->log_lock);
	for (unsigned int i = 0; i < f->npending; i++) {
		if (f->pending[i] == rq) {
			f->pending[i] = f->pending[--f->npending];
			for (struct bio *b = rq->bio; b; b = b->next)
				((struct tbio *)b->private)->expect = err;
			pthread_mutex_unlock(&f->log_lock);
			rq->io_done(rq, err);
			return;
		}
	}
	pthread_mutex_unlock(&f->log_lock);
	ck_abort_msg("request %p is not pending", (void *)rq);
}

static inline void tbio_end_io(struct bio *bio, int error)
{
	struct tbio *tb = bio->private;
	struct fake *f = tb->f;

	pthread_mutex_lock(&f->log_lock);
	tb->ncomplete++;
	tb->error = error;
	tb->done_at = fake_now(f);
	tb->seq = fake_next_seq(f);
	f->completions++;
	pthread_mutex_unlock(&f->log_lock);
}

/* Zero @f and give it test defaults: plugging on, no unplug by threshold, deep queue. */
static inline void fake_params(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	queue_params_default(&f->qp);
	f->qp.unplug_threshold = 1000; /* only the reason under test unplugs */
	f->qp.nr_requests = 4096;
	ctrl_params_default(&f->cp);
	f->cp.workers = 0; /* I/O inline in the dispatching thread */
	f->cp.burst_ms = 0;
}

/* Set up the fake disk with f->qp and f->cp (see fake_params()). */
static inline void fake_start(struct fake *f)
{
	fake_set_now(f, T0);
	pthread_mutex_init(&f->log_lock, NULL);
	ck_assert_int_eq(timer_init(&f->t, false), 0);
	ck_assert_int_eq(ctrl_init(&f->c, &f->cp, &f->t, fake_exec, f, (int64_t)T0), 0);
	ck_assert_int_eq(queue_init(&f->q, &f->qp, &f->c, &f->t, fake_now, f), 0);
}

/* The default fake disk (fake_params() then fake_start()), for tests that tune nothing. */
static inline void fake_setup(struct fake *f)
{
	fake_params(f);
	fake_start(f);
}

/* Set up with f->qp and f->cp on real time: the real clock and a timer thread, for tests of
 * the worker threads. Stop with fake_stop_threaded(). */
static inline void fake_start_threaded(struct fake *f)
{
	pthread_mutex_init(&f->log_lock, NULL);
	ck_assert_int_eq(timer_init(&f->t, true), 0);
	ck_assert_int_eq(ctrl_init(&f->c, &f->cp, &f->t, fake_exec, f, (int64_t)clock_now_ns()),
			 0);
	ck_assert_int_eq(queue_init(&f->q, &f->qp, &f->c, &f->t, NULL, NULL), 0);
}

static inline void tbio_init(struct tbio *tb, struct fake *f, enum bio_op op, uint64_t off,
			     uint32_t len)
{
	memset(tb, 0, sizeof(*tb));
	tb->f = f;
	tb->expect = -12345; /* never executed */
	tb->bio.op = op;
	tb->bio.offset = off;
	tb->bio.len = len;
	tb->bio.iovcnt = (op == BIO_OP_READ || op == BIO_OP_WRITE) ? 1 : 0;
	tb->bio.end_io = tbio_end_io;
	tb->bio.private = tb;
}

static inline void submit(struct fake *f, struct tbio *tb, enum bio_op op, uint64_t off,
			  uint32_t len)
{
	tbio_init(tb, f, op, off, len);
	queue_submit(&f->q, &tb->bio);
}

/* Move the fake clock to @now and fire what is due; returns the number of timers run. */
static inline int fake_advance_to(struct fake *f, uint64_t now)
{
	fake_set_now(f, now);
	return timer_run_due(&f->t, now);
}

/* Unplug and fire timers, each at its deadline, until nothing is queued or in flight. */
static inline void fake_run_until_idle(struct fake *f)
{
	for (int i = 0; i < 1000000 && !queue_is_idle(&f->q); i++) {
		uint64_t d;

		queue_unplug_idle(&f->q);
		if (queue_is_idle(&f->q))
			break;
		d = timer_next_deadline(&f->t);
		ck_assert_msg(d != UINT64_MAX, "queue not idle and no timer armed: stuck");
		fake_advance_to(f, d > fake_now(f) ? d : fake_now(f));
	}
	ck_assert(queue_is_idle(&f->q));
}

static inline void fake_snapshot(struct fake *f, struct stats_snapshot *ss)
{
	memset(ss, 0, sizeof(*ss));
	queue_snapshot(&f->q, ss);
}

static inline uint64_t op_merges(const struct op_stats *st)
{
	return st->merges_back + st->merges_front + st->merges_gap;
}

/* Every bio completed exactly once, with the error its request got. */
static inline void assert_all_done_once(const struct tbio *tb, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		ck_assert_msg(tb[i].ncomplete == 1, "bio %u (off %llu) completed %d times", i,
			      (unsigned long long)tb[i].bio.offset, tb[i].ncomplete);
		ck_assert_int_eq(tb[i].error, tb[i].expect);
	}
}

/* bios = ios + merges for every op (call when idle). */
static inline void assert_identity(struct fake *f)
{
	struct stats_snapshot ss;

	fake_snapshot(f, &ss);
	for (int op = 0; op < BIO_OP_NR; op++) {
		const struct op_stats *st = &ss.s.op[op];

		ck_assert_msg(st->bios == st->ios + op_merges(st),
			      "%s: bios %llu ios %llu merges %llu", bio_op_name[op],
			      (unsigned long long)st->bios, (unsigned long long)st->ios,
			      (unsigned long long)op_merges(st));
	}
}

/* An idle disk: check bios = ios + merges, and free everything. */
static inline void fake_free(struct fake *f)
{
	assert_identity(f);
	queue_destroy(&f->q);
	ctrl_destroy(&f->c);
	timer_destroy(&f->t);
	pthread_mutex_destroy(&f->log_lock);
}

/* Drain a fake_start_threaded() disk, check bios = ios + merges, and free everything. The
 * threads are joined afterwards: the records can be read without f->log_lock. */
static inline void fake_stop_threaded(struct fake *f)
{
	queue_drain(&f->q);
	ck_assert(queue_is_idle(&f->q));
	fake_free(f);
}

/* Drain, check bios = ios + merges, and free everything. */
static inline void fake_stop(struct fake *f)
{
	fake_run_until_idle(f);
	fake_free(f);
}

#endif
