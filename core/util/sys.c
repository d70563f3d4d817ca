// SPDX-License-Identifier: MIT
/* The backing I/O's system calls: libc's table, and the EINTR-retrying wrappers. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/util/sys.h"

static int libc_ioctl(int fd, unsigned long request, void *arg)
{
	return ioctl(fd, request, arg);
}

/* One buffer, the common case (a 4 KiB request of one bio), goes by pread and pwrite: the
 * kernel then copies no iovec array in. */
static ssize_t libc_preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset)
{
	if (iovcnt == 1)
		return pread(fd, iov->iov_base, iov->iov_len, offset);
	return preadv(fd, iov, iovcnt, offset);
}

static ssize_t libc_pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset)
{
	if (iovcnt == 1)
		return pwrite(fd, iov->iov_base, iov->iov_len, offset);
	return pwritev(fd, iov, iovcnt, offset);
}

const struct sys_ops sys_ops_libc = {
	.preadv = libc_preadv,
	.pwritev = libc_pwritev,
	.fallocate = fallocate,
	.fdatasync = fdatasync,
	.ioctl = libc_ioctl,
};

const struct sys_ops *sys_ops = &sys_ops_libc;

int sys_fdatasync(int fd)
{
	while (sys_ops->fdatasync(fd) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int sys_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
	if (off > INT64_MAX || len > INT64_MAX - off)
		return -EINVAL;
	while (sys_ops->fallocate(fd, mode, (off_t)off, (off_t)len) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int sys_blkdiscard(int fd, uint64_t off, uint64_t len)
{
	uint64_t range[2] = { off, len };

	while (sys_ops->ioctl(fd, BLKDISCARD, range) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}
