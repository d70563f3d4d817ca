#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Loop devices attached before a power cut, with direct I/O and without, fail their writes
# and their direct reads with EIO after poweron, for good, while a fresh open of disk and a
# loop device attached after the cut work: a filesystem from before the cut cannot write into
# the disk's next power epoch.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd losetup dd cmp
ctl() { timeout -k 5 20 "$PLUGDISK" ctl "$MNT" "$@"; }

head -c 64K /dev/urandom >"$T/a"
head -c 64K /dev/urandom >"$T/b"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.seed=7
dio=$(loop_attach "$MNT/disk" --direct-io=on)
buf=$(loop_attach "$MNT/disk" --direct-io=off)
# Both loop devices write, and the writes are flushed: the cut keeps them.
dd if="$T/a" of="$dio" bs=64K count=1 oflag=direct conv=fsync status=none ||
	fail "write through the direct loop device"
dd if="$T/a" of="$buf" bs=64K seek=1 count=1 oflag=direct conv=fsync status=none ||
	fail "write through the buffered loop device"

ctl powercut mode=drop >/dev/null || fail "powercut"
assert_eq "$(ctl poweron)" "poweron fenced_opens=2" "poweron fenced both loop devices"

for dev in "$dio" "$buf"; do
	dd if="$T/b" of="$dev" bs=64K count=1 oflag=direct status=none 2>"$T/err" &&
		fail "a write through $dev, attached before the cut, succeeded after poweron"
	grep -q "Input/output error" "$T/err" || fail "$dev: not EIO: $(cat "$T/err")"
	dd if="$dev" of=/dev/null bs=64K count=1 iflag=direct status=none 2>"$T/err" &&
		fail "a direct read of $dev, attached before the cut, succeeded after poweron"
	grep -q "Input/output error" "$T/err" || fail "$dev: not EIO: $(cat "$T/err")"
done
# For good: still after another while.
dd if="$T/b" of="$dio" bs=64K count=1 oflag=direct status=none 2>/dev/null &&
	fail "a second write through the fenced loop device succeeded"

# A fresh open of disk works and holds what the cut kept, not the fenced writes.
cmp -s <(dd if="$MNT/disk" bs=64K count=1 iflag=direct status=none) "$T/a" ||
	fail "the first block is not what the flushed write left"
cmp -s <(dd if="$MNT/disk" bs=64K skip=1 count=1 iflag=direct status=none) "$T/a" ||
	fail "the second block is not what the flushed write left"
dd if="$T/b" of="$MNT/disk" bs=64K seek=2 count=1 oflag=direct conv=notrunc,fsync status=none ||
	fail "a write through a fresh open failed"
# So does a loop device attached after the cut.
new=$(loop_attach "$MNT/disk" --direct-io=on)
dd if="$T/b" of="$new" bs=64K seek=3 count=1 oflag=direct conv=fsync status=none ||
	fail "a write through a loop device attached after poweron failed"
cmp -s <(dd if="$new" bs=64K skip=3 count=1 iflag=direct status=none) "$T/b" ||
	fail "a loop device attached after poweron does not read its write"
assert_eq "$(stat_get disk_opens_fenced)" 2 "disk_opens_fenced"
assert_gt "$(stat_get disk_requests_fenced)" 4 "disk_requests_fenced"
loop_detach "$dio"
loop_detach "$buf"
loop_detach "$new"
pd_stop
