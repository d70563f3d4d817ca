#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A block device (a loop device over a file) works as the backing store; its size is the
# device's. A disk.size that differs from the device's is refused (status 3), unchanged.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
build_helper pdio
P=$T/pdio

truncate -s 32M "$T/back"
bdev=$(loop_attach "$T/back")
$P "$bdev" write 0 4096 1 fsync >/dev/null
cat >"$T/pd.conf" <<CONF
disk = { image = "$bdev"; };
CONF
pd_start -c "$T/pd.conf"
assert_eq "$(stat -c %s "$MNT/disk")" $((32 << 20)) "disk size = device size"
assert_eq "$(stat_get disk_size_bytes)" $((32 << 20)) "disk_size_bytes"
assert_eq "$($P "$MNT/disk" verify 0 4096 1)" "4096 ok" "existing device data"
head -c 4M /dev/urandom >"$T/src"
dd if="$T/src" of="$MNT/disk" bs=1M seek=28 conv=notrunc,fsync status=none || fail "dd"
assert_eq "$($P "$MNT/disk" pwrite $((32 << 20)) 512 1)" ENOSPC "write past the device's end"
pd_stop
assert_eq "$(dd if="$bdev" bs=1M skip=28 iflag=direct status=none | sha256sum | cut -d' ' -f1)" \
	"$(sha_of "$T/src")" "data on the device"
assert_eq "$(sha_of "$T/back" $((28 << 20)) $((4 << 20)))" "$(sha_of "$T/src")" "data in the file"

sum=$(sha_of "$T/back")
expect_exit 3 timeout -k 5 15 "$PLUGDISK" -f -i "$bdev" -s 16M "$MNT"
grep -qE "16777216|16M" "$T/out" && grep -qE "33554432|32M" "$T/out" ||
	{ cat "$T/out" >&2; fail "size mismatch message lacks both sizes"; }
assert_eq "$(sha_of "$T/back")" "$sum" "device after a refused start"
pd_start -i "$bdev" -s 32M
assert_eq "$(stat -c %s "$MNT/disk")" $((32 << 20)) "explicit matching size"
pd_stop
