// SPDX-License-Identifier: MIT
/* What injected faults do to a request: matching, triggers, the latency added at admission,
 * and the effects of the I/O stage (errors, lies, corruption, stalls, dm-dust bad blocks).
 * The set that holds the faults is core/fault/fault.c.
 *
 * Where each effect acts. A latency fault adds to the service latency at admission
 * (fault_latency_ns() from ctrl_admit_locked()): the command holds its slot for longer, so a slow
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
 * Locking: fs->lock (core/fault/fault.h), held while deciding, never across the I/O. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/barrier.h"
#include "core/fault/fault_int.h"
#include "core/util/full_rw.h"
#include "core/util/log.h"
#include "core/util/prng.h"
#include "core/util/lock.h"

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
static bool fault_fires_locked(struct fault *f, uint64_t now)
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
	if (f->s.prob > 0 && prng_double(f->rng) >= f->s.prob)
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
		ns = (double)s->lat_a_ns + prng_double(f->rng) * (double)(s->lat_b_ns - s->lat_a_ns);
		break;
	case FAULT_DIST_EXP:
		ns = -log1p(-prng_double(f->rng)) * (double)s->lat_a_ns;
		break;
	case FAULT_DIST_PARETO:
		ns = (double)s->lat_a_ns / pow(1.0 - prng_double(f->rng), 1.0 / s->shape);
		break;
	}
	if (s->dist != FAULT_DIST_FIXED && ns > (double)s->lat_max_ns)
		ns = (double)s->lat_max_ns;
	v = (uint64_t)ns;
	if (s->spike_ns && prng_double(f->rng) < s->spike_prob)
		v += s->spike_ns;
	return v;
}

uint64_t fault_latency_ns(struct fault_set *fs, const struct request *rq)
{
	uint64_t extra = 0, now;

	if (!READ_ONCE(fs->nr))
		return 0;
	now = fs_now(fs);
	lock_take(&fs->lock);
	for (struct fault *f = fs->list; f; f = f->next) {
		if (f->s.effect != FAULT_LATENCY || !fault_matches(f, rq) || !fault_fires_locked(f, now))
			continue;
		extra += draw_latency(f);
	}
	if (extra)
		fs->op_delays[rq->op]++;
	lock_drop(&fs->lock);
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
static bool dust_hit_locked(struct fault *f, const struct request *rq)
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
static bool plan_request_locked(struct fault_set *fs, struct request *rq, uint64_t now, struct plan *p)
{
	bool any = false;

	lock_assert_held(&fs->lock);

	for (struct fault *f = fs->list; f; f = f->next) {
		const struct fault_spec *s = &f->s;

		if (s->effect == FAULT_LATENCY)
			continue;
		if (s->effect == FAULT_DUST) {
			if (dust_hit_locked(f, rq) && !p->error) {
				p->error = -s->error;
				any = true;
			}
			continue;
		}
		if (!fault_matches(f, rq) || !fault_fires_locked(f, now))
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
			c->seed = prng_next(f->rng);
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
			uint64_t bit = c->lo * 8 + prng_splitmix64(&seed) % nbits;

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
	rq_copy(rq, 0, buf, rq->len, false);
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
	rq_copy(rq, 0, buf, rq->len, false);
	corrupt_buf(buf, p);
	rq_copy(rq, 0, buf, rq->len, true);
	free(buf);
	return 0;
}

/* fs->lock held: arm the stall timer for the earliest timeout, if any. */
static void stall_timer_arm_locked(struct fault_set *fs)
{
	uint64_t first = UINT64_MAX;

	lock_assert_held(&fs->lock);

	for (struct fault_held *h = fs->held; h; h = h->next)
		if (h->until && h->until < first)
			first = h->until;
	if (first != UINT64_MAX && fs->timer)
		timer_arm(fs->timer, &fs->stall_tmr, first);
}

void fault_stall_timer_fn(struct timer_entry *e, uint64_t now)
{
	struct fault_set *fs = (struct fault_set *)((char *)e - offsetof(struct fault_set, stall_tmr));
	struct fault_held *expired = NULL, **tail = &expired, **pp;

	lock_take(&fs->lock);
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
	stall_timer_arm_locked(fs);
	lock_drop(&fs->lock);
	fault_complete_held(expired, true);
}

int fault_exec(void *arg, struct request *rq)
{
	struct fault_set *fs = arg;
	rq_io_done_t done = rq->io_done;
	void *done_arg = rq->io_done_arg;
	struct fault_held *h;
	struct plan *p;
	bool any, held = false;
	uint64_t gen;
	int ret;

	if (!READ_ONCE(fs->nr))
		return fs->lower(fs->lower_arg, rq);
	p = calloc(1, sizeof(*p));
	if (!p) {
		log_err("fault: out of memory deciding a request's faults");
		return -ENOMEM;
	}
	lock_take(&fs->lock);
	any = plan_request_locked(fs, rq, fs_now(fs), p);
	lock_drop(&fs->lock);
	if (!any) {
		free(p);
		return fs->lower(fs->lower_arg, rq);
	}
	/* Before the I/O: a cut after it, fired anywhere in the chain, fails a stalled
	 * request. */
	gen = fs->power_gen ? fs->power_gen(fs->power_gen_arg) : 0;

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
	h->fs = fs;
	h->gen = gen;
	h->result = ret;
	h->timeout_error = p->stall_error;
	h->fault_id = p->stall_id;
	h->until = p->stall_until;
	h->done = done;
	h->done_arg = done_arg;
	lock_take(&fs->lock);
	/* The fault may have gone while the I/O ran; then the request is not held. */
	for (struct fault *f = fs->list; f; f = f->next) {
		if (f->id == h->fault_id) {
			struct fault_held **pp = &fs->held;

			while (*pp)
				pp = &(*pp)->next;
			*pp = h;
			held = true;
			stall_timer_arm_locked(fs);
			break;
		}
	}
	lock_drop(&fs->lock);
	if (!held)
		free(h);
	else
		ret = IO_ASYNC;
out:
	free(p);
	return ret;
}
