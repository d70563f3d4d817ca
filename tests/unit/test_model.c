/* SPDX-License-Identifier: MIT */
/* A reference-model test of the stages below the controller: the write cache (core/cache/)
 * over the fault set (core/fault/) over a memory image, driven by seeded random sequences
 * and checked against a small model of what the disk promises.
 *
 * What the model checks. Every write, zero write and discard puts a value on its 512-byte
 * blocks (a write's blocks carry its number, so a block read back names the write it came
 * from; anything else is garbage and a divergence). Logical time ticks at every issue and
 * every completion, and the model keeps, per block, the operations since the last power cut:
 *   - a read may return a value of an operation issued before the read ended and not
 *     overwritten before the read began (overwritten: an acknowledged operation on the block
 *     issued after the first one ended); so old or new data only while a write is
 *     unacknowledged, and an unacknowledged (or failed) write may be seen until something
 *     acknowledged replaces it;
 *   - a flush that succeeds with cache.flush = honour makes every operation acknowledged
 *     before it was issued durable; after a cut, a block may hold only a value that no durable
 *     operation issued after it replaced ("nothing a completed flush covered is lost");
 *   - the cut's own choices, given the image just before the cut: `drop` writes nothing;
 *     `subset` and `tear` keep or lose each write's aligned cache.atomic_write units whole
 *     (a unit seen both kept and lost is a divergence); `prefix` keeps whole writes, and a
 *     write kept with an earlier one lost (earlier: in completion order, in the same flush
 *     epoch unless a later write of its epoch covered it, or in an earlier epoch) is a
 *     divergence. Writes that may already have been destaged, or were still in flight, are
 *     free, and so is every write while a destage that an error fault planned to fail may
 *     still be held;
 *   - after a cut every request fails with EIO until poweron; a request in flight across a
 *     cut fails, or (a read) returns data of the image after the cut, never data the cut
 *     dropped; a flush in flight across a cut does not succeed;
 *   - poweron with the power on answers -EALREADY at once; with it off, poweron waits for
 *     the destages the cut left held below the cache (so it parks like a request until the
 *     stall is released), and of the poweron steps waiting at once, one returns 0;
 *   - an error only from the power being off or an error fault in force; powercut returns
 *     while requests are stalled; after queue_freeze() and cache_freeze() (the control file's
 *     freeze) the image holds what was acknowledged;
 *   - at the end, with the faults gone and the power on, a read of the whole disk;
 *   - with the d2 check, the write log (cache.log): its flush records close epochs 1, 2, 3...
 *     with none missing, as `plugdisk replay --crash N` counts them.
 * Not modelled: lie, corrupt, latency and dust faults, the log's write records, which op an
 * armed cut fires at (the model sees the power go and checks the cut like any other).
 *
 * The driver. Each sequence is generated from its seed alone (so that it replays), then run:
 * writes, zero writes, reads, flushes, discards, background destaging on the fake clock,
 * power cuts in every mode, poweron, armed cuts, error and stall faults added, deleted and
 * released, live reconfiguration of the cache, and freeze/thaw through a real queue and
 * controller. Requests run on NR_ACTORS submitter threads, one step at a time: the driver
 * hands a step to an idle thread and waits until every busy thread has either finished or
 * sleeps (parked behind a stall), so that the interleaving is the sequence's, not the
 * scheduler's (while no stall fault is in force nothing can wait, and steps run in the
 * driver's own thread). On the first divergence the sequence is shrunk (steps dropped while
 * it still fails the same way) and printed with its seed and a command that replays it.
 *
 * Known defects. A check that current code fails goes in KNOWN_DEFECTS, off by default, so
 * that `make check` stays green until its fix lands; `make model CHECKS=all` runs with every
 * check on. test_known_defects runs one short sequence per check: it must diverge while the
 * check is listed and pass once it is not (and one for poweron, whose checks are always on). Every fix has landed, so KNOWN_DEFECTS is empty
 * and each sequence is the regression test of its fix; the checks, by the defect they caught:
 *   d1  a read in flight across powercut + poweron returned data the cut dropped (now: it
 *       fails with EIO, the power generation having changed);
 *   d2  a failed flush closed an epoch that no flush record named (now: WLOG_FLUSH_FAILED);
 *   d5  powercut waited behind a stalled write (now: it returns at once and hands the held
 *       destage back; poweron waits for it, so a poweron can wait until release);
 *   d6  freeze left acknowledged writes in the cache, not in the image (now: cache_freeze);
 *   d7  prefix drew k per epoch, so a newer epoch survived an older one (now: one prefix);
 *   fx  a flush in flight across powercut + poweron succeeded (now: it fails with EIO).
 * With a check off, the driver avoids what it needs (d1, fx: no poweron while such a request
 * waits; d5: no stall faults on writes), so that a new defect can be listed the same way.
 *
 *   make check TESTS=build/tests/unit/test_model     # 1500 sequences, 200 under a sanitizer
 *   make model SEQUENCES=100000 [SEED=S] [CHECKS=all|d1,d2,d5,d6,d7,fx]
 *   build/tests/unit/test_model --replay SEED --keep 3,7,9 [--checks ...] [-v]
 *   MODEL_DEBUG=1 build/tests/unit/test_model --replay ...   # with the cache's debug log
 */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "core/util/barrier.h"
#include "core/cache/cache.h"
#include "core/ctrl/ctrl.h"
#include "core/fault/fault.h"
#include "core/util/log.h"
#include "core/util/prng.h"
#include "core/queue/queue.h"
#include "core/stage/chain.h"
#include "core/util/timer.h"
#include "core/cache/wlog.h"
#include "tests/unit/cacheio.h"
#include "tests/unit/suite.h"

#define BLK 512u
#define NBLK 256u		/* a 128 KiB disk: two chunks of the cache's index */
#define DISK ((uint64_t)NBLK * BLK)
#define MAXSTEPS 400
#define SEQ_STEPS 200		/* a sequence has SEQ_STEPS/2 .. SEQ_STEPS steps */
#define MAXV (MAXSTEPS + 1)	/* value-carrying operations of a sequence, plus none */
#define NR_ACTORS 4
#define MAXUNITS 16		/* a write spans at most 16 blocks, so at most 16 units */
#define T0 (1000ull * NSEC_PER_SEC)

/* Optional checks, by the defect they catch. */
enum {
	CHK_D1_READ_ACROSS_CUT = 1u << 0,	/* a read in flight across cut+poweron */
	CHK_D5_CUT_BEHIND_STALL = 1u << 1,	/* powercut waits behind a stalled write */
	CHK_D6_FREEZE = 1u << 2,		/* freeze leaves acknowledged writes out */
	CHK_D7_PREFIX_EPOCHS = 1u << 3,		/* prefix keeps a newer epoch, loses an older */
	CHK_FX_FLUSH_ACROSS_CUT = 1u << 4,	/* a flush in flight across a cut succeeds */
	CHK_D2_LOG_EPOCHS = 1u << 5,		/* a failed flush leaves a gap in the log */
	CHK_ALL = (1u << 6) - 1,
};

static const char *const check_names[] = { "d1", "d5", "d6", "d7", "fx", "d2", NULL };

/* Checks that current code fails: off unless asked for. None now; list a check here (as
 * "(CHK_D1_READ_ACROSS_CUT | ...)") while its defect is known and unfixed, and remove it when
 * the fix lands (a branch with the fix can try it first with -DKNOWN_DEFECTS=0 in CFLAGS). */
#ifndef KNOWN_DEFECTS
#define KNOWN_DEFECTS 0u
#endif

/* ---- the memory image ------------------------------------------------------------------- */

struct mem {
	pthread_mutex_t lock;
	uint8_t img[DISK];	/* lock */
};

static int mem_exec(void *arg, struct request *rq)
{
	struct mem *m = arg;
	uint64_t pos = rq->offset;

	if (rq->op != BIO_OP_FLUSH && rq_end(rq) > DISK)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	switch (rq->op) {
	case BIO_OP_READ:
	case BIO_OP_WRITE:
		for (struct bio *b = rq->bio; b; b = b->next)
			for (int i = 0; i < b->iovcnt; i++) {
				if (rq->op == BIO_OP_READ)
					memcpy(b->iov[i].iov_base, m->img + pos, b->iov[i].iov_len);
				else
					memcpy(m->img + pos, b->iov[i].iov_base, b->iov[i].iov_len);
				pos += b->iov[i].iov_len;
			}
		break;
	case BIO_OP_DISCARD:
		memset(m->img + rq->offset, 0, rq->len);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/* ---- block contents: a value number and the block's place -------------------------------- */

static void fill_block(uint8_t *p, uint32_t val, uint32_t blk)
{
	uint64_t s = ((uint64_t)val << 32) | blk, w[BLK / 8];

	if (!val) {
		memset(p, 0, BLK);
		return;
	}
	w[0] = ((uint64_t)val << 32) | blk;
	for (unsigned int i = 1; i < BLK / 8; i++)
		w[i] = prng_splitmix64(&s);
	memcpy(p, w, BLK);
}

/* The value a block read at @blk holds, or -1 for anything no operation wrote there. */
static int64_t decode_block(const uint8_t *p, uint32_t blk)
{
	uint8_t want[BLK];
	uint64_t w0;
	uint32_t val;

	memcpy(&w0, p, 8);
	val = (uint32_t)(w0 >> 32);
	if (val >= MAXV || (uint32_t)w0 != (val ? blk : 0))
		return -1;
	fill_block(want, val, blk);
	return memcmp(p, want, BLK) ? -1 : (int64_t)val;
}

/* ---- steps and their generator ----------------------------------------------------------- */

enum kind {
	K_WRITE, K_ZERO, K_READ, K_FLUSH, K_DISCARD, K_TICK, K_CUT, K_ON, K_ARM, K_FADD, K_FDEL,
	K_RELEASE, K_RECONF, K_FREEZE, K_RELOAD, K_NR
};

static const char *const kind_names[K_NR] = {
	"write", "write-zeroes", "read", "flush", "discard", "tick", "powercut", "poweron", "arm",
	"fault-add", "fault-del", "release", "reconfigure", "freeze", "fault-reload",
};

/* One step, everything needed to run it again. */
struct step {
	enum kind k;
	uint32_t blk, nblk;	/* range in blocks (FADD: nblk 0 = the whole disk) */
	int64_t a, b, c;	/* by kind, see gen_step() */
};

/* The cache's start-up settings of a sequence. */
struct seqcfg {
	struct cache_params p;
	uint32_t nsteps;
};

struct gen {
	uint64_t s;
};

static uint64_t rnd(struct gen *g, uint64_t n)
{
	return n ? prng_splitmix64(&g->s) % n : 0;
}

static void gen_range(struct gen *g, struct step *st)
{
	if (rnd(g, 10) < 6) { /* a hot spot, so that writes overlap */
		st->blk = (uint32_t)rnd(g, 32);
		st->nblk = 1 + (uint32_t)rnd(g, 8);
	} else {
		st->blk = (uint32_t)rnd(g, NBLK);
		st->nblk = 1 + (uint32_t)rnd(g, 16);
	}
	if (st->blk + st->nblk > NBLK)
		st->nblk = NBLK - st->blk;
}

static const uint32_t atomic_sizes[] = { 512, 1024, 4096, 16384 };

/* Draw one step. @fadds lists the fault-add steps so far (fault-del and release name one). */
static void gen_step(struct gen *g, unsigned int checks, const uint32_t *fadds, unsigned int nf,
		     struct step *st)
{
	uint64_t r = rnd(g, 100);

	memset(st, 0, sizeof(*st));
	if (r < 27) {
		st->k = K_WRITE;
	} else if (r < 30) {
		st->k = K_ZERO;
	} else if (r < 49) {
		st->k = K_READ;
	} else if (r < 57) {
		st->k = K_FLUSH;
	} else if (r < 60) {
		st->k = K_DISCARD;
	} else if (r < 68) {
		st->k = K_TICK;
		st->a = (int64_t)rnd(g, 26);		/* ms the clock moves */
		st->b = 1 + (int64_t)rnd(g, 6);	/* tick calls */
	} else if (r < 72) {
		st->k = K_CUT;
		st->a = rnd(g, 4) ? (int64_t)rnd(g, CACHE_CUT_NR) : -1;
		st->b = (int64_t)(prng_splitmix64(&g->s) >> 1) | 1;	/* its seed */
	} else if (r < 77) {
		st->k = K_ON;
	} else if (r < 79) {
		st->k = K_ARM;
		st->a = 1 + (int64_t)rnd(g, 4);	/* enum cache_arm_kind */
		st->b = 1 + (int64_t)rnd(g, st->a == CACHE_ARM_TIME ? 20 : 6);
		st->c = rnd(g, 2) ? 1 + (int64_t)rnd(g, CACHE_CUT_NR) : 0; /* mode + 1 */
	} else if (r < 83) {
		st->k = K_FADD;
		r = rnd(g, 100);
		st->a = r < 40 ? 1 : r < 55 ? 2 : 0;	/* stall, stall with a timeout, error */
		do /* ops: bits of enum bio_op */
			st->b = (int64_t)rnd(g, 1u << BIO_OP_NR);
		while (!st->b || (st->a && !(checks & CHK_D5_CUT_BEHIND_STALL) &&
				  !(st->b &= ~(1 << BIO_OP_WRITE))));
		st->c = rnd(g, 3) ? 1 + (int64_t)rnd(g, 4) : 0;	/* every=, else prob=0.3 */
		if (rnd(g, 2))
			gen_range(g, st);
	} else if (r < 85) {
		st->k = K_FDEL;
		st->a = nf ? (int64_t)fadds[rnd(g, nf)] : -1;
	} else if (r < 91) {
		st->k = K_RELEASE;
		st->a = nf && rnd(g, 2) ? (int64_t)fadds[rnd(g, nf)] : -1; /* -1: all */
	} else if (r < 94) {
		st->k = K_RECONF;
		st->a = rnd(g, 100) < 85 ? CACHE_FLUSH_HONOUR : CACHE_FLUSH_IGNORE;
		st->b = atomic_sizes[rnd(g, 4)];
		st->c = (int64_t)rnd(g, CACHE_CUT_NR) | (int64_t)rnd(g, 25) << 8 |
			(int64_t)rnd(g, 2) << 16;
	} else if (r < 96) {
		st->k = K_FREEZE;
	} else if (r < 98) {
		st->k = K_RELOAD;
		st->a = (int64_t)rnd(g, 3);	/* configured faults */
		st->b = (int64_t)(prng_splitmix64(&g->s) >> 1); /* they are drawn from it */
	} else {
		st->k = K_READ;
	}
	if (st->k == K_WRITE || st->k == K_ZERO || st->k == K_READ || st->k == K_DISCARD)
		gen_range(g, st);
}

/* The whole sequence of @seed: its settings and @cfg->nsteps steps. */
static void gen_sequence(uint64_t seed, unsigned int checks, uint32_t maxsteps,
			 struct seqcfg *cfg, struct step *steps)
{
	struct gen g = { seed };
	uint32_t fadds[MAXSTEPS];
	unsigned int nf = 0;

	cache_params_default(&cfg->p);
	cfg->p.mode = CACHE_MODE_WRITEBACK;
	/* 8..64 KiB, so that full caches happen; never below the largest write (8 KiB), as
	 * the config's minimum of cache.size is queue.max_request_size's maximum. */
	cfg->p.size = (8u << rnd(&g, 4)) * 1024u;
	cfg->p.destage_delay_ms = (uint32_t)rnd(&g, 25);
	cfg->p.destage_rate = rnd(&g, 2) ? 1024 * 1024 : 0;
	cfg->p.flush = rnd(&g, 100) < 85 ? CACHE_FLUSH_HONOUR : CACHE_FLUSH_IGNORE;
	cfg->p.atomic_write = atomic_sizes[rnd(&g, 4)];
	cfg->p.powercut = (uint32_t)rnd(&g, CACHE_CUT_NR);
	cfg->p.seed = prng_splitmix64(&g.s) | 1;
	cfg->nsteps = maxsteps / 2 + (uint32_t)rnd(&g, maxsteps / 2 + 1);
	for (uint32_t i = 0; i < cfg->nsteps; i++) {
		gen_step(&g, checks, fadds, nf, &steps[i]);
		if (steps[i].k == K_FADD)
			fadds[nf++] = i;
	}
}

/* What a fault-add step's @a says. */
static const char *const fault_effect_words[] = { "error=EIO", "stall",
						  "stall timeout=5ms error=EIO" };

static int format_step(char *buf, size_t len, const struct step *st)
{
	switch (st->k) {
	case K_WRITE:
	case K_ZERO:
	case K_READ:
	case K_DISCARD:
		return snprintf(buf, len, "%s blocks %u+%u", kind_names[st->k], st->blk, st->nblk);
	case K_TICK:
		return snprintf(buf, len, "tick +%" PRId64 " ms x%" PRId64, st->a, st->b);
	case K_CUT:
		return snprintf(buf, len, "powercut mode=%s seed=%" PRId64,
				st->a < 0 ? "(cache.powercut)" : cache_cut_names[st->a], st->b);
	case K_ARM: {
		static const char *const arm_names[] = { "none", "flush=", "write=", "random=",
							 "after_ms=" };

		return snprintf(buf, len, "powercut arm %s%" PRId64 "%s mode=%s", arm_names[st->a],
				st->b, st->a == CACHE_ARM_WRITE && st->b % 2 ? " after_flush=1" : "",
				st->c ? cache_cut_names[st->c - 1] : "(cache.powercut)");
	}
	case K_FADD: {
		char ops[64] = "";

		for (int op = 0; op < BIO_OP_NR; op++)
			if (st->b & (1 << op))
				snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s%s",
					 ops[0] ? "," : "", bio_op_name[op]);
		if (st->c)
			return snprintf(buf, len, "fault-add op=%s %s every=%" PRId64 " blocks %u+%u",
					ops, fault_effect_words[st->a], st->c, st->blk, st->nblk);
		return snprintf(buf, len, "fault-add op=%s %s prob=0.3 blocks %u+%u", ops,
				fault_effect_words[st->a], st->blk, st->nblk);
	}
	case K_RELOAD:
		return snprintf(buf, len, "fault-reload %" PRId64 " configured faults from %" PRId64,
				st->a, st->b);
	case K_FDEL:
	case K_RELEASE:
		if (st->a < 0)
			return snprintf(buf, len, "%s every fault", kind_names[st->k]);
		return snprintf(buf, len, "%s the fault of step %" PRId64, kind_names[st->k], st->a);
	case K_RECONF:
		return snprintf(buf, len, "reconfigure flush=%s atomic=%" PRId64 " powercut=%s "
				"delay=%" PRId64 "ms rate=%s", cache_flush_names[st->a], st->b,
				cache_cut_names[st->c & 0xff], (st->c >> 8) & 0xff,
				(st->c >> 16) & 1 ? "1M" : "0");
	default:
		return snprintf(buf, len, "%s", kind_names[st->k]);
	}
}

/* ---- the model's records ------------------------------------------------------------------ */

#define NEVER UINT64_MAX

/* An operation that puts a value on its blocks: a write, a zero write or a discard. */
struct vop {
	uint32_t blk, nblk;
	uint32_t val;		/* block contents: this vop's number, 0 for zeroes */
	uint64_t issue, done;	/* logical times; done = NEVER while in flight */
	uint64_t e_lo, e_hi;	/* epoch-closing flushes issued before issue / before done */
	bool ok;		/* acknowledged */
	bool durable;		/* acknowledged before a flush that succeeded was issued */
	bool is_write;		/* a write that the cache holds (not a discard) */
	bool live;		/* issued in this power cycle, or in flight at the last cut */
	int stepno;		/* the step that issued it */
};

/* A request handed to an actor. */
struct job {
	const struct step *st;
	int stepno;
	int vop;		/* index in run->v, or 0 */
	uint64_t issue;
	bool issued_off;	/* the model's power was off when it was issued */
	unsigned int cutgen;	/* cuts seen when it was issued */
	unsigned int errgen;	/* error faults added when it was issued */
	bool err_ok;		/* an error fault was in force at issue */
	bool honour;		/* flush: cache.flush was honour */
	int mode;		/* powercut: the mode it asked for */
	int ret;
	uint8_t *buf;
};

struct actor {
	struct run *r;
	pthread_t th;
	pid_t tid;		/* r->alock */
	int state;		/* r->alock: A_IDLE, A_GO, A_RUN, A_FIN */
	pthread_cond_t go;	/* r->alock: a job (or quit) for this actor */
	struct job job;
};

enum { A_IDLE, A_GO, A_RUN, A_FIN };

/* One run of one sequence. */
struct run {
	/* the stages */
	struct mem mem;
	struct chain ch;		/* the faults and the write cache over mem, as the
					 * daemon builds them */
	struct timer t;
	struct ctrl ctrl;
	struct queue q;
	uint64_t now_ns;	/* the fake clock; atomic */
	char log_path[4096];	/* cache.log, with the d2 check */

	/* the driver */
	pthread_mutex_t alock;
	pthread_cond_t fin;	/* alock: an actor finished */
	bool quit;		/* alock */
	unsigned int progress;	/* alock: actors finished */
	struct actor act[NR_ACTORS];
	unsigned int checks;
	int fault_id[MAXSTEPS];	/* fault-add step -> its id, 0 if none */

	/* the model: the driver thread's alone */
	uint64_t lt;		/* logical time */
	struct vop v[MAXV];
	uint32_t nv;
	uint32_t base_val[NBLK];	/* the image after the last cut (or at start) */
	uint64_t base_t;
	uint16_t hist[NBLK][MAXV];	/* live vops per block, in no order */
	uint32_t nh[NBLK];
	bool powered, armed;
	bool on_claimed;	/* a poweron returned 0 since the last cut */
	int arm_mode;		/* the armed cut's mode, -1: cache.powercut at the time */
	uint64_t nclose;	/* epoch-closing flushes issued */
	unsigned int flush_mode, cut_mode, atomic;
	unsigned int nerr_live, nstall_live, nwerr_live;	/* faults in force */
	bool werr_seen;		/* an error fault on writes was in force since nothing waited */
	unsigned int errgen;	/* error faults added so far */
	int cfg_kind[2];	/* the configured faults (reload), as fault_kind; 0: none */
	int fault_kind[MAXSTEPS];	/* fault-add step -> bit 0 error, 1 stall, 2 on writes */
	uint8_t pre[DISK];	/* the image before a cut */
	bool have_pre;		/* pre holds the image from before this step */
	bool cut_pending;	/* an armed cut fired: check the image once it is done */
	unsigned int cutgen;	/* power cuts so far */
	uint64_t cut_t;		/* when the power went, for the cut being checked */
	uint64_t step_issue;	/* issue time of the step running */
	int cut_mode_now;	/* an armed cut's mode, -1: cache.powercut */

	/* the verdict */
	const char *cls;	/* NULL, or the kind of the first divergence */
	char msg[512];
	int at_step;
	int cur_step;
	uint64_t digest;	/* of the image at the end: the same seed leaves the same one */
};

/* Did a power cut begin while @j was in flight? */
static bool crossed(const struct run *r, const struct job *j)
{
	return j->cutgen != r->cutgen;
}

static void diverge(struct run *r, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void diverge(struct run *r, const char *cls, const char *fmt, ...)
{
	va_list ap;

	if (r->cls)
		return;
	r->cls = cls;
	r->at_step = r->cur_step;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
}

/* Name value @v for a message: "the write of step N", "zeroes", "garbage". */
static const char *val_name(const struct run *r, int64_t v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "data no operation wrote");
	else if (!v)
		snprintf(buf, len, "zeroes");
	else
		snprintf(buf, len, "the data of step %d's write", r->v[v].stepno);
	return buf;
}

static uint64_t clk(void *arg)
{
	struct run *r = arg;

	return smp_load_mb(r->now_ns);
}

/* ---- the model's rules -------------------------------------------------------------------- */

/* May a read issued at @ri that ended at @rd see @val in block @b? */
static bool read_allows(const struct run *r, uint32_t b, uint64_t ri, uint64_t rd, uint32_t val)
{
	bool base_gone = false;

	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *y = &r->v[r->hist[b][i]];

		if (y->ok && y->done < ri && r->base_t < y->issue)
			base_gone = true;
	}
	if (!base_gone && r->base_val[b] == val)
		return true;
	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *x = &r->v[r->hist[b][i]];
		bool gone = false;

		if (x->val != val || x->issue >= rd)
			continue;
		for (uint32_t j = 0; j < r->nh[b] && !gone; j++) {
			const struct vop *y = &r->v[r->hist[b][j]];

			gone = y->ok && y->done < ri && x->done < y->issue;
		}
		if (!gone)
			return true;
	}
	return false;
}

/* The first block of @img, the whole disk as a read issued at @ri that ended at @rd saw it,
 * holding what the model does not allow there, with what it holds in @v (-1: no value
 * written); -1 when every block holds an allowed value. */
static int64_t first_disallowed_block(const struct run *r, const uint8_t *img, uint64_t ri,
				      uint64_t rd, int64_t *v)
{
	for (uint32_t b = 0; b < NBLK; b++) {
		*v = decode_block(img + (uint64_t)b * BLK, b);
		if (*v < 0 || !read_allows(r, b, ri, rd, (uint32_t)*v))
			return b;
	}
	return -1;
}

/* May a cut leave @val in block @b: not replaced by a durable operation issued after it? */
static bool cut_allows(const struct run *r, uint32_t b, uint32_t val)
{
	bool base_gone = false;

	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *y = &r->v[r->hist[b][i]];

		if (y->durable && r->base_t < y->issue)
			base_gone = true;
	}
	if (!base_gone && r->base_val[b] == val)
		return true;
	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *x = &r->v[r->hist[b][i]];
		bool gone = false;

		if (x->val != val || x->issue >= r->cut_t)
			continue;
		for (uint32_t j = 0; j < r->nh[b] && !gone; j++) {
			const struct vop *y = &r->v[r->hist[b][j]];

			gone = y->durable && x->done < y->issue;
		}
		if (!gone)
			return true;
	}
	return false;
}

static bool covers(const struct vop *w, uint32_t b)
{
	return b >= w->blk && b < w->blk + w->nblk;
}

/* Is the value @val seen in block @b (before the cut) of an operation issued after @w ended?
 * Zeroes are anybody's: then only if a zero-valued operation after @w covers @b. */
static bool shows_later(const struct run *r, uint32_t b, uint32_t val, const struct vop *w)
{
	if (val) {
		const struct vop *y = &r->v[val];

		return y->live && w->done < y->issue;
	}
	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *y = &r->v[r->hist[b][i]];

		if (!y->val && w->done < y->issue)
			return true;
	}
	return false;
}

/* Is @val in block @b known to be older than every live operation? */
static bool shows_base(const struct run *r, uint32_t b, uint32_t val)
{
	if (val)
		return !r->v[val].live;
	for (uint32_t i = 0; i < r->nh[b]; i++)
		if (!r->v[r->hist[b][i]].val)
			return false;
	return true;
}

/* Check the image after a cut against the model, then start the next power cycle from it. */
static void check_cut(struct run *r, int mode, const uint8_t *pre, const uint8_t *post)
{
	int64_t vi[NBLK], vx[NBLK];
	uint8_t ust[MAXV][MAXUNITS];	/* per write and unit: 1 kept, 2 lost */
	bool pending[MAXV];
	uint32_t unit = r->atomic / BLK;
	/* A destage an error fault failed, or holds to fail it (a stall over an error: no I/O,
	 * even once the fault is gone), loses its write: no order to read from the image. */
	bool constrained = !r->nwerr_live && !r->werr_seen;

	if (mode < 0 || mode >= CACHE_CUT_NR)
		mode = (int)r->cut_mode;
	for (uint32_t b = 0; b < NBLK; b++) {
		vi[b] = decode_block(pre + (uint64_t)b * BLK, b);
		vx[b] = decode_block(post + (uint64_t)b * BLK, b);
		if (vx[b] < 0) {
			diverge(r, "cut-garbage", "after a %s cut block %u holds data no operation "
				"wrote (torn inside a block?)", cache_cut_names[mode], b);
			return;
		}
		if (!cut_allows(r, b, (uint32_t)vx[b])) {
			char n1[64];

			diverge(r, "cut-durability", "after a %s cut block %u holds %s, which a "
				"durable write replaced or which was never written there",
				cache_cut_names[mode], b, val_name(r, vx[b], n1, sizeof(n1)));
			return;
		}
		if (mode == CACHE_CUT_DROP && vx[b] != vi[b]) {
			char n1[64], n2[64];

			diverge(r, "cut-drop", "a drop cut changed block %u from %s to %s", b,
				val_name(r, vi[b], n1, sizeof(n1)), val_name(r, vx[b], n2, sizeof(n2)));
			return;
		}
		if (vi[b] < 0)
			constrained = false; /* a torn destage in flight: nothing to reason on */
	}
	if (!constrained)
		goto reset;

	/* The writes the cut decides on: acknowledged, not durable, not possibly destaged. */
	memset(ust, 0, sizeof(ust));
	memset(pending, 0, sizeof(pending));
	for (uint32_t i = 1; i < r->nv; i++) {
		struct vop *w = &r->v[i];
		bool destaged = true;

		if (!w->live || !w->is_write || !w->ok || w->durable || w->done == NEVER ||
		    w->issue >= r->cut_t)
			continue;
		for (uint32_t b = w->blk; b < w->blk + w->nblk && destaged; b++)
			destaged = vi[b] == (int64_t)w->val ||
				   shows_later(r, b, (uint32_t)vi[b], w);
		pending[i] = !destaged;
	}
	/* What each block says of them: the value it shows was kept (if the cut wrote it), and
	 * every pending write after that value, over this block, was lost in this unit. */
	for (uint32_t b = 0; b < NBLK; b++) {
		uint32_t x = (uint32_t)vx[b];
		bool base = shows_base(r, b, x);

		if (vx[b] != vi[b] && x && pending[x])
			ust[x][b / unit - r->v[x].blk / unit] |= 1;
		if (!x && !base)
			continue; /* zeroes of someone live: no order to read from them */
		for (uint32_t i = 1; i < r->nv; i++) {
			const struct vop *w = &r->v[i];

			if (pending[i] && covers(w, b) && i != x && (base || r->v[x].done < w->issue))
				ust[i][b / unit - w->blk / unit] |= 2;
		}
	}
	for (uint32_t i = 1; i < r->nv; i++) {
		const struct vop *w = &r->v[i];
		uint32_t nu = (w->blk + w->nblk - 1) / unit - w->blk / unit + 1;
		uint8_t all = 0;

		if (!pending[i])
			continue;
		for (uint32_t u = 0; u < nu; u++) {
			if (ust[i][u] == 3) {
				diverge(r, "cut-unit", "a %s cut left the write of step %d (blocks "
					"%u+%u) both kept and lost inside one %u-byte atomic unit",
					cache_cut_names[mode], w->stepno, w->blk, w->nblk, r->atomic);
				return;
			}
			all |= ust[i][u];
		}
		if (mode == CACHE_CUT_PREFIX && all == 3) {
			diverge(r, "prefix-torn", "a prefix cut tore the write of step %d (blocks "
				"%u+%u)", w->stepno, w->blk, w->nblk);
			return;
		}
		ust[i][0] = all;
	}
	if (mode != CACHE_CUT_PREFIX)
		goto reset;
	for (uint32_t a = 1; a < r->nv; a++) {
		const struct vop *wa = &r->v[a];

		if (!pending[a] || ust[a][0] != 2 || wa->e_lo != wa->e_hi)
			continue;
		for (uint32_t k = 1; k < r->nv; k++) {
			const struct vop *wb = &r->v[k];
			bool shadowed = false;

			if (!pending[k] || ust[k][0] != 1 || wb->e_lo != wb->e_hi)
				continue;
			if (wa->e_hi < wb->e_lo) {
				if (r->checks & CHK_D7_PREFIX_EPOCHS) {
					diverge(r, "prefix-epoch", "a prefix cut kept the write of "
						"step %d (flush epoch +%" PRIu64 ") and lost the write of "
						"step %d (earlier epoch +%" PRIu64 ")", wb->stepno,
						wb->e_lo, wa->stepno, wa->e_lo);
					return;
				}
				continue;
			}
			if (wa->e_hi != wb->e_lo || wa->done >= wb->issue)
				continue;
			/* A later write of the epoch that covers @wa may have replaced it. */
			for (uint32_t c = 1; c < r->nv && !shadowed; c++) {
				const struct vop *wc = &r->v[c];

				shadowed = c != a && wc->live && wc->is_write && wc->ok &&
					   wa->done < wc->issue && wc->e_lo == wa->e_hi &&
					   wc->e_hi == wa->e_hi && wc->blk <= wa->blk &&
					   wc->blk + wc->nblk >= wa->blk + wa->nblk;
			}
			if (!shadowed) {
				diverge(r, "prefix-order", "a prefix cut kept the write of step %d "
					"and lost the earlier write of step %d, of the same epoch",
					wb->stepno, wa->stepno);
				return;
			}
		}
	}
reset:
	/* The next power cycle starts from this image; what is in flight stays live. */
	for (uint32_t b = 0; b < NBLK; b++) {
		r->base_val[b] = (uint32_t)vx[b];
		r->nh[b] = 0;
	}
	r->base_t = r->cut_t;
	for (uint32_t i = 1; i < r->nv; i++) {
		struct vop *w = &r->v[i];

		w->live = w->live && w->done == NEVER;
		if (w->live)
			for (uint32_t b = w->blk; b < w->blk + w->nblk; b++)
				r->hist[b][r->nh[b]++] = (uint16_t)i;
	}
}

/* ---- actors: the submitter threads ------------------------------------------------------- */

/* One op through the top of the chain (the write cache), as the controller hands it down. */
static int chain_io(struct run *r, enum bio_op op, uint64_t off, uint64_t len, void *buf)
{
	const struct stage *top = chain_top(&r->ch);

	return stage_io(top->ops->exec, top->self, op, off, len, buf);
}

static void job_run(struct run *r, struct job *j)
{
	const struct step *st = j->st;
	uint64_t off = (uint64_t)st->blk * BLK, len = (uint64_t)st->nblk * BLK;

	switch (st->k) {
	case K_WRITE:
	case K_READ:
		j->ret = chain_io(r, st->k == K_WRITE ? BIO_OP_WRITE : BIO_OP_READ, off, len,
				  j->buf);
		break;
	case K_ZERO:
		/* a write only reads its buffer: the const zeroes are safe to pass */
		j->ret = chain_io(r, BIO_OP_WRITE, off, len, (void *)backend_zero_chunk);
		break;
	case K_FLUSH:
		j->ret = chain_io(r, BIO_OP_FLUSH, 0, 0, NULL);
		break;
	case K_DISCARD:
		j->ret = chain_io(r, BIO_OP_DISCARD, off, len, NULL);
		break;
	case K_TICK:
		for (int64_t i = 0; i < st->b; i++)
			if (cache_tick(&r->ch.cache))
				break;
		j->ret = 0;
		break;
	case K_CUT:
		j->ret = chain_powercut(&r->ch, j->mode, (uint64_t)st->b, "model");
		break;
	case K_ON:
		j->ret = chain_poweron(&r->ch);
		break;
	default:
		j->ret = -EINVAL;
		break;
	}
}

static void *actor_main(void *arg)
{
	struct actor *a = arg;
	struct run *r = a->r;

	pthread_mutex_lock(&r->alock);
	a->tid = (pid_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&r->fin);
	for (;;) {
		while (a->state != A_GO && !r->quit)
			pthread_cond_wait(&a->go, &r->alock);
		if (r->quit)
			break;
		a->state = A_RUN;
		pthread_mutex_unlock(&r->alock);
		job_run(r, &a->job);
		pthread_mutex_lock(&r->alock);
		a->state = A_FIN;
		r->progress++;
		pthread_cond_broadcast(&r->fin);
	}
	pthread_mutex_unlock(&r->alock);
	return NULL;
}

/* Is thread @tid asleep (waiting on a lock or a condition), not running or runnable? */
static bool no_proc;	/* /proc cannot tell: a thread that takes 20 ms is taken as asleep */

static bool thread_sleeps(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f) {
		WRITE_ONCE(no_proc, true);
		return true;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D');
}

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static void job_done(struct run *r, struct job *j);

/* Wait until every busy actor has finished (its result taken into the model) or sleeps:
 * parked behind a stall, or behind a request that is. */
static void settle(struct run *r)
{
	unsigned int quiet = 0;

	for (;;) {
		struct job done[NR_ACTORS];
		unsigned int ndone = 0, nbusy = 0, nrun = 0, progress;
		pid_t tids[NR_ACTORS];

		pthread_mutex_lock(&r->alock);
		for (int i = 0; i < NR_ACTORS; i++) {
			struct actor *a = &r->act[i];

			if (a->state == A_FIN) {
				done[ndone++] = a->job;
				a->state = A_IDLE;
			} else if (a->state == A_RUN) {
				tids[nrun++] = a->tid;
			} else if (a->state == A_GO) {
				nbusy++;
			}
		}
		progress = r->progress;
		pthread_mutex_unlock(&r->alock);
		/* The poweron that powered on comes before those that then found the power on:
		 * the order in which actors finish does not tell. */
		for (unsigned int i = 1; i < ndone; i++)
			if (done[i].st->k == K_ON && !done[i].ret) {
				struct job t = done[i];

				memmove(&done[1], &done[0], i * sizeof(done[0]));
				done[0] = t;
			}
		for (unsigned int i = 0; i < ndone; i++) {
			job_done(r, &done[i]);
			free(done[i].buf);
		}
		if (ndone) {
			quiet = 0;
			continue;
		}
		if (!nbusy && !nrun)
			return;
		/* Wait a little for one to finish; then see whether all of them sleep. */
		pthread_mutex_lock(&r->alock);
		if (r->progress == progress) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&r->fin, &r->alock, &ts);
		}
		if (r->progress != progress) {
			pthread_mutex_unlock(&r->alock);
			quiet = 0;
			continue;
		}
		pthread_mutex_unlock(&r->alock);
		if (nbusy) {
			quiet = 0;
			continue;
		}
		/* Asleep twice over, with no finish between: a thread woken between our looks
		 * at two threads shows running in the second look. */
		bool asleep = true;

		for (unsigned int i = 0; i < nrun && asleep; i++)
			asleep = thread_sleeps(tids[i]);
		quiet = asleep ? quiet + 1 : 0;
		if (quiet >= (READ_ONCE(no_proc) ? 200u : 2u))
			return;
		sched_yield();
	}
}

static struct actor *idle_actor(struct run *r)
{
	struct actor *found = NULL;

	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS && !found; i++)
		if (r->act[i].state == A_IDLE)
			found = &r->act[i];
	pthread_mutex_unlock(&r->alock);
	return found;
}

/* Whether an actor is parked on a job matching @pred. */
static bool any_parked(struct run *r, bool (*pred)(const struct run *r, const struct job *j))
{
	bool found = false;

	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS && !found; i++)
		found = r->act[i].state == A_RUN && pred(r, &r->act[i].job);
	pthread_mutex_unlock(&r->alock);
	return found;
}

static bool job_any(const struct run *r, const struct job *j)
{
	(void)r, (void)j;
	return true;
}

static bool job_crossed_read(const struct run *r, const struct job *j)
{
	return crossed(r, j) && j->st->k == K_READ;
}

static bool job_crossed_flush(const struct run *r, const struct job *j)
{
	return crossed(r, j) && j->st->k == K_FLUSH;
}

/* May poweron job @j power the disk on: was the power off at its issue? (With the power on
 * a poweron answers at once, so no cut can come while it waits.) */
static bool job_may_power_on(const struct run *r, const struct job *j)
{
	(void)r;
	return j->st->k == K_ON && j->issued_off;
}

/* Is a poweron that may power the disk on still running, or finished and not yet taken
 * into the model? */
static bool poweron_pending(struct run *r)
{
	bool found = false;

	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS && !found; i++)
		found = (r->act[i].state == A_RUN || r->act[i].state == A_FIN) &&
			job_may_power_on(r, &r->act[i].job);
	pthread_mutex_unlock(&r->alock);
	return found;
}


/* ---- results into the model ---------------------------------------------------------------- */

static void snapshot_image(struct run *r, uint8_t *out)
{
	pthread_mutex_lock(&r->mem.lock);
	memcpy(out, r->mem.img, DISK);
	pthread_mutex_unlock(&r->mem.lock);
}

/* The cache's power, as it says itself: how an armed cut is seen to have fired. */
static bool cache_is_powered(struct run *r, bool *cutting)
{
	bool on;

	pthread_mutex_lock(&r->ch.cache.lock);
	on = r->ch.cache.powered;
	if (cutting)
		*cutting = r->ch.cache.cutting;
	pthread_mutex_unlock(&r->ch.cache.lock);
	return on;
}

/* An armed cut fired inside the step now running: the power is off from its issue on. */
static void note_armed_cut(struct run *r)
{
	if (!r->powered || !r->armed || cache_is_powered(r, NULL))
		return;
	r->powered = false;
	r->armed = false;
	r->cut_pending = true;
	r->cut_t = r->step_issue;
	r->cut_mode_now = r->arm_mode;
	r->cutgen++;
	r->on_claimed = false;
}

/* May @j have failed? From the power (EIO), or from an error fault in force at some time
 * while it was in flight. */
static bool error_allowed(struct run *r, const struct job *j)
{
	bool fault = j->err_ok || r->nerr_live || r->errgen != j->errgen;

	if (j->ret == -EIO && (j->issued_off || crossed(r, j)))
		return true;
	return fault && j->ret == -EIO;
}

static void job_done(struct run *r, struct job *j)
{
	const struct step *st = j->st;
	uint64_t now;

	note_armed_cut(r);
	now = ++r->lt;
	if (j->issued_off && !r->powered && st->k != K_CUT && st->k != K_ON &&
	    st->k != K_TICK && j->ret != -EIO)
		diverge(r, "powered-off", "%s issued while the power was off returned %d, not "
			"-EIO", kind_names[st->k], j->ret);
	if (j->ret && st->k != K_CUT && st->k != K_ON && st->k != K_TICK && !error_allowed(r, j))
		diverge(r, "error", "%s blocks %u+%u failed with %d with no fault or cut to cause "
			"it", kind_names[st->k], st->blk, st->nblk, j->ret);
	if (j->vop) {
		struct vop *w = &r->v[j->vop];

		w->done = now;
		w->ok = j->ret == 0;
		w->e_hi = r->nclose;
		if (j->issued_off && j->ret == -EIO && w->live) {
			/* refused by a disk without power: it never happened */
			w->live = false;
			for (uint32_t b = w->blk; b < w->blk + w->nblk; b++)
				for (uint32_t i = 0; i < r->nh[b]; i++)
					if (r->hist[b][i] == j->vop)
						r->hist[b][i] = r->hist[b][--r->nh[b]];
		}
	}
	switch (st->k) {
	case K_READ:
		if (j->ret)
			break;
		for (uint32_t b = st->blk; b < st->blk + st->nblk; b++) {
			int64_t v = decode_block(j->buf + (uint64_t)(b - st->blk) * BLK, b);

			if (v < 0) {
				diverge(r, "read-garbage", "read blocks %u+%u: block %u holds data "
					"no operation wrote", st->blk, st->nblk, b);
				break;
			}
			if (!read_allows(r, b, j->issue, now, (uint32_t)v)) {
				char n1[64], n2[64];

				diverge(r, crossed(r, j) ? "read-across-cut" : "read", "read of step "
					"%d, blocks %u+%u%s: block %u holds %s; the image after the "
					"last cut held %s", j->stepno, st->blk, st->nblk,
					crossed(r, j) ? ", in flight across a power cut and poweron" : "",
					b, val_name(r, v, n1, sizeof(n1)),
					val_name(r, r->base_val[b], n2, sizeof(n2)));
				break;
			}
		}
		break;
	case K_FLUSH:
		if (j->ret)
			break;
		if (crossed(r, j)) {
			if (r->checks & CHK_FX_FLUSH_ACROSS_CUT)
				diverge(r, "flush-across-cut", "a flush in flight across a power cut "
					"succeeded: the writes it covered were subject to the cut");
			break;
		}
		if (!j->honour)
			break;
		for (uint32_t i = 1; i < r->nv; i++)
			if (r->v[i].live && r->v[i].ok && r->v[i].done < j->issue)
				r->v[i].durable = true;
		break;
	case K_CUT:
		if (j->ret == -EALREADY) {
			if (!j->issued_off)
				diverge(r, "cut", "powercut said the power was already off");
			break;
		}
		if (j->ret) {
			diverge(r, "cut", "powercut returned %d", j->ret);
			break;
		}
		if (j->issued_off) {
			diverge(r, "cut", "powercut with the power off returned 0, not -EALREADY");
			break;
		}
		{
			uint8_t *post = malloc(DISK);

			snapshot_image(r, post);
			check_cut(r, j->mode, r->pre, post);
			free(post);
		}
		break;
	case K_ON:
		/* A poweron waits for what the cut left in flight, so several may wait at once:
		 * one of them powers on (0), the others find it on (-EALREADY). */
		if (j->ret == 0) {
			if (!job_may_power_on(r, j) || r->on_claimed)
				diverge(r, "poweron", "poweron with the power on returned 0");
			r->on_claimed = true;
		} else if (j->ret == -EALREADY) {
			if (!r->powered && !poweron_pending(r))
				diverge(r, "poweron", "poweron with the power off returned -EALREADY");
		} else {
			diverge(r, "poweron", "poweron returned %d", j->ret);
		}
		r->powered = true;
		break;
	default:
		break;
	}
}

/* ---- running a sequence ------------------------------------------------------------------ */

static bool step_needs_actor(enum kind k)
{
	return k <= K_ON;
}

/* The words of fault-add step @st (number @stepno, which seeds it). */
static void fault_text(const struct step *st, int stepno, char *buf, size_t len)
{
	static const char *const opn[BIO_OP_NR] = { "read", "write", "flush", "discard" };
	char ops[64] = "";
	int n;

	for (int op = 0; op < BIO_OP_NR; op++)
		if (st->b & (1 << op)) {
			if (ops[0])
				strcat(ops, ",");
			strcat(ops, opn[op]);
		}
	n = snprintf(buf, len, "op=%s %s seed=%d ", ops, fault_effect_words[st->a],
		     stepno * 31 + 7);
	if (st->c)
		n += snprintf(buf + n, len - (size_t)n, "every=%" PRId64, st->c);
	else
		n += snprintf(buf + n, len - (size_t)n, "prob=0.3");
	if (st->nblk)
		snprintf(buf + n, len - (size_t)n, " offset=%" PRIu64 " len=%" PRIu64,
			 (uint64_t)st->blk * BLK, (uint64_t)st->nblk * BLK);
}

/* Configured fault @i of reload step @st (SIGHUP's faults list), and its kind (as
 * r->fault_kind). Stalls on writes only with the d5 check, as fault-add's. */
static int reload_spec(const struct run *r, const struct step *st, int i, char *buf,
		       size_t len)
{
	static const char *const opn[BIO_OP_NR] = { "read", "write", "flush", "discard" };
	uint64_t x = (uint64_t)st->b + (uint64_t)i * 7919;
	bool stall = prng_splitmix64(&x) & 1;
	unsigned int ops = 1 + (unsigned int)(prng_splitmix64(&x) % 15);
	char names[64] = "";

	if (stall && !(r->checks & CHK_D5_CUT_BEHIND_STALL))
		ops &= ~(1u << BIO_OP_WRITE);
	if (!ops)
		ops = 1u << BIO_OP_READ;
	for (int op = 0; op < BIO_OP_NR; op++)
		if (ops & (1u << op))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? "," : "", opn[op]);
	snprintf(buf, len, "op=%s %s every=%u seed=%u", names, stall ? "stall" : "error=EIO",
		 1 + (unsigned int)(prng_splitmix64(&x) % 4), 1 + (unsigned int)(x % 1000));
	return (stall ? 2 : 1) | (ops & (1u << BIO_OP_WRITE) ? 4 : 0);
}

/* Count a fault of @kind (bits as r->fault_kind) in force (@d = 1) or gone (@d = -1). */
static void fault_count(struct run *r, int kind, int d)
{
	if (kind & 1) {
		r->nerr_live += (unsigned int)d;
		if (d > 0)
			r->errgen++;
	}
	if (kind & 2)
		r->nstall_live += (unsigned int)d;
	if ((kind & 5) == 5) {
		r->nwerr_live += (unsigned int)d;
		r->werr_seen |= d > 0;
	}
}

static void fault_gone(struct run *r, int fstep)
{
	fault_count(r, r->fault_kind[fstep], -1);
	r->fault_kind[fstep] = 0;
	r->fault_id[fstep] = 0;
}

static void run_inline(struct run *r, const struct step *st, int stepno)
{
	char text[256], err[256];
	int ret;

	switch (st->k) {
	case K_ARM: {
		struct cache_arm a = { .kind = (enum cache_arm_kind)st->a };

		if (st->a == CACHE_ARM_FLUSH || st->a == CACHE_ARM_WRITE || st->a == CACHE_ARM_RANDOM)
			a.n = (uint64_t)st->b;
		if (st->a == CACHE_ARM_WRITE)
			a.after_flush = (uint64_t)st->b % 2;
		if (st->a == CACHE_ARM_RANDOM)
			a.seed = (uint64_t)stepno * 977 + 1;
		if (st->a == CACHE_ARM_TIME)
			a.at_ns = clk(r) + (uint64_t)st->b * NSEC_PER_MSEC;
		a.has_mode = st->c != 0;
		a.mode = st->c ? (uint32_t)(st->c - 1) : 0;
		ret = cache_arm(&r->ch.cache, &a);
		if (ret)
			diverge(r, "arm", "cache_arm: %d", ret);
		r->armed = st->a != CACHE_ARM_NONE;
		r->arm_mode = st->c ? (int)(st->c - 1) : -1;
		break;
	}
	case K_FADD:
		fault_text(st, stepno, text, sizeof(text));
		ret = fault_add(&r->ch.faults, text, FAULT_FROM_CONTROL, err, sizeof(err));
		if (ret == -ENOSPC)
			break;
		if (ret < 0) {
			diverge(r, "fault-add", "fault_add \"%s\": %s", text, err);
			break;
		}
		r->fault_id[stepno] = ret;
		r->fault_kind[stepno] = (st->a == 2 ? 3 : st->a ? 2 : 1) |
					((st->b & (1 << BIO_OP_WRITE)) ? 4 : 0);
		fault_count(r, r->fault_kind[stepno], 1);
		break;
	case K_FDEL:
		if (st->a < 0 || !r->fault_id[st->a])
			break;
		if (fault_del(&r->ch.faults, (unsigned int)r->fault_id[st->a]))
			diverge(r, "fault-del", "fault_del %d failed", r->fault_id[st->a]);
		fault_gone(r, (int)st->a);
		break;
	case K_RELEASE:
		if (st->a >= 0 && !r->fault_id[st->a])
			break;
		fault_release(&r->ch.faults, st->a < 0 ? 0 : (unsigned int)r->fault_id[st->a]);
		break;
	case K_RELOAD: {
		char specs[2][256], *v[2] = { specs[0], specs[1] };
		int kind[2] = { 0, 0 };

		for (int i = 0; i < st->a; i++)
			kind[i] = reload_spec(r, st, i, specs[i], sizeof(specs[i]));
		struct chain_params p = { .faults = v, .nfaults = (size_t)st->a };

		ret = chain_reconfigure(&r->ch, &p, err, sizeof(err));
		if (ret) {
			diverge(r, "fault-reload", "chain_reconfigure: %s", err);
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (r->cfg_kind[i])
				fault_count(r, r->cfg_kind[i], -1);
			if (kind[i])
				fault_count(r, kind[i], 1);
			r->cfg_kind[i] = kind[i];
		}
		break;
	}
	case K_RECONF: {
		struct cache_params p = r->ch.cache.p;
		struct chain_params cp = { .cache = &p, .keep_faults = true };

		p.flush = (uint32_t)st->a;
		p.atomic_write = (uint32_t)st->b;
		p.powercut = (uint32_t)(st->c & 0xff);
		p.destage_delay_ms = (uint32_t)((st->c >> 8) & 0xff);
		p.destage_rate = (st->c >> 16) & 1 ? 1024 * 1024 : 0;
		if (chain_reconfigure(&r->ch, &cp, err, sizeof(err)))
			diverge(r, "reload", "chain_reconfigure: %s", err);
		r->flush_mode = p.flush;
		r->atomic = p.atomic_write;
		r->cut_mode = p.powercut;
		break;
	}
	case K_FREEZE: {
		uint8_t *img = malloc(DISK);
		uint64_t now;
		int64_t bad, v;
		int fret;

		/* As the control file's freeze: the queue, then the cache below it. */
		queue_freeze(&r->q);
		fret = chain_freeze(&r->ch);
		now = ++r->lt;
		snapshot_image(r, img);
		if (!fret && (r->checks & CHK_D6_FREEZE) &&
		    (bad = first_disallowed_block(r, img, now, now, &v)) >= 0) {
			char n1[64];

			diverge(r, "freeze", "after freeze block %u of the image holds %s, not what "
				"was acknowledged there", (uint32_t)bad,
				val_name(r, v, n1, sizeof(n1)));
		}
		chain_thaw(&r->ch);
		queue_thaw(&r->q);
		free(img);
		break;
	}
	default:
		break;
	}
}

/* May step @st run now? Steps that cannot are skipped, the same way in every replay. */
static bool step_runs(struct run *r, const struct step *st)
{
	if (step_needs_actor(st->k) && !idle_actor(r))
		return false;
	switch (st->k) {
	case K_FREEZE: /* freeze waits for stalled requests: only with none */
		return !r->nstall_live && !any_parked(r, job_any);
	case K_ON:
		if (!(r->checks & CHK_D1_READ_ACROSS_CUT) && any_parked(r, job_crossed_read))
			return false;
		if (!(r->checks & CHK_FX_FLUSH_ACROSS_CUT) && any_parked(r, job_crossed_flush))
			return false;
		return true;
	default:
		return true;
	}
}

static void run_step(struct run *r, const struct step *st, int stepno)
{
	struct actor *a = NULL;
	struct job job, *j = &job;
	bool here, tick_pre = false;

	r->cur_step = stepno;
	/* Nothing waits: no destage that an error fault planned to fail is still held. */
	if (r->werr_seen && !r->nwerr_live && !any_parked(r, job_any))
		r->werr_seen = false;
	if (!step_needs_actor(st->k)) {
		run_inline(r, st, stepno);
		/* What they release runs on; and a thread woken while this one held the cache's
		 * lock (arm, reconfigure) may not have run yet. */
		settle(r);
		return;
	}
	/* With no stall in force nothing can wait (every stage is synchronous and nothing else
	 * is in flight): run the step in this thread, which is the same and much cheaper. */
	here = !r->nstall_live && !any_parked(r, job_any);
	if (!here) {
		a = idle_actor(r);
		if (!a)
			return; /* step_runs() said there was one */
	}
	memset(j, 0, sizeof(*j));
	j->st = st;
	j->stepno = stepno;
	j->issue = ++r->lt;
	r->step_issue = j->issue;
	j->issued_off = !r->powered;
	j->err_ok = r->nerr_live > 0;
	j->errgen = r->errgen;
	j->honour = r->flush_mode == CACHE_FLUSH_HONOUR;
	j->mode = st->k == K_CUT ? (int)st->a : -1;
	switch (st->k) {
	case K_WRITE:
	case K_ZERO:
	case K_DISCARD: {
		struct vop *w = &r->v[r->nv];

		memset(w, 0, sizeof(*w));
		w->blk = st->blk;
		w->nblk = st->nblk;
		w->val = st->k == K_WRITE ? r->nv : 0;
		w->issue = j->issue;
		w->done = NEVER;
		w->e_lo = r->nclose;
		w->is_write = st->k != K_DISCARD;
		w->live = true;
		w->stepno = stepno;
		for (uint32_t b = st->blk; b < st->blk + st->nblk; b++)
			r->hist[b][r->nh[b]++] = (uint16_t)r->nv;
		j->vop = (int)r->nv++;
		if (st->k == K_WRITE) {
			j->buf = malloc((uint64_t)st->nblk * BLK);
			for (uint32_t b = 0; b < st->nblk; b++)
				fill_block(j->buf + (uint64_t)b * BLK, w->val, st->blk + b);
		}
		break;
	}
	case K_READ:
		j->buf = calloc(st->nblk, BLK);
		break;
	case K_FLUSH:
		if (r->powered)
			r->nclose++;
		break;
	case K_TICK:
		/* The clock moves: stalls whose timeout passed end with their error. */
		smp_store_mb(r->now_ns, r->now_ns + (uint64_t)st->a * NSEC_PER_MSEC);
		if (r->armed && (r->powered || poweron_pending(r))) {
			snapshot_image(r, r->pre);
			tick_pre = true;
		}
		timer_run_due(&r->t, r->now_ns);
		/* What the timeouts release runs on before the tick: a flush or discard it lets
		 * go destages on, and the tick's cut must not race with it. */
		settle(r);
		break;
	case K_CUT:
		if (r->powered) {
			snapshot_image(r, r->pre);
			r->cut_t = j->issue;
			r->cutgen++;
			r->on_claimed = false;
			r->powered = false;
			r->armed = false;
		}
		break;
	default:
		break;
	}
	/* An armed cut may fire inside a write or a flush: keep the image from before it. (Or
	 * inside a tick that lets a waiting poweron finish first: a cut may be armed while the
	 * power is off.) */
	r->have_pre = tick_pre && r->cut_pending; /* fired in what the timeouts released */
	if (!r->have_pre && r->armed && (r->powered || poweron_pending(r)) &&
	    (st->k == K_WRITE || st->k == K_ZERO || st->k == K_FLUSH || st->k == K_TICK)) {
		snapshot_image(r, r->pre);
		r->have_pre = true;
	}
	j->cutgen = r->cutgen;
	if (here) {
		job_run(r, j);
		job_done(r, j);
		free(j->buf);
	} else {
		pthread_mutex_lock(&r->alock);
		a->job = job;
		a->state = A_GO;
		pthread_cond_signal(&a->go);
		pthread_mutex_unlock(&r->alock);
		settle(r);
	}
	if (a && st->k == K_CUT && !j->issued_off) {
		bool parked;

		pthread_mutex_lock(&r->alock);
		parked = a->state == A_RUN && a->job.stepno == stepno;
		pthread_mutex_unlock(&r->alock);
		if (parked) {
			/* Make sure: a slow machine is not a hang. */
			sleep_us(20000);
			settle(r);
			pthread_mutex_lock(&r->alock);
			parked = a->state == A_RUN && a->job.stepno == stepno;
			pthread_mutex_unlock(&r->alock);
		}
		if (parked)
			diverge(r, "cut-waits", "powercut did not return: it waits behind a stalled "
				"request");
	}
	note_armed_cut(r);
	if (r->cut_pending && !r->have_pre)
		diverge(r, "cut", "the power went off in a step no armed cut fires at");
	if (r->cut_pending && r->have_pre) {
		bool cutting;

		cache_is_powered(r, &cutting);
		if (cutting) {
			diverge(r, "cut-waits", "an armed power cut did not finish: it waits behind "
				"a stalled request");
		} else {
			uint8_t *post = malloc(DISK);

			r->cut_pending = false;
			snapshot_image(r, post);
			check_cut(r, r->cut_mode_now, r->pre, post);
			free(post);
		}
	}
}

/* Set-up that cannot fail in a test; here outside Check's tests too (make model). */
static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "test_model: %s failed\n", what);
		abort();
	}
}

static void run_init(struct run *r, const struct seqcfg *cfg, unsigned int checks)
{
	struct queue_params qp;
	struct ctrl_params cp;

	memset(r, 0, sizeof(*r));
	r->checks = checks;
	pthread_mutex_init(&r->mem.lock, NULL);
	r->now_ns = T0;
	must(timer_init(&r->t, false) == 0, "timer_init");
	{
		/* As the daemon builds it: the write cache over the faults over the image. */
		static const struct stage_ops mem_ops = { .name = "memory", .exec = mem_exec };
		const struct stage mem = { .ops = &mem_ops, .self = &r->mem };
		struct cache_params p = cfg->p;
		struct chain_params chp = { .timer = &r->t, .clock = clk, .clock_arg = r,
					    .disk_size = DISK, .cache = &p };
		char err[256];

		p.log = (char *)"";
		if (checks & CHK_D2_LOG_EPOCHS) {
			const char *dir = getenv("TMPDIR");

			snprintf(r->log_path, sizeof(r->log_path), "%s/plugdisk-model-%d.log",
				 dir && *dir ? dir : "/tmp", (int)getpid());
			p.log = r->log_path;
		}
		must(chain_build(&r->ch, &mem, &chp, err, sizeof(err)) == 0, "chain_build");
	}
	ctrl_params_default(&cp);
	cp.workers = 0;
	cp.burst_ms = 0;
	must(ctrl_init(&r->ctrl, &cp, &r->t, chain_top(&r->ch)->ops->exec, chain_top(&r->ch)->self,
		       (int64_t)T0) == 0, "ctrl_init");
	r->ctrl.admit_ns = chain_admit_ns;
	r->ctrl.admit_arg = &r->ch;
	queue_params_default(&qp);
	must(queue_init(&r->q, &qp, &r->ctrl, &r->t, clk, r) == 0, "queue_init");
	r->powered = true;
	r->flush_mode = cfg->p.flush;
	r->cut_mode = cfg->p.powercut;
	r->atomic = cfg->p.atomic_write;
	r->nv = 1;
	pthread_mutex_init(&r->alock, NULL);
	pthread_cond_init(&r->fin, NULL);
	for (int i = 0; i < NR_ACTORS; i++) {
		r->act[i].r = r;
		pthread_cond_init(&r->act[i].go, NULL);
		must(pthread_create(&r->act[i].th, NULL, actor_main, &r->act[i]) == 0, "pthread_create");
	}
	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS; i++)
		while (!r->act[i].tid)
			pthread_cond_wait(&r->fin, &r->alock);
	pthread_mutex_unlock(&r->alock);
}

/* The write log's flush records must close epochs 1, 2, 3, ... with none missing: `plugdisk
 * replay --crash N` takes the writes of flush N's epoch + 1 as those between flush N and
 * N + 1. (Records may come out of order when flushes overlap; the set has no gap.) */
static void check_log(struct run *r)
{
	struct wlog_reader rd;
	struct wlog_rec rec;
	bool seen[2 * MAXSTEPS + 2] = { false };
	uint64_t max = 0;
	int ret;

	if (wlog_reader_open(&rd, r->log_path)) {
		diverge(r, "log", "cannot read the write log %s", r->log_path);
		return;
	}
	while ((ret = wlog_next(&rd, &rec)) == 1) {
		/* A failed flush has its own record: it used its epoch up, and says so. */
		if (rec.type != WLOG_FLUSH && rec.type != WLOG_FLUSH_FAILED)
			continue;
		if (rec.epoch == 0 || rec.epoch >= 2 * MAXSTEPS + 2 || seen[rec.epoch]) {
			diverge(r, "log-epochs", "the write log has a flush of epoch %" PRIu64
				" twice or out of range", rec.epoch);
			break;
		}
		seen[rec.epoch] = true;
		if (rec.epoch > max)
			max = rec.epoch;
	}
	wlog_reader_close(&rd);
	if (ret < 0)
		diverge(r, "log", "reading the write log: %d", ret);
	for (uint64_t e = 1; e <= max; e++)
		if (!seen[e]) {
			diverge(r, "log-epochs", "the write log's flushes skip epoch %" PRIu64 " (up "
				"to %" PRIu64 "): a flush that failed closed it, and replay --crash "
				"numbers epochs by flushes", e, max);
			break;
		}
}

/* Release everything, check the whole disk through the cache, and free the run. */
static void run_finish(struct run *r)
{
	bool stuck = false;

	r->cur_step = -1;
	fault_clear(&r->ch.faults);
	r->nerr_live = r->nstall_live = r->nwerr_live = 0;
	settle(r);
	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS; i++)
		stuck |= r->act[i].state != A_IDLE;
	pthread_mutex_unlock(&r->alock);
	if (stuck) {
		/* Every stall is released: whatever still waits is a hang. Wait for real time
		 * before calling it one. */
		for (int i = 0; i < 200 && stuck; i++) {
			sleep_us(10000);
			settle(r);
			stuck = false;
			pthread_mutex_lock(&r->alock);
			for (int k = 0; k < NR_ACTORS; k++)
				stuck |= r->act[k].state != A_IDLE;
			pthread_mutex_unlock(&r->alock);
		}
		if (stuck) {
			diverge(r, "hang", "with every fault gone a request never completes");
			/* The threads cannot be joined: leave them (the process ends soon). */
			return;
		}
	}
	if (!r->cls) {
		uint8_t *buf = malloc(DISK);
		uint64_t ri, rd;
		int64_t bad, v;
		int ret;

		if (!cache_is_powered(r, NULL))
			chain_poweron(&r->ch);
		r->powered = true;
		ri = ++r->lt;
		ret = chain_io(r, BIO_OP_READ, 0, DISK, buf);
		rd = ++r->lt;
		if (ret)
			diverge(r, "final-read", "reading the whole disk at the end: %d", ret);
		if (!ret && (bad = first_disallowed_block(r, buf, ri, rd, &v)) >= 0) {
			char n1[64];

			diverge(r, "final-read", "at the end block %u reads %s, not a value the "
				"model allows", (uint32_t)bad, val_name(r, v, n1, sizeof(n1)));
		}
		free(buf);
	}
	r->digest = 0xcbf29ce484222325ull;
	for (uint64_t i = 0; i < DISK; i++) /* FNV-1a */
		r->digest = (r->digest ^ r->mem.img[i]) * 0x100000001b3ull;
	pthread_mutex_lock(&r->alock);
	r->quit = true;
	for (int i = 0; i < NR_ACTORS; i++)
		pthread_cond_signal(&r->act[i].go);
	pthread_mutex_unlock(&r->alock);
	for (int i = 0; i < NR_ACTORS; i++)
		pthread_join(r->act[i].th, NULL);
	queue_destroy(&r->q);
	ctrl_destroy(&r->ctrl);
	chain_writeout(&r->ch);
	chain_destroy(&r->ch);
	timer_destroy(&r->t);
	if (r->log_path[0]) {
		check_log(r);
		unlink(r->log_path);
	}
	for (int i = 0; i < NR_ACTORS; i++)
		pthread_cond_destroy(&r->act[i].go);
	pthread_cond_destroy(&r->fin);
	pthread_mutex_destroy(&r->alock);
	pthread_mutex_destroy(&r->mem.lock);
}

/* The verdict of one run: the kind of divergence (NULL for none), its message and step. */
struct verdict {
	const char *cls;
	char msg[512];
	int at_step;
	bool hung;
	uint64_t digest;
};

/* Run the steps of @steps that @keep marks (all when NULL). */
static void run_sequence(const struct seqcfg *cfg, const struct step *steps, const bool *keep,
			 unsigned int checks, bool verbose, struct verdict *vd)
{
	struct run *r = malloc(sizeof(*r));

	if (!r)
		abort(); /* nothing to test with */
	run_init(r, cfg, checks);
	for (uint32_t i = 0; i < cfg->nsteps && !r->cls; i++) {
		if (keep && !keep[i])
			continue;
		if (!step_runs(r, &steps[i]))
			continue;
		if (verbose) {
			char buf[160];

			format_step(buf, sizeof(buf), &steps[i]);
			fprintf(stderr, "  step %3u: %s\n", i, buf);
		}
		run_step(r, &steps[i], (int)i);
	}
	run_finish(r);
	vd->cls = r->cls;
	vd->at_step = r->at_step;
	vd->hung = r->cls && !strcmp(r->cls, "hang");
	vd->digest = r->digest;
	snprintf(vd->msg, sizeof(vd->msg), "%s", r->msg);
	if (!vd->hung) /* a hung run's threads still use it */
		free(r);
}

/* ---- shrinking and reporting ------------------------------------------------------------- */

/* Drop steps while the sequence still diverges the same way: halves, quarters, ... singles. */
static uint32_t shrink(const struct seqcfg *cfg, const struct step *steps, unsigned int checks,
		       const char *cls, bool *keep)
{
	uint32_t n = cfg->nsteps, kept = n;

	for (uint32_t i = 0; i < n; i++)
		keep[i] = true;
	for (uint32_t chunk = n / 2; chunk >= 1; chunk /= 2) {
		bool again = true;

		while (again) {
			again = false;
			for (uint32_t start = 0; start < n; start += chunk) {
				bool trial[MAXSTEPS], any = false;
				struct verdict vd;

				memcpy(trial, keep, n * sizeof(bool));
				for (uint32_t i = start; i < start + chunk && i < n; i++) {
					any |= trial[i];
					trial[i] = false;
				}
				if (!any)
					continue;
				run_sequence(cfg, steps, trial, checks, false, &vd);
				if (vd.hung)
					return kept; /* leave a hang as it is */
				if (vd.cls && !strcmp(vd.cls, cls)) {
					memcpy(keep, trial, n * sizeof(bool));
					kept = 0;
					for (uint32_t i = 0; i < n; i++)
						kept += keep[i];
					again = true;
				}
			}
		}
		if (chunk == 1)
			break;
	}
	return kept;
}

static void format_checks(unsigned int checks, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; check_names[i]; i++)
		if (checks & (1u << i))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", check_names[i]);
	if (!n)
		snprintf(buf, len, "none");
}

/* This program, as the replay command names it. */
static const char *prog = "build/tests/unit/test_model";

/* Print the divergence of @seed, shrunk, and how to replay it. */
static void report(uint64_t seed, unsigned int checks, const struct verdict *vd, bool do_shrink)
{
	static struct step steps[MAXSTEPS];
	static bool keep[MAXSTEPS];
	struct seqcfg cfg;
	char cks[64], buf[160];
	uint32_t kept;

	gen_sequence(seed, checks, SEQ_STEPS, &cfg, steps);
	format_checks(checks, cks, sizeof(cks));
	printf("model: DIVERGENCE seed=%" PRIu64 " checks=%s: %s at step %d: %s\n", seed, cks,
	       vd->cls, vd->at_step, vd->msg);
	for (uint32_t i = 0; i < cfg.nsteps; i++)
		keep[i] = true;
	kept = cfg.nsteps;
	if (do_shrink) {
		struct verdict min;

		kept = shrink(&cfg, steps, checks, vd->cls, keep);
		run_sequence(&cfg, steps, keep, checks, false, &min);
		if (min.cls)
			printf("model: shrunk: %s at step %d: %s\n", min.cls, min.at_step, min.msg);
	}
	printf("model: cache size=%" PRIu64 " delay=%ums rate=%" PRIu64 " flush=%s atomic=%u "
	       "powercut=%s seed=%" PRIu64 "\n", cfg.p.size, cfg.p.destage_delay_ms,
	       cfg.p.destage_rate, cache_flush_names[cfg.p.flush], cfg.p.atomic_write,
	       cache_cut_names[cfg.p.powercut], cfg.p.seed);
	printf("model: %u of %u steps still diverge; replay with:\n  %s --replay %" PRIu64
	       " --checks %s --keep ", kept, cfg.nsteps, prog, seed, cks);
	for (uint32_t i = 0, first = 1; i < cfg.nsteps; i++)
		if (keep[i]) {
			printf("%s%u", first ? "" : ",", i);
			first = 0;
		}
	printf(" -v\n");
	for (uint32_t i = 0; i < cfg.nsteps; i++)
		if (keep[i]) {
			format_step(buf, sizeof(buf), &steps[i]);
			printf("  step %3u: %s\n", i, buf);
		}
	fflush(stdout);
}

/* The seed of sequence @i of a run from @base. */
static uint64_t seq_seed(uint64_t base, uint64_t i)
{
	uint64_t s = base * 0x100000001b3ull + i;

	return prng_splitmix64(&s) >> 1;
}

/* A long run's progress line every so many sequences (0: none). */
static uint64_t progress_every;

/* Run @n sequences from @base; on the first divergence report it (shrunk) and return its
 * index, else -1. */
static int64_t run_many(uint64_t base, uint64_t n, unsigned int checks, uint32_t maxsteps,
			bool do_shrink, uint64_t *ran)
{
	static struct step steps[MAXSTEPS];

	for (uint64_t i = 0; i < n; i++) {
		uint64_t seed = seq_seed(base, i);
		struct seqcfg cfg;
		struct verdict vd;

		gen_sequence(seed, checks, maxsteps, &cfg, steps);
		run_sequence(&cfg, steps, NULL, checks, false, &vd);
		*ran = i + 1;
		if (progress_every && *ran % progress_every == 0) {
			printf("model: seed %" PRIu64 ": %" PRIu64 " of %" PRIu64 " sequences, no "
			       "divergence\n", base, *ran, n);
			fflush(stdout);
		}
		if (vd.cls) {
			report(seed, checks, &vd, do_shrink && !vd.hung);
			return (int64_t)i;
		}
	}
	return -1;
}

/* ---- make check -------------------------------------------------------------------------- */

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CHECK_SEQUENCES 200
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define CHECK_SEQUENCES 200
#endif
#endif
#ifndef CHECK_SEQUENCES
#define CHECK_SEQUENCES 1500
#endif

/* Quiet logs, and short waits: settle() waits 50 us at a time, which the default timer
 * slack would stretch. */
static void quiet_logs(void)
{
	log_init("test_model", false, getenv("MODEL_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERR);
	prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
}

/* 1500 sequences with the checks current code passes: no divergence. */
START_TEST(test_sequences_match_the_model)
{
	uint64_t ran = 0;
	int64_t at;

	quiet_logs();
	at = run_many(1, CHECK_SEQUENCES, CHK_ALL & ~KNOWN_DEFECTS, SEQ_STEPS, true, &ran);
	ck_assert_msg(at < 0, "sequence %" PRId64 " diverged from the model (see above)", at);
	ck_assert_uint_eq(ran, CHECK_SEQUENCES);
}
END_TEST

/* A seed replays exactly: the same sequence leaves the same image, stalls, cuts and all.
 * Without stalls on writes: a release that lets several held destages go lets their threads
 * race for the next ones, and which write each picks decides what the next stall holds. */
START_TEST(test_same_seed_same_image)
{
	static struct step steps[MAXSTEPS];
	const unsigned int checks = CHK_ALL & ~KNOWN_DEFECTS & ~CHK_D5_CUT_BEHIND_STALL;
	unsigned int differ = 0;
	uint64_t first = 0;

	quiet_logs();
	for (uint64_t i = 0; i < 40; i++) {
		uint64_t seed = seq_seed(7, i);
		struct verdict a, b;
		struct seqcfg cfg;

		gen_sequence(seed, checks, SEQ_STEPS, &cfg, steps);
		run_sequence(&cfg, steps, NULL, checks, false, &a);
		run_sequence(&cfg, steps, NULL, checks, false, &b);
		ck_assert_msg(!a.cls && !b.cls, "seed %" PRIu64 " diverged", seed);
		ck_assert_msg(a.digest == b.digest, "seed %" PRIu64 " left two images", seed);
		if (!i)
			first = a.digest;
		else
			differ += a.digest != first;
	}
	ck_assert_uint_gt(differ, 30); /* and the digest does tell images apart */
}
END_TEST

/* The same seed makes the same sequence; its steps are not all of one kind. */
START_TEST(test_generator_replays_and_covers_every_step)
{
	static struct step a[MAXSTEPS], b[MAXSTEPS];
	unsigned int seen[K_NR] = { 0 };
	struct seqcfg ca, cb;

	for (uint64_t s = 1; s <= 50; s++) {
		gen_sequence(s, CHK_ALL, SEQ_STEPS, &ca, a);
		gen_sequence(s, CHK_ALL, SEQ_STEPS, &cb, b);
		ck_assert_uint_eq(ca.nsteps, cb.nsteps);
		ck_assert(!memcmp(a, b, ca.nsteps * sizeof(a[0])));
		for (uint32_t i = 0; i < ca.nsteps; i++)
			seen[a[i].k]++;
	}
	for (int k = 0; k < K_NR; k++)
		ck_assert_msg(seen[k] > 10, "step %s drawn %u times", kind_names[k], seen[k]);
}
END_TEST

/* ---- the known defects, one short sequence each --------------------------------------- */

#define W (1 << BIO_OP_WRITE)
#define R (1 << BIO_OP_READ)
#define F (1 << BIO_OP_FLUSH)

/* A sequence that showed one defect: it must pass with its check on, as the regression test
 * of the fix (reintroduce the defect and it diverges as @cls says). While a check is listed
 * in KNOWN_DEFECTS, the checker must find its defect instead (so the checker can fail), and a
 * fix that lands makes this test fail until its check leaves KNOWN_DEFECTS. */
struct known_case {
	unsigned int check;
	const char *cls;	/* the divergence it shows on code with the defect */
	uint32_t flush;		/* cache.flush */
	uint32_t powercut;	/* cache.powercut */
	uint32_t nsteps;
	struct step steps[8];
};

static const struct known_case known_cases[] = {
	/* d1: a read stalled below the cache across powercut + poweron returned the write the
	 * cut dropped; now it fails with EIO. */
	{ CHK_D1_READ_ACROSS_CUT, "read-across-cut", CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 5, {
		{ .k = K_WRITE, .blk = 16, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = R, .c = 1 },
		{ .k = K_READ, .blk = 16, .nblk = 5 },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 11 },
		{ .k = K_ON } } },
	/* d2: a flush that failed (its destage did) closed an epoch no flush record named; now
	 * the log has a failed-flush record for it. */
	{ CHK_D2_LOG_EPOCHS, "log-epochs", CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 5, {
		{ .k = K_WRITE, .blk = 0, .nblk = 4 },
		{ .k = K_FADD, .a = 0, .b = W, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_FDEL, .a = 1 },
		{ .k = K_FLUSH } } },
	/* d5: powercut waited for a destage that a stall holds; now it returns at once. */
	{ CHK_D5_CUT_BEHIND_STALL, "cut-waits", CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 4, {
		{ .k = K_WRITE, .blk = 14, .nblk = 6 },
		{ .k = K_FADD, .a = 1, .b = W, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 5 } } },
	/* d6: freeze left an acknowledged write in the cache, not in the image. */
	{ CHK_D6_FREEZE, "freeze", CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 2, {
		{ .k = K_WRITE, .blk = 200, .nblk = 13 },
		{ .k = K_FREEZE } } },
	/* d7: three epochs pending (flush = ignore); a prefix cut whose seed, drawn per epoch,
	 * kept the newest epoch's write and lost an older one. */
	{ CHK_D7_PREFIX_EPOCHS, "prefix-epoch", CACHE_FLUSH_IGNORE, CACHE_CUT_PREFIX, 6, {
		{ .k = K_WRITE, .blk = 13, .nblk = 5 },
		{ .k = K_FLUSH },
		{ .k = K_WRITE, .blk = 237, .nblk = 9 },
		{ .k = K_FLUSH },
		{ .k = K_WRITE, .blk = 160, .nblk = 7 },
		{ .k = K_CUT, .a = CACHE_CUT_PREFIX, .b = 5945886577667577007 } } },
	/* fx: a flush stalled below the cache across powercut + poweron succeeded; now it fails
	 * with EIO. */
	{ CHK_FX_FLUSH_ACROSS_CUT, "flush-across-cut", CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 5, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = F, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 3 },
		{ .k = K_ON } } },
	/* A poweron given with the power on waited behind a destage held below the cache and,
	 * a cut having come meanwhile, powered on when the stall was released; now it answers
	 * -EALREADY at once (no check bit: the poweron checks are always on). */
	{ 0, "poweron", CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 6, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = W, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_ON },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 3 },
		{ .k = K_RELEASE, .a = -1 } } },
};

#undef W
#undef R
#undef F

START_TEST(test_known_defects)
{
	const struct known_case *kc = &known_cases[_i];
	unsigned int checks = (CHK_ALL & ~KNOWN_DEFECTS) | kc->check;
	struct seqcfg cfg;
	struct verdict vd;

	quiet_logs();
	cache_params_default(&cfg.p);
	cfg.p.mode = CACHE_MODE_WRITEBACK;
	cfg.p.size = 64 * 1024;
	cfg.p.destage_delay_ms = 1000;
	cfg.p.destage_rate = 0;
	cfg.p.flush = kc->flush;
	cfg.p.atomic_write = 4096;
	cfg.p.powercut = kc->powercut;
	cfg.p.seed = 99;
	cfg.nsteps = kc->nsteps;
	run_sequence(&cfg, kc->steps, NULL, checks, false, &vd);
	if (KNOWN_DEFECTS & kc->check)
		ck_assert_msg(vd.cls && !strcmp(vd.cls, kc->cls), "known defect %s: the checker "
			      "no longer finds it (%s); if its fix landed, take its check out of "
			      "KNOWN_DEFECTS", kc->cls, vd.cls ? vd.msg : "no divergence");
	else
		ck_assert_msg(!vd.cls, "%s: %s", vd.cls, vd.msg);
}
END_TEST

/* The block contents name their value and place; anything else is garbage. */
START_TEST(test_blocks_decode)
{
	uint8_t p[BLK];

	fill_block(p, 0, 7);
	ck_assert_int_eq(decode_block(p, 7), 0);
	fill_block(p, 42, 7);
	ck_assert_int_eq(decode_block(p, 7), 42);
	ck_assert_int_eq(decode_block(p, 8), -1);	/* written elsewhere */
	p[300] ^= 1;
	ck_assert_int_eq(decode_block(p, 7), -1);	/* torn or corrupted */
}
END_TEST

/* The checker itself fails: a cut that loses a write a flush made durable, and a read that
 * returns an overwritten value, are both caught. */
START_TEST(test_model_rejects_lost_durable_write_and_stale_read)
{
	static struct run r;
	static uint8_t pre[DISK], post[DISK];

	memset(&r, 0, sizeof(r));
	r.nv = 1;
	r.atomic = 4096;
	r.cut_mode = CACHE_CUT_SUBSET;
	/* write 1 on block 3, acknowledged at 2, flushed (durable); write 2 on block 3 at 3..4 */
	r.v[1] = (struct vop){ .blk = 3, .nblk = 1, .val = 1, .issue = 1, .done = 2, .ok = true,
			       .durable = true, .is_write = true, .live = true };
	r.v[2] = (struct vop){ .blk = 3, .nblk = 1, .val = 2, .issue = 3, .done = 4, .ok = true,
			       .is_write = true, .live = true };
	r.nv = 3;
	r.hist[3][0] = 1;
	r.hist[3][1] = 2;
	r.nh[3] = 2;
	ck_assert(read_allows(&r, 3, 5, 6, 2));
	ck_assert(!read_allows(&r, 3, 5, 6, 1));	/* write 2 replaced it before the read */
	ck_assert(read_allows(&r, 3, 3, 6, 1));		/* the read began before write 2 ended */
	r.cut_t = 7;
	ck_assert(cut_allows(&r, 3, 1));
	ck_assert(cut_allows(&r, 3, 2));
	ck_assert(!cut_allows(&r, 3, 0));		/* write 1 was durable */
	fill_block(pre + 3 * BLK, 1, 3);
	memcpy(post, pre, DISK);
	fill_block(post + 3 * BLK, 0, 3);
	check_cut(&r, CACHE_CUT_SUBSET, pre, post);
	ck_assert_ptr_nonnull(r.cls);
	ck_assert_str_eq(r.cls, "cut-durability");
}
END_TEST

/* ---- make model -------------------------------------------------------------------------- */

static unsigned int parse_checks(const char *s)
{
	unsigned int m = 0;
	char *dup = strdup(s), *save = NULL;

	must(dup != NULL, "strdup");
	if (!strcmp(s, "all"))
		m = CHK_ALL;
	else if (!strcmp(s, "default"))
		m = CHK_ALL & ~KNOWN_DEFECTS;
	else
		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			int i;

			for (i = 0; check_names[i] && strcmp(check_names[i], t); i++)
				;
			if (!check_names[i] && strcmp(t, "none")) {
				fprintf(stderr, "test_model: unknown check \"%s\" (d1, d2, d5, d6, d7, fx, "
					"all, default, none)\n", t);
				exit(2);
			}
			if (check_names[i])
				m |= 1u << i;
		}
	free(dup);
	return m;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int model_main(int argc, char **argv)
{
	uint64_t n = 1000, base = 0, replay = 0, ran = 0;
	unsigned int checks = CHK_ALL & ~KNOWN_DEFECTS;
	bool have_replay = false, verbose = false, do_shrink = true;
	const char *keep_s = NULL;
	char cks[64];
	double t0;
	int64_t at;

	for (int i = 1; i < argc && argv[i]; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--sequences") && v) {
			n = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			base = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--checks") && v) {
			checks = parse_checks(v);
			i++;
		} else if (!strcmp(a, "--replay") && v) {
			replay = strtoull(v, NULL, 0);
			have_replay = true;
			i++;
		} else if (!strcmp(a, "--keep") && v) {
			keep_s = v;
			i++;
		} else if (!strcmp(a, "--no-shrink")) {
			do_shrink = false;
		} else if (!strcmp(a, "-v")) {
			verbose = true;
		} else {
			fprintf(stderr, "usage: test_model [--sequences N] [--seed S] [--checks "
				"LIST] [--no-shrink] | --replay SEED [--keep I,J,...] [--checks LIST] "
				"[-v]\n");
			return 2;
		}
	}
	quiet_logs();
	prog = argv[0];
	format_checks(checks, cks, sizeof(cks));
	if (have_replay) {
		static struct step steps[MAXSTEPS];
		static bool keep[MAXSTEPS];
		struct seqcfg cfg;
		struct verdict vd;

		gen_sequence(replay, checks, SEQ_STEPS, &cfg, steps);
		for (uint32_t i = 0; i < cfg.nsteps; i++)
			keep[i] = !keep_s;
		if (keep_s) {
			char *dup = strdup(keep_s), *save = NULL;

			must(dup != NULL, "strdup");
			for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
				if (strtoul(t, NULL, 10) < cfg.nsteps)
					keep[strtoul(t, NULL, 10)] = true;
			free(dup);
		}
		run_sequence(&cfg, steps, keep, checks, verbose, &vd);
		if (!vd.cls) {
			printf("model: seed %" PRIu64 " checks=%s: no divergence\n", replay, cks);
			return 0;
		}
		printf("model: seed %" PRIu64 " checks=%s: %s at step %d: %s\n", replay, cks,
		       vd.cls, vd.at_step, vd.msg);
		return 1;
	}
	if (!base)
		base = (uint64_t)time(NULL);
	printf("model: %" PRIu64 " sequences from seed %" PRIu64 ", known-defect checks on: %s\n",
	       n, base, cks);
	fflush(stdout);
	if (n >= 20000)
		progress_every = 10000;
	t0 = now_s();
	at = run_many(base, n, checks, SEQ_STEPS, do_shrink, &ran);
	printf("model: %" PRIu64 " sequences in %.1f s (%.0f per second)%s\n", ran,
	       now_s() - t0, (double)ran / (now_s() - t0), at < 0 ? ", no divergence" : "");
	return at < 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;

	if (argc > 1)
		return model_main(argc, argv);
	s = suite_create("model");
	tc = tcase_create("model");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_blocks_decode);
	tcase_add_test(tc, test_generator_replays_and_covers_every_step);
	tcase_add_test(tc, test_model_rejects_lost_durable_write_and_stale_read);
	tcase_add_loop_test(tc, test_known_defects, 0,
			    (int)(sizeof(known_cases) / sizeof(known_cases[0])));
	tcase_add_test(tc, test_sequences_match_the_model);
	suite_add_tcase(s, tc);
	tc = tcase_create("replay");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_same_seed_same_image);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
