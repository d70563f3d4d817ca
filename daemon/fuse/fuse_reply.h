/* SPDX-License-Identifier: MIT */
/* What libfuse 3.14 cannot put in a reply: FUSE_DIRECT_IO_ALLOW_MMAP in the FUSE_INIT reply
 * and FOPEN_PARALLEL_DIRECT_WRITES in an open reply. Both transports pass their /dev/fuse
 * reads and replies through here. */
#ifndef PLUGDISK_FUSE_REPLY_H
#define PLUGDISK_FUSE_REPLY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct pd;

/* Open flags from the kernel ABI (include/uapi/linux/fuse.h), which Debian 12's libfuse
 * 3.14 and kernel headers predate in part; PD_ prefixed so that newer headers cannot clash. */
#define PD_FOPEN_DIRECT_IO (1u << 0)
#define PD_FOPEN_PARALLEL_DIRECT_WRITES (1u << 6)	/* Linux 6.2 */
/* FUSE_INIT flag: a file opened with FOPEN_DIRECT_IO may still be mmapped (Linux 6.6). */
#define PD_FUSE_DIRECT_IO_ALLOW_MMAP (1ull << 36)

/* Note what a FUSE_INIT request just read offers. Call on every /dev/fuse read. */
void pd_reply_note_read(struct pd *pd, const void *buf, ssize_t n);

/* Add what libfuse left out to a reply about to be written: the accepted FUSE_INIT flags,
 * and the open flags this thread asked for with pd_reply_open_flags(). Patches iov[1] in
 * place (libfuse's own argument). Call on every reply, in the replying thread. */
void pd_reply_patch(struct pd *pd, struct iovec *iov, int count);

/* The next open reply of this thread also carries @flags (PD_FOPEN_*). */
void pd_reply_open_flags(uint32_t flags);

/* The connection lets a file opened with FOPEN_DIRECT_IO be mmapped: only then may an open
 * bypass the page cache without breaking mmap. False until FUSE_INIT is answered. */
bool pd_reply_dio_may_mmap(struct pd *pd);

/* Classic transport: route the session's reads and replies through here. 0 or -errno. */
int pd_reply_io_install(struct pd *pd);

#endif
