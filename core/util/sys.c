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

const struct sys_ops sys_ops_libc = {
	.preadv = preadv,
	.pwritev = pwritev,
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
