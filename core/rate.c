// SPDX-License-Identifier: MIT
/* Token buckets with debt (see rate.h for the model). */
#include "core/clock.h"
#include "core/rate.h"

static void bucket_setup(struct rate_bucket *b, uint64_t rate, uint32_t burst_ms, int64_t now)
{
	b->rate = rate;
	b->burst_ns = (uint64_t)burst_ms * NSEC_PER_MSEC;
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
static void bucket_change(struct rate_bucket *b, uint64_t rate, uint32_t burst_ms, int64_t now)
{
	int64_t level;
	uint64_t burst_ns = (uint64_t)burst_ms * NSEC_PER_MSEC;

	if (!b->rate || !rate) {
		bucket_setup(b, rate, burst_ms, now);
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

static void rate_apply(struct rate *r, const struct ctrl_params *p, int64_t now, bool init)
{
	const uint64_t bw[RATE_NR_DIRS] = { p->bandwidth, p->read_bandwidth, p->write_bandwidth };
	const uint64_t io[RATE_NR_DIRS] = { p->iops, p->read_iops, p->write_iops };

	for (int d = 0; d < RATE_NR_DIRS; d++) {
		if (init) {
			bucket_setup(&r->bw[d], bw[d], p->burst_ms, now);
			bucket_setup(&r->iops[d], io[d], p->burst_ms, now);
		} else {
			bucket_change(&r->bw[d], bw[d], p->burst_ms, now);
			bucket_change(&r->iops[d], io[d], p->burst_ms, now);
		}
	}
}

void rate_init(struct rate *r, const struct ctrl_params *p, int64_t now)
{
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

void rate_charge(struct rate *r, enum bio_op op, uint64_t bytes, int64_t now)
{
	int d = op_dir(op);

	bucket_charge(&r->iops[RATE_ALL], 1, now);
	bucket_charge(&r->iops[d], 1, now);
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
	return false;
}
