#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ext4 on a loop device over MNT/disk: mkfs, mount, write files, umount, e2fsck -fn clean,
# remount, checksums equal; then again after detaching, restarting the daemon and reattaching.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 e2fsck

pd_start -s 64M
dev=$(loop_attach "$MNT/disk")
mkfs.ext4 -q -F "$dev" >"$T/mkfs.log" 2>&1 || { cat "$T/mkfs.log" >&2; fail "mkfs.ext4 failed"; }
mkdir "$T/ext"
mount "$dev" "$T/ext" || fail "mount ext4 failed"
track_mount "$T/ext"
mkdir -p "$T/ext/d/e"
for i in 1 2 3 4; do head -c $((i * 1500000 + 17)) /dev/urandom >"$T/ext/big$i"; done
for i in $(seq 50); do head -c $((i * 97)) /dev/urandom >"$T/ext/d/e/small$i"; done
(cd "$T/ext" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$T/sums"
[ "$(wc -l <"$T/sums")" = 54 ] || fail "expected 54 files"
umount "$T/ext" || fail "umount ext4 failed"
e2fsck -fn "$dev" >"$T/fsck.log" 2>&1 || { cat "$T/fsck.log" >&2; fail "e2fsck -fn not clean"; }

mount "$dev" "$T/ext" || fail "remount ext4 failed"
(cd "$T/ext" && sha256sum --quiet -c "$T/sums") || fail "checksums differ after remount"
umount "$T/ext"
loop_detach "$dev" || fail "losetup -d failed"
assert_identities
pd_stop

# The filesystem survives a daemon restart.
pd_start -s 64M
dev=$(loop_attach "$MNT/disk")
e2fsck -fn "$dev" >"$T/fsck2.log" 2>&1 || { cat "$T/fsck2.log" >&2; fail "e2fsck after restart"; }
mount -o ro "$dev" "$T/ext" || fail "mount after restart failed"
(cd "$T/ext" && sha256sum --quiet -c "$T/sums") || fail "checksums differ after restart"
umount "$T/ext"
loop_detach "$dev" || fail "losetup -d failed"
pd_stop
