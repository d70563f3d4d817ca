#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 4 KiB O_DIRECT writes and reads (dd oflag=direct / iflag=direct) verify, and each one
# reaches the queue as its own 4 KiB bio.
. "$(dirname "$0")/../lib.sh"
require_fuse

n=256
head -c $((n * 4096)) /dev/urandom >"$T/src"
pd_start -s 16M
stats_save "$T/s0"
# Start at 1 MiB + 4 KiB so that the range is not aligned to anything larger than a block.
dd if="$T/src" of="$MNT/disk" bs=4k seek=257 count=$n oflag=direct conv=notrunc status=none ||
	fail "O_DIRECT dd write failed"
stats_save "$T/s1"
assert_eq $(($(snap_get "$T/s1" write_bios) - $(snap_get "$T/s0" write_bios))) $n \
	"one write bio per 4 KiB O_DIRECT write"
assert_eq $(($(snap_get "$T/s1" write_bytes) - $(snap_get "$T/s0" write_bytes))) $((n * 4096)) \
	"write_bytes of the O_DIRECT writes"

dd if="$MNT/disk" of="$T/back" bs=4k skip=257 count=$n iflag=direct status=none ||
	fail "O_DIRECT dd read failed"
stats_save "$T/s2"
assert_eq "$(sha_of "$T/back")" "$(sha_of "$T/src")" "O_DIRECT read-back checksum"
assert_eq $(($(snap_get "$T/s2" read_bios) - $(snap_get "$T/s1" read_bios))) $n \
	"one read bio per 4 KiB O_DIRECT read"
assert_eq "$(sha_of "$T/disk.img" $((257 * 4096)) $((n * 4096)))" "$(sha_of "$T/src")" \
	"backing image holds the O_DIRECT data"
# The blocks around the range are untouched (still zero).
assert_eq "$(sha_of "$T/disk.img" 0 $((257 * 4096)))" \
	"$(head -c $((257 * 4096)) /dev/zero | sha256sum | cut -d' ' -f1)" "blocks before the range"
assert_identities
pd_stop
