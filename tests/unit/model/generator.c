/* SPDX-License-Identifier: MIT */
/* The reference model's sequences: every step drawn from the sequence's seed alone, so that a
 * sequence replays; and the steps in words. */
#include "tests/unit/model/model.h"

/* ---- steps and their generator ----------------------------------------------------------- */

const char *const kind_names[K_NR] = {
	"write", "write-zeroes", "read", "flush", "discard", "tick", "powercut", "poweron", "arm",
	"fault-add", "fault-del", "release", "reconfigure", "freeze", "fault-reload",
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
		/* stall, stall with a timeout, a hold in the image, error */
		st->a = r < 30 ? 1 : r < 45 ? 2 : r < 65 ? 3 : 0;
		do /* ops: bits of enum bio_op; a hold keeps no discard */
			st->b = (int64_t)rnd(g, 1u << BIO_OP_NR) &
				~(st->a == 3 ? 1 << BIO_OP_DISCARD : 0);
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
void gen_sequence(uint64_t seed, unsigned int checks, uint32_t maxsteps, struct seqcfg *cfg,
		  struct step *steps)
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
const char *const fault_effect_words[] = { "error=EIO", "stall", "stall timeout=5ms error=EIO",
					   "hold in the image" };

int format_step(char *buf, size_t len, const struct step *st)
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
		if (st->a == 3)
			return snprintf(buf, len, "hold op=%s in the image every=%" PRId64 " blocks "
					"%u+%u", ops, st->c ? st->c : 3, st->blk, st->nblk);
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

/* The words of fault-add step @st (number @stepno, which seeds it). */
void fault_text(const struct step *st, int stepno, char *buf, size_t len)
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
int reload_spec(const struct run *r, const struct step *st, int i, char *buf, size_t len)
{
	static const char *const opn[BIO_OP_NR] = { "read", "write", "flush", "discard" };
	uint64_t x = (uint64_t)st->b + (uint64_t)i * 7919;
	bool stall = prng_splitmix64(&x) & 1;
	unsigned int ops = 1 + (unsigned int)(prng_splitmix64(&x) % 15);
	char names[64] = "";
	unsigned int every;

	if (stall && !(r->checks & CHK_D5_CUT_BEHIND_STALL))
		ops &= ~(1u << BIO_OP_WRITE);
	if (!ops)
		ops = 1u << BIO_OP_READ;
	for (int op = 0; op < BIO_OP_NR; op++)
		if (ops & (1u << op))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? "," : "", opn[op]);
	every = 1 + (unsigned int)(prng_splitmix64(&x) % 4);
	snprintf(buf, len, "op=%s %s every=%u seed=%u", names, stall ? "stall" : "error=EIO", every,
		 1 + (unsigned int)(x % 1000));
	return (stall ? 2 : 1) | (ops & (1u << BIO_OP_WRITE) ? 4 : 0) |
	       (!stall && every == 1 && (ops & (1u << BIO_OP_FLUSH)) ? FK_FLUSH_ERR : 0);
}
