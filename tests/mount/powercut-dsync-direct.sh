#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Synchronous writes through an O_DIRECT open of disk, which the open reply sends around the
# kernel's page cache (FOPEN_DIRECT_IO): there the kernel follows no O_DSYNC write with an
# fsync, it only flags the write, so the daemon makes each flagged write durable itself (a
# write, then a flush: FUA). On a write-back disk that drops everything unflushed at a power
# cut, an O_DIRECT write that is O_DSYNC by its open (O_DSYNC, O_SYNC) or by its own flag
# (pwritev2's RWF_DSYNC) survives, with the plain O_DIRECT writes completed before it; a plain
# O_DIRECT write alone does not, and asks for no flush.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd xfs_io

for i in 1 2 3 4 5 6; do head -c 64K /dev/urandom >"$T/p$i"; done
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.powercut=drop
D=$MNT/disk
# xfs_io -d ... FILE: an O_DIRECT open of disk writing FILE's 64 KiB at offset OFF KiB.
put() { xfs_io "$@" >/dev/null || fail "xfs_io $*"; }
f0=$(stat_get cache_flushes)

put -d -c "pwrite -q -b 64k -i $T/p1 0 64k" "$D"
assert_eq "$(stat_get cache_flushes)" "$f0" "flushes after a plain O_DIRECT write"
# RWF_DSYNC on one write (pwritev2) of an O_DIRECT open that is not O_DSYNC: one flush,
# which also covers p1, completed before it.
put -d -c "pwrite -q -b 64k -V 1 -D -i $T/p2 64k 64k" "$D"
assert_eq "$(stat_get cache_flushes)" $((f0 + 1)) "flushes after an RWF_DSYNC O_DIRECT write"
assert_eq "$(stat_get cache_dirty_bytes)" 0 "dirty bytes after an RWF_DSYNC O_DIRECT write"
# An O_DIRECT open with O_SYNC (xfs_io -s), two writes: a flush each.
put -d -s -c "pwrite -q -b 64k -i $T/p3 128k 64k" -c "pwrite -q -b 64k -i $T/p4 192k 64k" "$D"
assert_eq "$(stat_get cache_flushes)" $((f0 + 3)) "flushes after two O_SYNC O_DIRECT writes"
# O_DSYNC by the open (dd oflag=dsync), through O_DIRECT.
dd if="$T/p5" of="$D" bs=64K seek=4 oflag=direct,dsync conv=notrunc status=none ||
	fail "dd direct,dsync"
assert_eq "$(stat_get cache_flushes)" $((f0 + 4)) "flushes after an O_DSYNC O_DIRECT write"
put -d -c "pwrite -q -b 64k -i $T/p6 320k 64k" "$D"
assert_eq "$(stat_get cache_flushes)" $((f0 + 4)) "flushes after the last plain O_DIRECT write"
assert_eq "$(stat_get cache_dirty_bytes)" 65536 "dirty bytes after the last plain write"

echo powercut >"$MNT/control" || fail "powercut failed"
echo poweron >"$MNT/control" || fail "poweron failed"
for i in 1 2 3 4 5; do
	cmp -s <(dd if="$D" bs=64K skip=$((i - 1)) count=1 iflag=direct status=none) "$T/p$i" ||
		fail "write $i was lost at the power cut"
done
cmp -s <(dd if="$D" bs=64K skip=5 count=1 iflag=direct status=none) <(head -c 64K /dev/zero) ||
	fail "the unflushed O_DIRECT write survived a drop cut"
assert_identities
pd_stop
