/* SPDX-License-Identifier: MIT */
/* The disk's data path: FUSE reads, writes, fsyncs and fallocates on MOUNTPOINT/disk become
 * bios; their completions become replies. Data buffers in flight are bounded. */
#ifndef PLUGDISK_DATA_H
#define PLUGDISK_DATA_H

#include <fuse_lowlevel.h>

struct pd;

/* The largest FUSE write, and the receive buffers' data capacity. */
#define PD_MAX_WRITE (1024u * 1024u)
/* Bytes of a receive buffer: max_write plus a page for the request header. Every large
 * buffer of the data path has this capacity, so that a receive buffer can become a bio's
 * data buffer and back. libfuse is told the same size (fuse_session's bufsize follows
 * max_write plus a page, and pd_data_rxbuf_alloc() checks it). */
#define PD_RXBUF_SIZE (PD_MAX_WRITE + 4096u)

/* Serve a read, write, fsync or fallocate of the disk. Each replies, now or on completion. */
void pd_disk_read(fuse_req_t req, size_t size, off_t off);
/* A write flag: make the write durable before replying, as a write with FUA (Force Unit
 * Access) does on a block device: the write, then a flush. */
#define PD_WRITE_FUA 1u
void pd_disk_write(fuse_req_t req, struct fuse_bufvec *bufv, off_t off, unsigned int flags);
void pd_disk_fsync(fuse_req_t req);
void pd_disk_fallocate(fuse_req_t req, int mode, off_t off, off_t len);

/* The calling receive thread reads requests into @buf (NULL when it stops): a large write may
 * take the buffer over instead of copying its data. */
void pd_data_set_rxbuf(struct fuse_buf *buf);

/* A kept large buffer of PD_RXBUF_SIZE bytes for a receive thread that has none, or NULL
 * (libfuse then allocates one). */
void *pd_data_rxbuf_get(struct pd *pd);

/* Submit the requests parked by a saturated data budget, while it has room. Receive threads
 * call it before waiting for the next request, and when kick_fd is readable. */
void pd_data_unpark(struct pd *pd);

/* The requests parked now, those ever parked, and the most parked at once (the stats'
 * fuse_parked, fuse_parks, fuse_parked_peak). */
void pd_data_parked_info(struct pd *pd, uint64_t *now, uint64_t *ever, uint64_t *peak);

/* How many requests are parked. */
unsigned int pd_data_nr_parked(struct pd *pd);

#endif
