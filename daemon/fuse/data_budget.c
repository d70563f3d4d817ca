// SPDX-License-Identifier: MIT
/* The data path's memory: the data budget, the requests parked by the last free receive
 * thread, and the pool of large buffers.
 *
 * Memory. Read and write buffers in flight are bounded by PD_DATA_BUDGET, so that memory stays
 * flat whatever the queue depth and request size. Large buffers (PD_BIGBUF_MIN bytes of data
 * or more) all have one capacity, PD_RXBUF_SIZE, that of a receive buffer: a large write keeps
 * its data in the receive buffer it was read into, and the receive thread gets another.
 * With FUSE over io_uring a request's data stays in its ring entry, which is the request's
 * until the reply: reads read into it and writes are served from it, with no copy, no charge
 * to the budget and no parking (the ring's size bounds that memory; data.c). */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <linux/fuse.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/data_int.h"

/* The kernel writes a request's header and its data, never more, whatever length the read of
 * /dev/fuse asks for: a receive buffer of max_write plus a page holds any request. */
_Static_assert(sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in) <=
		       PD_RXBUF_SIZE - PD_MAX_WRITE,
	       "a receive buffer holds the largest write request");

/* ---- the data budget ---- */

/* A receive thread that would exceed the budget waits for completions, like a submitter
 * waiting for a free request. One request may always proceed alone, however large.
 *
 * But the last receive thread not waiting never waits: it parks the request (a read costs
 * nothing parked; a write keeps its data, taking over its receive buffer when large) and goes
 * back to /dev/fuse, so that stats, stat and control always answer, whatever the depth and
 * request size. Parked requests need no budget of their own: the kernel bounds what it sends
 * without an answer to max_background asynchronous requests (PD_MAX_BACKGROUND, fuse_ops.c)
 * of at most max_write bytes each, plus one synchronous request per calling thread, and a
 * receive thread parks only what it has read. Parked requests are submitted in arrival order
 * as the budget frees, by the receive threads (pd_data_unpark()), which a completion wakes
 * through kick_fd. */

/* data_lock held: whether @bytes more fit in the budget now. */
static bool pd_data_fits(struct pd *pd, size_t bytes)
{
	return !pd->data_in_flight || pd->data_in_flight + bytes <= PD_DATA_BUDGET;
}

/* Take @bytes of the budget, waiting if need be; or, when @may_park and this is the last
 * receive thread not waiting, return false without waiting: the caller parks the request.
 * Returns true when the budget was taken. */
bool pd_data_get_or_park(struct pd *pd, size_t bytes, bool may_park)
{
	bool got = true;

	pthread_mutex_lock(&pd->data_lock);
	while (!pd_data_fits(pd, bytes)) {
		if (may_park && pd->data_waiters + 1 >= pd->nr_threads) {
			got = false;
			break;
		}
		/* Whatever holds the budget must be able to move: flush our plug first. */
		pthread_mutex_unlock(&pd->data_lock);
		queue_unplug_idle(&pd->q);
		pthread_mutex_lock(&pd->data_lock);
		if (!pd_data_fits(pd, bytes)) {
			pd->data_waiters++;
			pthread_cond_wait(&pd->data_cond, &pd->data_lock);
			pd->data_waiters--;
		}
	}
	if (got)
		pd->data_in_flight += bytes;
	pthread_mutex_unlock(&pd->data_lock);
	return got;
}

void pd_data_get(struct pd *pd, size_t bytes)
{
	pd_data_get_or_park(pd, bytes, false);
}

void pd_data_put(struct pd *pd, size_t bytes)
{
	bool kick;

	pthread_mutex_lock(&pd->data_lock);
	pd->data_in_flight -= bytes;
	kick = pd->parked != NULL;
	pthread_mutex_unlock(&pd->data_lock);
	pthread_cond_broadcast(&pd->data_cond);
	if (kick) {
		uint64_t one = 1;

		/* A full counter already wakes a thread: nothing to do on EAGAIN. */
		if (write(pd->kick_fd, &one, sizeof(one)) < 0) {
		}
	}
}

/* ---- large buffers ---- */

/* A buffer done with is kept, up to PD_BIGBUF_FREE_MAX, for the next large read or the next
 * receive thread that has none. Reuse keeps the buffers' pages mapped: a freed megabyte
 * handed back to the kernel by malloc would be faulted in again, page by page, at the next
 * large request, and malloc's per-thread arenas do not pile up freed buffers. */
void pd_bigbuf_put(struct pd *pd, void *mem)
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
void *pd_bigbuf_get(struct pd *pd)
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

/* ---- parked requests ---- */

/* Park a request whose budget pd_data_get_or_park() refused, at the tail: arrival order. */
void pd_park(struct pd *pd, struct pd_parked *pk)
{
	struct pd_parked **tail;

	pthread_mutex_lock(&pd->data_lock);
	pd->stats_parked++;
	if (++pd->nr_parked > pd->parked_peak)
		pd->parked_peak = pd->nr_parked;
	tail = pd->parked ? pd->parked_tail : &pd->parked;
	pd->parked_tail = &pk->next;
	/* Atomic: pd_data_unpark() peeks at pd->parked without the lock. */
	WRITE_ONCE(*tail, pk);
	pthread_mutex_unlock(&pd->data_lock);
	/* Completions may all have come before we queued: look at the budget once more. */
	pd_data_unpark(pd);
}

/* Submit parked requests, in order, while the budget has room for them. */
void pd_data_unpark(struct pd *pd)
{
	/* A hint: a request parked just after this look is submitted by its own parker's call
	 * (pd_park) or by the kick of the next completion. */
	if (!READ_ONCE(pd->parked))
		return;
	for (;;) {
		struct pd_parked *pk;
		struct pd_io *io;
		size_t charge;

		pthread_mutex_lock(&pd->data_lock);
		pk = pd->parked;
		if (!pk) {
			pthread_mutex_unlock(&pd->data_lock);
			return;
		}
		charge = pd_io_charge(pk->len, pk->big);
		if (!pd_data_fits(pd, charge)) {
			pthread_mutex_unlock(&pd->data_lock);
			return;
		}
		WRITE_ONCE(pd->parked, pk->next);
		pd->nr_parked--;
		pd->data_in_flight += charge;
		pthread_mutex_unlock(&pd->data_lock);

		io = pd_io_new_charged(pd, pk->req, pk->op, pk->off, pk->len,
				       pk->big ? pk->data : NULL);
		if (!io) {
			if (pk->big)
				pd_bigbuf_put(pd, pk->mem);
			else
				free(pk->mem);
			fuse_reply_err(pk->req, ENOMEM);
			free(pk);
			continue;
		}
		io->fua = pk->fua;
		if (pk->big) {
			io->bigbuf = pk->mem;
		} else if (pk->op == BIO_OP_WRITE) {
			memcpy(io->iov.iov_base, pk->data, pk->len);
			free(pk->mem);
		}
		free(pk);
		queue_submit(&pd->q, &io->bio);
	}
}

void pd_data_parked_info(struct pd *pd, uint64_t *now, uint64_t *ever, uint64_t *peak)
{
	pthread_mutex_lock(&pd->data_lock);
	*now = pd->nr_parked;
	*ever = pd->stats_parked;
	*peak = pd->parked_peak;
	pthread_mutex_unlock(&pd->data_lock);
}

unsigned int pd_data_nr_parked(struct pd *pd)
{
	unsigned int n;

	pthread_mutex_lock(&pd->data_lock);
	n = pd->nr_parked;
	pthread_mutex_unlock(&pd->data_lock);
	return n;
}
