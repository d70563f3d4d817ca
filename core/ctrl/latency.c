// SPDX-License-Identifier: MIT
/* Latency models of the controller (see latency.h). */
#include <math.h>
#include <string.h>

#include "core/util/clock.h"
#include "core/ctrl/latency.h"
#include "core/util/prng.h"

const char *const lat_dist_name[LAT_DIST_NR + 1] = {
	"constant", "uniform", "normal", "lognormal", "pareto", NULL,
};
const char *const lat_tail_name[LAT_TAIL_NR + 1] = { "p99", "p99.9", NULL };
const char *const ctrl_reorder_name[3] = { "fifo", "sptf", NULL };

static void rng_seed(struct latency *l, uint64_t seed)
{
	l->seed = seed;
	prng_seed(l->rng, seed);
}

/* --- distributions ---------------------------------------------------------------------- */

/* The standard normal's quantile at 0.99 and 0.999. */
#define Z_P99 2.3263478740408408
#define Z_P999 3.0902323061678132

double lat_dist_value(enum lat_dist d, double median, double tail, double q, double u1,
		      double u2)
{
	double z = q >= 0.999 ? Z_P999 : Z_P99, v;

	if (tail <= median || median <= 0)
		d = LAT_DIST_CONSTANT;
	switch (d) {
	case LAT_DIST_UNIFORM: {
		/* [m - w, m + w] has its q quantile at m + w (2q - 1) */
		double w = (tail - median) / (2 * q - 1);

		v = median - w + 2 * w * u1;
		break;
	}
	case LAT_DIST_NORMAL:
		/* Box-Muller */
		v = median + (tail - median) / z * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
		break;
	case LAT_DIST_LOGNORMAL:
		v = median * exp(log(tail / median) / z * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
		break;
	case LAT_DIST_PARETO: {
		/* x_m u^(-1/a): median x_m 2^(1/a), quantile q at x_m (1 - q)^(-1/a) */
		double a = log(1 / (2 * (1 - q))) / log(tail / median);

		v = median * pow(2 * u1, -1 / a);
		break;
	}
	case LAT_DIST_CONSTANT:
	default:
		v = median;
		break;
	}
	return v > 0 ? v : 0;
}

/* @op's own value of a per-op key (@rd, @wr, @fl), or the key for every op (@all) when that
 * is 0 or @op has none. */
static uint64_t per_op(enum bio_op op, uint64_t all, uint64_t rd, uint64_t wr, uint64_t fl)
{
	uint64_t v = op == BIO_OP_READ ? rd : op == BIO_OP_WRITE ? wr : op == BIO_OP_FLUSH ? fl : 0;

	return v ? v : all;
}

uint64_t latency_median_ns(const struct ctrl_params *p, enum bio_op op)
{
	return per_op(op, p->latency_us, p->read_latency_us, p->write_latency_us,
		      p->flush_latency_us) * NSEC_PER_USEC;
}

static uint64_t tail_ns(const struct ctrl_params *p, enum bio_op op)
{
	return per_op(op, p->latency_tail_us, p->read_latency_tail_us, p->write_latency_tail_us,
		      p->flush_latency_tail_us) * NSEC_PER_USEC;
}

uint64_t latency_sample_ns(struct latency *l, const struct ctrl_params *p, enum bio_op op)
{
	uint64_t m = latency_median_ns(p, op), t = tail_ns(p, op);
	double q = p->latency_tail == LAT_TAIL_P999 ? 0.999 : 0.99, u1, u2, v;

	if (p->latency_dist == LAT_DIST_CONSTANT || t <= m)
		return m;
	u1 = prng_unit(l->rng);
	u2 = prng_unit(l->rng);
	v = lat_dist_value((enum lat_dist)p->latency_dist, (double)m, (double)t, q, u1, u2);
	/* an hour at most, as the keys */
	if (v > 3600.0 * NSEC_PER_SEC)
		v = 3600.0 * NSEC_PER_SEC;
	return (uint64_t)v;
}

/* --- the seek model ---------------------------------------------------------------------- */

static uint64_t disk_bytes(const struct ctrl_params *p)
{
	return p->disk_size ? p->disk_size : 1;
}

uint64_t latency_seek_ns(const struct ctrl_params *p, uint64_t dist)
{
	uint64_t settle = p->seek_settle_us * NSEC_PER_USEC, full = p->seek_full_us * NSEC_PER_USEC;
	double frac;

	if (!dist)
		return 0;
	if (full < settle)
		full = settle;
	frac = (double)dist / (double)disk_bytes(p);
	if (frac > 1)
		frac = 1;
	return settle + (uint64_t)((double)(full - settle) * sqrt(frac));
}

uint64_t latency_media_rate(const struct ctrl_params *p, uint64_t offset)
{
	uint64_t outer = p->media_rate_outer, inner = p->media_rate_inner, zone;

	if (!inner)
		inner = outer;
	zone = (uint64_t)((unsigned __int128)offset * LAT_ZONES / disk_bytes(p));
	if (zone >= LAT_ZONES)
		zone = LAT_ZONES - 1;
	if (inner >= outer)
		return outer;
	return outer - (outer - inner) * zone / (LAT_ZONES - 1);
}

static uint64_t rotation_period_ns(const struct ctrl_params *p)
{
	return p->rpm ? 60 * NSEC_PER_SEC / p->rpm : 0;
}

uint64_t latency_rotation_ns(const struct ctrl_params *p, uint64_t offset, uint64_t at)
{
	uint64_t period = rotation_period_ns(p), rate = latency_media_rate(p, offset), track;
	double want, head, wait;

	if (!period || !rate)
		return 0;
	/* a track holds what passes under the head in one turn */
	track = (uint64_t)((unsigned __int128)rate * period / NSEC_PER_SEC);
	if (!track)
		return 0;
	want = (double)(offset % track) / (double)track;
	head = (double)(at % period) / (double)period;
	wait = want - head;
	if (wait < 0)
		wait += 1;
	return (uint64_t)(wait * (double)period);
}

static bool seek_model_on(const struct ctrl_params *p)
{
	return p->rpm && p->media_rate_outer;
}

bool latency_needs_head(const struct ctrl_params *p, enum bio_op op)
{
	return seek_model_on(p) && (op == BIO_OP_READ || op == BIO_OP_WRITE);
}

/* Seek and rotational wait from where the head is to @offset, the head leaving at @at. */
static uint64_t position_ns(const struct latency *l, const struct ctrl_params *p,
			    uint64_t offset, uint64_t at)
{
	uint64_t dist = offset > l->head_pos ? offset - l->head_pos : l->head_pos - offset, seek;

	if (!dist)
		return 0; /* the next sector: under the head already */
	seek = latency_seek_ns(p, dist);
	return seek + latency_rotation_ns(p, offset, at + seek);
}

uint64_t latency_position_ns(const struct latency *l, const struct ctrl_params *p,
			     uint64_t offset, uint64_t now)
{
	if (!seek_model_on(p))
		return 0;
	return position_ns(l, p, offset, now > l->head_free_ns ? now : l->head_free_ns);
}

/* --- the write cliff --------------------------------------------------------------------- */

static uint64_t cache_drained(const struct latency *l, const struct ctrl_params *p, uint64_t now)
{
	uint64_t cap = p->write_cliff_bytes, window = p->write_cliff_window_ms * NSEC_PER_MSEC;
	uint64_t drained;

	if (now <= l->cache_at_ns)
		return l->cache_bytes;
	/* the cache drains cap bytes per window */
	drained = window ? (uint64_t)((unsigned __int128)(now - l->cache_at_ns) * cap / window) : cap;
	return l->cache_bytes > drained ? l->cache_bytes - drained : 0;
}

uint64_t latency_cache_bytes(const struct latency *l, const struct ctrl_params *p, uint64_t now)
{
	return p->write_cliff_bytes ? cache_drained(l, p, now) : 0;
}

/* Charge a write of @len starting at @start to the fast cache; return when the part that
 * did not fit is through the slow path (@start if it all fit). */
static uint64_t cliff_write(struct latency *l, const struct ctrl_params *p, uint64_t len,
			    uint64_t start)
{
	uint64_t cap = p->write_cliff_bytes, excess, done;

	if (start > l->cache_at_ns) {
		l->cache_bytes = cache_drained(l, p, start);
		l->cache_at_ns = start;
	}
	if (l->cache_bytes + len <= cap) {
		l->cache_bytes += len;
		return start;
	}
	excess = l->cache_bytes + len - cap;
	l->cache_bytes = cap;
	l->cliff_bytes += excess;
	if (!p->write_cliff_bandwidth)
		return start;
	done = start > l->slow_free_ns ? start : l->slow_free_ns;
	done += (uint64_t)((unsigned __int128)excess * NSEC_PER_SEC / p->write_cliff_bandwidth);
	l->slow_free_ns = done;
	return done;
}

/* --- the whole ------------------------------------------------------------------------- */

bool latency_is_on(const struct ctrl_params *p)
{
	return p->latency_us || p->read_latency_us || p->write_latency_us ||
	       p->flush_latency_us || seek_model_on(p) || p->write_cliff_bytes;
}

uint64_t latency_complete_ns(struct latency *l, const struct ctrl_params *p, enum bio_op op,
			     uint64_t offset, uint64_t len, uint64_t start)
{
	uint64_t end = start + latency_sample_ns(l, p, op);

	if (latency_needs_head(p, op)) {
		uint64_t at = end > l->head_free_ns ? end : l->head_free_ns;
		uint64_t rate = latency_media_rate(p, offset);

		at += position_ns(l, p, offset, at);
		at += (uint64_t)((unsigned __int128)len * NSEC_PER_SEC / rate);
		l->head_pos = offset + len;
		l->head_free_ns = at;
		end = at;
	}
	if (op == BIO_OP_WRITE && p->write_cliff_bytes) {
		uint64_t slow = cliff_write(l, p, len, start);

		if (slow > end)
			end = slow;
	}
	return end;
}

void latency_init(struct latency *l, const struct ctrl_params *p, uint64_t now)
{
	memset(l, 0, sizeof(*l));
	rng_seed(l, p->latency_seed);
	l->cache_at_ns = now;
}

void latency_reconfigure(struct latency *l, const struct ctrl_params *p)
{
	if (p->latency_seed != l->seed)
		rng_seed(l, p->latency_seed);
	if (l->cache_bytes > p->write_cliff_bytes)
		l->cache_bytes = p->write_cliff_bytes;
}
