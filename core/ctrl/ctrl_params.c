/* SPDX-License-Identifier: MIT */
/* Built-in defaults of the controller's tunables (see core/ctrl/ctrl_params.h).
 * Every field is set explicitly so that a new field without a default stands out. */
#include "core/ctrl/ctrl_params.h"

void ctrl_params_default(struct ctrl_params *cp)
{
	cp->queue_depth = CTRL_DEFAULT_QUEUE_DEPTH;
	cp->workers = CTRL_DEFAULT_WORKERS;
	/* 0 = unlimited for every rate; 0 latency = complete as soon as the backing I/O does */
	cp->bandwidth = 0;
	cp->read_bandwidth = 0;
	cp->write_bandwidth = 0;
	cp->iops = 0;
	cp->read_iops = 0;
	cp->write_iops = 0;
	cp->burst_ms = CTRL_DEFAULT_BURST_MS;
	cp->latency_us = 0;
	cp->read_latency_us = 0;
	cp->write_latency_us = 0;
	cp->flush_latency_us = 0;
	cp->latency_absorb = CTRL_DEFAULT_LATENCY_ABSORB;
	/* constant latency, no seek model, no write cliff, no cost rule, no credits */
	cp->latency_dist = 0;
	cp->latency_tail = 0;
	cp->latency_tail_us = 0;
	cp->read_latency_tail_us = 0;
	cp->write_latency_tail_us = 0;
	cp->flush_latency_tail_us = 0;
	cp->latency_seed = CTRL_DEFAULT_LATENCY_SEED;
	cp->rpm = 0;
	cp->seek_settle_us = 0;
	cp->seek_full_us = 0;
	cp->media_rate_outer = 0;
	cp->media_rate_inner = 0;
	cp->reorder = CTRL_REORDER_FIFO;
	cp->write_cliff_bytes = 0;
	cp->write_cliff_window_ms = 0;
	cp->write_cliff_bandwidth = 0;
	cp->iops_size = 0;
	cp->credit_capacity = 0;
	cp->credit_baseline_iops = 0;
	cp->credit_iops_per_gib = 0;
	cp->disk_size = 0;
}

/* Clear from @cp every key that slows the disk down: the rates, the burst credits, the
 * service times and their tails, the seek model and the write cliff. A new limit key belongs
 * here too, or the stop drains at its pace. */
void ctrl_params_lift_limits(struct ctrl_params *cp)
{
	cp->bandwidth = cp->read_bandwidth = cp->write_bandwidth = 0;
	cp->iops = cp->read_iops = cp->write_iops = 0;
	cp->credit_capacity = 0;
	cp->latency_us = cp->read_latency_us = cp->write_latency_us = cp->flush_latency_us = 0;
	cp->latency_tail_us = cp->read_latency_tail_us = cp->write_latency_tail_us = 0;
	cp->flush_latency_tail_us = 0;
	cp->rpm = 0;
	cp->media_rate_outer = cp->media_rate_inner = 0;
	cp->write_cliff_bytes = 0;
}
