/* SPDX-License-Identifier: MIT */
/* The reference model's Check suite (make check: a short run, the known defects, the checker's
 * own failures) and its command line (make model: long runs and replays). */
#include <sys/prctl.h>
#include <time.h>

#include "tests/unit/suite.h"
#include "tests/unit/model/model.h"

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
/* The other stages.order, run shorter: the stages are the same, only their order differs. */
#define CHECK_SEQUENCES_FAULTS_OVER_CACHE (CHECK_SEQUENCES / 5)

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

/* The same with the faults over the cache (stages.order = "faults, cache"). */
START_TEST(test_sequences_match_the_model_faults_over_cache)
{
	uint64_t ran = 0;
	int64_t at;

	quiet_logs();
	model_order = "faults, cache";
	at = run_many(2, CHECK_SEQUENCES_FAULTS_OVER_CACHE, CHK_ALL & ~KNOWN_DEFECTS, SEQ_STEPS,
		      true, &ran);
	model_order = NULL;
	ck_assert_msg(at < 0, "sequence %" PRId64 " diverged from the model (see above)", at);
	ck_assert_uint_eq(ran, CHECK_SEQUENCES_FAULTS_OVER_CACHE);
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
	const char *order;	/* stages.order; NULL: the default */
	uint32_t flush;		/* cache.flush */
	uint32_t powercut;	/* cache.powercut */
	uint32_t nsteps;
	struct step steps[8];
};

static const struct known_case known_cases[] = {
	/* d1: a read stalled below the cache across powercut + poweron returned the write the
	 * cut dropped; now it fails with EIO. */
	{ CHK_D1_READ_ACROSS_CUT, "read-across-cut", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 5, {
		{ .k = K_WRITE, .blk = 16, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = R, .c = 1 },
		{ .k = K_READ, .blk = 16, .nblk = 5 },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 11 },
		{ .k = K_ON } } },
	/* d2: a flush that failed (its destage did) closed an epoch no flush record named; now
	 * the log has a failed-flush record for it. */
	{ CHK_D2_LOG_EPOCHS, "log-epochs", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 5, {
		{ .k = K_WRITE, .blk = 0, .nblk = 4 },
		{ .k = K_FADD, .a = 0, .b = W, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_FDEL, .a = 1 },
		{ .k = K_FLUSH } } },
	/* d5: powercut waited for a destage that a stall holds; now it returns at once. */
	{ CHK_D5_CUT_BEHIND_STALL, "cut-waits", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 4, {
		{ .k = K_WRITE, .blk = 14, .nblk = 6 },
		{ .k = K_FADD, .a = 1, .b = W, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 5 } } },
	/* d6: freeze left an acknowledged write in the cache, not in the image. */
	{ CHK_D6_FREEZE, "freeze", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 2, {
		{ .k = K_WRITE, .blk = 200, .nblk = 13 },
		{ .k = K_FREEZE } } },
	/* d7: three epochs pending (flush = ignore); a prefix cut whose seed, drawn per epoch,
	 * kept the newest epoch's write and lost an older one. */
	{ CHK_D7_PREFIX_EPOCHS, "prefix-epoch", NULL, CACHE_FLUSH_IGNORE, CACHE_CUT_PREFIX, 6, {
		{ .k = K_WRITE, .blk = 13, .nblk = 5 },
		{ .k = K_FLUSH },
		{ .k = K_WRITE, .blk = 237, .nblk = 9 },
		{ .k = K_FLUSH },
		{ .k = K_WRITE, .blk = 160, .nblk = 7 },
		{ .k = K_CUT, .a = CACHE_CUT_PREFIX, .b = 5945886577667577007 } } },
	/* fx: a flush stalled below the cache across powercut + poweron succeeded; now it fails
	 * with EIO. */
	{ CHK_FX_FLUSH_ACROSS_CUT, "flush-across-cut", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 5, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = F, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 3 },
		{ .k = K_ON } } },
	/* The same with the faults over the cache: the flush went through the cache, its
	 * completion held above it; a cut dropped what the cache held, and the flush, released,
	 * succeeded with its result from before the cut. Now it fails with EIO. */
	{ CHK_FX_FLUSH_ACROSS_CUT, "flush-across-cut", "faults, cache", CACHE_FLUSH_HONOUR,
	  CACHE_CUT_DROP, 5, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = F, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 3 },
		{ .k = K_ON } } },
	/* The same with the cut armed in the cache, firing at the second write: the chain
	 * does not see that cut, nor the stage that holds the flush. */
	{ CHK_FX_FLUSH_ACROSS_CUT, "flush-across-cut", "faults, cache", CACHE_FLUSH_HONOUR,
	  CACHE_CUT_DROP, 7, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = F, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_ARM, .a = CACHE_ARM_WRITE, .b = 2, .c = CACHE_CUT_DROP + 1 },
		{ .k = K_WRITE, .blk = 8, .nblk = 8 },
		{ .k = K_WRITE, .blk = 16, .nblk = 8 },
		{ .k = K_ON } } },
	/* A poweron given with the power on waited behind a destage held below the cache and,
	 * a cut having come meanwhile, powered on when the stall was released; now it answers
	 * -EALREADY at once (no check bit: the poweron checks are always on). */
	{ 0, "poweron", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 6, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 1, .b = W, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_ON },
		{ .k = K_CUT, .a = CACHE_CUT_DROP, .b = 3 },
		{ .k = K_RELEASE, .a = -1 } } },
	/* A flush that never reached the image below (no fdatasync there) succeeded: the
	 * image's durable contents lack the write it covered. */
	{ 0, "flush-durability", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 2, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FLUSH } } },
	/* The same, with a fault that fails every flush below the cache: the flush must fail,
	 * not swallow it. */
	{ 0, "flush-error", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_DROP, 3, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 0, .b = F, .c = 1 },
		{ .k = K_FLUSH } } },
	/* A destage held by the image before it lands, a newer write over it and more, and a
	 * prefix cut (its seed keeps one write): the cut must not keep the newer write, which
	 * the held destage would then tear as it lands. */
	{ 0, "prefix-torn", NULL, CACHE_FLUSH_HONOUR, CACHE_CUT_PREFIX, 5, {
		{ .k = K_WRITE, .blk = 0, .nblk = 8 },
		{ .k = K_FADD, .a = 3, .b = W, .c = 1 },
		{ .k = K_FLUSH },
		{ .k = K_WRITE, .blk = 0, .nblk = 16 },
		{ .k = K_CUT, .a = CACHE_CUT_PREFIX, .b = 1 } } },
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
	model_order = kc->order;
	run_sequence(&cfg, kc->steps, NULL, checks, false, &vd);
	model_order = NULL;
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
		} else if (!strcmp(a, "--order") && v) {
			model_order = *v ? v : NULL;
			i++;
		} else if (!strcmp(a, "--no-shrink")) {
			do_shrink = false;
		} else if (!strcmp(a, "-v")) {
			verbose = true;
		} else {
			fprintf(stderr, "usage: test_model [--order STAGES] [--sequences N] [--seed "
				"S] [--checks LIST] [--no-shrink] | --replay SEED [--keep I,J,...] "
				"[--checks LIST] [-v]\n");
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
	printf("model: %" PRIu64 " sequences from seed %" PRIu64 ", known-defect checks on: %s, "
	       "stages.order: %s\n", n, base, cks, model_order ? model_order : CHAIN_DEFAULT_ORDER);
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
	tcase_add_test(tc, test_sequences_match_the_model_faults_over_cache);
	suite_add_tcase(s, tc);
	tc = tcase_create("replay");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_same_seed_same_image);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
