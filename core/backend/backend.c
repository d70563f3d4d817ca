// SPDX-License-Identifier: MIT
/* The backing image and its I/O. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "core/util/barrier.h"
#include "core/util/full_rw.h"
#include "core/util/log.h"
#include "core/util/sys.h"

static int file_exec(void *arg, struct request *rq);
static int file_sync(struct backend *be);
static void file_close(struct backend *be);

static const struct backend_ops file_ops = {
	.kind = "file",
	.exec = file_exec,
	.sync = file_sync,
	.close = file_close,
};

/* backend_open() and backend_open_read_only(): a read-only disk opens its image O_RDONLY
 * (so that an image on a read-only filesystem or without write permission serves), never
 * creates one, and takes a shared lock: read-only daemons may share an image that no
 * read-write daemon holds. */
static int file_open(struct backend *be, const char *path, uint64_t size, bool ro, char *err,
		     size_t errlen)
{
	struct stat st;
	int fd, ret, saved;
	bool created = false;

	memset(be, 0, sizeof(*be));
	be->fd = -1;
	fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && ro) {
		snprintf(err, errlen, "%s: does not exist (a read-only disk needs an existing image)",
			 path);
		return -ENOENT;
	}
	if (fd < 0 && errno == ENOENT && size) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		created = fd >= 0;
	}
	if (fd < 0) {
		saved = errno;
		if (saved == ELOOP)
			snprintf(err, errlen, "%s: is a symbolic link; give the real path", path);
		else if (saved == EISDIR)
			snprintf(err, errlen, "%s: is a directory", path);
		else if (saved == ENOENT && !size)
			snprintf(err, errlen, "%s: does not exist and no size was given", path);
		else
			snprintf(err, errlen, "open %s: %s", path, strerror(saved));
		return -saved;
	}
	if (flock(fd, (ro ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		saved = errno;
		if (saved == EWOULDBLOCK) {
			snprintf(err, errlen, "%s: in use by another process (locked)", path);
			ret = -BACKEND_ELOCKED;
		} else {
			snprintf(err, errlen, "flock %s: %s", path, strerror(saved));
			ret = -saved;
		}
		goto out_close;
	}
	if (fstat(fd, &st) < 0) {
		saved = errno;
		snprintf(err, errlen, "fstat %s: %s", path, strerror(saved));
		ret = -saved;
		goto out_close;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes;

		if (ioctl(fd, BLKGETSIZE64, &bytes) < 0) {
			saved = errno;
			snprintf(err, errlen, "ioctl BLKGETSIZE64 %s: %s", path, strerror(saved));
			ret = -saved;
			goto out_close;
		}
		be->is_blockdev = true;
		if (size && size != bytes) {
			snprintf(err, errlen,
				 "%s: block device has %llu bytes but disk.size is %llu bytes", path,
				 (unsigned long long)bytes, (unsigned long long)size);
			ret = -BACKEND_ESIZE;
			goto out_close;
		}
		be->size = bytes;
	} else if (S_ISREG(st.st_mode)) {
		if (created) {
			if (ftruncate(fd, (off_t)size) < 0) {
				saved = errno;
				snprintf(err, errlen, "ftruncate %s to %llu bytes: %s", path,
					 (unsigned long long)size, strerror(saved));
				ret = -saved;
				goto out_close;
			}
			st.st_size = (off_t)size;
		} else if (size && (uint64_t)st.st_size != size) {
			snprintf(err, errlen,
				 "%s: image has %llu bytes but disk.size is %llu bytes; "
				 "give the image's size or another image",
				 path, (unsigned long long)st.st_size, (unsigned long long)size);
			ret = -BACKEND_ESIZE;
			goto out_close;
		}
		be->size = (uint64_t)st.st_size;
	} else {
		snprintf(err, errlen, "%s: not a regular file or a block device", path);
		ret = -EINVAL;
		goto out_close;
	}
	if (!be->size || be->size % 512) {
		snprintf(err, errlen, "%s: size %llu is not a positive multiple of 512", path,
			 (unsigned long long)be->size);
		ret = -EINVAL;
		goto out_close;
	}
	be->fd = fd;
	be->path = strdup(path);
	be->ops = &file_ops;
	be->block_size = 1;
	be->read_only = ro;
	pthread_mutex_init(&be->fault_lock, NULL);
	return 0;

out_close:
	/* Remove the image we created, once, while we still hold it and only if the path still
	 * names it: another process may have put a file of its own there since. */
	if (created) {
		struct stat now;

		if (fstat(fd, &st) == 0 && stat(path, &now) == 0 && now.st_dev == st.st_dev &&
		    now.st_ino == st.st_ino)
			unlink(path);
	}
	close(fd);
	return ret;
}

int backend_open(struct backend *be, const char *path, uint64_t size, char *err, size_t errlen)
{
	return file_open(be, path, size, false, err, errlen);
}

int backend_open_read_only(struct backend *be, const char *path, uint64_t size, char *err,
			   size_t errlen)
{
	return file_open(be, path, size, true, err, errlen);
}

/* Log a fault once when an op starts failing and once when it works again. */
static void backend_note(struct backend *be, enum bio_op op, int error, const char *call)
{
	int was;

	/* A hint read without fault_lock: a stale value only costs taking the lock. */
	if (READ_ONCE(be->fault[op]) == error)
		return;
	pthread_mutex_lock(&be->fault_lock);
	was = be->fault[op];
	WRITE_ONCE(be->fault[op], error); /* for the hint above */
	pthread_mutex_unlock(&be->fault_lock);
	if (was == error)
		return;
	if (error)
		log_err("%s %s: %s (further %s errors are not logged until it recovers)", call,
			be->path, strerror(-error), bio_op_name[op]);
	else
		log_info("%s %s: working again", call, be->path);
}

/* preadv/pwritev the whole request (core/util/full_rw.c). A read past the end of a regular image
 * cannot happen (the queue checks bounds), so a 0-byte read is an error. */
static int backend_rw(struct backend *be, struct request *rq)
{
	struct iovec stackv[64], *iov = stackv;
	unsigned int n = 0;
	const char *call;
	int ret;

	if (rq->nr_iov > 64) {
		iov = malloc(rq->nr_iov * sizeof(*iov));
		if (!iov)
			return -ENOMEM;
	}
	for (struct bio *bio = rq->bio; bio; bio = bio->next)
		for (int k = 0; k < bio->iovcnt; k++)
			iov[n++] = bio->iov[k];
	ret = full_rw(be->fd, rq->op == BIO_OP_WRITE, iov, n, rq->offset, &call);
	backend_note(be, rq->op, ret, call);
	if (iov != stackv)
		free(iov);
	return ret;
}

static int backend_discard(struct backend *be, struct request *rq)
{
	int ret;

	if (be->is_blockdev)
		ret = sys_blkdiscard(be->fd, rq->offset, rq->len);
	else
		ret = sys_fallocate(be->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, rq->offset,
				    rq->len);
	backend_note(be, BIO_OP_DISCARD, ret, be->is_blockdev ? "ioctl BLKDISCARD" : "fallocate");
	return ret;
}

static int file_sync(struct backend *be)
{
	int ret = sys_fdatasync(be->fd);

	backend_note(be, BIO_OP_FLUSH, ret, "fdatasync");
	return ret;
}

static int file_exec(void *arg, struct request *rq)
{
	struct backend *be = arg;

	switch (rq->op) {
	case BIO_OP_READ:
	case BIO_OP_WRITE:
		return backend_rw(be, rq);
	case BIO_OP_FLUSH:
		return file_sync(be);
	case BIO_OP_DISCARD:
		return backend_discard(be, rq);
	default:
		return -EINVAL;
	}
}

static void file_close(struct backend *be)
{
	if (be->fd >= 0) {
		close(be->fd);
		be->fd = -1;
		pthread_mutex_destroy(&be->fault_lock);
	}
	free(be->path);
	be->path = NULL;
}
