// SPDX-License-Identifier: MIT
/* The chain of stages (see chain.h): the stage ops of the faults, the write cache and the
 * backend, building the chain, and the operations that walk it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/queue/stats.h"
#include "core/stage/chain.h"
#include "core/util/log.h"

/* ---- the faults ---- */

static uint64_t faults_admit_ns(void *self, const struct request *rq)
{
	return fault_latency_ns(self, rq);
}

static bool faults_may_hold(void *self)
{
	return fault_any(self);
}

static void faults_stop(void *self)
{
	unsigned int held = fault_nr_held(self);

	if (held)
		log_info("stopping: releasing %u stalled requests", held);
	fault_close(self); /* and none added through control from now on */
}

static int faults_reconfigure(void *self, const struct chain_params *p, char *err,
			      size_t errlen)
{
	if (p->keep_faults)
		return 0;
	return fault_replace_configured(self, p->faults, p->nfaults, err, errlen) ? -EINVAL : 0;
}

static void faults_snapshot(void *self, struct stats_snapshot *ss)
{
	fault_stats(self, &ss->faults);
}

static void faults_stats_reset(void *self)
{
	fault_stats_reset(self);
}

static void faults_destroy(void *self)
{
	fault_set_destroy(self);
}

static const struct stage_ops faults_ops = {
	.name = "faults",
	.exec = fault_exec,
	.admit_ns = faults_admit_ns,
	.may_hold = faults_may_hold,
	.stop = faults_stop,
	.reconfigure = faults_reconfigure,
	.snapshot = faults_snapshot,
	.stats_reset = faults_stats_reset,
	.destroy = faults_destroy,
};

/* ---- the write cache ---- */

static int wcache_freeze(void *self)
{
	return cache_freeze(self);
}

static void wcache_thaw(void *self)
{
	cache_thaw(self);
}

static int wcache_powercut(void *self, int mode, uint64_t seed, const char *why)
{
	return cache_powercut(self, mode, seed, why);
}

static int wcache_poweron(void *self)
{
	return cache_poweron(self);
}

static int wcache_writeout(void *self)
{
	return cache_writeout(self);
}

static int wcache_reconfigure(void *self, const struct chain_params *p, char *err,
			      size_t errlen)
{
	(void)err;
	(void)errlen;
	if (p->cache)
		cache_reconfigure(self, p->cache);
	return 0;
}

static size_t wcache_stats(void *self, char *buf, size_t len)
{
	return cache_format_stats(self, buf, len);
}

static void wcache_stats_reset(void *self)
{
	cache_stats_reset(self);
}

static void wcache_destroy(void *self)
{
	cache_free(self);
}

static const struct stage_ops cache_ops = {
	.name = "cache",
	.exec = cache_exec,
	.freeze = wcache_freeze,
	.thaw = wcache_thaw,
	.powercut = wcache_powercut,
	.poweron = wcache_poweron,
	.writeout = wcache_writeout,
	.reconfigure = wcache_reconfigure,
	.stats = wcache_stats,
	.stats_reset = wcache_stats_reset,
	.destroy = wcache_destroy,
};

/* ---- the backend ---- */

static int backend_writeout(void *self)
{
	return backend_sync(self);
}

static size_t backend_stats_lines(void *self, char *buf, size_t len)
{
	return backend_stats(self, buf, len);
}

static bool backend_may_hold(void *self)
{
	const struct backend *be = self;

	return be->ops->remote;
}

static const struct stage_ops backend_ops = {
	.name = "backend",
	.exec = backend_exec,
	.may_hold = backend_may_hold,
	.writeout = backend_writeout,
	.stats = backend_stats_lines,
};

struct stage backend_stage(struct backend *be)
{
	return (struct stage){ .ops = &backend_ops, .self = be };
}

/* ---- building ---- */

int chain_build(struct chain *ch, const struct stage *bottom, const struct chain_params *p,
		char *err, size_t errlen)
{
	struct stage up[CHAIN_MAX_STAGES];	/* bottom first */
	unsigned int n = 0;
	int ret;

	memset(ch, 0, sizeof(*ch));
	up[n++] = *bottom;
	ret = fault_set_init(&ch->faults, bottom->ops->exec, bottom->self, p->timer, p->clock,
			     p->clock_arg);
	if (ret) {
		log_err("fault_set_init: %s", strerror(-ret));
		ch->failed = "faults";
		snprintf(err, errlen, "the fault stage could not start: %s", strerror(-ret));
		return ret;
	}
	up[n++] = (struct stage){ .ops = &faults_ops, .self = &ch->faults };
	/* The configured faults first: a refused one must leave nothing done (a write log
	 * truncated, a thread started). */
	if (!p->keep_faults &&
	    fault_replace_configured(&ch->faults, p->faults, p->nfaults, err, errlen)) {
		ch->failed = "faults";
		fault_set_destroy(&ch->faults);
		return -EINVAL;
	}
	if (p->cache && p->cache->mode == CACHE_MODE_WRITEBACK) {
		ret = cache_init(&ch->cache, p->cache, fault_exec, &ch->faults, p->clock,
				 p->clock_arg);
		if (ret) {
			log_err("cache_init: %s", strerror(-ret));
			goto fail_faults;
		}
		/* What a cut keeps goes to the image below the faults. */
		cache_set_image(&ch->cache, bottom->ops->exec, bottom->self);
		if (p->cache->log && p->cache->log[0])
			ret = cache_open_log(&ch->cache, p->cache->log, p->disk_size);
		if (!ret && p->cache_thread)
			ret = cache_start_thread(&ch->cache);
		if (ret) {
			cache_destroy(&ch->cache);
			goto fail_faults;
		}
		ch->has_cache = true;
		up[n++] = (struct stage){ .ops = &cache_ops, .self = &ch->cache };
	}
	for (unsigned int i = 0; i < n; i++)
		ch->st[i] = up[n - 1 - i];
	ch->n = n;
	return 0;

fail_faults:
	ch->failed = "cache";
	snprintf(err, errlen, "the write cache could not start: %s", strerror(-ret));
	fault_set_destroy(&ch->faults);
	return ret;
}

/* ---- walking ---- */

uint64_t chain_admit_ns(void *arg, const struct request *rq)
{
	struct chain *ch = arg;
	uint64_t ns = 0;

	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->admit_ns)
			ns += ch->st[i].ops->admit_ns(ch->st[i].self, rq);
	return ns;
}

int chain_freeze(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];
		int ret;

		if (!s->ops->freeze)
			continue;
		ret = s->ops->freeze(s->self);
		if (ret) {
			/* This stage and those above it, bottom up. */
			for (unsigned int j = i + 1; j-- > 0;)
				if (ch->st[j].ops->thaw)
					ch->st[j].ops->thaw(ch->st[j].self);
			return ret;
		}
	}
	return 0;
}

void chain_thaw(struct chain *ch)
{
	for (unsigned int i = ch->n; i-- > 0;)
		if (ch->st[i].ops->thaw)
			ch->st[i].ops->thaw(ch->st[i].self);
}

int chain_powercut(struct chain *ch, int mode, uint64_t seed, const char *why)
{
	int ret = -EOPNOTSUPP;

	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];

		if (s->ops->powercut) {
			int r = s->ops->powercut(s->self, mode, seed, why);

			if (ret == -EOPNOTSUPP)
				ret = r;
		}
	}
	return ret;
}

int chain_poweron(struct chain *ch)
{
	int ret = -EOPNOTSUPP;

	/* Bottom up: a stage serves again only over stages that already do. */
	for (unsigned int i = ch->n; i-- > 0;) {
		const struct stage *s = &ch->st[i];

		if (s->ops->poweron) {
			int r = s->ops->poweron(s->self);

			if (ret == -EOPNOTSUPP)
				ret = r;
		}
	}
	return ret;
}

void chain_stop(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->stop)
			ch->st[i].ops->stop(ch->st[i].self);
}

int chain_writeout(struct chain *ch)
{
	int ret = 0;

	if (ch->written_out)
		return 0;
	ch->written_out = true;
	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];

		if (s->ops->writeout) {
			int r = s->ops->writeout(s->self);

			if (!ret)
				ret = r;
		}
	}
	return ret;
}

int chain_reconfigure(struct chain *ch, const struct chain_params *p, char *err,
		      size_t errlen)
{
	int ret = 0;

	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];
		int r;

		if (!s->ops->reconfigure)
			continue;
		/* Every stage takes its part; the first refusal's message is kept. */
		r = s->ops->reconfigure(s->self, p, ret ? NULL : err, ret ? 0 : errlen);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

size_t chain_stats(struct chain *ch, char *buf, size_t len)
{
	size_t used = 0;

	for (unsigned int i = ch->n; i-- > 0;) {
		const struct stage *s = &ch->st[i];

		if (s->ops->stats && used < len)
			used += s->ops->stats(s->self, buf + used, len - used);
	}
	if (!ch->has_cache && used < len)
		used += cache_format_stats(NULL, buf + used, len - used);
	return used;
}

void chain_snapshot(struct chain *ch, struct stats_snapshot *ss)
{
	memset(&ss->faults, 0, sizeof(ss->faults));
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->snapshot)
			ch->st[i].ops->snapshot(ch->st[i].self, ss);
}

bool chain_may_hold(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->may_hold && ch->st[i].ops->may_hold(ch->st[i].self))
			return true;
	return false;
}

void chain_stats_reset(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->stats_reset)
			ch->st[i].ops->stats_reset(ch->st[i].self);
}

void chain_destroy(struct chain *ch)
{
	/* Top down: a stage goes before the stage it sends requests to. */
	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];

		if (s->ops->destroy)
			s->ops->destroy(s->self);
	}
	ch->n = 0;
}
