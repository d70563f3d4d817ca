/* SPDX-License-Identifier: MIT */
/* A stage below the controller: the ops every stage implements, and the contract each keeps.
 *
 * The stages form one chain (core/stage/chain.h), as filters stack over a plugin: the
 * controller hands each admitted request to the top stage, each stage does its part and
 * passes the request to the stage below, and the bottom stage, the backend, moves the data.
 * The chain's own operations (freeze, power cut, stop, reload, stats) walk the stages and
 * call these ops; an op a stage leaves NULL means "nothing to do here".
 *
 * A stage is its own folder's business: it exports one const struct stage_ops (the cache's
 * cache_stage_ops in core/cache/cache_stage.c), and the chain knows it only by that table,
 * listed once in core/stage/stages.c; the user's stages.order puts it in the chain.
 *
 * The contract, per op:
 *   check        Before any stage is built: whether @p's settings for this stage are good,
 *                so that a refusal leaves nothing done (no log truncated, no thread
 *                started). 0, or -EINVAL with @err saying why.
 *   init         Build the stage over @below (the next stage down, whose exec it calls) from
 *                @p, and set *@self. A stage that keeps data for a power cut (a write cache)
 *                writes what a cut keeps to @image: the first stage below it that does not
 *                set image_skip, whatever it is, so that no stage that transforms data is
 *                passed by. 0 with *@self NULL: the settings leave the stage out of the chain
 *                (cache.mode = none). -errno with @err saying why: nothing is left to free.
 *   image_skip   (A flag.) What a power cut keeps passes by this stage on its way to the
 *                image: the stage stands for how the device behaves while it runs (a fault, a
 *                stall), not for where or how data lands.
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
 *   held         How many requests the stage holds until a command lets them go (stalled
 *                requests, until release): a command that would wait for them fails with
 *                EBUSY instead. Any thread; the stage's own lock at most.
 *   waits_below  Not an op: true when exec waits in its caller's thread for the stage below
 *                (the write cache's flush for its destage, a full cache for room). While a
 *                stage below it may hold, the controller then runs no request in a FUSE
 *                receive thread (chain_may_block()).
 *   freeze       After 0: every write this stage acknowledged is in the stage below, and it
 *                sends nothing more down until thaw. The caller has frozen the queue above
 *                first, so no request reaches the stage meanwhile: reads of the disk wait in
 *                the queue as writes do. -errno: the write-out failed, or -EBUSY (it would
 *                wait for what a stall holds below), or -ECANCELED (a thaw came while it
 *                wrote out); the caller thaws. thaw undoes it; thawing a stage that is not
 *                frozen does nothing.
 *   powercut     The power goes: drop what the stage holds volatile, by its own rules
 *                (mode, seed; -1 and 0 for its configured ones), and fail every request in
 *                flight in it with EIO, now and until poweron. Waits for nothing that a stage
 *                below holds (a stalled write). 0, or -EALREADY when already off.
 *                A cut may also fire inside a stage (the cache's armed cuts), unseen by the
 *                chain: a stage that holds a request whose I/O is done (a stall) notes the
 *                chain's power generation (chain_params.power_gen) before the I/O, and ends
 *                the request with EIO if a cut came meanwhile, whichever stage took it.
 *   power_gen    The stage's power generation: 0 at the start, one more at each cut it
 *                takes, however fired (control, an armed cut). Any thread, no lock.
 *   poweron      The power returns: requests are served again. 0, or -EALREADY when on.
 *   stop         The daemon is stopping: end every hold (stalled requests complete) and take
 *                on no new one, so that a drain of the queue above finishes.
 *   writeout     After the last drain: write everything the stage holds to the stage below
 *                and make it durable. 0, or -errno when acknowledged writes are lost (the
 *                stage logs which). Nothing is in flight; afterwards only destroy is called.
 *   reconfigure  Apply reloadable settings (SIGHUP). -errno with @err (which may be NULL)
 *                when refused; the stage's old settings then stay.
 *   stats        Append `name value` lines (and `#` comments) to @buf; returns the length
 *                written (< @len, NUL-terminated): the names of stats_table (not an op: the
 *                stage's names, core/util/stats_table.h), written by stats_table_write()
 *                from the stage's snapshot. With stats_absent set, it is also called with
 *                @self NULL when the stage is not in the chain, and writes the same names,
 *                zero, so that the stats file's names are stable.
 *   stats_reset  Zero the stage's counters (a write of `reset` to the stats file).
 *   destroy      Free everything, @self too. Nothing is in flight, and no timer of the
 *                stage runs.
 *
 * How to add a stage (a compression stage, say, "zip"; core/crc/ is a small example):
 *   1. A folder, core/zip/: zip.h with its settings (struct zip_params) and zip.c that
 *      defines `const struct stage_ops zip_stage_ops` (the ops it needs, NULL for the rest:
 *      check and init, exec, and what it holds: writeout, stats, destroy...). From outside
 *      its folder it includes only core/stage/ and core/util/. Its stats names are a
 *      table there (core/util/stats_table.h, as core/crc/crc.c's crc_names), which its stats
 *      op writes and .stats_table names; doc/stats.md gets a GENERATED STATS block for it.
 *   2. Its settings reach it through struct chain_params (core/stage/chain.h): one pointer,
 *      `const struct zip_params *zip;`, that its check, init and reconfigure read.
 *   3. Two lines in core/stage/stages.c: its extern and `&zip_stage_ops,`.
 *   4. Its keys (conf/config.h, "How to add a key"): a `struct zip_params zip;` member of
 *      struct pd_config, conf/keys/zip_keys.c, a line in conf/keys/tables.c, a section of
 *      man/plugdisk.conf.5 with its GENERATED KEYS block (`make doc`), its keys in
 *      conf/plugdisk.conf, and `p->zip = &c->zip;` in daemon/reload.c's pd_chain_params().
 *   5. Users put it in the chain with stages.order = "cache, zip, faults"; the chain's walks
 *      (freeze, power cut, stop, reload, stats) reach it through its ops, and a power cut's
 *      kept writes pass through it (it does not set image_skip).
 *   6. A mount test (tests/mount/crc.sh).
 */
#ifndef PLUGDISK_STAGE_H
#define PLUGDISK_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stage/request.h"

struct chain_params;
struct stats_table;
struct stage;

struct stage_ops {
	const char *name;	/* "cache", "faults", "backend": stages.order's words, logs */
	bool image_skip;	/* what a power cut keeps passes by this stage */
	bool stats_absent;	/* stats() is called with @self NULL when not in the chain */
	bool waits_below;	/* exec waits in its caller's thread for the stage below */
	const struct stats_table *stats_table;	/* the names stats() writes */
	int (*check)(const struct chain_params *p, char *err, size_t errlen);
	int (*init)(void **self, const struct chain_params *p, const struct stage *below,
		    const struct stage *image, char *err, size_t errlen);
	int (*exec)(void *self, struct request *rq);
	uint64_t (*admit_ns)(void *self, const struct request *rq);
	bool (*may_hold)(void *self);
	unsigned int (*held)(void *self);
	int (*freeze)(void *self);
	void (*thaw)(void *self);
	int (*powercut)(void *self, int mode, uint64_t seed, const char *why);
	int (*poweron)(void *self);
	uint64_t (*power_gen)(void *self);
	void (*stop)(void *self);
	int (*writeout)(void *self);
	int (*reconfigure)(void *self, const struct chain_params *p, char *err, size_t errlen);
	size_t (*stats)(void *self, char *buf, size_t len);
	void (*stats_reset)(void *self);
	void (*destroy)(void *self);
};

/* One stage of a chain: its ops and its own state. */
struct stage {
	const struct stage_ops *ops;
	void *self;
};

#endif
