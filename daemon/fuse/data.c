// SPDX-License-Identifier: MIT
/* The disk's data path: FUSE requests on MOUNTPOINT/disk become bios, their completions
 * replies.
 *
 * No request holds a thread while it is queued: a receive thread turns a request into a bio,
 * submits it and goes back to /dev/fuse; the reply is sent by whoever completes the bio (a
 * backend worker, the timer thread, or the receive thread itself when it runs the I/O
 * inline). Only a range operation larger than one bio (a zero range or a punch hole) keeps
 * its receive thread, which submits the range in bounded batches.
 *
 * Memory: the data budget, parked requests and the large buffers are in data_budget.c. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/barrier.h"
#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/data_int.h"
#include "daemon/fuse/disk_open.h"
#include "daemon/fuse/fuse_uring.h"

static struct pd *req_pd(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The daemon is stopping: the disk takes no new request (see pd_shutdown). */
static bool pd_refuse(struct pd *pd, fuse_req_t req)
{
	if (!READ_ONCE(pd->stopping))
		return false;
	fuse_reply_err(req, PD_ESTOPPED);
	return true;
}

/* ---- the receive buffer ---- */

/* The receive thread's buffer, which libfuse fills and reuses for every request it reads. */
static __thread struct fuse_buf *tls_rxbuf;

void pd_data_set_rxbuf(struct fuse_buf *buf)
{
	tls_rxbuf = buf;
}
/* ---- bios ---- */

static void pd_io_free(struct pd_io *io)
{
	if (io->charged)
		pd_data_put(io->pd, io->charged);
	if (io->bigbuf)
		pd_bigbuf_put(io->pd, io->bigbuf);
	free(io);
}

static void pd_fanout_end(struct pd_fanout *f, int error);

/* A FUA write is done: the same bio becomes a flush, which covers the write as it completed
 * before the flush was submitted; the write's reply waits for it. From a completion, which
 * must not wait for queue room (queue_submit_nowait()). */
static void pd_fua_flush(struct pd_io *io)
{
	io->fua = false;
	io->fua_flush = true;
	io->bio.op = BIO_OP_FLUSH;
	io->bio.offset = 0;
	io->bio.len = 0;
	io->bio.iov = NULL;
	io->bio.iovcnt = 0;
	queue_submit_nowait(&io->pd->q, &io->bio);
}

/* Answer a request taken straight from its ring entry (pd_disk_ring_rw()). The pd_io stays
 * in the entry for its next request. */
static void pd_ring_end(struct pd_io *io, int error)
{
	struct fuse_write_out wo = { .size = (uint32_t)io->reply_len };

	if (error)
		pd_uring_answer(io->ring, error, NULL, 0);
	else if (io->bio.op == BIO_OP_READ)
		pd_uring_answer(io->ring, 0, NULL, (uint32_t)io->reply_len);
	else
		pd_uring_answer(io->ring, 0, &wo, sizeof(wo));
}

static void pd_end_io(struct bio *bio, int error)
{
	struct pd_io *io = (struct pd_io *)bio;

	if (io->fua && !error) {
		pd_fua_flush(io);
		return;
	}
	if (io->ring) {
		pd_ring_end(io, error);
		return;
	}
	if (io->fanout)
		pd_fanout_end(io->fanout, error);
	else if (error)
		fuse_reply_err(io->req, -error);
	else if (io->bio.op == BIO_OP_READ)
		fuse_reply_buf(io->req, io->iov.iov_base, io->reply_len);
	else if (io->bio.op == BIO_OP_WRITE || io->fua_flush)
		fuse_reply_write(io->req, io->reply_len);
	else
		fuse_reply_err(io->req, 0);
	pd_io_free(io);
}

static void pd_io_set_data(struct pd_io *io, void *buf, size_t len)
{
	io->iov.iov_base = buf;
	io->iov.iov_len = len;
	io->bio.iov = &io->iov;
	io->bio.iovcnt = 1;
}

/* Make @io a bio of @op on [@off, @off + @len), answered to @req. */
static void pd_io_init(struct pd_io *io, struct pd *pd, fuse_req_t req, enum bio_op op,
		       uint64_t off, uint32_t len)
{
	memset(io, 0, sizeof(*io));
	io->pd = pd;
	io->req = req;
	io->bio.op = op;
	io->bio.offset = off;
	io->bio.len = len;
	io->bio.end_io = pd_end_io;
	io->reply_len = len;
}

/* A bio of @op on [@off, @off + @len) with @extra bytes after it (its data, or iovecs). */
static struct pd_io *pd_io_new(struct pd *pd, fuse_req_t req, enum bio_op op, uint64_t off,
			       uint32_t len, size_t extra)
{
	struct pd_io *io = malloc(sizeof(*io) + extra);

	if (io)
		pd_io_init(io, pd, req, op, off, len);
	return io;
}

/* The budget a read or write of @len bytes takes (see pd_io_new_charged()). */
size_t pd_io_charge(size_t len, bool ext)
{
	return ext || len >= PD_BIGBUF_MIN ? PD_RXBUF_SIZE : len;
}

/* A read or write of @len bytes whose budget, pd_io_charge(), is taken. Its data is at @ext,
 * in a receive buffer the caller hands over (it sets io->bigbuf), or else in a large buffer
 * when there are PD_BIGBUF_MIN bytes or more, or else in the pd_io itself. On failure the
 * budget is given back. */
struct pd_io *pd_io_new_charged(struct pd *pd, fuse_req_t req, enum bio_op op, uint64_t off,
				size_t len, void *ext)
{
	bool big = ext || len >= PD_BIGBUF_MIN;
	size_t charge = pd_io_charge(len, ext != NULL);
	struct pd_io *io;

	io = pd_io_new(pd, req, op, off, (uint32_t)len, big ? 0 : len);
	if (io && big && !ext) {
		ext = io->bigbuf = pd_bigbuf_get(pd);
		if (!ext) {
			free(io);
			io = NULL;
		}
	}
	if (!io) {
		pd_data_put(pd, charge);
		return NULL;
	}
	io->charged = charge;
	pd_io_set_data(io, big ? ext : io->data, len);
	return io;
}
/* Whether a read or write of [@off, @off + *@size) of the disk goes to the queue: 0, with
 * *@size clamped to the disk's end (a read across it is short; as on a block device, a write
 * across it is written up to it). Else it is answered at once: PD_DISK_EMPTY with 0 bytes (a
 * read at or past the end or of 0 bytes, a write of 0 bytes), or -errno (the daemon stops,
 * a write starts at or past the end). A negative file offset is taken as past the end. */
#define PD_DISK_EMPTY 1
static int pd_disk_check(const struct pd *pd, enum bio_op op, uint64_t off, size_t *size)
{
	if (READ_ONCE(pd->stopping))
		return -PD_ESTOPPED;
	if (!*size || (op == BIO_OP_READ && off >= pd->be.size))
		return PD_DISK_EMPTY;
	if (off >= pd->be.size)
		return -ENOSPC;
	if (*size > pd->be.size - off)
		*size = (size_t)(pd->be.size - off);
	return 0;
}

unsigned int pd_disk_write_flags(uint64_t fh, uint32_t flags)
{
	return pd_disk_open_is_direct(fh) && (flags & O_DSYNC) ? PD_WRITE_FUA : 0;
}

void pd_disk_read(fuse_req_t req, size_t size, off_t off)
{
	struct pd *pd = req_pd(req);
	struct pd_io *io;
	int ret;

	ret = pd_disk_check(pd, BIO_OP_READ, (uint64_t)off, &size);
	if (ret) {
		if (ret < 0)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (!pd_data_get_or_park(pd, pd_io_charge(size, false), true)) {
		struct pd_parked *pk = calloc(1, sizeof(*pk));

		if (!pk) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		*pk = (struct pd_parked){ .req = req, .op = BIO_OP_READ, .off = (uint64_t)off,
					  .len = size };
		pd_park(pd, pk);
		return;
	}
	io = pd_io_new_charged(pd, req, BIO_OP_READ, (uint64_t)off, size, NULL);
	if (!io) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	queue_submit(&pd->q, &io->bio);
}

/* Where a write's data is: in this thread's receive buffer (*@in_rx, large writes only,
 * whose buffer the bio may take over), or elsewhere (the caller copies it). */
static char *pd_write_data(struct fuse_bufvec *bufv, size_t size, bool *in_rx)
{
	struct fuse_buf *rx = tls_rxbuf;
	const struct fuse_buf *b = &bufv->buf[0];
	char *data;

	*in_rx = false;
	if (size < PD_BIGBUF_MIN || !rx || !rx->mem || bufv->count != 1 || bufv->idx ||
	    (b->flags & FUSE_BUF_IS_FD))
		return NULL;
	data = (char *)b->mem + bufv->off;
	if (data < (char *)rx->mem || data + size > (char *)rx->mem + rx->size)
		return NULL;
	*in_rx = true;
	return data;
}

/* Copy a write's @size bytes of data from @bufv to @dst. Returns 0 or a positive errno. */
static int pd_write_copy(struct fuse_bufvec *bufv, void *dst_mem, size_t size)
{
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	ssize_t got;

	dst.buf[0].mem = dst_mem;
	got = fuse_buf_copy(&dst, bufv, 0);
	if (got == (ssize_t)size)
		return 0;
	log_err("fuse_buf_copy: %s", got < 0 ? strerror((int)-got) : "short copy");
	return got < 0 ? (int)-got : EIO;
}

/* Park a write refused by the budget: its data stays in the receive buffer (taken over), or
 * is copied. */
static void pd_park_write(struct pd *pd, fuse_req_t req, struct fuse_bufvec *bufv, uint64_t off,
			  size_t size, char *rxdata, bool fua)
{
	struct pd_parked *pk = calloc(1, sizeof(*pk));
	int err = ENOMEM;

	if (!pk)
		goto fail;
	*pk = (struct pd_parked){ .req = req, .op = BIO_OP_WRITE, .off = off, .len = size,
				  .fua = fua };
	if (rxdata) {
		pk->mem = tls_rxbuf->mem;
		pk->data = rxdata;
		pk->big = true;
		tls_rxbuf->mem = NULL;
	} else {
		pk->mem = pk->data = malloc(size);
		if (!pk->mem)
			goto fail;
		err = pd_write_copy(bufv, pk->data, size);
		if (err) {
			free(pk->mem);
			goto fail;
		}
	}
	pd_park(pd, pk);
	return;
fail:
	free(pk);
	fuse_reply_err(req, err);
}

void pd_disk_write(fuse_req_t req, struct fuse_bufvec *bufv, off_t off, unsigned int flags)
{
	struct pd *pd = req_pd(req);
	size_t size = fuse_buf_size(bufv);
	bool fua = flags & PD_WRITE_FUA;
	struct pd_io *io;
	char *rxdata;
	bool in_rx;
	int err;

	err = pd_disk_check(pd, BIO_OP_WRITE, (uint64_t)off, &size);
	if (err) {
		if (err < 0)
			fuse_reply_err(req, -err);
		else
			fuse_reply_write(req, 0);
		return;
	}
	rxdata = pd_write_data(bufv, size, &in_rx);
	if (!pd_data_get_or_park(pd, pd_io_charge(size, in_rx), true)) {
		pd_park_write(pd, req, bufv, (uint64_t)off, size, rxdata, fua);
		return;
	}
	io = pd_io_new_charged(pd, req, BIO_OP_WRITE, (uint64_t)off, size, rxdata);
	if (!io) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	io->fua = fua;
	if (in_rx) {
		/* The bio takes over the receive buffer: no copy. The thread gets another. */
		io->bigbuf = tls_rxbuf->mem;
		tls_rxbuf->mem = NULL;
	} else {
		/* The receive buffer is reused for the next request: the data moves to the bio. */
		err = pd_write_copy(bufv, io->iov.iov_base, size);
		if (err) {
			pd_io_free(io);
			fuse_reply_err(req, err);
			return;
		}
	}
	queue_submit(&pd->q, &io->bio);
}

/* ---- reads and writes straight from a ring entry ---- */

struct pd_io *pd_ring_io_new(void)
{
	return calloc(1, sizeof(struct pd_io));
}

void pd_ring_io_free(struct pd_io *io)
{
	free(io);
}

bool pd_disk_ring_rw(struct pd *pd, struct pd_io *io, struct ring_ent *ent, uint32_t opcode,
		     const void *arg, size_t arglen, void *payload, size_t psz, size_t cap)
{
	enum bio_op op;
	uint64_t off, fh;
	size_t size;
	bool fua = false;
	int ret;

	if (opcode == FUSE_READ) {
		const struct fuse_read_in *ri = arg;

		if (arglen != sizeof(*ri) || ri->size > cap)
			return false;
		op = BIO_OP_READ;
		off = ri->offset;
		size = ri->size;
		fh = ri->fh;
	} else {
		const struct fuse_write_in *wi = arg;

		/* A write whose data falls short of its size: libfuse answers EIO. */
		if (arglen != sizeof(*wi) || wi->size > psz)
			return false;
		op = BIO_OP_WRITE;
		off = wi->offset;
		size = wi->size;
		fh = wi->fh;
		fua = pd_disk_write_flags(wi->fh, wi->flags) & PD_WRITE_FUA;
	}
	ret = pd_disk_open_check(pd, fh);
	if (!ret)
		ret = pd_disk_check(pd, op, off, &size);
	pd_io_init(io, pd, NULL, op, off, ret ? 0 : (uint32_t)size);
	io->ring = ent;
	if (ret) {
		pd_ring_end(io, ret < 0 ? ret : 0);
		return true;
	}
	io->fua = fua;
	pd_io_set_data(io, payload, size);
	queue_submit(&pd->q, &io->bio);
	return true;
}

void pd_disk_fsync(fuse_req_t req)
{
	struct pd *pd = req_pd(req);
	struct pd_io *io;

	if (pd_refuse(pd, req))
		return;
	io = pd_io_new(pd, req, BIO_OP_FLUSH, 0, 0, 0);
	if (!io) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	queue_submit(&pd->q, &io->bio);
}

/* ---- range operations: zero range and punch hole ---- */

/* A range longer than one bio is cut into bios of at most @step bytes, submitted by the
 * receive thread in batches of at most PD_FANOUT_BATCH in flight, so that a terabyte range
 * neither allocates a bio per chunk up front nor floods the queue. The reply waits for the
 * last bio and carries the first error. Splitting, never clamping: a range is done whole or
 * fails. */
#define PD_FANOUT_BATCH 16u
/* A discard bio's length: 1 GiB, aligned, well inside the bio's 32-bit length. */
#define PD_DISCARD_STEP (1024u * 1024u * 1024u)

struct pd_fanout {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* lock: a bio ended */
	unsigned int in_flight;	/* lock */
	int error;		/* lock: the first error */
};

static void pd_fanout_end(struct pd_fanout *f, int error)
{
	pthread_mutex_lock(&f->lock);
	if (error && !f->error)
		f->error = error;
	f->in_flight--;
	/* Under the lock: the receive thread's stack frame holds @f and goes once it sees 0. */
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* Wait until at most @max bios of @f are in flight. Returns the first error so far. */
static int pd_fanout_wait(struct pd *pd, struct pd_fanout *f, unsigned int max)
{
	int error;

	pthread_mutex_lock(&f->lock);
	if (f->in_flight > max) {
		/* Our own bios may sit in the plug: let them go before sleeping. */
		pthread_mutex_unlock(&f->lock);
		queue_unplug_idle(&pd->q);
		pthread_mutex_lock(&f->lock);
	}
	while (f->in_flight > max)
		pthread_cond_wait(&f->cond, &f->lock);
	error = f->error;
	pthread_mutex_unlock(&f->lock);
	return error;
}

/* One bio of a range operation: a write of zeroes or a discard of [@off, @off + @len).
 * A zeroing write's data is the shared backend_zero_chunk (core/backend/backend.h), so that a backend
 * that sees only it in a write request may turn it into a zeroing command (NBD WRITE_ZEROES). */
static struct pd_io *pd_range_bio(struct pd *pd, enum bio_op op, uint64_t off, uint32_t len)
{
	unsigned int nv =
		op == BIO_OP_WRITE ? (len + BACKEND_ZERO_CHUNK - 1) / BACKEND_ZERO_CHUNK : 0;
	size_t extra = nv * sizeof(struct iovec);
	struct pd_io *io;

	/* A zeroing bio's iovecs count against the data budget; its data is backend_zero_chunk. */
	if (extra)
		pd_data_get(pd, extra);
	io = pd_io_new(pd, NULL, op, off, len, extra);
	if (!io) {
		if (extra)
			pd_data_put(pd, extra);
		return NULL;
	}
	io->charged = extra;
	if (nv) {
		io->bio.iov = (struct iovec *)io->data;
		io->bio.iovcnt = (int)nv;
		for (unsigned int k = 0; k < nv; k++) {
			uint32_t left = len - k * BACKEND_ZERO_CHUNK;

			io->bio.iov[k].iov_base = (void *)backend_zero_chunk;
			io->bio.iov[k].iov_len = left < BACKEND_ZERO_CHUNK ? left : BACKEND_ZERO_CHUNK;
		}
	}
	return io;
}

/* Zero (@op WRITE) or discard (@op DISCARD) [@off, @end), then reply. */
static void pd_range(struct pd *pd, fuse_req_t req, enum bio_op op, uint64_t off, uint64_t end)
{
	struct pd_fanout f = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER };
	uint64_t step;
	int error = 0;

	if (op == BIO_OP_WRITE) {
		lock_take(&pd->q.lock);
		step = pd->q.p.max_request_size;
		lock_drop(&pd->q.lock);
	} else {
		step = PD_DISCARD_STEP;
	}
	while (off < end && !error) {
		uint64_t len = end - off < step ? end - off : step;
		struct pd_io *io;

		error = pd_fanout_wait(pd, &f, PD_FANOUT_BATCH - 1);
		if (error)
			break;
		io = pd_range_bio(pd, op, off, (uint32_t)len);
		if (!io) {
			error = -ENOMEM;
			break;
		}
		io->fanout = &f;
		pthread_mutex_lock(&f.lock);
		f.in_flight++;
		pthread_mutex_unlock(&f.lock);
		queue_submit(&pd->q, &io->bio);
		off += len;
	}
	{
		int last = pd_fanout_wait(pd, &f, 0);

		if (!error)
			error = last;
	}
	pthread_cond_destroy(&f.cond);
	pthread_mutex_destroy(&f.lock);
	fuse_reply_err(req, -error);
}

void pd_disk_fallocate(fuse_req_t req, int mode, off_t off, off_t len)
{
	struct pd *pd = req_pd(req);
	uint64_t end;

	if (pd_refuse(pd, req))
		return;

	if (off < 0 || len <= 0 || __builtin_add_overflow((uint64_t)off, (uint64_t)len, &end)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((uint64_t)off >= pd->be.size) {
		fuse_reply_err(req, mode & FALLOC_FL_KEEP_SIZE ? 0 : ENOSPC);
		return;
	}
	if (end > pd->be.size)
		end = pd->be.size;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
		pd_range(pd, req, BIO_OP_DISCARD, (uint64_t)off, end);
		return;
	}
	if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE) {
		pd_range(pd, req, BIO_OP_WRITE, (uint64_t)off, end);
		return;
	}
	if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE) {
		/* Every block of a disk already exists. */
		fuse_reply_err(req, 0);
		return;
	}
	fuse_reply_err(req, EOPNOTSUPP);
}
