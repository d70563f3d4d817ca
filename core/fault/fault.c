// SPDX-License-Identifier: MIT
/* Injected faults: the set of active faults (adding, deleting, replacing the configured
 * ones), the requests they stall, and the listing and counters. What a fault does to a
 * request is core/fault/fault_effect.c; their words are parsed and written in fault_spec.c.
 *
 * Locking: fs->lock guards the faults, their counters and PRNGs, and the stalled requests.
 * It is taken after q->lock (fault_latency_ns() runs under q->lock) and before the timer's
 * lock; it is never held across I/O or while a request is completed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/util/barrier.h"
#include "core/fault/fault_int.h"
#include "core/util/log.h"
#include "core/util/prng.h"
#include "core/util/lock.h"

/* ---- the set ---- */

int fault_set_init(struct fault_set *fs, io_exec_fn lower, void *lower_arg, struct timer *t,
		   clock_fn clock, void *clock_arg)
{
	int err;

	memset(fs, 0, sizeof(*fs));
	err = pthread_mutex_init(&fs->lock, NULL);
	if (err)
		return -err;
	fs->next_id = 1;
	fs->lower = lower;
	fs->lower_arg = lower_arg;
	fs->timer = t;
	fs->clock = clock;
	fs->clock_arg = clock_arg;
	timer_entry_init(&fs->stall_tmr, fault_stall_timer_fn);
	return 0;
}

static void fault_free(struct fault *f)
{
	fault_spec_free(&f->s);
	free(f);
}

/* fs->lock held: move the stalled requests of fault @id (0: all) to *@out. */
static unsigned int take_held_locked(struct fault_set *fs, unsigned int id, struct fault_held **out)
{
	struct fault_held **pp = &fs->held, **tail = out;
	unsigned int n = 0;

	lock_assert_held(&fs->lock);

	while (*tail)
		tail = &(*tail)->next;
	while (*pp) {
		struct fault_held *h = *pp;

		if (id && h->fault_id != id) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		h->next = NULL;
		*tail = h;
		tail = &h->next;
		n++;
	}
	return n;
}

/* Without fs->lock: end each request of @list, with its I/O's result (@timed_out: with its
 * timeout error when it has one), or with EIO when a cut came since its I/O began: its
 * result is from before the cut, which may have dropped what it reports (a write, a flush's
 * epoch, a read's data), as a device that lost power never answers a command it held. */
void fault_complete_held(struct fault_held *list, bool timed_out)
{
	while (list) {
		struct fault_held *h = list;
		struct request *rq = h->rq;
		int err = timed_out && h->timeout_error ? h->timeout_error : h->result;

		if (h->fs->power_gen && h->fs->power_gen(h->fs->power_gen_arg) != h->gen)
			err = -EIO;

		list = h->next;
		rq->io_done = h->done;
		rq->io_done_arg = h->done_arg;
		free(h);
		rq->io_done(rq, err);
	}
}

void fault_set_destroy(struct fault_set *fs)
{
	fault_clear(fs);
	if (fs->timer)
		timer_cancel(fs->timer, &fs->stall_tmr);
	pthread_mutex_destroy(&fs->lock);
}

static uint64_t draw_seed(unsigned int id)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		return seed;
	seed = clock_now_ns() ^ ((uint64_t)id << 32);
	return prng_splitmix64(&seed);
}

/* A new fault from a parsed spec (which it takes over); fs->lock held. */
static struct fault *fault_new(struct fault_set *fs, struct fault_spec *spec,
			       enum fault_origin origin, uint64_t now)
{
	struct fault *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->s = *spec;
	memset(spec, 0, sizeof(*spec));
	f->id = fs->next_id++;
	f->origin = origin;
	f->added_ns = now;
	/* A dust fault draws nothing: its blocks decide. */
	if (!f->s.has_seed && f->s.effect != FAULT_DUST) {
		f->s.seed = draw_seed(f->id);
		f->s.has_seed = true;
		f->seed_drawn = true;
	}
	prng_seed(f->rng, f->s.seed);
	return f;
}

/* fs->lock held: append @f in id order (ids only grow, so at the end). */
static void fault_link_locked(struct fault_set *fs, struct fault *f)
{
	struct fault **pp = &fs->list;

	lock_assert_held(&fs->lock);

	while (*pp)
		pp = &(*pp)->next;
	*pp = f;
	WRITE_ONCE(fs->nr, fs->nr + 1);
}

static void log_added(const struct fault *f)
{
	char *text = fault_spec_format(&f->s);

	log_info("fault %u added (%s): %s%s", f->id,
		 f->origin == FAULT_FROM_CONFIG ? "config" : "control", text ? text : "?",
		 f->seed_drawn ? " (seed drawn: none given)" : "");
	free(text);
}

int fault_add(struct fault_set *fs, const char *text, enum fault_origin origin, char *err,
	      size_t errlen)
{
	struct fault_spec spec;
	struct fault *f;
	int ret;

	ret = fault_spec_parse(text, &spec, err, errlen);
	if (ret)
		return ret;
	lock_take(&fs->lock);
	if (fs->closed) {
		lock_drop(&fs->lock);
		fault_spec_free(&spec);
		fault_put_err(err, errlen, "the disk is stopping: no new faults");
		return -ESHUTDOWN;
	}
	if (fs->nr >= FAULT_MAX) {
		lock_drop(&fs->lock);
		fault_spec_free(&spec);
		fault_put_err(err, errlen, "already %d faults", FAULT_MAX);
		return -ENOSPC;
	}
	f = fault_new(fs, &spec, origin, fs_now(fs));
	if (!f) {
		lock_drop(&fs->lock);
		fault_spec_free(&spec);
		fault_put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fault_link_locked(fs, f);
	ret = (int)f->id;
	log_added(f);
	lock_drop(&fs->lock);
	return ret;
}

/* fs->lock held: unlink the first fault for which @pick says yes. */
static struct fault *unlink_if_locked(struct fault_set *fs, bool (*pick)(const struct fault *, unsigned int),
					      unsigned int arg)
{
	lock_assert_held(&fs->lock);
	for (struct fault **pp = &fs->list; *pp; pp = &(*pp)->next) {
		struct fault *f = *pp;

		if (pick(f, arg)) {
			*pp = f->next;
			WRITE_ONCE(fs->nr, fs->nr - 1);
			return f;
		}
	}
	return NULL;
}

static bool pick_id(const struct fault *f, unsigned int id)
{
	return f->id == id;
}

static bool pick_any(const struct fault *f, unsigned int unused)
{
	(void)f;
	(void)unused;
	return true;
}

static bool pick_origin(const struct fault *f, unsigned int origin)
{
	return f->origin == (enum fault_origin)origin;
}

int fault_del(struct fault_set *fs, unsigned int id)
{
	struct fault_held *held = NULL;
	struct fault *f;

	lock_take(&fs->lock);
	f = unlink_if_locked(fs, pick_id, id);
	if (f)
		take_held_locked(fs, id, &held);
	lock_drop(&fs->lock);
	if (!f)
		return -ENOENT;
	log_info("fault %u deleted", id);
	fault_free(f);
	fault_complete_held(held, false);
	return 0;
}

/* Delete every fault and release every stalled request; with @close, refuse new faults from
 * then on, in the same hold of the lock, so that none slips in between. */
static void fault_clear_all(struct fault_set *fs, bool close)
{
	struct fault_held *held = NULL;
	struct fault *f, *list = NULL;

	lock_take(&fs->lock);
	if (close)
		fs->closed = true;
	while ((f = unlink_if_locked(fs, pick_any, 0))) {
		f->next = list;
		list = f;
	}
	take_held_locked(fs, 0, &held);
	lock_drop(&fs->lock);
	while (list) {
		f = list;
		list = f->next;
		fault_free(f);
	}
	fault_complete_held(held, false);
}

void fault_clear(struct fault_set *fs)
{
	fault_clear_all(fs, false);
}

void fault_close(struct fault_set *fs)
{
	fault_clear_all(fs, true);
}

int fault_replace_configured(struct fault_set *fs, char *const *specs, size_t n, char *err,
			     size_t errlen)
{
	struct fault_spec *parsed = calloc(n ? n : 1, sizeof(*parsed));
	struct fault_held *held = NULL;
	struct fault *f, *old = NULL, *added[FAULT_MAX];
	size_t nold = 0, nadded = 0;
	int ret = 0;

	if (!parsed) {
		fault_put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char why[256];

		ret = fault_spec_parse(specs[i], &parsed[i], why, sizeof(why));
		if (ret) {
			fault_put_err(err, errlen, "faults[%zu] \"%s\": %s", i, specs[i], why);
			n = i;
			goto out;
		}
	}
	lock_take(&fs->lock);
	if (fs->closed) {
		lock_drop(&fs->lock);
		fault_put_err(err, errlen, "the disk is stopping: no new faults");
		ret = -ESHUTDOWN;
		goto out;
	}
	for (f = fs->list; f; f = f->next)
		if (f->origin == FAULT_FROM_CONFIG)
			nold++;
	if (fs->nr - nold + n > FAULT_MAX) {
		lock_drop(&fs->lock);
		fault_put_err(err, errlen, "more than %d faults", FAULT_MAX);
		ret = -ENOSPC;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		added[i] = fault_new(fs, &parsed[i], FAULT_FROM_CONFIG, fs_now(fs));
		if (!added[i]) {
			for (size_t j = 0; j < i; j++)
				fault_free(added[j]);
			lock_drop(&fs->lock);
			fault_put_err(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		nadded++;
	}
	while ((f = unlink_if_locked(fs, pick_origin, FAULT_FROM_CONFIG))) {
		take_held_locked(fs, f->id, &held);
		f->next = old;
		old = f;
	}
	for (size_t i = 0; i < nadded; i++) {
		fault_link_locked(fs, added[i]);
		log_added(added[i]);
	}
	lock_drop(&fs->lock);
	while (old) {
		f = old;
		old = f->next;
		log_info("fault %u deleted (configured faults replaced)", f->id);
		fault_free(f);
	}
	fault_complete_held(held, false);
out:
	for (size_t i = 0; i < n; i++)
		fault_spec_free(&parsed[i]);
	free(parsed);
	return ret;
}

int fault_release(struct fault_set *fs, unsigned int id)
{
	struct fault_held *held = NULL;
	bool known = !id;
	unsigned int n;

	lock_take(&fs->lock);
	for (struct fault *f = fs->list; f && !known; f = f->next)
		known = f->id == id;
	n = known ? take_held_locked(fs, id, &held) : 0;
	lock_drop(&fs->lock);
	if (!known)
		return -ENOENT;
	fault_complete_held(held, false);
	return (int)n;
}

unsigned int fault_nr_held(struct fault_set *fs)
{
	unsigned int n = 0;

	lock_take(&fs->lock);
	for (struct fault_held *h = fs->held; h; h = h->next)
		n++;
	lock_drop(&fs->lock);
	return n;
}

bool fault_any(struct fault_set *fs)
{
	bool any;

	lock_take(&fs->lock);
	any = fs->list != NULL;
	lock_drop(&fs->lock);
	return any;
}

/* ---- listing and counters ---- */

int fault_list(struct fault_set *fs, fault_line_fn fn, void *arg)
{
	int ret = 0;

	lock_take(&fs->lock);
	for (struct fault *f = fs->list; f; f = f->next) {
		char *spec = fault_spec_format(&f->s), *line = NULL, held[32] = "";
		unsigned int nheld = 0;

		for (struct fault_held *h = fs->held; h; h = h->next)
			nheld += h->fault_id == f->id;
		if (f->s.effect == FAULT_STALL)
			snprintf(held, sizeof(held), " held=%u", nheld);
		if (!spec || asprintf(&line, "fault add %s # id=%u source=%s matched=%" PRIu64
				      " injected=%" PRIu64 "%s", spec, f->id,
				      f->origin == FAULT_FROM_CONFIG ? "config" : "control",
				      f->matched, f->injected, held) < 0) {
			free(spec);
			ret = -ENOMEM;
			break;
		}
		fn(arg, line);
		free(line);
		free(spec);
	}
	lock_drop(&fs->lock);
	return ret;
}

void fault_stats(struct fault_set *fs, struct fault_stats *st)
{
	memset(st, 0, sizeof(*st));
	lock_take(&fs->lock);
	memcpy(st->errors, fs->op_errors, sizeof(st->errors));
	memcpy(st->delays, fs->op_delays, sizeof(st->delays));
	memcpy(st->stalls, fs->op_stalls, sizeof(st->stalls));
	memcpy(st->lies, fs->op_lies, sizeof(st->lies));
	memcpy(st->corrupts, fs->op_corrupts, sizeof(st->corrupts));
	for (struct fault_held *h = fs->held; h; h = h->next)
		st->held++;
	for (struct fault *f = fs->list; f && st->nr < STATS_MAX_FAULTS; f = f->next) {
		st->f[st->nr].id = f->id;
		st->f[st->nr].matched = f->matched;
		st->f[st->nr].injected = f->injected;
		st->nr++;
	}
	lock_drop(&fs->lock);
}

void fault_stats_reset(struct fault_set *fs)
{
	lock_take(&fs->lock);
	memset(fs->op_errors, 0, sizeof(fs->op_errors));
	memset(fs->op_delays, 0, sizeof(fs->op_delays));
	memset(fs->op_stalls, 0, sizeof(fs->op_stalls));
	memset(fs->op_lies, 0, sizeof(fs->op_lies));
	memset(fs->op_corrupts, 0, sizeof(fs->op_corrupts));
	for (struct fault *f = fs->list; f; f = f->next)
		f->matched = f->injected = 0;
	lock_drop(&fs->lock);
}
