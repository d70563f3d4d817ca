#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 64 MiB of random data written with dd (bs=1M, conv=notrunc,fsync) reads back with the same
# checksum through the mount, from the backing image, and after a remount.
. "$(dirname "$0")/../lib.sh"
require_fuse

head -c 64M /dev/urandom >"$T/src"
want=$(sha_of "$T/src")
pd_start -s 64M

dd if="$T/src" of="$MNT/disk" bs=1M conv=notrunc,fsync status=none || fail "dd write failed"
assert_eq "$(stat -c %s "$MNT/disk")" $((64 << 20)) "disk size after dd"
assert_eq "$(sha_of "$MNT/disk")" "$want" "checksum read through the mount"
assert_eq "$(dd if="$MNT/disk" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)" \
	"$want" "checksum read with O_DIRECT"
assert_eq "$(sha_of "$T/disk.img")" "$want" "checksum of the backing image"
assert_gt "$(stat_get write_bytes)" $(((64 << 20) - 1)) "write_bytes after 64 MiB"
assert_gt "$(stat_get flush_bios)" 0 "flush_bios after conv=fsync"
assert_identities
pd_stop

pd_start -s 64M
assert_eq "$(sha_of "$MNT/disk")" "$want" "checksum after remount"
assert_eq "$(stat_get write_bytes)" 0 "write_bytes after a read-only remount"
pd_stop
