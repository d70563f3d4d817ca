#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# O_DSYNC writes on a write-back disk: FUSE has no FUA, the kernel sends a write and then an
# fsync, which the cache serves as a flush; so an O_DSYNC write (buffered or O_DIRECT)
# survives a drop-everything power cut, and a plain O_DIRECT write does not.
. "$(dirname "$0")/../lib.sh"
require_fuse

for i in 1 2 3; do head -c 64K /dev/urandom >"$T/p$i"; done
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.powercut=drop
f0=$(stat_get cache_flushes)
dd if="$T/p1" of="$MNT/disk" bs=64K oflag=dsync conv=notrunc status=none || fail "dd dsync"
assert_eq "$(stat_get cache_flushes)" $((f0 + 1)) "flushes after a buffered O_DSYNC write"
assert_eq "$(stat_get cache_dirty_bytes)" 0 "dirty bytes after a buffered O_DSYNC write"
dd if="$T/p2" of="$MNT/disk" bs=64K seek=4 oflag=direct,dsync conv=notrunc status=none ||
	fail "dd direct,dsync"
assert_eq "$(stat_get cache_flushes)" $((f0 + 2)) "flushes after an O_DIRECT|O_DSYNC write"
dd if="$T/p3" of="$MNT/disk" bs=64K seek=8 oflag=direct conv=notrunc status=none ||
	fail "dd direct"
assert_eq "$(stat_get cache_dirty_bytes)" 65536 "dirty bytes after a plain O_DIRECT write"
echo powercut >"$MNT/control" || fail "powercut failed"
echo poweron >"$MNT/control" || fail "poweron failed"
cmp -s <(dd if="$MNT/disk" bs=64K count=1 iflag=direct status=none) "$T/p1" ||
	fail "the buffered O_DSYNC write was lost"
cmp -s <(dd if="$MNT/disk" bs=64K skip=4 count=1 iflag=direct status=none) "$T/p2" ||
	fail "the O_DIRECT|O_DSYNC write was lost"
cmp -s <(dd if="$MNT/disk" bs=64K skip=8 count=1 iflag=direct status=none) <(head -c 64K /dev/zero) ||
	fail "the unflushed O_DIRECT write survived a drop cut"
pd_stop
