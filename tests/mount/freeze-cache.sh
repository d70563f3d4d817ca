#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# freeze with cache.mode = writeback: the frozen image holds every write the cache had
# acknowledged (a copy taken between freeze and thaw is a consistent snapshot), and thaw
# lets the disk go on.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=600000
assert_eq "$($P -d "$D" pwrite 1048576 65536 8)" 65536 "a write into the cache"
assert_eq "$($P -d "$D" pwrite 2097152 4096 9)" 4096 "another"
assert_eq "$(stat_get cache_dirty_bytes)" 69632 "both in the cache"
assert_eq "$($P "$T/disk.img" zeros 1048576 65536)" "65536 ok" "not on the image yet"
ctl freeze || fail "freeze failed"
assert_eq "$(stat_get cache_dirty_bytes)" 0 "dirty bytes once frozen"
cp --sparse=always "$T/disk.img" "$T/snap.img" || fail "cp of the frozen image"
assert_eq "$($P "$T/snap.img" verify 1048576 65536 8)" "65536 ok" "the first write in the snapshot"
assert_eq "$($P "$T/snap.img" verify 2097152 4096 9)" "4096 ok" "the second write in the snapshot"
ctl thaw || fail "thaw failed"
assert_eq "$($P -d "$D" pwrite 0 4096 10)" 4096 "a write after thaw"
assert_eq "$(stat_get cache_dirty_bytes)" 4096 "cached again after thaw"
assert_eq "$($P -d "$D" verify 0 4096 10)" "4096 ok" "its data"
pd_stop
