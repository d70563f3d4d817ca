/* SPDX-License-Identifier: MIT */
/* The reference model, its shared declarations: a test of the stages below the controller, the
 * write cache (core/cache/) over the fault set (core/fault/) over a memory image, driven by
 * seeded random sequences and checked against a small model of what the disk promises.
 *
 * The image below. The memory image is a disk with a volatile cache of its own, not an ideal
 * one: a write lands in it but is durable there only once a flush reaches it (the backend's
 * fdatasync), and a hold may keep a request before it lands, as a disk still busy with it,
 * so that a destage can be in flight across a power cut and land after what the cut wrote.
 *
 * What the model checks. Every write, zero write and discard puts a value on its 512-byte
 * blocks (a write's blocks carry its number, so a block read back names the write it came
 * from; anything else is garbage and a divergence). Logical time ticks at every issue and
 * every completion, and the model keeps, per block, the operations since the last power cut:
 *   - a read may return a value of an operation issued before the read ended and not
 *     overwritten before the read began (overwritten: an acknowledged operation on the block
 *     issued after the first one ended); so old or new data only while a write is
 *     unacknowledged, and an unacknowledged (or failed) write may be seen until something
 *     acknowledged replaces it;
 *   - a flush that succeeds with cache.flush = honour makes every operation acknowledged
 *     before it was issued durable; after a cut, a block may hold only a value that no durable
 *     operation issued after it replaced ("nothing a completed flush covered is lost");
 *     and when it completes, the image's durable contents hold, on every block a durable
 *     operation wrote since the last cut, that value or a newer one (the flush reached the
 *     image, after the destages it waited for);
 *   - the cut's own choices, given the image just before the cut: `drop` writes nothing;
 *     `subset` and `tear` keep or lose each write's aligned cache.atomic_write units whole
 *     (a unit seen both kept and lost is a divergence); `prefix` keeps whole writes, and a
 *     write kept with an earlier one lost (earlier: in completion order, in the same flush
 *     epoch unless a later write of its epoch covered it, or in an earlier epoch) is a
 *     divergence. Writes that may already have been destaged, or were still in flight, are
 *     free, and so is every write while a destage that an error fault planned to fail may
 *     still be held. Destages a hold keeps at the cut land after it, before poweron: the
 *     cut is checked on both images as they will be once these have landed;
 *   - after a cut every request fails with EIO until poweron; a request in flight across a
 *     cut fails, or (a read) returns data of the image after the cut, never data the cut
 *     dropped; a flush in flight across a cut does not succeed;
 *   - poweron with the power on answers -EALREADY at once; with it off, poweron waits for
 *     the destages the cut left held below the cache (so it parks like a request until the
 *     stall is released), and of the poweron steps waiting at once, one returns 0;
 *   - an error only from the power being off or an error fault in force, and a flush issued
 *     with the power on and cache.flush = honour while a fault fails every flush (every=1,
 *     no range) must fail, unless that fault went before it ended; powercut returns
 *     while requests are stalled; after queue_freeze() and cache_freeze() (the control file's
 *     freeze) the image holds what was acknowledged;
 *   - at the end, with the faults gone and the power on, a read of the whole disk;
 *   - with the d2 check, the write log (cache.log): its flush records close epochs 1, 2, 3...
 *     with none missing, as `plugdisk replay --crash N` counts them.
 * With stages.order putting the faults over the cache (--order), a flush issued while an
 * error fault is in force may fail before it reaches the cache and closes no epoch: from then
 * on a prefix cut's order is not checked, as the epochs are not known.
 * Not modelled: lie, corrupt, latency and dust faults, the log's write records, which op an
 * armed cut fires at (the model sees the power go and checks the cut like any other).
 *
 * The driver. Each sequence is generated from its seed alone (so that it replays), then run:
 * writes, zero writes, reads, flushes, discards, background destaging on the fake clock,
 * power cuts in every mode, poweron, armed cuts, error and stall faults and holds in the image
 * added, deleted and released, live reconfiguration of the cache, and freeze/thaw through a
 * real queue and controller. Requests run on NR_ACTORS submitter threads, one step at a
 * time: the driver hands a step to an idle thread and waits until every busy thread has
 * either finished or sleeps (parked behind a stall or a hold), so that the interleaving is the
 * sequence's, not the scheduler's (while no stall fault or hold is in force nothing can wait,
 * and steps run in the driver's own thread). On the first divergence the sequence is shrunk
 * (steps dropped while it still fails the same way) and printed with its seed and a command
 * that replays it.
 *
 * Known defects. A check that current code fails goes in KNOWN_DEFECTS, off by default, so
 * that `make check` stays green until its fix lands; `make model CHECKS=all` runs with every
 * check on. test_known_defects runs one short sequence per check: it must diverge while the
 * check is listed and pass once it is not (and, with checks always on, one for poweron and
 * three for the image below: a flush that never reached it, one that swallowed its error, and
 * a prefix cut that kept a write over a destage still on its way).
 * Every fix has landed, so KNOWN_DEFECTS is empty and each sequence is the regression test of
 * its fix; the checks, by the defect they caught:
 *   d1  a read in flight across powercut + poweron returned data the cut dropped (now: it
 *       fails with EIO, the power generation having changed);
 *   d2  a failed flush closed an epoch that no flush record named (now: WLOG_FLUSH_FAILED);
 *   d5  powercut waited behind a stalled write (now: it returns at once and hands the held
 *       destage back; poweron waits for it, so a poweron can wait until release);
 *   d6  freeze left acknowledged writes in the cache, not in the image (now: cache_freeze);
 *   d7  prefix drew k per epoch, so a newer epoch survived an older one (now: one prefix);
 *   fx  a flush in flight across powercut + poweron succeeded (now: it fails with EIO).
 * With a check off, the driver avoids what it needs (d1, fx: no poweron while such a request
 * waits; d5: no stall faults on writes), so that a new defect can be listed the same way.
 *
 * The files, by job: image.c (the memory image below the stages, block contents), generator.c
 * (steps drawn from a seed), rules.c (what the model allows, and results taken into it),
 * actors.c (the submitter threads), run.c (running one sequence), shrink.c (shrinking and
 * reporting a divergence, long runs), test_model.c (the Check suite and the command line).
 *
 *   make check TESTS=build/tests/unit/test_model     # 1500 sequences, 200 under a sanitizer
 *   make model SEQUENCES=100000 [SEED=S] [CHECKS=all|d1,d2,d5,d6,d7,fx] [STAGES_ORDER=...]
 *   build/tests/unit/test_model --replay SEED --keep 3,7,9 [--checks ...] [-v]
 *   MODEL_DEBUG=1 build/tests/unit/test_model --replay ...   # with the cache's debug log
 */
#ifndef PLUGDISK_TEST_MODEL_H
#define PLUGDISK_TEST_MODEL_H

#undef NDEBUG
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/backend/backend.h"
#include "core/util/barrier.h"
#include "core/cache/cache.h"
#include "core/ctrl/ctrl.h"
#include "core/fault/fault.h"
#include "core/util/log.h"
#include "core/util/prng.h"
#include "core/queue/queue.h"
#include "core/stage/chain.h"
#include "core/util/timer.h"
#include "core/cache/wlog.h"

#define BLK 512u
#define NBLK 256u		/* a 128 KiB disk: two chunks of the cache's index */
#define DISK ((uint64_t)NBLK * BLK)
#define MAXSTEPS 400
#define SEQ_STEPS 200		/* a sequence has SEQ_STEPS/2 .. SEQ_STEPS steps */
#define MAXV (MAXSTEPS + 1)	/* value-carrying operations of a sequence, plus none */
#define NR_ACTORS 4
#define MAXUNITS 16		/* a write spans at most 16 blocks, so at most 16 units */
#define T0 (1000ull * NSEC_PER_SEC)

/* Optional checks, by the defect they catch. */
enum {
	CHK_D1_READ_ACROSS_CUT = 1u << 0,	/* a read in flight across cut+poweron */
	CHK_D5_CUT_BEHIND_STALL = 1u << 1,	/* powercut waits behind a stalled write */
	CHK_D6_FREEZE = 1u << 2,		/* freeze leaves acknowledged writes out */
	CHK_D7_PREFIX_EPOCHS = 1u << 3,		/* prefix keeps a newer epoch, loses an older */
	CHK_FX_FLUSH_ACROSS_CUT = 1u << 4,	/* a flush in flight across a cut succeeds */
	CHK_D2_LOG_EPOCHS = 1u << 5,		/* a failed flush leaves a gap in the log */
	CHK_ALL = (1u << 6) - 1,
};

/* The checks' names, by bit, NULL-terminated (shrink.c). */
extern const char *const check_names[];

/* Checks that current code fails: off unless asked for. None now; list a check here (as
 * "(CHK_D1_READ_ACROSS_CUT | ...)") while its defect is known and unfixed, and remove it when
 * the fix lands (a branch with the fix can try it first with -DKNOWN_DEFECTS=0 in CFLAGS). */
#ifndef KNOWN_DEFECTS
#define KNOWN_DEFECTS 0u
#endif

/* ---- the memory image ------------------------------------------------------------------- */

#define MEM_GATES 8	/* holds in the image at once */

/* A hold in the image: every @every-th request of @ops over blocks @blk+@nblk (0: every
 * block, and flushes) waits before it lands until released. */
struct mem_gate {
	int id;			/* 0: free */
	unsigned int ops;	/* bits of enum bio_op */
	uint32_t blk, nblk;
	uint32_t every;
	uint64_t matched;	/* requests it matched */
};

/* A request a hold keeps; on the stack of the thread that waits. */
struct mem_held {
	struct request *rq;
	int gate;		/* the id of the hold that caught it */
	bool go;		/* mem->lock: released */
	struct mem_held *next;	/* mem->lock */
};

/* The layer below the faults: a disk with a volatile write cache of its own. A write lands in
 * img; a flush that reaches it makes img durable (dur); a hold keeps a request before it
 * lands, as a disk still busy with it. */
struct mem {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* lock: a held request was released */
	uint8_t img[DISK];	/* lock */
	uint8_t dur[DISK];	/* lock: img as the last flush that reached it left it */
	struct mem_gate gate[MEM_GATES];	/* lock */
	struct mem_held *held;	/* lock */
};

/* ---- steps and their generator ----------------------------------------------------------- */

enum kind {
	K_WRITE, K_ZERO, K_READ, K_FLUSH, K_DISCARD, K_TICK, K_CUT, K_ON, K_ARM, K_FADD, K_FDEL,
	K_RELEASE, K_RECONF, K_FREEZE, K_RELOAD, K_NR
};

/* The steps' names, by kind (generator.c). */
extern const char *const kind_names[K_NR];

/* One step, everything needed to run it again. */
struct step {
	enum kind k;
	uint32_t blk, nblk;	/* range in blocks (FADD: nblk 0 = the whole disk) */
	int64_t a, b, c;	/* by kind, see gen_step() */
};

/* The cache's start-up settings of a sequence. */
struct seqcfg {
	struct cache_params p;
	uint32_t nsteps;
};

/* ---- the model's records ------------------------------------------------------------------ */

#define NEVER UINT64_MAX

/* An operation that puts a value on its blocks: a write, a zero write or a discard. */
struct vop {
	uint32_t blk, nblk;
	uint32_t val;		/* block contents: this vop's number, 0 for zeroes */
	uint64_t issue, done;	/* logical times; done = NEVER while in flight */
	uint64_t e_lo, e_hi;	/* epoch-closing flushes issued before issue / before done */
	bool ok;		/* acknowledged */
	bool durable;		/* acknowledged before a flush that succeeded was issued */
	bool is_write;		/* a write that the cache holds (not a discard) */
	bool live;		/* issued in this power cycle, or in flight at the last cut */
	int stepno;		/* the step that issued it */
	uint32_t unit;		/* bytes: the smallest cache.atomic_write in force while it was
				 * in flight (a cut tears a write at the unit it was cached
				 * under); 0: run->atomic */
};

/* A request handed to an actor. */
struct job {
	const struct step *st;
	int stepno;
	int vop;		/* index in run->v, or 0 */
	uint64_t issue;
	bool issued_off;	/* the model's power was off when it was issued */
	unsigned int cutgen;	/* cuts seen when it was issued */
	unsigned int errgen;	/* error faults added when it was issued */
	bool err_ok;		/* an error fault was in force at issue */
	bool honour;		/* flush: cache.flush was honour */
	int mode;		/* powercut: the mode it asked for */
	bool must_fail;		/* flush: an error on every flush was in force at issue */
	unsigned int ferr_gone;	/* flush: run->flush_err_gone at issue */
	int ret;
	uint8_t *buf;
};

struct actor {
	struct run *r;
	pthread_t th;
	pid_t tid;		/* r->alock */
	int state;		/* r->alock: A_IDLE, A_GO, A_RUN, A_FIN */
	pthread_cond_t go;	/* r->alock: a job (or quit) for this actor */
	struct job job;
};

enum { A_IDLE, A_GO, A_RUN, A_FIN };

/* The run's write cache, found in its chain by name. */
#define RCACHE(r) ((struct cache *)chain_find(&(r)->ch, "cache"))
/* The run's fault set, likewise. */
#define RFAULTS(r) ((struct fault_set *)chain_find(&(r)->ch, "faults"))

/* More bits of run->fault_kind: a hold in the image (no fault of the fault stage); an error
 * on every flush (every=1, no range), which every flush that reaches it must return. */
#define FK_GATE 8
#define FK_FLUSH_ERR 16

/* One run of one sequence. */
struct run {
	/* the stages */
	struct mem mem;
	struct chain ch;		/* the faults and the write cache over mem, as the
					 * daemon builds them */
	struct timer t;
	struct ctrl ctrl;
	struct queue q;
	uint64_t now_ns;	/* the fake clock; atomic */
	char log_path[4096];	/* cache.log, with the d2 check */

	/* the driver */
	pthread_mutex_t alock;
	pthread_cond_t fin;	/* alock: an actor finished */
	bool quit;		/* alock */
	unsigned int progress;	/* alock: actors finished */
	struct actor act[NR_ACTORS];
	unsigned int checks;
	int fault_id[MAXSTEPS];	/* fault-add step -> its id, 0 if none */

	/* the model: the driver thread's alone */
	uint64_t lt;		/* logical time */
	struct vop v[MAXV];
	uint32_t nv;
	uint32_t base_val[NBLK];	/* the image after the last cut (or at start) */
	uint64_t base_t;
	uint16_t hist[NBLK][MAXV];	/* live vops per block, in no order */
	uint32_t nh[NBLK];
	bool powered, armed;
	bool on_claimed;	/* a poweron returned 0 since the last cut */
	int arm_mode;		/* the armed cut's mode, -1: cache.powercut at the time */
	uint64_t nclose;	/* epoch-closing flushes issued */
	bool faults_on_top;	/* stages.order puts the faults over the cache */
	bool epochs_unknown;	/* a flush may have closed no epoch: nclose is not exact */
	unsigned int flush_mode, cut_mode, atomic;
	unsigned int nerr_live, nstall_live, nwerr_live;	/* faults in force */
	bool werr_seen;		/* an error fault on writes was in force since nothing waited */
	unsigned int errgen;	/* error faults added so far */
	int cfg_kind[2];	/* the configured faults (reload), as fault_kind; 0: none */
	int fault_kind[MAXSTEPS];	/* fault-add step -> bit 0 error, 1 stall, 2 on writes,
					 * FK_GATE, FK_FLUSH_ERR */
	unsigned int nflush_err;	/* FK_FLUSH_ERR faults in force */
	unsigned int flush_err_gone;	/* FK_FLUSH_ERR faults gone so far */
	uint8_t pre[DISK];	/* the image before a cut */
	bool have_pre;		/* pre holds the image from before this step */
	bool cut_pending;	/* an armed cut fired: check the image once it is done */
	unsigned int cutgen;	/* power cuts so far */
	uint64_t cut_t;		/* when the power went, for the cut being checked */
	uint64_t step_issue;	/* issue time of the step running */
	int cut_mode_now;	/* an armed cut's mode, -1: cache.powercut */

	/* the verdict */
	const char *cls;	/* NULL, or the kind of the first divergence */
	char msg[512];
	int at_step;
	int cur_step;
	uint64_t digest;	/* of the image at the end: the same seed leaves the same one */
};


/* The verdict of one run: the kind of divergence (NULL for none), its message and step. */
struct verdict {
	const char *cls;
	char msg[512];
	int at_step;
	bool hung;
	uint64_t digest;
};

/* ---- image.c: the memory image and block contents */

/* The memory image's exec: the stage below the chain, where holds catch requests. */
int mem_exec(void *arg, struct request *rq);
/* The same without holds: where a power cut writes what it keeps. */
int mem_image_exec(void *arg, struct request *rq);
/* Add hold @id (> 0) on every @every-th request of @ops over blocks @blk+@nblk. 0, or
 * -ENOSPC. */
int mem_gate_add(struct mem *m, int id, unsigned int ops, uint32_t blk, uint32_t nblk,
		 uint32_t every);
/* Let the requests hold @id (0: every hold) keeps land; the hold stays. */
void mem_gate_release(struct mem *m, int id);
/* Remove hold @id (0: every hold), letting what it keeps land. */
void mem_gate_del(struct mem *m, int id);
/* Lay the writes the holds keep over @img (DISK bytes), as they will land. */
void mem_apply_held(struct mem *m, uint8_t *img);
/* Fill block @p of place @blk with value @val (0: zeroes). */
void fill_block(uint8_t *p, uint32_t val, uint32_t blk);
/* The value a block read at @blk holds, or -1 for anything no operation wrote there. */
int64_t decode_block(const uint8_t *p, uint32_t blk);
/* Copy the memory image into @out (DISK bytes). */
void snapshot_image(struct run *r, uint8_t *out);
/* Copy the durable image, as the last flush that reached the image left it, into @out. */
void snapshot_durable(struct run *r, uint8_t *out);

/* ---- generator.c: sequences from a seed */

/* A fault-add step's effects (st->a), in words. */
extern const char *const fault_effect_words[];

/* The whole sequence of @seed: its settings and @cfg->nsteps steps. */
void gen_sequence(uint64_t seed, unsigned int checks, uint32_t maxsteps, struct seqcfg *cfg,
		  struct step *steps);
/* Step @st in words, for a report. */
int format_step(char *buf, size_t len, const struct step *st);
/* The fault words of fault-add step @st (number @stepno, which seeds it). */
void fault_text(const struct step *st, int stepno, char *buf, size_t len);
/* Configured fault @i of reload step @st, and its kind (as run->fault_kind). */
int reload_spec(const struct run *r, const struct step *st, int i, char *buf, size_t len);

/* ---- rules.c: what the model allows, and results taken into it */

/* Did a power cut begin while @j was in flight? */
bool crossed(const struct run *r, const struct job *j);
/* Record the first divergence of @r: its kind @cls and message. */
void diverge(struct run *r, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Name value @v for a message: "the write of step N", "zeroes", "garbage". */
const char *val_name(const struct run *r, int64_t v, char *buf, size_t len);
/* May a read issued at @ri that ended at @rd see @val in block @b? */
bool read_allows(const struct run *r, uint32_t b, uint64_t ri, uint64_t rd, uint32_t val);
/* The first block of @img holding what a read from @ri to @rd may not see, or -1. */
int64_t first_disallowed_block(const struct run *r, const uint8_t *img, uint64_t ri,
			       uint64_t rd, int64_t *v);
/* May a cut leave @val in block @b? */
bool cut_allows(const struct run *r, uint32_t b, uint32_t val);
/* Check the image after a cut against the model, then start the next power cycle from it. */
void check_cut(struct run *r, int mode, const uint8_t *pre, const uint8_t *post);
/* Check the image a cut leaves, from r->pre (before it) and the image now. */
void check_cut_now(struct run *r, int mode);
/* The cache's power, as it says itself (and whether a cut is under way, into @cutting). */
bool cache_is_powered(struct run *r, bool *cutting);
/* An armed cut fired inside the step now running: the power is off from its issue on. */
void note_armed_cut(struct run *r);
/* Take the result of job @j into the model. Driver thread only. */
void job_done(struct run *r, struct job *j);

/* ---- actors.c: the submitter threads */

/* One op through the top of the chain, as the controller hands it down. */
int chain_io(struct run *r, enum bio_op op, uint64_t off, uint64_t len, void *buf);
/* Run job @j's request into j->ret. */
void job_run(struct run *r, struct job *j);
/* An actor thread: runs the jobs the driver hands it. */
void *actor_main(void *arg);
void sleep_us(long us);
/* Wait until every busy actor has finished (its result taken into the model) or sleeps. */
void settle(struct run *r);
/* An idle actor, or NULL. */
struct actor *idle_actor(struct run *r);
/* Whether an actor is parked on a job matching @pred. */
bool any_parked(struct run *r, bool (*pred)(const struct run *r, const struct job *j));
bool job_any(const struct run *r, const struct job *j);
bool job_crossed_read(const struct run *r, const struct job *j);
bool job_crossed_flush(const struct run *r, const struct job *j);
/* May poweron job @j power the disk on: was the power off at its issue? */
bool job_may_power_on(const struct run *r, const struct job *j);
/* Is a poweron that may power the disk on running, or finished and not yet taken in? */
bool poweron_pending(struct run *r);

/* ---- run.c: one sequence */

/* stages.order of every run (NULL: the default, the cache over the faults). */
extern const char *model_order;
/* Set-up that cannot fail in a test; abort if it does. */
void must_fail(const char *what) __attribute__((noreturn));
/* A macro, so that static analysis sees that nothing after a failed must() runs. */
#define must(ok, what) ((ok) ? (void)0 : must_fail(what))
/* Run the steps of @steps that @keep marks (all when NULL) into @vd. */
void run_sequence(const struct seqcfg *cfg, const struct step *steps, const bool *keep,
		  unsigned int checks, bool verbose, struct verdict *vd);

/* ---- shrink.c: shrinking, reporting, long runs */

/* This program, as the replay command names it. */
extern const char *prog;
/* A long run's progress line every so many sequences (0: none). */
extern uint64_t progress_every;
/* @checks as words ("d1,d5", "none"). */
void format_checks(unsigned int checks, char *buf, size_t len);
/* The seed of sequence @i of a run from @base. */
uint64_t seq_seed(uint64_t base, uint64_t i);
/* Run @n sequences from @base; on the first divergence report it (shrunk) and return its
 * index, else -1. */
int64_t run_many(uint64_t base, uint64_t n, unsigned int checks, uint32_t maxsteps,
		 bool do_shrink, uint64_t *ran);

#endif
