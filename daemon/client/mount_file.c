// SPDX-License-Identifier: MIT
/* Opening a file of a plugdisk mount for the client tools (mount_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "daemon/client/mount_file.h"

#define PD_FUSE_SUPER_MAGIC 0x65735546	/* statfs's f_type of a FUSE mount */

int pd_mount_file_open(const char *path, int flags)
{
	struct statfs sfs;
	struct stat st;
	int fd, ret;

	/* O_NONBLOCK: a FIFO opens at once, to be refused below, instead of waiting for a
	 * writer (or, opened for writing, a reader). */
	fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0) {
		ret = -errno;
		goto err;
	}
	if (!S_ISREG(st.st_mode) || sfs.f_type != PD_FUSE_SUPER_MAGIC) {
		ret = -ENODEV;
		goto err;
	}
	/* Reads and writes of the mount's files may wait for their answer. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		ret = -errno;
		goto err;
	}
	return fd;
err:
	close(fd);
	return ret;
}
