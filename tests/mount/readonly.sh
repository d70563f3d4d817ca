#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --readonly (disk.read_only): the disk reads the image, an open for writing fails with EROFS,
# the image is never written; the image is opened read-only, so one on a read-only filesystem
# serves; read-only daemons share an image that a read-write one may not take; a missing image
# is refused, not created.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk

head -c 4M /dev/urandom >"$T/img"
sum=$(sha_of "$T/img")
pd_start -i "$T/img" -s 4M --readonly
assert_eq "$(stat -c %a "$D")" 400 "mode of a read-only disk"
cmp -s "$D" "$T/img" || fail "the disk does not read as the image"
assert_eq "$($P "$D" pread 0 4096)" "open EROFS" "open O_RDWR"
assert_eq "$($P -w "$D" pwrite 0 4096 1)" "open EROFS" "open O_WRONLY"
assert_eq "$($P -r -d "$D" pread 1048576 65536)" 65536 "O_DIRECT read"
dd if=/dev/zero of="$D" bs=4K count=1 conv=notrunc status=none 2>"$T/dd.err" &&
	fail "dd wrote to a read-only disk"
grep -q "Read-only file system" "$T/dd.err" || fail "dd: $(cat "$T/dd.err")"
assert_eq "$(stat_get write_bios)" 0 "write_bios"
# The lock is shared: a second read-only daemon serves the same image...
mkdir "$T/m2" "$T/m3"
"$PLUGDISK" -f -i "$T/img" -s 4M --set disk.read_only=true "$T/m2" >"$T/second.log" 2>&1 &
second=$!
_pd_pids+=("$second")
pd_wait_mounted "$T/m2" "$second"
track_mount "$T/m2"
cmp -s "$T/m2/disk" "$T/img" || fail "the second read-only mount differs"
# ...and a read-write one may not take it.
expect_exit 3 timeout -k 5 15 "$PLUGDISK" -f -i "$T/img" -s 4M "$T/m3"
grep -q "in use by another process" "$T/out" || fail "read-write beside read-only: $(cat "$T/out")"
pd_stop "$second"
pd_stop
assert_eq "$(sha_of "$T/img")" "$sum" "the image changed"

# An image on a read-only filesystem serves read-only (read-write, it is refused: bad-cli.sh).
mkdir "$T/ro"
mount -t tmpfs -o size=8M tmpfs "$T/ro" || fail "mount tmpfs"
track_mount "$T/ro"
cp "$T/img" "$T/ro/img"
mount -o remount,ro "$T/ro" || fail "remount ro"
pd_start -i "$T/ro/img" -s 4M -r
cmp -s "$D" "$T/img" || fail "the image on a read-only fs does not read back"
assert_eq "$($P -r "$D" size)" 4194304 "size of the disk from the read-only image"
pd_stop

# A missing image is refused, not created.
expect_exit 3 timeout -k 5 15 "$PLUGDISK" -f -i "$T/none.img" -s 4M --readonly "$MNT"
grep -q "^plugdisk: .*none.img: does not exist (a read-only disk needs an existing image)" \
	"$T/out" || fail "missing image: $(cat "$T/out")"
[ -e "$T/none.img" ] && fail "a read-only start created its image"
mountpoint -q "$MNT" && fail "a refused start left a mount"
exit 0
