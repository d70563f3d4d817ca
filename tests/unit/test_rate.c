/* SPDX-License-Identifier: MIT */
/* Unit tests of the token buckets (core/ctrl/rate.c), driven by a fake clock: refill, debt and the
 * wait it implies, burst, per-direction and total limits, reconfiguration, long-run exactness. */
#include <string.h>

#include "core/util/clock.h"
#include "core/ctrl/ctrl_params.h"
#include "core/ctrl/rate.h"
#include "tests/unit/suite.h"

#define T0   ((int64_t)(1000 * NSEC_PER_SEC))
#define SEC  ((int64_t)NSEC_PER_SEC)
#define MSEC ((int64_t)NSEC_PER_MSEC)

static struct ctrl_params unlimited(void)
{
	struct ctrl_params p;

	memset(&p, 0, sizeof(p));
	ctrl_params_default(&p);
	p.burst_ms = 0;
	return p;
}

/* ready_at of a command of @op at @now, or @now when it may start. */
static int64_t ready(const struct rate *r, enum bio_op op, int64_t now)
{
	int64_t at = -1;
	bool ok = rate_has_budget(r, op, now, &at);

	ck_assert_int_eq(ok, at <= now);
	return ok ? now : at;
}

START_TEST(test_zero_means_unlimited)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	rate_init(&r, &p, T0);
	ck_assert(!rate_is_limited(&r));
	for (int i = 0; i < 1000; i++) {
		ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0), T0);
		rate_charge(&r, BIO_OP_WRITE, 1u << 30, T0);
	}
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0);
	ck_assert_int_eq(ready(&r, BIO_OP_FLUSH, T0), T0);
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0), 0);
	ck_assert_int_eq(rate_bucket_level(&r.iops[RATE_WRITE], T0), 0);
}
END_TEST

START_TEST(test_exact_refill)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.bandwidth = 1000; /* B/s: 1 ms per byte */
	rate_init(&r, &p, T0);
	ck_assert(rate_is_limited(&r));
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0), T0);
	rate_charge(&r, BIO_OP_WRITE, 250, T0);
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0), -250);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0), T0 + 250 * MSEC);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + 250 * MSEC - 1), T0 + 250 * MSEC);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + 250 * MSEC), T0 + 250 * MSEC);
	/* Refill is linear: 100 ms gives back 100 bytes. */
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0 + 150 * MSEC), -100);
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0 + 250 * MSEC), 0);
}
END_TEST

/* A command bigger than a whole burst still starts (no starvation) and leaves a debt whose
 * size is the wait for the next command. */
START_TEST(test_debt_sets_ready_at)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.write_bandwidth = 4096;
	p.burst_ms = 100;
	rate_init(&r, &p, T0);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0), T0);
	rate_charge(&r, BIO_OP_WRITE, 1024 * 1024, T0);
	/* 409.6 B of burst saved, 1 MiB spent: 1048166.4 B of debt at 4096 B/s. */
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_WRITE], T0), -1048166);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0), T0 + 256 * SEC - 100 * MSEC);
	/* The read direction has no limit of its own. */
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0);
}
END_TEST

START_TEST(test_burst_caps_saved_budget)
{
	struct ctrl_params p = unlimited();
	struct rate r;
	int n = 0;

	p.iops = 1000;
	p.burst_ms = 10; /* at most 10 commands saved */
	rate_init(&r, &p, T0);
	/* Idle for an hour: still only the burst. */
	ck_assert_int_eq(rate_bucket_level(&r.iops[RATE_ALL], T0 + 3600 * SEC), 10);
	while (ready(&r, BIO_OP_READ, T0 + 3600 * SEC) == T0 + 3600 * SEC && n < 1000) {
		rate_charge(&r, BIO_OP_READ, 4096, T0 + 3600 * SEC);
		n++;
	}
	/* 10 saved commands and the one that drives the bucket into debt. */
	ck_assert_int_eq(n, 11);
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0 + 3600 * SEC), T0 + 3600 * SEC + MSEC);
}
END_TEST

START_TEST(test_burst_zero_allows_one_command)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.iops = 100;
	rate_init(&r, &p, T0);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + 60 * SEC), T0 + 60 * SEC);
	rate_charge(&r, BIO_OP_WRITE, 512, T0 + 60 * SEC);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + 60 * SEC), T0 + 60 * SEC + 10 * MSEC);
}
END_TEST

START_TEST(test_direction_and_total_limits_both_apply)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.bandwidth = 1000;
	p.write_bandwidth = 500;
	p.read_bandwidth = 2000;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_WRITE, 500, T0);
	/* The write bucket (1 s) is the tighter one for writes; the total (0.5 s) for reads. */
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0), T0 + SEC);
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0 + 500 * MSEC);
	/* A read charges its own bucket and the total, never the write bucket. */
	rate_charge(&r, BIO_OP_READ, 1000, T0 + 500 * MSEC);
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_READ], T0 + 500 * MSEC), -1000);
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_WRITE], T0 + 500 * MSEC), -250);
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0 + 500 * MSEC), T0 + 1500 * MSEC);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + SEC), T0 + 1500 * MSEC);
}
END_TEST

START_TEST(test_iops_counts_commands_not_bytes)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.write_iops = 10;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_WRITE, 1u << 20, T0);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0), T0 + 100 * MSEC);
	rate_charge(&r, BIO_OP_WRITE, 512, T0 + 100 * MSEC);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + 100 * MSEC), T0 + 200 * MSEC);
}
END_TEST

/* Flush and discard count as writes for IOPS; only reads and writes move bytes. */
START_TEST(test_flush_and_discard_use_write_iops_only)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.write_iops = 10;
	p.bandwidth = 1000;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_DISCARD, 1u << 30, T0);
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0), 0);
	ck_assert_int_eq(ready(&r, BIO_OP_FLUSH, T0), T0 + 100 * MSEC);
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0);
	rate_charge(&r, BIO_OP_FLUSH, 0, T0 + 100 * MSEC);
	ck_assert_int_eq(ready(&r, BIO_OP_DISCARD, T0 + 100 * MSEC), T0 + 200 * MSEC);
}
END_TEST

START_TEST(test_reconfigure_keeps_debt_in_units)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.bandwidth = 1000;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_WRITE, 3000, T0); /* 3000 B of debt: 3 s at 1000 B/s */
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0 + SEC), -2000);
	p.bandwidth = 4000;
	rate_reconfigure(&r, &p, T0 + SEC);
	/* Still 2000 B owed, now paid at 4000 B/s: 0.5 s. */
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0 + SEC), -2000);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + SEC), T0 + 1500 * MSEC);
	p.bandwidth = 500;
	rate_reconfigure(&r, &p, T0 + 1250 * MSEC);
	ck_assert_int_eq(rate_bucket_level(&r.bw[RATE_ALL], T0 + 1250 * MSEC), -1000);
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, T0 + 1250 * MSEC), T0 + 3250 * MSEC);
}
END_TEST

START_TEST(test_reconfigure_to_unlimited_and_back)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.iops = 1;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_READ, 0, T0);
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0 + SEC);
	p.iops = 0;
	rate_reconfigure(&r, &p, T0);
	ck_assert(!rate_is_limited(&r));
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0);
	p.iops = 2;
	p.burst_ms = 1000;
	rate_reconfigure(&r, &p, T0);
	/* A new limit starts full: a burst's worth, 2 commands. */
	ck_assert_int_eq(rate_bucket_level(&r.iops[RATE_ALL], T0), 2);
}
END_TEST

START_TEST(test_reconfigure_same_rate_changes_nothing)
{
	struct ctrl_params p = unlimited();
	struct rate r;
	struct rate_bucket before;

	p.bandwidth = 3;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_WRITE, 1, T0); /* leaves a remainder */
	before = r.bw[RATE_ALL];
	rate_reconfigure(&r, &p, T0 + 7);
	ck_assert_int_eq(r.bw[RATE_ALL].tat, before.tat);
	ck_assert_uint_eq(r.bw[RATE_ALL].rem, before.rem);
	ck_assert_uint_eq(r.bw[RATE_ALL].rate, 3);
}
END_TEST

/* 1,000,000 one-byte commands at 3 B/s take exactly 10^15 / 3 ns: the remainder of each
 * division is carried, so nothing drifts. */
START_TEST(test_long_run_exact_with_remainder)
{
	struct ctrl_params p = unlimited();
	struct rate r;
	int64_t now = T0;

	p.bandwidth = 3;
	p.iops = 3;
	rate_init(&r, &p, T0);
	for (int i = 0; i < 1000000; i++) {
		now = ready(&r, BIO_OP_WRITE, now); /* start each command as soon as allowed */
		rate_charge(&r, BIO_OP_WRITE, 1, now);
	}
	/* The last command started at (10^6 - 1) / 3 s; the bucket empties at 10^6 / 3 s. */
	ck_assert_int_eq(now - T0, (int64_t)(999999ull * NSEC_PER_SEC / 3));
	ck_assert_int_eq(ready(&r, BIO_OP_WRITE, now),
			 T0 + (int64_t)(1000000ull * NSEC_PER_SEC / 3));
	ck_assert_int_eq(r.bw[RATE_ALL].tat, r.iops[RATE_ALL].tat);
	ck_assert_uint_eq(r.bw[RATE_ALL].rem, (1000000ull * NSEC_PER_SEC) % 3);
}
END_TEST

/* A rate that does not divide 10^9: the wait after n bytes is floor(n * 10^9 / rate). */
START_TEST(test_charges_sum_like_one_charge)
{
	struct ctrl_params p = unlimited();
	struct rate a, b;

	p.bandwidth = 7777777;
	rate_init(&a, &p, T0);
	rate_init(&b, &p, T0);
	for (int i = 0; i < 12345; i++)
		rate_charge(&a, BIO_OP_READ, 4096 + (uint64_t)i, T0);
	rate_charge(&b, BIO_OP_READ, 12345ull * 4096 + 12345ull * 12344 / 2, T0);
	ck_assert_int_eq(a.bw[RATE_ALL].tat, b.bw[RATE_ALL].tat);
	ck_assert_int_eq(ready(&a, BIO_OP_READ, T0), ready(&b, BIO_OP_READ, T0));
}
END_TEST

/* controller.iops_size: up to SIZE counts one I/O, larger ceil(len / SIZE); flushes and
 * discards count one. */
START_TEST(test_cost_rule_splits)
{
	ck_assert_uint_eq(rate_ios(0, BIO_OP_WRITE, 16u << 20), 1);
	ck_assert_uint_eq(rate_ios(256 * 1024, BIO_OP_READ, 4096), 1);
	ck_assert_uint_eq(rate_ios(256 * 1024, BIO_OP_READ, 256 * 1024), 1);
	ck_assert_uint_eq(rate_ios(256 * 1024, BIO_OP_READ, 256 * 1024 + 1), 2);
	ck_assert_uint_eq(rate_ios(256 * 1024, BIO_OP_WRITE, 1u << 20), 4);
	ck_assert_uint_eq(rate_ios(256 * 1024, BIO_OP_WRITE, (1u << 20) + 512), 5);
	ck_assert_uint_eq(rate_ios(256 * 1024, BIO_OP_DISCARD, 1u << 20), 1);
	ck_assert_uint_eq(rate_ios(256 * 1024, BIO_OP_FLUSH, 0), 1);
}
END_TEST

/* The IOPS buckets are charged by the cost rule: a 1 MiB write at 256 KiB per I/O costs four
 * I/Os, so at 100 IOPS the next command waits 40 ms. */
START_TEST(test_cost_rule_charges_buckets)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.iops = 100;
	p.iops_size = 256 * 1024;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_WRITE, 1u << 20, T0);
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0 + 40 * MSEC);
	ck_assert_int_eq(rate_bucket_level(&r.iops[RATE_ALL], T0), -4);
	rate_charge(&r, BIO_OP_READ, 4096, T0 + 40 * MSEC);
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0 + 40 * MSEC), T0 + 50 * MSEC);
}
END_TEST

/* gp2's rule: baseline = max(least, per GiB x size); a baseline at or above the burst rate
 * makes it the IOPS limit and drops the credits. */
START_TEST(test_credit_baseline_by_size)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.iops = 3000;
	p.credit_capacity = 5400000;
	p.credit_baseline_iops = 100;
	p.credit_iops_per_gib = 3;
	p.disk_size = 10ull << 30;
	ck_assert_uint_eq(rate_credit_baseline(&p), 100);
	p.disk_size = 100ull << 30;
	ck_assert_uint_eq(rate_credit_baseline(&p), 300);
	rate_init(&r, &p, T0);
	ck_assert_uint_eq(r.credit.capacity, 5400000);
	ck_assert_uint_eq(r.credit.b.rate, 300);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, T0), 5400000); /* starts full */
	ck_assert_uint_eq(rate_credit_earn_rate(&r, T0), 0);	       /* full: earns nothing */
	p.disk_size = 2000ull << 30;
	rate_init(&r, &p, T0);
	ck_assert_uint_eq(r.credit.capacity, 0);
	ck_assert_uint_eq(r.iops[RATE_ALL].rate, 6000);
}
END_TEST

/* A full bucket of C credits with baseline B and burst rate R runs at R for C / (R - B)
 * seconds, then at B; by time t it has started C + B t commands (one more: the last may
 * start at a level of 0). */
START_TEST(test_credit_burst_then_baseline)
{
	struct ctrl_params p = unlimited();
	struct rate r;
	int64_t now = T0, prev = T0, drop = 0;
	int n = 0;

	p.iops = 3000;
	p.credit_capacity = 300;
	p.credit_baseline_iops = 100;
	rate_init(&r, &p, T0);
	for (;;) {
		now = ready(&r, BIO_OP_READ, now);
		if (now >= T0 + 2 * SEC)
			break;
		if (!drop && now - prev > 5 * MSEC)
			drop = prev - T0;
		rate_charge(&r, BIO_OP_READ, 4096, now);
		prev = now;
		n++;
	}
	ck_assert_int_ge(n, 499);
	ck_assert_int_le(n, 502);
	/* 300 / (3000 - 100) s = 103.4 ms of burst */
	ck_assert_int_ge(drop, 100 * MSEC);
	ck_assert_int_le(drop, 107 * MSEC);
	/* spent everything it earned: spending at the baseline rate, earning it */
	ck_assert_uint_eq(r.credit.spent, (uint64_t)n);
	ck_assert_uint_eq(rate_credit_earn_rate(&r, now), 100);
	ck_assert_uint_ge(rate_credit_spend_rate(&r, now), 95);
	ck_assert_uint_le(rate_credit_spend_rate(&r, now), 105);
	/* idle for 1 s earns 100 credits, idle for long refills it to the capacity only */
	ck_assert_int_le(rate_bucket_level(&r.credit.b, now), 1);
	ck_assert_int_ge(rate_bucket_level(&r.credit.b, now + SEC), 99);
	ck_assert_int_le(rate_bucket_level(&r.credit.b, now + SEC), 101);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, now + 100 * SEC), 300);
	ck_assert_uint_eq(rate_credit_earn_rate(&r, now + 100 * SEC), 0);
	ck_assert_uint_eq(rate_credit_spend_rate(&r, now + 100 * SEC), 0);
}
END_TEST

/* The cost rule applies to the credits too: a 1 MiB read at 256 KiB per I/O spends four. */
START_TEST(test_credit_spent_by_cost_rule)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.credit_capacity = 10;
	p.credit_baseline_iops = 1;
	p.iops_size = 256 * 1024;
	rate_init(&r, &p, T0);
	rate_charge(&r, BIO_OP_READ, 1u << 20, T0);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, T0), 6);
	rate_charge(&r, BIO_OP_READ, 2u << 20, T0);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, T0), -2);
	ck_assert(!rate_has_budget(&r, BIO_OP_READ, T0, &(int64_t){ 0 }));
	ck_assert_int_eq(ready(&r, BIO_OP_READ, T0), T0 + 2 * SEC);
}
END_TEST

/* A reload keeps the balance; a new bucket starts full; dropping the capacity drops it. */
START_TEST(test_credit_reconfigure)
{
	struct ctrl_params p = unlimited();
	struct rate r;

	p.credit_capacity = 1000;
	p.credit_baseline_iops = 10;
	rate_init(&r, &p, T0);
	for (int i = 0; i < 600; i++)
		rate_charge(&r, BIO_OP_WRITE, 4096, T0);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, T0), 400);
	p.credit_baseline_iops = 20;
	rate_reconfigure(&r, &p, T0);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, T0), 400);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, T0 + SEC), 420);
	p.credit_capacity = 0;
	p.credit_baseline_iops = 0;
	rate_reconfigure(&r, &p, T0);
	ck_assert(!rate_is_limited(&r));
	p.credit_capacity = 50;
	p.credit_baseline_iops = 5;
	rate_reconfigure(&r, &p, T0);
	ck_assert_int_eq(rate_bucket_level(&r.credit.b, T0), 50);
}
END_TEST

static Suite *rate_suite(void)
{
	Suite *s = suite_create("rate");
	TCase *tc = tcase_create("buckets");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_zero_means_unlimited);
	tcase_add_test(tc, test_exact_refill);
	tcase_add_test(tc, test_debt_sets_ready_at);
	tcase_add_test(tc, test_burst_caps_saved_budget);
	tcase_add_test(tc, test_burst_zero_allows_one_command);
	tcase_add_test(tc, test_direction_and_total_limits_both_apply);
	tcase_add_test(tc, test_iops_counts_commands_not_bytes);
	tcase_add_test(tc, test_flush_and_discard_use_write_iops_only);
	tcase_add_test(tc, test_reconfigure_keeps_debt_in_units);
	tcase_add_test(tc, test_reconfigure_to_unlimited_and_back);
	tcase_add_test(tc, test_reconfigure_same_rate_changes_nothing);
	tcase_add_test(tc, test_long_run_exact_with_remainder);
	tcase_add_test(tc, test_charges_sum_like_one_charge);
	tcase_add_test(tc, test_cost_rule_splits);
	tcase_add_test(tc, test_cost_rule_charges_buckets);
	tcase_add_test(tc, test_credit_baseline_by_size);
	tcase_add_test(tc, test_credit_burst_then_baseline);
	tcase_add_test(tc, test_credit_spent_by_cost_rule);
	tcase_add_test(tc, test_credit_reconfigure);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(rate_suite());
}
