#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The crc stage: data written through it reads back; a block of the image changed behind
# the daemon's back fails its read with EIO (also after a restart, from the side file), while
# its neighbours still read; a block rewritten through the disk reads again; a corrupting
# fault below the stage is caught, and one above it is not (the checksum is of what it was
# given).
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
IMG=$T/disk.img
CRC=(--set "crc.file=$T/crc" --set "crc.block_size=4096")

pd_start -s 16M --set "stages.order=cache, faults, crc" "${CRC[@]}"
assert_eq "$($P -d "$D" pwrite 0 1048576 5 fsync)" "$(printf '1048576\n0')" "write"
assert_eq "$($P -d "$D" verify 0 1048576 5)" "1048576 ok" "read back"
# One byte of block 3 changed in the image (the file backend reads it with pread).
printf '\xff' | dd of="$IMG" bs=1 seek=$((3 * 4096 + 17)) conv=notrunc status=none
assert_eq "$($P -d "$D" pread $((3 * 4096)) 4096)" EIO "the changed block"
assert_eq "$($P -d "$D" pread 0 12288)" 12288 "the blocks before it"
assert_eq "$($P -d "$D" pread $((4 * 4096)) 65536)" 65536 "the blocks after it"
assert_gt "$(snap_get <(cat "$MNT/stats") crc_mismatches)" 0 "crc_mismatches"
grep -q 'crc: block at 12288' "$T/daemon.log" || fail "the mismatch was not logged"
pd_stop

# After a restart the side file still knows the block.
pd_start -s 16M --set "stages.order=cache, faults, crc" "${CRC[@]}"
assert_eq "$($P -d "$D" pread $((3 * 4096)) 4096)" EIO "the changed block after a restart"
# Rewritten whole through the disk, it reads again.
assert_eq "$($P -d "$D" pwrite $((3 * 4096)) 4096 9 verify $((3 * 4096)) 4096 9)" \
	"$(printf '4096\n4096 ok')" "the block rewritten"
pd_stop

# A read corrupted below the stage (the faults under crc) fails; above it, it passes.
pd_start -s 16M --set "stages.order=cache, crc, faults" "${CRC[@]}" \
	--set "faults=op=read offset=512K len=4K corrupt=flip"
assert_eq "$($P -d "$D" pread $((512 * 1024)) 4096)" EIO "corruption below crc"
pd_stop
pd_start -s 16M --set "stages.order=faults, cache, crc" "${CRC[@]}" \
	--set "faults=op=read offset=512K len=4K corrupt=flip"
assert_eq "$($P -d "$D" pread $((512 * 1024)) 4096)" 4096 "corruption above crc passes"
pd_stop

# Without the crc stage, the changed block reads as it is (the test can fail).
pd_start -s 16M
assert_eq "$($P -d "$D" pread $((3 * 4096)) 4096)" 4096 "no crc stage: no check"
pd_stop
