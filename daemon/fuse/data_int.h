/* SPDX-License-Identifier: MIT */
/* The data path, inside: a request's bio (struct pd_io), a parked request, and what the
 * request side (data.c) and the data budget with its parked requests and large buffers
 * (data_budget.c) call of each other. */
#ifndef PLUGDISK_DATA_INT_H
#define PLUGDISK_DATA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "daemon/daemon.h"
#include "daemon/fuse/data.h"

/* Read and write buffers in flight, at most (one larger request may always go alone). */
#define PD_DATA_BUDGET (16u * 1024u * 1024u)
/* Data of this many bytes or more goes in a large buffer of PD_RXBUF_SIZE bytes. */
#define PD_BIGBUF_MIN (64u * 1024u)

/* One FUSE request in flight, or one bio of a range operation (fanout != NULL). */
struct pd_fanout;
struct pd_io {
	struct bio bio;
	fuse_req_t req;
	struct pd_fanout *fanout;	/* the range operation this bio is part of, or NULL */
	size_t reply_len;	/* bytes to report on success */
	struct pd *pd;
	size_t charged;		/* bytes of data taken from the daemon's data budget */
	void *bigbuf;		/* the large buffer that holds its data (see pd_bigbuf_put), or NULL */
	/* A write to be made durable before its reply (PD_WRITE_FUA): the bio turns into a
	 * flush once the write is done, and the write's reply waits for the flush. Set before
	 * submission; then only the completion, which owns the bio, changes them. */
	bool fua;		/* the write is not done yet */
	bool fua_flush;		/* the bio is now the flush */
	/* The ring entry the request came in and is answered into (pd_disk_ring_rw()), which
	 * also holds this pd_io; NULL for a request that came through libfuse. */
	struct ring_ent *ring;
	struct iovec iov;
	char data[];		/* the read or write buffer, or a range bio's iovecs */
};

/* A request parked by a saturated data budget, on pd->parked (data_lock) until submitted. */
struct pd_parked {
	struct pd_parked *next;
	fuse_req_t req;
	enum bio_op op;
	uint64_t off;
	size_t len;
	void *mem;		/* a write's data buffer: a receive buffer (big) or a heap copy */
	char *data;		/* a write's data, inside mem */
	bool big;		/* mem is a receive buffer */
	bool fua;		/* a write flagged PD_WRITE_FUA */
};

/* data_budget.c. Take @bytes of the data budget, waiting if need be; or return false without
 * waiting when @may_park and this is the last receive thread not waiting (the caller then
 * parks the request). Takes data_lock. */
bool pd_data_get_or_park(struct pd *pd, size_t bytes, bool may_park);
/* Take @bytes of the data budget, waiting if need be. */
void pd_data_get(struct pd *pd, size_t bytes);
/* Give back @bytes of the data budget, and kick the receive threads when requests are parked. */
void pd_data_put(struct pd *pd, size_t bytes);
/* A kept large buffer of PD_RXBUF_SIZE bytes, or a new one; NULL only when out of memory. */
void *pd_bigbuf_get(struct pd *pd);
/* Keep a large buffer done with for reuse, or free it when enough are kept. */
void pd_bigbuf_put(struct pd *pd, void *mem);
/* Park a request whose budget pd_data_get_or_park() refused, behind those already parked. */
void pd_park(struct pd *pd, struct pd_parked *pk);

/* data.c. The budget a read or write of @len bytes takes (@ext: its data is in a receive
 * buffer). */
size_t pd_io_charge(size_t len, bool ext);
/* A read or write of @len bytes whose budget, pd_io_charge(), the caller took; NULL (the
 * budget given back) when out of memory. */
struct pd_io *pd_io_new_charged(struct pd *pd, fuse_req_t req, enum bio_op op, uint64_t off,
				size_t len, void *ext);

#endif
