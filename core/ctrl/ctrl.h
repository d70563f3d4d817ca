/* SPDX-License-Identifier: MIT */
/* The disk controller emulator: command slots, rate limits, service latency, and the hand-off
 * of admitted requests to the backend (inline or to the worker pool, core/ctrl/pool.h). */
#ifndef PLUGDISK_CTRL_H
#define PLUGDISK_CTRL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/stage/request.h"
#include "core/ctrl/latency.h"
#include "core/ctrl/ctrl_params.h"
#include "core/ctrl/pool.h"
#include "core/ctrl/rate.h"
#include "core/queue/stats.h"
#include "core/util/timer.h"

struct queue;
struct ctrl;

/* Executes one request's backing I/O: an I/O stage (core/stage/request.h) that returns 0 or -errno, or
 * IO_ASYNC and ends the request later through rq->io_done. The real one is backend_exec();
 * unit tests plug in a fake. */
typedef io_exec_fn ctrl_exec_fn;

struct ctrl {
	/* Admission state: guarded by the queue's lock (q->lock), which the queue holds when it
	 * calls the _locked functions; they assert it (core/util/lock.h) when @q is set. */
	struct ctrl_params p;		/* q->lock */
	unsigned int in_flight;		/* q->lock: commands holding a slot */
	struct rate rate;		/* q->lock */
	struct latency lat;		/* q->lock: latency models' state */
	uint64_t *slot_free;		/* q->lock: ring of device times at which idle slots freed */
	unsigned int slot_free_head;	/* q->lock */
	unsigned int slot_free_nr;	/* q->lock */
	uint64_t last_deadline_ns;	/* q->lock: latest deadline of any admitted command */
	/* Median lateness of a completion at its deadline (timer wake-up, completion, reply),
	 * in ns: written by the timer thread alone, read under q->lock; relaxed atomics, as
	 * nothing else is published through it. */
	uint64_t late_ns;
	/* The host's turnaround: from the end of a command that left the device idle to the
	 * arrival of the next one (the reply's way to the submitter and the next request's way
	 * back), its median in ns. Changed under q->lock, read without it by stats. */
	uint64_t host_ns;
	uint64_t idle_ns;		/* q->lock: when the last command's end left the device
					 * idle; 0 once a command took a slot again */
	uint64_t idle_dev_ns;		/* q->lock: that command's service end, in device time */
	uint64_t host_starts;		/* q->lock: commands started there (latency_absorb_host) */

	struct queue *q;
	struct timer *timer;
	ctrl_exec_fn exec;
	void *exec_arg;
	/* The extra service time the stages below add at admission (chain_admit_ns(), an
	 * injected latency), or NULL. Set before any I/O; called under q->lock, so the stages'
	 * locks it takes come after q->lock. */
	uint64_t (*admit_ns)(void *arg, const struct request *rq);
	void *admit_arg;
	/* Whether the stages below may keep a request (a stall, a delay, a server: see
	 * chain_may_hold()), or NULL. While they may, a dispatching thread never runs I/O
	 * itself: a stage that waits for the one below (the write cache's flush for its
	 * destage) would hold that thread, and a FUSE receive thread must stay free to serve
	 * the control and stats files. Set before any I/O; called without q->lock. */
	bool (*may_hold)(void *arg);
	void *may_hold_arg;

	/* The backend workers (lock order: q->lock, then pool.lock); with none
	 * (pool.nr_threads 0, tests), I/O runs in the dispatching thread. */
	struct pool pool;
	/* How long the backing store's synchronous I/O takes lately, in ns: an average over
	 * about the last 8 requests, written by whichever thread ran one and read by the
	 * dispatchers; relaxed atomics, a hint for where to run I/O. */
	uint64_t exec_avg_ns;
};

/* The most command slots a controller can have (controller.queue_depth's maximum). */
#define CTRL_MAX_SLOTS 4096

enum ctrl_admit_result {
	CTRL_ADMIT_OK,
	CTRL_ADMIT_SLOTS,	/* no free command slot: a completion will start the queue */
	CTRL_ADMIT_BUDGET,	/* out of budget: *ready_at says when */
	CTRL_ADMIT_HEAD,	/* seek model: the head is busy until *ready_at */
};

/* Set up @c. @exec runs a request's I/O (backend_exec with its backend as @exec_arg).
 * @p->workers threads are started; workers == 0 runs I/O inline in ctrl_issue() (for unit
 * tests). Returns 0 or -errno. */
int ctrl_init(struct ctrl *c, const struct ctrl_params *p, struct timer *t, ctrl_exec_fn exec,
	      void *exec_arg, int64_t now);

/* Stop the workers. Nothing may be in flight. */
void ctrl_destroy(struct ctrl *c);

/* May @rq start now? On OK takes a slot, charges the rate buckets and sets the request's
 * device start time (>= @not_before: when the queue last became runnable) and deadline.
 * q->lock held. */
enum ctrl_admit_result ctrl_admit_locked(struct ctrl *c, struct request *rq, uint64_t now,
				  uint64_t not_before, uint64_t *ready_at);

/* The queued request the controller would start next, from its queue's head @head (q->head,
 * linked by rq->next, the requests in the queue's merge index): the head itself, or with
 * controller.reorder = sptf and the seek model the one of the first queue_depth with the
 * shortest positioning time, never one that would pass a flush or a request whose range it
 * overlaps. q->lock held. */
struct request *ctrl_pick_locked(const struct ctrl *c, struct request *head, uint64_t now);

/* Hand admitted requests (linked by work_next) to the backend. Call without q->lock.
 * If the calling thread's inline hint (io_set_thread_inline, core/stage/request.h) says it may, the thread runs
 * the first request's I/O itself and queues the rest for the workers: a submitter with
 * nothing else to do saves the hand-off to a worker, as blk-mq issues directly. */
void ctrl_issue(struct ctrl *c, struct request *list);

/* Whether the controller may keep a request beyond its backing I/O: a service latency or
 * a rate limit. q->lock held. */
bool ctrl_may_hold_locked(const struct ctrl *c);

/* Free @rq's slot. q->lock held. */
void ctrl_release_locked(struct ctrl *c, struct request *rq, uint64_t now);

/* Apply new controller parameters live: slots, rates (buckets keep their debt), latency.
 * The worker count is fixed at start. q->lock held. */
void ctrl_reconfigure_locked(struct ctrl *c, const struct ctrl_params *p, uint64_t now);

/* Copy the state of the burst credits and the write cliff into @ss. q->lock held. */
void ctrl_snapshot_models_locked(const struct ctrl *c, struct stats_snapshot *ss, uint64_t now);

#endif
