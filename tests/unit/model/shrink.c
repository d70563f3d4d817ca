/* SPDX-License-Identifier: MIT */
/* The reference model's reports: a divergence shrunk to the steps that still show it, printed
 * with the command that replays it; and long runs of many sequences. */
#include "tests/unit/model/model.h"

const char *const check_names[] = { "d1", "d5", "d6", "d7", "fx", "d2", NULL };

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

void format_checks(unsigned int checks, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; check_names[i]; i++)
		if (checks & (1u << i))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", check_names[i]);
	if (!n)
		snprintf(buf, len, "none");
}

const char *prog = "build/tests/unit/test_model";

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
	printf("model: %u of %u steps still diverge; replay with:\n  %s%s%s%s --replay %" PRIu64
	       " --checks %s --keep ", kept, cfg.nsteps, prog, model_order ? " --order '" : "",
	       model_order ? model_order : "", model_order ? "'" : "", seed, cks);
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
uint64_t seq_seed(uint64_t base, uint64_t i)
{
	uint64_t s = base * 0x100000001b3ull + i;

	return prng_splitmix64(&s) >> 1;
}

uint64_t progress_every;

/* Run @n sequences from @base; on the first divergence report it (shrunk) and return its
 * index, else -1. */
int64_t run_many(uint64_t base, uint64_t n, unsigned int checks, uint32_t maxsteps,
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
