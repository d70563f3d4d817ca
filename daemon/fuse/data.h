/* SPDX-License-Identifier: MIT */
/* The disk's data path: FUSE reads, writes, fsyncs and fallocates on MOUNTPOINT/disk become
 * bios; their completions become replies. Data buffers in flight are bounded. */
#ifndef PLUGDISK_DATA_H
#define PLUGDISK_DATA_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

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
/* The flags of a disk write from its open's @fh (daemon/fuse/disk_open.h) and the write's own open flags @flags
 * (fuse_write_in.fh and .flags): PD_WRITE_FUA for an O_DSYNC write through an O_DIRECT open.
 * The kernel follows a write through the page-cache path that is O_DSYNC (the open's flags,
 * or RWF_DSYNC; O_SYNC includes it) with an fsync, but not one through an FOPEN_DIRECT_IO
 * open: it only passes O_DSYNC in the write's flags. */
unsigned int pd_disk_write_flags(uint64_t fh, uint32_t flags);
void pd_disk_fsync(fuse_req_t req);
void pd_disk_fallocate(fuse_req_t req, int mode, off_t off, off_t len);

/* FUSE over io_uring: the disk's reads and writes taken straight from their ring entry,
 * without libfuse. The entry's bio (@io, one per entry from pd_ring_io_new()) and the data
 * (@payload, @psz bytes received, room for @cap) stay in the entry until the reply, which
 * goes back into it (pd_uring_answer()). @opcode is FUSE_READ or FUSE_WRITE, @arg its fixed
 * argument of @arglen bytes. Returns true when the request was taken (it is answered, now
 * or on completion), false when libfuse is to take it (a read larger than the entry, a
 * write whose data is short, an argument of another size). Ring thread. */
struct pd_io;
struct ring_ent;
bool pd_disk_ring_rw(struct pd *pd, struct pd_io *io, struct ring_ent *ent, uint32_t opcode,
		     const void *arg, size_t arglen, void *payload, size_t psz, size_t cap);
/* An entry's bio for pd_disk_ring_rw(), or NULL when out of memory; and its freeing. */
struct pd_io *pd_ring_io_new(void);
void pd_ring_io_free(struct pd_io *io);

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
