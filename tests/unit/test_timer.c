/* SPDX-License-Identifier: MIT */
/* Unit tests of the timer (core/util/timer.c): deadline order, re-arm, cancel, run_due's count,
 * callbacks that re-arm, and the threaded timer never firing early. */
#include <stdlib.h>
#include <time.h>

#include "core/util/barrier.h"
#include "core/util/clock.h"
#include "core/util/timer.h"
#include "tests/unit/suite.h"

#define NENT 1000

struct rec {
	struct timer_entry e;
	int id;
	int fired;
	uint64_t fired_now;  /* the now passed to the callback */
	uint64_t fired_real; /* CLOCK_MONOTONIC when it ran (threaded test) */
	struct timer *t;
	uint64_t rearm_to; /* re-arm itself once for this deadline, if set */
};

static struct rec ents[NENT];
static int order[NENT];
static int norder;

static void rec_fn(struct timer_entry *e, uint64_t now)
{
	struct rec *r = (struct rec *)e;

	atomic_add_return_mb(r->fired, 1); /* the test thread polls it with smp_load_mb */
	r->fired_now = now;
	r->fired_real = clock_now_ns();
	order[norder++] = r->id;
	if (r->rearm_to) {
		uint64_t d = r->rearm_to;

		r->rearm_to = 0;
		timer_arm(r->t, &r->e, d);
	}
}

static void setup_ents(struct timer *t, int n)
{
	norder = 0;
	for (int i = 0; i < n; i++) {
		timer_entry_init(&ents[i].e, rec_fn);
		ents[i].id = i;
		ents[i].fired = 0;
		ents[i].t = t;
		ents[i].rearm_to = 0;
	}
}

START_TEST(test_fires_in_deadline_order)
{
	struct timer t;

	ck_assert_int_eq(timer_init(&t, false), 0);
	setup_ents(&t, 4);
	timer_arm(&t, &ents[0].e, 300);
	timer_arm(&t, &ents[1].e, 100);
	timer_arm(&t, &ents[2].e, 400);
	timer_arm(&t, &ents[3].e, 200);
	ck_assert_uint_eq(timer_next_deadline(&t), 100);
	ck_assert_int_eq(timer_run_due(&t, 1000), 4);
	ck_assert_int_eq(norder, 4);
	ck_assert_int_eq(order[0], 1);
	ck_assert_int_eq(order[1], 3);
	ck_assert_int_eq(order[2], 0);
	ck_assert_int_eq(order[3], 2);
	ck_assert_uint_eq(ents[0].fired_now, 1000);
	timer_destroy(&t);
}
END_TEST

START_TEST(test_run_due_returns_count_and_leaves_future)
{
	struct timer t;

	ck_assert_int_eq(timer_init(&t, false), 0);
	setup_ents(&t, 3);
	timer_arm(&t, &ents[0].e, 10);
	timer_arm(&t, &ents[1].e, 20);
	timer_arm(&t, &ents[2].e, 30);
	ck_assert_int_eq(timer_run_due(&t, 9), 0);
	ck_assert_int_eq(timer_run_due(&t, 20), 2); /* a deadline equal to now is due */
	ck_assert(!timer_is_armed(&t, &ents[0].e));
	ck_assert(timer_is_armed(&t, &ents[2].e));
	ck_assert_uint_eq(timer_next_deadline(&t), 30);
	ck_assert_int_eq(timer_run_due(&t, 29), 0);
	ck_assert_int_eq(timer_run_due(&t, 30), 1);
	ck_assert_int_eq(timer_run_due(&t, UINT64_MAX), 0);
	ck_assert_uint_eq(timer_next_deadline(&t), UINT64_MAX);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ents[i].fired, 1);
	ck_assert_uint_eq(t.fired, 3);
	timer_destroy(&t);
}
END_TEST

START_TEST(test_rearm_moves_entry)
{
	struct timer t;

	ck_assert_int_eq(timer_init(&t, false), 0);
	setup_ents(&t, 2);
	timer_arm(&t, &ents[0].e, 100);
	timer_arm(&t, &ents[1].e, 200);
	timer_arm(&t, &ents[0].e, 300); /* later */
	ck_assert_int_eq(t.nr, 2);
	ck_assert_uint_eq(timer_next_deadline(&t), 200);
	ck_assert_int_eq(timer_run_due(&t, 250), 1);
	ck_assert_int_eq(order[0], 1);
	ck_assert_int_eq(ents[0].fired, 0);
	timer_arm(&t, &ents[0].e, 50); /* earlier than before */
	ck_assert_int_eq(t.nr, 1);
	ck_assert_int_eq(timer_run_due(&t, 250), 1);
	ck_assert_int_eq(ents[0].fired, 1);
	ck_assert_int_eq(timer_run_due(&t, 1000), 0);
	timer_destroy(&t);
}
END_TEST

START_TEST(test_cancel_disarms)
{
	struct timer t;

	ck_assert_int_eq(timer_init(&t, false), 0);
	setup_ents(&t, 3);
	timer_arm(&t, &ents[0].e, 10);
	timer_arm(&t, &ents[1].e, 20);
	timer_arm(&t, &ents[2].e, 30);
	timer_cancel(&t, &ents[0].e);
	ck_assert(!timer_is_armed(&t, &ents[0].e));
	timer_cancel(&t, &ents[0].e); /* cancelling twice is harmless */
	ck_assert_uint_eq(timer_next_deadline(&t), 20);
	ck_assert_int_eq(timer_run_due(&t, 100), 2);
	ck_assert_int_eq(ents[0].fired, 0);
	ck_assert_int_eq(order[0], 1);
	ck_assert_int_eq(order[1], 2);
	timer_cancel(&t, &ents[1].e); /* after it fired: no-op */
	timer_destroy(&t);
}
END_TEST

START_TEST(test_equal_deadlines_all_fire)
{
	struct timer t;

	ck_assert_int_eq(timer_init(&t, false), 0);
	setup_ents(&t, 50);
	for (int i = 0; i < 50; i++)
		timer_arm(&t, &ents[i].e, 777);
	ck_assert_int_eq(timer_run_due(&t, 776), 0);
	ck_assert_int_eq(timer_run_due(&t, 777), 50);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(ents[i].fired, 1);
	timer_destroy(&t);
}
END_TEST

/* A callback that re-arms its entry for later is not run again by the same call. */
START_TEST(test_callback_may_rearm_later)
{
	struct timer t;

	ck_assert_int_eq(timer_init(&t, false), 0);
	setup_ents(&t, 1);
	ents[0].rearm_to = 500;
	timer_arm(&t, &ents[0].e, 100);
	ck_assert_int_eq(timer_run_due(&t, 200), 1);
	ck_assert(timer_is_armed(&t, &ents[0].e));
	ck_assert_uint_eq(timer_next_deadline(&t), 500);
	ck_assert_int_eq(timer_run_due(&t, 500), 1);
	ck_assert_int_eq(ents[0].fired, 2);
	timer_destroy(&t);
}
END_TEST

/* Many entries with random deadlines, some cancelled, some moved: the rest fire once each
 * in non-decreasing deadline order, and run_due counts them. */
START_TEST(test_heap_order_random)
{
	struct timer t;
	uint64_t deadline[NENT];
	uint32_t x = 99;
	int live = 0, n;

	ck_assert_int_eq(timer_init(&t, false), 0);
	setup_ents(&t, NENT);
	for (int i = 0; i < NENT; i++) {
		x = x * 1664525u + 1013904223u;
		deadline[i] = 1000 + (x >> 12) % 100000;
		timer_arm(&t, &ents[i].e, deadline[i]);
	}
	for (int i = 0; i < NENT; i++) {
		x = x * 1664525u + 1013904223u;
		if ((x >> 20) % 3 == 0) {
			timer_cancel(&t, &ents[i].e);
			deadline[i] = 0;
		} else if ((x >> 20) % 3 == 1) {
			deadline[i] = 1000 + (x >> 8) % 100000;
			timer_arm(&t, &ents[i].e, deadline[i]);
		}
	}
	for (int i = 0; i < NENT; i++)
		live += deadline[i] != 0;
	ck_assert_int_eq(t.nr, live);
	n = timer_run_due(&t, 50000);
	n += timer_run_due(&t, UINT64_MAX - 1);
	ck_assert_int_eq(n, live);
	ck_assert_int_eq(norder, live);
	for (int i = 1; i < norder; i++)
		ck_assert_uint_le(deadline[order[i - 1]], deadline[order[i]]);
	for (int i = 0; i < NENT; i++)
		ck_assert_int_eq(ents[i].fired, deadline[i] ? 1 : 0);
	timer_destroy(&t);
}
END_TEST

START_TEST(test_threaded_timer_never_fires_early)
{
	struct timer t;
	struct timespec ms = {0, 1000000};
	uint64_t d[3];
	int i;

	ck_assert_int_eq(timer_init(&t, true), 0);
	setup_ents(&t, 3);
	d[0] = clock_now_ns() + 3 * NSEC_PER_MSEC;
	d[1] = d[0] - 2 * NSEC_PER_MSEC;
	d[2] = d[0] + 20 * NSEC_PER_MSEC;
	for (i = 0; i < 3; i++)
		timer_arm(&t, &ents[i].e, d[i]);
	timer_cancel(&t, &ents[2].e);
	for (i = 0; i < 10000; i++) {
		if (smp_load_mb(ents[0].fired) && smp_load_mb(ents[1].fired))
			break;
		nanosleep(&ms, NULL);
	}
	/* Joined below: the callbacks' plain writes are visible after timer_destroy(). */
	timer_destroy(&t);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(ents[i].fired, 1);
		ck_assert_uint_ge(ents[i].fired_real, d[i]);
		ck_assert_uint_ge(ents[i].fired_now, d[i]);
	}
	ck_assert_int_eq(order[0], 1);
	ck_assert_int_eq(ents[2].fired, 0);
}
END_TEST

static Suite *timer_suite(void)
{
	Suite *s = suite_create("timer");
	TCase *tc = tcase_create("timer");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fires_in_deadline_order);
	tcase_add_test(tc, test_run_due_returns_count_and_leaves_future);
	tcase_add_test(tc, test_rearm_moves_entry);
	tcase_add_test(tc, test_cancel_disarms);
	tcase_add_test(tc, test_equal_deadlines_all_fire);
	tcase_add_test(tc, test_callback_may_rearm_later);
	tcase_add_test(tc, test_heap_order_random);
	tcase_add_test(tc, test_threaded_timer_never_fires_early);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(timer_suite());
}
