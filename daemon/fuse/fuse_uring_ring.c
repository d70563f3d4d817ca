// SPDX-License-Identifier: MIT
/* FUSE over io_uring, the data path: the session's read and writev, and the commits that
 * give each entry its reply and fetch its next request. The ring threads that hand requests
 * to libfuse are in fuse_uring_thread.c; setup, start and stop in fuse_uring.c.
 *
 * Requests. The kernel puts a request in an entry of the queue of the CPU that sent it and
 * completes the entry's command; the queue's ring thread sees the CQE. The disk's reads and
 * writes, nearly all the traffic, do not go through libfuse: pd_disk_ring_rw() (data.c)
 * makes a bio of the entry's own pd_io, its data in the entry's payload (a read reads into
 * it, a write's data is where the kernel put it), and the completion answers into the entry
 * (pd_uring_answer()): no allocation, no copy, no search for the entry. Any other request is
 * rebuilt as libfuse expects it (fuse_in_header, fixed argument, payload: contiguous, the
 * header copied in front of the payload, which stays where the kernel wrote it) and handed
 * to fuse_session_process_buf(), after its unique is recorded in held[] for the entry.
 *
 * Replies. Whoever completes a request (the ring thread inline, a backend worker, the timer
 * thread) answers it: a disk read or write by pd_uring_answer(), anything else by
 * fuse_reply_*(), which ends in ring_writev(). That looks the unique up in held[] and claims
 * the entry with a compare-and-swap to 0, so exactly one reply gets it without a lock; a
 * unique not held belongs to a request read from /dev/fuse and is written there. The reply
 * goes into the entry's header and payload and is committed with COMMIT_AND_FETCH, which
 * also gives the entry back for the next request.
 *
 * Who commits. The kernel delivers an idle entry's next request through task work of the
 * thread that submitted the entry's last command. Were a worker to commit, the worker would
 * be woken just to copy the next request in, and a worker busy in a slow pwritev would hold
 * it up. So while the ring thread runs, only it submits: the queue's own thread commits its
 * replies at once, and any other thread pushes the entry on the queue's lock-free list of
 * replies (q->replies) and, when the list was empty, writes the queue's eventfd, which the
 * ring thread always has a read of in flight. The ring thread takes the whole list at each
 * turn of its loop and commits it with one submission: under load, one system call commits
 * many replies. fuse_ring_commit_waits counts the pushes that had to wake it. The ring
 * thread's own commits are only filled in the SQ: they go in with its next wait
 * (io_uring_submit_and_wait()), or once RING_COMMIT_BATCH of them wait, so that a turn of
 * the loop costs one system call, not one per reply. Filling and submitting take the
 * queue's sq_lock, which the wait holds too; only the stop contends for it, and the stop
 * wakes the thread first (at stop, the replies of requests still in flight are committed
 * by whoever sends them).
 *
 * Lock order: u->lock, then a queue's sq_lock (never taken together in practice); neither
 * is held across a FUSE request's processing. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/fuse_reply.h"
#include "daemon/fuse/fuse_uring.h"
#include "daemon/fuse/fuse_uring_int.h"

void ring_set_state(struct pd_uring *u, enum ring_state st, int error)
{
	pthread_mutex_lock(&u->lock);
	if (u->state == RS_WAIT_INIT || u->state == RS_REGISTERING) {
		u->state = st;
		if (error && !u->error)
			u->error = error;
	}
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* ---- submitting commands ---- */

/* The ring thread of the queue the calling thread serves, or NULL. */
static __thread struct ring_queue *tls_ring_q;

void ring_bind_thread(struct ring_queue *q)
{
	tls_ring_q = q;
}

/* Fill one command for @e in its queue's SQ. sq_lock held. 0 or -EBUSY. */
static int ring_prep(struct ring_ent *e, unsigned int cmd, uint64_t commit_id)
{
	struct ring_queue *q = e->q;
	struct io_uring_sqe *sqe;
	struct pd_fuse_uring_cmd_req *req;

	e->last_cmd = cmd;
	e->last_commit_id = commit_id;
	/* At most one command per entry is outstanding, and every one is submitted before
	 * sq_lock is let go: the SQ (depth + 1 entries, with the eventfd's read) has room. */
	sqe = io_uring_get_sqe(&q->ring);
	if (!sqe) {
		log_err("io_uring_get_sqe: the ring of queue %u is full", q->qid);
		return -EBUSY;
	}
	memset(sqe, 0, 2 * sizeof(*sqe)); /* SQE128: the command area follows */
	sqe->opcode = IORING_OP_URING_CMD;
	/* The fd, not a registered file: a registered /dev/fuse would stay open until the
	 * ring's teardown, which the kernel finishes later, so a daemon killed by SIGKILL would
	 * leave its connection alive for a while, and a restart would find a live mount. */
	sqe->fd = q->u->fd;
	sqe->cmd_op = cmd;
	sqe->user_data = (uint64_t)(uintptr_t)e;
	if (cmd == PD_FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = 2;
	}
	req = (struct pd_fuse_uring_cmd_req *)sqe->cmd;
	req->qid = (uint16_t)q->qid;
	req->commit_id = commit_id;
	return 0;
}

/* Submit what was filled. sq_lock held. 0 or -errno (logged). */
int ring_flush(struct ring_queue *q)
{
	int ret;

	do
		ret = io_uring_submit(&q->ring);
	while (ret == -EINTR);
	if (ret < 0) {
		log_err("io_uring_submit (FUSE queue %u): %s", q->qid, strerror(-ret));
		return ret;
	}
	return 0;
}

/* Fill and submit one command for @e. 0 or -errno. */
int ring_submit(struct ring_ent *e, unsigned int cmd, uint64_t commit_id)
{
	struct ring_queue *q = e->q;
	int ret;

	pthread_mutex_lock(&q->sq_lock);
	ret = ring_prep(e, cmd, commit_id);
	if (!ret)
		ret = ring_flush(q);
	pthread_mutex_unlock(&q->sq_lock);
	return ret;
}

void ring_commit_replies(struct ring_queue *q)
{
	struct ring_ent *e;

	/* A plain look first: the ring thread comes here at every turn of its loop, most
	 * often to an empty list. */
	if (!READ_ONCE(q->replies))
		return;
	/* Pairs with the release of the pushes in ring_commit(). */
	e = xchg_acquire(q->replies, NULL);
	if (!e)
		return;
	pthread_mutex_lock(&q->sq_lock);
	for (; e; e = e->next_reply)
		ring_prep(e, PD_FUSE_IO_URING_CMD_COMMIT_AND_FETCH, e->last_commit_id);
	if (tls_ring_q != q)
		ring_flush(q);
	pthread_mutex_unlock(&q->sq_lock);
}


/* Have @e's reply (already in the entry) committed: at once by the queue's own thread, or
 * after the ring threads stopped; else by the ring thread, woken if it may sleep. */
static int ring_commit(struct ring_ent *e, uint64_t commit_id)
{
	struct ring_queue *q = e->q;
	bool stopping = smp_load_mb(q->u->stopping);
	struct ring_ent *old;
	uint64_t one = 1;
	int ret;

	if (tls_ring_q == q && !stopping) {
		/* Filled only: the ring thread submits it with its next wait (ring_loop()). */
		pthread_mutex_lock(&q->sq_lock);
		ret = ring_prep(e, PD_FUSE_IO_URING_CMD_COMMIT_AND_FETCH, commit_id);
		pthread_mutex_unlock(&q->sq_lock);
		return ret;
	}
	if (tls_ring_q == q || stopping)
		return ring_submit(e, PD_FUSE_IO_URING_CMD_COMMIT_AND_FETCH, commit_id);
	e->last_commit_id = commit_id;
	old = READ_ONCE(q->replies);
	/* Releases the reply to the acquire in ring_commit_replies(); _mb for the stopping
	 * handshake below. */
	do
		e->next_reply = old;
	while (!cmpxchg_weak_mb(q->replies, old, e));
	if (!old) {
		/* The list was empty: the ring thread may be asleep. */
		atomic_add_return_relaxed(q->u->commit_waits, 1);
		if (write(q->evfd, &one, sizeof(one)) != sizeof(one))
			log_err("write (eventfd of FUSE queue %u): %m", q->qid);
	}
	/* The ring threads stopped meanwhile: commit what they left (pd_uring_stop() does the
	 * same after setting stopping, so one of the two sees the other's write). */
	if (smp_load_mb(q->u->stopping))
		ring_commit_replies(q);
	return 0;
}

/* ---- the session's I/O ---- */

ssize_t ring_read(int fd, void *buf, size_t len, void *userdata)
{
	struct pd *pd = userdata;
	struct pd_uring *u = pd->uring;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;

	if (n > 0) {
		int saved = errno;

		pd_reply_note_read(pd, buf, n);
		errno = saved;
	}

	if (n >= (ssize_t)(sizeof(*in) + sizeof(struct fuse_init_in)) && in->opcode == FUSE_INIT) {
		const struct fuse_init_in *ii = (const void *)(in + 1);
		uint64_t flags = ii->flags;

		if (flags & FUSE_INIT_EXT)
			flags |= (uint64_t)ii->flags2 << 32;
		WRITE_ONCE(u->kernel_offers, (flags & PD_FUSE_OVER_IO_URING) != 0);
		/* Pairs with the acquire in ring_writev(): the offer is seen with the unique. */
		smp_store_release(u->init_unique, in->unique);
	}
	return n;
}

static size_t iov_total(const struct iovec *iov, int count)
{
	size_t len = 0;

	for (int i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/* Claim the entry that holds the request @unique: its index, or -1 if no entry holds it.
 * A ring thread looks at its own queue's entries first: it sends the replies of the requests
 * it handles, and the other queues' part of held[] is written by their threads, so that
 * reading it costs a cache miss per line. */
static long ring_claim(struct pd_uring *u, uint64_t unique)
{
	unsigned int n = u->nr_queues * u->depth;
	unsigned int first = tls_ring_q ? tls_ring_q->qid * u->depth : 0;

	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = first + k < n ? first + k : first + k - n;
		uint64_t v = unique;

		/* Pairs with the release in ring_handle(): the entry is seen with its request. */
		if (READ_ONCE(u->held[i]) == unique && cmpxchg_acquire(u->held[i], v, 0))
			return (long)i;
	}
	return -1;
}

static struct ring_ent *ring_ent_at(struct pd_uring *u, unsigned int idx)
{
	return &u->queues[idx / u->depth].ent[idx % u->depth];
}

/* Give @e its reply: the header @out, with @len bytes of the reply's argument already in the
 * entry's payload; then commit it. 0 or -errno. */
static int ring_answer(struct ring_ent *e, struct fuse_out_header out, size_t len)
{
	out.len = (uint32_t)(sizeof(out) + len);
	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)len;
	return ring_commit(e, out.unique);
}

void pd_uring_answer(struct ring_ent *e, int error, const void *arg, uint32_t len)
{
	/* The kernel's header, ours until the commit, still quotes the request's unique. */
	struct fuse_out_header out = { .error = error,
				       .unique = e->hdr->ring_ent_in_out.commit_id };

	if (error)
		len = 0;
	else if (arg)
		memcpy(e->buf + RING_ROOM, arg, len);
	ring_answer(e, out, len);
}

/* Put the reply @iov into @e and commit it. */
ssize_t ring_reply(struct pd_uring *u, struct ring_ent *e, const struct iovec *iov,
		   int count)
{
	struct fuse_out_header out = *(const struct fuse_out_header *)iov[0].iov_base;
	char *payload = e->buf + RING_ROOM;
	size_t len = 0;

	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > u->payload_size - len) {
			log_err("FUSE reply of %zu bytes does not fit a ring entry",
				iov_total(iov, count));
			out.error = -EIO;
			len = 0;
			break;
		}
		memcpy(payload + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	if (ring_answer(e, out, len)) {
		errno = EIO;
		return -1;
	}
	return (ssize_t)iov_total(iov, count);
}

/* Write the FUSE_INIT reply, accepting FUSE_OVER_IO_URING when the kernel offered it. */
static ssize_t ring_init_reply(struct pd_uring *u, int fd, struct iovec *iov, int count)
{
	struct fuse_out_header *out = iov[0].iov_base;
	struct fuse_init_out io;
	struct iovec v[2];
	bool accept = READ_ONCE(u->kernel_offers) && !out->error &&
		      count == 2 && iov[1].iov_len >= offsetof(struct fuse_init_out, unused) &&
		      iov[1].iov_len <= sizeof(io);
	ssize_t n;

	pthread_mutex_lock(&u->lock);
	accept = accept && u->state == RS_WAIT_INIT;
	pthread_mutex_unlock(&u->lock);

	if (!accept) {
		n = writev(fd, iov, count);
		ring_set_state(u, RS_CLASSIC, 0);
		return n;
	}
	memcpy(&io, iov[1].iov_base, iov[1].iov_len);
	io.flags |= FUSE_INIT_EXT;
	io.flags2 |= (uint32_t)(PD_FUSE_OVER_IO_URING >> 32);
	v[0] = iov[0];
	v[1].iov_base = &io;
	v[1].iov_len = iov[1].iov_len;
	n = writev(fd, v, 2);
	if (n < 0) {
		int saved = errno;

		ring_set_state(u, RS_CLASSIC, 0);
		errno = saved;
		return n;
	}
	/* The kernel applied the reply before writev() returned: the connection is
	 * initialised and the entries may be registered. */
	pthread_mutex_lock(&u->lock);
	if (u->state == RS_WAIT_INIT)
		u->state = RS_REGISTERING;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	return n;
}

ssize_t ring_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct pd *pd = userdata;
	struct pd_uring *u = pd->uring;
	const struct fuse_out_header *out = iov[0].iov_base;
	long idx;

	pd_reply_patch(pd, iov, count);
	if (count < 1 || iov[0].iov_len < sizeof(*out))
		return writev(fd, iov, count);
	if (out->unique) {
		idx = ring_claim(u, out->unique);
		if (idx >= 0)
			return ring_reply(u, ring_ent_at(u, (unsigned int)idx), iov, count);
		/* Pairs with the release in ring_read(). */
		if (out->unique == smp_load_acquire(u->init_unique))
			return ring_init_reply(u, fd, iov, count);
	}
	return writev(fd, iov, count);
}
