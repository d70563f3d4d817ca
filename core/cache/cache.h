/* SPDX-License-Identifier: MIT */
/* A volatile write cache in front of the image, and the power cut that drops what it had not
 * made durable: an I/O stage (core/stage/request.h) between the controller and the backend. */
#ifndef PLUGDISK_CACHE_H
#define PLUGDISK_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/stage/request.h"
#include "core/cache/wlog.h"
#include "core/util/stats_table.h"

enum cache_mode { CACHE_MODE_NONE, CACHE_MODE_WRITEBACK, CACHE_MODE_NR };
enum cache_flush { CACHE_FLUSH_HONOUR, CACHE_FLUSH_IGNORE, CACHE_FLUSH_NR };

/* What a power cut does with the writes still in the cache (cache.powercut). */
enum cache_cut {
	CACHE_CUT_DROP,		/* every pending write is lost */
	CACHE_CUT_PREFIX,	/* a prefix of the pending writes in completion order survives */
	CACHE_CUT_SUBSET,	/* each pending write kept, dropped or torn, independently */
	CACHE_CUT_TEAR,		/* every pending write torn: each atomic unit survives or not */
	CACHE_CUT_NR,
};

/* NULL-terminated names, indexed by the enums above: the words of the config and of the
 * control commands. */
extern const char *const cache_mode_names[];
extern const char *const cache_flush_names[];
extern const char *const cache_cut_names[];

/* Index of @name in the NULL-terminated @names, or -1. */
int cache_name_index(const char *const *names, const char *name);

struct cache_params {
	uint32_t mode;			/* cache.mode: enum cache_mode */
	uint64_t size;			/* cache.size: most dirty bytes held */
	uint32_t destage_delay_ms;	/* cache.destage_delay_ms: least time a write stays */
	uint64_t destage_rate;		/* cache.destage_rate: background bytes/s, 0 = unlimited */
	uint32_t flush;			/* cache.flush: enum cache_flush */
	uint32_t atomic_write;		/* cache.atomic_write: bytes, power of two 512..16384 */
	uint32_t powercut;		/* cache.powercut: enum cache_cut */
	uint64_t seed;			/* cache.seed: 0 = from the clock at start (logged) */
	char *log;			/* cache.log: path of the write log, "" = none */
};

#define CACHE_DEFAULT_SIZE		(64ull << 20)
#define CACHE_DEFAULT_DESTAGE_DELAY_MS	500u
#define CACHE_DEFAULT_DESTAGE_RATE	(64ull << 20)
#define CACHE_DEFAULT_ATOMIC_WRITE	4096u

void cache_params_default(struct cache_params *p);

/* A power cut armed to fire on its own (the control file's "powercut arm ..."). */
enum cache_arm_kind {
	CACHE_ARM_NONE,
	CACHE_ARM_FLUSH,	/* when the n-th flush since arming arrives */
	CACHE_ARM_WRITE,	/* when the n-th write after the after_flush-th flush arrives */
	CACHE_ARM_RANDOM,	/* at a write or flush drawn from the seed among the next n */
	CACHE_ARM_TIME,		/* when the cache's clock reaches at_ns */
};

struct cache_arm {
	enum cache_arm_kind kind;
	uint64_t n;		/* FLUSH, WRITE: the count; RANDOM: the drawn op number */
	uint64_t range;		/* RANDOM: the op is drawn from 1..range */
	uint64_t after_flush;	/* WRITE: count writes after this many flushes (0: from now) */
	uint64_t at_ns;		/* TIME */
	uint64_t seed;		/* RANDOM: the seed the op was drawn from */
	bool has_mode;		/* cut by @mode, else by cache.powercut */
	uint32_t mode;		/* enum cache_cut */
	uint64_t flushes, writes;	/* seen since arming (writes: since after_flush flushes) */
};

/* Counters for stats. */
struct cache_stats {
	bool powered;
	uint64_t dirty_bytes, dirty_writes;
	uint64_t size;
	uint64_t destaged_bytes, destaged_writes;
	uint64_t flushes, flushes_ignored;
	uint64_t epoch, durable_epoch;
	uint64_t powercuts;
	uint64_t last_cut_pending, last_cut_dropped;	/* bytes at the last cut */
	uint64_t last_cut_seed;
	/* The write log: write errors that cut it short (it stops at the first, so 0 or 1),
	 * and the records it could not hold since. Not zeroed by cache_stats_reset(). */
	uint64_t log_errors, log_lost_records;
	struct cache_params p;	/* the parameters in force */
};

struct cache_write;
struct chunk_link;

/* Lock order: c->lock is taken alone; the lower stage is never called with it held. */
struct cache {
	struct cache_params p;		/* lock */
	io_exec_fn lower;		/* the stage below (the backend); read-only */
	void *lower_arg;
	/* Whether a stage below holds a request until a command lets it go (a stall), or
	 * NULL: freeze and poweron then fail with EBUSY rather than wait for it; without it
	 * they wait. Called without c->lock; set before any I/O (cache_set_held_below()). */
	bool (*held_below)(void *arg);
	void *held_below_arg;
	uint64_t thaws;			/* lock: cache_thaw() calls, so that a freeze sees one */
	io_exec_fn image;		/* where a cut writes what it keeps; read-only */
	void *image_arg;
	uint64_t (*clock)(void *arg);	/* ns; read-only */
	void *clock_arg;

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* lock: a destage ended, power changed, work arrived */
	struct cache_write *head, *tail;	/* lock: pending writes, oldest first */
	struct chunk_link **buckets;	/* lock: the chunk index of pending writes (cache_map.c) */
	size_t nbuckets;		/* a power of two; read-only */
	uint64_t query;			/* lock: overlap queries made, to visit each write once */
	uint64_t dirty;			/* lock: bytes in pending writes */
	uint64_t nr_dirty;		/* lock: pending writes */
	unsigned int destaging;		/* lock: writes being destaged (off the lock), also
					 * those a cut left going to the image */
	unsigned int discarding;	/* lock: discards being sent down (off the lock) */
	unsigned int room_waiters;	/* lock: writers waiting for room in a full cache */
	uint64_t seq;			/* lock: last write's completion number */
	uint64_t epoch;			/* lock: the current (open) flush epoch */
	uint64_t durable_epoch;		/* lock: every epoch up to it is on the image */
	bool powered;			/* lock */
	/* lock: the power generation, one more at each cut. A request notes it on entry and
	 * fails with EIO if it changed by the time it ends: whatever was in flight at a cut
	 * fails, as on a device that lost power, even once the power is back. */
	uint64_t gen;			/* written under lock with WRITE_ONCE: see cache_power_gen() */
	bool cutting;			/* lock: a cut is writing what it keeps (off the lock) */
	uint64_t destage_rng;		/* lock: the order of background destaging */
	uint64_t cut_rng;		/* lock: seeds of cuts that name none */
	uint64_t next_destage_ns;	/* lock: the destage rate's next start */
	struct cache_arm arm;		/* lock */
	struct cache_stats st;		/* lock: the counters (powered, dirty are filled in) */

	struct wlog wlog;		/* lock: the write log, when has_log */
	bool has_log;			/* read-only after cache_open_log */

	bool frozen;			/* lock: cache_freeze(): no background destaging */
	bool stop;			/* lock: the destage thread must end */
	bool has_thread;		/* read-only after cache_start_thread */
	pthread_t thread;
};

/* Set up @c over the stage @lower/@lower_arg with @p, reading time from @clock (NULL: the
 * monotonic clock). Logs the seed in use. 0 or -errno. No thread is started. */
int cache_init(struct cache *c, const struct cache_params *p, io_exec_fn lower, void *lower_arg,
	       uint64_t (*clock)(void *), void *clock_arg);

/* Write what a power cut keeps through @image/@image_arg instead of the lower stage: the
 * backend itself, below the injected faults, since kept data stands for what had reached
 * the media when the power went, not for commands the device runs after it. Before any I/O. */
void cache_set_image(struct cache *c, io_exec_fn image, void *image_arg);

/* Log every completed write, flush, discard and cut to @path (cache.log), for `plugdisk
 * replay`. Before any I/O. 0 or -errno (logged). */
int cache_open_log(struct cache *c, const char *path, uint64_t disk_size);

/* Record a mark (at most WLOG_MARK_MAX bytes of text) in the write log, after every write
 * completed so far: `plugdisk explore` tells a checker which marks a state made durable.
 * 0, -ENOENT without a log, -EINVAL for a long text, or the log's write error. */
int cache_mark(struct cache *c, const char *text);

/* Start the background destage thread (the daemon; unit tests call cache_tick). 0/-errno. */
int cache_start_thread(struct cache *c);

/* Stop the thread and destage everything still pending (when powered). Returns 0 or the
 * first destage error, logged with the count, bytes and first ranges of the writes it
 * loses. Nothing may be in flight; afterwards only cache_free() may be called. */
int cache_writeout(struct cache *c);

/* Stop the thread and free what is left of @c: pending writes still in it (after a failed
 * write-out, a cut, or with no write-out at all) are dropped. */
void cache_free(struct cache *c);

/* cache_writeout(), then cache_free(): its result. */
int cache_destroy(struct cache *c);

/* The cache's lines of the stats file (cache_*), zeros for a NULL @c (no write cache), so
 * that the names are stable. Returns the length written (< @len, NUL-terminated). */
size_t cache_format_stats(struct cache *c, char *buf, size_t len);

/* The names cache_format_stats() writes (core/cache/cache_stats.c). */
extern const struct stats_table cache_stats_table;

/* The I/O stage: @arg is the cache. Reads see the cache; writes complete once cached; a
 * flush completes after its epoch is on the image and the lower stage flushed; everything
 * fails with -EIO while the power is off, and so does every request in flight at a cut.
 * Synchronous: returns 0 or -errno. Any thread. */
int cache_exec(void *arg, struct request *rq);

/* Background work at the cache's clock: fire a time-armed cut, then destage at most one write
 * that has waited destage_delay_ms, at the destage rate. Returns 0 when it did something
 * (call again), else the ns until it may have something (UINT64_MAX: nothing pending). */
uint64_t cache_tick(struct cache *c);

/* Cut the power now. @mode is an enum cache_cut or -1 for cache.powercut; @seed 0 draws
 * one. Returns once the disk is down, without waiting for anything in flight: what the cut
 * keeps is on the image, the rest is gone, and every request fails with EIO. A destage
 * (or discard) the lower stage still holds may yet reach the image; poweron waits for it.
 * -EALREADY if the power is already off. @why names the cause in the log. */
int cache_powercut(struct cache *c, int mode, uint64_t seed, const char *why);

/* The power generation: 0 at the start, one more at each cut (from the moment the power
 * goes). Read without the lock, from any thread. */
uint64_t cache_power_gen(struct cache *c);

/* Power back on: an empty cache, requests served again, once the destages and discards in
 * flight at the cut came back. -EBUSY, the power still off, while a stage below holds a
 * request until a command lets it go (a stall: the one awaited may be that one); -EALREADY
 * at once if already on. */
int cache_poweron(struct cache *c);

/* Arm (or with kind NONE, disarm) a cut that fires on its own. A RANDOM arm draws its op
 * from @a->seed (0: one is drawn and stored in c->arm.seed). 0 or -EINVAL. */
int cache_arm(struct cache *c, const struct cache_arm *a);

/* For the control file's freeze, once nothing is in flight above the cache: destage every
 * pending write and pause background destaging until cache_thaw(), so that the image holds
 * every write the cache acknowledged and nothing changes it. With the power off, wait for
 * what the cut left going to the image. 0, or the lower stage's error (still frozen). */
int cache_freeze(struct cache *c);
/* (A freeze fails with -EBUSY, unfrozen, when a stage below holds a request until a command
 * lets it go, and with -ECANCELED when cache_thaw() came while it wrote out.) */

/* Whether a stage below holds a request until a command lets it go (c->held_below). */
bool cache_held_below(struct cache *c);

/* Make freeze and poweron fail with -EBUSY rather than wait while @held(@arg) says that a
 * stage below holds a request until a command lets it go. Before any I/O. */
void cache_set_held_below(struct cache *c, bool (*held)(void *arg), void *arg);

/* End a freeze: background destaging goes on. */
void cache_thaw(struct cache *c);

/* Apply new parameters live: flush, destage delay and rate, atomic unit, cut mode. mode,
 * size and seed stay as started (CONF_RESTART in conf/keys/cache_keys.c, as the log's path).
 * A new atomic unit applies to the writes cached from now on (a cut tears each write at the
 * unit it was cached under) and goes into the write log as an ATOMIC record. */
void cache_reconfigure(struct cache *c, const struct cache_params *p);

/* Zero the counters (destaged, flushes, power cuts, the last cut's figures); the state
 * (power, dirty data, epochs) stays. */
void cache_stats_reset(struct cache *c);

/* Copy the counters and the armed cut. */
void cache_snapshot(struct cache *c, struct cache_stats *st, struct cache_arm *arm);

#endif
