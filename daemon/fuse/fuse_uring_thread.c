// SPDX-License-Identifier: MIT
/* FUSE over io_uring, the ring threads: one per queue, pinned to its CPU, which waits for
 * the queue's requests, makes a bio of each of the disk's reads and writes straight from its
 * entry (pd_disk_ring_rw()), hands any other request to libfuse, and submits the replies it
 * made with its next wait (fuse_uring_ring.c has the replies and the commits; fuse_uring.c
 * setup and stop).
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
 * Lock order: as in fuse_uring_ring.c. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "core/util/barrier.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/fuse_uring.h"
#include "daemon/fuse/fuse_uring_int.h"

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
	WRITE_ONCE(q->requests, q->requests + 1);
	if ((in->opcode == FUSE_READ || in->opcode == FUSE_WRITE) && in->nodeid == INO_DISK) {
		if (pd_disk_ring_rw(u->pd, e->io, e, in->opcode, e->hdr->op_in, oplen,
				    e->buf + RING_ROOM, psz, u->payload_size))
			return;
	} else {
		/* Only the disk's reads and writes are quick to take in: anything else (a
		 * control command that waits, a flush) ends the burst of submissions
		 * (queue_burst()). */
		queue_burst(0);
	}
	start = e->buf + RING_ROOM - oplen - sizeof(*in);
	memcpy(start, in, sizeof(*in));
	memcpy(start + sizeof(*in), e->hdr->op_in, oplen);
	fb.mem = start;
	fb.size = in->len;
	/* Pairs with the acquire of the claim in ring_claim(). */
	smp_store_release(u->held[e->idx], id);
	fuse_session_process_buf(u->se, &fb);
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
	unsigned int woke_with = (unsigned int)(q->requests - q->requests_seen);
	bool want;

	q->requests_seen = q->requests;
	q->per_wake16 = q->per_wake16 - q->per_wake16 / 8 + woke_with * 2;
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
	io_set_thread_inline(ring_may_run_inline, q);
	queue_set_unplugs_idle(true);
	ring_bind_thread(q);

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

