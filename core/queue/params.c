/* SPDX-License-Identifier: MIT */
/* Built-in defaults of the queue's tunables (see core/queue/params.h).
 * Every field is set explicitly so that a new field without a default stands out. */
#include "core/queue/params.h"

void queue_params_default(struct queue_params *qp)
{
	qp->plug = QUEUE_DEFAULT_PLUG;
	qp->unplug_threshold = QUEUE_DEFAULT_UNPLUG_THRESHOLD;
	qp->unplug_delay_us = QUEUE_DEFAULT_UNPLUG_DELAY_US;
	qp->nomerges = QUEUE_DEFAULT_NOMERGES;
	qp->max_request_size = QUEUE_DEFAULT_MAX_REQUEST_SIZE;
	qp->nr_requests = QUEUE_DEFAULT_NR_REQUESTS;
}
