/* SPDX-License-Identifier: MIT */
/* Whole transfers: preadv/pwritev until every byte has moved; copies between a request's
 * buffers and a flat buffer. */
#ifndef PLUGDISK_FULL_RW_H
#define PLUGDISK_FULL_RW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/stage/request.h"

/* Read (@write false) or write all of @iov[0..@cnt) at @off of @fd through sys_ops,
 * restarting after short transfers and EINTR, IOV_MAX entries per call at most. Consumes
 * @iov (the entries are advanced past what has moved). A call that moves no byte is an
 * error (-EIO; the image is shorter than the queue was told). Returns 0 or -errno; on error
 * *@call names the failed call for the log. Any thread. */
int full_rw(int fd, bool write, struct iovec *iov, unsigned int cnt, uint64_t off,
	    const char **call);

/* Copy @len bytes between @buf and @rq's buffers, from byte @at of the request: into the
 * request if @to_rq, else out of it. The bios lie end to end from rq->offset, as a
 * request's do; a bio without buffers (iov NULL) is passed over. Any thread. */
void rq_copy(struct request *rq, uint64_t at, void *buf, uint64_t len, bool to_rq);

#endif
