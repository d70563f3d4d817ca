/* SPDX-License-Identifier: MIT */
/* One op on a stage (the write cache, or the top of a chain) from a test, without the queue
 * and controller above it: a request of one bio over one buffer, straight into the stage. */
#ifndef PLUGDISK_TEST_CACHEIO_H
#define PLUGDISK_TEST_CACHEIO_H

#include <string.h>
#include <sys/uio.h>

#include "core/cache/cache.h"

/* Run @op on [@off, @off+@len) with @buf (NULL for a flush or a discard) through the
 * synchronous stage @exec/@arg; return its result: 0 or -errno. */
static inline int stage_io(io_exec_fn exec, void *arg, enum bio_op op, uint64_t off,
			   uint64_t len, void *buf)
{
	struct {
		struct request rq;
		struct bio bio;
		struct iovec iov;
	} r;

	memset(&r, 0, sizeof(r));
	r.iov.iov_base = buf;
	r.iov.iov_len = len;
	r.bio.op = op;
	r.bio.offset = off;
	r.bio.len = (uint32_t)len;
	r.bio.iovcnt = buf ? 1 : 0;
	r.bio.iov = buf ? &r.iov : NULL;
	r.rq.op = op;
	r.rq.offset = off;
	r.rq.len = len;
	r.rq.bio = r.rq.biotail = &r.bio;
	r.rq.nr_bios = 1;
	r.rq.nr_iov = (unsigned int)r.bio.iovcnt;
	return exec(arg, &r.rq);
}

/* stage_io() on the write cache @c. */
static inline int cache_io(struct cache *c, enum bio_op op, uint64_t off, uint64_t len,
			   void *buf)
{
	return stage_io(cache_exec, c, op, off, len, buf);
}

#endif
