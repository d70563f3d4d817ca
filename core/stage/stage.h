/* SPDX-License-Identifier: MIT */
/* A stage below the controller: the ops every stage implements, and the contract each keeps.
 *
 * The stages form one chain (core/stage/chain.h), as filters stack over a plugin: the
 * controller hands each admitted request to the top stage, each stage does its part and
 * passes the request to the stage below, and the bottom stage, the backend, moves the data.
 * The chain's own operations (freeze, power cut, stop, reload, stats) walk the stages and
 * call these ops; an op a stage leaves NULL means "nothing to do here".
 *
 * The contract, per op:
 *   exec         Run one request (core/stage/request.h): 0 or -errno when done, or IO_ASYNC and
 *                rq->io_done later, exactly once. Requests may end in any order: a caller that
 *                needs an order waits for the first before it sends the second. A write a
 *                stage acknowledged is durable once a flush received after that
 *                acknowledgement is acknowledged; until then a power cut may drop it. An
 *                error from below reaches the caller as it came, unless the stage's job is to
 *                change it (a fault). A flush fails if any write it covers could not be made
 *                durable. Any thread; never with a caller's lock held.
 *   admit_ns     Extra service time the controller adds to @rq at admission (a latency
 *                fault): the command holds its slot for longer. Called with the queue's lock
 *                held: it may take only the stage's own lock, briefly, and never calls into
 *                the queue or another stage.
 *   may_hold     Whether the stage may keep a request longer than a local store would (a
 *                delay, a stall, a server's round trip), so that the FUSE side lets enough
 *                requests in for it (daemon/fuse/background.c). Any thread; the stage's own
 *                lock at most.
 *   freeze       After 0: every write this stage acknowledged is in the stage below, and it
 *                sends nothing more down until thaw (reads are still served). The caller has
 *                stopped the queue above first. -errno: the write-out failed; the caller
 *                thaws. thaw undoes it; thawing a stage that is not frozen does nothing.
 *   powercut     The power goes: drop what the stage holds volatile, by its own rules
 *                (mode, seed; -1 and 0 for its configured ones), and fail every request in
 *                flight in it with EIO, now and until poweron. Waits for nothing that a stage
 *                below holds (a stalled write). 0, or -EALREADY when already off.
 *   poweron      The power returns: requests are served again. 0, or -EALREADY when on.
 *   stop         The daemon is stopping: end every hold (stalled requests complete) and take
 *                on no new one, so that a drain of the queue above finishes.
 *   writeout     After the last drain: write everything the stage holds to the stage below
 *                and make it durable. 0, or -errno when acknowledged writes are lost (the
 *                stage logs which). Nothing is in flight; afterwards only destroy is called.
 *   reconfigure  Apply reloadable settings (SIGHUP). -errno with @err (which may be NULL)
 *                when refused; the stage's old settings then stay.
 *   stats        Append `name value` lines (and `#` comments) to @buf; returns the length
 *                written (< @len, NUL-terminated).
 *   snapshot     Fill the stage's part of the counters snapshot (core/queue/stats.h).
 *   stats_reset  Zero the stage's counters (a write of `reset` to the stats file).
 *   destroy      Free everything. Nothing is in flight, and no timer of the stage runs.
 */
#ifndef PLUGDISK_STAGE_H
#define PLUGDISK_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stage/request.h"

struct chain_params;
struct stats_snapshot;

struct stage_ops {
	const char *name;	/* "cache", "faults", "file", "nbd", ...: for logs and tests */
	int (*exec)(void *self, struct request *rq);
	uint64_t (*admit_ns)(void *self, const struct request *rq);
	bool (*may_hold)(void *self);
	int (*freeze)(void *self);
	void (*thaw)(void *self);
	int (*powercut)(void *self, int mode, uint64_t seed, const char *why);
	int (*poweron)(void *self);
	void (*stop)(void *self);
	int (*writeout)(void *self);
	int (*reconfigure)(void *self, const struct chain_params *p, char *err, size_t errlen);
	size_t (*stats)(void *self, char *buf, size_t len);
	void (*snapshot)(void *self, struct stats_snapshot *ss);
	void (*stats_reset)(void *self);
	void (*destroy)(void *self);
};

/* One stage of a chain: its ops and its own state. */
struct stage {
	const struct stage_ops *ops;
	void *self;
};

#endif
