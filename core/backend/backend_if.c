// SPDX-License-Identifier: MIT
/* The backend interface: what every backend shares (read-only disks, alignment), then the
 * backend's own ops. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/backend/backend.h"

const char backend_zero_chunk[BACKEND_ZERO_CHUNK];

void backend_params_default(struct backend_params *bp)
{
	bp->connections = 0; /* what the server allows, up to BACKEND_DEFAULT_CONNECTIONS */
	bp->timeout_ms = BACKEND_DEFAULT_TIMEOUT_MS;
	bp->structured_replies = false; /* see core/backend/backend_nbd_conn.c, nb_conn_connect() */
}

bool backend_rq_is_zeroes(const struct request *rq)
{
	if (rq->op != BIO_OP_WRITE || !rq->bio)
		return false;
	for (const struct bio *bio = rq->bio; bio; bio = bio->next)
		for (int k = 0; k < bio->iovcnt; k++) {
			uintptr_t b = (uintptr_t)bio->iov[k].iov_base;
			uintptr_t z = (uintptr_t)backend_zero_chunk;

			if (b < z || b + bio->iov[k].iov_len > z + BACKEND_ZERO_CHUNK)
				return false;
		}
	return true;
}

int backend_exec(void *arg, struct request *rq)
{
	struct backend *be = arg;

	if (be->read_only && (rq->op == BIO_OP_WRITE || rq->op == BIO_OP_DISCARD))
		return -EROFS;
	if (be->block_size > 1 && rq->op != BIO_OP_FLUSH &&
	    (rq->offset % be->block_size || rq->len % be->block_size))
		return -EINVAL;
	return be->ops->exec(be, rq);
}

int backend_sync(struct backend *be)
{
	return be->ops->sync(be);
}

size_t backend_stats(struct backend *be, char *buf, size_t len)
{
	if (!len)
		return 0;
	buf[0] = '\0';
	if (!be->ops || !be->ops->stats)
		return 0;
	return be->ops->stats(be, buf, len);
}

void backend_close(struct backend *be)
{
	if (be->ops) {
		be->ops->close(be);
		be->ops = NULL;
	}
	free(be->path);
	be->path = NULL;
}
