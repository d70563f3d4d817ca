/* SPDX-License-Identifier: MIT */
/* Opening a file of a plugdisk mount (stats, control) for the client tools, only once it is
 * known to be one: never a FIFO or a device to wait on, never a plain file to overwrite. */
#ifndef PLUGDISK_MOUNT_FILE_H
#define PLUGDISK_MOUNT_FILE_H

/* Open @path, a file of a plugdisk mount, with @flags (O_RDONLY or O_RDWR): the descriptor,
 * or -errno: -ENOENT or -ENOTDIR (no such file), -ENODEV (a file that is not a regular file
 * of a FUSE mount: not a plugdisk mount), -ENOTCONN (the daemon of the mount has exited),
 * or the open's error. Neither the open nor the checks block. */
int pd_mount_file_open(const char *path, int flags);

#endif
