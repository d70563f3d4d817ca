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

		if (!strcmp(tok, "any")) {
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
	if (!strcmp(buf, "uniform")) {
		spec->dist = FAULT_DIST_UNIFORM;
		if (!b || parse_duration(a, &spec->lat_a_ns) || parse_duration(b, &spec->lat_b_ns) ||
		    spec->lat_b_ns < spec->lat_a_ns)
			return -EINVAL;
		return 0;
	}
	if (!strcmp(buf, "exp")) {
		spec->dist = FAULT_DIST_EXP;
		return b || parse_duration(a, &spec->lat_a_ns) || !spec->lat_a_ns ? -EINVAL : 0;
	}
	if (!strcmp(buf, "pareto")) {
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

int fault_spec_parse(const char *text, struct fault_spec *spec, char *err, size_t errlen)
{
	char *buf, *tok, *save;
	bool has_op = false, has_trigger = false, has_error = false, has_bits = false;
	bool has_timeout = false, has_blksz = false, has_spike_prob = false, has_max = false;
	const char *effect_word = NULL;
	int ret = -EINVAL, neffects = 0;

	memset(spec, 0, sizeof(*spec));
	spec->ops = (1u << BIO_OP_NR) - 1;
	spec->bits = 1;
	spec->blksz = 512;
	spec->lat_max_ns = DEFAULT_LAT_MAX_NS;
	if (strlen(text) >= FAULT_SPEC_LEN) {
		fault_put_err(err, errlen, "fault too long (at most %d characters)", FAULT_SPEC_LEN - 1);
		return -EINVAL;
	}
	buf = strdup(text);
	if (!buf) {
		fault_put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		char *val = strchr(tok, '=');
		const char *key = tok;

		if (val)
			*val++ = '\0';
#define NEED_VAL()                                                                                \
	do {                                                                                      \
		if (!val || !*val) {                                                              \
			fault_put_err(err, errlen, "%s: needs a value (%s=...)", key, key);             \
			goto out;                                                                 \
		}                                                                                 \
	} while (0)
#define BAD(...)                                                                                  \
	do {                                                                                      \
		fault_put_err(err, errlen, __VA_ARGS__);                                                \
		goto out;                                                                         \
	} while (0)
		if (!strcmp(key, "op")) {
			NEED_VAL();
			if (parse_ops(val, &spec->ops))
				BAD("op: expected read, write, flush, discard or any, comma separated "
				    "(got \"%s\")", val);
			has_op = true;
		} else if (!strcmp(key, "offset")) {
			NEED_VAL();
			if (parse_size(val, &spec->offset))
				BAD("offset: expected bytes with an optional K, M, G... suffix (got \"%s\")", val);
		} else if (!strcmp(key, "len")) {
			NEED_VAL();
			if (parse_size(val, &spec->len) || !spec->len)
				BAD("len: expected bytes > 0 with an optional K, M, G... suffix (got \"%s\")", val);
		} else if (!strcmp(key, "error")) {
			NEED_VAL();
			if (!strcasecmp(val, "ENOSYS") ||
			    (isdigit((unsigned char)*val) && atoi(val) == ENOSYS))
				BAD("error=%s: refused: the kernel's FUSE client takes ENOSYS as "
				    "\"not implemented\" and would never send that request (fsync, "
				    "fallocate, ...) again for the whole mount; use EIO or EOPNOTSUPP",
				    val);
			if (fault_parse_errno(val, &spec->error))
				BAD("error=%s: unknown errno (EIO, ENOSPC, ETIMEDOUT, EROFS, ...)", val);
			has_error = true;
		} else if (!strcmp(key, "lie")) {
			if (val)
				BAD("lie: takes no value");
			spec->effect = FAULT_LIE;
			effect_word = key;
			neffects++;
		} else if (!strcmp(key, "corrupt")) {
			NEED_VAL();
			if (!strcmp(val, "flip"))
				spec->corrupt = FAULT_CORRUPT_FLIP;
			else if (!strcmp(val, "zero"))
				spec->corrupt = FAULT_CORRUPT_ZERO;
			else
				BAD("corrupt: expected flip or zero (got \"%s\")", val);
			spec->effect = FAULT_CORRUPT;
			effect_word = key;
			neffects++;
		} else if (!strcmp(key, "bits")) {
			uint64_t v;

			NEED_VAL();
			if (parse_u64(val, &v) || !v || v > 4096)
				BAD("bits: expected 1..4096 (got \"%s\")", val);
			spec->bits = (uint32_t)v;
			has_bits = true;
		} else if (!strcmp(key, "latency")) {
			NEED_VAL();
			if (parse_latency(val, spec))
				BAD("latency: expected DURATION, uniform:MIN:MAX, exp:MEAN or "
				    "pareto:SCALE:ALPHA, durations such as 2ms (got \"%s\")", val);
			spec->effect = FAULT_LATENCY;
			effect_word = key;
			neffects++;
		} else if (!strcmp(key, "max")) {
			NEED_VAL();
			if (parse_duration(val, &spec->lat_max_ns) || !spec->lat_max_ns)
				BAD("max: expected a duration > 0 such as 2ms (got \"%s\")", val);
			has_max = true;
		} else if (!strcmp(key, "spike")) {
			NEED_VAL();
			if (parse_duration(val, &spec->spike_ns) || !spec->spike_ns)
				BAD("spike: expected a duration > 0 such as 2ms (got \"%s\")", val);
		} else if (!strcmp(key, "spike_prob")) {
			NEED_VAL();
			if (parse_prob(val, &spec->spike_prob))
				BAD("spike_prob: expected a probability in (0, 1] or a percentage "
				    "(got \"%s\")", val);
			has_spike_prob = true;
		} else if (!strcmp(key, "stall")) {
			if (val)
				BAD("stall: takes no value (timeout=DURATION sets a timeout)");
			spec->effect = FAULT_STALL;
			effect_word = key;
			neffects++;
		} else if (!strcmp(key, "timeout")) {
			NEED_VAL();
			if (parse_duration(val, &spec->timeout_ns) || !spec->timeout_ns)
				BAD("timeout: expected a duration > 0 such as 2ms (got \"%s\")", val);
			has_timeout = true;
		} else if (!strcmp(key, "badblocks")) {
			NEED_VAL();
			if (spec->badblocks)
				BAD("badblocks: given twice");
			ret = parse_badblocks(val, spec, err, errlen);
			if (ret) {
				if (ret == -ENOMEM)
					fault_put_err(err, errlen, "out of memory");
				goto out;
			}
			ret = -EINVAL;
			spec->effect = FAULT_DUST;
			effect_word = key;
			neffects++;
		} else if (!strcmp(key, "blksz")) {
			uint64_t v;

			NEED_VAL();
			if (parse_size(val, &v) || v < 512 || v > 1024 * 1024 || (v & (v - 1)))
				BAD("blksz: expected a power of two from 512 to 1M (got \"%s\")", val);
			spec->blksz = (uint32_t)v;
			has_blksz = true;
		} else if (!strcmp(key, "prob")) {
			NEED_VAL();
			if (parse_prob(val, &spec->prob))
				BAD("prob: expected a probability in (0, 1] or a percentage (got \"%s\")",
				    val);
			has_trigger = true;
		} else if (!strcmp(key, "every")) {
			NEED_VAL();
			if (parse_u64(val, &spec->every) || !spec->every)
				BAD("every: expected an integer >= 1 (got \"%s\")", val);
			has_trigger = true;
		} else if (!strcmp(key, "first")) {
			NEED_VAL();
			if (parse_u64(val, &spec->first) || !spec->first)
				BAD("first: expected an integer >= 1 (got \"%s\")", val);
			has_trigger = true;
		} else if (!strcmp(key, "after")) {
			NEED_VAL();
			if (isdigit((unsigned char)val[strlen(val) - 1])) {
				if (parse_u64(val, &spec->after))
					BAD("after: expected a request count or a duration such as "
					    "2ms (got \"%s\")", val);
			} else if (parse_duration(val, &spec->after_ns)) {
				BAD("after: expected a request count or a duration such as 2ms "
				    "(got \"%s\")", val);
			}
			has_trigger = true;
		} else if (!strcmp(key, "seed")) {
			NEED_VAL();
			if (parse_u64(val, &spec->seed))
				BAD("seed: expected an unsigned 64-bit integer (got \"%s\")", val);
			spec->has_seed = true;
		} else {
			BAD("unknown word \"%s\"", key);
		}
#undef NEED_VAL
#undef BAD
	}

	if (has_error && (!neffects || spec->effect == FAULT_STALL || spec->effect == FAULT_DUST)) {
		if (!neffects) {
			spec->effect = FAULT_ERROR;
			effect_word = "error";
			neffects++;
		}
	} else if (has_error) {
		fault_put_err(err, errlen, "error= does not go with %s", effect_word);
		goto out;
	}
	if (neffects != 1) {
		fault_put_err(err, errlen, neffects ? "more than one effect (%s and another)"
					      : "no effect: give error=, lie, corrupt=, latency=, "
						"stall or badblocks=%s",
			effect_word ? effect_word : "");
		goto out;
	}
	if (spec->effect == FAULT_DUST) {
		if (!has_error)
			spec->error = EIO;
		if (has_op || spec->offset || spec->len || has_trigger) {
			fault_put_err(err, errlen, "badblocks: its blocks are its match and trigger "
					     "(no op=, offset=, len=, prob=, every=, first=, after=)");
			goto out;
		}
	} else if (has_blksz) {
		fault_put_err(err, errlen, "blksz= goes with badblocks= only");
		goto out;
	}
	if (spec->effect == FAULT_LIE) {
		if (!has_op)
			spec->ops = 1u << BIO_OP_WRITE;
		if (spec->ops != 1u << BIO_OP_WRITE) {
			fault_put_err(err, errlen, "lie: acts on writes only (op=write)");
			goto out;
		}
	}
	if (spec->effect == FAULT_CORRUPT) {
		if (!has_op)
			spec->ops = (1u << BIO_OP_READ) | (1u << BIO_OP_WRITE);
		if (spec->ops & ~((1u << BIO_OP_READ) | (1u << BIO_OP_WRITE))) {
			fault_put_err(err, errlen, "corrupt: acts on reads and writes only");
			goto out;
		}
	} else if (has_bits) {
		fault_put_err(err, errlen, "bits= goes with corrupt=flip only");
		goto out;
	}
	if (spec->effect == FAULT_CORRUPT && spec->corrupt == FAULT_CORRUPT_ZERO && has_bits) {
		fault_put_err(err, errlen, "bits= goes with corrupt=flip only");
		goto out;
	}
	if (spec->effect != FAULT_LATENCY && (spec->spike_ns || has_spike_prob || has_max)) {
		fault_put_err(err, errlen, "spike=, spike_prob= and max= go with latency= only");
		goto out;
	}
	if (!spec->spike_ns != !has_spike_prob) {
		fault_put_err(err, errlen, "spike= and spike_prob= go together");
		goto out;
	}
	if (spec->effect != FAULT_STALL && has_timeout) {
		fault_put_err(err, errlen, "timeout= goes with stall only");
		goto out;
	}
	if (spec->effect == FAULT_STALL && has_error && !has_timeout) {
		fault_put_err(err, errlen, "stall: error= is what a timeout returns: give timeout= too");
		goto out;
	}
	if (spec->len && spec->offset > UINT64_MAX - spec->len) {
		fault_put_err(err, errlen, "offset + len overflows");
		goto out;
	}
	ret = 0;
out:
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
