/* SPDX-License-Identifier: MIT */
/* Tunables of the request queue and the controller emulator.
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

struct ctrl_params {
	uint32_t queue_depth;		/* controller.queue_depth: command slots */
	uint32_t workers;		/* controller.workers: backend threads */
	uint64_t bandwidth;		/* controller.bandwidth: B/s, 0 = unlimited */
	uint64_t read_bandwidth;	/* controller.read_bandwidth */
	uint64_t write_bandwidth;	/* controller.write_bandwidth */
	uint64_t iops;			/* controller.iops: commands/s, 0 = unlimited */
	uint64_t read_iops;		/* controller.read_iops */
	uint64_t write_iops;		/* controller.write_iops */
	uint32_t burst_ms;		/* controller.burst_ms */
	uint64_t latency_us;		/* controller.latency_us: every command */
	uint64_t read_latency_us;	/* controller.read_latency_us: 0 = latency_us */
	uint64_t write_latency_us;	/* controller.write_latency_us: 0 = latency_us */
	uint64_t flush_latency_us;	/* controller.flush_latency_us: 0 = latency_us */
};

/* The backing store's connection settings (NBD; the file backend has none). */
struct backend_params {
	uint32_t connections;		/* controller.connections: 0 = what the server allows,
					 * up to BACKEND_DEFAULT_CONNECTIONS */
	uint32_t timeout_ms;		/* backend.timeout_ms: no reply for this long = dead */
};

/* Built-in defaults; every key has one so plugdisk runs with no config file. */
#define QUEUE_DEFAULT_PLUG		true
#define QUEUE_DEFAULT_UNPLUG_THRESHOLD	32u
#define QUEUE_DEFAULT_UNPLUG_DELAY_US	3000u
#define QUEUE_DEFAULT_NOMERGES		0u
#define QUEUE_DEFAULT_MAX_REQUEST_SIZE	(1024u * 1024u)
#define QUEUE_DEFAULT_NR_REQUESTS	128u

#define CTRL_DEFAULT_QUEUE_DEPTH	32u
#define CTRL_DEFAULT_WORKERS		4u
#define CTRL_DEFAULT_BURST_MS		10u

#define BACKEND_DEFAULT_CONNECTIONS	4u
#define BACKEND_MAX_CONNECTIONS		16u
#define BACKEND_DEFAULT_TIMEOUT_MS	30000u

void queue_params_default(struct queue_params *qp);
void ctrl_params_default(struct ctrl_params *cp);
void backend_params_default(struct backend_params *bp);

#endif
