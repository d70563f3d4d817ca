/* SPDX-License-Identifier: MIT */
/* Built-in defaults of the queue and controller tunables (see core/params.h).
 * Every field is set explicitly so that a new field without a default stands out. */
#include "core/params.h"

void queue_params_default(struct queue_params *qp)
{
	qp->plug = QUEUE_DEFAULT_PLUG;
	qp->unplug_threshold = QUEUE_DEFAULT_UNPLUG_THRESHOLD;
	qp->unplug_delay_us = QUEUE_DEFAULT_UNPLUG_DELAY_US;
	qp->nomerges = QUEUE_DEFAULT_NOMERGES;
	qp->max_request_size = QUEUE_DEFAULT_MAX_REQUEST_SIZE;
	qp->nr_requests = QUEUE_DEFAULT_NR_REQUESTS;
}

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
}

void backend_params_default(struct backend_params *bp)
{
	bp->connections = 0; /* what the server allows, up to BACKEND_DEFAULT_CONNECTIONS */
	bp->timeout_ms = BACKEND_DEFAULT_TIMEOUT_MS;
}
