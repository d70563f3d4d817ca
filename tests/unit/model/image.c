/* SPDX-License-Identifier: MIT */
/* The reference model's memory image, the stage below the chain: what has landed, what a flush
 * made durable, and holds that keep a request before it lands; and the block contents that
 * name the operation that wrote them. */
#include "tests/unit/model/model.h"

/* ---- the memory image ------------------------------------------------------------------- */

/* Does hold @g catch @rq? A flush has no range: only a hold without one catches it. */
static bool gate_matches(const struct mem_gate *g, const struct request *rq)
{
	uint64_t lo = (uint64_t)g->blk * BLK, hi = lo + (uint64_t)g->nblk * BLK;

	if (!g->id || !(g->ops & (1u << rq->op)))
		return false;
	if (!g->nblk)
		return true;
	return rq->op != BIO_OP_FLUSH && rq->offset < hi && lo < rq_end(rq);
}

/* Do @rq to the image. m->lock held. */
static void mem_do(struct mem *m, struct request *rq)
{
	uint64_t pos = rq->offset;

	switch (rq->op) {
	case BIO_OP_READ:
	case BIO_OP_WRITE:
		for (struct bio *b = rq->bio; b; b = b->next)
			for (int i = 0; i < b->iovcnt; i++) {
				if (rq->op == BIO_OP_READ)
					memcpy(b->iov[i].iov_base, m->img + pos, b->iov[i].iov_len);
				else
					memcpy(m->img + pos, b->iov[i].iov_base, b->iov[i].iov_len);
				pos += b->iov[i].iov_len;
			}
		break;
	case BIO_OP_DISCARD:
		memset(m->img + rq->offset, 0, rq->len);
		break;
	case BIO_OP_FLUSH:
		memcpy(m->dur, m->img, DISK);
		break;
	default:
		break;
	}
}

int mem_exec(void *arg, struct request *rq)
{
	struct mem *m = arg;
	struct mem_held h = { .rq = rq };

	if (rq->op != BIO_OP_FLUSH && rq_end(rq) > DISK)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < MEM_GATES && !h.gate; i++)
		if (gate_matches(&m->gate[i], rq) && ++m->gate[i].matched % m->gate[i].every == 0)
			h.gate = m->gate[i].id;
	if (h.gate) {
		/* Held before it lands: a disk still busy with the request. */
		h.next = m->held;
		m->held = &h;
		while (!h.go)
			pthread_cond_wait(&m->cond, &m->lock);
	}
	mem_do(m, rq);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int mem_image_exec(void *arg, struct request *rq)
{
	struct mem *m = arg;

	if (rq->op != BIO_OP_FLUSH && rq_end(rq) > DISK)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	mem_do(m, rq);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int mem_gate_add(struct mem *m, int id, unsigned int ops, uint32_t blk, uint32_t nblk,
		 uint32_t every)
{
	int ret = -ENOSPC;

	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < MEM_GATES; i++)
		if (!m->gate[i].id) {
			m->gate[i] = (struct mem_gate){ id, ops, blk, nblk, every ? every : 1, 0 };
			ret = 0;
			break;
		}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

/* Let what hold @id (0: every hold) caught land; with @del, remove the hold too. */
static void gate_open(struct mem *m, int id, bool del)
{
	pthread_mutex_lock(&m->lock);
	for (struct mem_held **pp = &m->held; *pp;) {
		struct mem_held *h = *pp;

		if (id && h->gate != id) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		h->go = true;
	}
	for (int i = 0; i < MEM_GATES && del; i++)
		if (!id || m->gate[i].id == id)
			m->gate[i].id = 0;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

void mem_gate_release(struct mem *m, int id)
{
	gate_open(m, id, false);
}

void mem_gate_del(struct mem *m, int id)
{
	gate_open(m, id, true);
}

void mem_apply_held(struct mem *m, uint8_t *img)
{
	pthread_mutex_lock(&m->lock);
	for (struct mem_held *h = m->held; h; h = h->next) {
		uint64_t pos = h->rq->offset;

		if (h->rq->op != BIO_OP_WRITE)
			continue;
		for (struct bio *b = h->rq->bio; b; b = b->next)
			for (int i = 0; i < b->iovcnt; i++) {
				memcpy(img + pos, b->iov[i].iov_base, b->iov[i].iov_len);
				pos += b->iov[i].iov_len;
			}
	}
	pthread_mutex_unlock(&m->lock);
}

void snapshot_image(struct run *r, uint8_t *out)
{
	pthread_mutex_lock(&r->mem.lock);
	memcpy(out, r->mem.img, DISK);
	pthread_mutex_unlock(&r->mem.lock);
}

void snapshot_durable(struct run *r, uint8_t *out)
{
	pthread_mutex_lock(&r->mem.lock);
	memcpy(out, r->mem.dur, DISK);
	pthread_mutex_unlock(&r->mem.lock);
}

/* ---- block contents: a value number and the block's place -------------------------------- */

void fill_block(uint8_t *p, uint32_t val, uint32_t blk)
{
	uint64_t s = ((uint64_t)val << 32) | blk, w[BLK / 8];

	if (!val) {
		memset(p, 0, BLK);
		return;
	}
	w[0] = ((uint64_t)val << 32) | blk;
	for (unsigned int i = 1; i < BLK / 8; i++)
		w[i] = prng_splitmix64(&s);
	memcpy(p, w, BLK);
}

int64_t decode_block(const uint8_t *p, uint32_t blk)
{
	uint8_t want[BLK];
	uint64_t w0;
	uint32_t val;

	memcpy(&w0, p, 8);
	val = (uint32_t)(w0 >> 32);
	if (val >= MAXV || (uint32_t)w0 != (val ? blk : 0))
		return -1;
	fill_block(want, val, blk);
	return memcmp(p, want, BLK) ? -1 : (int64_t)val;
}
