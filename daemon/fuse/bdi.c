// SPDX-License-Identifier: MIT
/* The mount's backing device info (/sys/class/bdi/MAJOR:MINOR, the FUSE connection's device
 * number, which is the mount's st_dev).
 *
 * Readahead. The kernel gives a FUSE mount 128 KiB of readahead, which FUSE_INIT's
 * max_readahead can only lower, so a buffered sequential read of disk goes out in 128 KiB
 * requests whatever max_write allows. Set through sysfs after the mount answers, the
 * readahead reaches mount.read_ahead_kb, and with it a sequential reader's requests reach
 * 1 MiB, the largest a FUSE request takes: as the block layer sizes a device's readahead
 * from its optimal I/O size. A random reader is not affected: the kernel grows the window
 * only for a sequential stream. Writing sysfs needs root; otherwise the kernel's stays. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/util/log.h"
#include "daemon/fuse/bdi.h"

int pd_sysfs_write_uint(const char *path, unsigned int v, const char **call)
{
	char val[16];
	int fd, len, ret = 0;

	len = snprintf(val, sizeof(val), "%u\n", v);
	*call = "open";
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*call = "write";
	errno = EIO; /* a short write sets none */
	if (write(fd, val, (size_t)len) != len)
		ret = -errno;
	close(fd);
	return ret;
}

int pd_bdi_set_read_ahead(dev_t dev, unsigned int kb)
{
	const char *call;
	char path[96];
	int ret;

	if (!kb)
		return 0;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(dev), minor(dev));
	ret = pd_sysfs_write_uint(path, kb, &call);
	if (ret) {
		/* Not root: expected, and the disk works; said without alarm. */
		bool denied = ret == -EACCES || ret == -EPERM || ret == -EROFS;

		errno = -ret;
		log_msg(denied ? LOG_LVL_INFO : LOG_LVL_WARN,
			"mount.read_ahead_kb: %s %s: %m; the kernel's readahead stays", call, path);
	}
	return ret;
}
