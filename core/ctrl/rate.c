// SPDX-License-Identifier: MIT
/* Token buckets with debt (see rate.h for the model). */
#include <string.h>

#include "core/util/clock.h"
#include "core/ctrl/rate.h"

static void bucket_setup(struct rate_bucket *b, uint64_t rate, uint64_t burst_ns, int64_t now)
{
	b->rate = rate;
	b->burst_ns = burst_ns;
	b->tat = now - (int64_t)b->burst_ns;
	b->rem = 0;
}

int64_t rate_bucket_level(const struct rate_bucket *b, int64_t now)
{
	int64_t dt;
	__int128 units;

	if (!b->rate)
		return 0;
	dt = now - b->tat;
	if (dt > (int64_t)b->burst_ns)
		dt = (int64_t)b->burst_ns;
	units = (__int128)dt * b->rate / (__int128)NSEC_PER_SEC;
	return (int64_t)units;
}

/* Re-express the bucket's level at the new rate: the units already owed or saved stay. */
static void bucket_change(struct rate_bucket *b, uint64_t rate, uint64_t burst_ns, int64_t now)
{
	int64_t level;

	if (!b->rate || !rate) {
		bucket_setup(b, rate, burst_ns, now);
		return;
	}
	if (b->rate == rate && b->burst_ns == burst_ns)
		return;
	level = rate_bucket_level(b, now);
	b->rate = rate;
	b->burst_ns = burst_ns;
	b->tat = now - (int64_t)((__int128)level * NSEC_PER_SEC / (__int128)rate);
	if (now - b->tat > (int64_t)burst_ns)
		b->tat = now - (int64_t)burst_ns;
	b->rem = 0;
}

uint64_t rate_credit_baseline(const struct ctrl_params *p)
{
	uint64_t gib = p->disk_size >> 30, base = p->credit_baseline_iops;

	if (p->credit_iops_per_gib && gib > base / p->credit_iops_per_gib)
		base = gib * p->credit_iops_per_gib; /* no overflow: gib < 2^34, per_gib < 2^24 */
	return base ? base : 1;
}

static void rate_apply(struct rate *r, const struct ctrl_params *p, int64_t now, bool init)
{
	const uint64_t bw[RATE_NR_DIRS] = { p->bandwidth, p->read_bandwidth, p->write_bandwidth };
	uint64_t io[RATE_NR_DIRS] = { p->iops, p->read_iops, p->write_iops };
	uint64_t burst_ns = (uint64_t)p->burst_ms * NSEC_PER_MSEC;
	uint64_t base = 0, credit_ns = 0, capacity = p->credit_capacity;

	if (capacity) {
		base = rate_credit_baseline(p);
		if (p->iops && base >= p->iops) {
			/* Credits only matter below the burst rate. */
			io[RATE_ALL] = base;
			capacity = 0;
			base = 0;
		} else {
			/* conf caps the capacity at 1e9 credits: at 1 I/O/s, 1e18 ns fits */
			credit_ns = (uint64_t)((unsigned __int128)capacity * NSEC_PER_SEC / base);
		}
	}
	for (int d = 0; d < RATE_NR_DIRS; d++) {
		if (init) {
			bucket_setup(&r->bw[d], bw[d], burst_ns, now);
			bucket_setup(&r->iops[d], io[d], burst_ns, now);
		} else {
			bucket_change(&r->bw[d], bw[d], burst_ns, now);
			bucket_change(&r->iops[d], io[d], burst_ns, now);
		}
	}
	/* A new credit bucket starts full, as a new volume does; a changed one keeps its
	 * balance (up to the new capacity). */
	if (init) {
		bucket_setup(&r->credit.b, base, credit_ns, now);
		r->credit.win_start = now;
	} else {
		bucket_change(&r->credit.b, base, credit_ns, now);
	}
	r->credit.capacity = capacity;
	r->iops_size = p->iops_size;
}

void rate_init(struct rate *r, const struct ctrl_params *p, int64_t now)
{
	memset(r, 0, sizeof(*r));
	rate_apply(r, p, now, true);
}

void rate_reconfigure(struct rate *r, const struct ctrl_params *p, int64_t now)
{
	rate_apply(r, p, now, false);
}

/* Which direction's buckets cover @op besides the total ones. Flush and discard are
 * writes to the device, as the block layer's throttling counts them. */
static int op_dir(enum bio_op op)
{
	return op == BIO_OP_READ ? RATE_READ : RATE_WRITE;
}

static bool bucket_ready(const struct rate_bucket *b, int64_t now, int64_t *ready_at)
{
	if (!b->rate || b->tat <= now)
		return true;
	if (b->tat > *ready_at)
		*ready_at = b->tat;
	return false;
}

bool rate_has_budget(const struct rate *r, enum bio_op op, int64_t now, int64_t *ready_at)
{
	int d = op_dir(op);
	bool ok = true;

	*ready_at = now;
	ok &= bucket_ready(&r->iops[RATE_ALL], now, ready_at);
	ok &= bucket_ready(&r->iops[d], now, ready_at);
	ok &= bucket_ready(&r->credit.b, now, ready_at);
	if (op == BIO_OP_READ || op == BIO_OP_WRITE) {
		ok &= bucket_ready(&r->bw[RATE_ALL], now, ready_at);
		ok &= bucket_ready(&r->bw[d], now, ready_at);
	}
	return ok;
}

static void bucket_charge(struct rate_bucket *b, uint64_t units, int64_t now)
{
	unsigned __int128 num;
	uint64_t cost;

	if (!b->rate)
		return;
	/* Budget saved while idle is capped at the burst. */
	if (now - b->tat > (int64_t)b->burst_ns) {
		b->tat = now - (int64_t)b->burst_ns;
		b->rem = 0;
	}
	num = (unsigned __int128)units * NSEC_PER_SEC + b->rem;
	cost = (uint64_t)(num / b->rate);
	b->rem = (uint64_t)(num % b->rate);
	b->tat += (int64_t)cost;
}

uint64_t rate_ios(uint32_t iops_size, enum bio_op op, uint64_t bytes)
{
	if (!iops_size || (op != BIO_OP_READ && op != BIO_OP_WRITE) || bytes <= iops_size)
		return 1;
	return bytes / iops_size + (bytes % iops_size != 0);
}

/* The spend rate is measured over windows of a second. */
static void credit_spend(struct rate_credit *c, uint64_t ios, int64_t now)
{
	int64_t dt = now - c->win_start;

	if (dt >= (int64_t)NSEC_PER_SEC) {
		c->last_rate = (uint64_t)((unsigned __int128)c->win_spent * NSEC_PER_SEC / (uint64_t)dt);
		c->win_start = now;
		c->win_spent = 0;
	}
	c->win_spent += ios;
	c->spent += ios;
}

uint64_t rate_credit_spend_rate(const struct rate *r, int64_t now)
{
	const struct rate_credit *c = &r->credit;
	int64_t dt = now - c->win_start;

	if (!c->capacity)
		return 0;
	if (dt >= (int64_t)NSEC_PER_SEC)
		return (uint64_t)((unsigned __int128)c->win_spent * NSEC_PER_SEC / (uint64_t)dt);
	return c->last_rate;
}

uint64_t rate_credit_earn_rate(const struct rate *r, int64_t now)
{
	const struct rate_bucket *b = &r->credit.b;

	if (!r->credit.capacity || now - b->tat >= (int64_t)b->burst_ns)
		return 0;
	return b->rate;
}

void rate_charge(struct rate *r, enum bio_op op, uint64_t bytes, int64_t now)
{
	int d = op_dir(op);
	uint64_t ios = rate_ios(r->iops_size, op, bytes);

	bucket_charge(&r->iops[RATE_ALL], ios, now);
	bucket_charge(&r->iops[d], ios, now);
	if (r->credit.capacity) {
		bucket_charge(&r->credit.b, ios, now);
		credit_spend(&r->credit, ios, now);
	}
	if (op == BIO_OP_READ || op == BIO_OP_WRITE) {
		bucket_charge(&r->bw[RATE_ALL], bytes, now);
		bucket_charge(&r->bw[d], bytes, now);
	}
}

bool rate_is_limited(const struct rate *r)
{
	for (int d = 0; d < RATE_NR_DIRS; d++)
		if (r->bw[d].rate || r->iops[d].rate)
			return true;
	return r->credit.b.rate != 0;
}
