// SPDX-License-Identifier: MIT
/* The write cache as a stage of the chain (core/stage/stage.h): its ops. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache/cache.h"
#include "core/stage/chain.h"
#include "core/util/log.h"

/* In the chain only with cache.mode = writeback: *@self stays NULL otherwise. */
static int wcache_init(void **self, const struct chain_params *p, const struct stage *below,
		       const struct stage *image, char *err, size_t errlen)
{
	struct cache *c;
	int ret;

	if (!p->cache || p->cache->mode != CACHE_MODE_WRITEBACK)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ret = cache_init(c, p->cache, below->ops->exec, below->self, p->clock, p->clock_arg);
	if (ret) {
		log_err("cache_init: %s", strerror(-ret));
		goto err;
	}
	/* What a cut keeps goes to the image: the first stage below that keeps data. */
	cache_set_image(c, image->ops->exec, image->self);
	if (p->cache->log && p->cache->log[0])
		ret = cache_open_log(c, p->cache->log, p->disk_size);
	if (!ret && p->cache_thread)
		ret = cache_start_thread(c);
	if (ret) {
		cache_destroy(c);
		goto err;
	}
	*self = c;
	return 0;
err:
	free(c);
	snprintf(err, errlen, "the write cache could not start: %s", strerror(-ret));
	return ret;
}

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

static uint64_t wcache_power_gen(void *self)
{
	return cache_power_gen(self);
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

/* Zeros without a write cache (@self NULL), so that the names are stable. */
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
	free(self);
}

const struct stage_ops cache_stage_ops = {
	.name = "cache",
	.init = wcache_init,
	.exec = cache_exec,
	.freeze = wcache_freeze,
	.thaw = wcache_thaw,
	.powercut = wcache_powercut,
	.poweron = wcache_poweron,
	.power_gen = wcache_power_gen,
	.writeout = wcache_writeout,
	.reconfigure = wcache_reconfigure,
	.stats = wcache_stats,
	.stats_absent = true,
	.stats_table = &cache_stats_table,
	.stats_reset = wcache_stats_reset,
	.destroy = wcache_destroy,
	.waits_below = true,
};
