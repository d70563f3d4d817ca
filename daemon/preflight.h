/* SPDX-License-Identifier: MIT */
/* Start-up checks made before anything is mounted, each answered with a message on stderr
 * and the exit status that names what is wrong (daemon/daemon.h). */
#ifndef PLUGDISK_PREFLIGHT_H
#define PLUGDISK_PREFLIGHT_H

#include <stdint.h>

/* Check that @arg can be mounted on: an existing directory with nothing mounted there. A
 * dead mount a crashed plugdisk left there (ENOTCONN) is detached first, with the unused loop
 * devices on its disk. 0 with *@out the real path (heap), or EXIT_MOUNT. */
int pd_check_mountpoint(const char *arg, char **out);

/* A new image (@image missing) must fit on its filesystem at @size bytes: 0, EXIT_IMAGE or
 * EXIT_RUNTIME. */
int pd_check_image_fits(const char *image, uint64_t size);

/* The size of the existing image or block device @image (no symlink followed), for
 * --dump-config: the size a start would take. 0, or -errno (missing, unreadable, neither). */
int pd_image_size(const char *image, uint64_t *size);

#endif
