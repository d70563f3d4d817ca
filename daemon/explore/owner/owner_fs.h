/* SPDX-License-Identifier: MIT */
/* What the owner dispatcher (owner.c) and the per-filesystem readers share. */
#ifndef PLUGDISK_EXPLORE_OWNER_FS_H
#define PLUGDISK_EXPLORE_OWNER_FS_H

#include <stddef.h>
#include <stdint.h>

/* Run @argv (argv[0] found on PATH), stdin from /dev/null, and return its stdout in *@out
 * (NUL-terminated, free it). 0 (the tool ran and exited 0) or -errno; -EIO when it failed
 * (its stderr goes to /dev/null). */
int owner_run(const char *const argv[], char **out);

/* Names for @nblk blocks of @bs bytes from block @first of the ext4 image at @image: *names
 * gets @nblk strings (free each and the array). 0 or -errno. */
int owner_ext4(const char *image, uint64_t bs, uint64_t first, uint64_t nblk, char ***names);

#endif
