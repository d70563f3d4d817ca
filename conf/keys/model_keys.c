/* SPDX-License-Identifier: MIT */
/* The controller's keys for its latency models (core/ctrl/latency.h), its cost rule and its burst
 * credits (core/ctrl/rate.h), and the rules across them. */
#include <inttypes.h>

#include "conf/keys/key.h"
#include "core/ctrl/latency.h"

#define MiB (1ull << 20)
#define TiB (1ull << 40)
#define MAX_LATENCY_US 3600000000ull /* one hour, as the other latency keys */

static const struct conf_key model_keys[] = {
	CONF_KEY("controller.latency_absorb", CONF_BOOL, ctrl.latency_absorb, 0, 1, 0, 0,
		 "end each service time early by the path's own measured lateness"),
	CONF_KEY("controller.latency_absorb_host", CONF_BOOL, ctrl.latency_absorb_host, 0, 1, 0, 0,
		 "a command back within 500 us of the last one's end starts where it ended"),
	CONF_ENUM_KEY("controller.latency_dist", ctrl.latency_dist, lat_dist_name,
		      "constant, uniform, normal, lognormal or pareto; latency_us is its median"),
	CONF_ENUM_KEY("controller.latency_tail", ctrl.latency_tail, lat_tail_name,
		      "which percentile the *latency_tail_us keys give: p99 or p99.9"),
	CONF_KEY("controller.latency_tail_us", CONF_U64, ctrl.latency_tail_us, 0, MAX_LATENCY_US, 0,
		 0, "service time at the tail percentile, 0 = constant"),
	CONF_KEY("controller.read_latency_tail_us", CONF_U64, ctrl.read_latency_tail_us, 0,
		 MAX_LATENCY_US, 0, 0, "a read's, 0 = latency_tail_us"),
	CONF_KEY("controller.write_latency_tail_us", CONF_U64, ctrl.write_latency_tail_us, 0,
		 MAX_LATENCY_US, 0, 0, "a write's, 0 = latency_tail_us"),
	CONF_KEY("controller.flush_latency_tail_us", CONF_U64, ctrl.flush_latency_tail_us, 0,
		 MAX_LATENCY_US, 0, 0, "a flush's, 0 = latency_tail_us"),
	CONF_KEY("controller.latency_seed", CONF_U64, ctrl.latency_seed, 0, UINT64_MAX - 1, 0, 0,
		 "seed of the latency draws: the same seed repeats a run"),
	CONF_KEY("controller.rpm", CONF_U32, ctrl.rpm, 0, 30000, 0, 0,
		 "rotating disk: spindle speed; 0 = no seek model"),
	CONF_KEY("controller.seek_settle_us", CONF_U64, ctrl.seek_settle_us, 0, 1000000, 0, 0,
		 "rotating disk: the shortest seek (track to track)"),
	CONF_KEY("controller.seek_full_us", CONF_U64, ctrl.seek_full_us, 0, 1000000, 0, 0,
		 "rotating disk: a full-stroke seek"),
	CONF_KEY("controller.media_rate_outer", CONF_SIZE, ctrl.media_rate_outer, 512, TiB, 0,
		 CONF_ZERO_OK | CONF_PER_SEC, "rotating disk: bytes/s at the first LBA (outer zone)"),
	CONF_KEY("controller.media_rate_inner", CONF_SIZE, ctrl.media_rate_inner, 512, TiB, 0,
		 CONF_ZERO_OK | CONF_PER_SEC, "rotating disk: bytes/s at the last LBA, 0 = media_rate_outer"),
	CONF_ENUM_KEY("controller.reorder", ctrl.reorder, ctrl_reorder_name,
		      "fifo, or sptf: shortest positioning time first (needs rpm)"),
	CONF_KEY("controller.write_cliff_bytes", CONF_SIZE, ctrl.write_cliff_bytes, 4096,
		 1ull << 50, 0, CONF_ZERO_OK,
		 "flash: bytes of the fast write cache; 0 = no write cliff"),
	CONF_KEY("controller.write_cliff_window_ms", CONF_U64, ctrl.write_cliff_window_ms, 1,
		 86400000, 0, CONF_ZERO_OK, "flash: the full cache drains in this time"),
	CONF_KEY("controller.write_cliff_bandwidth", CONF_SIZE, ctrl.write_cliff_bandwidth, 512,
		 TiB, 0, CONF_ZERO_OK | CONF_PER_SEC, "flash: bytes/s of writes that find the cache full"),
	CONF_KEY("controller.iops_size", CONF_SIZE, ctrl.iops_size, 512, 16 * MiB, 512,
		 CONF_ZERO_OK,
		 "an I/O of up to this size counts once, a larger one ceil(len/size); 0 = per command"),
	CONF_KEY("controller.credit_capacity", CONF_U64, ctrl.credit_capacity, 0, 1000000000, 0, 0,
		 "burst credits: I/O credits of a full bucket (it starts full); 0 = none"),
	CONF_KEY("controller.credit_baseline_iops", CONF_U64, ctrl.credit_baseline_iops, 0,
		 10000000, 0, 0, "burst credits: I/O per second earned, at least"),
	CONF_KEY("controller.credit_iops_per_gib", CONF_U64, ctrl.credit_iops_per_gib, 0, 1000000,
		 0, 0, "burst credits: I/O per second earned per GiB of disk, if more"),
};

/* The controller table (base_keys.c) has set every field from ctrl_params_default(); the
 * daemon's path is real, so what the user sees should be the service time itself. */
static void model_defaults(struct pd_config *c)
{
	c->ctrl.latency_absorb = true;
}

/* Keys that only work together name the key to fix. */
static int model_validate(struct conf_load *ld, const struct pd_config *c)
{
	const struct ctrl_params *p = &c->ctrl;
	static const char *const tail_key[] = { "controller.read_latency_tail_us",
						"controller.write_latency_tail_us",
						"controller.flush_latency_tail_us" };
	const uint64_t med[] = { p->read_latency_us, p->write_latency_us, p->flush_latency_us };
	const uint64_t tail[] = { p->read_latency_tail_us, p->write_latency_tail_us,
				  p->flush_latency_tail_us };
	bool any_tail = p->latency_tail_us != 0;

	for (int i = 0; i < 3; i++) {
		uint64_t m = med[i] ? med[i] : p->latency_us;
		const char *tk = tail[i] ? tail_key[i] : "controller.latency_tail_us";
		uint64_t t = tail[i] ? tail[i] : p->latency_tail_us;

		any_tail |= tail[i] != 0;
		if (t && t <= m)
			return conf_reject(ld, tk,
					   "%" PRIu64 " must be above its median (%" PRIu64 " us)", t,
					   m);
	}
	if (p->latency_dist != LAT_DIST_CONSTANT && !any_tail)
		return conf_reject(ld, "controller.latency_dist",
				   "\"%s\" needs a tail: set controller.latency_tail_us",
				   lat_dist_name[p->latency_dist]);
	if (p->latency_dist == LAT_DIST_CONSTANT && any_tail)
		return conf_reject(ld, "controller.latency_tail_us",
				   "a tail needs controller.latency_dist other than \"constant\"");
	if (p->rpm && !p->media_rate_outer)
		return conf_reject(ld, "controller.rpm", "needs controller.media_rate_outer");
	if (!p->rpm && (p->media_rate_outer || p->media_rate_inner || p->seek_full_us ||
			p->seek_settle_us))
		return conf_reject(ld, "controller.rpm",
				   "the seek model (media_rate_*, seek_*_us) needs controller.rpm");
	if (p->seek_full_us < p->seek_settle_us)
		return conf_reject(ld, "controller.seek_full_us",
				   "%" PRIu64 " is below controller.seek_settle_us (%" PRIu64 ")",
				   p->seek_full_us, p->seek_settle_us);
	if (p->media_rate_inner > p->media_rate_outer)
		return conf_reject(ld, "controller.media_rate_inner",
				   "is above controller.media_rate_outer: the outer zones are the "
				   "fast ones");
	if (p->reorder == CTRL_REORDER_SPTF && !p->rpm)
		return conf_reject(ld, "controller.reorder",
				   "sptf needs the seek model (controller.rpm)");
	if (p->write_cliff_bytes && (!p->write_cliff_window_ms || !p->write_cliff_bandwidth))
		return conf_reject(ld, "controller.write_cliff_bytes",
				   "needs controller.write_cliff_window_ms and "
				   "controller.write_cliff_bandwidth");
	if (!p->write_cliff_bytes && (p->write_cliff_window_ms || p->write_cliff_bandwidth))
		return conf_reject(ld, "controller.write_cliff_bytes",
				   "write_cliff_window_ms and write_cliff_bandwidth need "
				   "write_cliff_bytes");
	if (p->credit_capacity && !p->credit_baseline_iops && !p->credit_iops_per_gib)
		return conf_reject(ld, "controller.credit_capacity",
				   "needs controller.credit_baseline_iops or "
				   "controller.credit_iops_per_gib");
	if (!p->credit_capacity && (p->credit_baseline_iops || p->credit_iops_per_gib))
		return conf_reject(ld, "controller.credit_capacity",
				   "credit_baseline_iops and credit_iops_per_gib need credit_capacity");
	return 0;
}

const struct conf_table conf_model_table = CONF_TABLE(model_keys, model_defaults, model_validate);
