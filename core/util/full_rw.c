// SPDX-License-Identifier: MIT
/* Whole transfers over preadv/pwritev (nbdkit's full-rw, for vectors and offsets), and
 * copies between a request's buffers and a flat buffer. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "core/util/full_rw.h"
#include "core/util/sys.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

int full_rw(int fd, bool write, struct iovec *iov, unsigned int cnt, uint64_t off,
	    const char **call)
{
	unsigned int i = 0;

	*call = write ? "pwritev" : "preadv";
	/* Skip empty entries up front, so that "all moved" is i == cnt. */
	while (i < cnt && !iov[i].iov_len)
		i++;
	while (i < cnt) {
		int n = cnt - i > IOV_MAX ? IOV_MAX : (int)(cnt - i);
		ssize_t r;

		if (off > INT64_MAX)
			return -EINVAL;
		if (write)
			r = sys_ops->pwritev(fd, iov + i, n, (off_t)off);
		else
			r = sys_ops->preadv(fd, iov + i, n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0) {
			*call = write ? "pwritev (0 bytes)" : "preadv (EOF)";
			return -EIO;
		}
		off += (uint64_t)r;
		while (r > 0 && i < cnt) {
			if ((size_t)r >= iov[i].iov_len) {
				r -= (ssize_t)iov[i].iov_len;
				i++;
			} else {
				iov[i].iov_base = (char *)iov[i].iov_base + r;
				iov[i].iov_len -= (size_t)r;
				r = 0;
			}
		}
		while (i < cnt && !iov[i].iov_len)
			i++;
	}
	return 0;
}

void rq_copy(struct request *rq, uint64_t at, void *buf, uint64_t len, bool to_rq)
{
	uint8_t *p = buf;

	for (struct bio *bio = rq->bio; bio && len; bio = bio->next) {
		uint64_t pos = bio->offset - rq->offset;

		for (int i = 0; i < bio->iovcnt && bio->iov && len; i++) {
			uint64_t ilen = bio->iov[i].iov_len, skip, n;

			if (pos + ilen <= at) {
				pos += ilen;
				continue;
			}
			skip = at > pos ? at - pos : 0;
			n = ilen - skip < len ? ilen - skip : len;
			if (to_rq)
				memcpy((uint8_t *)bio->iov[i].iov_base + skip, p, n);
			else
				memcpy(p, (uint8_t *)bio->iov[i].iov_base + skip, n);
			p += n;
			len -= n;
			at += n;
			pos += ilen;
		}
	}
}
