// SPDX-License-Identifier: MIT
/* Writing a struct fault_spec back as the words that core/fault/fault_spec.c parses to the same
 * fault (core/fault/fault.h): the listing of the control file and the log. Plain data, no locks. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/util/clock.h"
#include "core/fault/fault_int.h"

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = (b->cap ? b->cap : 128);
			char *np;

			while (cap <= b->len + (size_t)n)
				cap *= 2;
			np = realloc(b->p, cap);
			if (!np) {
				b->oom = true;
				return;
			}
			b->p = np;
			b->cap = cap;
		}
	}
}

static void sb_duration(struct sbuf *b, uint64_t ns)
{
	if (ns && !(ns % NSEC_PER_SEC))
		sb_printf(b, "%" PRIu64 "s", (uint64_t)(ns / NSEC_PER_SEC));
	else if (ns && !(ns % NSEC_PER_MSEC))
		sb_printf(b, "%" PRIu64 "ms", (uint64_t)(ns / NSEC_PER_MSEC));
	else if (ns && !(ns % NSEC_PER_USEC))
		sb_printf(b, "%" PRIu64 "us", (uint64_t)(ns / NSEC_PER_USEC));
	else
		sb_printf(b, "%" PRIu64 "ns", ns);
}

static void sb_errno(struct sbuf *b, int e)
{
	const char *n = fault_errno_name(e);

	if (n)
		sb_printf(b, "%s", n);
	else
		sb_printf(b, "%d", e);
}

/* " WORD=" (@lead: " " before it), the word from core/fault/fault_int.h's table. */
static void sb_key(struct sbuf *b, bool lead, enum fault_word_id w)
{
	sb_printf(b, "%s%s=", lead ? " " : "", fault_word[w]);
}

static void sb_flag(struct sbuf *b, enum fault_word_id w)
{
	sb_printf(b, "%s", fault_word[w]);
}

static void sb_u64(struct sbuf *b, enum fault_word_id w, uint64_t v)
{
	sb_key(b, true, w);
	sb_printf(b, "%" PRIu64, v);
}

/* latency=DIST [max=] [spike= spike_prob=] */
static void spec_format_latency(struct sbuf *b, const struct fault_spec *s)
{
	sb_key(b, false, FW_LATENCY);
	switch (s->dist) {
	case FAULT_DIST_FIXED:
		sb_duration(b, s->lat_a_ns);
		break;
	case FAULT_DIST_UNIFORM:
		sb_printf(b, "%s:", fault_dist_name[s->dist]);
		sb_duration(b, s->lat_a_ns);
		sb_printf(b, ":");
		sb_duration(b, s->lat_b_ns);
		break;
	case FAULT_DIST_EXP:
		sb_printf(b, "%s:", fault_dist_name[s->dist]);
		sb_duration(b, s->lat_a_ns);
		break;
	case FAULT_DIST_PARETO:
		sb_printf(b, "%s:", fault_dist_name[s->dist]);
		sb_duration(b, s->lat_a_ns);
		sb_printf(b, ":%.17g", s->shape);
		break;
	}
	if (s->lat_max_ns != DEFAULT_LAT_MAX_NS) {
		sb_key(b, true, FW_MAX);
		sb_duration(b, s->lat_max_ns);
	}
	if (s->spike_ns) {
		sb_key(b, true, FW_SPIKE);
		sb_duration(b, s->spike_ns);
		sb_key(b, true, FW_SPIKE_PROB);
		sb_printf(b, "%.17g", s->spike_prob);
	}
}

/* badblocks=N,M-P blksz= [error=]: runs of blocks written as ranges */
static void spec_format_dust(struct sbuf *b, const struct fault_spec *s)
{
	sb_key(b, false, FW_BADBLOCKS);
	if (!s->nbad)
		sb_printf(b, "none");
	for (size_t i = 0; i < s->nbad;) {
		size_t j = i;

		while (j + 1 < s->nbad && s->badblocks[j + 1] == s->badblocks[j] + 1)
			j++;
		sb_printf(b, "%s%" PRIu64, i ? "," : "", s->badblocks[i]);
		if (j > i)
			sb_printf(b, "-%" PRIu64, s->badblocks[j]);
		i = j + 1;
	}
	sb_key(b, true, FW_BLKSZ);
	sb_printf(b, "%" PRIu32, s->blksz);
	if (s->error != EIO) {
		sb_key(b, true, FW_ERROR);
		sb_errno(b, s->error);
	}
}

static void spec_format(struct sbuf *b, const struct fault_spec *s)
{
	const unsigned int all = (1u << BIO_OP_NR) - 1;

	if (s->effect != FAULT_DUST) {
		if (s->ops == all) {
			sb_key(b, false, FW_OP);
			sb_printf(b, "%s", FAULT_OPS_ANY);
		} else {
			const char *sep = "";

			sb_key(b, false, FW_OP);

			for (int op = 0; op < BIO_OP_NR; op++) {
				if (s->ops & (1u << op)) {
					sb_printf(b, "%s%s", sep, bio_op_name[op]);
					sep = ",";
				}
			}
		}
		if (s->offset)
			{
			sb_key(b, true, FW_OFFSET);
			sb_printf(b, "%" PRIu64, s->offset);
		}
		if (s->len)
			{
			sb_key(b, true, FW_LEN);
			sb_printf(b, "%" PRIu64, s->len);
		}
		sb_printf(b, " ");
	}
	switch (s->effect) {
	case FAULT_ERROR:
		sb_key(b, false, FW_ERROR);
		sb_errno(b, s->error);
		break;
	case FAULT_LIE:
		sb_flag(b, FW_LIE);
		break;
	case FAULT_CORRUPT:
		sb_key(b, false, FW_CORRUPT);
		sb_printf(b, "%s", fault_corrupt_name[s->corrupt]);
		if (s->corrupt == FAULT_CORRUPT_FLIP) {
			sb_key(b, true, FW_BITS);
			sb_printf(b, "%" PRIu32, s->bits);
		}
		break;
	case FAULT_LATENCY:
		spec_format_latency(b, s);
		break;
	case FAULT_STALL:
		sb_flag(b, FW_STALL);
		if (s->timeout_ns) {
			sb_key(b, true, FW_TIMEOUT);
			sb_duration(b, s->timeout_ns);
			if (s->error) {
				sb_key(b, true, FW_ERROR);
				sb_errno(b, s->error);
			}
		}
		break;
	case FAULT_DUST:
		spec_format_dust(b, s);
		break;
	case FAULT_EFFECT_NR:
		break;
	}
	if (s->after_ns) {
		sb_key(b, true, FW_AFTER);
		sb_duration(b, s->after_ns);
	}
	if (s->after)
		sb_u64(b, FW_AFTER, s->after);
	if (s->every)
		sb_u64(b, FW_EVERY, s->every);
	if (s->first)
		sb_u64(b, FW_FIRST, s->first);
	if (s->prob > 0) {
		sb_key(b, true, FW_PROB);
		sb_printf(b, "%.17g", s->prob);
	}
	if (s->has_seed)
		sb_u64(b, FW_SEED, s->seed);
}

char *fault_spec_format(const struct fault_spec *spec)
{
	struct sbuf b = { 0 };

	spec_format(&b, spec);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
