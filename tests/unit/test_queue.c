/* SPDX-License-Identifier: MIT */
/* Unit tests of the request queue (core/queue/queue.c, core/queue/merge.c): merging, plugging and every
 * unplug reason, stop and start against a fake controller, flush ordering, request depletion. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "tests/unit/fakedev.h"

static struct fake F;

static void assert_exec(unsigned int i, enum bio_op op, uint64_t off, uint64_t len,
			unsigned int nr_bios)
{
	const struct exec_rec *e;

	ck_assert_uint_lt(i, F.nexec);
	e = &F.exec[i];
	ck_assert_msg(e->op == op && e->offset == off && e->len == len && e->nr_bios == nr_bios,
		      "exec[%u] = %s %llu+%llu (%u bios), want %s %llu+%llu (%u bios)", i,
		      bio_op_name[e->op], (unsigned long long)e->offset, (unsigned long long)e->len,
		      e->nr_bios, bio_op_name[op], (unsigned long long)off, (unsigned long long)len,
		      nr_bios);
}

/* @rq's bios are exactly @tb[idx[0]], @tb[idx[1]], ... in offset order and cover it. */
static void assert_chain(const struct request *rq, const struct tbio *tb, const int *idx, int n)
{
	const struct bio *b = rq->bio;
	uint64_t off = rq->offset;

	ck_assert_uint_eq(rq->nr_bios, (unsigned int)n);
	for (int i = 0; i < n; i++, b = b->next) {
		ck_assert_ptr_nonnull(b);
		ck_assert_ptr_eq(b, &tb[idx[i]].bio);
		ck_assert_uint_eq(b->offset, off);
		off += b->len;
		if (i == n - 1)
			ck_assert_ptr_eq(rq->biotail, b);
	}
	ck_assert_ptr_null(b);
	ck_assert_uint_eq(off, rq_end(rq));
}

static struct stats_snapshot snap(void)
{
	struct stats_snapshot ss;

	fake_snapshot(&F, &ss);
	return ss;
}

/* ---------------------------------------------------------------- merging */

START_TEST(test_back_merge)
{
	struct tbio b[3];
	const int order[] = {0, 1, 2};
	struct stats_snapshot ss;

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 8 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 1);
	ck_assert_uint_eq(F.q.queued_bytes, 12 * KiB);
	assert_chain(F.q.head, b, order, 3);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_back, 2);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_front, 0);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_gap, 0);

	queue_unplug_idle(&F.q);
	ck_assert_uint_eq(F.nexec, 1);
	assert_exec(0, BIO_OP_WRITE, 0, 12 * KiB, 3);
	assert_all_done_once(b, 3);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].bios, 3);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].ios, 1);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].bytes, 12 * KiB);
	assert_identity(&F);
	fake_stop(&F);
}
END_TEST

START_TEST(test_back_merge_into_older_request)
{
	struct tbio b[3];
	const int order[] = {0, 2};

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 64 * KiB, 4 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	assert_chain(F.q.head, b, order, 2);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

START_TEST(test_front_merge)
{
	struct tbio b[3];
	const int order[] = {2, 1, 0};
	struct stats_snapshot ss;

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_READ, 8 * KiB, 4 * KiB);
	submit(&F, &b[1], BIO_OP_READ, 4 * KiB, 4 * KiB);
	submit(&F, &b[2], BIO_OP_READ, 0, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 1);
	ck_assert_uint_eq(F.q.head->offset, 0);
	assert_chain(F.q.head, b, order, 3);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_READ].merges_front, 2);
	ck_assert_uint_eq(ss.s.op[BIO_OP_READ].merges_back, 0);

	queue_unplug_idle(&F.q);
	assert_exec(0, BIO_OP_READ, 0, 12 * KiB, 3);
	assert_all_done_once(b, 3);
	assert_identity(&F);
	fake_stop(&F);
}
END_TEST

START_TEST(test_gap_fill_joins_two_requests)
{
	struct tbio b[3];
	const int order[] = {0, 2, 1};
	struct stats_snapshot ss;

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 8 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	submit(&F, &b[2], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 1);
	ck_assert_uint_eq(F.q.queued_bytes, 12 * KiB);
	ck_assert_ptr_eq(F.q.head, F.q.tail);
	assert_chain(F.q.head, b, order, 3);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_back, 1);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_gap, 1);

	queue_unplug_idle(&F.q);
	ck_assert_uint_eq(F.nexec, 1);
	assert_exec(0, BIO_OP_WRITE, 0, 12 * KiB, 3);
	assert_all_done_once(b, 3);
	assert_identity(&F);
	fake_stop(&F);
}
END_TEST

START_TEST(test_merge_up_to_exact_max_request_size)
{
	struct tbio b[2];

	fake_params(&F);
	F.qp.max_request_size = 8 * KiB;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 1);
	assert_exec(0, BIO_OP_WRITE, 0, 8 * KiB, 2);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

START_TEST(test_back_merge_respects_max_request_size)
{
	struct tbio b[2];

	fake_params(&F);
	F.qp.max_request_size = 8 * KiB;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 6 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 6 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	ck_assert_uint_eq(snap().s.op[BIO_OP_WRITE].merges_back, 0);
	queue_unplug_idle(&F.q);
	assert_exec(0, BIO_OP_WRITE, 0, 6 * KiB, 1);
	assert_exec(1, BIO_OP_WRITE, 6 * KiB, 4 * KiB, 1);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

START_TEST(test_front_merge_respects_max_request_size)
{
	struct tbio b[2];

	fake_params(&F);
	F.qp.max_request_size = 8 * KiB;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 6 * KiB, 6 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 2 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	ck_assert_uint_eq(snap().s.op[BIO_OP_WRITE].merges_front, 0);
	queue_unplug_idle(&F.q);
	ck_assert_uint_eq(F.nexec, 2);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

START_TEST(test_gap_fill_respects_max_request_size)
{
	struct tbio b[3];
	const int first[] = {0, 2};
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.max_request_size = 12 * KiB;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 8 * KiB, 8 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	/* Joining would make 16 KiB: the bio back-merges and the two requests stay apart. */
	ck_assert_uint_eq(F.q.nr_queued, 2);
	assert_chain(F.q.head, b, first, 2);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_back, 1);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_gap, 0);
	queue_unplug_idle(&F.q);
	assert_exec(0, BIO_OP_WRITE, 0, 8 * KiB, 2);
	assert_exec(1, BIO_OP_WRITE, 8 * KiB, 8 * KiB, 1);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

START_TEST(test_merge_respects_iov_max)
{
	struct tbio b[2];

	fake_setup(&F);
	tbio_init(&b[0], &F, BIO_OP_WRITE, 0, 4 * KiB);
	b[0].bio.iovcnt = 1000;
	queue_submit(&F.q, &b[0].bio);
	tbio_init(&b[1], &F, BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	b[1].bio.iovcnt = 100;
	queue_submit(&F.q, &b[1].bio);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

START_TEST(test_nomerges_2_never_merges)
{
	struct tbio b[4];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.nomerges = NOMERGES_NONE;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 4 * KiB); /* back */
	submit(&F, &b[2], BIO_OP_WRITE, 12 * KiB, 4 * KiB);
	submit(&F, &b[3], BIO_OP_WRITE, 8 * KiB, 4 * KiB); /* back, front, gap */
	ck_assert_uint_eq(F.q.nr_queued, 4);
	queue_unplug_idle(&F.q);
	ck_assert_uint_eq(F.nexec, 4);
	ss = snap();
	ck_assert_uint_eq(op_merges(&ss.s.op[BIO_OP_WRITE]), 0);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].ios, 4);
	fake_stop(&F);
	assert_all_done_once(b, 4);
}
END_TEST

/* nomerges=1: the one-hit lookup against the request last added or merged into still works,
 * so a sequential stream merges. */
START_TEST(test_nomerges_1_merges_with_last_request)
{
	struct tbio b[3];
	const int order[] = {0, 1, 2};

	fake_params(&F);
	F.qp.nomerges = NOMERGES_SIMPLE;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 8 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 1);
	assert_chain(F.q.head, b, order, 3);
	ck_assert_uint_eq(snap().s.op[BIO_OP_WRITE].merges_back, 2);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

START_TEST(test_nomerges_1_only_one_hit)
{
	struct tbio b[3];

	fake_params(&F);
	F.qp.nomerges = NOMERGES_SIMPLE;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 64 * KiB, 4 * KiB);
	/* Adjacent to the older request only: no lookup beyond the one-hit cache. */
	submit(&F, &b[2], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 3);
	ck_assert_uint_eq(op_merges(&snap().s.op[BIO_OP_WRITE]), 0);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

START_TEST(test_nomerges_1_no_gap_join)
{
	struct tbio b[3];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.nomerges = NOMERGES_SIMPLE;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 8 * KiB, 4 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_gap, 0);
	ck_assert_uint_eq(op_merges(&ss.s.op[BIO_OP_WRITE]), 1);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

START_TEST(test_read_never_merges_with_write)
{
	struct tbio b[4];

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_READ, 4 * KiB, 4 * KiB);   /* behind the write */
	submit(&F, &b[2], BIO_OP_READ, 8 * KiB, 4 * KiB);   /* behind the read: merges */
	submit(&F, &b[3], BIO_OP_WRITE, 12 * KiB, 4 * KiB); /* behind the reads */
	ck_assert_uint_eq(F.q.nr_queued, 3);
	queue_unplug_idle(&F.q);
	assert_exec(0, BIO_OP_WRITE, 0, 4 * KiB, 1);
	assert_exec(1, BIO_OP_READ, 4 * KiB, 8 * KiB, 2);
	assert_exec(2, BIO_OP_WRITE, 12 * KiB, 4 * KiB, 1);
	fake_stop(&F);
	assert_all_done_once(b, 4);
}
END_TEST

START_TEST(test_discard_merges_with_discard_only)
{
	struct tbio b[4];
	struct stats_snapshot ss;

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_DISCARD, 0, 64 * KiB);
	submit(&F, &b[1], BIO_OP_DISCARD, 64 * KiB, 64 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 128 * KiB, 4 * KiB);
	submit(&F, &b[3], BIO_OP_DISCARD, 132 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 3);
	queue_unplug_idle(&F.q);
	assert_exec(0, BIO_OP_DISCARD, 0, 128 * KiB, 2);
	assert_exec(1, BIO_OP_WRITE, 128 * KiB, 4 * KiB, 1);
	assert_exec(2, BIO_OP_DISCARD, 132 * KiB, 4 * KiB, 1);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_DISCARD].merges_back, 1);
	ck_assert_uint_eq(ss.s.op[BIO_OP_DISCARD].bytes, 132 * KiB);
	fake_stop(&F);
	assert_all_done_once(b, 4);
}
END_TEST

START_TEST(test_overlapping_bio_queued_separately)
{
	struct tbio b[2];

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 8 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 8 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	ck_assert_uint_eq(F.q.queued_bytes, 16 * KiB);
	queue_unplug_idle(&F.q);
	assert_exec(0, BIO_OP_WRITE, 0, 8 * KiB, 1);
	assert_exec(1, BIO_OP_WRITE, 4 * KiB, 8 * KiB, 1);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

/* A write that could back-merge into an older write must not, when it overlaps a newer read:
 * merging would move it ahead of that read. */
START_TEST(test_overlapping_bio_does_not_overtake)
{
	struct tbio b[3];

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_READ, 4 * KiB, 4 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.q.nr_queued, 3);
	queue_unplug_idle(&F.q);
	assert_exec(0, BIO_OP_WRITE, 0, 4 * KiB, 1);
	assert_exec(1, BIO_OP_READ, 4 * KiB, 4 * KiB, 1);
	assert_exec(2, BIO_OP_WRITE, 4 * KiB, 4 * KiB, 1);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

/* A gap fill must not join across a request that overlaps the one it moves. A=[0,4K),
 * D=[12K,16K), then C=[8K,16K) queues behind D (it overlaps D). A bio for [4K,8K) back-merges
 * into A; joining C into A as well would dispatch C before D. */
START_TEST(test_gap_fill_does_not_move_request_past_overlap)
{
	struct tbio b[4];

	fake_params(&F);
	F.exec_ns = 1 * US; /* each exec moves the clock: exec_at gives the order */
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);		/* A */
	submit(&F, &b[1], BIO_OP_WRITE, 12 * KiB, 4 * KiB);	/* D */
	submit(&F, &b[2], BIO_OP_WRITE, 8 * KiB, 8 * KiB);	/* C */
	ck_assert_uint_eq(F.q.nr_queued, 3);
	submit(&F, &b[3], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	queue_unplug_idle(&F.q);
	fake_stop(&F);
	assert_all_done_once(b, 4);
	ck_assert_msg(b[1].exec_at < b[2].exec_at, "C [8K,16K) ran before D [12K,16K)");
	assert_exec(0, BIO_OP_WRITE, 0, 8 * KiB, 2);
	assert_exec(1, BIO_OP_WRITE, 12 * KiB, 4 * KiB, 1);
	assert_exec(2, BIO_OP_WRITE, 8 * KiB, 8 * KiB, 1);
}
END_TEST

/* The mirror case: the request a gap fill would move sits before an overlapping one, and the
 * bio's back-merge target after it. C=[8K,12K), D=[8K,16K), A=[0,4K), bio [4K,8K): C must
 * still run before D. */
START_TEST(test_gap_fill_does_not_move_request_back_past_overlap)
{
	struct tbio b[4];

	fake_params(&F);
	F.exec_ns = 1 * US;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 8 * KiB, 4 * KiB);	/* C */
	submit(&F, &b[1], BIO_OP_WRITE, 8 * KiB, 8 * KiB);	/* D */
	submit(&F, &b[2], BIO_OP_WRITE, 0, 4 * KiB);		/* A */
	ck_assert_uint_eq(F.q.nr_queued, 3);
	submit(&F, &b[3], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	queue_unplug_idle(&F.q);
	fake_stop(&F);
	assert_all_done_once(b, 4);
	ck_assert_msg(b[0].exec_at < b[1].exec_at, "C [8K,12K) ran after D [8K,16K)");
	ck_assert_msg(b[2].exec_at <= b[3].exec_at, "A ran after the bio that follows it");
}
END_TEST

/* One slot, busy for 100 us per command: what follows the first bio stays queued. */
static void one_slot_params(void)
{
	fake_params(&F);
	F.qp.plug = false;
	F.cp.queue_depth = 1;
	F.cp.latency_us = 100;
}

static void start_one_slot(void)
{
	one_slot_params();
	fake_start(&F);
}

START_TEST(test_flush_never_merges)
{
	struct tbio b[4];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.plug = false;
	F.cp.latency_us = 100;
	F.cp.queue_depth = 1; /* the flushes queue up behind the write in flight */
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 1024 * KiB, 4 * KiB); /* in flight */
	submit(&F, &b[1], BIO_OP_FLUSH, 0, 0);
	submit(&F, &b[2], BIO_OP_FLUSH, 0, 0);
	submit(&F, &b[3], BIO_OP_FLUSH, 0, 0);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_uint_eq(F.q.nr_queued, 3);
	fake_run_until_idle(&F);
	ss = snap();
	ck_assert_uint_eq(ss.s.op[BIO_OP_FLUSH].bios, 3);
	ck_assert_uint_eq(ss.s.op[BIO_OP_FLUSH].ios, 3);
	ck_assert_uint_eq(op_merges(&ss.s.op[BIO_OP_FLUSH]), 0);
	fake_stop(&F);
	assert_all_done_once(b, 4);
}
END_TEST

START_TEST(test_nothing_merges_across_queued_flush)
{
	struct tbio b[6];

	start_one_slot();
	submit(&F, &b[0], BIO_OP_WRITE, 1024 * KiB, 4 * KiB); /* in flight */
	submit(&F, &b[1], BIO_OP_WRITE, 64 * KiB, 4 * KiB);   /* queued before the flush */
	submit(&F, &b[2], BIO_OP_FLUSH, 0, 0);
	submit(&F, &b[3], BIO_OP_WRITE, 68 * KiB, 4 * KiB); /* would back-merge into b1 */
	submit(&F, &b[4], BIO_OP_WRITE, 60 * KiB, 4 * KiB); /* would front-merge into b1 */
	submit(&F, &b[5], BIO_OP_WRITE, 72 * KiB, 4 * KiB); /* merges behind the flush */
	ck_assert_uint_eq(F.q.nr_queued, 4);
	fake_run_until_idle(&F);
	ck_assert_uint_eq(F.nexec, 5);
	assert_exec(0, BIO_OP_WRITE, 1024 * KiB, 4 * KiB, 1);
	assert_exec(1, BIO_OP_WRITE, 64 * KiB, 4 * KiB, 1);
	assert_exec(2, BIO_OP_FLUSH, 0, 0, 1);
	assert_exec(3, BIO_OP_WRITE, 68 * KiB, 8 * KiB, 2);
	assert_exec(4, BIO_OP_WRITE, 60 * KiB, 4 * KiB, 1);
	fake_stop(&F);
	assert_all_done_once(b, 6);
}
END_TEST

/* ---------------------------------------------------------------- plugging */

START_TEST(test_idle_queue_plugs_on_first_bio)
{
	struct tbio b;
	struct stats_snapshot ss;

	fake_setup(&F);
	submit(&F, &b, BIO_OP_WRITE, 0, 4 * KiB);
	ck_assert(F.q.plugged);
	ck_assert(queue_needs_unplug(&F.q));
	ck_assert_uint_eq(F.nexec, 0);
	ck_assert_int_eq(b.ncomplete, 0);
	ck_assert(timer_is_armed(&F.t, &F.q.unplug_tmr));
	ss = snap();
	ck_assert_int_eq(ss.plugged, 1);
	ck_assert_uint_eq(ss.s.plugs, 1);
	ck_assert_uint_eq(ss.queued_requests, 1);
	ck_assert_uint_eq(ss.queued_bytes, 4 * KiB);
	fake_stop(&F);
}
END_TEST

START_TEST(test_unplug_idle)
{
	struct tbio b;
	struct stats_snapshot ss;

	fake_setup(&F);
	submit(&F, &b, BIO_OP_WRITE, 0, 4 * KiB);
	queue_unplug_idle(&F.q);
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 1);
	assert_all_done_once(&b, 1);
	/* A lone synchronous request never waits for the timer. The timer may stay armed (it
	 * is only moved by the next plug); firing it now changes nothing. */
	fake_advance_to(&F, fake_now(&F) + 10ull * F.q.p.unplug_delay_us * 1000);
	ck_assert_uint_eq(F.nexec, 1);
	ss = snap();
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_IDLE], 1);
	for (int r = 0; r < UNPLUG_NR; r++)
		if (r != UNPLUG_IDLE)
			ck_assert_uint_eq(ss.s.unplugs[r], 0);
	/* Not plugged: a second call changes nothing. */
	queue_unplug_idle(&F.q);
	ck_assert_uint_eq(snap().s.unplugs[UNPLUG_IDLE], 1);
	fake_stop(&F);
}
END_TEST

START_TEST(test_unplug_threshold)
{
	struct tbio b[5];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.unplug_threshold = 4;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 4 * KiB); /* merges: still 1 request */
	submit(&F, &b[2], BIO_OP_WRITE, 64 * KiB, 4 * KiB);
	submit(&F, &b[3], BIO_OP_WRITE, 128 * KiB, 4 * KiB);
	ck_assert(F.q.plugged);
	ck_assert_uint_eq(F.nexec, 0);
	submit(&F, &b[4], BIO_OP_WRITE, 192 * KiB, 4 * KiB); /* the 4th request */
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 4);
	ss = snap();
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_THRESHOLD], 1);
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_IDLE], 0);
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_TIMER], 0);
	assert_all_done_once(b, 5);
	fake_stop(&F);
}
END_TEST

START_TEST(test_unplug_size)
{
	struct tbio b[2];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.max_request_size = 64 * KiB;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 32 * KiB);
	ck_assert(F.q.plugged);
	submit(&F, &b[1], BIO_OP_WRITE, 32 * KiB, 32 * KiB);
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 1);
	assert_exec(0, BIO_OP_WRITE, 0, 64 * KiB, 2);
	ss = snap();
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_SIZE], 1);
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_IDLE], 0);
	assert_all_done_once(b, 2);
	fake_stop(&F);
}
END_TEST

START_TEST(test_unplug_size_single_bio)
{
	struct tbio b;

	fake_params(&F);
	F.qp.max_request_size = 64 * KiB;
	fake_start(&F);
	submit(&F, &b, BIO_OP_READ, 0, 64 * KiB);
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_uint_eq(snap().s.unplugs[UNPLUG_SIZE], 1);
	assert_all_done_once(&b, 1);
	fake_stop(&F);
}
END_TEST

START_TEST(test_unplug_timer)
{
	struct tbio b[2];
	const uint64_t delay = 3000 * US;
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.unplug_delay_us = 3000;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	fake_set_now(&F, T0 + 1000 * US);
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert_int_eq(fake_advance_to(&F, T0 + delay - 1), 0);
	ck_assert(F.q.plugged);
	ck_assert_uint_eq(F.nexec, 0);
	/* The delay counts from the plug, not from the latest bio. */
	ck_assert_int_eq(fake_advance_to(&F, T0 + delay), 1);
	ck_assert(!F.q.plugged);
	assert_exec(0, BIO_OP_WRITE, 0, 8 * KiB, 2);
	ss = snap();
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_TIMER], 1);
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_IDLE], 0);
	ck_assert_uint_eq(ss.s.plugged_ns, delay);
	assert_all_done_once(b, 2);
	fake_stop(&F);
}
END_TEST

START_TEST(test_unplug_idle_thread)
{
	struct tbio b[4];
	const uint64_t delay = 3000 * US;

	fake_params(&F);
	F.qp.unplug_delay_us = 3000;
	fake_start(&F);
	/* A thread that unplugs when it runs out of work: its plug's timer is a backstop. */
	queue_set_unplugs_idle(true);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	ck_assert_int_eq(fake_advance_to(&F, T0 + delay), 0);
	ck_assert(F.q.plugged);
	ck_assert_uint_eq(F.nexec, 0);
	/* Its next submission finds the plug due and ends it. */
	submit(&F, &b[1], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	ck_assert(!F.q.plugged);
	assert_exec(0, BIO_OP_WRITE, 0, 8 * KiB, 2);
	ck_assert_uint_eq(snap().s.unplugs[UNPLUG_TIMER], 1);
	/* A plug nothing ends: the backstop does, QUEUE_UNPLUG_BACKSTOP_NS after it was due. */
	fake_set_now(&F, T0 + 2 * delay);
	submit(&F, &b[2], BIO_OP_WRITE, 64 * KiB, 4 * KiB);
	ck_assert(F.q.plugged);
	fake_advance_to(&F, T0 + 3 * delay + QUEUE_UNPLUG_BACKSTOP_NS - 1);
	ck_assert(F.q.plugged);
	fake_advance_to(&F, T0 + 3 * delay + QUEUE_UNPLUG_BACKSTOP_NS);
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 2);
	ck_assert_uint_eq(snap().s.unplugs[UNPLUG_TIMER], 2);
	/* Other threads' plugs keep the exact timer. */
	queue_set_unplugs_idle(false);
	fake_set_now(&F, T0 + 4 * delay + QUEUE_UNPLUG_BACKSTOP_NS);
	submit(&F, &b[3], BIO_OP_WRITE, 128 * KiB, 4 * KiB);
	ck_assert_int_eq(fake_advance_to(&F, T0 + 5 * delay + QUEUE_UNPLUG_BACKSTOP_NS), 1);
	ck_assert(!F.q.plugged);
	assert_all_done_once(b, 4);
	fake_stop(&F);
}
END_TEST

START_TEST(test_replug_restarts_unplug_delay)
{
	struct tbio b[2];

	fake_params(&F);
	F.qp.unplug_delay_us = 3000;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	queue_unplug_idle(&F.q);
	fake_set_now(&F, T0 + 2000 * US);
	submit(&F, &b[1], BIO_OP_WRITE, 64 * KiB, 4 * KiB);
	ck_assert(F.q.plugged);
	/* The first plug's deadline passes: its timer was cancelled by the idle unplug. */
	fake_advance_to(&F, T0 + 3000 * US);
	ck_assert(F.q.plugged);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_int_eq(fake_advance_to(&F, T0 + 5000 * US), 1);
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 2);
	ck_assert_uint_eq(snap().s.unplugs[UNPLUG_TIMER], 1);
	assert_all_done_once(b, 2);
	fake_stop(&F);
}
END_TEST

START_TEST(test_unplug_flush)
{
	struct tbio b[2];
	struct stats_snapshot ss;

	fake_setup(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	ck_assert(F.q.plugged);
	submit(&F, &b[1], BIO_OP_FLUSH, 0, 0);
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 2);
	assert_exec(0, BIO_OP_WRITE, 0, 4 * KiB, 1);
	assert_exec(1, BIO_OP_FLUSH, 0, 0, 1);
	/* The flush ran only after the write had completed. */
	ck_assert_uint_gt(F.exec[1].seq, b[0].seq);
	ss = snap();
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_FLUSH], 1);
	ck_assert_uint_eq(ss.s.unplugs[UNPLUG_IDLE], 0);
	assert_all_done_once(b, 2);
	fake_stop(&F);
}
END_TEST

START_TEST(test_flush_on_idle_queue_does_not_plug)
{
	struct tbio b;

	fake_setup(&F);
	submit(&F, &b, BIO_OP_FLUSH, 0, 0);
	ck_assert(!F.q.plugged);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_uint_eq(snap().s.plugs, 0);
	assert_all_done_once(&b, 1);
	fake_stop(&F);
}
END_TEST

START_TEST(test_plug_off_never_plugs)
{
	struct tbio b[4];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.plug = false;
	fake_start(&F);
	for (int i = 0; i < 4; i++) {
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 4 * KiB, 4 * KiB);
		ck_assert(!F.q.plugged);
		ck_assert_uint_eq(F.nexec, (unsigned int)i + 1);
	}
	ck_assert(!timer_is_armed(&F.t, &F.q.unplug_tmr));
	ss = snap();
	ck_assert_uint_eq(ss.s.plugs, 0);
	for (int r = 0; r < UNPLUG_NR; r++)
		ck_assert_uint_eq(ss.s.unplugs[r], 0);
	assert_all_done_once(b, 4);
	fake_stop(&F);
}
END_TEST

/* ---------------------------------------------------------------- stop and start */

static int fail_every_7th(struct fake *f, struct request *rq)
{
	(void)f;
	return (rq->offset / (64 * KiB)) % 7 == 3 ? -EIO : 0;
}

START_TEST(test_queue_stops_when_slots_full)
{
	struct tbio b[10];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.plug = false;
	F.cp.queue_depth = 4;
	F.cp.latency_us = 100;
	fake_start(&F);
	for (int i = 0; i < 10; i++)
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 64 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 4);
	ss = snap();
	ck_assert_int_eq(ss.stopped, 1);
	ck_assert_int_eq(ss.stop_reason, STOP_SLOTS);
	ck_assert_uint_eq(ss.in_flight, 4);
	ck_assert_uint_eq(ss.queued_requests, 6);
	ck_assert_uint_eq(ss.s.stops[STOP_SLOTS], 1);
	ck_assert_uint_eq(ss.s.starts[STOP_SLOTS], 0);
	ck_assert_uint_eq(F.completions, 0);
	fake_stop(&F);
}
END_TEST

START_TEST(test_completion_starts_queue)
{
	struct tbio b[6];
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.plug = false;
	F.cp.queue_depth = 4;
	F.cp.latency_us = 100;
	fake_start(&F);
	for (int i = 0; i < 6; i++)
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 64 * KiB, 4 * KiB);
	ck_assert(F.q.stopped);
	/* Not yet: the service time holds every slot. */
	ck_assert_int_eq(fake_advance_to(&F, T0 + 100 * US - 1), 0);
	ck_assert(F.q.stopped);
	ck_assert_int_eq(fake_advance_to(&F, T0 + 100 * US), 4);
	ss = snap();
	/* Each of the first two completions started the queue, which filled the freed slot
	 * and stopped again; the last two left it running with free slots. */
	ck_assert_int_eq(ss.stopped, 0);
	ck_assert_uint_eq(ss.s.stops[STOP_SLOTS], 2);
	ck_assert_uint_eq(ss.s.starts[STOP_SLOTS], 2);
	ck_assert_uint_eq(ss.in_flight, 2);
	ck_assert_uint_eq(F.nexec, 6);
	ck_assert_uint_eq(F.completions, 4);
	/* The queued ones started when the first slot freed. */
	ck_assert_uint_eq(F.exec[4].at, T0 + 100 * US);
	fake_stop(&F);
	assert_all_done_once(b, 6);
}
END_TEST

START_TEST(test_stopped_queue_keeps_merging)
{
	struct tbio b[4];
	struct stats_snapshot ss;

	start_one_slot();
	submit(&F, &b[0], BIO_OP_WRITE, 1024 * KiB, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 0, 4 * KiB);
	ck_assert(F.q.stopped);
	submit(&F, &b[2], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	submit(&F, &b[3], BIO_OP_WRITE, 8 * KiB, 4 * KiB);
	ss = snap();
	ck_assert_uint_eq(ss.queued_requests, 1);
	ck_assert_uint_eq(ss.queued_bytes, 12 * KiB);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].merges_back, 2);
	fake_run_until_idle(&F);
	assert_exec(1, BIO_OP_WRITE, 0, 12 * KiB, 3);
	fake_stop(&F);
	assert_all_done_once(b, 4);
}
END_TEST

START_TEST(test_stop_start_nothing_lost_or_completed_twice)
{
	enum { N = 200 };
	static struct tbio b[N];
	struct stats_snapshot ss;
	unsigned int nfail = 0;
	uint64_t bytes = 0;

	fake_params(&F);
	F.qp.plug = false;
	F.cp.queue_depth = 4;
	F.cp.latency_us = 100;
	F.result = fail_every_7th;
	fake_start(&F);
	for (int i = 0; i < N; i++) {
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 64 * KiB, 4 * KiB);
		if (i % 10 == 9) /* let some complete while others are submitted */
			fake_advance_to(&F, fake_now(&F) + 30 * US);
	}
	fake_run_until_idle(&F);
	assert_all_done_once(b, N);
	for (int i = 0; i < N; i++) {
		if (b[i].expect)
			nfail++;
		else
			bytes += b[i].bio.len;
	}
	ck_assert_uint_gt(nfail, 0);
	ck_assert_uint_eq(F.nexec, N);
	ck_assert_uint_eq(F.completions, N);
	ck_assert_uint_eq(F.max_in_flight, 4);
	ss = snap();
	ck_assert_int_eq(ss.stopped, 0);
	ck_assert_uint_gt(ss.s.stops[STOP_SLOTS], 0);
	ck_assert_uint_eq(ss.s.stops[STOP_SLOTS], ss.s.starts[STOP_SLOTS]);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].ios, N);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].errors, nfail);
	ck_assert_uint_eq(ss.s.op[BIO_OP_WRITE].bytes, bytes);
	assert_identity(&F);
	fake_stop(&F);
}
END_TEST

/* The error of a merged request reaches every bio in it, and only those. */
START_TEST(test_error_reaches_every_bio_of_the_request)
{
	struct tbio b[5];

	fake_params(&F);
	F.result = fail_every_7th;
	fake_start(&F);
	for (int i = 0; i < 3; i++) /* one request at 3 * 64 KiB: fails */
		submit(&F, &b[i], BIO_OP_WRITE, 3 * 64 * KiB + (uint64_t)i * 4 * KiB, 4 * KiB);
	submit(&F, &b[3], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[4], BIO_OP_WRITE, 4 * KiB, 4 * KiB);
	queue_unplug_idle(&F.q);
	ck_assert_uint_eq(F.nexec, 2);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(b[i].error, -EIO);
	ck_assert_int_eq(b[3].error, 0);
	ck_assert_int_eq(b[4].error, 0);
	assert_all_done_once(b, 5);
	fake_stop(&F);
}
END_TEST

/* A flush is dispatched in its place in the FIFO, without waiting for the commands in
 * flight (they were acknowledged to no one); it completes after all of them. */
START_TEST(test_flush_keeps_order_and_completes_after_earlier_commands)
{
	struct tbio b[5];

	fake_params(&F);
	F.qp.plug = false;
	F.cp.queue_depth = 8;
	F.cp.latency_us = 100;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	fake_set_now(&F, T0 + 10 * US);
	submit(&F, &b[1], BIO_OP_WRITE, 64 * KiB, 4 * KiB);
	fake_set_now(&F, T0 + 20 * US);
	submit(&F, &b[2], BIO_OP_WRITE, 128 * KiB, 4 * KiB);
	submit(&F, &b[3], BIO_OP_FLUSH, 0, 0);
	submit(&F, &b[4], BIO_OP_WRITE, 192 * KiB, 4 * KiB);
	/* Free slots: everything is dispatched, in submission order. */
	ck_assert_uint_eq(F.nexec, 5);
	ck_assert_uint_eq(F.q.nr_queued, 0);
	assert_exec(3, BIO_OP_FLUSH, 0, 0, 1);
	assert_exec(4, BIO_OP_WRITE, 192 * KiB, 4 * KiB, 1);
	fake_run_until_idle(&F);
	/* The flush completes after every earlier command is due, plus its own service. */
	for (int i = 0; i < 3; i++)
		ck_assert_uint_ge(b[3].done_at, b[i].done_at);
	ck_assert_uint_eq(b[3].done_at, T0 + 220 * US);
	assert_all_done_once(b, 5);
	fake_stop(&F);
}
END_TEST

struct submitter {
	struct tbio *tb;
	uint64_t off;
};

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;

	submit(&F, s->tb, BIO_OP_WRITE, s->off, 4 * KiB);
	return NULL;
}

static unsigned int queue_waiters(void)
{
	unsigned int n;

	lock_take(&F.q.lock);
	n = F.q.waiters;
	lock_drop(&F.q.lock);
	return n;
}

START_TEST(test_request_depletion_blocks_submitter)
{
	struct tbio b[4];
	struct submitter s = {&b[3], 3 * 1024 * KiB};
	struct timespec ms = {0, 1000000};
	struct stats_snapshot ss;
	pthread_t th;
	int i;

	one_slot_params();
	F.qp.nr_requests = 2;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);	      /* in flight */
	submit(&F, &b[1], BIO_OP_WRITE, 1024 * KiB, 4 * KiB); /* queued */
	submit(&F, &b[2], BIO_OP_WRITE, 2048 * KiB, 4 * KiB); /* queued: full */
	ck_assert_int_eq(b[0].ncomplete, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, submit_thread, &s), 0);
	for (i = 0; i < 10000 && queue_waiters() == 0; i++)
		nanosleep(&ms, NULL);
	ck_assert_uint_eq(queue_waiters(), 1);
	ss = snap();
	ck_assert_uint_eq(ss.queued_requests, 2);
	ck_assert_uint_eq(ss.s.depletion_waits, 1);
	/* The completion of b0 dispatches b1, which frees a request for the waiter. */
	fake_advance_to(&F, T0 + 100 * US);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ss = snap();
	ck_assert_uint_eq(ss.queued_requests, 2);
	ck_assert_uint_eq(ss.in_flight, 1);
	fake_run_until_idle(&F);
	for (i = 0; i < 4; i++)
		assert_exec((unsigned int)i, BIO_OP_WRITE, (uint64_t)i * 1024 * KiB, 4 * KiB, 1);
	assert_all_done_once(b, 4);
	fake_stop(&F);
}
END_TEST

START_TEST(test_merging_bio_does_not_wait_for_a_request)
{
	struct tbio b[4];

	one_slot_params();
	F.qp.nr_requests = 2;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 1024 * KiB, 4 * KiB);
	submit(&F, &b[2], BIO_OP_WRITE, 2048 * KiB, 4 * KiB);
	submit(&F, &b[3], BIO_OP_WRITE, 2052 * KiB, 4 * KiB); /* back-merges: no wait */
	ck_assert_uint_eq(snap().s.depletion_waits, 0);
	ck_assert_uint_eq(F.q.nr_queued, 2);
	fake_stop(&F);
	assert_all_done_once(b, 4);
}
END_TEST

/* A random load: percentages of writes, reads and discards (the rest are flushes), bios
 * 4 KiB-aligned within the first @blocks blocks of 4 KiB and 1 to @max_blocks blocks long. */
struct mix {
	unsigned int write, read, discard, blocks, max_blocks;
};

/* Submit one bio drawn from the generator *@x; returns the random bits, for the caller's own
 * choices (unplug, clock). */
static uint32_t submit_random(struct tbio *tb, uint32_t *x, const struct mix *m)
{
	uint32_t r, pct;
	enum bio_op op;

	*x = *x * 1103515245u + 12345u;
	r = *x >> 8;
	pct = r % 100;
	op = pct < m->write			      ? BIO_OP_WRITE
	     : pct < m->write + m->read		      ? BIO_OP_READ
	     : pct < m->write + m->read + m->discard ? BIO_OP_DISCARD
						      : BIO_OP_FLUSH;
	if (op == BIO_OP_FLUSH)
		submit(&F, tb, op, 0, 0);
	else
		submit(&F, tb, op, (uint64_t)((r >> 7) % m->blocks) * 4 * KiB,
		       (1 + (r >> 13) % m->max_blocks) * 4 * KiB);
	return r;
}

/* In-order walk of the merge index's treap: keys ascend, each node's subtree end is right,
 * priorities form a heap. Returns the number of nodes; clears *@ok on a fault. (Plain checks,
 * not ck_assert: this runs for every node after every submit.) */
static unsigned int check_treap(const struct request *n, const struct request **prev, bool *ok)
{
	unsigned int cnt = 0;
	uint64_t max;

	if (!n)
		return 0;
	cnt += check_treap(n->sort_l, prev, ok);
	if (*prev && !((*prev)->offset < n->offset ||
		       ((*prev)->offset == n->offset && (*prev)->seq < n->seq)))
		*ok = false;
	*prev = n;
	cnt += 1 + check_treap(n->sort_r, prev, ok);
	max = rq_end(n);
	if (n->sort_l) {
		if (n->sort_l->sort_prio > n->sort_prio)
			*ok = false;
		if (n->sort_l->sort_max_end > max)
			max = n->sort_l->sort_max_end;
	}
	if (n->sort_r) {
		if (n->sort_r->sort_prio > n->sort_prio)
			*ok = false;
		if (n->sort_r->sort_max_end > max)
			max = n->sort_r->sort_max_end;
	}
	if (n->sort_max_end != max)
		*ok = false;
	return cnt;
}

/* The merge index holds exactly the queued requests but flushes, in FIFO seq order, each on
 * the hash chain of its end. */
static void check_merge_index(struct queue *q)
{
	const struct request *prev = NULL, *rq;
	unsigned int indexed = 0;
	uint64_t seq = 0;
	bool ok = true;

	lock_take(&q->lock);
	for (rq = q->head; rq; rq = rq->next) {
		if (rq->seq <= seq)
			ok = false;
		seq = rq->seq;
		if (rq->op == BIO_OP_FLUSH)
			continue;
		indexed++;
		if (!rq->hash_pprev || *rq->hash_pprev != rq)
			ok = false;
	}
	if (check_treap(q->sort_root, &prev, &ok) != indexed)
		ok = false;
	lock_drop(&q->lock);
	if (!ok)
		ck_abort_msg("the merge index does not match the queue");
}

/* Random ops over a small range, so that bios often touch and overlap, with the index checked
 * after every submit: bios that overlap run in submission order, nothing crosses a flush, and
 * merges still happen. */
START_TEST(test_random_load_keeps_overlap_order)
{
	enum { N = 2500 };
	static struct tbio b[N];
	uint32_t x = 777;
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.max_request_size = 32 * KiB;
	F.cp.queue_depth = 2; /* the queue stops often, and requests wait behind flushes */
	F.cp.latency_us = 20;
	F.exec_ns = 1 * US; /* exec_at orders the execs */
	fake_start(&F);
	for (int i = 0; i < N; i++) {
		uint32_t r = submit_random(&b[i], &x, &(struct mix){ 50, 30, 17, 48, 3 });

		check_merge_index(&F.q);
		if ((r >> 16) % 40 == 0)
			queue_unplug_idle(&F.q);
		if ((r >> 22) % 8 == 0)
			fake_advance_to(&F, fake_now(&F) + 10 * US);
	}
	fake_run_until_idle(&F);
	assert_all_done_once(b, N);
	for (int i = 0; i < N; i++) {
		for (int j = i + 1; j < N; j++) {
			const struct bio *u = &b[i].bio, *v = &b[j].bio;
			bool ordered = u->op == BIO_OP_FLUSH || v->op == BIO_OP_FLUSH ||
				       (u->offset < bio_end(v) && v->offset < bio_end(u));

			if (ordered && b[i].exec_at >= b[j].exec_at)
				ck_abort_msg("bio %d (%s %llu+%u) ran at or after bio %d (%s %llu+%u)",
					     i, bio_op_name[u->op], (unsigned long long)u->offset,
					     u->len, j, bio_op_name[v->op],
					     (unsigned long long)v->offset, v->len);
		}
	}
	ss = snap();
	ck_assert_uint_gt(ss.s.op[BIO_OP_WRITE].merges_back, 0);
	ck_assert_uint_gt(ss.s.op[BIO_OP_WRITE].merges_front, 0);
	ck_assert_uint_gt(ss.s.op[BIO_OP_WRITE].merges_gap, 0);
	fake_stop(&F);
}
END_TEST

/* A random mix of ops, sizes, overlaps, unplugs and completions: every bio completes once
 * and bios = ios + merges for every op. */
START_TEST(test_mixed_load_keeps_identity)
{
	enum { N = 3000 };
	static struct tbio b[N];
	uint32_t x = 12345;
	struct stats_snapshot ss;

	fake_params(&F);
	F.qp.unplug_threshold = 8;
	F.qp.max_request_size = 32 * KiB;
	F.cp.queue_depth = 4;
	F.cp.latency_us = 50;
	fake_start(&F);
	for (int i = 0; i < N; i++) {
		uint32_t r = submit_random(&b[i], &x, &(struct mix){ 45, 40, 10, 64, 4 });

		if ((r >> 16) % 5 == 0)
			queue_unplug_idle(&F.q);
		if ((r >> 19) % 3 == 0)
			fake_advance_to(&F, fake_now(&F) + 20 * US);
	}
	fake_run_until_idle(&F);
	assert_all_done_once(b, N);
	ss = snap();
	ck_assert_uint_gt(op_merges(&ss.s.op[BIO_OP_WRITE]), 0);
	ck_assert_uint_gt(ss.s.op[BIO_OP_WRITE].merges_gap + ss.s.op[BIO_OP_READ].merges_gap, 0);
	ck_assert_uint_le(F.max_in_flight, 4);
	ck_assert_uint_eq(ss.s.stops[STOP_SLOTS], ss.s.starts[STOP_SLOTS]);
	for (unsigned int i = 0; i < F.nexec; i++)
		ck_assert_uint_le(F.exec[i].len, 32 * KiB);
	assert_identity(&F);
	fake_stop(&F);
}
END_TEST

/* ---------------------------------------------------------------- holds by hand */

/* stop/start and freeze/thaw are separate holds: neither end command ends the other's. */
START_TEST(test_thaw_does_not_end_stop)
{
	struct tbio b[1];

	start_one_slot();
	queue_hold(&F.q, true);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 0);
	queue_thaw(&F.q); /* no freeze: nothing to end */
	ck_assert_uint_eq(F.nexec, 0);
	queue_hold(&F.q, false);
	ck_assert_uint_eq(F.nexec, 1);
	fake_stop(&F);
	assert_all_done_once(b, 1);
}
END_TEST

START_TEST(test_start_does_not_end_freeze)
{
	struct queue_hold_state st;
	struct tbio b[1];

	start_one_slot();
	queue_freeze(&F.q, NULL, NULL);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	queue_hold(&F.q, false); /* no stop: nothing to end */
	ck_assert_uint_eq(F.nexec, 0);
	queue_hold_state(&F.q, &st);
	ck_assert(st.frozen && !st.held);
	queue_thaw(&F.q);
	ck_assert_uint_eq(F.nexec, 1);
	fake_stop(&F);
	assert_all_done_once(b, 1);
}
END_TEST

/* Both holds: the queue dispatches only once both have ended, in either order. */
START_TEST(test_stop_and_freeze_both_end_before_dispatch)
{
	struct tbio b[2];

	start_one_slot();
	queue_hold(&F.q, true);
	queue_freeze(&F.q, NULL, NULL);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 4 * KiB);
	queue_hold(&F.q, false);
	ck_assert_uint_eq(F.nexec, 0);
	queue_hold(&F.q, true);
	queue_thaw(&F.q);
	ck_assert_uint_eq(F.nexec, 0);
	queue_hold(&F.q, false);
	ck_assert_uint_eq(F.nexec, 1);
	fake_stop(&F);
	assert_all_done_once(b, 1);
}
END_TEST

struct freezer {
	pthread_t th;
	int ret;
	bool done;	/* F.q.lock */
};

static void *freeze_thread(void *arg)
{
	struct freezer *fz = arg;

	fz->ret = queue_freeze(&F.q, NULL, NULL);
	lock_take(&F.q.lock);
	fz->done = true;
	lock_drop(&F.q.lock);
	return NULL;
}

/* On one slot, put @b, a write, in flight for 100 us; start a freeze in a thread and wait
 * until it waits for that write. */
static void freeze_behind_a_write(struct freezer *fz, struct tbio *b)
{
	struct timespec ms = {0, 1000000};
	int waiting = 0;

	start_one_slot();
	submit(&F, b, BIO_OP_WRITE, 0, 4 * KiB);
	fz->done = false;
	ck_assert_int_eq(pthread_create(&fz->th, NULL, freeze_thread, fz), 0);
	for (int i = 0; i < 10000 && !waiting; i++) {
		lock_take(&F.q.lock);
		waiting = F.q.drain_waiting;
		lock_drop(&F.q.lock);
		if (!waiting)
			nanosleep(&ms, NULL);
	}
	ck_assert_int_eq(waiting, 1);
}

static bool freeze_done(struct freezer *fz)
{
	bool done;

	lock_take(&F.q.lock);
	done = fz->done;
	lock_drop(&F.q.lock);
	return done;
}

/* Complete the write in flight; join the freeze and return its result. */
static int freeze_join(struct freezer *fz)
{
	fake_advance_to(&F, T0 + 100 * US);
	ck_assert_int_eq(pthread_join(fz->th, NULL), 0);
	return fz->ret;
}

/* A start arriving while a freeze waits for the requests in flight leaves the freeze in
 * force: it completes on a queue that is frozen and dispatches nothing new. */
START_TEST(test_start_during_freeze_wait_keeps_the_freeze)
{
	struct queue_hold_state st;
	struct freezer fz;
	struct tbio b[2];

	freeze_behind_a_write(&fz, &b[0]);
	queue_hold(&F.q, false);
	submit(&F, &b[1], BIO_OP_WRITE, 1024 * KiB, 4 * KiB);
	ck_assert(!freeze_done(&fz));
	ck_assert_int_eq(freeze_join(&fz), 0);
	queue_hold_state(&F.q, &st);
	ck_assert(st.frozen);
	ck_assert_uint_eq(F.nexec, 1);
	queue_thaw(&F.q);
	ck_assert_uint_eq(F.nexec, 2);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

/* A thaw arriving while a freeze waits ends it: the freeze fails with ECANCELED instead of
 * reporting a frozen queue that is not. */
START_TEST(test_thaw_during_freeze_wait_cancels_the_freeze)
{
	struct queue_hold_state st;
	struct freezer fz;
	struct tbio b[2];

	freeze_behind_a_write(&fz, &b[0]);
	queue_thaw(&F.q);
	submit(&F, &b[1], BIO_OP_WRITE, 1024 * KiB, 4 * KiB);
	ck_assert_int_eq(freeze_join(&fz), -ECANCELED);
	queue_hold_state(&F.q, &st);
	ck_assert(!st.frozen);
	ck_assert_uint_eq(F.nexec, 2);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

static Suite *queue_suite(void)
{
	Suite *s = suite_create("queue");
	TCase *tc;

	tc = tcase_create("merge");
	tcase_add_test(tc, test_back_merge);
	tcase_add_test(tc, test_back_merge_into_older_request);
	tcase_add_test(tc, test_front_merge);
	tcase_add_test(tc, test_gap_fill_joins_two_requests);
	tcase_add_test(tc, test_merge_up_to_exact_max_request_size);
	tcase_add_test(tc, test_back_merge_respects_max_request_size);
	tcase_add_test(tc, test_front_merge_respects_max_request_size);
	tcase_add_test(tc, test_gap_fill_respects_max_request_size);
	tcase_add_test(tc, test_merge_respects_iov_max);
	tcase_add_test(tc, test_nomerges_2_never_merges);
	tcase_add_test(tc, test_nomerges_1_merges_with_last_request);
	tcase_add_test(tc, test_nomerges_1_only_one_hit);
	tcase_add_test(tc, test_nomerges_1_no_gap_join);
	tcase_add_test(tc, test_read_never_merges_with_write);
	tcase_add_test(tc, test_discard_merges_with_discard_only);
	tcase_add_test(tc, test_overlapping_bio_queued_separately);
	tcase_add_test(tc, test_overlapping_bio_does_not_overtake);
	tcase_add_test(tc, test_gap_fill_does_not_move_request_past_overlap);
	tcase_add_test(tc, test_gap_fill_does_not_move_request_back_past_overlap);
	tcase_add_test(tc, test_random_load_keeps_overlap_order);
	tcase_add_test(tc, test_flush_never_merges);
	tcase_add_test(tc, test_nothing_merges_across_queued_flush);
	suite_add_tcase(s, tc);

	tc = tcase_create("plug");
	tcase_add_test(tc, test_idle_queue_plugs_on_first_bio);
	tcase_add_test(tc, test_unplug_idle);
	tcase_add_test(tc, test_unplug_threshold);
	tcase_add_test(tc, test_unplug_size);
	tcase_add_test(tc, test_unplug_size_single_bio);
	tcase_add_test(tc, test_unplug_timer);
	tcase_add_test(tc, test_replug_restarts_unplug_delay);
	tcase_add_test(tc, test_unplug_idle_thread);
	tcase_add_test(tc, test_unplug_flush);
	tcase_add_test(tc, test_flush_on_idle_queue_does_not_plug);
	tcase_add_test(tc, test_plug_off_never_plugs);
	suite_add_tcase(s, tc);

	tc = tcase_create("stop_start");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_queue_stops_when_slots_full);
	tcase_add_test(tc, test_completion_starts_queue);
	tcase_add_test(tc, test_stopped_queue_keeps_merging);
	tcase_add_test(tc, test_stop_start_nothing_lost_or_completed_twice);
	tcase_add_test(tc, test_error_reaches_every_bio_of_the_request);
	tcase_add_test(tc, test_flush_keeps_order_and_completes_after_earlier_commands);
	tcase_add_test(tc, test_request_depletion_blocks_submitter);
	tcase_add_test(tc, test_merging_bio_does_not_wait_for_a_request);
	tcase_add_test(tc, test_mixed_load_keeps_identity);
	suite_add_tcase(s, tc);

	tc = tcase_create("holds");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_thaw_does_not_end_stop);
	tcase_add_test(tc, test_start_does_not_end_freeze);
	tcase_add_test(tc, test_stop_and_freeze_both_end_before_dispatch);
	tcase_add_test(tc, test_start_during_freeze_wait_keeps_the_freeze);
	tcase_add_test(tc, test_thaw_during_freeze_wait_cancels_the_freeze);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(queue_suite());
}
