#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ext4 on a loop device over MNT/disk: mkfs, mount, write files, umount, e2fsck -fn clean,
# remount, checksums equal; then again after detaching, restarting the daemon and reattaching.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 e2fsck

pd_start -s 64M
ext4_roundtrip "$MNT/disk" "ext4 on plugdisk"
assert_identities
pd_stop

# The filesystem survives a daemon restart.
pd_start -s 64M
ext4_recheck "$MNT/disk" "ext4 on plugdisk"
pd_stop
