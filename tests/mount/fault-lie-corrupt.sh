#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lying and corrupting faults: a lying write is acknowledged and never reaches the image; a
# corrupting write stores its data with one bit flipped inside the fault's range and nowhere
# else; a corrupting read returns zeroes over its range while the image stays intact.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd cmp
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M
assert_eq "$($P "$D" write 0 4194304 1 fsync)" "$(printf '4194304\n0')" "fill"

# A lie: success, and the old data stays.
ctl fault add lie offset=0 len=64K >/dev/null || fail "fault add lie"
assert_eq "$($P -d "$D" pwrite 0 65536 2 fdatasync)" "$(printf '65536\n0')" "a lying write is acknowledged"
assert_eq "$($P -d "$D" verify 0 65536 1)" "65536 ok" "and never written"
assert_eq "$(stat_get write_fault_lies)" 1 "write_fault_lies"
assert_eq "$($P -d "$D" pwrite 65536 4096 2)" 4096 "a write beside the range"
assert_eq "$($P -d "$D" verify 65536 4096 2)" "4096 ok" "is written"
ctl fault clear

# A corrupting write: one bit flipped, inside [1M, 1M + 4K).
ctl fault add op=write corrupt=flip bits=1 offset=1M len=4K seed=5 >/dev/null || fail "fault add corrupt"
assert_eq "$($P -d "$D" pwrite 1044480 16384 3)" 16384 "a write over the range succeeds"
ctl fault clear
dd if="$D" of="$T/got" bs=4096 skip=255 count=4 iflag=direct status=none || fail "dd read"
# The expected bytes: the pattern depends on the absolute offset, so write it at the same
# offset of a scratch file.
truncate -s 4194304 "$T/want"
assert_eq "$("$P" "$T/want" pwrite 1044480 16384 3)" 16384 "reference"
dd if="$T/want" of="$T/want16k" bs=4096 skip=255 count=4 status=none
cmp -l "$T/got" "$T/want16k" >"$T/cmp" || true
assert_eq "$(wc -l <"$T/cmp")" 1 "bytes that differ"
read -r pos a b <"$T/cmp"
pos=$((pos - 1))
[ "$pos" -ge 4096 ] && [ "$pos" -lt 8192 ] || fail "the flipped byte ($pos) is outside the fault's range"
x=$((8#$a ^ 8#$b))
case $x in 1 | 2 | 4 | 8 | 16 | 32 | 64 | 128) ;; *) fail "more than one bit differs (xor $x)" ;; esac
assert_eq "$(stat_get write_fault_corruptions)" 1 "write_fault_corruptions"

# A corrupting read: zeroes in the range, the image intact.
ctl fault add op=read corrupt=zero offset=2M len=4K >/dev/null || fail "fault add corrupt=zero"
assert_eq "$($P -d "$D" zeros 2097152 4096)" "4096 ok" "the read returns zeroes over the range"
assert_eq "$($P -d "$D" verify 2101248 4096 1)" "4096 ok" "and the data beside it"
ctl fault clear
assert_eq "$($P -d "$D" verify 2097152 4096 1)" "4096 ok" "the image was never changed"
assert_eq "$(stat_get read_fault_corruptions)" 1 "read_fault_corruptions"
pd_stop
