/* SPDX-License-Identifier: MIT */
/* Tunables of the request queue (the controller's are in core/ctrl/ctrl_params.h).
 * Filled in by conf/ (or by tests), consumed by core/. Plain data, no locks. */
#ifndef PLUGDISK_PARAMS_H
#define PLUGDISK_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

/* nomerges, as in /sys/block/<dev>/queue/nomerges */
enum {
	NOMERGES_ALL = 0,	/* back, front and gap-fill merges */
	NOMERGES_SIMPLE = 1,	/* only the one-hit lookup against the last merged request */
	NOMERGES_NONE = 2,	/* no merging at all */
};

struct queue_params {
	bool plug;			/* queue.plug */
	uint32_t unplug_threshold;	/* queue.unplug_threshold: requests */
	uint32_t unplug_delay_us;	/* queue.unplug_delay_us */
	uint32_t nomerges;		/* queue.nomerges: 0, 1 or 2 */
	uint32_t max_request_size;	/* queue.max_request_size: bytes */
	uint32_t nr_requests;		/* queue.nr_requests: queued requests */
};

/* Built-in defaults; every key has one so plugdisk runs with no config file. */
#define QUEUE_DEFAULT_PLUG		true
#define QUEUE_DEFAULT_UNPLUG_THRESHOLD	32u
#define QUEUE_DEFAULT_UNPLUG_DELAY_US	3000u
#define QUEUE_DEFAULT_NOMERGES		0u
#define QUEUE_DEFAULT_MAX_REQUEST_SIZE	(1024u * 1024u)
#define QUEUE_DEFAULT_NR_REQUESTS	128u

void queue_params_default(struct queue_params *qp);

#endif
