/* SPDX-License-Identifier: MIT */
/* The oracle of `plugdisk explore`: seeded small workloads (writes, flushes, discards, marks,
 * background destaging, reloads) run through the real write cache (core/cache) over a memory
 * image, with its write log, and cut live in every cache.powercut mode, at the end or inside
 * an op (an armed cut). Then the log's crash states (core/crash/wlog_states.c, what explore
 * checks) must hold the image the live cut left, with the marks the workload had seen.
 *
 * A live cut outside explore's bound is counted, not failed: the bound (doc/replay.md) is
 * every subset of the pending writes in a window of at most WS_SMALL_WINDOW, in a larger one
 * every prefix (in completion order, with or without the writes a later one overwrote in the
 * same epoch) and every subset that drops up to k, and one torn write at a time, the writes
 * before it kept whole and those after it lost, keeping a head or a tail run of its atomic
 * units. The outcome of each pending write (destaged, kept, torn, lost) is read back from
 * the traces of the memory image: every write's data is stamped with its number.
 *
 * Without arguments: a Check suite of a few hundred cuts and the defects it caught. With
 * --cuts N [--seed S]: the long run (make oracle), its figures on stdout. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cache/cache.h"
#include "core/crash/wlog_states.h"
#include "core/util/clock.h"
#include "core/util/full_rw.h"
#include "core/util/log.h"
#include "core/util/prng.h"
#include "tests/unit/cacheio.h"
#include "tests/unit/suite.h"

/* An assertion that holds outside a Check test too (the long run). */
#define need(c)                                                                  \
	do {                                                                     \
		if (!(c)) {                                                      \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                 \
		}                                                                \
	} while (0)

#define DISK (32u << 10)
#define MAX_OPS 40
#define MAX_WRITES (2 * MAX_OPS + 2)
#define MAX_PIECES 512
#define ORACLE_K 2

enum op_kind { OP_WRITE, OP_FLUSH, OP_DISCARD, OP_MARK, OP_TICK, OP_RELOAD };

struct op {
	enum op_kind k;
	uint64_t off, len;	/* WRITE, DISCARD */
	uint32_t id;		/* WRITE: its stamp */
	uint64_t woff, wlen;	/* DISCARD: a write that completes while it is in flight */
	uint32_t wid;		/* 0: none */
	uint64_t arg;		/* TICK: steps; RELOAD: 1 flush ignore, 2 no destage delay,
				 * 3 a new atomic unit (flush and delay back to the start's) */
};

struct workload {
	uint64_t seed;
	uint32_t unit;		/* cache.atomic_write */
	unsigned int nops;
	struct op ops[MAX_OPS];
	bool armed;		/* a random armed cut inside the workload */
	uint64_t arm_range, arm_seed, cut_seed;
};

/* The memory image below the cache, and what reached it. */
struct mem {
	uint8_t d[DISK];
	struct cache *c;
	const struct op *during_discard;	/* its write runs inside the next discard */
	bool destaged[MAX_WRITES + 1];
	struct piece {
		uint32_t id;
		uint64_t off, len;
	} pieces[MAX_PIECES];		/* what the cut wrote, in order */
	unsigned int npieces;
	int inner_ret;
};

static uint64_t fake_ns;

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_ns;
}

static void stamp(uint8_t *buf, uint32_t id, uint64_t off, uint64_t len)
{
	for (uint64_t o = 0; o < len; o += 8) {
		uint64_t v = ((uint64_t)id << 32) | ((off + o) / 8);

		memcpy(buf + o, &v, 8);
	}
}

static uint32_t stamp_id(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return (uint32_t)(v >> 32);
}

static int mem_write(struct mem *m, struct request *rq, bool cut)
{
	rq_copy(rq, 0, m->d + rq->offset, rq->len, false);
	if (cut) {
		need((m->npieces) < MAX_PIECES);
		m->pieces[m->npieces++] = (struct piece){ stamp_id(m->d + rq->offset), rq->offset,
							   rq->len };
	} else {
		m->destaged[stamp_id(m->d + rq->offset)] = true;
	}
	return 0;
}

static int mem_lower(void *arg, struct request *rq)
{
	struct mem *m = arg;

	need((rq_end(rq)) <= DISK);
	switch (rq->op) {
	case BIO_OP_READ:
		rq_copy(rq, 0, m->d + rq->offset, rq->len, true);
		return 0;
	case BIO_OP_WRITE:
		return mem_write(m, rq, false);
	case BIO_OP_DISCARD:
		memset(m->d + rq->offset, 0, rq->len);
		if (m->during_discard) { /* another thread's write completes meanwhile */
			const struct op *o = m->during_discard;
			static uint8_t buf[DISK];

			m->during_discard = NULL;
			stamp(buf, o->wid, o->woff, o->wlen);
			m->inner_ret = cache_io(m->c, BIO_OP_WRITE, o->woff, o->wlen, buf);
		}
		return 0;
	default:
		return 0;
	}
}

static int mem_image(void *arg, struct request *rq)
{
	need((rq->op) == BIO_OP_WRITE);
	return mem_write(arg, rq, true);
}

/* --- the workload ----------------------------------------------------------------------- */

static uint64_t pick(uint64_t *r, uint64_t n)
{
	return prng_splitmix64(r) % n;
}

/* A range of 512-byte sectors in the hot first half of the disk, at most @max_units units. */
static void pick_range(uint64_t *r, uint32_t unit, uint64_t *off, uint64_t *len)
{
	uint64_t max = 8 * (uint64_t)unit < 8192 ? 8 * (uint64_t)unit : 8192;

	*len = 512 * (1 + pick(r, max / 512));
	*off = 512 * pick(r, (DISK / 2) / 512);
	if (pick(r, 4) == 0)
		*off = (*off / unit) * unit; /* aligned: whole units */
}

static void workload_make(struct workload *w, uint64_t seed)
{
	static const uint32_t units[] = { 512, 1024, 4096 };
	uint64_t r = seed;
	uint32_t id = 0;
	bool large = pick(&r, 5) == 0; /* a window past WS_SMALL_WINDOW */

	memset(w, 0, sizeof(*w));
	w->seed = seed;
	w->unit = units[pick(&r, 3)];
	w->nops = 1 + (unsigned int)pick(&r, large ? MAX_OPS : 24);
	for (unsigned int i = 0; i < w->nops; i++) {
		struct op *o = &w->ops[i];
		uint64_t k = pick(&r, 100);

		if (large)
			k = k < 85 ? 0 : k < 90 ? 60 : k < 95 ? 30 : 75;
		if (k < 50) {
			o->k = OP_WRITE;
			pick_range(&r, w->unit, &o->off, &o->len);
			if (i && w->ops[i - 1].k == OP_WRITE && pick(&r, 4) == 0) {
				/* overwrite the last write, the cache supersedes it */
				o->off = w->ops[i - 1].off;
				o->len = w->ops[i - 1].len;
			}
			o->id = ++id;
		} else if (k < 60) {
			o->k = OP_FLUSH;
		} else if (k < 66) {
			o->k = OP_DISCARD;
			pick_range(&r, w->unit, &o->off, &o->len);
			if (pick(&r, 2)) {
				pick_range(&r, w->unit, &o->woff, &o->wlen);
				if (pick(&r, 2)) { /* over the discarded range */
					o->woff = o->off;
					o->wlen = o->len;
				}
				o->wid = ++id;
			}
		} else if (k < 78) {
			o->k = OP_MARK;
		} else if (k < 94) {
			o->k = OP_TICK;
			o->arg = 1 + pick(&r, 4);
		} else {
			o->k = OP_RELOAD;
			o->arg = pick(&r, 4);
		}
	}
	w->armed = pick(&r, 3) == 0;
	w->arm_range = w->nops;
	w->arm_seed = prng_splitmix64(&r) | 1;
	w->cut_seed = prng_splitmix64(&r) | 1;
}

/* --- a live cut ------------------------------------------------------------------------- */

struct live {
	struct mem m;
	uint64_t marks;		/* acknowledged while the power was on */
};

static char log_path[64];

static void run_live(const struct workload *w, int mode, struct live *lv)
{
	static uint8_t buf[DISK];
	struct cache_params p;
	struct cache_stats st;
	struct cache_arm arm;
	struct cache c;

	memset(lv, 0, sizeof(*lv));
	lv->m.c = &c;
	fake_ns = 1000ull * NSEC_PER_SEC;
	cache_params_default(&p);
	p.mode = CACHE_MODE_WRITEBACK;
	p.size = 1 << 20;
	p.destage_delay_ms = 10;
	p.destage_rate = 0;
	p.atomic_write = w->unit;
	p.powercut = (uint32_t)mode;
	p.seed = w->seed | 1;
	need((cache_init(&c, &p, mem_lower, &lv->m, fake_clock, NULL)) == 0);
	cache_set_image(&c, mem_image, &lv->m);
	need((cache_open_log(&c, log_path, DISK)) == 0);
	if (w->armed) {
		struct cache_arm a = { .kind = CACHE_ARM_RANDOM, .n = w->arm_range,
				       .seed = w->arm_seed, .has_mode = true,
				       .mode = (uint32_t)mode };

		need((cache_arm(&c, &a)) == 0);
	}
	for (unsigned int i = 0; i < w->nops; i++) {
		const struct op *o = &w->ops[i];
		int ret = 0;

		switch (o->k) {
		case OP_WRITE:
			stamp(buf, o->id, o->off, o->len);
			ret = cache_io(&c, BIO_OP_WRITE, o->off, o->len, buf);
			break;
		case OP_FLUSH:
			ret = cache_io(&c, BIO_OP_FLUSH, 0, 0, NULL);
			break;
		case OP_DISCARD:
			lv->m.during_discard = o->wid ? o : NULL;
			ret = cache_io(&c, BIO_OP_DISCARD, o->off, o->len, NULL);
			if (!ret && o->wid)
				ret = lv->m.inner_ret;
			lv->m.during_discard = NULL;
			break;
		case OP_MARK: {
			char text[32];

			snprintf(text, sizeof(text), "m%u", i);
			need((cache_mark(&c, text)) == 0);
			lv->marks++;
			break;
		}
		case OP_TICK:
			fake_ns += 11 * NSEC_PER_MSEC;
			for (uint64_t s = 0; s < o->arg && cache_tick(&c) == 0; s++)
				;
			break;
		case OP_RELOAD:
			p.flush = o->arg == 1 ? CACHE_FLUSH_IGNORE : CACHE_FLUSH_HONOUR;
			p.destage_delay_ms = o->arg == 2 ? 0 : 10;
			if (o->arg == 3) /* a new atomic unit for the writes from here on */
				p.atomic_write = p.atomic_write == 512 ? 4096 : p.atomic_write / 2;
			cache_reconfigure(&c, &p);
			break;
		}
		cache_snapshot(&c, &st, &arm);
		if (ret || !st.powered) /* the program stops at its first error */
			break;
	}
	cache_snapshot(&c, &st, &arm);
	if (st.powered)
		need((cache_powercut(&c, mode, w->cut_seed, "oracle")) == 0);
	cache_free(&c);
}

/* --- does explore offer it? --------------------------------------------------------------- */

enum verdict { V_MATCH, V_MISS, V_OUT_TORN_MANY, V_OUT_TORN_SHAPE, V_OUT_TORN_OTHERS,
	       V_OUT_LARGE, V_NR };

static const char *const verdict_names[] = {
	"matched", "MISSED", "outside: several torn writes",
	"outside: a torn write that is no head or tail run",
	"outside: a torn write with later writes kept or earlier ones lost",
	"outside: a large window's subset", NULL,
};

enum outcome { O_LOST, O_WHOLE, O_TORN };

/* Is the live cut inside explore's bound (see the top)? The outcome of each pending write of
 * the cut's window, from the traces. */
static enum verdict classify(const struct ws_log *l, const struct live *lv)
{
	const struct ws_window *win = &l->win[l->nwin - 1];
	uint64_t n = win->end - win->durable, ntorn = 0, t = 0, lost = 0;
	enum outcome v[2 * MAX_OPS + 2];
	bool covered[2 * MAX_OPS + 2] = { false };
	bool head = false, tail = false;

	for (uint64_t i = 0; i < n; i++) {
		const struct ws_op *op = &l->ops[win->durable + i];
		uint32_t id;
		uint64_t kept = 0, first = UINT64_MAX, last = 0, runs = 0;

		if (!op->data) { /* a discard is never pending: it ends its window */
			v[i] = O_WHOLE;
			continue;
		}
		id = stamp_id(op->data);
		if (lv->m.destaged[id]) {
			v[i] = O_WHOLE;
			continue;
		}
		for (unsigned int p = 0; p < lv->m.npieces; p++) {
			const struct piece *pc = &lv->m.pieces[p];

			if (pc->id != id)
				continue;
			kept += pc->len;
			runs++;
			first = pc->off < first ? pc->off : first;
			last = pc->off + pc->len > last ? pc->off + pc->len : last;
		}
		v[i] = !kept ? O_LOST : kept == op->len ? O_WHOLE : O_TORN;
		if (v[i] == O_TORN) {
			ntorn++;
			t = i;
			head = runs == 1 && first == op->off;
			tail = runs == 1 && last == op->off + op->len;
		}
	}
	/* A lost write that a later kept write of its epoch covers leaves the same image as
	 * one kept under it. */
	for (uint64_t i = 0; i < n; i++) {
		const struct ws_op *a = &l->ops[win->durable + i];

		for (uint64_t j = i + 1; v[i] == O_LOST && j < n; j++) {
			const struct ws_op *b = &l->ops[win->durable + j];

			if (v[j] == O_WHOLE && b->data && b->epoch == a->epoch && b->off <= a->off &&
			    a->off + a->len <= b->off + b->len)
				v[i] = O_WHOLE, covered[i] = true;
		}
	}
	if (getenv("ORACLE_VERBOSE")) {
		fprintf(stderr, "window %" PRIu64 " (kind %d): durable %" PRIu64 ", pending %" PRIu64
			", marks %" PRIu64 "\n", l->nwin - 1, win->kind, win->durable, n, lv->marks);
		for (uint64_t i = 0; i < n; i++) {
			const struct ws_op *op = &l->ops[win->durable + i];

			fprintf(stderr, "  op %" PRIu64 ": id %u epoch %" PRIu64 " %" PRIu64 "+%" PRIu64
				" %s%s\n", win->durable + i, op->data ? stamp_id(op->data) : 0,
				op->epoch, op->off, op->len, (const char *[]){ "lost", "whole",
				"torn" }[v[i]], ws_op_overwritten(l, win, i) ? " (overwritten)" : "");
		}
	}
	if (ntorn > 1)
		return V_OUT_TORN_MANY;
	if (ntorn == 1) {
		const struct ws_op *op = &l->ops[win->durable + t];
		uint64_t units = ws_op_units(l, op);

		if (!head && !tail)
			return V_OUT_TORN_SHAPE;
		if (units - 1 > WS_TEAR_VARIANTS)
			return V_OUT_TORN_SHAPE; /* explore samples the run's lengths */
		for (uint64_t i = 0; i < n; i++)
			if ((i < t && v[i] != O_WHOLE) || (i > t && v[i] != O_LOST))
				return V_OUT_TORN_OTHERS;
		return V_MISS;
	}
	if (n <= WS_SMALL_WINDOW)
		return V_MISS;
	for (uint64_t i = 0; i < n; i++)
		lost += v[i] == O_LOST;
	if (lost <= ORACLE_K)
		return V_MISS;
	/* A prefix in completion order, or one of the writes no later write of their epoch
	 * overwrote with the overwritten ones lost (or hidden under a kept overwriter). */
	for (int with_over = 0; with_over < 2; with_over++) {
		uint64_t i = 0;
		bool ok = true;

		for (bool in_prefix = true; i < n && ok; i++) {
			if (with_over && ws_op_overwritten(l, win, i)) {
				ok = v[i] == O_LOST || covered[i];
				continue;
			}
			if (in_prefix && v[i] != O_WHOLE)
				in_prefix = false;
			if (!in_prefix)
				ok = v[i] == O_LOST;
		}
		if (ok)
			return V_MISS;
	}
	return V_OUT_LARGE;
}

struct tally {
	uint64_t cuts, v[V_NR], kinds[6];
	uint64_t states;
	uint64_t first_miss_seed;
	int first_miss_mode;
};

static enum verdict check_cut(const struct workload *w, int mode, struct tally *ty)
{
	static uint8_t img[DISK];
	static struct live lv;
	struct ws_builder b;
	struct ws_log l;
	char err[256];
	enum verdict vd = V_MISS;

	run_live(w, mode, &lv);
	if (ws_log_open(&l, log_path, ORACLE_K, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	need(l.cut);
	ws_builder_init(&b);
	ty->states += l.nstates;
	for (uint64_t id = 0; id < l.nstates && vd == V_MISS; id++) {
		struct ws_state s;
		struct extmap m;
		uint64_t nacked;

		ws_state_decode(&l, id, &s);
		ws_state_mark(&l, &s, &nacked);
		if (nacked != lv.marks)
			continue;
		extmap_init(&m);
		need((ws_state_build(&l, &b, &s, &m)) == 0);
		memset(img, 0, sizeof(img));
		extmap_read(&m, 0, DISK, img);
		if (!memcmp(img, lv.m.d, DISK)) {
			vd = V_MATCH;
			ty->kinds[s.kind]++;
		}
		extmap_free(&m);
	}
	if (vd != V_MATCH)
		vd = classify(&l, &lv);
	ws_builder_free(&b);
	ws_log_close(&l);
	ty->cuts++;
	ty->v[vd]++;
	return vd;
}

static void oracle_tmp(void)
{
	int fd;

	/* tmpfs when there is one: the log is rewritten at every cut */
	snprintf(log_path, sizeof(log_path), "%s/plugdisk-test-oracle.XXXXXX",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	fd = mkstemp(log_path);
	need(fd >= 0);
	close(fd);
}

/* @cuts live cuts from @seed on: workloads in turn, each cut in every mode. */
static void run_oracle(uint64_t seed, uint64_t cuts, struct tally *ty)
{
	uint64_t r = seed;

	memset(ty, 0, sizeof(*ty));
	oracle_tmp();
	while (ty->cuts < cuts) {
		struct workload w;

		workload_make(&w, prng_splitmix64(&r));
		for (int mode = 0; mode < CACHE_CUT_NR && ty->cuts < cuts; mode++)
			if (check_cut(&w, mode, ty) == V_MISS && ty->v[V_MISS] == 1) {
				ty->first_miss_seed = w.seed;
				ty->first_miss_mode = mode;
			}
	}
	unlink(log_path);
}

static void print_tally(FILE *f, const struct tally *ty, double secs)
{
	fprintf(f, "oracle: %" PRIu64 " live cuts, %" PRIu64 " states offered, %.1f s\n", ty->cuts,
		ty->states, secs);
	for (int i = 0; i < V_NR; i++)
		fprintf(f, "  %-66s %" PRIu64 "\n", verdict_names[i], ty->v[i]);
	fprintf(f, "  matched by kind:");
	for (int k = 0; ws_kind_names[k]; k++)
		fprintf(f, " %s %" PRIu64 "%s", ws_kind_names[k], ty->kinds[k],
			ws_kind_names[k + 1] ? "," : "\n");
	if (ty->v[V_MISS])
		fprintf(f, "  first miss: workload seed %" PRIu64 ", mode %s\n",
			ty->first_miss_seed, cache_cut_names[ty->first_miss_mode]);
}

/* --- the suite ---------------------------------------------------------------------------- */

static struct workload one(uint32_t unit)
{
	struct workload w;

	memset(&w, 0, sizeof(w));
	w.seed = 7;
	w.unit = unit;
	w.cut_seed = 3;
	return w;
}

static void add(struct workload *w, struct op o)
{
	w->ops[w->nops++] = o;
}

/* A write that completes while a discard is in flight is not durable when the discard
 * completes: a cut that drops it leaves a state explore offers. */
START_TEST(test_write_during_discard_is_pending)
{
	struct workload w = one(4096);
	struct tally ty = { 0 };

	oracle_tmp();
	add(&w, (struct op){ .k = OP_WRITE, .off = 0, .len = 4096, .id = 1 });
	add(&w, (struct op){ .k = OP_DISCARD, .off = 8192, .len = 4096, .woff = 4096,
			     .wlen = 4096, .wid = 2 });
	add(&w, (struct op){ .k = OP_MARK });
	ck_assert_int_eq(check_cut(&w, CACHE_CUT_DROP, &ty), V_MATCH);
	/* over the discarded range: kept, it lies over the discard's zeros */
	w.ops[1].woff = 8192;
	ck_assert_int_eq(check_cut(&w, CACHE_CUT_PREFIX, &ty), V_MATCH);
	ck_assert_int_eq(check_cut(&w, CACHE_CUT_DROP, &ty), V_MATCH);
	unlink(log_path);
}
END_TEST

/* A large window where the cache superseded a write: a prefix cut keeps the writes after it
 * in completion order, not the overwritten one, and drops more than k. */
START_TEST(test_prefix_after_overwrite)
{
	struct workload w = one(4096);
	struct tally ty = { 0 };
	uint32_t id = 0;

	oracle_tmp();
	add(&w, (struct op){ .k = OP_WRITE, .off = 0, .len = 4096, .id = 1 });
	for (id = 2; id <= 13; id++)
		add(&w, (struct op){ .k = OP_WRITE, .off = 4096 + 512 * (uint64_t)(id - 1),
				     .len = 512, .id = id });
	add(&w, (struct op){ .k = OP_WRITE, .off = 0, .len = 4096, .id = id });
	for (uint64_t s = 1; s < 40; s++) { /* prefixes of every length */
		w.cut_seed = s;
		ck_assert_int_eq(check_cut(&w, CACHE_CUT_PREFIX, &ty), V_MATCH);
	}
	unlink(log_path);
}
END_TEST

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : dflt;
}

/* A few hundred live cuts of seeded workloads: no miss. */
START_TEST(test_oracle_short)
{
	struct tally ty;
	uint64_t seed = env_u64("ORACLE_SEED", 20261206);

	run_oracle(seed, env_u64("ORACLE_CUTS", 400), &ty);
	print_tally(stderr, &ty, 0);
	ck_assert_msg(!ty.v[V_MISS], "explore missed %" PRIu64 " live cuts (seed %" PRIu64 ")",
		      ty.v[V_MISS], seed);
	ck_assert_uint_gt(ty.v[V_MATCH], ty.cuts * 3 / 4); /* the bound covers most cuts */
}
END_TEST

int main(int argc, char **argv)
{
	log_init("test_oracle", false, LOG_LVL_WARN);
	if (argc > 1) {
		uint64_t cuts = 10000, seed = (uint64_t)time(NULL);
		struct timespec a, b;
		struct tally ty;

		for (int i = 1; i + 1 < argc; i += 2) {
			if (!strcmp(argv[i], "--workload") && i + 3 < argc) {
				/* one workload seed, one mode (by number), verbose */
				struct workload w;

				oracle_tmp();
				setenv("ORACLE_VERBOSE", "1", 1);
				workload_make(&w, strtoull(argv[i + 1], NULL, 0));
				for (unsigned int o = 0; o < w.nops; o++)
					fprintf(stderr, "op %u: kind %d %" PRIu64 "+%" PRIu64 " id %u"
						" inner %" PRIu64 "+%" PRIu64 " id %u arg %" PRIu64 "\n",
						o, w.ops[o].k, w.ops[o].off, w.ops[o].len, w.ops[o].id,
						w.ops[o].woff, w.ops[o].wlen, w.ops[o].wid, w.ops[o].arg);
				fprintf(stderr, "unit %u armed %d\n", w.unit, w.armed);
				memset(&ty, 0, sizeof(ty));
				printf("%s\n", verdict_names[check_cut(&w, atoi(argv[i + 3]), &ty)]);
				unlink(log_path);
				return 0;
			}
			if (!strcmp(argv[i], "--cuts"))
				cuts = strtoull(argv[i + 1], NULL, 0);
			else if (!strcmp(argv[i], "--seed"))
				seed = strtoull(argv[i + 1], NULL, 0);
			else {
				fprintf(stderr, "usage: %s [--cuts N] [--seed S]\n", argv[0]);
				return 2;
			}
		}
		printf("oracle: seed %" PRIu64 "\n", seed);
		clock_gettime(CLOCK_MONOTONIC, &a);
		run_oracle(seed, cuts, &ty);
		clock_gettime(CLOCK_MONOTONIC, &b);
		print_tally(stdout, &ty, (double)(b.tv_sec - a.tv_sec) +
						 (double)(b.tv_nsec - a.tv_nsec) / 1e9);
		return ty.v[V_MISS] ? 1 : 0;
	}
	{
		Suite *s = suite_create("oracle");
		TCase *tc = tcase_create("oracle");

		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, test_write_during_discard_is_pending);
		tcase_add_test(tc, test_prefix_after_overwrite);
		tcase_add_test(tc, test_oracle_short);
		suite_add_tcase(s, tc);
		return run_suite(s);
	}
}
