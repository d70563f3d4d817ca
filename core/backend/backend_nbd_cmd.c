// SPDX-License-Identifier: MIT
/* The NBD backend's commands: a request becomes NBD commands on a connection, and their
 * replies end it.
 *
 * nb_exec (an I/O stage, core/stage/request.h) runs in whatever thread the controller dispatches from:
 * it turns the request into one or more NBD commands (a request above the server's maximum
 * is split; a request of several buffers goes through one bounce buffer), starts them with
 * nbd_aio_pread/pwrite/flush/trim/zero on the least busy connection and returns IO_ASYNC. No
 * thread waits for a command. A write of nothing but backend_zero_chunk (fallocate
 * ZERO_RANGE) becomes WRITE_ZEROES where the server has it, else a write. libnbd calls a
 * completion callback with its handle lock held, so the callback only queues the command on
 * its connection's done list; the loop thread then ends the request through rq->io_done with
 * no lock held. A write is acknowledged when the server's reply to it arrived, never earlier.
 *
 * Lifetime of a command. A struct nbd_cmd has up to three references: libnbd's (taken when
 * it is handed to libnbd, dropped by the closure's free callback, which libnbd always calls
 * exactly once), the in-flight list's (taken when it is linked, dropped once it is unlinked)
 * and the done list's (taken by the completion callback). Whoever first sets cmd->finished
 * ends it: the callback's result, EIO when the connection is dropped, or the error of a start
 * that failed (cmd_issue()). A deferred command is linked but not yet libnbd's.
 *
 * Locking: core/backend/backend_nbd_int.h. */
#include <errno.h>
#include <libnbd.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/backend_nbd_int.h"
#include "core/util/barrier.h"
#include "core/util/clock.h"
#include "core/util/full_rw.h"
#include "core/util/log.h"

/* An error of the connection rather than of the command: the caller sees EIO. */
static int map_errno(int err)
{
	switch (err) {
	case 0:
		return EIO;
	case ENOTCONN:
	case ECONNRESET:
	case ECONNABORTED:
	case ECONNREFUSED:
	case EPIPE:
	case ESHUTDOWN:
	case ETIMEDOUT:
	case EBADF:
	case EINPROGRESS:
		return EIO;
	default:
		return err;
	}
}

void nb_cmd_put(struct nbd_cmd *cmd)
{
	if (atomic_sub_return_acq_rel(cmd->refs, 1) == 0)
		free(cmd);
}

/* Every command of @io ended: copy a read out of its bounce buffer and free @io. Returns the
 * request's result, 0 or -errno. */
static int io_finish(struct nbd_io *io)
{
	struct request *rq = io->rq;
	int error = smp_load_acquire(io->error); /* pairs with io_part_done's exchange */

	if (!error && io->bounce && rq->op == BIO_OP_READ)
		rq_copy(rq, 0, io->bounce, rq->len, true);
	free(io->bounce);
	free(io);
	return error;
}

/* End @io asynchronously: report to the controller. */
static void io_end(struct nbd_io *io)
{
	struct request *rq = io->rq;

	rq->io_done(rq, io_finish(io));
}

/* One part of @io ended with @err (-errno or 0). Whether it was the last. */
static bool io_part_done(struct nbd_io *io, int err)
{
	if (err) {
		int zero = 0;

		/* The first error wins. Raw: core/util/barrier.h has no compare-and-swap with this
		 * ordering (acq_rel, acquire on failure). */
		__atomic_compare_exchange_n(&io->error, &zero, err, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
	return atomic_sub_return_acq_rel(io->parts, 1) == 0;
}

/* End @cmd once, with @err (-errno or 0). No lock held: may end its request. */
/* *@x = max(*@x, @v), atomically. */
static void atomic_max_u64(uint64_t *x, uint64_t v)
{
	uint64_t old = READ_ONCE(*x);

	while (old < v && !cmpxchg_weak_mb(*x, old, v))
		;
}

void nb_cmd_finish(struct nbd_cmd *cmd, int err)
{
	struct nbd_be *nb = cmd->conn->nb;

	/* Raw: core/util/barrier.h has no acq_rel exchange (xchg_acquire only acquires). */
	if (__atomic_exchange_n(&cmd->finished, 1, __ATOMIC_ACQ_REL))
		return;
	/* Numbered before the host hears of it (seq_cst: a flush started after this sees it,
	 * and a drop that reads last_write reads it with the flushes that cover it). */
	if (!err && (cmd->io->rq->op == BIO_OP_WRITE || cmd->io->rq->op == BIO_OP_DISCARD))
		atomic_max_u64(&cmd->conn->last_write, atomic_add_return_mb(nb->wseq, 1));
	else if (!err && cmd->io->rq->op == BIO_OP_FLUSH)
		atomic_max_u64(&nb->flushed, cmd->covers);
	if (io_part_done(cmd->io, err))
		io_end(cmd->io);
}

static void cmd_unlink(struct nbd_conn *c, struct nbd_cmd *cmd)
{
	if (cmd->prev)
		cmd->prev->next = cmd->next;
	else
		c->head = cmd->next;
	if (cmd->next)
		cmd->next->prev = cmd->prev;
	else
		c->tail = cmd->prev;
	cmd->prev = cmd->next = NULL;
	cmd->linked = false;
	WRITE_ONCE(c->in_flight, c->in_flight - 1);
}

/* libnbd's completion callback, with the handle lock held: queue @cmd for the loop. */
static int cmd_complete_cb(void *user_data, int *error)
{
	struct nbd_cmd *cmd = user_data;
	struct nbd_conn *c = cmd->conn;

	atomic_add_return_relaxed(cmd->refs, 1); /* the done list's */
	pthread_mutex_lock(&c->done_lock);
	cmd->error = *error;
	cmd->done_next = NULL;
	if (c->done_tail)
		c->done_tail->done_next = cmd;
	else
		c->done_head = cmd;
	c->done_tail = cmd;
	pthread_mutex_unlock(&c->done_lock);
	nb_conn_wake(c);
	return 1; /* retire the command */
}

static void cmd_free_cb(void *user_data)
{
	nb_cmd_put(user_data);
}

/* The connection to start a command on: the up one with the fewest commands in flight. */
static struct nbd_conn *nb_pick(struct nbd_be *nb)
{
	struct nbd_conn *best = NULL;
	unsigned int best_n = 0;

	for (unsigned int i = 0; i < nb->nconns; i++) {
		struct nbd_conn *c = &nb->conns[i];
		unsigned int n;

		if (smp_load_acquire(c->state) != CONN_UP)
			continue;
		n = READ_ONCE(c->in_flight);
		if (!best || n < best_n) {
			best = c;
			best_n = n;
		}
	}
	return best;
}

/* Hand @cmd (linked) to libnbd. conn->lock held. 0, or -errno: not started, unlinked, and
 * its in-flight reference left to the caller, who ends its part. */
static int cmd_issue(struct nbd_conn *c, struct nbd_cmd *cmd)
{
	struct nbd_io *io = cmd->io;
	nbd_completion_callback cb;
	int64_t r;

	if (!c->h || READ_ONCE(c->state) != CONN_UP) {
		r = -EIO;
		goto fail;
	}
	atomic_add_return_relaxed(cmd->refs, 1); /* libnbd's closure */
	cb = (nbd_completion_callback){ .callback = cmd_complete_cb, .user_data = cmd,
					.free = cmd_free_cb };
	switch (io->rq->op) {
	case BIO_OP_READ:
		r = nbd_aio_pread(c->h, cmd->buf, cmd->len, cmd->off, cb, 0);
		break;
	case BIO_OP_WRITE:
		if (io->zero)
			r = nbd_aio_zero(c->h, cmd->len, cmd->off, cb, 0);
		else
			r = nbd_aio_pwrite(c->h, cmd->buf, cmd->len, cmd->off, cb, 0);
		break;
	case BIO_OP_FLUSH:
		r = nbd_aio_flush(c->h, cb, 0);
		break;
	default:
		r = nbd_aio_trim(c->h, cmd->len, cmd->off, cb, 0);
		break;
	}
	if (r >= 0)
		return 0;
	/* Not started: libnbd already called the free callback. A handle that died while the
	 * loop thread read (the server went away) refuses commands with EINVAL, the misaligned
	 * request's errno: the caller gets EIO. */
	if (nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h))
		r = -EIO;
	else
		r = -map_errno(nbd_get_errno());
fail:
	cmd_unlink(c, cmd);
	smp_store_release(cmd->finished, 1);
	return (int)r;
}

/* Start one NBD command for @len bytes of @io at @off, @buf its data; or, while the loop
 * thread is in libnbd, leave it for the loop thread to start. conn->lock held. Returns 0
 * (it ends through the callback or nb_conn_drop) or -errno (not started; the caller ends the
 * part). */
static int cmd_start(struct nbd_conn *c, struct nbd_io *io, uint64_t off, uint64_t len,
		     char *buf)
{
	struct nbd_cmd *cmd = calloc(1, sizeof(*cmd));
	int ret;

	if (!cmd)
		return -ENOMEM;
	cmd->io = io;
	cmd->conn = c;
	cmd->off = off;
	cmd->len = len;
	cmd->buf = buf;
	cmd->start_ns = clock_now_ns();
	cmd->refs = 1; /* the in-flight list's */
	if (io->rq->op == BIO_OP_FLUSH)
		cmd->covers = smp_load_mb(c->nb->wseq); /* pairs with nb_cmd_finish() */
	cmd->prev = c->tail;
	if (c->tail)
		c->tail->next = cmd;
	else
		c->head = cmd;
	c->tail = cmd;
	cmd->linked = true;
	WRITE_ONCE(c->in_flight, c->in_flight + 1);
	if (READ_ONCE(c->busy)) {
		if (c->defer_tail)
			c->defer_tail->defer_next = cmd;
		else
			c->defer_head = cmd;
		c->defer_tail = cmd;
		WRITE_ONCE(c->deferred, c->deferred + 1);
		return 0;
	}
	ret = cmd_issue(c, cmd);
	if (ret)
		nb_cmd_put(cmd);
	return ret;
}

void nb_conn_busy(struct nbd_conn *c)
{
	/* Without the lock: a submitter that misses it only waits for libnbd's lock. */
	WRITE_ONCE(c->busy, true);
}

uint64_t nb_conn_process_done(struct nbd_conn *c)
{
	struct nbd_cmd *list, *failed = NULL, *cmd, *next;
	uint64_t oldest;

	pthread_mutex_lock(&c->done_lock);
	list = c->done_head;
	c->done_head = c->done_tail = NULL;
	pthread_mutex_unlock(&c->done_lock);
	/* End the replies first: the requests this dispatches start their commands after them
	 * (deferred while busy). The done list's reference keeps each command alive. */
	for (cmd = list; cmd; cmd = cmd->done_next)
		nb_cmd_finish(cmd, cmd->error ? -map_errno(cmd->error) : 0);
	/* One hold of the lock the submitters take: the ended commands off the in-flight list,
	 * the deferred ones started, and the oldest in flight for the timeout. */
	pthread_mutex_lock(&c->lock);
	for (cmd = list; cmd; cmd = cmd->done_next) {
		if (cmd->linked) {
			cmd_unlink(c, cmd);
			nb_cmd_put(cmd); /* the in-flight list's */
		}
	}
	for (cmd = c->defer_head; cmd; cmd = next) {
		int ret;

		next = cmd->defer_next;
		ret = cmd_issue(c, cmd);
		cmd->defer_next = NULL;
		if (ret) {
			/* Unlinked and finished: no callback writes the field any more. */
			cmd->error = ret;
			cmd->defer_next = failed;
			failed = cmd;
		}
	}
	c->defer_head = c->defer_tail = NULL;
	WRITE_ONCE(c->busy, false);
	oldest = c->head ? c->head->start_ns : 0;
	pthread_mutex_unlock(&c->lock);
	for (cmd = list; cmd; cmd = next) {
		next = cmd->done_next;
		nb_cmd_put(cmd); /* the done list's */
	}
	/* Ending a part may end its request, which may start more commands: no lock held. */
	for (cmd = failed; cmd; cmd = next) {
		next = cmd->defer_next;
		if (io_part_done(cmd->io, cmd->error))
			io_end(cmd->io);
		nb_cmd_put(cmd);
	}
	return oldest;
}

int nb_exec(void *arg, struct request *rq)
{
	struct backend *be = arg;
	struct nbd_be *nb = be->priv;
	struct nbd_conn *c;
	struct nbd_io *io;
	uint64_t off, left;
	unsigned int nparts = 1;
	char *p;
	int ret;
	bool wake;

	if (rq->op == BIO_OP_FLUSH && !nb->can_flush)
		return 0; /* no flush: the server has no cache, writes are stable when replied */
	if (rq->op == BIO_OP_FLUSH && xchg_acquire(nb->lost_writes, 0)) {
		log_err("nbd %s: flush: EIO: writes acknowledged on a connection that dropped "
			"before a flush were perhaps lost", nb->uri);
		return -EIO;
	}
	if (rq->op == BIO_OP_DISCARD && !nb->can_trim)
		return -EOPNOTSUPP;
	c = nb_pick(nb);
	if (!c) {
		atomic_add_return_relaxed(nb->failed_fast, 1);
		return -EIO;
	}
	io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->rq = rq;
	io->zero = nb->can_zero && backend_rq_is_zeroes(rq);
	if (io->zero) {
		/* no data to send */
	} else if (rq->op == BIO_OP_READ || rq->op == BIO_OP_WRITE) {
		if (rq->nr_iov == 1) {
			io->buf = rq->bio->iov[0].iov_base;
		} else {
			io->bounce = malloc(rq->len);
			if (!io->bounce) {
				free(io);
				return -ENOMEM;
			}
			io->buf = io->bounce;
			if (rq->op == BIO_OP_WRITE)
				rq_copy(rq, 0, io->bounce, rq->len, false);
		}
	}
	if (rq->op != BIO_OP_FLUSH && rq->len > nb->max_cmd)
		nparts = (unsigned int)((rq->len + nb->max_cmd - 1) / nb->max_cmd);
	io->parts = nparts + 1; /* +1 until every part is started */
	off = rq->offset;
	left = rq->len;
	p = io->buf;
	pthread_mutex_lock(&c->lock);
	for (unsigned int i = 0; i < nparts; i++) {
		uint64_t step = left > nb->max_cmd ? nb->max_cmd : left;

		if (!c->h || READ_ONCE(c->state) != CONN_UP)
			ret = -EIO;
		else
			ret = cmd_start(c, io, off, step, p);
		if (ret) {
			/* This part and the ones not started end now; the others as they come. */
			for (unsigned int k = i; k < nparts; k++)
				io_part_done(io, ret);
			break;
		}
		off += step;
		left -= step;
		if (p)
			p += step;
	}
	/* The loop thread must poll for the rest of the data if the socket did not take it
	 * all. (A loop with nothing in flight wakes every timeout_ms anyway: it notices this
	 * command's age in time without being woken for it. A busy loop thread looks at the
	 * handle's direction again before it polls.) */
	wake = !READ_ONCE(c->busy) && c->h &&
	       (nbd_aio_get_direction(c->h) & LIBNBD_AIO_DIRECTION_WRITE);
	pthread_mutex_unlock(&c->lock);
	if (wake)
		nb_conn_wake(c); /* the rest of the data goes out when the socket takes it */
	if (!io_part_done(io, 0))
		return IO_ASYNC;
	/* Every command ended already (a quick server, or nothing could be started): end the
	 * request here, synchronously, read data copied out and all. */
	return io_finish(io);
}

/* A flush outside the queue (at stop). */
int nb_sync(struct backend *be)
{
	struct request rq;
	int ret;

	memset(&rq, 0, sizeof(rq));
	rq.op = BIO_OP_FLUSH;
	ret = io_exec_wait(backend_exec, be, &rq);
	if (ret)
		log_err("nbd %s: flush: %s", be->path, strerror(-ret));
	return ret;
}
