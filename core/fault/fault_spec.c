// SPDX-License-Identifier: MIT
/* The words of an injected fault: parsing them into a struct fault_spec (core/fault/fault.h), and
 * the errno names they use. core/fault/fault_spec_format.c writes a spec back. Plain data, no locks. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util/clock.h"
#include "core/fault/fault_int.h"
#include "core/util/units.h"

/* ---- errno names ---- */

static const struct {
	const char *name;
	int e;
} errno_names[] = {
	{ "EIO", EIO },		{ "ENOSPC", ENOSPC },	  { "ETIMEDOUT", ETIMEDOUT },
	{ "EROFS", EROFS },	{ "EREMOTEIO", EREMOTEIO }, { "ENOMEM", ENOMEM },
	{ "EAGAIN", EAGAIN },	{ "EINVAL", EINVAL },	  { "EPERM", EPERM },
	{ "EACCES", EACCES },	{ "ENODATA", ENODATA },	  { "EILSEQ", EILSEQ },
	{ "EBADMSG", EBADMSG }, { "ENOLINK", ENOLINK },	  { "ENXIO", ENXIO },
	{ "ENODEV", ENODEV },	{ "EOVERFLOW", EOVERFLOW }, { "EFBIG", EFBIG },
	{ "EDQUOT", EDQUOT },	{ "EBUSY", EBUSY },	  { "ECANCELED", ECANCELED },
	{ "EPROTO", EPROTO },	{ "EOPNOTSUPP", EOPNOTSUPP }, { "ECONNRESET", ECONNRESET },
	{ "ENOTCONN", ENOTCONN }, { "ESHUTDOWN", ESHUTDOWN }, { "EMEDIUMTYPE", EMEDIUMTYPE },
	{ "ENOMEDIUM", ENOMEDIUM }, { "EUCLEAN", EUCLEAN }, { "EHWPOISON", EHWPOISON },
};

#define NR_ERRNO_NAMES (sizeof(errno_names) / sizeof(errno_names[0]))

const char *fault_errno_name(int e)
{
	for (size_t i = 0; i < NR_ERRNO_NAMES; i++)
		if (errno_names[i].e == e)
			return errno_names[i].name;
	return NULL;
}

int fault_parse_errno(const char *s, int *out)
{
	char *end;
	long v;

	for (size_t i = 0; i < NR_ERRNO_NAMES; i++) {
		if (!strcasecmp(s, errno_names[i].name)) {
			*out = errno_names[i].e;
			return 0;
		}
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	v = strtol(s, &end, 10);
	/* Only errnos of the table: ENOSYS, for one, would tell the kernel's FUSE client that
	 * fsync is not implemented, and it would stop sending flushes for good. */
	if (*end || !fault_errno_name((int)v))
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* ---- parsing ---- */

void fault_put_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

#define FAULT_MAX_DURATION_NS (3600ull * NSEC_PER_SEC)

/* Bytes: core/util/units.h's sizes ("4096", "1M", "1.5GiB"). */
static int parse_size(const char *s, uint64_t *out)
{
	return units_parse_size(s, out);
}

/* A duration with its unit (core/util/units.h: "2ms", "1.5s", "1m30s"); at most an hour. */
static int parse_duration(const char *s, uint64_t *out)
{
	uint64_t v;
	int ret = units_parse_duration(s, 0, &v);

	if (ret)
		return ret;
	if (v > FAULT_MAX_DURATION_NS)
		return -ERANGE;
	*out = v;
	return 0;
}

/* A probability: a decimal in (0, 1], or a percentage "0.5%". */
static int parse_prob(const char *s, double *out)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)*s) && *s != '.')
		return -EINVAL;
	v = strtod(s, &end);
	if (*end == '%') {
		v /= 100;
		end++;
	}
	if (*end || !(v > 0) || v > 1)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_ops(const char *s, unsigned int *ops)
{
	char buf[64], *tok, *save;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	*ops = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int op;

		if (!strcmp(tok, FAULT_OPS_ANY)) {
			*ops |= (1u << BIO_OP_NR) - 1;
			continue;
		}
		for (op = 0; op < BIO_OP_NR; op++)
			if (!strcmp(tok, bio_op_name[op]))
				break;
		if (op == BIO_OP_NR)
			return -EINVAL;
		*ops |= 1u << op;
	}
	return *ops ? 0 : -EINVAL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* "N,M-P,...": block numbers, sorted and made distinct into spec->badblocks. */
static int parse_badblocks(const char *s, struct fault_spec *spec, char *err, size_t errlen)
{
	char *buf = strdup(s), *tok, *save;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;

		if (dash)
			*dash = '\0';
		if (parse_u64(tok, &lo) || (dash ? parse_u64(dash + 1, &hi) : (hi = lo, 0)) ||
		    hi < lo) {
			fault_put_err(err, errlen, "badblocks: expected N or N-M (got \"%s\")", s);
			ret = -EINVAL;
			goto out;
		}
		if (hi - lo >= FAULT_MAX_BADBLOCKS || n + (hi - lo) + 1 > FAULT_MAX_BADBLOCKS) {
			fault_put_err(err, errlen, "badblocks: more than %u blocks", FAULT_MAX_BADBLOCKS);
			ret = -EINVAL;
			goto out;
		}
		for (uint64_t b = lo;; b++) {
			if (n == cap) {
				uint64_t *nv;

				cap = cap ? cap * 2 : 64;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					ret = -ENOMEM;
					goto out;
				}
				v = nv;
			}
			v[n++] = b;
			if (b == hi)
				break;
		}
	}
	if (!n) {
		fault_put_err(err, errlen, "badblocks: empty list");
		ret = -EINVAL;
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	{
		size_t j = 0;

		for (size_t i = 0; i < n; i++)
			if (!j || v[j - 1] != v[i])
				v[j++] = v[i];
		n = j;
	}
	spec->badblocks = v;
	spec->nbad = n;
	v = NULL;
out:
	free(v);
	free(buf);
	return ret;
}

/* latency=DUR | uniform:DUR:DUR | exp:DUR | pareto:DUR:ALPHA */
static int parse_latency(const char *s, struct fault_spec *spec)
{
	char buf[96], *a, *b;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	a = strchr(buf, ':');
	if (!a) {
		spec->dist = FAULT_DIST_FIXED;
		return parse_duration(buf, &spec->lat_a_ns) ? -EINVAL : 0;
	}
	*a++ = '\0';
	b = strchr(a, ':');
	if (b)
		*b++ = '\0';
	if (!strcmp(buf, fault_dist_name[FAULT_DIST_UNIFORM])) {
		spec->dist = FAULT_DIST_UNIFORM;
		if (!b || parse_duration(a, &spec->lat_a_ns) || parse_duration(b, &spec->lat_b_ns) ||
		    spec->lat_b_ns < spec->lat_a_ns)
			return -EINVAL;
		return 0;
	}
	if (!strcmp(buf, fault_dist_name[FAULT_DIST_EXP])) {
		spec->dist = FAULT_DIST_EXP;
		return b || parse_duration(a, &spec->lat_a_ns) || !spec->lat_a_ns ? -EINVAL : 0;
	}
	if (!strcmp(buf, fault_dist_name[FAULT_DIST_PARETO])) {
		char *end;

		spec->dist = FAULT_DIST_PARETO;
		if (!b || parse_duration(a, &spec->lat_a_ns) || !spec->lat_a_ns)
			return -EINVAL;
		spec->shape = strtod(b, &end);
		if (*end || !(spec->shape >= 0.1) || spec->shape > 100)
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

/* ---- the words ---- */

const char *const fault_word[FW_NR] = {
#define FW_NAME(id, name) [FW_##id] = name,
	FAULT_WORDS(FW_NAME)
#undef FW_NAME
};

const char *const fault_corrupt_name[] = {
	[FAULT_CORRUPT_FLIP] = "flip",
	[FAULT_CORRUPT_ZERO] = "zero",
};

const char *const fault_dist_name[] = {
	[FAULT_DIST_FIXED] = NULL, /* a bare duration */
	[FAULT_DIST_UNIFORM] = "uniform",
	[FAULT_DIST_EXP] = "exp",
	[FAULT_DIST_PARETO] = "pareto",
};

/* What a parse has seen so far, for the checks between words once all are read. */
struct spec_parse {
	struct fault_spec *spec;
	char *err;
	size_t errlen;
	bool has_op, has_trigger, has_error, has_bits;
	bool has_timeout, has_blksz, has_spike_prob, has_max;
	const char *effect_word;	/* the last effect's word */
	int neffects;
};

#define BAD(ps, ...) (fault_put_err((ps)->err, (ps)->errlen, __VA_ARGS__), -EINVAL)

static int word_op(struct spec_parse *ps, const char *val)
{
	if (parse_ops(val, &ps->spec->ops))
		return BAD(ps, "op: expected read, write, flush, discard or any, comma separated "
			       "(got \"%s\")", val);
	ps->has_op = true;
	return 0;
}

static int word_offset(struct spec_parse *ps, const char *val)
{
	if (parse_size(val, &ps->spec->offset))
		return BAD(ps, "offset: expected bytes with an optional K, M, G... suffix (got \"%s\")",
			   val);
	return 0;
}

static int word_len(struct spec_parse *ps, const char *val)
{
	if (parse_size(val, &ps->spec->len) || !ps->spec->len)
		return BAD(ps, "len: expected bytes > 0 with an optional K, M, G... suffix (got \"%s\")",
			   val);
	return 0;
}

static int word_error(struct spec_parse *ps, const char *val)
{
	if (!strcasecmp(val, "ENOSYS") || (isdigit((unsigned char)*val) && atoi(val) == ENOSYS))
		return BAD(ps, "error=%s: refused: the kernel's FUSE client takes ENOSYS as "
			       "\"not implemented\" and would never send that request (fsync, "
			       "fallocate, ...) again for the whole mount; use EIO or EOPNOTSUPP",
			   val);
	if (fault_parse_errno(val, &ps->spec->error))
		return BAD(ps, "error=%s: unknown errno (EIO, ENOSPC, ETIMEDOUT, EROFS, ...)", val);
	ps->has_error = true;
	return 0;
}

static int word_lie(struct spec_parse *ps, const char *val)
{
	(void)val;
	ps->spec->effect = FAULT_LIE;
	return 0;
}

static int word_corrupt(struct spec_parse *ps, const char *val)
{
	if (!strcmp(val, fault_corrupt_name[FAULT_CORRUPT_FLIP]))
		ps->spec->corrupt = FAULT_CORRUPT_FLIP;
	else if (!strcmp(val, fault_corrupt_name[FAULT_CORRUPT_ZERO]))
		ps->spec->corrupt = FAULT_CORRUPT_ZERO;
	else
		return BAD(ps, "corrupt: expected flip or zero (got \"%s\")", val);
	ps->spec->effect = FAULT_CORRUPT;
	return 0;
}

static int word_bits(struct spec_parse *ps, const char *val)
{
	uint64_t v;

	if (parse_u64(val, &v) || !v || v > 4096)
		return BAD(ps, "bits: expected 1..4096 (got \"%s\")", val);
	ps->spec->bits = (uint32_t)v;
	ps->has_bits = true;
	return 0;
}

static int word_latency(struct spec_parse *ps, const char *val)
{
	if (parse_latency(val, ps->spec))
		return BAD(ps, "latency: expected DURATION, uniform:MIN:MAX, exp:MEAN or "
			       "pareto:SCALE:ALPHA, durations such as 2ms (got \"%s\")", val);
	ps->spec->effect = FAULT_LATENCY;
	return 0;
}

static int word_max(struct spec_parse *ps, const char *val)
{
	if (parse_duration(val, &ps->spec->lat_max_ns) || !ps->spec->lat_max_ns)
		return BAD(ps, "max: expected a duration > 0 such as 2ms (got \"%s\")", val);
	ps->has_max = true;
	return 0;
}

static int word_spike(struct spec_parse *ps, const char *val)
{
	if (parse_duration(val, &ps->spec->spike_ns) || !ps->spec->spike_ns)
		return BAD(ps, "spike: expected a duration > 0 such as 2ms (got \"%s\")", val);
	return 0;
}

static int word_spike_prob(struct spec_parse *ps, const char *val)
{
	if (parse_prob(val, &ps->spec->spike_prob))
		return BAD(ps, "spike_prob: expected a probability in (0, 1] or a percentage "
			       "(got \"%s\")", val);
	ps->has_spike_prob = true;
	return 0;
}

static int word_stall(struct spec_parse *ps, const char *val)
{
	(void)val;
	ps->spec->effect = FAULT_STALL;
	return 0;
}

static int word_timeout(struct spec_parse *ps, const char *val)
{
	if (parse_duration(val, &ps->spec->timeout_ns) || !ps->spec->timeout_ns)
		return BAD(ps, "timeout: expected a duration > 0 such as 2ms (got \"%s\")", val);
	ps->has_timeout = true;
	return 0;
}

static int word_badblocks(struct spec_parse *ps, const char *val)
{
	int ret;

	if (ps->spec->badblocks)
		return BAD(ps, "badblocks: given twice");
	ret = parse_badblocks(val, ps->spec, ps->err, ps->errlen);
	if (ret == -ENOMEM)
		fault_put_err(ps->err, ps->errlen, "out of memory");
	if (ret)
		return ret;
	ps->spec->effect = FAULT_DUST;
	return 0;
}

static int word_blksz(struct spec_parse *ps, const char *val)
{
	uint64_t v;

	if (parse_size(val, &v) || v < 512 || v > 1024 * 1024 || (v & (v - 1)))
		return BAD(ps, "blksz: expected a power of two from 512 to 1M (got \"%s\")", val);
	ps->spec->blksz = (uint32_t)v;
	ps->has_blksz = true;
	return 0;
}

static int word_prob(struct spec_parse *ps, const char *val)
{
	if (parse_prob(val, &ps->spec->prob))
		return BAD(ps, "prob: expected a probability in (0, 1] or a percentage (got \"%s\")",
			   val);
	ps->has_trigger = true;
	return 0;
}

static int word_every(struct spec_parse *ps, const char *val)
{
	if (parse_u64(val, &ps->spec->every) || !ps->spec->every)
		return BAD(ps, "every: expected an integer >= 1 (got \"%s\")", val);
	ps->has_trigger = true;
	return 0;
}

static int word_first(struct spec_parse *ps, const char *val)
{
	if (parse_u64(val, &ps->spec->first) || !ps->spec->first)
		return BAD(ps, "first: expected an integer >= 1 (got \"%s\")", val);
	ps->has_trigger = true;
	return 0;
}

/* after=N requests, or after=DURATION: a count ends in a digit, a duration in its unit. */
static int word_after(struct spec_parse *ps, const char *val)
{
	int ret = isdigit((unsigned char)val[strlen(val) - 1])
			  ? parse_u64(val, &ps->spec->after)
			  : parse_duration(val, &ps->spec->after_ns);

	if (ret)
		return BAD(ps, "after: expected a request count or a duration such as 2ms "
			       "(got \"%s\")", val);
	ps->has_trigger = true;
	return 0;
}

static int word_seed(struct spec_parse *ps, const char *val)
{
	if (parse_u64(val, &ps->spec->seed))
		return BAD(ps, "seed: expected an unsigned 64-bit integer (got \"%s\")", val);
	ps->spec->has_seed = true;
	return 0;
}

/* How each word is read. A flag takes no value; an effect word names the fault's effect. */
static const struct {
	int (*parse)(struct spec_parse *ps, const char *val);
	bool flag;
	bool effect;
	const char *flag_hint;	/* after "WORD: takes no value" */
} word_ops[FW_NR] = {
	[FW_OP] = { .parse = word_op },
	[FW_OFFSET] = { .parse = word_offset },
	[FW_LEN] = { .parse = word_len },
	[FW_ERROR] = { .parse = word_error },
	[FW_LIE] = { .parse = word_lie, .flag = true, .effect = true, .flag_hint = "" },
	[FW_CORRUPT] = { .parse = word_corrupt, .effect = true },
	[FW_BITS] = { .parse = word_bits },
	[FW_LATENCY] = { .parse = word_latency, .effect = true },
	[FW_MAX] = { .parse = word_max },
	[FW_SPIKE] = { .parse = word_spike },
	[FW_SPIKE_PROB] = { .parse = word_spike_prob },
	[FW_STALL] = { .parse = word_stall, .flag = true, .effect = true,
		       .flag_hint = " (timeout=DURATION sets a timeout)" },
	[FW_TIMEOUT] = { .parse = word_timeout },
	[FW_BADBLOCKS] = { .parse = word_badblocks, .effect = true },
	[FW_BLKSZ] = { .parse = word_blksz },
	[FW_PROB] = { .parse = word_prob },
	[FW_EVERY] = { .parse = word_every },
	[FW_FIRST] = { .parse = word_first },
	[FW_AFTER] = { .parse = word_after },
	[FW_SEED] = { .parse = word_seed },
};

/* One KEY or KEY=VALUE token. Returns 0, -EINVAL or -ENOMEM, with @ps->err set. */
static int spec_parse_word(struct spec_parse *ps, char *tok)
{
	char *val = strchr(tok, '=');
	int w, ret;

	if (val)
		*val++ = '\0';
	for (w = 0; w < FW_NR; w++)
		if (!strcmp(tok, fault_word[w]))
			break;
	if (w == FW_NR)
		return BAD(ps, "unknown word \"%s\"", tok);
	if (word_ops[w].flag && val)
		return BAD(ps, "%s: takes no value%s", tok, word_ops[w].flag_hint);
	if (!word_ops[w].flag && (!val || !*val))
		return BAD(ps, "%s: needs a value (%s=...)", tok, tok);
	ret = word_ops[w].parse(ps, val);
	if (ret || !word_ops[w].effect)
		return ret;
	ps->effect_word = fault_word[w];
	ps->neffects++;
	return 0;
}

/* ---- the checks between words ---- */

/* error= alone is the effect; with stall or badblocks= it is what they return. */
static int spec_check_effect(struct spec_parse *ps)
{
	struct fault_spec *spec = ps->spec;

	if (ps->has_error && !ps->neffects) {
		spec->effect = FAULT_ERROR;
		ps->effect_word = fault_word[FW_ERROR];
		ps->neffects++;
	} else if (ps->has_error && spec->effect != FAULT_STALL && spec->effect != FAULT_DUST) {
		return BAD(ps, "error= does not go with %s", ps->effect_word);
	}
	if (ps->neffects != 1)
		return BAD(ps, ps->neffects ? "more than one effect (%s and another)"
					    : "no effect: give error=, lie, corrupt=, latency=, "
					      "stall or badblocks=%s",
			   ps->effect_word ? ps->effect_word : "");
	return 0;
}

/* The words that go with one effect only, and the effects' own ops. */
static int spec_check_companions(struct spec_parse *ps)
{
	struct fault_spec *spec = ps->spec;
	const unsigned int rw = (1u << BIO_OP_READ) | (1u << BIO_OP_WRITE);

	if (spec->effect == FAULT_DUST) {
		if (!ps->has_error)
			spec->error = EIO;
		if (ps->has_op || spec->offset || spec->len || ps->has_trigger)
			return BAD(ps, "badblocks: its blocks are its match and trigger "
				       "(no op=, offset=, len=, prob=, every=, first=, after=)");
	} else if (ps->has_blksz) {
		return BAD(ps, "blksz= goes with badblocks= only");
	}
	if (spec->effect == FAULT_LIE) {
		if (!ps->has_op)
			spec->ops = 1u << BIO_OP_WRITE;
		if (spec->ops != 1u << BIO_OP_WRITE)
			return BAD(ps, "lie: acts on writes only (op=write)");
	}
	if (spec->effect == FAULT_CORRUPT) {
		if (!ps->has_op)
			spec->ops = rw;
		if (spec->ops & ~rw)
			return BAD(ps, "corrupt: acts on reads and writes only");
	}
	if (ps->has_bits && (spec->effect != FAULT_CORRUPT || spec->corrupt == FAULT_CORRUPT_ZERO))
		return BAD(ps, "bits= goes with corrupt=flip only");
	return 0;
}

static int spec_check_timing(struct spec_parse *ps)
{
	struct fault_spec *spec = ps->spec;

	if (spec->effect != FAULT_LATENCY && (spec->spike_ns || ps->has_spike_prob || ps->has_max))
		return BAD(ps, "spike=, spike_prob= and max= go with latency= only");
	if (!spec->spike_ns != !ps->has_spike_prob)
		return BAD(ps, "spike= and spike_prob= go together");
	if (spec->effect != FAULT_STALL && ps->has_timeout)
		return BAD(ps, "timeout= goes with stall only");
	if (spec->effect == FAULT_STALL && ps->has_error && !ps->has_timeout)
		return BAD(ps, "stall: error= is what a timeout returns: give timeout= too");
	if (spec->len && spec->offset > UINT64_MAX - spec->len)
		return BAD(ps, "offset + len overflows");
	return 0;
}

#undef BAD

static void spec_defaults(struct fault_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->ops = (1u << BIO_OP_NR) - 1;
	spec->bits = 1;
	spec->blksz = 512;
	spec->lat_max_ns = DEFAULT_LAT_MAX_NS;
}

int fault_spec_parse(const char *text, struct fault_spec *spec, char *err, size_t errlen)
{
	struct spec_parse ps = { .spec = spec, .err = err, .errlen = errlen };
	char *buf, *tok, *save;
	int ret = 0;

	spec_defaults(spec);
	if (strlen(text) >= FAULT_SPEC_LEN) {
		fault_put_err(err, errlen, "fault too long (at most %d characters)", FAULT_SPEC_LEN - 1);
		return -EINVAL;
	}
	buf = strdup(text);
	if (!buf) {
		fault_put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (tok = strtok_r(buf, " \t\n", &save); tok && !ret; tok = strtok_r(NULL, " \t\n", &save))
		ret = spec_parse_word(&ps, tok);
	if (!ret)
		ret = spec_check_effect(&ps);
	if (!ret)
		ret = spec_check_companions(&ps);
	if (!ret)
		ret = spec_check_timing(&ps);
	free(buf);
	if (ret)
		fault_spec_free(spec);
	return ret;
}

void fault_spec_free(struct fault_spec *spec)
{
	free(spec->badblocks);
	spec->badblocks = NULL;
	spec->nbad = 0;
}
