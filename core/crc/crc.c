// SPDX-License-Identifier: MIT
/* The crc stage (see crc.h): checksums per block in a side file, checked on every read. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/crc/crc.h"
#include "core/stage/chain.h"
#include "core/util/full_rw.h"
#include "core/util/log.h"
#include "core/util/stats_table.h"

#define CRC_KNOWN (1ull << 32)

struct crc {
	const struct stage *below;	/* read-only after init */
	struct stage below_copy;
	int fd;				/* the side file */
	uint32_t block;			/* bytes per checksum */
	atomic_uint_fast64_t mismatches;	/* reads refused */
	atomic_uint_fast64_t checked;		/* blocks checked by reads */
};

static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t crc32_update(uint32_t crc, const void *p, uint64_t len)
{
	const uint8_t *b = p;

	pthread_once(&crc_table_once, crc_table_init);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* Read or write the entries of blocks [@first, @first + @n) at @e. 0 or -errno (logged). */
static int entries_rw(struct crc *c, bool write, uint64_t *e, uint64_t first, uint64_t n)
{
	struct iovec iov = { .iov_base = e, .iov_len = n * sizeof(*e) };
	const char *call;
	int ret;

	if (!write)
		memset(e, 0, n * sizeof(*e)); /* past the side file's end: unknown */
	ret = full_rw(c->fd, write, &iov, 1, first * sizeof(*e), &call);
	if (ret == -EIO && !write)
		ret = 0; /* a short side file: the rest is unknown */
	if (ret)
		log_err("crc: %s: %s", call, strerror(-ret));
	return ret;
}

static int check(const struct chain_params *p, char *err, size_t errlen)
{
	if (!p->crc || !p->crc->file || !p->crc->file[0]) {
		snprintf(err, errlen, "the crc stage needs crc.file");
		return -EINVAL;
	}
	return 0;
}

static int init(void **self, const struct chain_params *p, const struct stage *below,
		const struct stage *image, char *err, size_t errlen)
{
	struct crc *c = calloc(1, sizeof(*c));
	int e;

	(void)image;
	if (!c)
		return -ENOMEM;
	c->fd = open(p->crc->file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (c->fd < 0) {
		e = errno;
		log_err("crc: open %s: %s", p->crc->file, strerror(e));
		snprintf(err, errlen, "crc.file %s: %s", p->crc->file, strerror(e));
		free(c);
		return -e;
	}
	c->below_copy = *below;
	c->below = &c->below_copy;
	c->block = p->crc->block_size ? p->crc->block_size : CRC_DEFAULT_BLOCK_SIZE;
	*self = c;
	return 0;
}

/* The whole blocks of [@off, @off + @len): [*@first, *@first + *@n). */
static void whole_blocks(const struct crc *c, uint64_t off, uint64_t len, uint64_t *first,
			 uint64_t *n)
{
	uint64_t a = (off + c->block - 1) / c->block, b = (off + len) / c->block;

	*first = a;
	*n = b > a ? b - a : 0;
}

/* Run @rq below and wait for it: the caller's io_done is kept for the caller. */
static int below_exec(struct crc *c, struct request *rq)
{
	rq_io_done_t done = rq->io_done;
	void *arg = rq->io_done_arg;
	int ret = io_exec_wait(c->below->ops->exec, c->below->self, rq);

	rq->io_done = done;
	rq->io_done_arg = arg;
	return ret;
}

/* The entries of every block [off, off + len) touches: those of whole blocks from @data
 * (NULL: unknown), the partial ones unknown. */
static int record(struct crc *c, const struct request *rq, const uint8_t *data)
{
	uint64_t lo = rq->offset / c->block, hi = (rq_end(rq) + c->block - 1) / c->block;
	uint64_t n = hi - lo, *e = calloc(n ? n : 1, sizeof(*e));
	int ret;

	if (!e)
		return -ENOMEM;
	for (uint64_t i = 0; data && i < n; i++) {
		uint64_t b = (lo + i) * c->block;

		if (b >= rq->offset && b + c->block <= rq_end(rq))
			e[i] = CRC_KNOWN | crc32_update(0, data + (b - rq->offset), c->block);
	}
	ret = entries_rw(c, true, e, lo, n);
	free(e);
	return ret;
}

static int crc_write(struct crc *c, struct request *rq)
{
	uint8_t *data = malloc(rq->len ? rq->len : 1);
	int ret;

	if (!data)
		return -ENOMEM;
	rq_copy(rq, 0, data, rq->len, false);
	/* Unknown while the write is on its way: a read meanwhile is not refused. */
	ret = record(c, rq, NULL);
	if (!ret)
		ret = below_exec(c, rq);
	if (!ret)
		ret = record(c, rq, data);
	free(data);
	return ret;
}

static int crc_read(struct crc *c, struct request *rq)
{
	uint64_t first, n, *e = NULL;
	uint8_t *data = NULL;
	int ret = below_exec(c, rq);

	if (ret)
		return ret;
	whole_blocks(c, rq->offset, rq->len, &first, &n);
	if (!n)
		return 0;
	e = malloc(n * sizeof(*e));
	data = malloc(rq->len);
	if (!e || !data) {
		ret = -ENOMEM;
		goto out;
	}
	ret = entries_rw(c, false, e, first, n);
	if (ret)
		goto out;
	rq_copy(rq, 0, data, rq->len, false);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t b = (first + i) * c->block;
		uint32_t got;

		if (!(e[i] & CRC_KNOWN))
			continue;
		atomic_fetch_add(&c->checked, 1);
		got = crc32_update(0, data + (b - rq->offset), c->block);
		if (got != (uint32_t)e[i]) {
			atomic_fetch_add(&c->mismatches, 1);
			log_err("crc: block at %" PRIu64 " reads with checksum %08x, %08x was written",
				b, got, (uint32_t)e[i]);
			ret = -EIO;
			break;
		}
	}
out:
	free(e);
	free(data);
	return ret;
}

static int exec(void *self, struct request *rq)
{
	struct crc *c = self;
	int ret;

	switch (rq->op) {
	case BIO_OP_READ:
		return crc_read(c, rq);
	case BIO_OP_WRITE:
		return crc_write(c, rq);
	case BIO_OP_DISCARD:
		ret = record(c, rq, NULL);
		return ret ? ret : below_exec(c, rq);
	case BIO_OP_FLUSH:
		ret = below_exec(c, rq);
		if (!ret && fdatasync(c->fd))
			ret = -errno;
		return ret;
	default:
		return -EINVAL;
	}
}

static int writeout(void *self)
{
	struct crc *c = self;

	return fdatasync(c->fd) ? -errno : 0;
}

/* What the stats names read: the counters, copied out. */
struct crc_stats {
	uint64_t checked, mismatches;
};

#define F(member) STATS_FIELD(struct crc_stats, member)

static const struct stats_name crc_names[] = {
	{ "crc_checked_blocks", STATS_COUNTER, "blocks",
	  "blocks whose checksum reads checked",
	  "blocks whose checksum reads of `disk` checked against the side file (`crc.file`)",
	  .section = "crc", F(checked) },
	{ "crc_mismatches", STATS_COUNTER, "reads",
	  "reads refused with EIO: a block's data did not match its checksum",
	  "reads refused with `EIO` because a block's data did not match its checksum: data changed below the stage (silent corruption)",
	  F(mismatches) },
};

static const struct stats_table crc_stats_table = {
	.producer = "crc",
	.names = crc_names,
	.nr = STATS_TABLE_SIZE(crc_names),
};

static size_t stats(void *self, char *buf, size_t len)
{
	struct crc *c = self;
	struct crc_stats st = {
		.checked = (uint64_t)atomic_load(&c->checked),
		.mismatches = (uint64_t)atomic_load(&c->mismatches),
	};

	return stats_table_format(&crc_stats_table, &st, buf, len);
}

static void stats_reset(void *self)
{
	struct crc *c = self;

	atomic_store(&c->checked, 0);
	atomic_store(&c->mismatches, 0);
}

static void destroy(void *self)
{
	struct crc *c = self;

	close(c->fd);
	free(c);
}

const struct stage_ops crc_stage_ops = {
	.name = "crc",
	.check = check,
	.init = init,
	.exec = exec,
	.writeout = writeout,
	.stats = stats,
	.stats_table = &crc_stats_table,
	.stats_reset = stats_reset,
	.destroy = destroy,
};
