/* SPDX-License-Identifier: MIT */
/* Unit tests of the controller's absorption of its path's own cost (controller.latency_absorb):
 * the median lateness at the deadlines is learnt and later deadlines come that much earlier,
 * by at most half the service time; off, nothing moves. And of the host's turnaround
 * (controller.latency_absorb_host): a command back within 500 us starts where the last one
 * ended. */
#undef NDEBUG
#include <check.h>
#include <stdlib.h>

#include "tests/unit/fakedev.h"

static struct fake F;

/* A one-slot disk with a service time of @latency_us, absorbing if @absorb (the core's
 * default is off, which is checked). */
static void start_one_slot(uint64_t latency_us, bool absorb)
{
	fake_params(&F);
	ck_assert(!F.cp.latency_absorb);
	ck_assert(!F.cp.latency_absorb_host);
	F.cp.queue_depth = 1;
	F.cp.latency_us = latency_us;
	F.cp.latency_absorb = absorb;
	fake_start(&F);
}

/* @n synchronous 4 KiB reads, one at a time, each completion run @late after its deadline;
 * returns the last bio's submit-to-end time. */
static uint64_t run_qd1(int n, uint64_t late)
{
	static struct tbio b[4096];
	uint64_t seen = 0;

	ck_assert_int_le(n, 4096);
	for (int i = 0; i < n; i++) {
		submit(&F, &b[i], BIO_OP_READ, (uint64_t)i * 4 * KiB, 4 * KiB);
		queue_unplug_idle(&F.q);
		ck_assert_int_eq(b[i].ncomplete, 0);
		ck_assert_int_eq(fake_advance_to(&F, b[i].deadline + late), 1);
		ck_assert_int_eq(b[i].ncomplete, 1);
		seen = b[i].done_at - b[i].bio.submit_ns;
		fake_set_now(&F, fake_now(&F) + 100 * US); /* the submitter's think time */
	}
	return seen;
}

START_TEST(test_lateness_is_absorbed)
{
	uint64_t seen;

	start_one_slot(1000, true);
	seen = run_qd1(400, 70 * US);
	/* learnt in steps of 1 us + 1/64: the median lateness, 70 us, give or take a step */
	ck_assert_uint_ge(F.c.late_ns, 67 * US);
	ck_assert_uint_le(F.c.late_ns, 73 * US);
	/* the bio ends at about submit + latency, not 70 us later */
	ck_assert_uint_ge(seen, 997 * US);
	ck_assert_uint_le(seen, 1003 * US);
	fake_stop(&F);
}
END_TEST

/* Rare long stalls do not drag the estimate: it tracks the median. */
START_TEST(test_stalls_do_not_drag)
{
	static struct tbio b[600];

	start_one_slot(1000, true);
	for (int i = 0; i < 600; i++) {
		submit(&F, &b[i], BIO_OP_READ, (uint64_t)i * 4 * KiB, 4 * KiB);
		queue_unplug_idle(&F.q);
		fake_advance_to(&F, b[i].deadline + (i % 10 == 9 ? 5000 : 40) * US);
		ck_assert_int_eq(b[i].ncomplete, 1);
	}
	ck_assert_uint_ge(F.c.late_ns, 39 * US);
	ck_assert_uint_le(F.c.late_ns, 50 * US);
	fake_stop(&F);
}
END_TEST

/* A lateness above half the service time cuts only half of it. */
START_TEST(test_cut_at_most_half)
{
	uint64_t seen;

	start_one_slot(100, true);
	seen = run_qd1(400, 300 * US);
	ck_assert_uint_ge(F.c.late_ns, 250 * US);
	/* deadline = dispatch + 50 us, ended 300 us late */
	ck_assert_uint_eq(seen, 350 * US);
	fake_stop(&F);
}
END_TEST

/* Absorbing shortens what one submitter sees, never the device's period: requests queued
 * behind a one-slot device still take a full service time each. */
START_TEST(test_queued_keep_the_period)
{
	static struct tbio q[20];
	uint64_t t0, late = 70 * US;

	start_one_slot(1000, true);
	run_qd1(400, late);
	ck_assert_uint_ge(F.c.late_ns, 67 * US);
	t0 = fake_now(&F);
	for (int i = 0; i < 20; i++)
		submit(&F, &q[i], BIO_OP_READ, (uint64_t)i * 64 * KiB, 4 * KiB);
	queue_unplug_idle(&F.q);
	for (int i = 0; i < 20; i++) {
		ck_assert_uint_gt(q[i].deadline, 0); /* dispatched once the one before ended */
		ck_assert_int_ge(fake_advance_to(&F, q[i].deadline + late), 1);
		ck_assert_int_eq(q[i].ncomplete, 1);
		/* back to back: one service time apart, none of it absorbed (give or take
		 * the estimate's step, as it keeps learning) */
		if (i) {
			ck_assert_uint_ge(q[i].deadline - q[i - 1].deadline, 997 * US);
			ck_assert_uint_le(q[i].deadline - q[i - 1].deadline, 1003 * US);
		}
	}
	/* 20 service times, the first one's end absorbed by the path's cost */
	ck_assert_uint_ge(q[19].deadline - t0, 20 * 1000 * US - 73 * US);
	fake_stop(&F);
}
END_TEST

START_TEST(test_off_moves_nothing)
{
	uint64_t seen;

	start_one_slot(1000, false);
	seen = run_qd1(200, 70 * US);
	ck_assert_uint_eq(seen, 1070 * US);
	fake_stop(&F);
}
END_TEST

/* @n synchronous reads on a one-slot disk of @latency_us absorbing the host's turnaround if
 * @on (not the lateness), each completion run @late after its deadline (at once when that has
 * passed) and the next read sent @gap_even after an even one's completion, @gap_odd after an
 * odd one's; returns the time from the first submit to the last completion. */
static uint64_t run_host(int n, uint64_t latency_us, uint64_t late, uint64_t gap_even,
			 uint64_t gap_odd, bool on)
{
	static struct tbio b[512];
	uint64_t t0 = 0;

	ck_assert_int_le(n, 512);
	fake_params(&F);
	F.cp.queue_depth = 1;
	F.cp.latency_us = latency_us;
	F.cp.latency_absorb_host = on;
	fake_start(&F);
	for (int i = 0; i < n; i++) {
		uint64_t due;

		submit(&F, &b[i], BIO_OP_READ, (uint64_t)i * 64 * KiB, 4 * KiB);
		if (!i)
			t0 = b[i].bio.submit_ns;
		queue_unplug_idle(&F.q);
		due = b[i].deadline + late;
		if (due > fake_now(&F))
			ck_assert_int_eq(fake_advance_to(&F, due), 1);
		ck_assert_int_eq(b[i].ncomplete, 1);
		fake_set_now(&F, fake_now(&F) + (i % 2 ? gap_odd : gap_even));
	}
	return b[n - 1].done_at - t0;
}

/* The way out and back (completion 20 us late, the next read 80 us later) is taken out of
 * the service time: 200 reads take 200 service times, not 200 x 1.1 ms. */
START_TEST(test_host_turnaround_absorbed)
{
	uint64_t took = run_host(200, 1000, 20 * US, 80 * US, 80 * US, true);

	ck_assert_uint_eq(F.c.host_starts, 199);
	/* the median of 80 + 20 us (from the command's end in the daemon, which includes the
	 * lateness), learnt in small steps */
	ck_assert_uint_ge(F.c.host_ns, 60 * US);
	ck_assert_uint_le(F.c.host_ns, 100 * US);
	/* 200 ms, plus the last one's lateness */
	ck_assert_uint_eq(took, 200 * 1000 * US + 20 * US);
	fake_stop(&F);
}
END_TEST

/* The period holds: the device never serves faster than one command per service time, and
 * a command never starts before the last one's service ended. */
START_TEST(test_host_keeps_the_period)
{
	uint64_t took = run_host(100, 1000, 0, 1, 1, true);

	ck_assert_uint_eq(F.c.host_starts, 99);
	ck_assert_uint_eq(took, 100 * 1000 * US);
	fake_stop(&F);
}
END_TEST

/* The device keeps its own time across a slow way back: with the way back at 40 and 140 us
 * in turn around a 100 us service, the commands that came back late leave the device behind
 * real time, and the next ones start where it is, so the stream takes a service time per
 * command (200 x 100 us), not the mean of 100 and 140 us. */
START_TEST(test_host_keeps_device_time)
{
	uint64_t took = run_host(200, 100, 0, 140 * US, 40 * US, true);

	ck_assert_uint_eq(F.c.host_starts, 199);
	/* 200 service times, and the last way back (40 us) came after the last completion */
	ck_assert_uint_le(took, 200 * 100 * US + 140 * US);
	ck_assert_uint_ge(took, 200 * 100 * US);
	fake_stop(&F);
}
END_TEST

/* A pause longer than 500 us is the submitter's own: not absorbed, and not learnt. */
START_TEST(test_host_pause_is_kept)
{
	uint64_t took = run_host(50, 1000, 0, 600 * US, 600 * US, true);

	ck_assert_uint_eq(F.c.host_starts, 0);
	ck_assert_uint_eq(F.c.host_ns, 0);
	ck_assert_uint_eq(took, 50 * 1000 * US + 49 * 600 * US);
	fake_stop(&F);
}
END_TEST

/* Off (the core's default), the turnaround adds to every command, as it always did. */
START_TEST(test_host_off_moves_nothing)
{
	uint64_t took = run_host(50, 1000, 0, 80 * US, 80 * US, false);

	ck_assert_uint_eq(F.c.host_starts, 0);
	ck_assert_uint_eq(took, 50 * 1000 * US + 49 * 80 * US);
	fake_stop(&F);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("absorb");
	TCase *tc = tcase_create("absorb");

	tcase_add_test(tc, test_lateness_is_absorbed);
	tcase_add_test(tc, test_stalls_do_not_drag);
	tcase_add_test(tc, test_cut_at_most_half);
	tcase_add_test(tc, test_queued_keep_the_period);
	tcase_add_test(tc, test_off_moves_nothing);
	tcase_add_test(tc, test_host_turnaround_absorbed);
	tcase_add_test(tc, test_host_keeps_the_period);
	tcase_add_test(tc, test_host_pause_is_kept);
	tcase_add_test(tc, test_host_keeps_device_time);
	tcase_add_test(tc, test_host_off_moves_nothing);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
