// SPDX-License-Identifier: MIT
/* FUSE over io_uring, the data path: the session's read and writev, the ring threads that
 * hand requests to libfuse, and the commits that give each entry its reply and fetch its
 * next request. Setup, start and stop are in fuse_uring.c.
 *
 * Requests. The kernel puts a request in an entry of the queue of the CPU that sent it and
 * completes the entry's command; the queue's ring thread sees the CQE, rebuilds the request
 * as libfuse expects it (fuse_in_header, fixed argument, payload: contiguous, the header
 * copied in front of the payload, which stays where the kernel wrote it) and hands it to
 * fuse_session_process_buf(). Before that it records the request's unique in held[] for the
 * entry.
 *
 * Replies. Whoever completes a request (the ring thread inline, a backend worker, the timer
 * thread) calls fuse_reply_*(), which ends in ring_writev(). That looks the unique up in
 * held[] and claims the entry with a compare-and-swap to 0, so exactly one reply gets it
 * without a lock; a unique not held belongs to a request read from /dev/fuse and is written
 * there. The reply goes into the entry's header and payload and is committed with
 * COMMIT_AND_FETCH, which also gives the entry back for the next request.
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
 * Affinity. The kernel queues a request on the queue of the CPU that sent it, and delivers
 * it by task work of the thread that submitted the entry's command: each ring thread is
 * pinned to its queue's CPU, so the delivery needs no cross-CPU wake-up.
 *
 * The plug. A ring thread has nothing more to submit when its CQ is empty: before it waits
 * for the next CQE it flushes the queue's plug, as a classic receive thread does before it
 * blocks in read(). It runs backing I/O inline when the backing store answers in a few
 * microseconds (the controller's recent average, ctrl_issue()); otherwise only while its
 * CQ is empty, so that a slow store does not hold up the requests the ring delivered.
 *
 * The policy. Under load a ring thread runs under SCHED_BATCH, so that the thread whose
 * request wakes it (fio on the disk file, a loop device's worker) is not preempted by it and
 * goes on submitting until it blocks; the ring thread then finds a full CQ instead of one
 * request per wake-up. Direct I/O on the file at queue depth 32 gains a tenth or more. A
 * woken SCHED_BATCH thread waits for a running task's slice, though, which would add to
 * each request's latency at queue depth 1 on a busy CPU: so the thread takes the policy
 * only while it handles at least RING_BATCH_ON requests per wake-up on average, and drops
 * it below RING_BATCH_OFF (ring_policy()).
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

static void ring_set_state(struct pd_uring *u, enum ring_state st, int error)
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
static int ring_flush(struct ring_queue *q)
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
static int ring_submit(struct ring_ent *e, unsigned int cmd, uint64_t commit_id)
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

/* The slot pd_uring_reply_hint() gave for this thread's next reply, 0 if none. */
static __thread unsigned int tls_reply_slot;

void pd_uring_reply_hint(unsigned int slot)
{
	tls_reply_slot = slot;
}

/* Claim the entry that holds the request @unique: its index, or -1 if no entry holds it.
 * The hinted entry first (the disk's reads and writes say where their request is); else a
 * ring thread looks at its own queue's entries first: it sends the replies of the requests
 * it ran inline, and the other queues' part of held[] is written by their threads, so that
 * reading it costs a cache miss per line. */
static long ring_claim(struct pd_uring *u, uint64_t unique)
{
	unsigned int n = u->nr_queues * u->depth;
	unsigned int first = tls_ring_q ? tls_ring_q->qid * u->depth : 0;
	unsigned int hint = tls_reply_slot;

	tls_reply_slot = 0;
	if (hint && hint <= n) {
		unsigned int i = hint - 1;
		uint64_t v = unique;

		/* Pairs with the release in ring_handle(), as below. */
		if (READ_ONCE(u->held[i]) == unique && cmpxchg_acquire(u->held[i], v, 0))
			return (long)i;
	}

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

/* Put the reply @iov into @e and commit it. */
static ssize_t ring_reply(struct pd_uring *u, struct ring_ent *e, const struct iovec *iov,
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
		/* A read's data may already be there (pd_uring_payload()). */
		if (iov[i].iov_base != payload + len)
			memmove(payload + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	out.len = (uint32_t)(sizeof(out) + len);
	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)len;
	if (ring_commit(e, out.unique)) {
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

/* ---- the ring threads ---- */

/* The entry whose request this ring thread is handing to libfuse, or NULL. */
static __thread struct ring_ent *tls_ring_ent;

void *pd_uring_payload(size_t *cap)
{
	struct ring_ent *e = tls_ring_ent;

	if (!e)
		return NULL;
	*cap = e->q->u->payload_size;
	return e->buf + RING_ROOM;
}

unsigned int pd_uring_slot(void)
{
	struct ring_ent *e = tls_ring_ent;

	return e ? e->idx + 1 : 0;
}

unsigned int pd_uring_max_background(struct pd *pd)
{
	struct pd_uring *u = pd->uring;
	bool ring;

	if (!u || !READ_ONCE(u->kernel_offers))
		return 0;
	pthread_mutex_lock(&u->lock);
	ring = u->state == RS_WAIT_INIT;
	pthread_mutex_unlock(&u->lock);
	/* A quarter of each queue stays for foreground requests. */
	return ring ? u->depth - u->depth / 4 : 0;
}

/* Hand the request in @e to libfuse. Ring thread. */
static void ring_handle(struct ring_queue *q, struct ring_ent *e)
{
	struct pd_uring *u = q->u;
	const struct fuse_in_header *in = (const void *)e->hdr->in_out;
	uint32_t psz = e->hdr->ring_ent_in_out.payload_sz;
	uint64_t id = e->hdr->ring_ent_in_out.commit_id;
	struct fuse_buf fb = { .size = 0 };
	size_t oplen = 0;
	char *start;

	if (in->len < sizeof(*in) + (uint64_t)psz || psz > u->payload_size ||
	    (oplen = in->len - sizeof(*in) - psz) > PD_FUSE_URING_OP_IN_OUT_SZ || id != in->unique) {
		struct fuse_out_header out = { .error = -EIO, .unique = id };
		struct iovec iov = { &out, sizeof(out) };

		log_err("FUSE io_uring: malformed request (len %u, payload %u, unique %llu)",
			in->len, psz, (unsigned long long)id);
		ring_reply(u, e, &iov, 1);
		return;
	}
	start = e->buf + RING_ROOM - oplen - sizeof(*in);
	memcpy(start, in, sizeof(*in));
	memcpy(start + sizeof(*in), e->hdr->op_in, oplen);
	fb.mem = start;
	fb.size = in->len;
	WRITE_ONCE(q->requests, q->requests + 1);
	/* Only the disk's reads and writes are quick to take in: anything else (a control
	 * command that waits, a flush) ends the burst of submissions (queue_burst()). */
	if ((in->opcode != FUSE_READ && in->opcode != FUSE_WRITE) || in->nodeid != INO_DISK)
		queue_burst(0);
	/* Pairs with the acquire of the claim in ring_claim(). */
	smp_store_release(u->held[e->idx], id);
	tls_ring_ent = e;
	fuse_session_process_buf(u->se, &fb);
	tls_ring_ent = NULL;
}

/* The ring thread may run backing I/O itself while no request waits in its CQ. */
static bool ring_may_run_inline(void *arg)
{
	struct ring_queue *q = arg;

	return io_uring_cq_ready(&q->ring) == 0;
}

/* Fill a read of the queue's eventfd: its completion wakes the ring thread for replies
 * pushed by other threads, or for the stop. sq_lock held. 0 or -EBUSY. */
static int ring_arm_eventfd(struct ring_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	io_uring_prep_read(sqe, q->evfd, &q->evbuf, sizeof(q->evbuf), 0);
	sqe->user_data = EVFD_TAG;
	return 0;
}

/* Register every entry of @q; report the outcome. 0 or -errno. */
static int ring_register(struct ring_queue *q)
{
	struct pd_uring *u = q->u;
	int ret = 0;

	for (unsigned int i = 0; i < u->depth && !ret; i++)
		ret = ring_submit(&q->ent[i], PD_FUSE_IO_URING_CMD_REGISTER, 0);
	if (!ret) {
		pthread_mutex_lock(&q->sq_lock);
		ret = ring_arm_eventfd(q);
		if (!ret)
			ret = ring_flush(q);
		pthread_mutex_unlock(&q->sq_lock);
	}
	return ret;
}

/* A registration fails synchronously: its CQE is posted before io_uring_enter() returns.
 * Look at what came back so far; a failed one is an error, anything else stays for the
 * loop. Returns 0 or the first registration error. */
static int ring_register_errors(struct ring_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;
	int err = 0;

	io_uring_for_each_cqe(&q->ring, head, cqe) {
		if (cqe->user_data != EVFD_TAG && cqe->res < 0 && !err)
			err = cqe->res;
		seen++;
	}
	if (err)
		io_uring_cq_advance(&q->ring, seen);
	return err;
}

/* Requests per wake-up (running average) above which a ring thread runs under SCHED_BATCH,
 * and below which it goes back to SCHED_OTHER. */
#define RING_BATCH_ON 4
#define RING_BATCH_OFF 2

/* Before the ring thread waits: average the requests it handled since it last woke, and
 * switch its scheduling policy when the average crosses a bound (see "The policy"). */
static void ring_policy(struct ring_queue *q)
{
	struct sched_param sp = { .sched_priority = 0 };
	bool want;

	q->per_wake16 = q->per_wake16 - q->per_wake16 / 8 + q->woke_with * 2;
	q->woke_with = 0;
	if (q->policy_failed)
		return;
	want = q->batch_policy ? q->per_wake16 >= RING_BATCH_OFF * 16
			       : q->per_wake16 >= RING_BATCH_ON * 16;
	if (want == q->batch_policy)
		return;
	if (sched_setscheduler(0, want ? SCHED_BATCH : SCHED_OTHER, &sp)) {
		static bool logged; /* any ring thread: a lost race only logs twice */

		/* The service's system call filter refuses it, for one: expected, so info. */
		if (!READ_ONCE(logged)) {
			WRITE_ONCE(logged, true);
			log_info("sched_setscheduler: %m; the FUSE io_uring threads stay under "
				 "SCHED_OTHER");
		}
		q->policy_failed = true;
		return;
	}
	q->batch_policy = want;
}

static void ring_loop(struct ring_queue *q)
{
	struct pd_uring *u = q->u;
	struct pd *pd = u->pd;
	unsigned int live = u->depth;

	for (;;) {
		struct io_uring_cqe *cqe;
		struct ring_ent *e;
		int res, ret;

		ring_commit_replies(q);
		if (io_uring_peek_cqe(&q->ring, &cqe)) {
			/* The ring delivered nothing more: flush the plug before sleeping. */
			queue_burst(0);
			if (queue_needs_unplug(&pd->q))
				queue_unplug_idle(&pd->q);
			/* Replies the unplug's inline I/O left for us. */
			ring_commit_replies(q);
			ring_policy(q);
			/* Every commit filled since the last wait goes in with this one. */
			pthread_mutex_lock(&q->sq_lock);
			ret = io_uring_submit_and_wait(&q->ring, 1);
			pthread_mutex_unlock(&q->sq_lock);
			if (ret == -EINTR)
				continue;
			if (ret < 0) {
				log_err("io_uring_submit_and_wait (FUSE queue %u): %s", q->qid,
					strerror(-ret));
				return;
			}
			if (io_uring_peek_cqe(&q->ring, &cqe))
				continue;
			/* Woken: what the ring delivered came in now, stamped with one clock
			 * read (queue_burst()). */
			queue_burst(clock_now_ns());
		}
		res = cqe->res;
		e = (struct ring_ent *)(uintptr_t)cqe->user_data;
		io_uring_cqe_seen(&q->ring, cqe);
		if ((uintptr_t)e == EVFD_TAG) {
			if (smp_load_mb(u->stopping)) {
				/* Replies this thread filled since its last wait (requests it ran
				 * inline, committed before it saw stopping) go out now: nobody
				 * else submits this SQ unless a commit of its own comes. */
				pthread_mutex_lock(&q->sq_lock);
				if (io_uring_sq_ready(&q->ring))
					ring_flush(q);
				pthread_mutex_unlock(&q->sq_lock);
				return;
			}
			/* The read goes in with the next submission, before the thread waits. */
			pthread_mutex_lock(&q->sq_lock);
			ret = ring_arm_eventfd(q);
			pthread_mutex_unlock(&q->sq_lock);
			if (ret) {
				log_err("FUSE io_uring queue %u: cannot wait for replies", q->qid);
				return;
			}
			continue; /* the replies are committed at the top of the loop */
		}
		if (res == 0) {
			q->woke_with++;
			ring_handle(q, e);
			/* Under a steady stream the CQ may not run dry for a while: commits
			 * are not held back for longer than a batch. */
			if (io_uring_sq_ready(&q->ring) >= RING_COMMIT_BATCH) {
				pthread_mutex_lock(&q->sq_lock);
				ring_flush(q);
				pthread_mutex_unlock(&q->sq_lock);
			}
			continue;
		}
		if (res == -EAGAIN || res == -EINTR) {
			ring_submit(e, e->last_cmd, e->last_commit_id);
			continue;
		}
		/* The entry is gone: the connection ended (-ENOTCONN, -ECONNABORTED), or the
		 * kernel refused the command. The thread stays for the stop. */
		if (res != -ENOTCONN && res != -ECONNABORTED && res != -ECANCELED)
			log_err("FUSE io_uring queue %u: command %u: %s", q->qid, e->last_cmd,
				strerror(-res));
		live--;
		if (!live && res != -ENOTCONN && res != -ECONNABORTED)
			log_warn("FUSE io_uring queue %u has no entry left", q->qid);
	}
}

/* The kernel queues a request on the queue of the CPU that sent it and delivers it through
 * task work of the ring thread: a thread on that CPU takes it without a cross-CPU wake-up.
 * A CPU that is offline or outside the daemon's allowed set leaves the thread unpinned. */
static void ring_pin(struct ring_queue *q)
{
	cpu_set_t allowed, one;
	int ret;

	if (pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed) ||
	    q->qid >= CPU_SETSIZE || !CPU_ISSET(q->qid, &allowed))
		return;
	CPU_ZERO(&one);
	CPU_SET(q->qid, &one);
	ret = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	if (ret)
		log_warn("pthread_setaffinity_np (FUSE queue %u): %s", q->qid, strerror(ret));
}

void *ring_thread(void *arg)
{
	struct ring_queue *q = arg;
	struct pd_uring *u = q->u;
	char name[16];
	int ret;

	snprintf(name, sizeof(name), "plugdisk-ring%u", q->qid);
	pthread_setname_np(pthread_self(), name);
	ring_pin(q);
	ctrl_set_thread_inline(ring_may_run_inline, q);
	queue_set_unplugs_idle(true);
	tls_ring_q = q;

	pthread_mutex_lock(&u->lock);
	while (u->state == RS_WAIT_INIT && !u->stop)
		pthread_cond_wait(&u->cond, &u->lock);
	ret = u->state == RS_REGISTERING && !u->stop;
	pthread_mutex_unlock(&u->lock);
	if (!ret)
		return NULL;

	ret = ring_register(q);
	if (!ret)
		ret = ring_register_errors(q);
	pthread_mutex_lock(&u->lock);
	if (ret) {
		if (!u->error)
			u->error = ret;
		if (u->state == RS_REGISTERING)
			u->state = RS_FAILED;
	} else if (++u->registered == u->nr_queues && u->state == RS_REGISTERING) {
		u->state = RS_RUNNING;
	}
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (ret)
		return NULL;
	ring_loop(q);
	return NULL;
}

