/* SPDX-License-Identifier: MIT */
/* The keys of the write cache (cache.*, core/cache/cache.h). */
#include <stdlib.h>
#include <string.h>

#include "conf/keys/key.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)
#define PATH_LEN 4095	/* PATH_MAX - 1 */

static const struct conf_key cache_keys[] = {
	CONF_ENUM_KEY_FLAGS("cache.mode", cache.mode, cache_mode_names, CONF_RESTART,
			    "none: write-through; writeback: a volatile write cache that a power cut drops"),
	CONF_KEY("cache.size", CONF_SIZE, cache.size, 16 * MiB, 64 * GiB, 512, CONF_RESTART,
		 "bytes of unflushed writes the cache holds before writers wait"),
	CONF_KEY("cache.destage_delay_ms", CONF_U32, cache.destage_delay_ms, 0, 3600000, 0, 0,
		 "least time a write stays in the cache before the background destages it"),
	CONF_KEY("cache.destage_rate", CONF_SIZE, cache.destage_rate, 4096, TiB, 0, CONF_ZERO_OK | CONF_PER_SEC,
		 "bytes/s the background destages at, 0 = unlimited"),
	CONF_ENUM_KEY("cache.flush", cache.flush, cache_flush_names,
		      "honour: a flush makes its writes durable; ignore: flushes lie"),
	CONF_KEY("cache.atomic_write", CONF_U32, cache.atomic_write, 512, 16384, 0, 0,
		 "bytes a write is all-or-nothing in at a power cut: 512, 1024 .. 16384; a reload "
		 "sets it for the writes cached after it, and cache.log records the change"),
	CONF_ENUM_KEY("cache.powercut", cache.powercut, cache_cut_names,
		      "what a power cut keeps: drop, prefix, subset or tear"),
	CONF_KEY("cache.seed", CONF_U64, cache.seed, 0, UINT64_MAX, 0, CONF_RESTART,
		 "seed of the destage order and of power cuts, 0 = from the clock (logged)"),
	CONF_KEY("cache.keep_opens", CONF_BOOL, cache_keep_opens, 0, 1, 0, CONF_RESTART,
		 "false: an open of disk made before a power cut fails every request with EIO "
		 "from the cut on, as after a real power loss; true: it works again after "
		 "poweron"),
	CONF_KEY("cache.log", CONF_STRING, cache.log, 0, PATH_LEN, 0, CONF_RESTART,
		 "write log for plugdisk replay: completed writes, flushes, discards and power "
		 "cuts; \"\" = none"),
};

static void cache_defaults(struct pd_config *c)
{
	cache_params_default(&c->cache);
	c->cache.log = strdup("");
}

static int cache_validate(struct conf_load *ld, const struct pd_config *c)
{
	uint32_t a = c->cache.atomic_write;

	if (a & (a - 1))
		return conf_reject(ld, "cache.atomic_write", "must be a power of two (got %u)", a);
	/* Only the write cache logs. */
	if (c->cache.log[0] && c->cache.mode != CACHE_MODE_WRITEBACK)
		return conf_reject(ld, "cache.log", "needs cache.mode = \"writeback\"");
	/* (cache.size needs no rule against queue.max_request_size: its minimum is that key's
	 * maximum, so the largest request always fits in the cache.) */
	return 0;
}

const struct conf_table conf_cache_table = CONF_TABLE(cache_keys, cache_defaults, cache_validate);
