/* SPDX-License-Identifier: MIT */
/* Unit tests of the latency models (core/ctrl/latency.c) on a fake clock: the distributions'
 * percentiles from a fixed seed, the seek curve, zones and rotation of the seek model, the
 * one head, and the write cliff's fill, slow path and drain. */
#undef NDEBUG
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/clock.h"
#include "core/ctrl/latency.h"
#include "core/ctrl/ctrl_params.h"
#include "tests/unit/suite.h"

#define T0 (1000ull * NSEC_PER_SEC)
#define US NSEC_PER_USEC
#define MS NSEC_PER_MSEC
#define GiB (1ull << 30)
#define NSAMPLES 200000

static struct ctrl_params base(void)
{
	struct ctrl_params p;

	memset(&p, 0, sizeof(p));
	ctrl_params_default(&p);
	return p;
}

static struct ctrl_params hdd(void)
{
	struct ctrl_params p = base();

	p.disk_size = GiB;
	p.rpm = 7200;
	p.seek_settle_us = 1000;
	p.seek_full_us = 15000;
	p.media_rate_outer = 200000000;
	p.media_rate_inner = 100000000;
	return p;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Draw NSAMPLES reads and return the value at quantile @q of the sorted draws, in us. */
static double draw_quantile(const struct ctrl_params *p, double q1, double q2, double *v2)
{
	static uint64_t v[NSAMPLES];
	struct latency l;

	latency_init(&l, p, T0);
	for (int i = 0; i < NSAMPLES; i++)
		v[i] = latency_sample_ns(&l, p, BIO_OP_READ);
	qsort(v, NSAMPLES, sizeof(v[0]), cmp_u64);
	*v2 = (double)v[(size_t)(q2 * NSAMPLES)] / US;
	return (double)v[(size_t)(q1 * NSAMPLES)] / US;
}

static void check_dist(enum lat_dist d, enum lat_tail tail, double median, double tailv)
{
	struct ctrl_params p = base();
	double q = tail == LAT_TAIL_P999 ? 0.999 : 0.99, p50, pt;

	p.latency_dist = d;
	p.latency_tail = tail;
	p.latency_us = (uint64_t)median;
	p.latency_tail_us = (uint64_t)tailv;
	p.latency_seed = 42;
	p50 = draw_quantile(&p, 0.5, q, &pt);
	ck_assert_msg(fabs(p50 - median) / median < 0.02, "%s: p50 %.1f, want %.1f",
		      lat_dist_name[d], p50, median);
	ck_assert_msg(fabs(pt - tailv) / tailv < 0.05, "%s: %s %.1f, want %.1f", lat_dist_name[d],
		      lat_tail_name[tail], pt, tailv);
}

START_TEST(test_uniform_percentiles)
{
	check_dist(LAT_DIST_UNIFORM, LAT_TAIL_P99, 1000, 1500);
}
END_TEST

START_TEST(test_normal_percentiles)
{
	check_dist(LAT_DIST_NORMAL, LAT_TAIL_P99, 1000, 1300);
}
END_TEST

START_TEST(test_lognormal_percentiles)
{
	check_dist(LAT_DIST_LOGNORMAL, LAT_TAIL_P99, 100, 300);
	check_dist(LAT_DIST_LOGNORMAL, LAT_TAIL_P999, 100, 1000);
}
END_TEST

START_TEST(test_pareto_percentiles)
{
	check_dist(LAT_DIST_PARETO, LAT_TAIL_P99, 200, 2000);
	check_dist(LAT_DIST_PARETO, LAT_TAIL_P999, 200, 5000);
}
END_TEST

/* Constant, or no tail: every draw is the median, per op. */
START_TEST(test_constant_per_op)
{
	struct ctrl_params p = base();
	struct latency l;

	p.latency_us = 500;
	p.write_latency_us = 700;
	latency_init(&l, &p, T0);
	ck_assert_uint_eq(latency_sample_ns(&l, &p, BIO_OP_READ), 500 * US);
	ck_assert_uint_eq(latency_sample_ns(&l, &p, BIO_OP_WRITE), 700 * US);
	ck_assert_uint_eq(latency_sample_ns(&l, &p, BIO_OP_FLUSH), 500 * US);
	p.latency_dist = LAT_DIST_LOGNORMAL; /* no tail: still the median */
	ck_assert_uint_eq(latency_sample_ns(&l, &p, BIO_OP_READ), 500 * US);
	ck_assert_uint_eq(latency_complete_ns(&l, &p, BIO_OP_READ, 0, 4096, T0), T0 + 500 * US);
}
END_TEST

/* The same seed repeats the draws; another seed does not. */
START_TEST(test_seed_repeats)
{
	struct ctrl_params p = base();
	struct latency a, b, c;
	int same = 0;

	p.latency_dist = LAT_DIST_LOGNORMAL;
	p.latency_us = 100;
	p.latency_tail_us = 400;
	p.latency_seed = 7;
	latency_init(&a, &p, T0);
	latency_init(&b, &p, T0);
	p.latency_seed = 8;
	latency_init(&c, &p, T0);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = latency_sample_ns(&a, &p, BIO_OP_READ);

		ck_assert_uint_eq(x, latency_sample_ns(&b, &p, BIO_OP_READ));
		same += x == latency_sample_ns(&c, &p, BIO_OP_READ);
	}
	ck_assert_int_lt(same, 10);
}
END_TEST

/* settle + (full - settle) x sqrt(distance / size); no movement, no seek. */
START_TEST(test_seek_curve)
{
	struct ctrl_params p = hdd();
	uint64_t prev = 0;

	ck_assert_uint_eq(latency_seek_ns(&p, 0), 0);
	ck_assert_uint_eq(latency_seek_ns(&p, 512), 1000 * US + (uint64_t)(14000 * US * sqrt(512.0 / GiB)));
	ck_assert_uint_eq(latency_seek_ns(&p, GiB / 4), 8000 * US);
	ck_assert_uint_eq(latency_seek_ns(&p, GiB), 15000 * US);
	ck_assert_uint_eq(latency_seek_ns(&p, 2 * GiB), 15000 * US);
	for (uint64_t d = 4096; d <= GiB; d *= 2) {
		uint64_t s = latency_seek_ns(&p, d);

		ck_assert_uint_gt(s, prev);
		prev = s;
	}
}
END_TEST

/* 16 zones from the outer rate at LBA 0 down to the inner rate at the last LBA. */
START_TEST(test_media_rate_zones)
{
	struct ctrl_params p = hdd();
	uint64_t prev = UINT64_MAX;

	ck_assert_uint_eq(latency_media_rate(&p, 0), 200000000);
	ck_assert_uint_eq(latency_media_rate(&p, GiB - 4096), 100000000);
	for (uint64_t off = 0; off < GiB; off += GiB / 64) {
		uint64_t r = latency_media_rate(&p, off);

		ck_assert_uint_le(r, prev);
		prev = r;
	}
	ck_assert_uint_lt(latency_media_rate(&p, GiB / 2), 200000000);
	ck_assert_uint_gt(latency_media_rate(&p, GiB / 2), 100000000);
}
END_TEST

/* The platter turns from time 0: a sector at the start of a track is under the head at
 * every whole turn, half a turn later it is half a turn away. */
START_TEST(test_rotation)
{
	struct ctrl_params p = hdd();
	uint64_t period = 60 * NSEC_PER_SEC / 7200;

	ck_assert_uint_eq(latency_rotation_ns(&p, 0, 1000 * period), 0);
	ck_assert_uint_eq(latency_rotation_ns(&p, 0, 1000 * period + period / 2), period - period / 2);
	ck_assert_uint_lt(latency_rotation_ns(&p, 0, 1000 * period + 1), period);
	ck_assert_uint_gt(latency_rotation_ns(&p, 0, 1000 * period + 1), period - 10);
}
END_TEST

static uint64_t rnd_offset(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return ((*x >> 20) % (GiB / 4096)) * 4096;
}

/* Random 4 KiB reads, one at a time: settle + (full - settle) x 8/15 for the seek, half a
 * turn for the rotation, and a little transfer: 1 / (8.47 + 4.17 + 0.03 ms) = 79 IOPS. */
START_TEST(test_random_qd1_iops)
{
	struct ctrl_params p = hdd();
	struct latency l;
	uint64_t now = T0, x = 1;
	const int n = 20000;
	double iops;

	latency_init(&l, &p, T0);
	for (int i = 0; i < n; i++)
		now = latency_complete_ns(&l, &p, BIO_OP_READ, rnd_offset(&x), 4096, now);
	iops = n / ((double)(now - T0) / NSEC_PER_SEC);
	ck_assert_msg(iops > 76 && iops < 82, "random QD1 IOPS %.1f", iops);
}
END_TEST

/* Sequential commands neither seek nor wait for the platter: the media rate alone (of the
 * first zone: the first 64 MiB of 1 GiB). */
START_TEST(test_sequential_transfer_only)
{
	struct ctrl_params p = hdd();
	struct latency l;
	uint64_t now = T0, off = 0;

	latency_init(&l, &p, T0);
	now = latency_complete_ns(&l, &p, BIO_OP_READ, off, 1 << 20, now); /* head at LBA 0 */
	for (int i = 0; i < 60; i++) {
		uint64_t end;

		off += 1 << 20;
		end = latency_complete_ns(&l, &p, BIO_OP_READ, off, 1 << 20, now);
		ck_assert_uint_eq(end - now, (uint64_t)(1 << 20) * NSEC_PER_SEC / 200000000);
		now = end;
	}
}
END_TEST

/* One head: two commands started together end one after the other. Flushes and
 * discards do not move it. */
START_TEST(test_one_head)
{
	struct ctrl_params p = hdd();
	struct latency l;
	uint64_t a, b;

	latency_init(&l, &p, T0);
	a = latency_complete_ns(&l, &p, BIO_OP_READ, GiB / 2, 4096, T0);
	b = latency_complete_ns(&l, &p, BIO_OP_WRITE, 4096, 4096, T0);
	ck_assert_uint_gt(a, T0 + 1000 * US);
	ck_assert_uint_gt(b, a + 1000 * US);
	ck_assert_uint_eq(latency_complete_ns(&l, &p, BIO_OP_FLUSH, 0, 0, T0), T0);
	ck_assert_uint_eq(latency_position_ns(&l, &p, 8192, b), 0);
	ck_assert_uint_gt(latency_position_ns(&l, &p, GiB / 2, b), 1000 * US);
}
END_TEST

/* A 1 MiB cache that drains in 1 s, 1 MB/s past the cliff: four 256 KiB writes fit, the
 * fifth waits 262 ms, the sixth after it; half a second later half the cache is free. */
START_TEST(test_write_cliff)
{
	struct ctrl_params p = base();
	struct latency l;
	const uint64_t q = 256 * 1024, slow = q * NSEC_PER_SEC / 1000000;

	p.write_cliff_bytes = 4 * q;
	p.write_cliff_window_ms = 1000;
	p.write_cliff_bandwidth = 1000000;
	latency_init(&l, &p, T0);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(latency_complete_ns(&l, &p, BIO_OP_WRITE, 0, q, T0), T0);
	ck_assert_uint_eq(latency_cache_bytes(&l, &p, T0), 4 * q);
	ck_assert_uint_eq(latency_complete_ns(&l, &p, BIO_OP_WRITE, 0, q, T0), T0 + slow);
	ck_assert_uint_eq(latency_complete_ns(&l, &p, BIO_OP_WRITE, 0, q, T0), T0 + 2 * slow);
	ck_assert_uint_eq(l.cliff_bytes, 2 * q);
	/* reads are not affected */
	ck_assert_uint_eq(latency_complete_ns(&l, &p, BIO_OP_READ, 0, q, T0), T0);
	ck_assert_uint_eq(latency_cache_bytes(&l, &p, T0 + 500 * MS), 2 * q);
	ck_assert_uint_eq(latency_complete_ns(&l, &p, BIO_OP_WRITE, 0, 2 * q, T0 + 600 * MS),
			  T0 + 600 * MS);
	ck_assert_uint_eq(latency_cache_bytes(&l, &p, T0 + 10 * NSEC_PER_SEC), 0);
}
END_TEST

/* The stop's lifting of the limits leaves no model on: no service time, seek model or
 * write cliff. */
START_TEST(test_lift_limits)
{
	struct ctrl_params p;

	ctrl_params_default(&p);
	p.latency_us = p.read_latency_us = p.write_latency_us = p.flush_latency_us = 500;
	p.latency_tail_us = p.read_latency_tail_us = p.write_latency_tail_us = 2000;
	p.flush_latency_tail_us = 2000;
	p.rpm = 7200;
	p.media_rate_outer = 200000000;
	p.media_rate_inner = 100000000;
	p.write_cliff_bytes = 1 << 20;
	p.bandwidth = p.read_bandwidth = p.write_bandwidth = 1 << 20;
	p.iops = p.read_iops = p.write_iops = 100;
	p.credit_capacity = 1000;
	ck_assert(latency_is_on(&p));
	ctrl_params_lift_limits(&p);
	ck_assert(!latency_is_on(&p));
	ck_assert_uint_eq(p.bandwidth + p.read_bandwidth + p.write_bandwidth, 0);
	ck_assert_uint_eq(p.iops + p.read_iops + p.write_iops + p.credit_capacity, 0);
	ck_assert_uint_eq(p.latency_tail_us + p.read_latency_tail_us + p.write_latency_tail_us +
				  p.flush_latency_tail_us, 0);
}
END_TEST

static Suite *latency_suite(void)
{
	Suite *s = suite_create("latency");
	TCase *tc = tcase_create("models");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_uniform_percentiles);
	tcase_add_test(tc, test_normal_percentiles);
	tcase_add_test(tc, test_lognormal_percentiles);
	tcase_add_test(tc, test_pareto_percentiles);
	tcase_add_test(tc, test_constant_per_op);
	tcase_add_test(tc, test_seed_repeats);
	tcase_add_test(tc, test_seek_curve);
	tcase_add_test(tc, test_media_rate_zones);
	tcase_add_test(tc, test_rotation);
	tcase_add_test(tc, test_random_qd1_iops);
	tcase_add_test(tc, test_sequential_transfer_only);
	tcase_add_test(tc, test_one_head);
	tcase_add_test(tc, test_write_cliff);
	tcase_add_test(tc, test_lift_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(latency_suite());
}
