#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The write cache and the powercut command: an fsynced write survives a cut, an unflushed one
# is dropped (mode=drop), every request fails with EIO until poweron, and stats count it.
. "$(dirname "$0")/../lib.sh"
require_fuse

head -c 1M /dev/urandom >"$T/a"
head -c 1M /dev/urandom >"$T/b"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.seed=7

dd if="$T/a" of="$MNT/disk" bs=64K oflag=direct conv=notrunc,fsync status=none ||
	fail "dd of the flushed part failed"
dd if="$T/b" of="$MNT/disk" bs=64K seek=16 oflag=direct conv=notrunc status=none ||
	fail "dd of the unflushed part failed"
assert_eq "$(stat_get cache_writeback)" 1 "cache_writeback"
assert_eq "$(stat_get cache_dirty_bytes)" $((1 << 20)) "dirty bytes before the cut"
assert_gt "$(stat_get cache_flushes)" 0 "cache_flushes after fsync"
"$PLUGDISK" top "$MNT" --once | grep -q "^cache .*1.00 MiB / 64.0 MiB dirty.*power on" ||
	fail "top does not show the dirty level"
# Reads see the cache.
cmp -s <(dd if="$MNT/disk" bs=64K skip=16 count=16 iflag=direct status=none) "$T/b" ||
	fail "a read does not see the cached write"
cmp -s <(dd if="$MNT/disk" bs=64K skip=16 count=16 status=none) "$T/b" ||
	fail "a buffered read does not see the cached write"
# ...and the image does not have it yet.
cmp -s <(dd if="$T/disk.img" bs=64K skip=16 count=16 status=none) "$T/b" &&
	fail "the unflushed write is already on the image"

echo "powercut mode=drop" >"$MNT/control" || fail "powercut command failed"
grep -qx powercut "$MNT/control" || fail "the control listing does not say powercut"
dd if="$MNT/disk" of=/dev/null bs=4K count=1 iflag=direct status=none 2>"$T/err" &&
	fail "a read succeeded while the power is off"
grep -q "Input/output error" "$T/err" || fail "read error is not EIO: $(cat "$T/err")"
dd if="$T/a" of="$MNT/disk" bs=4K count=1 oflag=direct conv=notrunc status=none 2>/dev/null &&
	fail "a write succeeded while the power is off"
assert_eq "$(stat_get cache_powercuts)" 1 "cache_powercuts"
assert_eq "$(stat_get cache_last_cut_dropped_bytes)" $((1 << 20)) "bytes dropped"
assert_eq "$(stat_get cache_powered)" 0 "cache_powered after the cut"
"$PLUGDISK" top "$MNT" --once | grep -q "^cache .*power OFF" || fail "top does not show the cut"
echo reset >"$MNT/stats" || fail "reset of stats failed"
assert_eq "$(stat_get cache_powercuts)" 0 "cache_powercuts after a reset"
assert_eq "$(stat_get cache_powered)" 0 "cache_powered after a reset (state, not a counter)"

echo poweron >"$MNT/control" || fail "poweron command failed"
grep -qx poweron "$MNT/control" || fail "the control listing does not say poweron"
cmp -s <(dd if="$MNT/disk" bs=64K count=16 iflag=direct status=none) "$T/a" ||
	fail "the fsynced write did not survive the cut"
cmp -s <(dd if="$MNT/disk" bs=64K skip=16 count=16 iflag=direct status=none) \
	<(head -c 1M /dev/zero) || fail "the unflushed write survived a drop cut"
# The kernel's page cache of the disk was dropped at poweron: a buffered read agrees.
cmp -s <(dd if="$MNT/disk" bs=64K skip=16 count=16 status=none) <(head -c 1M /dev/zero) ||
	fail "a buffered read after poweron still sees the dropped write"
grep -q "powercut (control): mode drop seed" "$T/daemon.log" || fail "the cut is not logged"
pd_stop
