/* SPDX-License-Identifier: MIT */
/* The backing image: a regular file (created sparse) or a block device, held exclusively. */
#ifndef PLUGDISK_BACKEND_H
#define PLUGDISK_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/bio.h"

struct backend {
	int fd;
	uint64_t size;		/* bytes */
	bool is_blockdev;
	char *path;
	/* Fault reporting: one log line when an op starts failing, one when it recovers. */
	pthread_mutex_t fault_lock;
	int fault[BIO_OP_NR];	/* fault_lock: last error of each op, 0 when healthy */
};

/* Errors of backend_open(), beyond -errno, that the daemon reports distinctly. */
#define BACKEND_ESIZE 1000	/* existing image of another size */
#define BACKEND_ELOCKED 1001	/* another process holds the image */

/* Open @path read-write without following symlinks, creating a sparse file of @size if it is
 * missing (@size 0: use the existing file's or device's size). Refuses an existing image of
 * another size, a directory, a symlink, and an image another process holds (exclusive
 * flock). Returns 0 or a negative errno / -BACKEND_E*; @err gets a one-line reason. */
int backend_open(struct backend *be, const char *path, uint64_t size, char *err, size_t errlen);

/* Run @rq's I/O synchronously: preadv/pwritev (restarting short transfers), fdatasync for a
 * flush, punch hole for a discard. Returns 0 or -errno. Any thread. */
int backend_exec(void *be, struct request *rq);

/* fdatasync the image. Returns 0 or -errno. */
int backend_sync(struct backend *be);

void backend_close(struct backend *be);

#endif
