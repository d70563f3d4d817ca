/* SPDX-License-Identifier: MIT */
/* The system calls of the backing I/O, behind one replaceable table so that unit tests can
 * make them short, interrupted or failing; and the ones that can return EINTR, retried. */
#ifndef PLUGDISK_SYS_H
#define PLUGDISK_SYS_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The calls as libc makes them: -1 with errno on failure. */
struct sys_ops {
	ssize_t (*preadv)(int fd, const struct iovec *iov, int iovcnt, off_t offset);
	ssize_t (*pwritev)(int fd, const struct iovec *iov, int iovcnt, off_t offset);
	int (*fallocate)(int fd, int mode, off_t offset, off_t len);
	int (*fdatasync)(int fd);
	int (*ioctl)(int fd, unsigned long request, void *arg);
};

/* libc's calls. */
extern const struct sys_ops sys_ops_libc;

/* The table in use: &sys_ops_libc. Unit tests point it at fakes, only while no I/O runs. */
extern const struct sys_ops *sys_ops;

/* fdatasync(@fd), retried on EINTR. Returns 0 or -errno. */
int sys_fdatasync(int fd);

/* fallocate(@fd, @mode, @off, @len), retried on EINTR (tmpfs returns it). 0 or -errno. */
int sys_fallocate(int fd, int mode, uint64_t off, uint64_t len);

/* BLKDISCARD of [@off, @off + @len) on block device @fd, retried on EINTR. 0 or -errno. */
int sys_blkdiscard(int fd, uint64_t off, uint64_t len);

#endif
