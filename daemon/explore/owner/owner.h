/* SPDX-License-Identifier: MIT */
/* The owner of a write: what a byte range of the disk belongs to on the filesystem the image
 * holds at a window's end ("/f (data)", "[superblock]", "[inode table: /f]",
 * "[journal: / (directory)]", "[log]", "[free]"), read with the filesystem's own tools
 * (debugfs for ext4, xfs_db for xfs, btrfs inspect-internal for btrfs). An image with no
 * known filesystem gets "offsets only". */
#ifndef PLUGDISK_EXPLORE_OWNER_H
#define PLUGDISK_EXPLORE_OWNER_H

#include <stdint.h>

#include "core/crash/wlog_states.h"

struct xp_owner;

/* A resolver for the log @l (kept open by the caller) over the base image at @base_path
 * (NULL: a zeroed disk). NULL on -ENOMEM. */
struct xp_owner *xp_owner_new(const struct ws_log *l, const char *base_path);
void xp_owner_free(struct xp_owner *o);

/* The owner of [@off, @off + @len) in the image at window @win's end (every write of the
 * window applied), e.g. "/f (data)" or "[superblock] /f (data)" when the range spans more
 * than one. The string belongs to @o (valid until xp_owner_free); NULL on -ENOMEM. Images
 * are built and read once per window; thread-safe. */
const char *xp_owner_name(struct xp_owner *o, uint64_t win, uint64_t off, uint64_t len);

#endif
