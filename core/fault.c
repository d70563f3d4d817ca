// SPDX-License-Identifier: MIT
/* Injected faults: parsing, matching, triggers, per-fault PRNGs and the effects.
 *
 * Notes on the design.
 *
 * Where each effect acts. A latency fault adds to the service latency at admission
 * (fault_latency_ns() from ctrl_admit()): the command holds its slot for longer, so a slow
 * spell stops the queue exactly as a slow device does. Every other effect acts per request
 * in fault_exec(), the I/O stage between the controller and the backend: an error fails the
 * command without I/O, a lie acknowledges a write without writing, a corruption writes (or
 * returns) damaged data, a stall runs the I/O and then holds the completion, as a device that
 * did the work and never answered, until `release` or a timeout.
 *
 * A merged request is one command to the device. When a fault fires on it, the whole request
 * fails (every bio gets the error), as a real disk fails a command and the block layer ends
 * every bio of the request with its status. Splitting at the fault's range would make a
 * fault change how the queue merges and what `stats` counts as requests, and a test that
 * wants a bio-exact error can turn merging off (queue.nomerges=2). Corruption alone is
 * limited to the bytes where the request and the fault's range overlap, because damaged
 * data, unlike a status, belongs to bytes.
 *
 * Triggers. A fault matches a request of one of its ops that overlaps its range. Of the
 * matches, those before after=DURATION has passed since the fault was added do not count;
 * of the rest, the first after=K are skipped; counting k from 1 after those, the fault fires
 * when every=N divides k, k <= first=N, and a draw from its PRNG is below prob=P (each only
 * if given). The PRNG (xoshiro256**, seeded through splitmix64) is per fault, so one fault's
 * draws do not depend on another's; a fault added without seed= gets one drawn from
 * getrandom(), logged and shown in the listing, so that a run replays from its log.
 *
 * dm-dust. A dust fault holds a sorted list of bad blocks: a read that touches one fails
 * (EIO unless error= says otherwise), a write that touches one removes it from the list, as
 * dm-dust's default mode does. Its triggers are the bad blocks themselves.
 *
 * Locking: fs->lock guards the faults, their counters and PRNGs, and the stalled requests.
 * It is taken after q->lock (fault_latency_ns() runs under q->lock) and before the timer's
 * lock; it is never held across I/O or while a request is completed. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "core/fault.h"
#include "core/log.h"

struct fault {
	unsigned int id;
	enum fault_origin origin;
	struct fault_spec s;		/* s.badblocks: fs->lock (writes clear blocks) */
	uint64_t added_ns;
	uint64_t rng[4];		/* fs->lock */
	uint64_t matched, injected;	/* fs->lock */
	uint64_t seen;			/* fs->lock: matches since after=DURATION passed */
	bool seed_drawn;		/* no seed= was given: the log names the drawn one */
	struct fault *next;		/* fs->lock */
};

/* A stalled request: its I/O is done, its completion waits. */
struct fault_held {
	struct request *rq;
	int result;			/* of its I/O */
	int timeout_error;		/* negative errno on timeout, or 0: complete with result */
	unsigned int fault_id;
	uint64_t until;			/* timeout (0: none) */
	rq_io_done_t done;		/* the caller's completion */
	void *done_arg;
	struct fault_held *next;	/* fs->lock */
};

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

/* ---- PRNG: splitmix64 to seed, xoshiro256** to draw ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static void rng_seed(uint64_t s[4], uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s[i] = splitmix64(&seed);
}

static uint64_t rng_next(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* Uniform in [0, 1). */
static double rng_double(uint64_t s[4])
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* ---- parsing ---- */

static void put_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void put_err(char *err, size_t errlen, const char *fmt, ...)
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

/* Bytes: an integer with an optional binary K/M/G/T suffix. */
static int parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t n = strlen(s);
	unsigned int shift = 0;
	uint64_t v;
	int ret;

	if (!n || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	switch (toupper((unsigned char)num[n - 1])) {
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	}
	if (shift)
		num[n - 1] = '\0';
	ret = parse_u64(num, &v);
	if (ret)
		return ret;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

#define FAULT_MAX_DURATION_NS (3600ull * NSEC_PER_SEC)

/* A duration: an integer with a unit, ns, us, ms or s; at most an hour. */
static int parse_duration(const char *s, uint64_t *out)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = { { "ns", 1 }, { "us", NSEC_PER_USEC }, { "ms", NSEC_PER_MSEC }, { "s", NSEC_PER_SEC } };
	const char *u = s;
	char num[32];
	uint64_t v;

	while (isdigit((unsigned char)*u))
		u++;
	if (u == s || (size_t)(u - s) >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, (size_t)(u - s));
	num[u - s] = '\0';
	if (parse_u64(num, &v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(u, units[i].unit))
			continue;
		if (v > FAULT_MAX_DURATION_NS / units[i].ns)
			return -ERANGE;
		*out = v * units[i].ns;
		return 0;
	}
	return -EINVAL;
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
			put_err(err, errlen, "badblocks: expected N or N-M (got \"%s\")", s);
			ret = -EINVAL;
			goto out;
		}
		if (hi - lo >= FAULT_MAX_BADBLOCKS || n + (hi - lo) + 1 > FAULT_MAX_BADBLOCKS) {
			put_err(err, errlen, "badblocks: more than %u blocks", FAULT_MAX_BADBLOCKS);
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
		put_err(err, errlen, "badblocks: empty list");
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

#define DEFAULT_LAT_MAX_NS (10 * NSEC_PER_SEC)

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
		put_err(err, errlen, "fault too long (at most %d characters)", FAULT_SPEC_LEN - 1);
		return -EINVAL;
	}
	buf = strdup(text);
	if (!buf) {
		put_err(err, errlen, "out of memory");
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
			put_err(err, errlen, "%s: needs a value (%s=...)", key, key);             \
			goto out;                                                                 \
		}                                                                                 \
	} while (0)
#define BAD(...)                                                                                  \
	do {                                                                                      \
		put_err(err, errlen, __VA_ARGS__);                                                \
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
				BAD("offset: expected bytes with an optional K/M/G/T (got \"%s\")", val);
		} else if (!strcmp(key, "len")) {
			NEED_VAL();
			if (parse_size(val, &spec->len) || !spec->len)
				BAD("len: expected bytes > 0 with an optional K/M/G/T (got \"%s\")", val);
		} else if (!strcmp(key, "error")) {
			NEED_VAL();
			if (fault_parse_errno(val, &spec->error))
				BAD("error: unknown errno \"%s\" (EIO, ENOSPC, ETIMEDOUT, EROFS, ...)", val);
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
				    "pareto:SCALE:ALPHA, durations with ns/us/ms/s (got \"%s\")", val);
			spec->effect = FAULT_LATENCY;
			effect_word = key;
			neffects++;
		} else if (!strcmp(key, "max")) {
			NEED_VAL();
			if (parse_duration(val, &spec->lat_max_ns) || !spec->lat_max_ns)
				BAD("max: expected a duration > 0 with ns/us/ms/s (got \"%s\")", val);
			has_max = true;
		} else if (!strcmp(key, "spike")) {
			NEED_VAL();
			if (parse_duration(val, &spec->spike_ns) || !spec->spike_ns)
				BAD("spike: expected a duration > 0 with ns/us/ms/s (got \"%s\")", val);
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
				BAD("timeout: expected a duration > 0 with ns/us/ms/s (got \"%s\")", val);
			has_timeout = true;
		} else if (!strcmp(key, "badblocks")) {
			NEED_VAL();
			if (spec->badblocks)
				BAD("badblocks: given twice");
			ret = parse_badblocks(val, spec, err, errlen);
			if (ret) {
				if (ret == -ENOMEM)
					put_err(err, errlen, "out of memory");
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
					BAD("after: expected a request count or a duration with "
					    "ns/us/ms/s (got \"%s\")", val);
			} else if (parse_duration(val, &spec->after_ns)) {
				BAD("after: expected a request count or a duration with ns/us/ms/s "
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
		put_err(err, errlen, "error= does not go with %s", effect_word);
		goto out;
	}
	if (neffects != 1) {
		put_err(err, errlen, neffects ? "more than one effect (%s and another)"
					      : "no effect: give error=, lie, corrupt=, latency=, "
						"stall or badblocks=%s",
			effect_word ? effect_word : "");
		goto out;
	}
	if (spec->effect == FAULT_DUST) {
		if (!has_error)
			spec->error = EIO;
		if (has_op || spec->offset || spec->len || has_trigger) {
			put_err(err, errlen, "badblocks: its blocks are its match and trigger "
					     "(no op=, offset=, len=, prob=, every=, first=, after=)");
			goto out;
		}
	} else if (has_blksz) {
		put_err(err, errlen, "blksz= goes with badblocks= only");
		goto out;
	}
	if (spec->effect == FAULT_LIE) {
		if (!has_op)
			spec->ops = 1u << BIO_OP_WRITE;
		if (spec->ops != 1u << BIO_OP_WRITE) {
			put_err(err, errlen, "lie: acts on writes only (op=write)");
			goto out;
		}
	}
	if (spec->effect == FAULT_CORRUPT) {
		if (!has_op)
			spec->ops = (1u << BIO_OP_READ) | (1u << BIO_OP_WRITE);
		if (spec->ops & ~((1u << BIO_OP_READ) | (1u << BIO_OP_WRITE))) {
			put_err(err, errlen, "corrupt: acts on reads and writes only");
			goto out;
		}
	} else if (has_bits) {
		put_err(err, errlen, "bits= goes with corrupt=flip only");
		goto out;
	}
	if (spec->effect == FAULT_CORRUPT && spec->corrupt == FAULT_CORRUPT_ZERO && has_bits) {
		put_err(err, errlen, "bits= goes with corrupt=flip only");
		goto out;
	}
	if (spec->effect != FAULT_LATENCY && (spec->spike_ns || has_spike_prob || has_max)) {
		put_err(err, errlen, "spike=, spike_prob= and max= go with latency= only");
		goto out;
	}
	if (!spec->spike_ns != !has_spike_prob) {
		put_err(err, errlen, "spike= and spike_prob= go together");
		goto out;
	}
	if (spec->effect != FAULT_STALL && has_timeout) {
		put_err(err, errlen, "timeout= goes with stall only");
		goto out;
	}
	if (spec->effect == FAULT_STALL && has_error && !has_timeout) {
		put_err(err, errlen, "stall: error= is what a timeout returns: give timeout= too");
		goto out;
	}
	if (spec->len && spec->offset > UINT64_MAX - spec->len) {
		put_err(err, errlen, "offset + len overflows");
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

/* ---- formatting ---- */

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

static void spec_format(struct sbuf *b, const struct fault_spec *s)
{
	const unsigned int all = (1u << BIO_OP_NR) - 1;

	if (s->effect != FAULT_DUST) {
		if (s->ops == all) {
			sb_printf(b, "op=any");
		} else {
			const char *sep = "op=";

			for (int op = 0; op < BIO_OP_NR; op++) {
				if (s->ops & (1u << op)) {
					sb_printf(b, "%s%s", sep, bio_op_name[op]);
					sep = ",";
				}
			}
		}
		if (s->offset)
			sb_printf(b, " offset=%" PRIu64, s->offset);
		if (s->len)
			sb_printf(b, " len=%" PRIu64, s->len);
		sb_printf(b, " ");
	}
	switch (s->effect) {
	case FAULT_ERROR:
		sb_printf(b, "error=");
		sb_errno(b, s->error);
		break;
	case FAULT_LIE:
		sb_printf(b, "lie");
		break;
	case FAULT_CORRUPT:
		if (s->corrupt == FAULT_CORRUPT_ZERO)
			sb_printf(b, "corrupt=zero");
		else
			sb_printf(b, "corrupt=flip bits=%" PRIu32, s->bits);
		break;
	case FAULT_LATENCY:
		sb_printf(b, "latency=");
		switch (s->dist) {
		case FAULT_DIST_FIXED:
			sb_duration(b, s->lat_a_ns);
			break;
		case FAULT_DIST_UNIFORM:
			sb_printf(b, "uniform:");
			sb_duration(b, s->lat_a_ns);
			sb_printf(b, ":");
			sb_duration(b, s->lat_b_ns);
			break;
		case FAULT_DIST_EXP:
			sb_printf(b, "exp:");
			sb_duration(b, s->lat_a_ns);
			break;
		case FAULT_DIST_PARETO:
			sb_printf(b, "pareto:");
			sb_duration(b, s->lat_a_ns);
			sb_printf(b, ":%.17g", s->shape);
			break;
		}
		if (s->lat_max_ns != DEFAULT_LAT_MAX_NS) {
			sb_printf(b, " max=");
			sb_duration(b, s->lat_max_ns);
		}
		if (s->spike_ns) {
			sb_printf(b, " spike=");
			sb_duration(b, s->spike_ns);
			sb_printf(b, " spike_prob=%.17g", s->spike_prob);
		}
		break;
	case FAULT_STALL:
		sb_printf(b, "stall");
		if (s->timeout_ns) {
			sb_printf(b, " timeout=");
			sb_duration(b, s->timeout_ns);
			if (s->error) {
				sb_printf(b, " error=");
				sb_errno(b, s->error);
			}
		}
		break;
	case FAULT_DUST:
		sb_printf(b, "badblocks=");
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
		sb_printf(b, " blksz=%" PRIu32, s->blksz);
		if (s->error != EIO) {
			sb_printf(b, " error=");
			sb_errno(b, s->error);
		}
		break;
	case FAULT_EFFECT_NR:
		break;
	}
	if (s->after_ns) {
		sb_printf(b, " after=");
		sb_duration(b, s->after_ns);
	}
	if (s->after)
		sb_printf(b, " after=%" PRIu64, s->after);
	if (s->every)
		sb_printf(b, " every=%" PRIu64, s->every);
	if (s->first)
		sb_printf(b, " first=%" PRIu64, s->first);
	if (s->prob > 0)
		sb_printf(b, " prob=%.17g", s->prob);
	if (s->has_seed)
		sb_printf(b, " seed=%" PRIu64, s->seed);
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

/* ---- the set ---- */

static uint64_t fs_now(const struct fault_set *fs)
{
	return fs->clock ? fs->clock(fs->clock_arg) : clock_now_ns();
}

static void stall_timer_fn(struct timer_entry *e, uint64_t now);

int fault_set_init(struct fault_set *fs, io_exec_fn lower, void *lower_arg, struct timer *t,
		   clock_fn clock, void *clock_arg)
{
	int err;

	memset(fs, 0, sizeof(*fs));
	err = pthread_mutex_init(&fs->lock, NULL);
	if (err)
		return -err;
	fs->next_id = 1;
	fs->lower = lower;
	fs->lower_arg = lower_arg;
	fs->timer = t;
	fs->clock = clock;
	fs->clock_arg = clock_arg;
	timer_entry_init(&fs->stall_tmr, stall_timer_fn);
	return 0;
}

static void fault_free(struct fault *f)
{
	fault_spec_free(&f->s);
	free(f);
}

/* fs->lock held: move the stalled requests of fault @id (0: all) to *@out. */
static unsigned int take_held(struct fault_set *fs, unsigned int id, struct fault_held **out)
{
	struct fault_held **pp = &fs->held, **tail = out;
	unsigned int n = 0;

	while (*tail)
		tail = &(*tail)->next;
	while (*pp) {
		struct fault_held *h = *pp;

		if (id && h->fault_id != id) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		h->next = NULL;
		*tail = h;
		tail = &h->next;
		n++;
	}
	return n;
}

/* Without fs->lock: end each request of @list, with its I/O's result (@timed_out: with its
 * timeout error when it has one). */
static void complete_held(struct fault_held *list, bool timed_out)
{
	while (list) {
		struct fault_held *h = list;
		struct request *rq = h->rq;
		int err = timed_out && h->timeout_error ? h->timeout_error : h->result;

		list = h->next;
		rq->io_done = h->done;
		rq->io_done_arg = h->done_arg;
		free(h);
		rq->io_done(rq, err);
	}
}

void fault_set_destroy(struct fault_set *fs)
{
	fault_clear(fs);
	if (fs->timer)
		timer_cancel(fs->timer, &fs->stall_tmr);
	pthread_mutex_destroy(&fs->lock);
}

static uint64_t draw_seed(unsigned int id)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		return seed;
	seed = clock_now_ns() ^ ((uint64_t)id << 32);
	return splitmix64(&seed);
}

/* A new fault from a parsed spec (which it takes over); fs->lock held. */
static struct fault *fault_new(struct fault_set *fs, struct fault_spec *spec,
			       enum fault_origin origin, uint64_t now)
{
	struct fault *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->s = *spec;
	memset(spec, 0, sizeof(*spec));
	f->id = fs->next_id++;
	f->origin = origin;
	f->added_ns = now;
	/* A dust fault draws nothing: its blocks decide. */
	if (!f->s.has_seed && f->s.effect != FAULT_DUST) {
		f->s.seed = draw_seed(f->id);
		f->s.has_seed = true;
		f->seed_drawn = true;
	}
	rng_seed(f->rng, f->s.seed);
	return f;
}

/* fs->lock held: append @f in id order (ids only grow, so at the end). */
static void fault_link(struct fault_set *fs, struct fault *f)
{
	struct fault **pp = &fs->list;

	while (*pp)
		pp = &(*pp)->next;
	*pp = f;
	__atomic_store_n(&fs->nr, fs->nr + 1, __ATOMIC_RELAXED);
}

static void log_added(const struct fault *f)
{
	char *text = fault_spec_format(&f->s);

	log_info("fault %u added (%s): %s%s", f->id,
		 f->origin == FAULT_FROM_CONFIG ? "config" : "control", text ? text : "?",
		 f->seed_drawn ? " (seed drawn: none given)" : "");
	free(text);
}

int fault_add(struct fault_set *fs, const char *text, enum fault_origin origin, char *err,
	      size_t errlen)
{
	struct fault_spec spec;
	struct fault *f;
	int ret;

	ret = fault_spec_parse(text, &spec, err, errlen);
	if (ret)
		return ret;
	pthread_mutex_lock(&fs->lock);
	if (fs->nr >= FAULT_MAX) {
		pthread_mutex_unlock(&fs->lock);
		fault_spec_free(&spec);
		put_err(err, errlen, "already %d faults", FAULT_MAX);
		return -ENOSPC;
	}
	f = fault_new(fs, &spec, origin, fs_now(fs));
	if (!f) {
		pthread_mutex_unlock(&fs->lock);
		fault_spec_free(&spec);
		put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fault_link(fs, f);
	ret = (int)f->id;
	log_added(f);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* fs->lock held: unlink the first fault for which @pick says yes. */
static struct fault *unlink_if(struct fault_set *fs, bool (*pick)(const struct fault *, unsigned int),
			       unsigned int arg)
{
	for (struct fault **pp = &fs->list; *pp; pp = &(*pp)->next) {
		struct fault *f = *pp;

		if (pick(f, arg)) {
			*pp = f->next;
			__atomic_store_n(&fs->nr, fs->nr - 1, __ATOMIC_RELAXED);
			return f;
		}
	}
	return NULL;
}

static bool pick_id(const struct fault *f, unsigned int id)
{
	return f->id == id;
}

static bool pick_any(const struct fault *f, unsigned int unused)
{
	(void)f;
	(void)unused;
	return true;
}

static bool pick_origin(const struct fault *f, unsigned int origin)
{
	return f->origin == (enum fault_origin)origin;
}

int fault_del(struct fault_set *fs, unsigned int id)
{
	struct fault_held *held = NULL;
	struct fault *f;

	pthread_mutex_lock(&fs->lock);
	f = unlink_if(fs, pick_id, id);
	if (f)
		take_held(fs, id, &held);
	pthread_mutex_unlock(&fs->lock);
	if (!f)
		return -ENOENT;
	log_info("fault %u deleted", id);
	fault_free(f);
	complete_held(held, false);
	return 0;
}

void fault_clear(struct fault_set *fs)
{
	struct fault_held *held = NULL;
	struct fault *f, *list = NULL;

	pthread_mutex_lock(&fs->lock);
	while ((f = unlink_if(fs, pick_any, 0))) {
		f->next = list;
		list = f;
	}
	take_held(fs, 0, &held);
	pthread_mutex_unlock(&fs->lock);
	while (list) {
		f = list;
		list = f->next;
		fault_free(f);
	}
	complete_held(held, false);
}

int fault_replace_configured(struct fault_set *fs, char *const *specs, size_t n, char *err,
			     size_t errlen)
{
	struct fault_spec *parsed = calloc(n ? n : 1, sizeof(*parsed));
	struct fault_held *held = NULL;
	struct fault *f, *old = NULL, *added[FAULT_MAX];
	size_t nold = 0, nadded = 0;
	int ret = 0;

	if (!parsed) {
		put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char why[256];

		ret = fault_spec_parse(specs[i], &parsed[i], why, sizeof(why));
		if (ret) {
			put_err(err, errlen, "faults[%zu] \"%s\": %s", i, specs[i], why);
			n = i;
			goto out;
		}
	}
	pthread_mutex_lock(&fs->lock);
	for (f = fs->list; f; f = f->next)
		if (f->origin == FAULT_FROM_CONFIG)
			nold++;
	if (fs->nr - nold + n > FAULT_MAX) {
		pthread_mutex_unlock(&fs->lock);
		put_err(err, errlen, "more than %d faults", FAULT_MAX);
		ret = -ENOSPC;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		added[i] = fault_new(fs, &parsed[i], FAULT_FROM_CONFIG, fs_now(fs));
		if (!added[i]) {
			for (size_t j = 0; j < i; j++)
				fault_free(added[j]);
			pthread_mutex_unlock(&fs->lock);
			put_err(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		nadded++;
	}
	while ((f = unlink_if(fs, pick_origin, FAULT_FROM_CONFIG))) {
		take_held(fs, f->id, &held);
		f->next = old;
		old = f;
	}
	for (size_t i = 0; i < nadded; i++) {
		fault_link(fs, added[i]);
		log_added(added[i]);
	}
	pthread_mutex_unlock(&fs->lock);
	while (old) {
		f = old;
		old = f->next;
		log_info("fault %u deleted (configured faults replaced)", f->id);
		fault_free(f);
	}
	complete_held(held, false);
out:
	for (size_t i = 0; i < n; i++)
		fault_spec_free(&parsed[i]);
	free(parsed);
	return ret;
}

int fault_release(struct fault_set *fs, unsigned int id)
{
	struct fault_held *held = NULL;
	bool known = !id;
	unsigned int n;

	pthread_mutex_lock(&fs->lock);
	for (struct fault *f = fs->list; f && !known; f = f->next)
		known = f->id == id;
	n = known ? take_held(fs, id, &held) : 0;
	pthread_mutex_unlock(&fs->lock);
	if (!known)
		return -ENOENT;
	complete_held(held, false);
	return (int)n;
}

unsigned int fault_nr_held(struct fault_set *fs)
{
	unsigned int n = 0;

	pthread_mutex_lock(&fs->lock);
	for (struct fault_held *h = fs->held; h; h = h->next)
		n++;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

/* ---- matching and triggers ---- */

static bool fault_matches(const struct fault *f, const struct request *rq)
{
	if (!(f->s.ops & (1u << rq->op)))
		return false;
	if (!f->s.offset && !f->s.len)
		return true;
	if (rq->op == BIO_OP_FLUSH)
		return false; /* a flush has no range: only a fault without one matches it */
	if (rq->len == 0 || rq_end(rq) <= f->s.offset)
		return false;
	return !f->s.len || rq->offset < f->s.offset + f->s.len;
}

/* fs->lock held: count a match of @f and say whether it fires. */
static bool fault_fires(struct fault *f, uint64_t now)
{
	uint64_t k;

	f->matched++;
	if (f->s.after_ns && now - f->added_ns < f->s.after_ns)
		return false;
	f->seen++;
	if (f->seen <= f->s.after)
		return false;
	k = f->seen - f->s.after;
	if (f->s.every && k % f->s.every)
		return false;
	if (f->s.first && k > f->s.first)
		return false;
	if (f->s.prob > 0 && rng_double(f->rng) >= f->s.prob)
		return false;
	f->injected++;
	return true;
}

static uint64_t draw_latency(struct fault *f)
{
	const struct fault_spec *s = &f->s;
	double ns = 0;
	uint64_t v;

	switch (s->dist) {
	case FAULT_DIST_FIXED:
		ns = (double)s->lat_a_ns;
		break;
	case FAULT_DIST_UNIFORM:
		ns = (double)s->lat_a_ns + rng_double(f->rng) * (double)(s->lat_b_ns - s->lat_a_ns);
		break;
	case FAULT_DIST_EXP:
		ns = -log1p(-rng_double(f->rng)) * (double)s->lat_a_ns;
		break;
	case FAULT_DIST_PARETO:
		ns = (double)s->lat_a_ns / pow(1.0 - rng_double(f->rng), 1.0 / s->shape);
		break;
	}
	if (s->dist != FAULT_DIST_FIXED && ns > (double)s->lat_max_ns)
		ns = (double)s->lat_max_ns;
	v = (uint64_t)ns;
	if (s->spike_ns && rng_double(f->rng) < s->spike_prob)
		v += s->spike_ns;
	return v;
}

uint64_t fault_latency_ns(struct fault_set *fs, const struct request *rq)
{
	uint64_t extra = 0, now;

	if (!__atomic_load_n(&fs->nr, __ATOMIC_RELAXED))
		return 0;
	now = fs_now(fs);
	pthread_mutex_lock(&fs->lock);
	for (struct fault *f = fs->list; f; f = f->next) {
		if (f->s.effect != FAULT_LATENCY || !fault_matches(f, rq) || !fault_fires(f, now))
			continue;
		extra += draw_latency(f);
	}
	if (extra)
		fs->op_delays[rq->op]++;
	pthread_mutex_unlock(&fs->lock);
	return extra;
}

/* ---- effects ---- */

/* One corruption to apply: bytes [lo, hi) of the request, relative to its offset. */
struct corruption {
	uint64_t lo, hi;
	enum fault_corrupt mode;
	uint32_t bits;
	uint64_t seed;		/* drawn from the fault's PRNG: where the bits flip */
};

/* What fault_exec() decided for a request. */
struct plan {
	int error;		/* negative errno: fail without I/O */
	bool lie;
	bool stall;
	unsigned int stall_id;
	uint64_t stall_until;
	int stall_error;	/* negative, for a timeout */
	unsigned int ncorrupt;
	struct corruption c[FAULT_MAX];
};

/* fs->lock held: whether @rq touches a bad block of dust fault @f; a write clears them. */
static bool dust_hit(struct fault *f, const struct request *rq)
{
	struct fault_spec *s = &f->s;
	uint64_t first, last;
	size_t lo = 0, hi = s->nbad, i;

	if ((rq->op != BIO_OP_READ && rq->op != BIO_OP_WRITE) || !rq->len || !s->nbad)
		return false;
	first = rq->offset / s->blksz;
	last = (rq_end(rq) - 1) / s->blksz;
	while (lo < hi) { /* first bad block >= first */
		size_t mid = lo + (hi - lo) / 2;

		if (s->badblocks[mid] < first)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nbad || s->badblocks[lo] > last)
		return false;
	f->matched++;
	if (rq->op == BIO_OP_READ) {
		f->injected++;
		return true;
	}
	for (i = lo; i < s->nbad && s->badblocks[i] <= last; i++)
		;
	memmove(&s->badblocks[lo], &s->badblocks[i], (s->nbad - i) * sizeof(*s->badblocks));
	s->nbad -= i - lo;
	return false;
}

/* fs->lock held: decide what the faults do to @rq. Returns whether any effect applies. */
static bool plan_request(struct fault_set *fs, struct request *rq, uint64_t now, struct plan *p)
{
	bool any = false;

	for (struct fault *f = fs->list; f; f = f->next) {
		const struct fault_spec *s = &f->s;

		if (s->effect == FAULT_LATENCY)
			continue;
		if (s->effect == FAULT_DUST) {
			if (dust_hit(f, rq) && !p->error) {
				p->error = -s->error;
				any = true;
			}
			continue;
		}
		if (!fault_matches(f, rq) || !fault_fires(f, now))
			continue;
		any = true;
		switch (s->effect) {
		case FAULT_ERROR:
			if (!p->error)
				p->error = -s->error;
			break;
		case FAULT_LIE:
			p->lie = true;
			break;
		case FAULT_CORRUPT: {
			struct corruption *c = &p->c[p->ncorrupt++];
			uint64_t lo = rq->offset, hi = rq_end(rq);

			if (s->offset > lo)
				lo = s->offset;
			if (s->len && s->offset + s->len < hi)
				hi = s->offset + s->len;
			c->lo = lo - rq->offset;
			c->hi = hi - rq->offset;
			c->mode = s->corrupt;
			c->bits = s->bits;
			c->seed = rng_next(f->rng);
			break;
		}
		case FAULT_STALL:
			if (!p->stall) {
				p->stall = true;
				p->stall_id = f->id;
				p->stall_until = s->timeout_ns ? now + s->timeout_ns : 0;
				p->stall_error = s->timeout_ns && s->error ? -s->error : 0;
			}
			break;
		default:
			break;
		}
	}
	if (p->error)
		fs->op_errors[rq->op]++;
	if (p->lie && !p->error)
		fs->op_lies[rq->op]++;
	if (p->ncorrupt && !p->error && !p->lie)
		fs->op_corrupts[rq->op]++;
	if (p->stall)
		fs->op_stalls[rq->op]++;
	return any;
}

/* Copy the request's data to or from a flat buffer. */
static void rq_copy(struct request *rq, uint8_t *buf, bool to_buf)
{
	for (struct bio *b = rq->bio; b; b = b->next) {
		uint8_t *p = buf + (b->offset - rq->offset);

		for (int i = 0; i < b->iovcnt && b->iov; i++) {
			if (to_buf)
				memcpy(p, b->iov[i].iov_base, b->iov[i].iov_len);
			else
				memcpy(b->iov[i].iov_base, p, b->iov[i].iov_len);
			p += b->iov[i].iov_len;
		}
	}
}

static void corrupt_buf(uint8_t *buf, const struct plan *p)
{
	for (unsigned int i = 0; i < p->ncorrupt; i++) {
		const struct corruption *c = &p->c[i];
		uint64_t seed = c->seed, nbits = (c->hi - c->lo) * 8;

		if (c->mode == FAULT_CORRUPT_ZERO) {
			memset(buf + c->lo, 0, c->hi - c->lo);
			continue;
		}
		for (uint32_t k = 0; k < c->bits; k++) {
			uint64_t bit = c->lo * 8 + splitmix64(&seed) % nbits;

			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
	}
}

/* Write a corrupted copy of @rq's data in its place. 0 or -errno. */
static int write_corrupted(struct fault_set *fs, struct request *rq, const struct plan *p)
{
	struct request tmp;
	struct bio bio;
	struct iovec iov;
	uint8_t *buf = malloc(rq->len);
	int ret;

	if (!buf) {
		log_err("fault: no memory for a corrupted copy of %" PRIu64 " bytes", rq->len);
		return -ENOMEM;
	}
	rq_copy(rq, buf, true);
	corrupt_buf(buf, p);
	memset(&bio, 0, sizeof(bio));
	bio.op = BIO_OP_WRITE;
	bio.offset = rq->offset;
	bio.len = (uint32_t)rq->len;
	bio.iov = &iov;
	bio.iovcnt = 1;
	bio.private = rq->bio->private;
	iov.iov_base = buf;
	iov.iov_len = rq->len;
	tmp = *rq;
	tmp.bio = tmp.biotail = &bio;
	tmp.nr_bios = 1;
	tmp.nr_iov = 1;
	ret = io_exec_wait(fs->lower, fs->lower_arg, &tmp);
	free(buf);
	return ret;
}

/* Return corrupted data to a read that succeeded. 0 or -ENOMEM. */
static int read_corrupt(struct request *rq, const struct plan *p)
{
	uint8_t *buf = malloc(rq->len);

	if (!buf) {
		log_err("fault: no memory to corrupt a read of %" PRIu64 " bytes", rq->len);
		return -ENOMEM;
	}
	rq_copy(rq, buf, true);
	corrupt_buf(buf, p);
	rq_copy(rq, buf, false);
	free(buf);
	return 0;
}

/* fs->lock held: arm the stall timer for the earliest timeout, if any. */
static void stall_timer_arm(struct fault_set *fs)
{
	uint64_t first = UINT64_MAX;

	for (struct fault_held *h = fs->held; h; h = h->next)
		if (h->until && h->until < first)
			first = h->until;
	if (first != UINT64_MAX && fs->timer)
		timer_arm(fs->timer, &fs->stall_tmr, first);
}

static void stall_timer_fn(struct timer_entry *e, uint64_t now)
{
	struct fault_set *fs = (struct fault_set *)((char *)e - offsetof(struct fault_set, stall_tmr));
	struct fault_held *expired = NULL, **tail = &expired, **pp;

	pthread_mutex_lock(&fs->lock);
	for (pp = &fs->held; *pp;) {
		struct fault_held *h = *pp;

		if (!h->until || h->until > now) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		h->next = NULL;
		*tail = h;
		tail = &h->next;
		if (h->timeout_error && !h->result)
			fs->op_errors[h->rq->op]++;
	}
	stall_timer_arm(fs);
	pthread_mutex_unlock(&fs->lock);
	complete_held(expired, true);
}

int fault_exec(void *arg, struct request *rq)
{
	struct fault_set *fs = arg;
	rq_io_done_t done = rq->io_done;
	void *done_arg = rq->io_done_arg;
	struct fault_held *h;
	struct plan *p;
	bool any, held = false;
	int ret;

	if (!__atomic_load_n(&fs->nr, __ATOMIC_RELAXED))
		return fs->lower(fs->lower_arg, rq);
	p = calloc(1, sizeof(*p));
	if (!p) {
		log_err("fault: out of memory deciding a request's faults");
		return -ENOMEM;
	}
	pthread_mutex_lock(&fs->lock);
	any = plan_request(fs, rq, fs_now(fs), p);
	pthread_mutex_unlock(&fs->lock);
	if (!any) {
		free(p);
		return fs->lower(fs->lower_arg, rq);
	}

	if (p->error) {
		ret = p->error; /* no I/O; a stalled request fails when it is released */
	} else if (p->lie && rq->op == BIO_OP_WRITE) {
		ret = 0;
	} else if (p->ncorrupt && rq->op == BIO_OP_WRITE) {
		ret = write_corrupted(fs, rq, p);
	} else {
		ret = io_exec_wait(fs->lower, fs->lower_arg, rq);
		rq->io_done = done;
		rq->io_done_arg = done_arg;
		if (!ret && p->ncorrupt && rq->op == BIO_OP_READ)
			ret = read_corrupt(rq, p);
	}
	if (!p->stall)
		goto out;

	h = calloc(1, sizeof(*h));
	if (!h) {
		log_err("fault %u: out of memory stalling a request: it completes now", p->stall_id);
		goto out;
	}
	h->rq = rq;
	h->result = ret;
	h->timeout_error = p->stall_error;
	h->fault_id = p->stall_id;
	h->until = p->stall_until;
	h->done = done;
	h->done_arg = done_arg;
	pthread_mutex_lock(&fs->lock);
	/* The fault may have gone while the I/O ran; then the request is not held. */
	for (struct fault *f = fs->list; f; f = f->next) {
		if (f->id == h->fault_id) {
			struct fault_held **pp = &fs->held;

			while (*pp)
				pp = &(*pp)->next;
			*pp = h;
			held = true;
			stall_timer_arm(fs);
			break;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	if (!held)
		free(h);
	else
		ret = IO_ASYNC;
out:
	free(p);
	return ret;
}

/* ---- listing and counters ---- */

int fault_list(struct fault_set *fs, fault_line_fn fn, void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&fs->lock);
	for (struct fault *f = fs->list; f; f = f->next) {
		struct sbuf b = { 0 };
		unsigned int nheld = 0;

		for (struct fault_held *h = fs->held; h; h = h->next)
			nheld += h->fault_id == f->id;
		sb_printf(&b, "fault add ");
		spec_format(&b, &f->s);
		sb_printf(&b, " # id=%u source=%s matched=%" PRIu64 " injected=%" PRIu64, f->id,
			  f->origin == FAULT_FROM_CONFIG ? "config" : "control", f->matched,
			  f->injected);
		if (f->s.effect == FAULT_STALL)
			sb_printf(&b, " held=%u", nheld);
		if (b.oom) {
			free(b.p);
			ret = -ENOMEM;
			break;
		}
		fn(arg, b.p);
		free(b.p);
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

void fault_stats(struct fault_set *fs, struct fault_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&fs->lock);
	memcpy(st->errors, fs->op_errors, sizeof(st->errors));
	memcpy(st->delays, fs->op_delays, sizeof(st->delays));
	memcpy(st->stalls, fs->op_stalls, sizeof(st->stalls));
	memcpy(st->lies, fs->op_lies, sizeof(st->lies));
	memcpy(st->corrupts, fs->op_corrupts, sizeof(st->corrupts));
	for (struct fault_held *h = fs->held; h; h = h->next)
		st->held++;
	for (struct fault *f = fs->list; f && st->nr < STATS_MAX_FAULTS; f = f->next) {
		st->f[st->nr].id = f->id;
		st->f[st->nr].matched = f->matched;
		st->f[st->nr].injected = f->injected;
		st->nr++;
	}
	pthread_mutex_unlock(&fs->lock);
}

void fault_stats_reset(struct fault_set *fs)
{
	pthread_mutex_lock(&fs->lock);
	memset(fs->op_errors, 0, sizeof(fs->op_errors));
	memset(fs->op_delays, 0, sizeof(fs->op_delays));
	memset(fs->op_stalls, 0, sizeof(fs->op_stalls));
	memset(fs->op_lies, 0, sizeof(fs->op_lies));
	memset(fs->op_corrupts, 0, sizeof(fs->op_corrupts));
	for (struct fault *f = fs->list; f; f = f->next)
		f->matched = f->injected = 0;
	pthread_mutex_unlock(&fs->lock);
}
