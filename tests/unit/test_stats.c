/* SPDX-License-Identifier: MIT */
/* Unit tests of core/queue/stats.c: latency quantiles against known distributions, request size
 * buckets, the names and values of the `stats` file and the 17 fields of `stat`. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/clock.h"
#include "core/fault/fault_stats.h"
#include "core/queue/stats.h"
#include "core/stage/chain.h"
#include "core/util/stats_table.h"
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

/* Every table the daemon writes from passes its own check: patterns it can expand, a value
 * source, a unit, help and doc for each name. */
START_TEST(test_stats_tables_check)
{
	char err[256] = "";
	int n = 0;

	ck_assert_msg(!stats_table_check(&queue_stats_table, err, sizeof(err)), "%s", err);
	ck_assert_msg(!stats_table_check(&fault_stats_table, err, sizeof(err)), "%s", err);
	for (size_t i = 0; chain_stages[i]; i++) {
		if (!chain_stages[i]->stats_table)
			continue;
		ck_assert_msg(!stats_table_check(chain_stages[i]->stats_table, err, sizeof(err)),
			      "%s", err);
		n++;
	}
	ck_assert_int_ge(n, 3); /* cache, faults, crc */
}
END_TEST

/* The writer and the patterns agree: every line stats_format() writes matches a pattern of
 * the queue's table, and every pattern is written at least once; the enums' names are the
 * patterns' alternatives. */
START_TEST(test_stats_table_lines_match_patterns)
{
	struct stats_snapshot ss;
	char *save = NULL, *line, *copy, name[64];
	bool *seen = calloc(queue_stats_table.nr, sizeof(*seen));

	fill_snapshot(&ss);
	stats_format(&ss, out, sizeof(out));
	copy = strdup(out);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char nm[128];
		bool hit = false;

		if (line[0] == '#')
			continue;
		ck_assert_int_eq(sscanf(line, "%127s", nm), 1);
		for (size_t i = 0; i < queue_stats_table.nr; i++)
			if (stats_pattern_match(queue_stats_table.names[i].pattern, nm))
				hit = seen[i] = true;
		ck_assert_msg(hit, "%s matches no pattern of the table", nm);
	}
	for (size_t i = 0; i < queue_stats_table.nr; i++)
		ck_assert_msg(seen[i], "%s never written", queue_stats_table.names[i].pattern);
	for (int r = 0; r < UNPLUG_NR; r++) {
		snprintf(name, sizeof(name), "unplug_%s", unplug_reason_name[r]);
		stat_value(out, name);
	}
	for (int r = STOP_SLOTS; r < STOP_NR; r++) {
		snprintf(name, sizeof(name), "queue_starts_%s", stop_reason_name[r]);
		ck_assert_uint_eq(stat_value(out, name), ss.s.starts[r]);
	}
	for (int op = 0; op < BIO_OP_NR; op++) {
		snprintf(name, sizeof(name), "%s_lat_count", bio_op_name[op]);
		ck_assert_uint_eq(stat_value(out, name), ss.s.op[op].lat.count);
	}
	free(copy);
	free(seen);
}
END_TEST

/* A table of our own: fields stepped through arrays, a signed value, a division, a word from
 * a function, N from the producer's numbers, and sections; written in the table's order. */
struct toy {
	uint64_t a[3];
	int64_t level;
	uint64_t ns;
	uint32_t grid[2][3];
	unsigned int nr, id[4];
	uint64_t per[4];
};

static struct stats_value toy_word(const void *snap, const unsigned int *alt)
{
	(void)alt;
	return stats_word(((const struct toy *)snap)->level < 0 ? "debt" : "ok");
}

static unsigned int toy_nr(const void *snap)
{
	return ((const struct toy *)snap)->nr;
}

static unsigned int toy_id(const void *snap, unsigned int k)
{
	return ((const struct toy *)snap)->id[k];
}

#define TF(member) STATS_FIELD(struct toy, member)

static const struct stats_name toy_names[] = {
	{ "t_{x,y,}a", STATS_COUNTER, "count", "h", "d", .section = "one", TF(a[0]),
	  .step = { sizeof(uint64_t) } },
	{ "t_level", STATS_GAUGE, "count", "h", "d", TF(level) },
	{ "t_us", STATS_COUNTER, "µs", "h", "d", TF(ns), .div = 1000 },
	{ "t_word", STATS_GAUGE, "word", "h", "d", .fn = toy_word },
	{ "t_{p,q}_{0,1,2}", STATS_GAUGE, "count", "h", "d", .section = "two", TF(grid[0][0]),
	  .step = { 3 * sizeof(uint32_t), sizeof(uint32_t) } },
	{ "t_N_per", STATS_COUNTER, "count", "h", "d", TF(per[0]), .step = { sizeof(uint64_t) } },
};

static const struct stats_table toy_table = {
	.producer = "toy",
	.names = toy_names,
	.nr = STATS_TABLE_SIZE(toy_names),
	.nr_numbers = toy_nr,
	.number = toy_id,
	.number_label = "toy",
};

START_TEST(test_stats_table_write)
{
	struct toy t = {
		.a = { 1, 2, 3 }, .level = -5, .ns = 7999, .grid = { { 10, 11, 12 }, { 20, 21, 22 } },
		.nr = 2, .id = { 4, 9 }, .per = { 40, 90 },
	};
	char buf[1024], err[128];
	size_t pos = 0;

	ck_assert_int_eq(stats_table_check(&toy_table, err, sizeof(err)), 0);
	stats_table_write(&toy_table, &t, buf, sizeof(buf), &pos);
	ck_assert_str_eq(buf, "\n# one\nt_xa 1\nt_ya 2\nt_a 3\nt_level -5\nt_us 7\nt_word debt\n"
			      "\n# two\nt_p_0 10\nt_p_1 11\nt_p_2 12\nt_q_0 20\nt_q_1 21\nt_q_2 22\n"
			      "t_4_per 40\nt_9_per 90\n");
	ck_assert_uint_eq(pos, strlen(buf));
	/* the writer's names are the matcher's */
	ck_assert(stats_pattern_match("t_N_per", "t_9_per"));
	ck_assert(stats_pattern_match("t_{x,y,}a", "t_a"));
	ck_assert(!stats_pattern_match("t_{x,y,}a", "t_za"));
	ck_assert(!stats_pattern_match("t_N_per", "t__per"));
	/* no numbers: no N lines */
	t.nr = 0;
	pos = 0;
	stats_table_write(&toy_table, &t, buf, sizeof(buf), &pos);
	ck_assert_ptr_null(strstr(buf, "_per"));
	/* cut short, never past the buffer */
	memset(buf, 'x', sizeof(buf));
	pos = 0;
	stats_table_write(&toy_table, &t, buf, 20, &pos);
	ck_assert_uint_lt(strlen(buf), 20);
	ck_assert_int_eq(buf[20], 'x');
}
END_TEST

START_TEST(test_stats_table_check_refuses)
{
	static const struct stats_name three[] = {
		{ "a_{x,y}_{p,q}_{1,2}", STATS_GAUGE, "count", "h", "d", .fn = toy_word },
	};
	static const struct stats_name numbered[] = {
		{ "a_N", STATS_GAUGE, "count", "h", "d", .fn = toy_word },
	};
	static const struct stats_name open_brace[] = {
		{ "a_{x,y", STATS_GAUGE, "count", "h", "d", .fn = toy_word },
	};
	static const struct stats_name too_long[] = {
		{ "a_{x,yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy}_"
		  "{p,qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq}", STATS_GAUGE, "count", "h",
		  "d", .fn = toy_word },
	};
	static const struct stats_name no_help[] = {
		{ "a_b", STATS_GAUGE, "count", "", "d", .fn = toy_word },
	};
	const struct stats_table bad[] = {
		{ .producer = "t", .names = three, .nr = 1 },
		{ .producer = "t", .names = numbered, .nr = 1 },
		{ .producer = "t", .names = open_brace, .nr = 1 },
		{ .producer = "t", .names = no_help, .nr = 1 },
		{ .producer = "t", .names = too_long, .nr = 1 },
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_int_eq(stats_table_check(&bad[i], err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].names[0].pattern), "%s", err);
	}
}
END_TEST

/* The fault stage's lines: per active fault, by its id; none without a fault. */
START_TEST(test_fault_stats_names)
{
	struct fault_stats st = { .nr = 2, .held = 1 };
	char buf[4096];
	size_t pos = 0;

	st.f[0] = (struct fault_stat_one){ .id = 3, .matched = 30, .injected = 31 };
	st.f[1] = (struct fault_stat_one){ .id = 12, .matched = 120, .injected = 121 };
	st.errors[BIO_OP_DISCARD] = 77;
	stats_table_write(&fault_stats_table, &st, buf, sizeof(buf), &pos);
	ck_assert_uint_eq(stat_value(buf, "fault_3_matched"), 30);
	ck_assert_uint_eq(stat_value(buf, "fault_12_injected"), 121);
	ck_assert_uint_eq(stat_value(buf, "discard_fault_errors"), 77);
	ck_assert_uint_eq(stat_value(buf, "faults_active"), 2);
	ck_assert_uint_eq(stat_value(buf, "faults_held"), 1);
	ck_assert_ptr_null(strstr(buf, "fault_0_"));
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
	tcase_add_test(tc, test_stats_tables_check);
	tcase_add_test(tc, test_stats_table_lines_match_patterns);
	tcase_add_test(tc, test_stats_table_write);
	tcase_add_test(tc, test_stats_table_check_refuses);
	tcase_add_test(tc, test_fault_stats_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(stats_suite());
}
