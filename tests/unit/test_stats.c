/* SPDX-License-Identifier: MIT */
/* Unit tests of core/queue/stats.c: latency quantiles against known distributions, request size
 * buckets, the names and values of the `stats` file and the 17 fields of `stat`. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/clock.h"
#include "core/queue/stats.h"
#include "tests/unit/suite.h"

#define NVAL 100000

static uint64_t vals[NVAL];
static struct lat_hist hist;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Fill the histogram with vals[0..n), and sort vals for the true quantiles. */
static void load(int n)
{
	memset(&hist, 0, sizeof(hist));
	for (int i = 0; i < n; i++)
		lat_hist_add(&hist, vals[i]);
	qsort(vals, (size_t)n, sizeof(vals[0]), cmp_u64);
}

static uint64_t true_quantile(int n, double q)
{
	uint64_t rank = (uint64_t)ceil(q * n);

	if (rank < 1)
		rank = 1;
	return vals[rank - 1];
}

static const double qs[] = {0.5, 0.9, 0.99, 0.999, 1.0};

/* Each standard quantile is within 6.25% of the true one; they are ordered; none is above
 * the max. */
static void check_quantiles(int n)
{
	uint64_t prev = 0;

	ck_assert_uint_eq(hist.count, (uint64_t)n);
	ck_assert_uint_eq(hist.max_us, vals[n - 1]);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t est = lat_hist_quantile(&hist, qs[i]);
		uint64_t want = true_quantile(n, qs[i]);
		double err = fabs((double)est - (double)want);

		ck_assert_msg(err <= 0.0625 * (double)want,
			      "q%.3f: estimate %" PRIu64 ", true %" PRIu64, qs[i], est, want);
		ck_assert_uint_ge(est, prev);
		ck_assert_uint_le(est, hist.max_us);
		prev = est;
	}
}

START_TEST(test_lat_hist_empty_is_zero)
{
	memset(&hist, 0, sizeof(hist));
	ck_assert_uint_eq(lat_hist_quantile(&hist, 0.5), 0);
	ck_assert_uint_eq(lat_hist_quantile(&hist, 0.999), 0);
}
END_TEST

/* The stats file's cumulative bounds are bucket boundaries: the counts under them are exact. */
START_TEST(test_lat_hist_count_below)
{
	static const uint64_t v[] = { 0, 1, 3, 15, 16, 17, 31, 32, 1000, 1023, 1024, 1ull << 30 };

	memset(&hist, 0, sizeof(hist));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		lat_hist_add(&hist, v[i]);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 1), 1);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 2), 2);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 4), 3);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 16), 4);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 32), 7);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 64), 8);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 1024), 10);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 2048), 11);
	ck_assert_uint_eq(lat_hist_count_below(&hist, 1ull << LAT_LE_MAX), 11);
	ck_assert_uint_eq(hist.count, 12);
}
END_TEST

START_TEST(test_lat_hist_exact_below_16us)
{
	for (int i = 0; i < 16; i++)
		vals[i] = (uint64_t)i;
	load(16);
	ck_assert_uint_eq(lat_hist_quantile(&hist, 0.0), 0);
	ck_assert_uint_eq(lat_hist_quantile(&hist, 0.5), 7);
	ck_assert_uint_eq(lat_hist_quantile(&hist, 1.0), 15);
	check_quantiles(16);
}
END_TEST

START_TEST(test_lat_hist_uniform)
{
	for (int i = 0; i < NVAL; i++)
		vals[i] = (uint64_t)(NVAL - i); /* 1 .. 100000, added in reverse */
	load(NVAL);
	check_quantiles(NVAL);
}
END_TEST

START_TEST(test_lat_hist_exponential)
{
	/* Exact quantiles of an exponential distribution, mean 2 ms. */
	for (int i = 0; i < NVAL; i++)
		vals[i] = (uint64_t)llround(-2000.0 * log(1.0 - (i + 0.5) / NVAL));
	load(NVAL);
	check_quantiles(NVAL);
}
END_TEST

START_TEST(test_lat_hist_bimodal)
{
	/* 95% fast around 100 us, 5% slow around 40 ms: p99 is in the slow mode. */
	for (int i = 0; i < NVAL; i++)
		vals[i] = i % 20 ? 90 + (uint64_t)(i % 21) : 40000 + (uint64_t)(i % 997) * 7;
	load(NVAL);
	check_quantiles(NVAL);
	ck_assert_uint_lt(lat_hist_quantile(&hist, 0.9), 200);
	ck_assert_uint_gt(lat_hist_quantile(&hist, 0.99), 35000);
}
END_TEST

START_TEST(test_lat_hist_constant_never_above_max)
{
	for (int i = 0; i < 1000; i++)
		vals[i] = 2047; /* the top of a bucket: its midpoint is lower */
	load(1000);
	check_quantiles(1000);
	for (int i = 0; i < 1000; i++)
		vals[i] = 2048; /* the bottom of a bucket: the midpoint is capped at the max */
	load(1000);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		ck_assert_uint_eq(lat_hist_quantile(&hist, qs[i]), 2048);
}
END_TEST

START_TEST(test_lat_hist_huge_values)
{
	memset(&hist, 0, sizeof(hist));
	lat_hist_add(&hist, UINT64_MAX);
	lat_hist_add(&hist, 1ull << 62);
	ck_assert_uint_eq(hist.count, 2);
	ck_assert_uint_eq(hist.max_us, UINT64_MAX);
	ck_assert_uint_ge(lat_hist_quantile(&hist, 0.5), 1ull << 61);
	ck_assert_uint_le(lat_hist_quantile(&hist, 1.0), UINT64_MAX);
}
END_TEST

START_TEST(test_size_bucket)
{
	ck_assert_uint_eq(size_bucket(0), 0);
	ck_assert_uint_eq(size_bucket(511), 0);
	ck_assert_uint_eq(size_bucket(512), 0);
	ck_assert_uint_eq(size_bucket(1023), 0);
	ck_assert_uint_eq(size_bucket(1024), 1);
	ck_assert_uint_eq(size_bucket(4095), 2);
	ck_assert_uint_eq(size_bucket(4096), 3);
	ck_assert_uint_eq(size_bucket(128 * 1024), 8);
	ck_assert_uint_eq(size_bucket(1024 * 1024), 11);
	ck_assert_uint_eq(size_bucket(16 * 1024 * 1024 - 1), 14);
	ck_assert_uint_eq(size_bucket(16 * 1024 * 1024), 15);
	ck_assert_uint_eq(size_bucket(1ull << 40), SIZE_BUCKETS - 1);
}
END_TEST

/* A snapshot where every counter has a distinct value. */
static void fill_snapshot(struct stats_snapshot *ss)
{
	memset(ss, 0, sizeof(*ss));
	snprintf(ss->name, sizeof(ss->name), "t1");
	ss->now_ns = 5 * NSEC_PER_SEC;
	ss->disk_size = 1ull << 30;
	ss->plugged = 1;
	ss->stopped = 1;
	ss->stop_reason = STOP_BUDGET;
	ss->queued_requests = 7;
	ss->queued_bytes = 28672;
	ss->in_flight = 3;
	ss->cp.queue_depth = 8;
	ss->cp.bandwidth = 20000000;
	ss->qp.max_request_size = 1 << 20;
	for (int op = 0; op < BIO_OP_NR; op++) {
		struct op_stats *st = &ss->s.op[op];
		uint64_t k = 1000 * (uint64_t)(op + 1);

		st->ios = k + 1;
		st->merges_back = k + 2;
		st->merges_front = k + 3;
		st->merges_gap = k + 4;
		st->bios = st->ios + st->merges_back + st->merges_front + st->merges_gap;
		st->bytes = (k + 5) * 512;
		st->ticks_ns = (k + 6) * NSEC_PER_MSEC;
		st->wait_ns = (k + 7) * NSEC_PER_MSEC;
		for (int i = 0; i < 100; i++)
			lat_hist_add(&st->lat, k + (uint64_t)i);
		st->size_hist[3] = k + 8;
	}
	for (int r = 0; r < UNPLUG_NR; r++)
		ss->s.unplugs[r] = 10 + (uint64_t)r;
	ss->s.stops[STOP_SLOTS] = 21;
	ss->s.stops[STOP_BUDGET] = 22;
	ss->s.starts[STOP_SLOTS] = 20;
	ss->s.starts[STOP_BUDGET] = 22;
	ss->s.busy_ns = 31 * NSEC_PER_MSEC;
	ss->s.weighted_ns = 32 * NSEC_PER_MSEC;
}

static char out[65536];

/* The value of @name in the stats text, which must appear exactly once. */
static uint64_t stat_value(const char *text, const char *name)
{
	size_t nl = strlen(name);
	const char *p = text, *hit = NULL;

	while ((p = strstr(p, name))) {
		if ((p == text || p[-1] == '\n') && p[nl] == ' ') {
			ck_assert_msg(!hit, "%s appears twice", name);
			hit = p;
		}
		p += nl;
	}
	ck_assert_msg(hit, "%s missing", name);
	return strtoull(hit + nl + 1, NULL, 10);
}

START_TEST(test_stats_format_has_documented_names)
{
	static const char *const names[] = {
	    "plugged",
	    "stopped",
	    "queued_requests",
	    "queued_bytes",
	    "in_flight",
	    "queue_depth",
	    "unplug_idle",
	    "unplug_threshold",
	    "unplug_size",
	    "unplug_timer",
	    "unplug_flush",
	    "queue_stops",
	    "queue_starts",
	    "queue_stops_slots",
	    "queue_stops_budget",
	    "queue_starts_slots",
	    "queue_starts_budget",
	};
	static const char *const ops[] = {"read", "write", "flush", "discard"};
	static const char *const per_op[] = {
	    "bios",	  "ios",	 "merges",     "merges_back", "merges_front",
	    "merges_gap", "bytes",	 "ticks_us",   "lat_p50_us",  "lat_p90_us",
	    "lat_p99_us", "lat_p999_us", "lat_max_us",
	};
	struct stats_snapshot ss;
	char name[64];
	size_t n;

	fill_snapshot(&ss);
	n = stats_format(&ss, out, sizeof(out));
	ck_assert_uint_lt(n, sizeof(out));
	ck_assert_uint_eq(strlen(out), n);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		stat_value(out, names[i]);
	for (size_t o = 0; o < 4; o++)
		for (size_t i = 0; i < sizeof(per_op) / sizeof(per_op[0]); i++) {
			snprintf(name, sizeof(name), "%s_%s", ops[o], per_op[i]);
			stat_value(out, name);
		}
}
END_TEST

/* Every line is a comment, blank, or "name value" with a lower-case name used once. */
START_TEST(test_stats_format_lines_are_name_value)
{
	struct stats_snapshot ss;
	char *save = NULL, *line, *copy;
	int items = 0;

	fill_snapshot(&ss);
	stats_format(&ss, out, sizeof(out));
	copy = strdup(out);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char nm[128], val[128], extra[8];

		if (line[0] == '#')
			continue;
		ck_assert_msg(sscanf(line, "%127s %127s %7s", nm, val, extra) == 2, "bad line: %s",
			      line);
		ck_assert_msg(strspn(nm, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(nm),
			      "bad name: %s", nm);
		stat_value(out, nm);
		items++;
	}
	free(copy);
	ck_assert_int_gt(items, 50);
}
END_TEST

START_TEST(test_stats_format_values)
{
	struct stats_snapshot ss;

	fill_snapshot(&ss);
	stats_format(&ss, out, sizeof(out));
	ck_assert_uint_eq(stat_value(out, "plugged"), 1);
	ck_assert_uint_eq(stat_value(out, "stopped"), 1);
	ck_assert(strstr(out, "\nstop_reason budget\n"));
	ck_assert_uint_eq(stat_value(out, "queued_requests"), 7);
	ck_assert_uint_eq(stat_value(out, "queued_bytes"), 28672);
	ck_assert_uint_eq(stat_value(out, "in_flight"), 3);
	ck_assert_uint_eq(stat_value(out, "queue_depth"), 8);
	ck_assert_uint_eq(stat_value(out, "unplug_idle"), 10);
	ck_assert_uint_eq(stat_value(out, "unplug_flush"), 14);
	ck_assert_uint_eq(stat_value(out, "queue_stops"), 43);
	ck_assert_uint_eq(stat_value(out, "queue_starts"), 42);
	ck_assert_uint_eq(stat_value(out, "queue_stops_slots"), 21);
	ck_assert_uint_eq(stat_value(out, "queue_stops_budget"), 22);
	ck_assert_uint_eq(stat_value(out, "write_bios"), 2001 + 2002 + 2003 + 2004);
	ck_assert_uint_eq(stat_value(out, "write_ios"), 2001);
	ck_assert_uint_eq(stat_value(out, "write_merges"), 2002 + 2003 + 2004);
	ck_assert_uint_eq(stat_value(out, "write_merges_gap"), 2004);
	ck_assert_uint_eq(stat_value(out, "write_bytes"), 2005 * 512);
	ck_assert_uint_eq(stat_value(out, "write_ticks_us"), 2006 * 1000);
	ck_assert_uint_eq(stat_value(out, "read_lat_max_us"), 1099);
	ck_assert_uint_eq(stat_value(out, "write_size_4k"), 2008);
	for (int op = 0; op < BIO_OP_NR; op++) {
		char n[64];
		uint64_t b, i, m, p[4];

		snprintf(n, sizeof(n), "%s_bios", bio_op_name[op]);
		b = stat_value(out, n);
		snprintf(n, sizeof(n), "%s_ios", bio_op_name[op]);
		i = stat_value(out, n);
		snprintf(n, sizeof(n), "%s_merges", bio_op_name[op]);
		m = stat_value(out, n);
		ck_assert_uint_eq(b, i + m);
		snprintf(n, sizeof(n), "%s_lat_p50_us", bio_op_name[op]);
		p[0] = stat_value(out, n);
		snprintf(n, sizeof(n), "%s_lat_p90_us", bio_op_name[op]);
		p[1] = stat_value(out, n);
		snprintf(n, sizeof(n), "%s_lat_p99_us", bio_op_name[op]);
		p[2] = stat_value(out, n);
		snprintf(n, sizeof(n), "%s_lat_p999_us", bio_op_name[op]);
		p[3] = stat_value(out, n);
		ck_assert(p[0] <= p[1] && p[1] <= p[2] && p[2] <= p[3]);
	}
}
END_TEST

START_TEST(test_stats_format_truncates_safely)
{
	struct stats_snapshot ss;
	char small[100];
	size_t n;

	fill_snapshot(&ss);
	memset(small, 'x', sizeof(small));
	n = stats_format(&ss, small, 64);
	ck_assert_uint_lt(n, 64);
	ck_assert_uint_eq(strlen(small), n);
	ck_assert_int_eq(small[64], 'x');
}
END_TEST

START_TEST(test_stat_has_17_fields)
{
	struct stats_snapshot ss;
	unsigned long long f[18];
	char *p, *end;
	int n = 0;

	fill_snapshot(&ss);
	stats_format_stat(&ss, out, sizeof(out));
	/* One line. */
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
	for (p = out;; p = end) {
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p)
			break;
		ck_assert_int_lt(n, 18);
		f[n++] = v;
	}
	ck_assert_int_eq(n, 17);
	/* /sys/block/<dev>/stat order and units: sectors of 512 B, ms. */
	ck_assert_uint_eq(f[0], 1001);		     /* reads completed */
	ck_assert_uint_eq(f[1], 1002 + 1003 + 1004); /* reads merged */
	ck_assert_uint_eq(f[2], 1005);		     /* sectors read */
	ck_assert_uint_eq(f[3], 1007);		     /* ms reading */
	ck_assert_uint_eq(f[4], 2001);		     /* writes completed */
	ck_assert_uint_eq(f[5], 2002 + 2003 + 2004);
	ck_assert_uint_eq(f[6], 2005);
	ck_assert_uint_eq(f[7], 2007);
	ck_assert_uint_eq(f[8], 7 + 3); /* in flight: queued + in the device */
	ck_assert_uint_eq(f[9], 31);	/* ms with I/O */
	ck_assert_uint_eq(f[10], 32);	/* weighted ms */
	ck_assert_uint_eq(f[11], 4001); /* discards completed */
	ck_assert_uint_eq(f[12], 4002 + 4003 + 4004);
	ck_assert_uint_eq(f[13], 4005);
	ck_assert_uint_eq(f[14], 4007);
	ck_assert_uint_eq(f[15], 3001); /* flushes completed */
	ck_assert_uint_eq(f[16], 3007);
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc;

	tc = tcase_create("lat_hist");
	tcase_add_test(tc, test_lat_hist_empty_is_zero);
	tcase_add_test(tc, test_lat_hist_count_below);
	tcase_add_test(tc, test_lat_hist_exact_below_16us);
	tcase_add_test(tc, test_lat_hist_uniform);
	tcase_add_test(tc, test_lat_hist_exponential);
	tcase_add_test(tc, test_lat_hist_bimodal);
	tcase_add_test(tc, test_lat_hist_constant_never_above_max);
	tcase_add_test(tc, test_lat_hist_huge_values);
	tcase_add_test(tc, test_size_bucket);
	suite_add_tcase(s, tc);

	tc = tcase_create("format");
	tcase_add_test(tc, test_stats_format_has_documented_names);
	tcase_add_test(tc, test_stats_format_lines_are_name_value);
	tcase_add_test(tc, test_stats_format_values);
	tcase_add_test(tc, test_stats_format_truncates_safely);
	tcase_add_test(tc, test_stat_has_17_fields);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(stats_suite());
}
