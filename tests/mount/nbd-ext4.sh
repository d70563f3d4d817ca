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
dev=$(loop_attach "$MNT/disk")
e2fsck -fn "$dev" >"$T/fsck2.log" 2>&1 || { cat "$T/fsck2.log" >&2; fail "e2fsck after restart"; }
mount -o ro "$dev" "$T/ext" || fail "mount after restart"
track_mount "$T/ext"
(cd "$T/ext" && sha256sum --quiet -c "$T/sums") || fail "checksums differ after restart"
umount "$T/ext"
loop_detach "$dev"
pd_stop
log "ok"
