/* SPDX-License-Identifier: MIT */
/* FUSE over io_uring under libfuse 3.14: plugdisk's own transport, plugged into the session
 * through fuse_session_custom_io(). */
#ifndef PLUGDISK_FUSE_URING_H
#define PLUGDISK_FUSE_URING_H

#include <stdint.h>

struct pd;

/* What the stats file shows of the transport. */
struct pd_uring_info {
	const char *transport;		/* "io_uring" or "classic" */
	uint32_t queues, depth;		/* ring queues and entries per queue; 0 on classic */
	uint64_t requests;		/* requests received through the ring */
	uint64_t commit_waits;		/* replies that had to wake their queue's thread */
};

/* Before fuse_session_mount() (the kernel decides at mount time whether FUSE_INIT offers
 * io_uring): decide by mount.io_uring whether to try io_uring. With mount.io_uring = on,
 * running as root, it sets /sys/module/fuse/parameters/enable_uring. Returns 0 (io_uring
 * to be tried, or classic chosen and logged), or -EOPNOTSUPP when mount.io_uring = on and
 * the transport cannot be had (logged). Main thread. */
int pd_uring_prepare(struct pd *pd);

/* After fuse_session_mount(), before the receive threads start: set up one ring per
 * possible CPU, install the custom I/O on the session and start the ring threads (which
 * wait for FUSE_INIT). Returns 0 (io_uring being tried, or classic chosen and logged), or
 * -EOPNOTSUPP as pd_uring_prepare(). Main thread. */
int pd_uring_setup(struct pd *pd);

/* After the receive threads started: wait until FUSE_INIT was answered and the ring
 * entries registered, then log which transport is in use and why. Returns 0, or
 * -EOPNOTSUPP when mount.io_uring = on and the rings could not be registered (logged).
 * Main thread. */
int pd_uring_wait_ready(struct pd *pd);

/* Stop and join the ring threads. Replies sent afterwards still reach their entries. */
void pd_uring_stop(struct pd *pd);

/* Free the rings; after fuse_session_destroy(), when nothing can reply any more. */
void pd_uring_destroy(struct pd *pd);

/* The max_background to answer FUSE_INIT with when the rings are about to be used, else 0
 * (keep the classic value). Called from the INIT handler. Background requests (asynchronous
 * direct I/O, readahead, writeback) are kept below one queue's depth, so that every queue
 * always has entries left for other requests (a `cat stats` never waits behind a throttled
 * disk's backlog), as the classic receive threads always read the next request. */
unsigned int pd_uring_max_background(struct pd *pd);

/* Answer the request in ring entry @e (taken by pd_disk_ring_rw()): with -errno @error, or
 * with @len bytes of reply argument: copied from @arg, or, @arg NULL, already at the start of
 * the entry's payload (a read's data). The entry goes back to the kernel for its next
 * request. Any thread. */
struct ring_ent;
void pd_uring_answer(struct ring_ent *e, int error, const void *arg, uint32_t len);

/* Fill @info (any thread). */
void pd_uring_info(struct pd *pd, struct pd_uring_info *info);

/* Zero the counters (`echo reset > stats`). */
void pd_uring_stats_reset(struct pd *pd);

#endif
