/* SPDX-License-Identifier: MIT */
/* The mount's backing device info: the kernel's per-mount readahead of MOUNTPOINT/disk. */
#ifndef PLUGDISK_BDI_H
#define PLUGDISK_BDI_H

#include <sys/types.h>

/* Set the readahead of the FUSE mount whose device is @dev (st_dev of any file in it) to
 * @kb KiB (mount.read_ahead_kb); 0 leaves the kernel's. Call once the mount answers (after
 * FUSE_INIT, whose reply would otherwise cap it). Files opened before keep the readahead
 * they had. Logs a failure once (at info level when not permitted, as for a daemon not run
 * by root): the disk works either way. 0 or -errno. */
int pd_bdi_set_read_ahead(dev_t dev, unsigned int kb);

/* Write @v and a newline to the sysfs file @path. 0, or -errno with *@call naming the
 * failed call ("open", "write"); the caller logs. */
int pd_sysfs_write_uint(const char *path, unsigned int v, const char **call);

#endif
