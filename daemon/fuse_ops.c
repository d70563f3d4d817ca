// SPDX-License-Identifier: MIT
/* The FUSE glue: turns low-level FUSE requests on MOUNTPOINT/disk into bios and their
 * completions into replies, and serves the stats and stat files.
 *
 * No request holds a thread while it is queued: a receive thread turns a request into a bio,
 * submits it and goes back to /dev/fuse; the reply is sent by whoever completes the bio (a
 * backend worker or the timer thread). Before a receive thread blocks for the next request
 * with nothing pending, it unplugs the queue, the way the block layer flushes a task's plug
 * when the task sleeps: a lone synchronous request never waits for the unplug timer. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse_uring.h"

#define PD_MAX_BACKGROUND 256u
/* Read and write buffers in flight, at most (one larger request may always go alone). */
#define PD_DATA_BUDGET (16u * 1024u * 1024u)
#define STATS_BUF_SIZE (64u * 1024u)

static struct pd *req_pd(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static const char *const ino_name[INO_NR] = { NULL, NULL, "disk", "stats", "stat" };

/* ---- attributes ---- */

static void fill_attr(struct pd *pd, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_blksize = 4096;
	pthread_mutex_lock(&pd->attr_lock);
	st->st_mode = pd->mode[ino];
	st->st_uid = pd->uid[ino];
	st->st_gid = pd->gid[ino];
	if (ino == INO_DISK) {
		st->st_atim = pd->atime;
		st->st_mtim = pd->mtime;
		st->st_ctim = pd->ctime;
	} else {
		st->st_atim = st->st_mtim = st->st_ctim = pd->start_time;
	}
	pthread_mutex_unlock(&pd->attr_lock);
	if (ino == INO_ROOT) {
		st->st_nlink = 2;
	} else {
		st->st_nlink = 1;
		if (ino == INO_DISK) {
			st->st_size = (off_t)pd->be.size;
			st->st_blocks = (blkcnt_t)(pd->be.size / 512);
		}
	}
}

static void pd_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = PD_MAX_WRITE;
	conn->max_read = 0;
	conn->max_readahead = PD_MAX_WRITE;
	/* The kernel's default of 12 background requests would cap async direct I/O from a
	 * loop device far below the controller's queue depth. */
	conn->max_background = PD_MAX_BACKGROUND;
	conn->congestion_threshold = PD_MAX_BACKGROUND * 3 / 4;
	conn->want |= FUSE_CAP_ASYNC_DIO | FUSE_CAP_ASYNC_READ;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* Requests are read into memory, where a large write's data stays (pd_write_buf). With
	 * splice reading on, libfuse gives every receive thread a pipe at its first request
	 * and, when the pipe cannot grow to max_write, reads with read() anyway. */
	conn->want &= ~(unsigned)FUSE_CAP_SPLICE_READ;
	conn->time_gran = 1;
}

static void pd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pd *pd = req_pd(req);
	struct fuse_entry_param e;

	if (parent != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	memset(&e, 0, sizeof(e));
	for (fuse_ino_t ino = INO_DISK; ino < INO_NR; ino++) {
		if (strcmp(name, ino_name[ino]))
			continue;
		e.ino = ino;
		e.attr_timeout = 1.0;
		e.entry_timeout = 1.0;
		fill_attr(pd, ino, &e.attr);
		fuse_reply_entry(req, &e);
		return;
	}
	fuse_reply_err(req, ENOENT);
}

static void pd_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino >= INO_NR) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(req_pd(req), ino, &st);
	fuse_reply_attr(req, &st, 1.0);
}

static void set_time(struct timespec *dst, const struct timespec *src, bool now)
{
	if (now)
		clock_gettime(CLOCK_REALTIME, dst);
	else
		*dst = *src;
}

static void pd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat st;

	(void)fi;
	if (ino >= INO_NR) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		/* A disk has the size it has: only a no-op "truncate" to that size is allowed. */
		if (ino != INO_DISK || (uint64_t)attr->st_size != pd->be.size) {
			fuse_reply_err(req, EPERM);
			return;
		}
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		/* Only disk's permission bits may change; stats and stat keep theirs. */
		if (ino != INO_DISK && ino != INO_ROOT) {
			fuse_reply_err(req, EPERM);
			return;
		}
	}
	if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) && ctx->uid != 0) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&pd->attr_lock);
	if (to_set & FUSE_SET_ATTR_MODE)
		pd->mode[ino] = (pd->mode[ino] & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		pd->uid[ino] = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		pd->gid[ino] = attr->st_gid;
	if (ino == INO_DISK) {
		if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
			set_time(&pd->atime, &attr->st_atim, to_set & FUSE_SET_ATTR_ATIME_NOW);
		if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
			set_time(&pd->mtime, &attr->st_mtim, to_set & FUSE_SET_ATTR_MTIME_NOW);
		clock_gettime(CLOCK_REALTIME, &pd->ctime);
	}
	pthread_mutex_unlock(&pd->attr_lock);
	fill_attr(pd, ino, &st);
	fuse_reply_attr(req, &st, 1.0);
}

static void pd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const char *const names[] = { ".", "..", "disk", "stats", "stat" };
	static const fuse_ino_t inos[] = { INO_ROOT, INO_ROOT, INO_DISK, INO_STATS, INO_STAT };
	char buf[1024];
	size_t pos = 0;

	(void)fi;
	if (ino != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (off_t i = off; i < (off_t)(sizeof(names) / sizeof(names[0])); i++) {
		struct stat st = { .st_ino = inos[i], .st_mode = i < 2 ? S_IFDIR : S_IFREG };
		size_t n = fuse_add_direntry(req, buf + pos, size - pos, names[i], &st, i + 1);

		if (n > size - pos)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
}

static void pd_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct pd *pd = req_pd(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = pd->be.size / 4096;
	sv.f_files = INO_NR - 1;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static void pd_deny(fuse_req_t req)
{
	fuse_reply_err(req, EPERM);
}

static void pd_mknod(fuse_req_t req, fuse_ino_t p, const char *n, mode_t m, dev_t d)
{
	(void)p, (void)n, (void)m, (void)d;
	pd_deny(req);
}

static void pd_mkdir(fuse_req_t req, fuse_ino_t p, const char *n, mode_t m)
{
	(void)p, (void)n, (void)m;
	pd_deny(req);
}

static void pd_unlink(fuse_req_t req, fuse_ino_t p, const char *n)
{
	(void)p, (void)n;
	pd_deny(req);
}

static void pd_symlink(fuse_req_t req, const char *l, fuse_ino_t p, const char *n)
{
	(void)l, (void)p, (void)n;
	pd_deny(req);
}

static void pd_rename(fuse_req_t req, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn,
		      unsigned int flags)
{
	(void)p, (void)n, (void)np, (void)nn, (void)flags;
	pd_deny(req);
}

static void pd_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t np, const char *nn)
{
	(void)ino, (void)np, (void)nn;
	pd_deny(req);
}

static void pd_create(fuse_req_t req, fuse_ino_t p, const char *n, mode_t m,
		      struct fuse_file_info *fi)
{
	(void)p, (void)n, (void)m, (void)fi;
	pd_deny(req);
}

/* ---- stats and stat: a snapshot per open ---- */

/* A reader killed in the middle of a read makes the kernel send release while the read is
 * still being served by another thread, so the buffer is reference counted: one for the
 * open file, one for each read in progress. */
struct snap_buf {
	int refs;		/* atomic */
	size_t len;
	char text[];
};

static void snap_put(struct snap_buf *sb)
{
	/* Pairs with the other holders' decrements: the last one frees. */
	if (sb && __atomic_sub_fetch(&sb->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(sb);
}

static struct snap_buf *render_snapshot(struct pd *pd, fuse_ino_t ino)
{
	struct stats_snapshot *ss = malloc(sizeof(*ss));
	struct snap_buf *sb = malloc(sizeof(*sb) + STATS_BUF_SIZE);

	if (!ss || !sb) {
		free(ss);
		free(sb);
		return NULL;
	}
	queue_snapshot(&pd->q, ss);
	snprintf(ss->name, sizeof(ss->name), "%s", pd->cfg.disk_name);
	ss->disk_size = pd->be.size;
	{
		struct pd_uring_info ui;

		pd_uring_info(pd, &ui);
		ss->transport = ui.transport;
		ss->ring_queues = ui.queues;
		ss->ring_depth = ui.depth;
		ss->ring_requests = ui.requests;
		ss->ring_commit_waits = ui.commit_waits;
	}
	sb->refs = 1;
	if (ino == INO_STATS)
		sb->len = stats_format(ss, sb->text, STATS_BUF_SIZE);
	else
		sb->len = stats_format_stat(ss, sb->text, STATS_BUF_SIZE);
	free(ss);
	return sb;
}

static void pd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);

	if (__atomic_load_n(&pd->stopping, __ATOMIC_RELAXED) && ino == INO_DISK) {
		fuse_reply_err(req, ESHUTDOWN);
		return;
	}
	switch (ino) {
	case INO_DISK:
		fi->keep_cache = 1;
		fi->noflush = 1;
		break;
	case INO_STAT:
		if ((fi->flags & O_ACCMODE) != O_RDONLY) {
			fuse_reply_err(req, EACCES);
			return;
		}
		/* fall through */
	case INO_STATS:
		/* O_TRUNC (the shell's `echo reset > stats`) means nothing to a virtual file. */
		fi->direct_io = 1;
		fi->fh = 0;
		if ((fi->flags & O_ACCMODE) != O_WRONLY) {
			struct snap_buf *sb = render_snapshot(pd, ino);

			if (!sb) {
				fuse_reply_err(req, ENOMEM);
				return;
			}
			fi->fh = (uintptr_t)sb;
		}
		break;
	default:
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (fuse_reply_open(req, fi) == -ENOENT && fi->fh)
		free((void *)(uintptr_t)fi->fh); /* interrupted open: no release will come */
}

static void pd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_STATS || ino == INO_STAT)
		snap_put((struct snap_buf *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void pd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* Every acknowledged write is already in the image; durability is fsync's job. */
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

/* ---- the disk: bios ---- */

/* One FUSE request in flight. A ZERO_RANGE request fans out into several bios that share it. */
struct pd_io {
	struct bio bio;
	fuse_req_t req;
	struct pd_io *parent;	/* for fan-out: the bio that holds the reply */
	int pending;		/* atomic, parent only: bios not yet completed */
	int error;		/* atomic, parent only: first error */
	size_t reply_len;	/* bytes to report on success */
	struct pd *pd;
	size_t charged;		/* bytes of data taken from the daemon's data budget */
	void *bigbuf;		/* the large buffer that holds its data (see pd_bigbuf_put), or NULL */
	struct iovec iov;
	char data[];		/* the read or write buffer */
};

/* Data buffers in flight are bounded (PD_DATA_BUDGET), so that memory stays flat whatever the
 * queue depth and request size: a receive thread that would exceed the budget waits for
 * completions, like a submitter waiting for a free request. One request may always proceed
 * alone, however large. */
static void pd_data_get(struct pd *pd, size_t bytes)
{
	pthread_mutex_lock(&pd->data_lock);
	while (pd->data_in_flight && pd->data_in_flight + bytes > PD_DATA_BUDGET) {
		/* Whatever holds the budget must be able to move: flush our plug first. */
		pthread_mutex_unlock(&pd->data_lock);
		queue_unplug_idle(&pd->q);
		pthread_mutex_lock(&pd->data_lock);
		if (pd->data_in_flight && pd->data_in_flight + bytes > PD_DATA_BUDGET) {
			pthread_cond_wait(&pd->data_cond, &pd->data_lock);
		}
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

/* The receive thread's buffer, which libfuse fills and reuses for every request it reads. */
static __thread struct fuse_buf *tls_rxbuf;

/* Large buffers. Data of PD_BIGBUF_MIN bytes or more lives in a buffer of one size,
 * PD_BIGBUF_SIZE, that of libfuse's receive buffers (max_write and a page for the header):
 * a large write keeps its data in the receive buffer libfuse read it into, and a large read
 * gets one for the data it returns. A buffer done with is kept, up to PD_BIGBUF_FREE_MAX,
 * for the next large read or the next receive thread that has none (at the top of its
 * loop). Reuse keeps the buffers' pages mapped: a freed megabyte handed back to the kernel
 * by malloc would be faulted in again, page by page, at the next large request (a third of
 * the pages of a 1 MiB read stream at iodepth 128), and malloc's per-thread arenas do not
 * pile up freed buffers. */
#define PD_BIGBUF_MIN (64u * 1024u)
#define PD_BIGBUF_SIZE (PD_MAX_WRITE + 4096u)

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

/* A kept large buffer, or NULL. */
static void *pd_bigbuf_get(struct pd *pd)
{
	void *mem = NULL;

	pthread_mutex_lock(&pd->data_lock);
	pd->bigbuf_used = true;
	if (pd->bigbuf_nr_free)
		mem = pd->bigbuf_free[--pd->bigbuf_nr_free];
	pthread_mutex_unlock(&pd->data_lock);
	return mem;
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

static void pd_io_free(struct pd_io *io)
{
	if (io->charged)
		pd_data_put(io->pd, io->charged);
	if (io->bigbuf)
		pd_bigbuf_put(io->pd, io->bigbuf);
	free(io);
}

static void pd_io_reply(struct pd_io *io, int error)
{
	if (error)
		fuse_reply_err(io->req, -error);
	else if (io->bio.op == BIO_OP_READ)
		fuse_reply_buf(io->req, io->iov.iov_base, io->reply_len);
	else if (io->bio.op == BIO_OP_WRITE && !io->parent)
		fuse_reply_write(io->req, io->reply_len);
	else
		fuse_reply_err(io->req, 0);
}

static void pd_end_io(struct bio *bio, int error)
{
	struct pd_io *io = (struct pd_io *)bio;
	struct pd_io *parent = io->parent;

	if (!parent) {
		pd_io_reply(io, error);
		pd_io_free(io);
		return;
	}
	if (error) {
		int none = 0;

		__atomic_compare_exchange_n(&parent->error, &none, error, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
	}
	if (io != parent)
		pd_io_free(io);
	/* The last completion replies; pairs with the other completions' decrements. */
	if (__atomic_sub_fetch(&parent->pending, 1, __ATOMIC_ACQ_REL) == 0) {
		fuse_reply_err(parent->req, -__atomic_load_n(&parent->error, __ATOMIC_RELAXED));
		pd_io_free(parent);
	}
}

static void pd_io_set_data(struct pd_io *io, void *buf, size_t len)
{
	io->iov.iov_base = buf;
	io->iov.iov_len = len;
	io->bio.iov = &io->iov;
	io->bio.iovcnt = 1;
}

static struct pd_io *pd_io_new(fuse_req_t req, enum bio_op op, uint64_t off, size_t len,
			       size_t data_len)
{
	struct pd_io *io = malloc(sizeof(*io) + data_len);

	if (!io)
		return NULL;
	memset(io, 0, sizeof(*io));
	io->req = req;
	io->bio.op = op;
	io->bio.offset = off;
	io->bio.len = (uint32_t)len;
	io->bio.end_io = pd_end_io;
	io->reply_len = len;
	if (data_len)
		pd_io_set_data(io, io->data, data_len);
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
	size_t charge = big ? PD_BIGBUF_SIZE : len;
	struct pd_io *io;

	pd_data_get(pd, charge);
	io = pd_io_new(req, op, off, len, big ? 0 : len);
	if (io && big && !ext) {
		ext = io->bigbuf = pd_bigbuf_get(pd);
		if (!ext)
			ext = io->bigbuf = malloc(PD_BIGBUF_SIZE);
		if (!ext) {
			free(io);
			io = NULL;
		}
	}
	if (!io) {
		pd_data_put(pd, charge);
		return NULL;
	}
	io->pd = pd;
	io->charged = charge;
	if (big)
		pd_io_set_data(io, ext, len);
	return io;
}

static void pd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);
	struct pd_io *io;

	if (ino == INO_STATS || ino == INO_STAT) {
		struct snap_buf *sb = (struct snap_buf *)(uintptr_t)fi->fh;

		if (sb)
			__atomic_add_fetch(&sb->refs, 1, __ATOMIC_RELAXED);
		if (!sb || off < 0 || (size_t)off >= sb->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, sb->text + off,
				       size < sb->len - (size_t)off ? size : sb->len - (size_t)off);
		snap_put(sb);
		return;
	}
	if (ino != INO_DISK) {
		fuse_reply_err(req, EISDIR);
		return;
	}
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

static void stats_write(struct pd *pd, fuse_req_t req, struct fuse_bufvec *bufv, off_t off)
{
	char buf[16];
	size_t n = fuse_buf_size(bufv);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(sizeof(buf) - 1);
	ssize_t got;

	if (off != 0 || n == 0 || n >= sizeof(buf)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	dst.buf[0].mem = buf;
	got = fuse_buf_copy(&dst, bufv, 0);
	if (got < 0) {
		fuse_reply_err(req, (int)-got);
		return;
	}
	buf[got] = '\0';
	if (strcmp(buf, "reset") && strcmp(buf, "reset\n")) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	queue_stats_reset(&pd->q);
	pd_uring_stats_reset(pd);
	fuse_reply_write(req, n);
}

/* A large write keeps its data where libfuse read it: the bio takes over the receive buffer,
 * and the thread gets a kept large buffer at its next read, or a new one (libfuse allocates
 * one when fbuf.mem is NULL). That spares a copy of up to max_write bytes per request.
 * Returns NULL for a small write, or one whose data is not in this thread's receive buffer:
 * the caller copies those. */

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

static void pd_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);
	size_t size = fuse_buf_size(bufv);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(0);
	struct pd_io *io;
	ssize_t got;

	(void)fi;
	if (ino == INO_STATS) {
		stats_write(pd, req, bufv, off);
		return;
	}
	if (ino != INO_DISK) {
		fuse_reply_err(req, ino == INO_STAT ? EACCES : EISDIR);
		return;
	}
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

static void pd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);
	struct pd_io *io;

	(void)datasync, (void)fi;
	if (ino != INO_DISK) {
		fuse_reply_err(req, 0);
		return;
	}
	io = pd_io_new(req, BIO_OP_FLUSH, 0, 0, 0);
	if (!io) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	queue_submit(&pd->q, &io->bio);
}

/* A zero-filled source for ZERO_RANGE writes, shared by every bio (read-only). */
#define ZERO_CHUNK (64u * 1024u)
static const char zero_chunk[ZERO_CHUNK];

static void zero_range(struct pd *pd, fuse_req_t req, uint64_t off, uint64_t len)
{
	uint64_t step = pd->q.p.max_request_size;
	unsigned int nbios = (unsigned int)((len + step - 1) / step);
	struct pd_io *parent = NULL;
	struct pd_io **ios = calloc(nbios, sizeof(*ios));

	if (!ios)
		goto nomem;
	for (unsigned int i = 0; i < nbios; i++) {
		uint64_t o = off + (uint64_t)i * step;
		uint64_t l = len - (uint64_t)i * step < step ? len - (uint64_t)i * step : step;
		unsigned int nv = (unsigned int)((l + ZERO_CHUNK - 1) / ZERO_CHUNK);
		struct pd_io *io = pd_io_new(req, BIO_OP_WRITE, o, (size_t)l, nv * sizeof(struct iovec));

		if (!io)
			goto nomem;
		io->bio.iov = (struct iovec *)io->data;
		io->bio.iovcnt = (int)nv;
		for (unsigned int k = 0; k < nv; k++) {
			uint64_t left = l - (uint64_t)k * ZERO_CHUNK;

			io->bio.iov[k].iov_base = (void *)zero_chunk;
			io->bio.iov[k].iov_len = left < ZERO_CHUNK ? (size_t)left : ZERO_CHUNK;
		}
		ios[i] = io;
	}
	parent = ios[0];
	parent->pending = (int)nbios;
	for (unsigned int i = 0; i < nbios; i++)
		ios[i]->parent = parent;
	for (unsigned int i = 0; i < nbios; i++)
		queue_submit(&pd->q, &ios[i]->bio);
	free(ios);
	return;
nomem:
	if (ios)
		for (unsigned int i = 0; i < nbios; i++)
			free(ios[i]);
	free(ios);
	fuse_reply_err(req, ENOMEM);
}

static void pd_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);
	uint64_t end;

	(void)fi;
	if (ino != INO_DISK) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	end = (uint64_t)off + (uint64_t)len;
	if ((uint64_t)off >= pd->be.size) {
		fuse_reply_err(req, mode & FALLOC_FL_KEEP_SIZE ? 0 : ENOSPC);
		return;
	}
	if (end > pd->be.size)
		end = pd->be.size;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
		struct pd_io *io = pd_io_new(req, BIO_OP_DISCARD, (uint64_t)off, 0, 0);

		if (!io) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		/* Discards longer than a bio can say are clamped to 4 GiB - 4 KiB per call. */
		if (end - (uint64_t)off > UINT32_MAX - 4095)
			end = (uint64_t)off + UINT32_MAX - 4095;
		io->bio.len = (uint32_t)(end - (uint64_t)off);
		queue_submit(&pd->q, &io->bio);
		return;
	}
	if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE) {
		zero_range(pd, req, (uint64_t)off, end - (uint64_t)off);
		return;
	}
	if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE) {
		/* Every block of a disk already exists. */
		fuse_reply_err(req, 0);
		return;
	}
	fuse_reply_err(req, EOPNOTSUPP);
}

const struct fuse_lowlevel_ops pd_fuse_ops = {
	.init = pd_init,
	.lookup = pd_lookup,
	.getattr = pd_getattr,
	.setattr = pd_setattr,
	.mknod = pd_mknod,
	.mkdir = pd_mkdir,
	.unlink = pd_unlink,
	.rmdir = pd_unlink,
	.symlink = pd_symlink,
	.rename = pd_rename,
	.link = pd_link,
	.create = pd_create,
	.open = pd_open,
	.read = pd_read,
	.write_buf = pd_write_buf,
	.flush = pd_flush,
	.release = pd_release,
	.fsync = pd_fsync,
	.readdir = pd_readdir,
	.statfs = pd_statfs,
	.fallocate = pd_fallocate,
};

/* ---- receive loop ---- */

static bool fuse_has_pending(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

/* A receive thread runs the I/O it dispatches itself (as blk-mq issues directly from the
 * submitter) unless that would leave FUSE requests waiting with no thread to read them: then
 * it hands the I/O to a worker and goes back for the next request. A FUSE request is left
 * waiting only when one is pending and every other receive thread is busy. */
static __thread bool tls_fuse_idle; /* this thread just saw no FUSE request left unread */

/* Another receive thread is in read(): the kernel hands it the next FUSE request. */
static bool pd_reader_waiting(struct pd *pd)
{
	return __atomic_load_n(&pd->readers_waiting, __ATOMIC_RELAXED) != 0;
}

static bool pd_may_run_inline(void *arg)
{
	struct pd *pd = arg;

	return tls_fuse_idle || pd_reader_waiting(pd) || !fuse_has_pending(pd->fuse_fd);
}

static void *pd_fuse_thread(void *arg)
{
	struct pd *pd = arg;
	struct fuse_session *se = pd->se;
	struct fuse_buf fbuf = { .mem = NULL };
	int fd = pd->fuse_fd;

	pthread_setname_np(pthread_self(), "plugdisk-fuse");
	ctrl_set_thread_inline(pd_may_run_inline, pd);
	tls_rxbuf = &fbuf;
	while (!fuse_session_exited(se)) {
		int res;

		/* Nothing more for this thread to submit: flush the plug before sleeping. When
		 * another receive thread waits in read(), the next request is its to submit, so
		 * this thread unplugs without asking the kernel: a poll() per request is a
		 * measurable part of a lone synchronous request's round trip. */
		if (queue_needs_unplug(&pd->q) && (pd_reader_waiting(pd) || !fuse_has_pending(fd))) {
			tls_fuse_idle = true; /* spares pd_may_run_inline() a second poll */
			queue_unplug_idle(&pd->q);
			tls_fuse_idle = false;
		}
		if (!fbuf.mem)
			fbuf.mem = pd_bigbuf_get(pd);
		__atomic_add_fetch(&pd->readers_waiting, 1, __ATOMIC_RELAXED);
		res = fuse_session_receive_buf(se, &fbuf);
		__atomic_sub_fetch(&pd->readers_waiting, 1, __ATOMIC_RELAXED);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0) {
			if (res < 0 && res != -ENODEV)
				log_err("fuse_session_receive_buf: %s", strerror(-res));
			break;
		}
		fuse_session_process_buf(se, &fbuf);
	}
	tls_rxbuf = NULL;
	free(fbuf.mem);
	/* The kernel ended the session (unmounted from outside): tell the main thread. */
	if (!__atomic_load_n(&pd->stopping, __ATOMIC_RELAXED))
		kill(getpid(), SIGTERM);
	return NULL;
}

static void wake_handler(int sig)
{
	(void)sig;
}

int pd_fuse_start(struct pd *pd)
{
	struct sigaction sa = { .sa_handler = wake_handler };

	/* SIGUSR1 interrupts a blocked receive at shutdown (no SA_RESTART). */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pd->fuse_fd = fuse_session_fd(pd->se);
	pd->threads = calloc(pd->nr_threads, sizeof(*pd->threads));
	if (!pd->threads)
		return -ENOMEM;
	for (unsigned int i = 0; i < pd->nr_threads; i++) {
		int err = pthread_create(&pd->threads[i], NULL, pd_fuse_thread, pd);

		if (err) {
			log_err("pthread_create (fuse): %s", strerror(err));
			pd->nr_threads = i;
			return -err;
		}
	}
	return 0;
}

void pd_fuse_join(struct pd *pd)
{
	/* A thread can miss one signal between its exit check and its read(): keep poking
	 * each thread until it is gone. */
	for (unsigned int i = 0; i < pd->nr_threads; i++) {
		for (;;) {
			struct timespec ts;

			pthread_kill(pd->threads[i], SIGUSR1);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (pthread_timedjoin_np(pd->threads[i], NULL, &ts) == 0)
				break;
		}
	}
	free(pd->threads);
	pd->threads = NULL;
	pd->nr_threads = 0;
}
