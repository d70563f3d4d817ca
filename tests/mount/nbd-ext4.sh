#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ext4 through a loop device over plugdisk's NBD backend (nbdkit's file plugin on a Unix
# socket): mkfs, files, e2fsck -fn clean, checksums equal after a remount and after a restart
# of the daemon.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_loop
require_nbd

truncate -s 64M "$T/server.img"
nbdkit_start unix file "$T/server.img"
pd_start -i "$NBD_URI"
ext4_roundtrip "$MNT/disk" "nbdkit file"
assert_identities
pd_stop

pd_start -i "$NBD_URI"
ext4_recheck "$MNT/disk" "nbdkit file"
pd_stop
log "ok"
