/* SPDX-License-Identifier: MIT */
/* The reference model's memory image, the stage below the chain, and the block contents that
 * name the operation that wrote them. */
#include "tests/unit/model/model.h"

/* ---- the memory image ------------------------------------------------------------------- */

int mem_exec(void *arg, struct request *rq)
{
	struct mem *m = arg;
	uint64_t pos = rq->offset;

	if (rq->op != BIO_OP_FLUSH && rq_end(rq) > DISK)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
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
	default:
		break;
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

void snapshot_image(struct run *r, uint8_t *out)
{
	pthread_mutex_lock(&r->mem.lock);
	memcpy(out, r->mem.img, DISK);
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
