/* SPDX-License-Identifier: MIT */
/* Unit tests of the crash states of a write log (core/crash/wlog_states.c) and of the extent
 * overlay they are built on (core/crash/extmap.c): the overlay against a byte model, windows and
 * their states counted and decoded one to one, the states' contents, marks, ignored flushes,
 * discards, and the seeded sample. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cache/cache.h"
#include "core/crash/extmap.h"
#include "core/util/prng.h"
#include "core/crash/wlog_states.h"
#include "tests/unit/suite.h"

#define PATH_TEMPLATE "/tmp/plugdisk-test-wstates.XXXXXX"
static char path[] = PATH_TEMPLATE;

static void make_path(void)
{
	make_tmp_file(path, sizeof(path), PATH_TEMPLATE);
}

START_TEST(test_extmap_matches_a_byte_model)
{
	enum { SIZE = 4096 };
	static uint8_t src[SIZE], model[SIZE], got[SIZE];
	struct extmap m, c;
	uint64_t rng = 42;

	for (int i = 0; i < SIZE; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	extmap_init(&m);
	extmap_init(&c);
	memset(model, 0xee, sizeof(model));
	for (int round = 0; round < 2000; round++) {
		uint64_t off = prng_splitmix64(&rng) % SIZE;
		uint64_t len = 1 + prng_splitmix64(&rng) % (SIZE - off < 300 ? SIZE - off : 300);
		bool zeros = prng_splitmix64(&rng) % 5 == 0;
		uint64_t from = prng_splitmix64(&rng) % (SIZE - len + 1);

		ck_assert_int_eq(extmap_put(&m, off, len, zeros ? NULL : src + from), 0);
		if (zeros)
			memset(model + off, 0, len);
		else
			memcpy(model + off, src + from, len);
		if (round % 97 == 0) { /* reads of any range see the model; uncovered bytes stay */
			uint64_t a = prng_splitmix64(&rng) % SIZE, b = prng_splitmix64(&rng) % SIZE;
			uint64_t s = a < b ? a : b, e = a < b ? b : a;

			memset(got, 0xee, sizeof(got));
			ck_assert_int_eq(extmap_copy(&c, &m), 0);
			extmap_read(&c, s, e - s, got + s);
			ck_assert(!memcmp(got + s, model + s, e - s));
		}
	}
	for (size_t i = 1; i < m.n; i++) /* sorted, no overlap */
		ck_assert_uint_le(m.v[i - 1].off + m.v[i - 1].len, m.v[i].off);
	extmap_free(&m);
	extmap_free(&c);
}
END_TEST

START_TEST(test_extmap_hash_sees_sources)
{
	static uint8_t src[64];
	struct extmap a, b;
	uint64_t ha[2], hb[2];

	extmap_init(&a);
	extmap_init(&b);
	extmap_put(&a, 0, 8, src);
	extmap_put(&a, 4, 8, src + 32); /* hides half of the first */
	extmap_put(&b, 0, 4, src);
	extmap_put(&b, 4, 8, src + 32);
	extmap_hash(&a, src, ha);
	extmap_hash(&b, src, hb);
	ck_assert(ha[0] == hb[0] && ha[1] == hb[1]);
	extmap_put(&b, 4, 1, src + 33); /* same place, another source */
	extmap_hash(&b, src, hb);
	ck_assert(ha[0] != hb[0] || ha[1] != hb[1]);
	extmap_free(&a);
	extmap_free(&b);
}
END_TEST

static uint8_t blk[4][8192];

/* A log: A, B in epoch 1; flush 1; C (8 KiB over two 4 KiB units), mark "m1", D in epoch 2;
 * mark "m2"; flush 2; E in epoch 3, then an ignored flush; F in epoch 4. */
static void write_log(void)
{
	struct wlog l;

	for (int i = 0; i < 4; i++)
		memset(blk[i], 'A' + i, sizeof(blk[i]));
	make_path();
	ck_assert_int_eq(wlog_open(&l, path, 1 << 20, 4096), 0);
	wlog_append(&l, WLOG_WRITE, 1, 0, 4096, blk[0]);		/* A, op 0 */
	wlog_append(&l, WLOG_WRITE, 1, 4096, 4096, blk[1]);		/* B, op 1 */
	wlog_append(&l, WLOG_FLUSH, 1, 0, 0, NULL);
	wlog_append(&l, WLOG_WRITE, 2, 16384, 8192, blk[2]);	/* C, op 2 */
	wlog_append(&l, WLOG_MARK, 2, 0, 2, "m1");
	wlog_append(&l, WLOG_WRITE, 2, 0, 4096, blk[3]);		/* D, op 3 */
	wlog_append(&l, WLOG_MARK, 2, 0, 2, "m2");
	wlog_append(&l, WLOG_FLUSH, 2, 0, 0, NULL);
	wlog_append(&l, WLOG_WRITE, 3, 8192, 4096, blk[0]);		/* E, op 4 */
	wlog_append_flags(&l, WLOG_FLUSH, WLOG_F_IGNORED, 3, 0, 0, NULL);
	wlog_append(&l, WLOG_WRITE, 4, 12288, 4096, blk[1]);	/* F, op 5 */
	wlog_close(&l);
}

START_TEST(test_windows_and_counts)
{
	struct ws_log l;
	char err[256];

	write_log();
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.nops, 6);
	ck_assert_uint_eq(l.nmarks, 2);
	ck_assert_str_eq(l.marks[0].text, "m1");
	ck_assert_uint_eq(l.marks[0].need, 3);
	ck_assert_uint_eq(l.marks[1].need, 4);
	ck_assert_uint_eq(l.nwin, 4); /* start, flush 1, flush 2, ignored flush 3 */
	ck_assert_uint_eq(l.win[0].durable, 0);
	ck_assert_uint_eq(l.win[0].end, 2);
	ck_assert_uint_eq(l.win[1].kind, WS_FLUSH);
	ck_assert_uint_eq(l.win[1].durable, 2);
	ck_assert_uint_eq(l.win[1].end, 4);
	ck_assert_uint_eq(l.win[2].durable, 4);
	ck_assert_uint_eq(l.win[2].end, 5);
	ck_assert_uint_eq(l.win[3].kind, WS_IGNORED);
	ck_assert_uint_eq(l.win[3].flush_no, 3);
	ck_assert_uint_eq(l.win[3].durable, 4); /* the ignored flush made nothing durable */
	ck_assert_uint_eq(l.win[3].end, 6);
	/* Window 1: flush + 2 prefixes + (4 - 2 - 1) subsets + C torn 2 ways (first, last). */
	ck_assert_uint_eq(l.win[0].nstates, 1 + 2 + 1);
	ck_assert_uint_eq(l.win[1].nstates, 1 + 2 + 1 + 2);
	ck_assert_uint_eq(l.win[2].nstates, 1 + 1);
	ck_assert_uint_eq(l.win[3].nstates, 1 + 2 + 1);
	ck_assert_uint_eq(l.nstates, 4 + 6 + 2 + 4);
	ws_log_close(&l);
	unlink(path);
}
END_TEST

/* A failed flush makes nothing durable and ends no window: the flush after it is flush 1,
 * and a cut before that flush may still lose the writes the failed one was to flush. */
START_TEST(test_failed_flush_ends_no_window)
{
	struct ws_log l;
	struct wlog w;
	char err[256];

	memset(blk[0], 'A', sizeof(blk[0]));
	make_path();
	ck_assert_int_eq(wlog_open(&w, path, 1 << 20, 4096), 0);
	wlog_append(&w, WLOG_WRITE, 1, 0, 4096, blk[0]);
	wlog_append(&w, WLOG_FLUSH_FAILED, 1, 0, 0, NULL);
	wlog_append(&w, WLOG_WRITE, 2, 4096, 4096, blk[0]);
	wlog_append(&w, WLOG_FLUSH, 2, 0, 0, NULL);
	wlog_close(&w);
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.nops, 2);
	ck_assert_uint_eq(l.nwin, 2); /* start, flush 1 */
	ck_assert_uint_eq(l.win[0].durable, 0);
	ck_assert_uint_eq(l.win[0].end, 2);
	ck_assert_uint_eq(l.win[1].kind, WS_FLUSH);
	ck_assert_uint_eq(l.win[1].flush_no, 1);
	ck_assert_uint_eq(l.win[1].durable, 2);
	ws_log_close(&l);
	unlink(path);
}
END_TEST

/* An atomic unit change (a reload) in the log: the write before it tears at the header's
 * 4 KiB units, the one after it at 512 bytes: tear states and their kept ranges follow. */
START_TEST(test_atomic_record_sets_the_unit_of_later_writes)
{
	uint64_t seen[2] = { 0, 0 };
	struct ws_log l;
	struct wlog w;
	char err[256];

	memset(blk[0], 'A', sizeof(blk[0]));
	make_path();
	ck_assert_int_eq(wlog_open(&w, path, 1 << 20, 4096), 0);
	wlog_append(&w, WLOG_WRITE, 1, 0, 8192, blk[0]);	/* 2 units of 4096 */
	wlog_append(&w, WLOG_ATOMIC, 1, 0, 512, NULL);
	wlog_append(&w, WLOG_WRITE, 1, 65536, 8192, blk[0]);	/* 16 units of 512 */
	wlog_close(&w);
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.nops, 2);
	ck_assert_uint_eq(l.ops[0].unit, 4096);
	ck_assert_uint_eq(l.ops[1].unit, 512);
	ck_assert_uint_eq(ws_op_units(&l, &l.ops[0]), 2);
	ck_assert_uint_eq(ws_op_units(&l, &l.ops[1]), 16);
	/* flush + 2 prefixes + 1 subset + 2 tears of the first + 2 * 8 of the second */
	ck_assert_uint_eq(l.nstates, 1 + 2 + 1 + 2 + 16);
	for (uint64_t id = 0; id < l.nstates; id++) {
		struct ws_state s;
		uint64_t off, len;

		ws_state_decode(&l, id, &s);
		if (s.kind != WS_K_TORN)
			continue;
		ws_state_torn_range(&l, &s, &off, &len);
		ck_assert_uint_eq(off % l.ops[s.j].unit, 0);
		ck_assert_uint_eq(len % l.ops[s.j].unit, 0);
		ck_assert_uint_gt(len, 0);
		ck_assert_uint_lt(len, 8192);
		seen[s.j]++;
	}
	ck_assert_uint_eq(seen[0], 2);
	ck_assert_uint_eq(seen[1], 16);
	ws_log_close(&l);
	unlink(path);
}
END_TEST

START_TEST(test_states_decode_one_to_one)
{
	struct ws_log l;
	struct ws_builder b;
	struct extmap m[64];
	char err[256];
	uint64_t h[64][2], same = 0;

	write_log();
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ck_assert_uint_le(l.nstates, 64);
	ws_builder_init(&b);
	for (uint64_t id = 0; id < l.nstates; id++) {
		struct ws_state s;

		ws_state_decode(&l, id, &s);
		ck_assert_uint_eq(s.id, id);
		extmap_init(&m[id]);
		ck_assert_int_eq(ws_state_build(&l, &b, &s, &m[id]), 0);
		extmap_hash(&m[id], l.map, h[id]);
		/* Equal hashes, equal maps: a later window's flush state is the earlier
		 * window's whole prefix, and an ignored flush repeats its window's states. */
		for (uint64_t j = 0; j < id; j++) {
			bool eq = m[j].n == m[id].n &&
				  !memcmp(m[j].v, m[id].v, m[j].n * sizeof(*m[j].v));

			ck_assert_int_eq(eq, h[j][0] == h[id][0] && h[j][1] == h[id][1]);
			same += eq;
		}
	}
	ck_assert_uint_gt(same, 0);
	for (uint64_t id = 0; id < l.nstates; id++)
		extmap_free(&m[id]);
	ws_builder_free(&b);
	ws_log_close(&l);
	unlink(path);
}
END_TEST

/* The byte at @off of state @id. */
static uint8_t state_byte(struct ws_log *l, uint64_t id, uint64_t off)
{
	struct ws_builder b;
	struct ws_state s;
	struct extmap m;
	uint8_t c = 0;

	ws_builder_init(&b);
	extmap_init(&m);
	ws_state_decode(l, id, &s);
	ck_assert_int_eq(ws_state_build(l, &b, &s, &m), 0);
	extmap_read(&m, off, 1, &c);
	extmap_free(&m);
	ws_builder_free(&b);
	return c;
}

START_TEST(test_state_contents_and_marks)
{
	struct ws_log l;
	struct ws_state s;
	char err[256];
	uint64_t nacked, w1 = 4;

	write_log();
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.win[1].first_id, w1);
	/* Flush 1's state: A and B, not C. */
	ck_assert_uint_eq(state_byte(&l, w1, 0), 'A');
	ck_assert_uint_eq(state_byte(&l, w1, 16384), 0);
	/* Its latest cut is just before flush 2, after both marks: acknowledged, then lost. */
	ws_state_decode(&l, w1, &s);
	ck_assert_int_eq(ws_state_mark(&l, &s, &nacked), -1);
	ck_assert_uint_eq(nacked, 2);
	/* Prefix 1: C kept, D not; m1 durable, both acknowledged. */
	ck_assert_uint_eq(state_byte(&l, w1 + 1, 16384), 'C');
	ck_assert_uint_eq(state_byte(&l, w1 + 1, 0), 'A');
	ws_state_decode(&l, w1 + 1, &s);
	ck_assert_int_eq(ws_state_mark(&l, &s, &nacked), 0);
	ck_assert_uint_eq(nacked, 2);
	/* The start window's states end at flush 1, before any mark. */
	ws_state_decode(&l, 1, &s);
	ck_assert_int_eq(ws_state_mark(&l, &s, &nacked), -1);
	ck_assert_uint_eq(nacked, 0);
	/* Prefix 2: D over A; m2 durable. */
	ck_assert_uint_eq(state_byte(&l, w1 + 2, 0), 'D');
	ws_state_decode(&l, w1 + 2, &s);
	ck_assert_int_eq(ws_state_mark(&l, &s, &nacked), 1);
	ck_assert_uint_eq(nacked, 2);
	/* The subset {D}: C lost, so neither mark is durable, though both were acknowledged. */
	ws_state_decode(&l, w1 + 3, &s);
	ck_assert_uint_eq(s.kind, WS_K_SUBSET);
	ck_assert_uint_eq(s.mask, 2);
	ck_assert_uint_eq(state_byte(&l, w1 + 3, 16384), 0);
	ck_assert_uint_eq(state_byte(&l, w1 + 3, 0), 'D');
	ck_assert_int_eq(ws_state_mark(&l, &s, &nacked), -1);
	ck_assert_uint_eq(nacked, 2);
	/* C torn: its first unit only, then its last unit only. */
	ws_state_decode(&l, w1 + 4, &s);
	ck_assert_uint_eq(s.kind, WS_K_TORN);
	ck_assert(!s.tail);
	ck_assert_uint_eq(state_byte(&l, w1 + 4, 16384), 'C');
	ck_assert_uint_eq(state_byte(&l, w1 + 4, 20480), 0);
	ck_assert_uint_eq(state_byte(&l, w1 + 5, 16384), 0);
	ck_assert_uint_eq(state_byte(&l, w1 + 5, 20480), 'C');
	/* After the ignored flush: E is not durable (the flush state lacks it). */
	ck_assert_uint_eq(state_byte(&l, l.win[3].first_id, 8192), 0);
	ws_log_close(&l);
	unlink(path);
}
END_TEST

/* A write fsynced, a second one never flushed, then a mark: a cut after the mark that drops
 * the second write is a state whose checker is told of the mark. */
START_TEST(test_acknowledged_then_lost_is_a_state)
{
	struct ws_builder b;
	struct ws_log l;
	struct wlog w;
	char err[256];
	bool found = false;

	memset(blk[0], 0x11, sizeof(blk[0]));
	memset(blk[1], 0xaa, sizeof(blk[1]));
	make_path();
	ck_assert_int_eq(wlog_open(&w, path, 16 << 20, 4096), 0);
	wlog_append(&w, WLOG_WRITE, 1, 1 << 20, 4096, blk[0]);
	wlog_append(&w, WLOG_FLUSH, 1, 0, 0, NULL);
	wlog_append(&w, WLOG_WRITE, 2, 0, 4096, blk[1]);
	wlog_append(&w, WLOG_MARK, 2, 0, 7, "commit1");
	wlog_close(&w);
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ws_builder_init(&b);
	for (uint64_t id = 0; id < l.nstates; id++) {
		struct ws_state s;
		struct extmap m;
		uint64_t nacked;
		uint8_t c0 = 0, c1 = 0;

		ws_state_decode(&l, id, &s);
		extmap_init(&m);
		ck_assert_int_eq(ws_state_build(&l, &b, &s, &m), 0);
		extmap_read(&m, 0, 1, &c0);
		extmap_read(&m, 1 << 20, 1, &c1);
		ws_state_mark(&l, &s, &nacked);
		if (c1 == 0x11 && c0 != 0xaa && nacked == 1)
			found = true;
		extmap_free(&m);
	}
	ck_assert_msg(found, "no state where commit1 was acknowledged and block 0 lost");
	ws_builder_free(&b);
	ws_log_close(&l);
	unlink(path);
}
END_TEST

START_TEST(test_discard_is_a_barrier_and_large_windows_drop_k)
{
	struct ws_log l;
	struct wlog w;
	char err[256];
	uint64_t n = 20;

	make_path();
	ck_assert_int_eq(wlog_open(&w, path, 1 << 20, 4096), 0);
	wlog_append(&w, WLOG_WRITE, 1, 0, 4096, blk[0]);
	wlog_append(&w, WLOG_DISCARD, 1, 0, 4096, NULL);
	for (uint64_t i = 0; i < n; i++)
		wlog_append(&w, WLOG_WRITE, 1, 4096 * (i + 1), 4096, blk[1]);
	wlog_close(&w);
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.nwin, 2);
	ck_assert_uint_eq(l.win[1].kind, WS_DISCARD);
	ck_assert_uint_eq(l.win[1].durable, 2); /* the write and the discard */
	ck_assert_uint_eq(l.win[1].nstates, 1 + n + n + n * (n - 1) / 2);
	{
		struct ws_state s;

		ws_state_decode(&l, l.nstates - 1, &s); /* the last pair */
		ck_assert_uint_eq(s.kind, WS_K_DROP);
		ck_assert_uint_eq(s.ndrop, 2);
		ck_assert_uint_eq(s.drop[0], n - 2);
		ck_assert_uint_eq(s.drop[1], n - 1);
		ws_state_decode(&l, l.win[1].first_id + 1 + n, &s); /* the first single */
		ck_assert_uint_eq(s.ndrop, 1);
		ck_assert_uint_eq(s.drop[0], 0);
	}
	ck_assert_uint_eq(state_byte(&l, l.win[1].first_id, 0), 0); /* discarded */
	ws_log_close(&l);
	ck_assert_int_eq(ws_log_open(&l, path, 0, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.win[1].nstates, 1 + n);
	ws_log_close(&l);
	unlink(path);
}
END_TEST

/* The writes a later write of their epoch covers whole, found by the sweep, are those a
 * plain search finds; the window's "overwritten" states keep a prefix of the others. */
START_TEST(test_overwritten_writes_match_a_plain_search)
{
	static uint8_t data[8192];
	uint64_t rng = 11, n = 300;
	struct ws_log l;
	struct wlog w;
	char err[256];

	make_path();
	ck_assert_int_eq(wlog_open(&w, path, 1 << 20, 4096), 0);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = 512 * (prng_splitmix64(&rng) % 24);
		uint64_t len = 512 * (1 + prng_splitmix64(&rng) % 8);

		if (i == n / 2)
			wlog_append(&w, WLOG_FLUSH, 1, 0, 0, NULL);
		wlog_append(&w, WLOG_WRITE, 1 + i / 100, off, len, data);
	}
	wlog_close(&w);
	ck_assert_int_eq(ws_log_open(&l, path, 1, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.nwin, 2);
	for (uint64_t wi = 0; wi < l.nwin; wi++) {
		const struct ws_window *win = &l.win[wi];
		uint64_t over = 0;

		ck_assert_ptr_nonnull(win->live_before);
		for (uint64_t i = 0; i < win->end - win->durable; i++) {
			bool o = ws_op_overwritten(&l, win, i);

			over += o;
			ck_assert_int_eq(o, win->live_before[i + 1] == win->live_before[i]);
		}
		ck_assert_uint_eq(over, win->nover);
		ck_assert_uint_gt(over, 0);
	}
	{ /* the last state before the tears of window 1 keeps every write none overwrote */
		const struct ws_window *win = &l.win[1];
		uint64_t n1 = win->end - win->durable;
		struct ws_state s;

		ws_state_decode(&l, win->first_id + 1 + n1 + n1 + (n1 - win->nover) - 1, &s);
		ck_assert_uint_eq(s.kind, WS_K_OVER);
		ck_assert_uint_eq(s.j, n1 - win->nover);
		for (uint64_t i = 0; i < n1; i++)
			ck_assert_int_eq(ws_state_keeps(&l, &s, i), !ws_op_overwritten(&l, win, i));
	}
	ws_log_close(&l);
	unlink(path);
}
END_TEST

START_TEST(test_sample_is_seeded_distinct_sorted)
{
	struct ws_log l = { .nstates = 1000 };
	uint64_t a[100], b[100], c[100];

	ck_assert_int_eq(ws_sample(&l, 100, 5, a), 0);
	ck_assert_int_eq(ws_sample(&l, 100, 5, b), 0);
	ck_assert_int_eq(ws_sample(&l, 100, 6, c), 0);
	ck_assert(!memcmp(a, b, sizeof(a)));
	ck_assert(memcmp(a, c, sizeof(a)));
	for (int i = 1; i < 100; i++)
		ck_assert_uint_lt(a[i - 1], a[i]);
	ck_assert_uint_lt(a[99], 1000);
}
END_TEST

static int lower_ok(void *arg, struct request *rq)
{
	(void)arg, (void)rq;
	return 0;
}

START_TEST(test_cache_marks_and_bad_logs)
{
	struct cache_params p;
	struct cache c;
	struct ws_log l;
	char err[256];
	FILE *f;

	make_path();
	cache_params_default(&p);
	p.mode = CACHE_MODE_WRITEBACK;
	p.seed = 1;
	ck_assert_int_eq(cache_init(&c, &p, lower_ok, NULL, NULL, NULL), 0);
	ck_assert_int_eq(cache_mark(&c, "no log"), -ENOENT);
	ck_assert_int_eq(cache_open_log(&c, path, 1 << 20), 0);
	ck_assert_int_eq(cache_mark(&c, "hello world"), 0);
	{
		char big[WLOG_MARK_MAX + 2];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		ck_assert_int_eq(cache_mark(&c, big), -EINVAL);
	}
	cache_destroy(&c);
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.nmarks, 1);
	ck_assert_str_eq(l.marks[0].text, "hello world");
	ck_assert_uint_eq(l.nstates, 1);
	ws_log_close(&l);
	/* A record whose type makes no sense is refused, naming its place. */
	f = fopen(path, "ab");
	ck_assert_ptr_nonnull(f);
	{
		struct wlog_rec r = { .type = 9 };

		fwrite(&r, sizeof(r), 1, f);
	}
	fclose(f);
	ck_assert_int_eq(ws_log_open(&l, path, 2, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "record 2 at byte "));
	ck_assert_ptr_nonnull(strstr(err, "unknown type 9"));
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wlog_states");
	TCase *tc = tcase_create("wlog_states");

	tcase_add_test(tc, test_extmap_matches_a_byte_model);
	tcase_add_test(tc, test_extmap_hash_sees_sources);
	tcase_add_test(tc, test_windows_and_counts);
	tcase_add_test(tc, test_failed_flush_ends_no_window);
	tcase_add_test(tc, test_atomic_record_sets_the_unit_of_later_writes);
	tcase_add_test(tc, test_states_decode_one_to_one);
	tcase_add_test(tc, test_state_contents_and_marks);
	tcase_add_test(tc, test_acknowledged_then_lost_is_a_state);
	tcase_add_test(tc, test_discard_is_a_barrier_and_large_windows_drop_k);
	tcase_add_test(tc, test_overwritten_writes_match_a_plain_search);
	tcase_add_test(tc, test_sample_is_seeded_distinct_sorted);
	tcase_add_test(tc, test_cache_marks_and_bad_logs);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
