// SPDX-License-Identifier: MIT
/* The daemon's side of the write cache: set-up, the powercut and poweron commands of the
 * control file, and the cache's lines in MOUNTPOINT/stats. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/parse.h"
#include "core/backend/backend.h"
#include "core/cache/cache.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "core/util/units.h"
#include "daemon/control/cache_ctl.h"
#include "daemon/daemon.h"
#include "daemon/fuse/disk_open.h"

void pd_cache_reload_cfg(struct pd *pd, const struct pd_config *nc)
{
	/* The keys a reload leaves (their warning is the caller's): cache_init drew from the
	 * seed once, and mode, size and log shaped the cache it built. */
	uint32_t mode = pd->cfg.cache.mode;
	uint64_t size = pd->cfg.cache.size;
	uint64_t seed = pd->cfg.cache.seed;
	char *log = pd->cfg.cache.log; /* nc's copy is freed with nc */

	pd->cfg.cache = nc->cache;
	pd->cfg.cache.mode = mode;
	pd->cfg.cache.size = size;
	pd->cfg.cache.seed = seed;
	pd->cfg.cache.log = log;
}

static void inval_queue(struct pd *pd);
static void inval_wait(void);

/* ---- control ---- */

static int need_cache(struct pd *pd, struct ctl_out *out)
{
	if (chain_find(&pd->chain, "cache"))
		return 0;
	ctl_printf(out, "power cuts need the write cache: start with cache.mode = writeback\n");
	return -EINVAL;
}

/* "key=N": a decimal u64 into @v. */
static int arg_u64(const char *arg, const char *key, uint64_t *v, struct ctl_out *out)
{
	size_t kl = strlen(key);
	const char *p = arg + kl + 1;
	int ret;

	if (strncmp(arg, key, kl) || arg[kl] != '=')
		return 1; /* not this key */
	/* after_ms=2s, as a config key named _ms takes it (core/util/units.h) */
	if (!strcmp(key, "after_ms") && !units_is_bare(p)) {
		uint64_t ns;

		if (units_parse_duration(p, NSEC_PER_MSEC, &ns) || ns % NSEC_PER_MSEC) {
			ctl_printf(out, "%s: not a whole number of milliseconds: %s\n", key, p);
			return -EINVAL;
		}
		*v = ns / NSEC_PER_MSEC;
		return 0;
	}
	ret = conf_parse_u64_whole(p, v);
	if (ret == -ERANGE) {
		ctl_printf(out, "%s: not a number that fits in 64 bits: %s\n", key, p);
		return -EINVAL;
	}
	if (ret) {
		ctl_printf(out, "%s: not a number: %s\n", key, p);
		return -EINVAL;
	}
	return 0;
}

static int arg_mode(const char *arg, uint32_t *mode, struct ctl_out *out)
{
	int i;

	if (strncmp(arg, "mode=", 5))
		return 1;
	i = cache_name_index(cache_cut_names, arg + 5);
	if (i < 0) {
		ctl_printf(out, "mode must be drop, prefix, subset or tear (got %s)\n", arg + 5);
		return -EINVAL;
	}
	*mode = (uint32_t)i;
	return 0;
}

/* The "key=N" words of powercut arm that choose its trigger (one per arm, but for
 * flush=F write=N); after_flush= and seed= only qualify it. */
static const struct {
	const char *key;
	enum cache_arm_kind kind;
} arm_triggers[] = {
	{ "flush", CACHE_ARM_FLUSH },
	{ "write", CACHE_ARM_WRITE },
	{ "random", CACHE_ARM_RANDOM },
	{ "after_ms", CACHE_ARM_TIME },
};

/* The armed trigger @a as the command that arms it ("powercut arm write=3 after_flush=1"),
 * or "powercut disarm"; no newline. */
static void show_arm(struct ctl_out *out, const struct cache_arm *a)
{
	const char *mode = a->has_mode && a->mode < CACHE_CUT_NR ? cache_cut_names[a->mode] : NULL;

	switch (a->kind) {
	case CACHE_ARM_FLUSH:
		ctl_printf(out, "powercut arm flush=%" PRIu64, a->n);
		break;
	case CACHE_ARM_WRITE:
		ctl_printf(out, "powercut arm write=%" PRIu64 " after_flush=%" PRIu64, a->n,
			   a->after_flush);
		break;
	case CACHE_ARM_RANDOM:
		ctl_printf(out, "powercut arm random=%" PRIu64 " seed=%" PRIu64, a->range, a->seed);
		break;
	case CACHE_ARM_TIME: {
		uint64_t now = clock_now_ns();

		ctl_printf(out, "powercut arm after_ms=%" PRIu64,
			   a->at_ns > now ? (uint64_t)((a->at_ns - now) / NSEC_PER_MSEC) : 0);
		break;
	}
	default:
		ctl_printf(out, "powercut disarm");
		break;
	}
	if (a->kind != CACHE_ARM_NONE && mode)
		ctl_printf(out, " mode=%s", mode);
}

static int ctl_arm(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	struct cache_arm a = { .kind = CACHE_ARM_NONE };
	uint64_t v, after_ms = 0;
	int ret;

	for (int i = 2; i < argc; i++) {
		const char *s = argv[i];
		enum cache_arm_kind k;
		size_t j;

		if ((ret = arg_mode(s, &a.mode, out)) <= 0) {
			if (ret)
				return ret;
			a.has_mode = true;
			continue;
		}
		if ((ret = arg_u64(s, "after_flush", &a.after_flush, out)) <= 0 ||
		    (ret = arg_u64(s, "seed", &a.seed, out)) <= 0) {
			if (ret)
				return ret;
			continue;
		}
		for (j = 0; j < sizeof(arm_triggers) / sizeof(arm_triggers[0]); j++) {
			ret = arg_u64(s, arm_triggers[j].key, &v, out);
			if (ret < 0)
				return ret;
			if (!ret)
				break;
		}
		if (j == sizeof(arm_triggers) / sizeof(arm_triggers[0])) {
			ctl_printf(out, "unknown argument '%s'\n%s\n", s, PD_CACHE_POWERCUT_USAGE);
			return -EINVAL;
		}
		k = arm_triggers[j].kind;
		/* flush=F write=N: the n-th write after the F-th flush */
		if (k == CACHE_ARM_WRITE && a.kind == CACHE_ARM_FLUSH) {
			a.after_flush = a.n;
		} else if (k == CACHE_ARM_FLUSH && a.kind == CACHE_ARM_WRITE) {
			a.after_flush = v;
			continue;
		} else if (a.kind != CACHE_ARM_NONE) {
			ctl_printf(out, "one trigger per arm (flush=, write=, random= or after_ms=)\n");
			return -EINVAL;
		}
		a.kind = k;
		if (k == CACHE_ARM_TIME)
			after_ms = v;
		else
			a.n = v;
	}
	if (a.kind == CACHE_ARM_NONE) {
		ctl_printf(out, "powercut arm needs a trigger\n%s\n", PD_CACHE_POWERCUT_USAGE);
		return -EINVAL;
	}
	if (a.kind != CACHE_ARM_TIME && !a.n) {
		ctl_printf(out, "the count must be at least 1\n");
		return -EINVAL;
	}
	if (a.kind == CACHE_ARM_TIME) {
		if (after_ms > UINT64_MAX / NSEC_PER_MSEC / 2) {
			ctl_printf(out, "after_ms is too large\n");
			return -EINVAL;
		}
		a.at_ns = clock_now_ns() + after_ms * NSEC_PER_MSEC;
	}
	ret = cache_arm(chain_find(&pd->chain, "cache"), &a);
	if (ret) {
		ctl_printf(out, "cannot arm: %s\n", strerror(-ret));
		return ret;
	}
	/* The answer is what is armed now, in the words that arm it: the trigger as it was
	 * understood, with the seed a random trigger drew. */
	{
		struct cache_stats st;
		struct cache_arm now;
		size_t from = out->len;

		cache_snapshot(chain_find(&pd->chain, "cache"), &st, &now);
		show_arm(out, &now);
		ctl_printf(out, "\n");
		log_info("control: armed: %.*s", (int)(out->len - from - 1),
			 out->buf ? out->buf + from : "");
	}
	return 0;
}

int pd_cache_ctl_powercut(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	struct cache_stats st;
	uint32_t mode = 0;
	bool has_mode = false;
	uint64_t seed = 0;
	int ret;

	ret = need_cache(pd, out);
	if (ret)
		return ret;
	if (argc >= 2 && !strcmp(argv[1], "arm"))
		return ctl_arm(pd, argc, argv, out);
	if (argc >= 2 && !strcmp(argv[1], "disarm")) {
		struct cache_arm a = { .kind = CACHE_ARM_NONE };

		if (argc > 2) {
			ctl_printf(out, "powercut disarm takes no arguments\n");
			return -EINVAL;
		}
		return cache_arm(chain_find(&pd->chain, "cache"), &a);
	}
	for (int i = 1; i < argc; i++) {
		if ((ret = arg_mode(argv[i], &mode, out)) <= 0) {
			if (ret)
				return ret;
			has_mode = true;
		} else if ((ret = arg_u64(argv[i], "seed", &seed, out)) != 0) {
			if (ret < 0)
				return ret;
			ctl_printf(out, "unknown argument '%s'\n%s\n", argv[i],
				   PD_CACHE_POWERCUT_USAGE);
			return -EINVAL;
		}
	}
	ret = chain_powercut(&pd->chain, has_mode ? (int)mode : -1, seed, "control");
	if (ret == -EALREADY) {
		ctl_printf(out, "the power is already off\n");
		return 0;
	}
	cache_snapshot(chain_find(&pd->chain, "cache"), &st, NULL);
	ctl_printf(out, "powercut seed=%" PRIu64 " pending_bytes=%" PRIu64 " dropped_bytes=%" PRIu64
			"\n",
		   st.last_cut_seed, st.last_cut_pending, st.last_cut_dropped);
	return ret;
}

int pd_cache_ctl_poweron(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	int ret = need_cache(pd, out);

	(void)argv;
	if (ret)
		return ret;
	if (argc > 1) {
		ctl_printf(out, "poweron takes no arguments\n");
		return -EINVAL;
	}
	ret = chain_poweron(&pd->chain);
	if (ret == -EALREADY) {
		ctl_printf(out, "the power is already on\n");
		return 0;
	}
	if (ret == -EBUSY) {
		ctl_printf(out, "a write from before the cut is still going to the image and %u "
				"requests are held by a stall below: release them first (release, "
				"or fault clear); the power stays off\n",
			   chain_held(&pd->chain));
		return ret;
	}
	if (ret)
		return ret;
	ctl_printf(out, "poweron fenced_opens=%" PRIu64 "\n", pd_disk_open_fence(pd));
	/* The kernel may still cache pages of the disk from before the cut, which the disk may
	 * no longer hold: drop them, so that readers see what the disk came back with. */
	inval_queue(pd);
	/* Readers after the answer see the disk as it came back, unless a read may be held
	 * (the queue held by hand, a fault in force): then the pages go once it is let go. */
	{
		struct queue_hold_state st;

		queue_hold_state(&pd->q, &st);
		if (!st.held && !st.plug_held && !st.frozen && !chain_may_hold(&pd->chain))
			inval_wait();
	}
	return 0;
}

/* ---- dropping the kernel's pages of the disk ----
 *
 * The kernel drops a page only once it can lock it, and a read of the disk holds its pages
 * locked until its reply: a read queued behind a stop, or held by a stall, holds them until
 * the command that lets it go. Invalidating in the thread that runs poweron would make the
 * control write wait for that command, which could then never get in. So a thread of its
 * own invalidates, after each poweron; a poweron while it still waits asks for one more. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t tid;
	bool started;	/* lock: tid runs */
	bool pending;	/* lock: a poweron asked for an invalidation not yet begun */
	bool busy;	/* lock: an invalidation is under way */
	bool quit;	/* lock: the stop: end the thread */
	struct pd *pd;
} inval = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void *inval_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&inval.lock);
	for (;;) {
		int ret;

		while (!inval.pending && !inval.quit)
			pthread_cond_wait(&inval.cond, &inval.lock);
		if (!inval.pending)
			break;
		inval.pending = false;
		inval.busy = true;
		pthread_mutex_unlock(&inval.lock);
		ret = fuse_lowlevel_notify_inval_inode(inval.pd->se, INO_DISK, 0, 0);
		if (ret && ret != -ENOENT)
			log_warn("poweron: fuse_lowlevel_notify_inval_inode: %s", strerror(-ret));
		pthread_mutex_lock(&inval.lock);
		inval.busy = false;
		pthread_cond_broadcast(&inval.cond);
	}
	pthread_mutex_unlock(&inval.lock);
	return NULL;
}

static void inval_queue(struct pd *pd)
{
	pthread_mutex_lock(&inval.lock);
	if (!inval.started && !inval.quit) {
		int err;

		inval.pd = pd;
		err = pthread_create(&inval.tid, NULL, inval_thread, NULL);
		if (err) {
			pthread_mutex_unlock(&inval.lock);
			log_warn("poweron: pthread_create: %s; the kernel's pages of the disk stay",
				 strerror(err));
			return;
		}
		pthread_setname_np(inval.tid, "plugdisk-inval");
		inval.started = true;
	}
	inval.pending = true;
	pthread_cond_broadcast(&inval.cond);
	pthread_mutex_unlock(&inval.lock);
}

/* Until the invalidations asked for are done. */
static void inval_wait(void)
{
	pthread_mutex_lock(&inval.lock);
	while ((inval.pending || inval.busy) && inval.started)
		pthread_cond_wait(&inval.cond, &inval.lock);
	pthread_mutex_unlock(&inval.lock);
}

void pd_cache_ctl_stop(void)
{
	bool started;

	pthread_mutex_lock(&inval.lock);
	inval.quit = true;
	inval.pending = false;
	started = inval.started;
	inval.started = false;
	pthread_cond_broadcast(&inval.cond);
	pthread_mutex_unlock(&inval.lock);
	if (started)
		pthread_join(inval.tid, NULL);
}

void pd_cache_ctl_show(struct pd *pd, struct ctl_out *out)
{
	struct cache_stats st;
	struct cache_arm a;

	if (!chain_find(&pd->chain, "cache")) {
		ctl_printf(out, "# cache mode=none: no power cuts\n");
		return;
	}
	cache_snapshot(chain_find(&pd->chain, "cache"), &st, &a);
	ctl_printf(out, "%s\n", st.powered ? "poweron" : "powercut");
	show_arm(out, &a);
	ctl_printf(out, "\n# cache mode=writeback flush=%s powercut=%s atomic_write=%" PRIu32
			" dirty_bytes=%" PRIu64 " epoch=%" PRIu64 " durable_epoch=%" PRIu64
			" powercuts=%" PRIu64 "\n",
		   cache_flush_names[st.p.flush], cache_cut_names[st.p.powercut], st.p.atomic_write, st.dirty_bytes, st.epoch, st.durable_epoch,
		   st.powercuts);
}

int pd_cache_ctl_mark(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	char text[WLOG_MARK_MAX + 1];
	size_t len = 0;
	int ret;

	if (argc < 2) {
		ctl_printf(out, "mark needs a text\n");
		return -EINVAL;
	}
	if (!chain_find(&pd->chain, "cache") || !pd->cfg.cache.log || !pd->cfg.cache.log[0]) {
		ctl_printf(out, "marks need the write log: start with cache.log = PATH\n");
		return -EINVAL;
	}
	/* The words as control_run split them, joined by one space. */
	for (int i = 1; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (len + n + (i > 1) > WLOG_MARK_MAX) {
			ctl_printf(out, "a mark is at most %u bytes\n", WLOG_MARK_MAX);
			return -EINVAL;
		}
		if (i > 1)
			text[len++] = ' ';
		memcpy(text + len, argv[i], n);
		len += n;
	}
	text[len] = '\0';
	ret = cache_mark(chain_find(&pd->chain, "cache"), text);
	if (ret) {
		ctl_printf(out, "mark: the write log failed: %s\n", strerror(-ret));
		return ret == -EINVAL || ret == -ENOENT ? -EINVAL : -EIO;
	}
	return 0;
}
