/* SPDX-License-Identifier: MIT */
/* Unit tests of injected faults (core/fault/fault.c): the spec syntax, matching by op and range,
 * every trigger, seeded draws, each effect through a real queue and controller over a memory
 * disk, stalls with release and timeout, dm-dust bad blocks, and the counters. */
#undef NDEBUG
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fault/fault.h"
#include "core/stage/chain.h"
#include "tests/unit/fakedev.h"

#define DISK_SIZE (1024 * KiB)
#define BUF 16384

static struct fake F;
/* The chain over a memory disk: the faults alone (no write cache), as the daemon builds it
 * with cache.mode = writethrough. */
static struct chain CH;
#define FS (*(struct fault_set *)chain_find(&CH, "faults"))
static uint8_t disk[DISK_SIZE];
static unsigned int nexec; /* commands that reached the memory disk */

/* A bio with its own data buffer. */
struct dbio {
	struct tbio tb; /* first: bio->private points here */
	struct iovec iov;
	uint8_t buf[BUF];
};

/* The memory disk: the stage below the faults. */
static int mem_exec(void *arg, struct request *rq)
{
	(void)arg;
	__atomic_add_fetch(&nexec, 1, __ATOMIC_SEQ_CST);
	for (struct bio *b = rq->bio; b; b = b->next) {
		uint64_t off = b->offset;

		if (rq->op == BIO_OP_DISCARD) {
			memset(disk + off, 0, b->len);
			continue;
		}
		for (int i = 0; i < b->iovcnt && b->iov; i++) {
			ck_assert_uint_le(off + b->iov[i].iov_len, DISK_SIZE);
			if (rq->op == BIO_OP_READ)
				memcpy(b->iov[i].iov_base, disk + off, b->iov[i].iov_len);
			else if (rq->op == BIO_OP_WRITE)
				memcpy(disk + off, b->iov[i].iov_base, b->iov[i].iov_len);
			off += b->iov[i].iov_len;
		}
	}
	return 0;
}

static void start(bool plug, uint64_t latency_us)
{
	fake_params(&F);
	F.qp.plug = plug;
	F.cp.latency_us = latency_us;
	memset(disk, 0, sizeof(disk));
	nexec = 0;
	fake_set_now(&F, T0);
	pthread_mutex_init(&F.log_lock, NULL);
	ck_assert_int_eq(timer_init(&F.t, false), 0);
	static const struct stage_ops mem_ops = { .name = "memory", .exec = mem_exec };
	const struct stage mem = { .ops = &mem_ops };
	const struct chain_params cp = { .timer = &F.t, .clock = fake_now, .clock_arg = &F };
	char err[256];

	ck_assert_int_eq(chain_build(&CH, &mem, &cp, err, sizeof(err)), 0);
	ck_assert_int_eq(ctrl_init(&F.c, &F.cp, &F.t, chain_top(&CH)->ops->exec,
				   chain_top(&CH)->self, (int64_t)T0), 0);
	F.c.admit_ns = chain_admit_ns;
	F.c.admit_arg = &CH;
	ck_assert_int_eq(queue_init(&F.q, &F.qp, &F.c, &F.t, fake_now, &F), 0);
}

/* fake_stop(), with the fault set torn down between the controller and the timer, as the
 * daemon does: the queue's snapshots reach the set until the queue goes. */
static void stop(void)
{
	fault_clear(&FS); /* releases what is stalled */
	fake_run_until_idle(&F);
	assert_identity(&F);
	queue_destroy(&F.q);
	ctrl_destroy(&F.c);
	chain_destroy(&CH);
	timer_destroy(&F.t);
	pthread_mutex_destroy(&F.log_lock);
}

static int add(const char *spec)
{
	char err[256];
	int id = fault_add(&FS, spec, FAULT_FROM_CONTROL, err, sizeof(err));

	ck_assert_msg(id > 0, "fault_add(%s): %d: %s", spec, id, err);
	return id;
}

static void dsubmit(struct dbio *d, enum bio_op op, uint64_t off, uint32_t len, uint8_t fill)
{
	ck_assert_uint_le(len, BUF);
	tbio_init(&d->tb, &F, op, off, len);
	memset(d->buf, fill, len);
	d->iov.iov_base = d->buf;
	d->iov.iov_len = len;
	d->tb.bio.iov = (op == BIO_OP_READ || op == BIO_OP_WRITE) ? &d->iov : NULL;
	queue_submit(&F.q, &d->tb.bio);
}

/* Write @len bytes of @fill at @off and return the bio's error. */
static int write_at(uint64_t off, uint32_t len, uint8_t fill)
{
	static struct dbio d;

	dsubmit(&d, BIO_OP_WRITE, off, len, fill);
	fake_run_until_idle(&F);
	ck_assert_int_eq(d.tb.ncomplete, 1);
	return d.tb.error;
}

static int read_at(uint64_t off, uint32_t len, uint8_t *out)
{
	static struct dbio d;

	dsubmit(&d, BIO_OP_READ, off, len, 0xee);
	fake_run_until_idle(&F);
	ck_assert_int_eq(d.tb.ncomplete, 1);
	if (out)
		memcpy(out, d.buf, len);
	return d.tb.error;
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static struct fault_stats fstats(void)
{
	struct fault_stats fs;

	fault_stats(&FS, &fs);
	return fs;
}

#define LINE 512

/* A fault_line_fn that keeps the last line. */
static void copy_line(void *arg, const char *l)
{
	snprintf(arg, LINE, "%s", l);
}

/* ---- the spec syntax ---- */

static void assert_round_trip(const char *text)
{
	struct fault_spec a, b;
	char err[256], *t1, *t2;

	ck_assert_msg(fault_spec_parse(text, &a, err, sizeof(err)) == 0, "%s: %s", text, err);
	t1 = fault_spec_format(&a);
	ck_assert_ptr_nonnull(t1);
	ck_assert_msg(fault_spec_parse(t1, &b, err, sizeof(err)) == 0, "%s: %s", t1, err);
	t2 = fault_spec_format(&b);
	ck_assert_str_eq(t1, t2);
	free(t1);
	free(t2);
	fault_spec_free(&a);
	fault_spec_free(&b);
}

START_TEST(test_parse_round_trips)
{
	assert_round_trip("op=write offset=1M len=64K error=EIO every=3 seed=42");
	assert_round_trip("op=read,write error=ENOSPC prob=0.25 seed=7");
	assert_round_trip("error=ETIMEDOUT first=5 after=10");
	assert_round_trip("op=flush error=EIO after=2s");
	assert_round_trip("lie prob=1% seed=1");
	assert_round_trip("corrupt=flip bits=3 offset=4096 len=512 seed=9");
	assert_round_trip("op=read corrupt=zero");
	assert_round_trip("op=read latency=5ms");
	assert_round_trip("latency=uniform:1ms:10ms seed=3");
	assert_round_trip("latency=exp:2ms max=1s spike=200ms spike_prob=0.001 seed=3");
	assert_round_trip("latency=pareto:100us:1.5 seed=5");
	assert_round_trip("op=write stall");
	assert_round_trip("stall timeout=2s error=ETIMEDOUT");
	assert_round_trip("badblocks=1,2,3,7,9-12 blksz=4096");
	assert_round_trip("badblocks=100 error=ENODATA");
}
END_TEST

START_TEST(test_parse_fields)
{
	struct fault_spec s;
	char err[256];

	ck_assert_int_eq(fault_spec_parse("op=write offset=1M len=64K error=EIO every=3 seed=42", &s,
					  err, sizeof(err)), 0);
	ck_assert_uint_eq(s.ops, 1u << BIO_OP_WRITE);
	ck_assert_uint_eq(s.offset, 1024 * KiB);
	ck_assert_uint_eq(s.len, 64 * KiB);
	ck_assert_int_eq(s.effect, FAULT_ERROR);
	ck_assert_int_eq(s.error, EIO);
	ck_assert_uint_eq(s.every, 3);
	ck_assert(s.has_seed);
	ck_assert_uint_eq(s.seed, 42);
	fault_spec_free(&s);

	ck_assert_int_eq(fault_spec_parse("lie", &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.ops, 1u << BIO_OP_WRITE); /* a lie is about writes */
	ck_assert(!s.has_seed);
	fault_spec_free(&s);

	ck_assert_int_eq(fault_spec_parse("badblocks=9,3,4-5,3", &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.nbad, 4); /* sorted, distinct */
	ck_assert_uint_eq(s.badblocks[0], 3);
	ck_assert_uint_eq(s.badblocks[3], 9);
	ck_assert_int_eq(s.error, EIO);
	fault_spec_free(&s);

	ck_assert_int_eq(fault_spec_parse("after=30s prob=50%", &s, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(fault_spec_parse("error=EIO after=30s prob=50%", &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.after_ns, 30 * NSEC_PER_SEC);
	ck_assert(s.prob == 0.5);
	fault_spec_free(&s);
}
END_TEST

START_TEST(test_parse_refuses)
{
	static const char *const bad[] = {
		"",
		"op=write",			/* no effect */
		"error=EIO lie",		/* two effects */
		"error=EIO latency=1ms",
		"error=ENOSYS",			/* would turn off the kernel's fsync */
		"error=EBOGUS",
		"error=0",
		"op=read lie",			/* lies are about writes */
		"op=flush corrupt=flip",
		"corrupt=zero bits=3",
		"op=sideways error=EIO",
		"offset=abc error=EIO",
		"len=0 error=EIO",
		"offset=18446744073709551615 len=2 error=EIO",
		"error=EIO prob=1.5",
		"error=EIO prob=0",
		"error=EIO every=0",
		"error=EIO after=3 parsecs",
		"error=EIO after=5y",		/* durations: ns, us, ms, s, m, h, d */
		"error=EIO after=61m",		/* at most an hour */
		"latency=1.5ns",		/* whole nanoseconds */
		"latency=5",			/* a duration needs its unit */
		"latency=uniform:10ms:1ms",
		"latency=pareto:1ms",
		"latency=5ms spike=1s",		/* spike= without spike_prob= */
		"error=EIO spike=1s spike_prob=0.1",
		"error=EIO timeout=1s",
		"stall error=ETIMEDOUT",	/* an error needs a timeout to return it */
		"badblocks=",
		"badblocks=5-3",
		"badblocks=1 op=read",		/* dust's blocks are its match */
		"badblocks=1 every=2",
		"badblocks=1 blksz=1000",
		"error=EIO blksz=4096",
		"error=EIO seed=-1",
		"error=EIO frobnicate",
		"latency=2h",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fault_spec s;
		char err[256] = "";

		ck_assert_msg(fault_spec_parse(bad[i], &s, err, sizeof(err)) == -EINVAL,
			      "accepted \"%s\"", bad[i]);
		ck_assert_msg(err[0], "no reason for \"%s\"", bad[i]);
	}
}
END_TEST

/* ---- matching and triggers ---- */

START_TEST(test_error_on_range_only)
{
	uint8_t out[4 * KiB];

	start(false, 0);
	add("op=write offset=8K len=4K error=EIO");
	ck_assert_int_eq(write_at(0, 4 * KiB, 0x11), 0);
	ck_assert_int_eq(write_at(4 * KiB, 4 * KiB, 0x22), 0);
	ck_assert_int_eq(write_at(8 * KiB, 4 * KiB, 0x33), -EIO);
	ck_assert_int_eq(write_at(12 * KiB, 4 * KiB, 0x44), 0);
	ck_assert_int_eq(write_at(10 * KiB, 8 * KiB, 0x55), -EIO); /* overlapping is enough */
	ck_assert(all_bytes(disk + 8 * KiB, 4 * KiB, 0)); /* the failed writes wrote nothing */
	ck_assert(all_bytes(disk + 12 * KiB, 4 * KiB, 0x44));
	/* Reads are not matched by an op=write fault. */
	ck_assert_int_eq(read_at(8 * KiB, 4 * KiB, out), 0);
	ck_assert_uint_eq(fstats().errors[BIO_OP_WRITE], 2);
	ck_assert_uint_eq(fstats().errors[BIO_OP_READ], 0);
	ck_assert_uint_eq(fstats().f[0].matched, 2);
	ck_assert_uint_eq(fstats().f[0].injected, 2);
	stop();
}
END_TEST

START_TEST(test_flush_error)
{
	static struct dbio d;

	start(false, 0);
	add("op=flush error=EIO");
	ck_assert_int_eq(write_at(0, 4 * KiB, 1), 0);
	dsubmit(&d, BIO_OP_FLUSH, 0, 0, 0);
	fake_run_until_idle(&F);
	ck_assert_int_eq(d.tb.error, -EIO);
	ck_assert_uint_eq(fstats().errors[BIO_OP_FLUSH], 1);
	stop();
}
END_TEST

/* Which of @n writes to block 0 fail, as a bit mask. */
static uint64_t fail_mask(unsigned int n)
{
	uint64_t m = 0;

	for (unsigned int i = 0; i < n; i++)
		if (write_at(0, 512, (uint8_t)i))
			m |= 1ull << i;
	return m;
}

START_TEST(test_trigger_every)
{
	start(false, 0);
	add("error=EIO every=3");
	ck_assert_uint_eq(fail_mask(9), 0x124); /* 3rd, 6th, 9th */
	stop();
}
END_TEST

START_TEST(test_trigger_first)
{
	start(false, 0);
	add("error=EIO first=2");
	ck_assert_uint_eq(fail_mask(6), 0x3);
	stop();
}
END_TEST

START_TEST(test_trigger_after_requests)
{
	start(false, 0);
	add("error=EIO after=3 first=2");
	ck_assert_uint_eq(fail_mask(8), 0x18); /* skip 3, then fail 2 */
	stop();
}
END_TEST

START_TEST(test_trigger_after_time)
{
	start(false, 0);
	add("error=EIO after=10ms");
	ck_assert_int_eq(write_at(0, 512, 1), 0);
	fake_advance_to(&F, T0 + 10 * MS - 1);
	ck_assert_int_eq(write_at(0, 512, 1), 0);
	fake_advance_to(&F, T0 + 10 * MS);
	ck_assert_int_eq(write_at(0, 512, 1), -EIO);
	ck_assert_uint_eq(fstats().f[0].matched, 3);
	ck_assert_uint_eq(fstats().f[0].injected, 1);
	stop();
}
END_TEST

START_TEST(test_prob_same_seed_same_requests)
{
	uint64_t a, b, c;

	start(false, 0);
	add("error=EIO prob=0.5 seed=42");
	a = fail_mask(64);
	stop();
	start(false, 0);
	add("error=EIO prob=0.5 seed=42");
	b = fail_mask(64);
	stop();
	start(false, 0);
	add("error=EIO prob=0.5 seed=43");
	c = fail_mask(64);
	stop();
	ck_assert_uint_eq(a, b);
	ck_assert_uint_ne(a, c);
	/* About half: 64 fair draws fall in 16..48 except with probability < 1e-4. */
	ck_assert_int_ge(__builtin_popcountll(a), 16);
	ck_assert_int_le(__builtin_popcountll(a), 48);
}
END_TEST

START_TEST(test_seed_drawn_and_listed)
{
	struct fault_spec s;
	char err[256];

	start(false, 0);
	add("error=EIO prob=0.5");
	/* The listing carries the seed it drew, so that the fault can be added again. */
	{
		char line[LINE] = "";

		ck_assert_int_eq(fault_list(&FS, copy_line, line), 0);
		ck_assert_ptr_nonnull(strstr(line, " seed="));
		ck_assert_ptr_nonnull(strstr(line, "# id=1 source=control matched=0 injected=0"));
		ck_assert_str_eq(strtok(line, " "), "fault");
		ck_assert_str_eq(strtok(NULL, " "), "add");
		*strstr(line + 10, " #") = '\0';
		ck_assert_int_eq(fault_spec_parse(line + 10, &s, err, sizeof(err)), 0);
		ck_assert(s.has_seed);
		fault_spec_free(&s);
	}
	stop();
}
END_TEST

/* ---- effects ---- */

START_TEST(test_lie_acknowledges_and_writes_nothing)
{
	uint8_t out[4 * KiB];
	unsigned int before;

	start(false, 0);
	ck_assert_int_eq(write_at(0, 4 * KiB, 0xaa), 0);
	add("lie");
	before = nexec;
	ck_assert_int_eq(write_at(0, 4 * KiB, 0xbb), 0); /* acknowledged ... */
	ck_assert_uint_eq(nexec, before);		 /* ... never written */
	ck_assert_int_eq(read_at(0, 4 * KiB, out), 0);
	ck_assert(all_bytes(out, 4 * KiB, 0xaa));
	ck_assert_uint_eq(fstats().lies[BIO_OP_WRITE], 1);
	stop();
}
END_TEST

static unsigned int bit_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	unsigned int d = 0;

	for (size_t i = 0; i < n; i++)
		d += (unsigned int)__builtin_popcount((unsigned int)(a[i] ^ b[i]));
	return d;
}

START_TEST(test_corrupt_flip_write)
{
	static uint8_t want[8 * KiB];

	start(false, 0);
	add("op=write corrupt=flip bits=3 offset=4K len=1K seed=5");
	ck_assert_int_eq(write_at(0, 8 * KiB, 0x5a), 0);
	memset(want, 0x5a, sizeof(want));
	/* Three distinct draws could land on one bit twice: 1 or 3 bits differ, never 0 or 2. */
	{
		unsigned int d = bit_diff(disk + 4 * KiB, want, KiB);

		ck_assert_msg(d == 3 || d == 1, "%u bits flipped", d);
	}
	ck_assert_int_eq(bit_diff(disk, want, 4 * KiB), 0); /* outside the range: intact */
	ck_assert_int_eq(bit_diff(disk + 5 * KiB, want, 3 * KiB), 0);
	ck_assert_uint_eq(fstats().corrupts[BIO_OP_WRITE], 1);
	stop();
}
END_TEST

START_TEST(test_corrupt_zero_read)
{
	uint8_t out[8 * KiB];

	start(false, 0);
	ck_assert_int_eq(write_at(0, 8 * KiB, 0x77), 0);
	add("op=read corrupt=zero offset=2K len=2K");
	ck_assert_int_eq(read_at(0, 8 * KiB, out), 0);
	ck_assert(all_bytes(out, 2 * KiB, 0x77));
	ck_assert(all_bytes(out + 2 * KiB, 2 * KiB, 0));
	ck_assert(all_bytes(out + 4 * KiB, 4 * KiB, 0x77));
	ck_assert(all_bytes(disk, 8 * KiB, 0x77)); /* the disk itself is intact */
	stop();
}
END_TEST

START_TEST(test_merged_request_fails_whole)
{
	static struct dbio d[3];

	start(true, 0);
	add("op=write offset=8K len=4K error=EIO");
	dsubmit(&d[0], BIO_OP_WRITE, 4 * KiB, 4 * KiB, 1);
	dsubmit(&d[1], BIO_OP_WRITE, 8 * KiB, 4 * KiB, 2);
	dsubmit(&d[2], BIO_OP_WRITE, 64 * KiB, 4 * KiB, 3);
	fake_run_until_idle(&F);
	/* d[0] and d[1] merged into one command, which failed for both. */
	ck_assert_int_eq(d[0].tb.error, -EIO);
	ck_assert_int_eq(d[1].tb.error, -EIO);
	ck_assert_int_eq(d[2].tb.error, 0);
	ck_assert_uint_eq(fstats().errors[BIO_OP_WRITE], 1);
	stop();
}
END_TEST

START_TEST(test_latency_holds_the_slot)
{
	static struct dbio d[2];
	struct stats_snapshot ss;

	start(false, 100);
	F.c.p.queue_depth = 1;
	add("op=write latency=5ms");
	dsubmit(&d[0], BIO_OP_WRITE, 0, 4 * KiB, 1);
	dsubmit(&d[1], BIO_OP_READ, 64 * KiB, 4 * KiB, 0);
	fake_snapshot(&F, &ss);
	ck_assert_int_eq(ss.stopped, 1); /* the write's slot is busy: the read waits */
	ck_assert_int_eq(ss.stop_reason, STOP_SLOTS);
	fake_run_until_idle(&F);
	ck_assert_uint_eq(d[0].tb.done_at, T0 + 100 * US + 5 * MS);
	ck_assert_uint_eq(d[1].tb.done_at, T0 + 100 * US + 5 * MS + 100 * US);
	ck_assert_uint_eq(fstats().delays[BIO_OP_WRITE], 1);
	ck_assert_uint_eq(fstats().delays[BIO_OP_READ], 0);
	stop();
}
END_TEST

/* Draw @n latencies of a fault through fault_latency_ns(). */
static void draw(const char *spec, uint64_t *out, unsigned int n)
{
	struct request rq = { .op = BIO_OP_READ, .offset = 0, .len = 4096 };

	start(false, 0);
	add(spec);
	for (unsigned int i = 0; i < n; i++)
		out[i] = fault_latency_ns(&FS, &rq);
	stop();
}

START_TEST(test_latency_distributions)
{
	enum { N = 20000 };
	static uint64_t v[N], w[N];
	double sum = 0;
	unsigned int spikes = 0, above = 0;

	draw("latency=uniform:1ms:3ms seed=1", v, N);
	for (unsigned int i = 0; i < N; i++) {
		ck_assert_uint_ge(v[i], 1 * MS);
		ck_assert_uint_le(v[i], 3 * MS);
		sum += (double)v[i];
	}
	ck_assert_double_eq_tol(sum / N, 2.0 * MS, 0.05 * MS);

	sum = 0;
	draw("latency=exp:2ms seed=2", v, N);
	for (unsigned int i = 0; i < N; i++)
		sum += (double)v[i];
	ck_assert_double_eq_tol(sum / N, 2.0 * MS, 0.1 * MS);

	/* Pareto(scale 1ms, alpha 1.5): never below the scale, P(X > 10 ms) = 10^-1.5. */
	draw("latency=pareto:1ms:1.5 max=1s seed=3", v, N);
	for (unsigned int i = 0; i < N; i++) {
		ck_assert_uint_ge(v[i], 1 * MS);
		ck_assert_uint_le(v[i], 1000 * MS);
		above += v[i] > 10 * MS;
	}
	ck_assert_int_ge(above, N * 0.0316 * 0.8);
	ck_assert_int_le(above, N * 0.0316 * 1.2);

	draw("latency=100us spike=50ms spike_prob=0.01 seed=4", v, N);
	for (unsigned int i = 0; i < N; i++) {
		ck_assert(v[i] == 100 * US || v[i] == 100 * US + 50 * MS);
		spikes += v[i] > 100 * US;
	}
	ck_assert_int_ge(spikes, N / 100 / 2);
	ck_assert_int_le(spikes, N / 100 * 2);

	/* The same seed draws the same latencies. */
	draw("latency=pareto:1ms:1.5 max=1s seed=3", w, N);
	draw("latency=pareto:1ms:1.5 max=1s seed=3", v, N);
	ck_assert_mem_eq(v, w, sizeof(v));
}
END_TEST

START_TEST(test_stall_until_release)
{
	static struct dbio d[2];

	start(false, 0);
	add("op=write offset=0 len=4K stall");
	dsubmit(&d[0], BIO_OP_WRITE, 0, 4 * KiB, 0x42);
	dsubmit(&d[1], BIO_OP_WRITE, 64 * KiB, 4 * KiB, 0x43); /* outside: not stalled */
	ck_assert_int_eq(d[1].tb.ncomplete, 1);
	ck_assert_int_eq(d[0].tb.ncomplete, 0);
	ck_assert_uint_eq(fault_nr_held(&FS), 1);
	ck_assert_uint_eq(fstats().held, 1);
	ck_assert_uint_eq(fstats().stalls[BIO_OP_WRITE], 1);
	ck_assert(!queue_is_idle(&F.q)); /* it holds its command slot */
	fake_advance_to(&F, T0 + 3600 * NSEC_PER_SEC); /* no timeout: time does not free it */
	ck_assert_int_eq(d[0].tb.ncomplete, 0);
	ck_assert_int_eq(fault_release(&FS, 99), -ENOENT);
	ck_assert_int_eq(fault_release(&FS, 0), 1);
	ck_assert_int_eq(d[0].tb.ncomplete, 1);
	ck_assert_int_eq(d[0].tb.error, 0);
	ck_assert(all_bytes(disk, 4 * KiB, 0x42));
	ck_assert_uint_eq(fault_nr_held(&FS), 0);
	stop();
}
END_TEST

/* fault_close() releases what is stalled and refuses every later fault, so that a stop's
 * drain cannot meet one; fault_clear() does not refuse. */
START_TEST(test_close_refuses_new_faults)
{
	static struct dbio d[2];
	char err[256];
	char *spec = (char *)"op=write stall";

	start(false, 0);
	add("op=write offset=0 len=4K stall");
	dsubmit(&d[0], BIO_OP_WRITE, 0, 4 * KiB, 0x42);
	ck_assert_uint_eq(fault_nr_held(&FS), 1);
	fault_clear(&FS);
	add("op=write offset=0 len=4K stall");
	fault_close(&FS);
	ck_assert_int_eq(d[0].tb.ncomplete, 1);
	ck_assert_int_eq(fault_add(&FS, "op=write stall", FAULT_FROM_CONTROL, err, sizeof(err)),
			 -ESHUTDOWN);
	ck_assert_ptr_nonnull(strstr(err, "stopping"));
	ck_assert_int_eq(fault_replace_configured(&FS, &spec, 1, err, sizeof(err)), -ESHUTDOWN);
	ck_assert_uint_eq(fstats().nr, 0);
	dsubmit(&d[1], BIO_OP_WRITE, 0, 4 * KiB, 0x43);
	ck_assert_int_eq(d[1].tb.ncomplete, 1);
	stop();
}
END_TEST

START_TEST(test_stall_timeout_error)
{
	static struct dbio d;

	start(false, 0);
	add("op=read stall timeout=2s error=ETIMEDOUT");
	dsubmit(&d, BIO_OP_READ, 0, 4 * KiB, 0);
	ck_assert_int_eq(d.tb.ncomplete, 0);
	fake_advance_to(&F, T0 + 2 * NSEC_PER_SEC - 1);
	ck_assert_int_eq(d.tb.ncomplete, 0);
	fake_advance_to(&F, T0 + 2 * NSEC_PER_SEC);
	ck_assert_int_eq(d.tb.ncomplete, 1);
	ck_assert_int_eq(d.tb.error, -ETIMEDOUT);
	ck_assert_uint_eq(fstats().errors[BIO_OP_READ], 1);
	stop();
}
END_TEST

START_TEST(test_stall_timeout_completes)
{
	static struct dbio d;

	start(false, 0);
	add("stall timeout=1s");
	dsubmit(&d, BIO_OP_WRITE, 0, 4 * KiB, 9);
	fake_advance_to(&F, T0 + NSEC_PER_SEC);
	ck_assert_int_eq(d.tb.ncomplete, 1);
	ck_assert_int_eq(d.tb.error, 0);
	stop();
}
END_TEST

START_TEST(test_del_releases_its_stalls)
{
	static struct dbio d[2];
	int a, b;

	start(false, 0);
	a = add("op=write stall");
	b = add("op=read stall");
	dsubmit(&d[0], BIO_OP_WRITE, 0, 4 * KiB, 1);
	dsubmit(&d[1], BIO_OP_READ, 8 * KiB, 4 * KiB, 0);
	ck_assert_uint_eq(fault_nr_held(&FS), 2);
	ck_assert_int_eq(fault_release(&FS, (unsigned int)b), 1);
	ck_assert_int_eq(d[1].tb.ncomplete, 1);
	ck_assert_int_eq(d[0].tb.ncomplete, 0);
	ck_assert_int_eq(fault_del(&FS, (unsigned int)a), 0);
	ck_assert_int_eq(d[0].tb.ncomplete, 1);
	ck_assert_int_eq(fault_del(&FS, (unsigned int)a), -ENOENT);
	stop();
}
END_TEST

START_TEST(test_dust_semantics)
{
	uint8_t out[8 * KiB];
	char line[LINE] = "";

	start(false, 0);
	add("badblocks=2,5 blksz=4096");
	ck_assert_int_eq(read_at(2 * 4 * KiB, 4 * KiB, out), -EIO);
	ck_assert_int_eq(read_at(3 * 4 * KiB, 4 * KiB, out), 0);
	ck_assert_int_eq(read_at(4 * KiB + 512, 8 * KiB, out), -EIO); /* touching is enough */
	ck_assert_int_eq(read_at(2 * 4 * KiB, 4 * KiB, out), -EIO);	/* until written */
	ck_assert_int_eq(write_at(2 * 4 * KiB + 1024, 512, 0x61), 0);	/* a write succeeds ... */
	ck_assert_int_eq(read_at(2 * 4 * KiB, 4 * KiB, out), 0);	/* ... and clears it */
	ck_assert_uint_eq(out[1024], 0x61);
	ck_assert_int_eq(read_at(5 * 4 * KiB, 4 * KiB, out), -EIO);	/* the other stays bad */
	ck_assert_int_eq(fault_list(&FS, copy_line, line), 0);
	ck_assert_ptr_nonnull(strstr(line, "badblocks=5 blksz=4096"));
	ck_assert_uint_eq(fstats().errors[BIO_OP_READ], 4);
	stop();
}
END_TEST

START_TEST(test_no_faults_passes_through)
{
	start(false, 0);
	add("op=discard error=EIO");
	ck_assert_int_eq(write_at(0, 4 * KiB, 1), 0);
	fault_clear(&FS);
	ck_assert_int_eq(write_at(0, 4 * KiB, 2), 0);
	ck_assert_uint_eq(nexec, 2);
	ck_assert(all_bytes(disk, 4 * KiB, 2));
	ck_assert_uint_eq(fstats().nr, 0);
	stop();
}
END_TEST

START_TEST(test_replace_configured_keeps_control)
{
	char *good[] = { (char *)"op=read error=EIO", (char *)"op=write latency=1ms" };
	char *bad[] = { (char *)"op=read error=EIO", (char *)"op=write latency=1" };
	char *one[] = { (char *)"op=flush error=EIO" };
	char err[256];
	struct fault_stats st;

	start(false, 0);
	ck_assert_int_eq(fault_replace_configured(&FS, good, 2, err, sizeof(err)), 0);
	add("lie");
	ck_assert_uint_eq(fstats().nr, 3);
	/* A bad list changes nothing, and names the bad entry. */
	ck_assert_int_eq(fault_replace_configured(&FS, bad, 2, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "faults[1]"));
	st = fstats();
	ck_assert_uint_eq(st.nr, 3);
	ck_assert_uint_eq(st.f[0].id, 1);
	ck_assert_int_eq(fault_replace_configured(&FS, one, 1, err, sizeof(err)), 0);
	st = fstats();
	ck_assert_uint_eq(st.nr, 2);
	ck_assert_uint_eq(st.f[0].id, 3); /* the control fault stayed */
	ck_assert_uint_eq(st.f[1].id, 4);
	stop();
}
END_TEST

START_TEST(test_counters_reset)
{
	start(false, 0);
	add("error=EIO every=2");
	fail_mask(4);
	ck_assert_uint_eq(fstats().f[0].matched, 4);
	ck_assert_uint_eq(fstats().f[0].injected, 2);
	ck_assert_uint_eq(fstats().errors[BIO_OP_WRITE], 2);
	queue_stats_reset(&F.q);
	chain_stats_reset(&CH);
	ck_assert_uint_eq(fstats().f[0].matched, 0);
	ck_assert_uint_eq(fstats().errors[BIO_OP_WRITE], 0);
	/* The trigger keeps counting: the next failure is still the 6th request. */
	ck_assert_uint_eq(fail_mask(2), 0x2);
	stop();
}
END_TEST

START_TEST(test_too_many_faults)
{
	char err[256];

	start(false, 0);
	for (int i = 0; i < FAULT_MAX; i++)
		add("op=discard error=EIO seed=1");
	ck_assert_int_eq(fault_add(&FS, "op=discard error=EIO", FAULT_FROM_CONTROL, err,
				   sizeof(err)), -ENOSPC);
	stop();
}
END_TEST

static Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_parse_round_trips);
	tcase_add_test(tc, test_parse_fields);
	tcase_add_test(tc, test_parse_refuses);
	tcase_add_test(tc, test_error_on_range_only);
	tcase_add_test(tc, test_flush_error);
	tcase_add_test(tc, test_trigger_every);
	tcase_add_test(tc, test_trigger_first);
	tcase_add_test(tc, test_trigger_after_requests);
	tcase_add_test(tc, test_trigger_after_time);
	tcase_add_test(tc, test_prob_same_seed_same_requests);
	tcase_add_test(tc, test_seed_drawn_and_listed);
	tcase_add_test(tc, test_lie_acknowledges_and_writes_nothing);
	tcase_add_test(tc, test_corrupt_flip_write);
	tcase_add_test(tc, test_corrupt_zero_read);
	tcase_add_test(tc, test_merged_request_fails_whole);
	tcase_add_test(tc, test_latency_holds_the_slot);
	tcase_add_test(tc, test_latency_distributions);
	tcase_add_test(tc, test_stall_until_release);
	tcase_add_test(tc, test_close_refuses_new_faults);
	tcase_add_test(tc, test_stall_timeout_error);
	tcase_add_test(tc, test_stall_timeout_completes);
	tcase_add_test(tc, test_del_releases_its_stalls);
	tcase_add_test(tc, test_dust_semantics);
	tcase_add_test(tc, test_no_faults_passes_through);
	tcase_add_test(tc, test_replace_configured_keeps_control);
	tcase_add_test(tc, test_counters_reset);
	tcase_add_test(tc, test_too_many_faults);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(fault_suite());
}
