/* SPDX-License-Identifier: MIT */
/* Unit tests of the seek model behind a queue (fake clock): a rotating disk takes one read or
 * write at a time, the rest wait in the queue (stop reason "head"); with
 * controller.reorder = sptf the controller starts the waiting command nearest the head first,
 * which finishes a random batch measurably sooner than fifo, never passes a flush and never
 * reorders overlapping requests. */
#undef NDEBUG
#include <check.h>
#include <stdlib.h>

#include "tests/unit/fakedev.h"

#define GIB (1ull << 30)
#define NB 64

static struct fake F;
static struct tbio b[NB + 8];

static void hdd_params(enum ctrl_reorder reorder)
{
	fake_params(&F);
	F.cp.queue_depth = 32;
	F.cp.disk_size = GIB;
	F.cp.rpm = 7200;
	F.cp.seek_settle_us = 1000;
	F.cp.seek_full_us = 15000;
	F.cp.media_rate_outer = 200000000;
	F.cp.media_rate_inner = 100000000;
	F.cp.reorder = reorder;
}

/* NB random 4 KiB reads, queued at once (plugged), run to the end; returns the device time. */
static uint64_t random_batch(enum ctrl_reorder reorder)
{
	uint64_t x = 12345;
	struct stats_snapshot ss;
	uint64_t t;

	hdd_params(reorder);
	fake_start(&F);
	for (int i = 0; i < NB; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		submit(&F, &b[i], BIO_OP_READ, ((x >> 20) % (GIB / 4096 / 2)) * 8192, 4 * KiB);
	}
	fake_run_until_idle(&F);
	t = fake_now(&F) - T0;
	assert_all_done_once(b, NB);
	fake_snapshot(&F, &ss);
	ck_assert_uint_eq(ss.s.op[BIO_OP_READ].ios, NB);
	ck_assert_uint_gt(ss.s.stops[STOP_HEAD], 0); /* they waited for the head */
	/* one at a time: the next may start at the deadline of the last, before its
	 * completion has freed the slot */
	ck_assert_uint_le(F.max_in_flight, 2);
	fake_stop(&F);
	return t;
}

START_TEST(test_fifo_keeps_order_one_at_a_time)
{
	uint64_t t = random_batch(CTRL_REORDER_FIFO);

	for (unsigned int i = 1; i < F.nexec; i++)
		ck_assert_uint_gt(F.exec[i].seq, F.exec[i - 1].seq);
	for (int i = 0; i < NB; i++)
		ck_assert_uint_eq(F.exec[i].offset, b[i].bio.offset);
	/* about 12.6 ms each: seek + half a turn */
	ck_assert_uint_gt(t, NB * 10 * MS);
	ck_assert_uint_lt(t, NB * 16 * MS);
}
END_TEST

START_TEST(test_sptf_beats_fifo)
{
	uint64_t fifo = random_batch(CTRL_REORDER_FIFO);
	uint64_t sptf = random_batch(CTRL_REORDER_SPTF);
	bool reordered = false;

	for (int i = 0; i < NB; i++)
		reordered |= F.exec[i].offset != b[i].bio.offset;
	ck_assert(reordered);
	ck_assert_msg(sptf * 10 < fifo * 7, "sptf %llu ns, fifo %llu ns", (unsigned long long)sptf,
		      (unsigned long long)fifo);
}
END_TEST

/* A read of what a queued write covers starts after it; nothing passes a flush. */
START_TEST(test_sptf_keeps_overlaps_and_flushes)
{
	int wpos = -1, rpos = -1, fpos = -1;

	hdd_params(CTRL_REORDER_SPTF);
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_READ, GIB / 2, 4 * KiB);	  /* the head goes mid-disk */
	submit(&F, &b[1], BIO_OP_WRITE, GIB - 64 * KiB, 4 * KiB); /* far */
	submit(&F, &b[2], BIO_OP_READ, GIB - 64 * KiB, 8 * KiB);  /* overlaps it */
	submit(&F, &b[3], BIO_OP_READ, 8 * KiB, 4 * KiB);
	submit(&F, &b[4], BIO_OP_FLUSH, 0, 0);
	submit(&F, &b[5], BIO_OP_READ, GIB / 2 + 4 * KiB, 4 * KiB); /* nearest, after the flush */
	fake_run_until_idle(&F);
	assert_all_done_once(b, 6);
	for (unsigned int i = 0; i < F.nexec; i++) {
		if (F.exec[i].op == BIO_OP_WRITE)
			wpos = (int)i;
		if (F.exec[i].op == BIO_OP_READ && F.exec[i].offset == GIB - 64 * KiB)
			rpos = (int)i;
		if (F.exec[i].op == BIO_OP_FLUSH)
			fpos = (int)i;
	}
	ck_assert_int_ge(wpos, 0);
	ck_assert_int_gt(rpos, wpos);
	ck_assert_int_eq(fpos, 4);
	ck_assert_uint_eq(F.exec[5].offset, GIB / 2 + 4 * KiB);
	fake_stop(&F);
}
END_TEST

/* A read right under the head still waits for a queued write it overlaps, farther away. */
START_TEST(test_sptf_nearest_waits_for_overlap)
{
	int wpos = -1, rpos = -1;

	hdd_params(CTRL_REORDER_SPTF);
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_READ, GIB / 2, 4 * KiB);		/* the head ends at +4K */
	submit(&F, &b[1], BIO_OP_WRITE, GIB / 2 + 8 * KiB, 4 * KiB);	/* a seek away */
	submit(&F, &b[2], BIO_OP_READ, GIB / 2 + 4 * KiB, 8 * KiB);	/* no seek; overlaps it */
	fake_run_until_idle(&F);
	assert_all_done_once(b, 3);
	for (unsigned int i = 0; i < F.nexec; i++) {
		if (F.exec[i].op == BIO_OP_WRITE)
			wpos = (int)i;
		if (F.exec[i].op == BIO_OP_READ && F.exec[i].offset == GIB / 2 + 4 * KiB)
			rpos = (int)i;
	}
	ck_assert_int_eq(wpos, 1);
	ck_assert_int_eq(rpos, 2);
	fake_stop(&F);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sptf");
	TCase *tc = tcase_create("sptf");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fifo_keeps_order_one_at_a_time);
	tcase_add_test(tc, test_sptf_beats_fifo);
	tcase_add_test(tc, test_sptf_keeps_overlaps_and_flushes);
	tcase_add_test(tc, test_sptf_nearest_waits_for_overlap);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
