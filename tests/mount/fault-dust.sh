#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dm-dust semantics of a badblocks fault: reads that touch a bad block fail with EIO until a
# write to the block clears it; the write succeeds; the listing shows the blocks left, and
# the other blocks are never affected.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M
assert_eq "$($P "$D" write 0 4194304 3 fsync)" "$(printf '4194304\n0')" "fill"
ctl fault add badblocks=10,20-21 blksz=4096 >/dev/null || fail "fault add"
ctl fault list | grep -q "^fault add badblocks=10,20-21 blksz=4096 # id=1 " || fail "listing: $(ctl fault list)"

assert_eq "$($P -d "$D" pread 40960 4096)" EIO "read of bad block 10"
assert_eq "$($P -d "$D" pread 36864 8192)" EIO "a read that touches block 10"
assert_eq "$($P -d "$D" pread 45056 4096)" 4096 "read of good block 11"
assert_eq "$($P -d "$D" pread 86016 4096)" EIO "read of bad block 21"
assert_eq "$($P -d "$D" pread 40960 4096)" EIO "block 10 stays bad while not written"

# A write clears the block it covers (even partly) and succeeds; a read then returns it.
assert_eq "$($P -d "$D" pwrite 40960 4096 5)" 4096 "write to bad block 10"
assert_eq "$($P -d "$D" verify 40960 4096 5)" "4096 ok" "block 10 reads back what was written"
assert_eq "$($P -d "$D" pwrite 81920 512 6)" 512 "write of one sector of block 20"
assert_eq "$($P -d "$D" pread 81920 4096)" 4096 "block 20 cleared"
assert_eq "$($P -d "$D" pread 86016 4096)" EIO "block 21 still bad"
ctl fault list | grep -q "^fault add badblocks=21 blksz=4096 # id=1 " || fail "listing after writes: $(ctl fault list)"

assert_eq "$(stat_get read_fault_errors)" 5 "reads failed"
assert_eq "$(stat_get write_fault_errors)" 0 "writes never fail"
assert_eq "$(stat_get fault_1_injected)" 5 "the fault's injected count"
assert_eq "$($P -d "$D" verify 0 40960 3)" "40960 ok" "blocks before"
assert_eq "$($P -d "$D" verify 45056 36864 3)" "36864 ok" "blocks between"
assert_eq "$($P -d "$D" verify 90112 4104192 3)" "4104192 ok" "blocks after"
pd_stop
