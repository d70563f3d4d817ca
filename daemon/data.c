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
 * Memory. Read and write buffers in flight are bounded by PD_DATA_BUDGET, so that memory stays
 * flat whatever the queue depth and request size. Large buffers (PD_BIGBUF_MIN bytes of data
 * or more) all have one capacity, PD_RXBUF_SIZE, that of a receive buffer: a large write keeps
 * its data in the receive buffer it was read into, and the receive thread gets another. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "daemon/daemon.h"
#include "daemon/data.h"

/* Read and write buffers in flight, at most (one larger request may always go alone). */
#define PD_DATA_BUDGET (16u * 1024u * 1024u)
#define PD_BIGBUF_MIN (64u * 1024u)

/* The kernel writes a request's header and its data, never more, whatever length the read of
 * /dev/fuse asks for: a receive buffer of max_write plus a page holds any request. */
_Static_assert(sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in) <=
		       PD_RXBUF_SIZE - PD_MAX_WRITE,
	       "a receive buffer holds the largest write request");

/* One FUSE request in flight, or one bio of a range operation (fanout != NULL). */
struct pd_fanout;
struct pd_io {
	struct bio bio;
	fuse_req_t req;
	struct pd_fanout *fanout;	/* the range operation this bio is part of, or NULL */
	size_t reply_len;	/* bytes to report on success */
	struct pd *pd;
	size_t charged;		/* bytes of data taken from the daemon's data budget */
	void *bigbuf;		/* the large buffer that holds its data (see pd_bigbuf_put), or NULL */
	struct iovec iov;
	char data[];		/* the read or write buffer, or a range bio's iovecs */
};

static struct pd *req_pd(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The daemon is stopping: the disk takes no new request (see pd_shutdown). */
static bool pd_refuse(struct pd *pd, fuse_req_t req)
{
	if (!__atomic_load_n(&pd->stopping, __ATOMIC_RELAXED))
		return false;
	fuse_reply_err(req, PD_ESTOPPED);
	return true;
}

/* ---- the data budget ---- */

/* A receive thread that would exceed the budget waits for completions, like a submitter
 * waiting for a free request. One request may always proceed alone, however large. */
static void pd_data_get(struct pd *pd, size_t bytes)
{
	pthread_mutex_lock(&pd->data_lock);
	while (pd->data_in_flight && pd->data_in_flight + bytes > PD_DATA_BUDGET) {
		/* Whatever holds the budget must be able to move: flush our plug first. */
		pthread_mutex_unlock(&pd->data_lock);
		queue_unplug_idle(&pd->q);
		pthread_mutex_lock(&pd->data_lock);
		if (pd->data_in_flight && pd->data_in_flight + bytes > PD_DATA_BUDGET)
			pthread_cond_wait(&pd->data_cond, &pd->data_lock);
	}
	pd->data_in_flight += bytes;
	pthread_mutex_unlock(&pd->data_lock);
}

static void pd_data_put(struct pd *pd, size_t bytes)
{
	pthread_mutex_lock(&pd->data_lock);
	pd->data_in_flight -= bytes;
	pthread_mutex_unlock(&pd->data_lock);
	pthread_cond_broadcast(&pd->data_cond);
}

/* ---- large buffers ---- */

/* The receive thread's buffer, which libfuse fills and reuses for every request it reads. */
static __thread struct fuse_buf *tls_rxbuf;

void pd_data_set_rxbuf(struct fuse_buf *buf)
{
	tls_rxbuf = buf;
}

/* A buffer done with is kept, up to PD_BIGBUF_FREE_MAX, for the next large read or the next
 * receive thread that has none. Reuse keeps the buffers' pages mapped: a freed megabyte
 * handed back to the kernel by malloc would be faulted in again, page by page, at the next
 * large request, and malloc's per-thread arenas do not pile up freed buffers. */
static void pd_bigbuf_put(struct pd *pd, void *mem)
{
	pthread_mutex_lock(&pd->data_lock);
	pd->bigbuf_used = true;
	if (pd->bigbuf_nr_free < PD_BIGBUF_FREE_MAX) {
		pd->bigbuf_free[pd->bigbuf_nr_free++] = mem;
		mem = NULL;
	}
	pthread_mutex_unlock(&pd->data_lock);
	free(mem);
}

/* A kept large buffer, or a new one; NULL only when out of memory. */
static void *pd_bigbuf_get(struct pd *pd)
{
	void *mem = NULL;

	pthread_mutex_lock(&pd->data_lock);
	pd->bigbuf_used = true;
	if (pd->bigbuf_nr_free)
		mem = pd->bigbuf_free[--pd->bigbuf_nr_free];
	pthread_mutex_unlock(&pd->data_lock);
	return mem ? mem : malloc(PD_RXBUF_SIZE);
}

void *pd_data_rxbuf_get(struct pd *pd)
{
	return pd_bigbuf_get(pd);
}

/* Give the kept large buffers back, and malloc's free memory with them: all of them when
 * @idle_only is false (at exit), else only when none was taken or returned since the last
 * call. The main thread calls this on its periodic tick, so an idle daemon gives back the
 * memory of a burst of large I/O within two ticks and keeps only its receive threads'
 * buffers, while a steady stream of large I/O keeps reusing them. */
void pd_fuse_trim_buffers(struct pd *pd, bool idle_only)
{
	void *mem[PD_BIGBUF_FREE_MAX];
	unsigned int n = 0;

	pthread_mutex_lock(&pd->data_lock);
	if (!idle_only || !pd->bigbuf_used) {
		n = pd->bigbuf_nr_free;
		memcpy(mem, pd->bigbuf_free, n * sizeof(mem[0]));
		pd->bigbuf_nr_free = 0;
	}
	pd->bigbuf_used = false;
	pthread_mutex_unlock(&pd->data_lock);
	if (!n)
		return;
	while (n)
		free(mem[--n]);
	malloc_trim(0);
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

static void pd_end_io(struct bio *bio, int error)
{
	struct pd_io *io = (struct pd_io *)bio;

	if (io->fanout)
		pd_fanout_end(io->fanout, error);
	else if (error)
		fuse_reply_err(io->req, -error);
	else if (io->bio.op == BIO_OP_READ)
		fuse_reply_buf(io->req, io->iov.iov_base, io->reply_len);
	else if (io->bio.op == BIO_OP_WRITE)
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

/* A bio of @op on [@off, @off + @len) with @extra bytes after it (its data, or iovecs). */
static struct pd_io *pd_io_new(struct pd *pd, fuse_req_t req, enum bio_op op, uint64_t off,
			       uint32_t len, size_t extra)
{
	struct pd_io *io = malloc(sizeof(*io) + extra);

	if (!io)
		return NULL;
	memset(io, 0, sizeof(*io));
	io->pd = pd;
	io->req = req;
	io->bio.op = op;
	io->bio.offset = off;
	io->bio.len = len;
	io->bio.end_io = pd_end_io;
	io->reply_len = len;
	return io;
}

/* A read or write of @len bytes. Its data is at @ext, in a receive buffer the caller hands
 * over (it sets io->bigbuf), or else in a large buffer when there are PD_BIGBUF_MIN bytes or
 * more, or else in the pd_io itself. What stays allocated for it is taken from the data
 * budget first. */
static struct pd_io *pd_io_new_data(struct pd *pd, fuse_req_t req, enum bio_op op, uint64_t off,
				    size_t len, void *ext)
{
	bool big = ext || len >= PD_BIGBUF_MIN;
	size_t charge = big ? PD_RXBUF_SIZE : len;
	struct pd_io *io;

	pd_data_get(pd, charge);
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

void pd_disk_read(fuse_req_t req, size_t size, off_t off)
{
	struct pd *pd = req_pd(req);
	struct pd_io *io;

	if (pd_refuse(pd, req))
		return;

	/* Reads past the end return 0 bytes; a read across it is short. */
	if (off < 0 || (uint64_t)off >= pd->be.size || !size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > pd->be.size - (uint64_t)off)
		size = (size_t)(pd->be.size - (uint64_t)off);
	io = pd_io_new_data(pd, req, BIO_OP_READ, (uint64_t)off, size, NULL);
	if (!io) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	queue_submit(&pd->q, &io->bio);
}

/* A large write keeps its data where libfuse read it: the bio takes over the receive buffer,
 * and the thread gets a kept large buffer at its next read, or a new one. That spares a copy
 * of up to max_write bytes per request. Returns NULL for a small write, or one whose data is
 * not in this thread's receive buffer: the caller copies those. */
static struct pd_io *pd_write_take_rxbuf(struct pd *pd, fuse_req_t req, struct fuse_bufvec *bufv,
					 uint64_t off, size_t size)
{
	struct fuse_buf *rx = tls_rxbuf;
	const struct fuse_buf *b = &bufv->buf[0];
	struct pd_io *io;
	char *data;

	if (size < PD_BIGBUF_MIN || !rx || !rx->mem || bufv->count != 1 || bufv->idx ||
	    (b->flags & FUSE_BUF_IS_FD))
		return NULL;
	data = (char *)b->mem + bufv->off;
	if (data < (char *)rx->mem || data + size > (char *)rx->mem + rx->size)
		return NULL;
	io = pd_io_new_data(pd, req, BIO_OP_WRITE, off, size, data);
	if (io) {
		io->bigbuf = rx->mem;
		rx->mem = NULL;
	}
	return io;
}

void pd_disk_write(fuse_req_t req, struct fuse_bufvec *bufv, off_t off)
{
	struct pd *pd = req_pd(req);
	size_t size = fuse_buf_size(bufv);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(0);
	struct pd_io *io;
	ssize_t got;

	if (pd_refuse(pd, req))
		return;

	if (!size) {
		fuse_reply_write(req, 0);
		return;
	}
	/* As on a block device: write up to the end, then ENOSPC. */
	if (off < 0 || (uint64_t)off >= pd->be.size) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (size > pd->be.size - (uint64_t)off)
		size = (size_t)(pd->be.size - (uint64_t)off);
	io = pd_write_take_rxbuf(pd, req, bufv, (uint64_t)off, size);
	if (!io) {
		io = pd_io_new_data(pd, req, BIO_OP_WRITE, (uint64_t)off, size, NULL);
		if (!io) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		/* The receive buffer is reused for the next request: the data moves to the bio. */
		dst.buf[0].mem = io->iov.iov_base;
		dst.buf[0].size = size;
		got = fuse_buf_copy(&dst, bufv, 0);
		if (got != (ssize_t)size) {
			log_err("fuse_buf_copy: %s", got < 0 ? strerror((int)-got) : "short copy");
			pd_io_free(io);
			fuse_reply_err(req, got < 0 ? (int)-got : EIO);
			return;
		}
	}
	queue_submit(&pd->q, &io->bio);
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

/* A zero-filled source for zeroing writes, shared by every bio (read-only). */
#define ZERO_CHUNK (64u * 1024u)
static const char zero_chunk[ZERO_CHUNK];

/* One bio of a range operation: a write of zeroes or a discard of [@off, @off + @len). */
static struct pd_io *pd_range_bio(struct pd *pd, enum bio_op op, uint64_t off, uint32_t len)
{
	unsigned int nv = op == BIO_OP_WRITE ? (len + ZERO_CHUNK - 1) / ZERO_CHUNK : 0;
	size_t extra = nv * sizeof(struct iovec);
	struct pd_io *io;

	/* A zeroing bio's iovecs count against the data budget; its data is zero_chunk. */
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
			uint32_t left = len - k * ZERO_CHUNK;

			io->bio.iov[k].iov_base = (void *)zero_chunk;
			io->bio.iov[k].iov_len = left < ZERO_CHUNK ? left : ZERO_CHUNK;
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
		pthread_mutex_lock(&pd->q.lock);
		step = pd->q.p.max_request_size;
		pthread_mutex_unlock(&pd->q.lock);
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
