/* SPDX-License-Identifier: MIT */
/* Unit tests of the write cache (core/cache/cache.c) over an in-memory image with the fake clock:
 * destage order, flush semantics, each power-cut mode, seeds that replay, armed cuts, and the
 * cache as the controller's stage under the fake disk (fakedev.h). */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cache/cache.h"
#include "fakedev.h"
#include "tests/unit/cacheio.h"

#define IMG (1u << 20)
#define MAXW 4096

/* The in-memory image below the cache: its bytes and the order of what reached it. */
struct mem {
	uint8_t img[IMG];
	uint64_t woff[MAXW], wlen[MAXW];	/* lower writes, in order */
	unsigned int nw;
	unsigned int nflush;
	unsigned int nw_at_flush;	/* lower writes seen when the last flush ran */
	int fail;			/* error every op returns, 0 = none */
	/* Called by every op after its I/O, with no lock of the cache's held: a test's way to
	 * act while the cache waits for the image (cut the power, change the settings). */
	void (*hook)(struct mem *mm, struct request *rq);
	/* A gate for writes, as a stall fault: while closed, a write waits after its I/O. */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cond;
	bool gate_closed;		/* gate_lock */
	unsigned int held;		/* gate_lock: writes waiting at the gate */
};

static struct mem *m;
static uint64_t now_ns;

static uint64_t clk(void *arg)
{
	(void)arg;
	return now_ns;
}

static int mem_io(struct mem *mm, struct request *rq)
{
	uint64_t pos = rq->offset;

	switch (rq->op) {
	case BIO_OP_READ:
	case BIO_OP_WRITE:
		ck_assert_uint_le(rq_end(rq), IMG);
		for (struct bio *b = rq->bio; b; b = b->next)
			for (int i = 0; i < b->iovcnt; i++) {
				if (rq->op == BIO_OP_READ)
					memcpy(b->iov[i].iov_base, mm->img + pos, b->iov[i].iov_len);
				else
					memcpy(mm->img + pos, b->iov[i].iov_base, b->iov[i].iov_len);
				pos += b->iov[i].iov_len;
			}
		if (rq->op == BIO_OP_WRITE) {
			ck_assert_uint_lt(mm->nw, MAXW);
			mm->woff[mm->nw] = rq->offset;
			mm->wlen[mm->nw++] = rq->len;
		}
		return 0;
	case BIO_OP_FLUSH:
		mm->nflush++;
		mm->nw_at_flush = mm->nw;
		return 0;
	case BIO_OP_DISCARD:
		memset(mm->img + rq->offset, 0, rq->len);
		return 0;
	default:
		return -EINVAL;
	}
}

static int mem_exec(void *arg, struct request *rq)
{
	struct mem *mm = arg;

	int ret;

	if (mm->fail)
		return mm->fail;
	ret = mem_io(mm, rq);
	if (mm->hook)
		mm->hook(mm, rq);
	if (rq->op == BIO_OP_WRITE) {
		pthread_mutex_lock(&mm->gate_lock);
		if (mm->gate_closed) {
			mm->held++;
			pthread_cond_broadcast(&mm->gate_cond);
			while (mm->gate_closed)
				pthread_cond_wait(&mm->gate_cond, &mm->gate_lock);
			mm->held--;
		}
		pthread_mutex_unlock(&mm->gate_lock);
	}
	return ret;
}

/* The image itself, under the gate: where a cut writes what it keeps (cache_set_image). */
static int mem_image_exec(void *arg, struct request *rq)
{
	return mem_io(arg, rq);
}

static void gate_set(bool closed)
{
	pthread_mutex_lock(&m->gate_lock);
	m->gate_closed = closed;
	pthread_cond_broadcast(&m->gate_cond);
	pthread_mutex_unlock(&m->gate_lock);
}

/* Wait until @n writes wait at the closed gate. */
static void gate_wait_held(unsigned int n)
{
	pthread_mutex_lock(&m->gate_lock);
	while (m->held < n)
		pthread_cond_wait(&m->gate_cond, &m->gate_lock);
	pthread_mutex_unlock(&m->gate_lock);
}

/* Write @len bytes of @byte at @off. */
static int wr(struct cache *c, uint64_t off, uint64_t len, uint8_t byte)
{
	uint8_t *b = malloc(len);
	int ret;

	memset(b, byte, len);
	ret = cache_io(c, BIO_OP_WRITE, off, len, b);
	free(b);
	return ret;
}

static int flush(struct cache *c)
{
	return cache_io(c, BIO_OP_FLUSH, 0, 0, NULL);
}

/* Every byte of [off, off+len) of what a read returns is @byte. */
static void assert_reads(struct cache *c, uint64_t off, uint64_t len, uint8_t byte)
{
	uint8_t *b = malloc(len);

	ck_assert_int_eq(cache_io(c, BIO_OP_READ, off, len, b), 0);
	for (uint64_t i = 0; i < len; i++)
		ck_assert_msg(b[i] == byte, "read byte %llu is %u, expected %u",
			      (unsigned long long)(off + i), b[i], byte);
	free(b);
}

static bool img_is(uint64_t off, uint64_t len, uint8_t byte)
{
	for (uint64_t i = 0; i < len; i++)
		if (m->img[off + i] != byte)
			return false;
	return true;
}

static void params(struct cache_params *p)
{
	cache_params_default(p);
	p->mode = CACHE_MODE_WRITEBACK;
	p->size = 256 * KiB;
	p->destage_delay_ms = 10;
	p->destage_rate = 0;
	p->seed = 42;
}

/* params() for a cache whose background never destages within a test: writes stay pending
 * until a flush, a freeze, a cut or a full cache moves them. */
static void params_no_destage(struct cache_params *p)
{
	params(p);
	p->destage_delay_ms = 100000;
}

static void start(struct cache *c, const struct cache_params *p)
{
	m = calloc(1, sizeof(*m));
	pthread_mutex_init(&m->gate_lock, NULL);
	pthread_cond_init(&m->gate_cond, NULL);
	now_ns = T0;
	ck_assert_int_eq(cache_init(c, p, mem_exec, m, clk, NULL), 0);
}

static void finish(struct cache *c)
{
	cache_destroy(c);
	pthread_cond_destroy(&m->gate_cond);
	pthread_mutex_destroy(&m->gate_lock);
	free(m);
	m = NULL;
}

/* Tick until nothing is pending, moving the clock to each wake-up. */
static void tick_until_clean(struct cache *c)
{
	for (int i = 0; i < 100000; i++) {
		uint64_t w = cache_tick(c);
		struct cache_stats st;

		cache_snapshot(c, &st, NULL);
		if (!st.dirty_writes)
			return;
		if (w && w != UINT64_MAX)
			now_ns += w;
	}
	ck_abort_msg("the cache never became clean");
}

START_TEST(test_write_completes_in_cache_and_reads_see_it)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;

	params(&p);
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 4096, 8192, 0xab), 0);
	ck_assert(img_is(4096, 8192, 0));
	assert_reads(&c, 0, 4096, 0);
	assert_reads(&c, 4096, 8192, 0xab);
	assert_reads(&c, 6000, 100, 0xab);
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.dirty_bytes, 8192);
	/* Not before the destage delay. */
	now_ns += 9 * MS;
	ck_assert_uint_gt(cache_tick(&c), 0);
	ck_assert(img_is(4096, 8192, 0));
	now_ns += 1 * MS;
	ck_assert_uint_eq(cache_tick(&c), 0);
	ck_assert(img_is(4096, 8192, 0xab));
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.dirty_bytes, 0);
	ck_assert_uint_eq(st.destaged_bytes, 8192);
	finish(&c);
}
END_TEST

/* A read over several pending writes and the image: newest wins, byte by byte. */
START_TEST(test_read_overlays_pending_writes_in_order)
{
	struct cache_params p;
	struct cache c;
	uint8_t b[3 * 4096];

	params(&p);
	start(&c, &p);
	memset(m->img, 0x11, 3 * 4096);
	ck_assert_int_eq(wr(&c, 1024, 4096, 0x22), 0);
	ck_assert_int_eq(flush(&c), 0); /* destaged: on the image now */
	ck_assert_int_eq(wr(&c, 2048, 4096, 0x33), 0);
	ck_assert_int_eq(wr(&c, 4096, 512, 0x44), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_READ, 0, sizeof(b), b), 0);
	for (unsigned int i = 0; i < sizeof(b); i++) {
		uint8_t want = i < 1024 ? 0x11 : i < 2048 ? 0x22 : i < 4096 ? 0x33
			     : i < 4608 ? 0x44 : i < 6144 ? 0x33 : 0x11;

		ck_assert_msg(b[i] == want, "byte %u: %x, expected %x", i, b[i], want);
	}
	finish(&c);
}
END_TEST

/* Writes that span many index chunks: reads across them see the newest bytes, and the
 * image ends up the same. */
START_TEST(test_large_writes_across_chunks)
{
	struct cache_params p;
	struct cache c;
	static uint8_t b[512 * 1024];

	params(&p);
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 60 * KiB, 200 * KiB, 0x01), 0);	/* chunks 0..3 */
	ck_assert_int_eq(wr(&c, 130 * KiB, 4 * KiB, 0x02), 0);	/* inside it, chunk 2 */
	ck_assert_int_eq(wr(&c, 250 * KiB, 100 * KiB, 0x03), 0);	/* its tail and beyond */
	ck_assert_int_eq(wr(&c, 0, 64 * KiB, 0x04), 0);		/* its head, chunk 0 */
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(cache_io(&c, BIO_OP_READ, 0, sizeof(b), b), 0);
		for (unsigned int i = 0; i < sizeof(b); i++) {
			uint8_t want = i < 64 * KiB ? 0x04 : i < 250 * KiB ?
				(i >= 130 * KiB && i < 134 * KiB ? 0x02 : 0x01) :
				i < 350 * KiB ? 0x03 : 0;

			ck_assert_msg(b[i] == want, "pass %d byte %u: %x, expected %x", pass, i,
				      b[i], want);
		}
		now_ns += 20 * MS;
		tick_until_clean(&c); /* the second pass reads the image alone */
	}
	finish(&c);
}
END_TEST

/* 64 separate writes reach the image in an order that is not the submission order, and all
 * of them do. */
START_TEST(test_destage_order_is_not_submission_order)
{
	struct cache_params p;
	struct cache c;
	unsigned int inversions = 0;

	params(&p);
	start(&c, &p);
	for (unsigned int i = 0; i < 64; i++)
		ck_assert_int_eq(wr(&c, i * 4096, 4096, (uint8_t)(i + 1)), 0);
	now_ns += 20 * MS;
	tick_until_clean(&c);
	ck_assert_uint_eq(m->nw, 64);
	for (unsigned int i = 1; i < m->nw; i++)
		inversions += m->woff[i] < m->woff[i - 1];
	ck_assert_uint_gt(inversions, 10);
	for (unsigned int i = 0; i < 64; i++)
		ck_assert(img_is(i * 4096, 4096, (uint8_t)(i + 1)));
	finish(&c);
}
END_TEST

/* Overlapping writes reach the image oldest first, whatever the random order. */
START_TEST(test_overlapping_writes_destage_in_their_order)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct cache_params p;
		struct cache c;

		params(&p);
		p.seed = seed;
		p.flush = CACHE_FLUSH_IGNORE; /* epochs change, nothing destaged by flushes */
		start(&c, &p);
		for (unsigned int i = 0; i < 16; i++) {
			/* each overlaps the previous by half, and an unrelated write between */
			ck_assert_int_eq(wr(&c, i * 2048, 4096, (uint8_t)(i + 1)), 0);
			ck_assert_int_eq(wr(&c, 512 * KiB + i * 4096, 4096, 0x77), 0);
			ck_assert_int_eq(flush(&c), 0);
		}
		now_ns += 20 * MS;
		tick_until_clean(&c);
		for (unsigned int i = 0; i < 16; i++)
			ck_assert(img_is(i * 2048, 2048, (uint8_t)(i + 1)));
		ck_assert(img_is(16 * 2048, 2048, 16));
		finish(&c);
	}
}
END_TEST

/* A flush completes with every write cached before it on the image and then the lower
 * flush; nothing destaged it before. */
START_TEST(test_flush_destages_then_syncs)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;

	params_no_destage(&p);
	start(&c, &p);
	for (unsigned int i = 0; i < 32; i++)
		ck_assert_int_eq(wr(&c, i * 8192, 4096, 0x5a), 0);
	ck_assert_uint_eq(m->nw, 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_uint_eq(m->nw, 32);
	ck_assert_uint_eq(m->nflush, 1);
	ck_assert_uint_eq(m->nw_at_flush, 32);
	for (unsigned int i = 0; i < 32; i++)
		ck_assert(img_is(i * 8192, 4096, 0x5a));
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.dirty_bytes, 0);
	ck_assert_uint_eq(st.flushes, 1);
	ck_assert_uint_eq(st.durable_epoch, 1);
	/* A cut now loses nothing. */
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 7, "test"), 0);
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.last_cut_dropped, 0);
	finish(&c);
}
END_TEST

/* With flush = ignore a flush returns at once and the cut still loses the writes. */
START_TEST(test_flush_ignore_lies)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;

	params_no_destage(&p);
	p.flush = CACHE_FLUSH_IGNORE;
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 0, 4096, 0x5a), 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_uint_eq(m->nw, 0);
	ck_assert_uint_eq(m->nflush, 0);
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 7, "test"), 0);
	ck_assert(img_is(0, 4096, 0));
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.last_cut_dropped, 4096);
	ck_assert_uint_eq(st.flushes_ignored, 1);
	finish(&c);
}
END_TEST

/* drop: flushed data survives, the rest is gone; EIO until poweron; then the image. */
START_TEST(test_cut_drop_and_poweron)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;
	uint8_t b[512];

	params_no_destage(&p);
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 0, 4096, 0x01), 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_int_eq(wr(&c, 0, 4096, 0x02), 0);
	ck_assert_int_eq(wr(&c, 8192, 4096, 0x03), 0);
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 9, "test"), 0);
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 9, "test"), -EALREADY);
	ck_assert_int_eq(cache_io(&c, BIO_OP_READ, 0, 512, b), -EIO);
	ck_assert_int_eq(wr(&c, 0, 512, 0x04), -EIO);
	ck_assert_int_eq(flush(&c), -EIO);
	ck_assert_int_eq(cache_io(&c, BIO_OP_DISCARD, 0, 512, NULL), -EIO);
	cache_snapshot(&c, &st, NULL);
	ck_assert(!st.powered);
	ck_assert_uint_eq(st.powercuts, 1);
	ck_assert_uint_eq(st.last_cut_pending, 8192);
	ck_assert_uint_eq(st.last_cut_dropped, 8192);
	cache_stats_reset(&c); /* counters go, the power state stays */
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.powercuts, 0);
	ck_assert_uint_eq(st.last_cut_dropped, 0);
	ck_assert(!st.powered);
	ck_assert_int_eq(cache_poweron(&c), 0);
	ck_assert_int_eq(cache_poweron(&c), -EALREADY);
	assert_reads(&c, 0, 4096, 0x01);
	assert_reads(&c, 8192, 4096, 0x00);
	ck_assert_int_eq(wr(&c, 0, 512, 0x04), 0);
	assert_reads(&c, 0, 512, 0x04);
	finish(&c);
}
END_TEST

/* prefix: what survives is the first k of the pending writes in completion order, whatever
 * their epochs: no surviving write is newer than a lost one. */
START_TEST(test_cut_prefix_keeps_one_prefix_in_completion_order)
{
	unsigned int partial = 0, across = 0;

	for (uint64_t seed = 1; seed <= 30; seed++) {
		struct cache_params p;
		struct cache c;
		unsigned int kept = 0;
		int lost = -1;

		params_no_destage(&p);
		p.flush = CACHE_FLUSH_IGNORE; /* several epochs stay pending */
		start(&c, &p);
		for (unsigned int e = 0; e < 3; e++) {
			for (unsigned int i = 0; i < 8; i++)
				ck_assert_int_eq(wr(&c, (e * 8 + i) * 4096, 4096, 0xee), 0);
			ck_assert_int_eq(flush(&c), 0);
		}
		ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_PREFIX, seed, "test"), 0);
		for (unsigned int i = 0; i < 24; i++) {
			if (img_is(i * 4096, 4096, 0xee)) {
				ck_assert_msg(lost < 0, "seed %llu: write %u kept, older write %d lost",
					      (unsigned long long)seed, i, lost);
				kept++;
			} else {
				ck_assert(img_is(i * 4096, 4096, 0));
				if (lost < 0)
					lost = (int)i;
			}
		}
		partial += kept > 0 && kept < 24;
		across += kept > 8;
		finish(&c);
	}
	ck_assert_uint_gt(partial, 10);
	ck_assert_uint_gt(across, 5); /* the prefix runs past the first epoch */
}
END_TEST

/* Count, over a cut, the writes of 16 KiB (four 4 KiB units) kept whole, lost and torn;
 * fail on a unit that is partly written. */
static void count_outcomes(unsigned int nw, unsigned int *kept, unsigned int *lost,
			   unsigned int *torn)
{
	for (unsigned int i = 0; i < nw; i++) {
		unsigned int units = 0;

		for (unsigned int u = 0; u < 4; u++) {
			uint64_t off = i * 16384 + u * 4096;

			if (img_is(off, 4096, 0xcd))
				units++;
			else
				ck_assert_msg(img_is(off, 4096, 0), "write %u unit %u partly written",
					      i, u);
		}
		if (units == 4)
			(*kept)++;
		else if (units == 0)
			(*lost)++;
		else
			(*torn)++;
	}
}

/* Twelve 16 KiB writes, 4 KiB atomic units, cut by @mode with seeds 1 to 10: counts the
 * writes kept, lost and torn over the ten cuts. Nothing beyond the writes changes. */
static void cut_12_writes(enum cache_cut mode, unsigned int *kept, unsigned int *lost,
			  unsigned int *torn)
{
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct cache_params p;
		struct cache c;

		params_no_destage(&p);
		p.atomic_write = 4096;
		start(&c, &p);
		for (unsigned int i = 0; i < 12; i++)
			ck_assert_int_eq(wr(&c, i * 16384, 16384, 0xcd), 0);
		ck_assert_int_eq(cache_powercut(&c, mode, seed, "test"), 0);
		count_outcomes(12, kept, lost, torn);
		ck_assert(img_is(12 * 16384, IMG - 12 * 16384, 0));
		finish(&c);
	}
}

START_TEST(test_cut_subset_keeps_drops_and_tears_at_the_unit)
{
	unsigned int kept = 0, lost = 0, torn = 0;

	cut_12_writes(CACHE_CUT_SUBSET, &kept, &lost, &torn);
	ck_assert_uint_gt(kept, 10);
	ck_assert_uint_gt(lost, 10);
	ck_assert_uint_gt(torn, 10);
}
END_TEST

START_TEST(test_cut_tear_tears_every_write_at_the_unit)
{
	unsigned int kept = 0, lost = 0, torn = 0;

	cut_12_writes(CACHE_CUT_TEAR, &kept, &lost, &torn);
	/* each unit is a coin: mostly torn, whole or lost one time in 16 */
	ck_assert_uint_gt(torn, kept + lost);
	ck_assert_uint_gt(torn, 80);
}
END_TEST

/* A write smaller than the atomic unit is all or nothing; bytes beside it never change. */
START_TEST(test_small_writes_are_atomic_and_neighbours_untouched)
{
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct cache_params p;
		struct cache c;

		params_no_destage(&p);
		p.atomic_write = 16384;
		start(&c, &p);
		memset(m->img, 0x99, IMG);
		/* 1000 bytes at odd places, inside one 16 KiB unit each */
		for (unsigned int i = 0; i < 16; i++)
			ck_assert_int_eq(wr(&c, i * 16384 + 777, 1000, 0x42), 0);
		ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_TEAR, seed, "test"), 0);
		for (unsigned int i = 0; i < 16; i++) {
			ck_assert(img_is(i * 16384 + 777, 1000, 0x42) ||
				  img_is(i * 16384 + 777, 1000, 0x99));
			ck_assert(img_is(i * 16384, 777, 0x99));
			ck_assert(img_is(i * 16384 + 1777, 16384 - 1777, 0x99));
		}
		finish(&c);
	}
}
END_TEST

/* The cache the hooks below act on. */
static struct cache *hook_cache;

/* At the cut's first kept write, a reload (SIGHUP) shrinks the atomic unit to 512. */
static void hook_shrink_unit(struct mem *mm, struct request *rq)
{
	struct cache_params np;

	if (rq->op != BIO_OP_WRITE)
		return;
	mm->hook = NULL;
	np = hook_cache->p; /* read by this thread alone: the test has no other */
	np.atomic_write = 512;
	cache_reconfigure(hook_cache, &np);
}

/* A cut tears each write at the unit it was cached under, though a reload changes the unit
 * while the cut writes what it keeps: every aligned 4 KiB unit is all or nothing. */
START_TEST(test_cut_tears_at_the_unit_of_the_cut)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct cache_params p;
		struct cache c;

		params_no_destage(&p);
		p.atomic_write = 4096;
		start(&c, &p);
		hook_cache = &c;
		for (unsigned int i = 0; i < 8; i++)
			ck_assert_int_eq(wr(&c, i * 65536, 65536, 0xcd), 0);
		m->hook = hook_shrink_unit;
		ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_TEAR, seed, "test"), 0);
		ck_assert_msg(m->hook == NULL, "the cut kept nothing");
		for (unsigned int u = 0; u < 8 * 16; u++)
			ck_assert_msg(img_is(u * 4096, 4096, 0xcd) || img_is(u * 4096, 4096, 0),
				      "seed %llu: 4 KiB unit %u partly written",
				      (unsigned long long)seed, u);
		finish(&c);
	}
}
END_TEST

/* A reload from 4096 to 512 between writes: the writes cached before it tear at 4 KiB units,
 * those after it at 512 bytes, and the write log holds the change between them (version 3),
 * so that replay and explore tear each write as the cut did. */
START_TEST(test_reload_changes_the_unit_of_later_writes)
{
	char path[] = "/tmp/plugdisk-test-cache-log.XXXXXX";
	bool small_tear = false;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct cache_params p, np;
		struct wlog_reader r;
		struct wlog_rec rec;
		uint32_t types[16];
		unsigned int n = 0;
		struct cache c;

		params_no_destage(&p);
		p.size = IMG;
		p.atomic_write = 4096;
		start(&c, &p);
		ck_assert_int_eq(cache_open_log(&c, path, IMG), 0);
		for (unsigned int i = 0; i < 4; i++)
			ck_assert_int_eq(wr(&c, i * 65536, 65536, 0xa1), 0);
		np = p;
		np.atomic_write = 512;
		cache_reconfigure(&c, &np);
		for (unsigned int i = 4; i < 8; i++)
			ck_assert_int_eq(wr(&c, i * 65536, 65536, 0xb2), 0);
		ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_TEAR, seed, "test"), 0);
		for (unsigned int u = 0; u < 4 * 16; u++)
			ck_assert_msg(img_is(u * 4096, 4096, 0xa1) || img_is(u * 4096, 4096, 0),
				      "seed %llu: 4 KiB unit %u of a write cached before the reload "
				      "partly written", (unsigned long long)seed, u);
		for (unsigned int u = 4 * 128; u < 8 * 128; u++) {
			ck_assert(img_is(u * 512, 512, 0xb2) || img_is(u * 512, 512, 0));
			if (!(u % 8))
				small_tear |= !img_is(u * 512, 4096, 0xb2) && !img_is(u * 512, 4096, 0);
		}
		finish(&c);

		ck_assert_int_eq(wlog_reader_open(&r, path), 0);
		ck_assert_uint_eq(r.hdr.version, 3);
		ck_assert_uint_eq(r.hdr.atomic_write, 4096);
		r.skip_data = true;
		while (n < 16 && wlog_next(&r, &rec) == 1) {
			if (rec.type == WLOG_ATOMIC)
				ck_assert_uint_eq(rec.len, 512);
			types[n++] = rec.type;
		}
		wlog_reader_close(&r);
		ck_assert_uint_eq(n, 10);
		for (unsigned int i = 0; i < n; i++)
			ck_assert_uint_eq(types[i], i < 4 || (i > 4 && i < 9) ? WLOG_WRITE
						   : i == 4 ? WLOG_ATOMIC : WLOG_CUT);
	}
	ck_assert_msg(small_tear, "no seed tore a write cached after the reload inside 4 KiB");
	unlink(path);
}
END_TEST

/* While the cache waits for the image on one op of @hook_op, the power goes and comes back. */
static enum bio_op hook_op;

static void hook_cut_and_poweron(struct mem *mm, struct request *rq)
{
	if (rq->op != hook_op)
		return;
	mm->hook = NULL;
	ck_assert_int_eq(cache_powercut(hook_cache, CACHE_CUT_DROP, 3, "test"), 0);
	if (rq->op != BIO_OP_DISCARD) /* a poweron waits for discards in flight */
		ck_assert_int_eq(cache_poweron(hook_cache), 0);
}

/* A read and a flush in flight across a cut and a poweron, and a discard in flight at a cut,
 * fail with EIO, as on a device that lost power: the read does not return the write the cut
 * dropped. */
START_TEST(test_requests_in_flight_at_a_cut_fail)
{
	static const enum bio_op ops[] = { BIO_OP_READ, BIO_OP_FLUSH, BIO_OP_DISCARD };

	for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct cache_params p;
		struct cache c;
		uint8_t b[4096];

		params_no_destage(&p);
		start(&c, &p);
		hook_cache = &c;
		ck_assert_int_eq(wr(&c, 0, 4096, 0xab), 0);
		hook_op = ops[i];
		m->hook = hook_cut_and_poweron;
		memset(b, 0, sizeof(b));
		ck_assert_msg(cache_io(&c, ops[i], 0, ops[i] == BIO_OP_FLUSH ? 0 : 4096,
				       ops[i] == BIO_OP_READ ? b : NULL) == -EIO,
			      "%s across a cut did not fail", bio_op_name[ops[i]]);
		ck_assert_msg(m->hook == NULL, "%s never reached the image", bio_op_name[ops[i]]);
		/* the cut dropped the write; a flush had destaged it first */
		if (ops[i] == BIO_OP_DISCARD)
			ck_assert_int_eq(cache_poweron(&c), 0);
		assert_reads(&c, 0, 4096, ops[i] == BIO_OP_FLUSH ? 0xab : 0);
		finish(&c);
	}
}
END_TEST

/* Threads that run one op on the cache and keep its result. */
struct op_thread {
	pthread_t t;
	struct cache *c;
	int ret;
};

static void *flush_thread(void *arg)
{
	struct op_thread *o = arg;

	o->ret = flush(o->c);
	return NULL;
}

static void *tick_thread(void *arg)
{
	struct op_thread *o = arg;

	cache_tick(o->c);
	return NULL;
}

static void *write_8k_thread(void *arg)
{
	struct op_thread *o = arg;

	o->ret = wr(o->c, 8192, 4096, 0x03);
	return NULL;
}

static void *poweron_thread(void *arg)
{
	struct op_thread *o = arg;

	__atomic_store_n(&o->ret, cache_poweron(o->c), __ATOMIC_SEQ_CST); /* read before the join */
	return NULL;
}

static bool is_powered(struct cache *c)
{
	struct cache_stats st;

	cache_snapshot(c, &st, NULL);
	return st.powered;
}

/* Start a cache that destages only when told, over the gated image, with 0x01 written at 0
 * and a flush in @fl whose destage of it reached the image and waits at the closed gate. */
static void start_with_held_flush(struct cache *c, struct op_thread *fl)
{
	struct cache_params p;

	params_no_destage(&p);
	start(c, &p);
	cache_set_image(c, mem_image_exec, m);
	ck_assert_int_eq(wr(c, 0, 4096, 0x01), 0);
	gate_set(true);
	ck_assert_int_eq(pthread_create(&fl->t, NULL, flush_thread, fl), 0);
	gate_wait_held(1);
}

/* A cut returns at once though a destage is held below the cache (a stall fault); that
 * destage fails its flush with EIO when it comes back; a newer write over its blocks is
 * lost; poweron waits for it, so that it cannot land over what comes after. */
START_TEST(test_cut_does_not_wait_for_a_held_destage)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct cache c;
		struct cache_stats st;
		struct op_thread fl = { .c = &c }, on = { .c = &c };

		start_with_held_flush(&c, &fl);
		ck_assert_int_eq(wr(&c, 0, 4096, 0x02), 0);	/* newer, over the held one */
		ck_assert_int_eq(wr(&c, 65536, 4096, 0x03), 0);
		ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_SUBSET, seed, "test"), 0);
		cache_snapshot(&c, &st, NULL);
		ck_assert(!st.powered);
		ck_assert_uint_eq(st.last_cut_pending, 3 * 4096);
		ck_assert(img_is(0, 4096, 0x01)); /* never the newer write */
		ck_assert(img_is(65536, 4096, 0x03) || img_is(65536, 4096, 0));
		ck_assert_uint_eq(st.last_cut_dropped,
				  4096 + (img_is(65536, 4096, 0x03) ? 0 : 4096));
		/* poweron waits for the held destage */
		ck_assert_int_eq(pthread_create(&on.t, NULL, poweron_thread, &on), 0);
		usleep(20000);
		ck_assert_msg(!is_powered(&c), "poweron did not wait for the held destage");
		gate_set(false);
		pthread_join(fl.t, NULL);
		ck_assert_int_eq(fl.ret, -EIO);
		pthread_join(on.t, NULL);
		ck_assert_int_eq(on.ret, 0);
		assert_reads(&c, 0, 4096, 0x01);
		finish(&c);
	}
}
END_TEST

/* A poweron with the power on answers -EALREADY at once, though a destage is held below
 * the cache: it has nothing to wait for, and were it to wait, a cut meanwhile would see the
 * power come back when the destage is released, from a poweron given while it was on. */
START_TEST(test_poweron_with_the_power_on_does_not_wait)
{
	struct cache c;
	struct op_thread fl = { .c = &c }, on = { .c = &c, .ret = 1 };

	start_with_held_flush(&c, &fl);
	ck_assert_int_eq(pthread_create(&on.t, NULL, poweron_thread, &on), 0);
	usleep(20000);
	ck_assert_msg(__atomic_load_n(&on.ret, __ATOMIC_SEQ_CST) == -EALREADY,
		      "poweron with the power on waits behind the held destage");
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 1, "test"), 0);
	gate_set(false);
	pthread_join(fl.t, NULL);
	pthread_join(on.t, NULL);
	ck_assert_int_eq(fl.ret, -EIO);
	ck_assert_int_eq(on.ret, -EALREADY);
	ck_assert(!is_powered(&c)); /* the cut stands until a poweron given after it */
	ck_assert_int_eq(cache_poweron(&c), 0);
	finish(&c);
}
END_TEST

static void *freeze_thread(void *arg)
{
	struct op_thread *o = arg;

	o->ret = cache_freeze(o->c);
	return NULL;
}

/* A thaw while a freeze writes the cache out ends the freeze: it fails with ECANCELED, and
 * the cache is not frozen (background destaging goes on), so that the control file's freeze
 * does not report a frozen disk that is not. */
START_TEST(test_thaw_during_freeze_cancels_it)
{
	struct cache_params p;
	struct cache c;
	struct op_thread fz = { .c = &c };

	params_no_destage(&p);
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 0, 4096, 0x01), 0);
	gate_set(true);
	ck_assert_int_eq(pthread_create(&fz.t, NULL, freeze_thread, &fz), 0);
	gate_wait_held(1); /* the freeze's write-out of 0x01 waits below */
	cache_thaw(&c);
	gate_set(false);
	pthread_join(fz.t, NULL);
	ck_assert_int_eq(fz.ret, -ECANCELED);
	ck_assert(img_is(0, 4096, 0x01));
	ck_assert_int_eq(wr(&c, 4096, 4096, 0x02), 0);
	now_ns += 200000 * MS;
	cache_tick(&c);
	ck_assert_msg(img_is(4096, 4096, 0x02), "the cache stayed frozen after the thaw");
	finish(&c);
}
END_TEST

/* Writes held at the gate, as cache_set_held_below() asks it. */
static bool gate_holds(void *arg)
{
	bool held;

	(void)arg;
	pthread_mutex_lock(&m->gate_lock);
	held = m->held != 0;
	pthread_mutex_unlock(&m->gate_lock);
	return held;
}

/* With cache_set_held_below(): a freeze while a stage below holds a request, and a poweron
 * behind a destage held there, fail with EBUSY at once, changing nothing, instead of waiting
 * for a release; once it came, both succeed. */
START_TEST(test_freeze_and_poweron_fail_busy_while_held_below)
{
	struct cache c;
	struct op_thread fl = { .c = &c };

	start_with_held_flush(&c, &fl);
	cache_set_held_below(&c, gate_holds, NULL);
	ck_assert_int_eq(cache_freeze(&c), -EBUSY);
	ck_assert(!c.frozen);
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 1, "test"), 0);
	ck_assert_int_eq(cache_poweron(&c), -EBUSY);
	ck_assert(!is_powered(&c));
	gate_set(false);
	pthread_join(fl.t, NULL);
	ck_assert_int_eq(fl.ret, -EIO);
	ck_assert_int_eq(cache_poweron(&c), 0);
	ck_assert_int_eq(cache_freeze(&c), 0);
	cache_thaw(&c);
	finish(&c);
}
END_TEST

/* A writer waiting for room in a full cache, behind a destage held below it, fails with EIO
 * at a cut, and the cut does not wait for that destage. */
START_TEST(test_cut_fails_a_writer_waiting_for_room)
{
	struct cache_params p;
	struct cache c;
	struct op_thread tk = { .c = &c }, w8 = { .c = &c };
	unsigned int waiters = 0;

	params(&p);
	p.size = 8192;
	p.destage_delay_ms = 0;
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 0, 4096, 0x01), 0);
	gate_set(true);
	ck_assert_int_eq(pthread_create(&tk.t, NULL, tick_thread, &tk), 0);
	gate_wait_held(1); /* the background destage of 0x01 waits */
	ck_assert_int_eq(wr(&c, 0, 4096, 0x02), 0); /* full now; not eligible behind 0x01 */
	ck_assert_int_eq(pthread_create(&w8.t, NULL, write_8k_thread, &w8), 0);
	while (!waiters) { /* the writer finds no room and nothing it may destage */
		usleep(1000);
		pthread_mutex_lock(&c.lock);
		waiters = c.room_waiters;
		pthread_mutex_unlock(&c.lock);
	}
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 1, "test"), 0);
	pthread_join(w8.t, NULL);
	ck_assert_int_eq(w8.ret, -EIO);
	gate_set(false);
	pthread_join(tk.t, NULL);
	ck_assert_int_eq(cache_poweron(&c), 0);
	assert_reads(&c, 0, 4096, 0x01);
	assert_reads(&c, 8192, 4096, 0);
	finish(&c);
}
END_TEST

/* The same seed over the same writes leaves the same image; other seeds leave others. */
static void run_seeded(uint64_t seed, int mode, uint8_t *out)
{
	struct cache_params p;
	struct cache c;

	params(&p);
	p.destage_delay_ms = 5;
	start(&c, &p);
	for (unsigned int i = 0; i < 40; i++) {
		ck_assert_int_eq(wr(&c, (i * 7919 % 200) * 4096, 8192, (uint8_t)(i + 1)), 0);
		now_ns += MS;
		if (i % 3 == 0)
			cache_tick(&c); /* background destage, in its seeded order */
		if (i == 20)
			ck_assert_int_eq(flush(&c), 0);
	}
	ck_assert_int_eq(cache_powercut(&c, mode, seed, "test"), 0);
	memcpy(out, m->img, IMG);
	finish(&c);
}

START_TEST(test_seed_replays)
{
	static uint8_t a[IMG], b[IMG];
	unsigned int differ = 0;

	for (int mode = 0; mode < CACHE_CUT_NR; mode++) {
		run_seeded(1234, mode, a);
		run_seeded(1234, mode, b);
		ck_assert_msg(!memcmp(a, b, IMG), "mode %s: the same seed left two images",
			      cache_cut_names[mode]);
	}
	run_seeded(1234, CACHE_CUT_SUBSET, a);
	for (uint64_t s = 1; s <= 5; s++) {
		run_seeded(s, CACHE_CUT_SUBSET, b);
		differ += memcmp(a, b, IMG) != 0;
	}
	ck_assert_uint_ge(differ, 4);
}
END_TEST

START_TEST(test_arm_at_nth_flush)
{
	struct cache_params p;
	struct cache c;
	struct cache_arm a = { .kind = CACHE_ARM_FLUSH, .n = 3 };

	params_no_destage(&p);
	p.powercut = CACHE_CUT_DROP;
	start(&c, &p);
	ck_assert_int_eq(cache_arm(&c, &a), 0);
	ck_assert_int_eq(wr(&c, 0, 4096, 1), 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_int_eq(wr(&c, 4096, 4096, 2), 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_int_eq(wr(&c, 8192, 4096, 3), 0);
	ck_assert_int_eq(flush(&c), -EIO); /* the third flush finds the power gone */
	ck_assert(img_is(0, 4096, 1));
	ck_assert(img_is(4096, 4096, 2));
	ck_assert(img_is(8192, 4096, 0));
	ck_assert_int_eq(cache_poweron(&c), 0);
	ck_assert_int_eq(flush(&c), 0); /* disarmed once fired */
	finish(&c);
}
END_TEST

START_TEST(test_arm_at_nth_write_after_a_flush)
{
	struct cache_params p;
	struct cache c;
	struct cache_arm a = { .kind = CACHE_ARM_WRITE, .after_flush = 2, .n = 3 };
	struct cache_arm got;
	struct cache_stats st;

	params_no_destage(&p);
	p.powercut = CACHE_CUT_DROP;
	start(&c, &p);
	ck_assert_int_eq(cache_arm(&c, &a), 0);
	for (unsigned int i = 0; i < 5; i++)
		ck_assert_int_eq(wr(&c, i * 4096, 4096, 1), 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_int_eq(wr(&c, 5 * 4096, 4096, 1), 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_int_eq(wr(&c, 6 * 4096, 4096, 2), 0);
	ck_assert_int_eq(wr(&c, 7 * 4096, 4096, 2), 0);
	cache_snapshot(&c, &st, &got);
	ck_assert(st.powered);
	ck_assert_uint_eq(got.writes, 2);
	ck_assert_int_eq(wr(&c, 8 * 4096, 4096, 2), -EIO);
	cache_snapshot(&c, &st, &got);
	ck_assert(!st.powered);
	ck_assert_int_eq(got.kind, CACHE_ARM_NONE);
	ck_assert_uint_eq(st.last_cut_dropped, 2 * 4096);
	ck_assert(img_is(0, 6 * 4096, 1));
	ck_assert(img_is(6 * 4096, 3 * 4096, 0));
	finish(&c);
}
END_TEST

/* A random arm fires at the op its seed names, the same one each time. */
START_TEST(test_arm_random_replays)
{
	unsigned int fired_at[2];

	for (int run = 0; run < 2; run++) {
		struct cache_params p;
		struct cache c;
		struct cache_arm a = { .kind = CACHE_ARM_RANDOM, .n = 50, .seed = 77 };
		unsigned int i;

		params(&p);
		start(&c, &p);
		ck_assert_int_eq(cache_arm(&c, &a), 0);
		for (i = 1; i <= 60; i++) {
			int ret = i % 5 ? wr(&c, i * 4096, 4096, 1) : flush(&c);

			if (ret) {
				ck_assert_int_eq(ret, -EIO);
				break;
			}
		}
		ck_assert_uint_le(i, 50);
		fired_at[run] = i;
		finish(&c);
	}
	ck_assert_uint_eq(fired_at[0], fired_at[1]);
}
END_TEST

START_TEST(test_arm_at_a_time)
{
	struct cache_params p;
	struct cache c;
	struct cache_arm a = { .kind = CACHE_ARM_TIME };
	struct cache_stats st;

	params_no_destage(&p);
	start(&c, &p);
	a.at_ns = now_ns + 50 * MS;
	ck_assert_int_eq(cache_arm(&c, &a), 0);
	ck_assert_int_eq(wr(&c, 0, 4096, 1), 0);
	ck_assert_uint_eq(cache_tick(&c), 50 * MS); /* the thread wakes for it */
	now_ns += 50 * MS;
	ck_assert_uint_eq(cache_tick(&c), 0);
	cache_snapshot(&c, &st, NULL);
	ck_assert(!st.powered);
	ck_assert_int_eq(wr(&c, 0, 4096, 1), -EIO);
	finish(&c);
}
END_TEST

/* The background destage keeps to the destage rate. */
START_TEST(test_destage_rate)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;
	uint64_t t_start;

	params(&p);
	p.destage_rate = 1024 * KiB; /* 4 KiB writes: one per 3.9 ms */
	p.destage_delay_ms = 0;
	start(&c, &p);
	for (unsigned int i = 0; i < 32; i++)
		ck_assert_int_eq(wr(&c, i * 4096, 4096, 1), 0);
	t_start = now_ns;
	tick_until_clean(&c);
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.destaged_bytes, 32 * 4096);
	/* 31 gaps of 4096 / 1 MiB/s each, less the 1 ms burst the rate allows */
	ck_assert_uint_ge(now_ns - t_start, 31 * (4096 * NSEC_PER_SEC / (1024 * KiB)) - MS);
	ck_assert_uint_le(now_ns - t_start, 33 * (4096 * NSEC_PER_SEC / (1024 * KiB)));
	finish(&c);
}
END_TEST

/* A write that finds the cache full destages to make room; dirty never exceeds the size. */
START_TEST(test_full_cache_destages_in_the_writer)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;

	params_no_destage(&p);
	p.size = 64 * KiB;
	start(&c, &p);
	for (unsigned int i = 0; i < 64; i++) {
		ck_assert_int_eq(wr(&c, i * 4096, 4096, (uint8_t)(i + 1)), 0);
		cache_snapshot(&c, &st, NULL);
		ck_assert_uint_le(st.dirty_bytes, 64 * KiB);
	}
	ck_assert_uint_eq(m->nw, 64 - 16);
	for (unsigned int i = 0; i < 64; i++)
		assert_reads(&c, i * 4096, 4096, (uint8_t)(i + 1));
	finish(&c);
}
END_TEST

/* A write covering a pending one of its epoch supersedes it; across a flush it does not. */
START_TEST(test_overwrite_in_epoch_supersedes)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;

	params_no_destage(&p);
	p.flush = CACHE_FLUSH_IGNORE;
	start(&c, &p);
	for (unsigned int i = 0; i < 100; i++)
		ck_assert_int_eq(wr(&c, 0, 4096, (uint8_t)i), 0);
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.dirty_writes, 1);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_int_eq(wr(&c, 0, 4096, 0xff), 0);
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.dirty_writes, 2);
	assert_reads(&c, 0, 4096, 0xff);
	finish(&c);
}
END_TEST

/* A discard lands after the pending writes it covers. */
START_TEST(test_discard_after_pending_writes)
{
	struct cache_params p;
	struct cache c;

	params_no_destage(&p);
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 0, 8192, 0x31), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_DISCARD, 0, 4096, NULL), 0);
	assert_reads(&c, 0, 4096, 0);
	assert_reads(&c, 4096, 4096, 0x31);
	finish(&c);
}
END_TEST

/* freeze destages every acknowledged write, of every epoch, without a flush, and the
 * background destages nothing more until thaw. */
START_TEST(test_freeze_destages_all_and_pauses_destaging)
{
	struct cache_params p;
	struct cache c;
	struct cache_stats st;

	params_no_destage(&p);
	p.flush = CACHE_FLUSH_IGNORE;
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 0, 4096, 0x01), 0);
	ck_assert_int_eq(flush(&c), 0);
	ck_assert_int_eq(wr(&c, 4096, 8192, 0x02), 0);
	ck_assert_int_eq(cache_freeze(&c), 0);
	ck_assert(img_is(0, 4096, 0x01));
	ck_assert(img_is(4096, 8192, 0x02));
	ck_assert_uint_eq(m->nflush, 0);
	cache_snapshot(&c, &st, NULL);
	ck_assert_uint_eq(st.dirty_bytes, 0);
	/* Nothing reaches the image while frozen, however long it waits. */
	ck_assert_int_eq(wr(&c, 16384, 4096, 0x03), 0);
	now_ns += 200000 * MS;
	cache_tick(&c);
	ck_assert(img_is(16384, 4096, 0));
	cache_thaw(&c);
	ck_assert_uint_eq(cache_tick(&c), 0);
	ck_assert(img_is(16384, 4096, 0x03));
	/* With the power off: nothing to destage, and nothing fails. */
	ck_assert_int_eq(wr(&c, 16384, 4096, 0x04), 0);
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 1, "test"), 0);
	ck_assert_int_eq(cache_freeze(&c), 0);
	cache_thaw(&c);
	ck_assert(img_is(16384, 4096, 0x03));
	finish(&c);
}
END_TEST

/* The image failing under a flush: the flush reports it. */
START_TEST(test_flush_reports_destage_error)
{
	struct cache_params p;
	struct cache c;

	params_no_destage(&p);
	start(&c, &p);
	ck_assert_int_eq(wr(&c, 0, 4096, 1), 0);
	m->fail = -ENOSPC;
	ck_assert_int_eq(flush(&c), -ENOSPC);
	m->fail = 0;
	ck_assert_int_eq(flush(&c), 0);
	ck_assert(img_is(0, 4096, 1));
	finish(&c);
}
END_TEST

/* The cache as the controller's stage, under the fake queue and controller. */
static struct cache *fake_cache;

static int cache_over_fake(void *arg, struct request *rq)
{
	(void)arg;
	return cache_exec(fake_cache, rq);
}

START_TEST(test_under_the_controller)
{
	static struct fake f;
	struct cache_params p;
	struct cache c;
	struct tbio tb[3];
	static uint8_t buf[3][4096];

	params_no_destage(&p);
	start(&c, &p);
	fake_cache = &c;
	fake_params(&f);
	fake_set_now(&f, T0);
	pthread_mutex_init(&f.log_lock, NULL);
	ck_assert_int_eq(timer_init(&f.t, false), 0);
	ck_assert_int_eq(ctrl_init(&f.c, &f.cp, &f.t, cache_over_fake, NULL, (int64_t)T0), 0);
	ck_assert_int_eq(queue_init(&f.q, &f.qp, &f.c, &f.t, fake_now, &f), 0);
	memset(buf[0], 0x61, 4096);
	tbio_init(&tb[0], &f, BIO_OP_WRITE, 0, 4096);
	struct iovec iov0 = { buf[0], 4096 }, iov2 = { buf[2], 4096 };
	tb[0].bio.iov = &iov0;
	queue_submit(&f.q, &tb[0].bio);
	fake_run_until_idle(&f);
	ck_assert_int_eq(tb[0].error, 0);
	ck_assert(img_is(0, 4096, 0)); /* completed, still only in the cache */
	submit(&f, &tb[1], BIO_OP_FLUSH, 0, 0);
	fake_run_until_idle(&f);
	ck_assert_int_eq(tb[1].error, 0);
	ck_assert(img_is(0, 4096, 0x61));
	ck_assert_int_eq(cache_powercut(&c, -1, 1, "test"), 0);
	tbio_init(&tb[2], &f, BIO_OP_READ, 0, 4096);
	tb[2].bio.iov = &iov2;
	queue_submit(&f.q, &tb[2].bio);
	fake_run_until_idle(&f);
	ck_assert_int_eq(tb[2].error, -EIO);
	queue_destroy(&f.q);
	ctrl_destroy(&f.c);
	timer_destroy(&f.t);
	pthread_mutex_destroy(&f.log_lock);
	finish(&c);
}
END_TEST

/* The names the config and the control file use round-trip to the enums. */
START_TEST(test_names)
{
	ck_assert_int_eq(cache_name_index(cache_mode_names, "writeback"), CACHE_MODE_WRITEBACK);
	ck_assert_int_eq(cache_name_index(cache_flush_names, "ignore"), CACHE_FLUSH_IGNORE);
	ck_assert_int_eq(cache_name_index(cache_cut_names, "tear"), CACHE_CUT_TEAR);
	ck_assert_int_eq(cache_name_index(cache_cut_names, "nope"), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("cache");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_write_completes_in_cache_and_reads_see_it);
	tcase_add_test(tc, test_read_overlays_pending_writes_in_order);
	tcase_add_test(tc, test_destage_order_is_not_submission_order);
	tcase_add_test(tc, test_large_writes_across_chunks);
	tcase_add_test(tc, test_overlapping_writes_destage_in_their_order);
	tcase_add_test(tc, test_flush_destages_then_syncs);
	tcase_add_test(tc, test_flush_ignore_lies);
	tcase_add_test(tc, test_cut_drop_and_poweron);
	tcase_add_test(tc, test_cut_prefix_keeps_one_prefix_in_completion_order);
	tcase_add_test(tc, test_cut_subset_keeps_drops_and_tears_at_the_unit);
	tcase_add_test(tc, test_cut_tear_tears_every_write_at_the_unit);
	tcase_add_test(tc, test_small_writes_are_atomic_and_neighbours_untouched);
	tcase_add_test(tc, test_cut_tears_at_the_unit_of_the_cut);
	tcase_add_test(tc, test_reload_changes_the_unit_of_later_writes);
	tcase_add_test(tc, test_requests_in_flight_at_a_cut_fail);
	tcase_add_test(tc, test_seed_replays);
	tcase_add_test(tc, test_arm_at_nth_flush);
	tcase_add_test(tc, test_arm_at_nth_write_after_a_flush);
	tcase_add_test(tc, test_arm_random_replays);
	tcase_add_test(tc, test_arm_at_a_time);
	tcase_add_test(tc, test_destage_rate);
	tcase_add_test(tc, test_full_cache_destages_in_the_writer);
	tcase_add_test(tc, test_overwrite_in_epoch_supersedes);
	tcase_add_test(tc, test_discard_after_pending_writes);
	tcase_add_test(tc, test_freeze_destages_all_and_pauses_destaging);
	tcase_add_test(tc, test_flush_reports_destage_error);
	tcase_add_test(tc, test_under_the_controller);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	/* Cuts while the image holds a write: a cut that waits for it never returns. */
	tc = tcase_create("held");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_cut_does_not_wait_for_a_held_destage);
	tcase_add_test(tc, test_cut_fails_a_writer_waiting_for_room);
	tcase_add_test(tc, test_poweron_with_the_power_on_does_not_wait);
	tcase_add_test(tc, test_thaw_during_freeze_cancels_it);
	tcase_add_test(tc, test_freeze_and_poweron_fail_busy_while_held_below);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
