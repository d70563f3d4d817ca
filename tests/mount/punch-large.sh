#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A punch hole longer than 4 GiB is done whole: data at 5 GiB of an 8 GiB disk reads back as
# zeroes after `fallocate -p` over the whole disk, and discard_bytes counts all 8 GiB.
# A zero range of many bios (submitted in bounded batches) zeroes all of its range.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fallocate
pd_start -s 8G
for off in 0 $((5 << 30)) $(((8 << 30) - 4096)); do
	printf 'HELLO%s' "$off" | dd of="$MNT/disk" bs=4096 seek=$((off / 4096)) conv=notrunc,fsync \
		status=none || fail "writing at $off failed"
done
assert_eq "$(dd if="$MNT/disk" bs=4096 skip=$((5 << 18)) count=1 status=none | head -c 15)" \
	"HELLO$((5 << 30))" "data at 5 GiB before the punch"
fallocate -p -o 0 -l 8G "$MNT/disk" || fail "fallocate -p over 8 GiB failed"
pd_wait_idle
assert_eq "$(stat_get discard_bytes)" $((8 << 30)) "discard_bytes after an 8 GiB punch"
for off in 0 $((5 << 30)) $(((8 << 30) - 4096)); do
	n=$(dd if="$MNT/disk" bs=4096 skip=$((off / 4096)) count=1 status=none | tr -d '\0' | wc -c)
	assert_eq "$n" 0 "non-zero bytes at $off after the punch"
done

# Zero range: 96 MiB (96 bios of 1 MiB, six batches) around 5 GiB, with data at both ends.
printf 'reset\n' >"$MNT/stats"
for off in $(((5 << 30) - (48 << 20))) $(((5 << 30) + (48 << 20) - 4096)); do
	printf 'AGAIN' | dd of="$MNT/disk" bs=4096 seek=$((off / 4096)) conv=notrunc,fsync status=none
done
fallocate -z -o $(((5 << 30) - (48 << 20))) -l $((96 << 20)) "$MNT/disk" ||
	fail "fallocate -z over 96 MiB failed"
pd_wait_idle
assert_eq "$(stat_get write_bytes)" $(((96 << 20) + 10)) "bytes written: two markers and the zero range"
for off in $(((5 << 30) - (48 << 20))) $(((5 << 30) + (48 << 20) - 4096)); do
	n=$(dd if="$MNT/disk" bs=4096 skip=$((off / 4096)) count=1 status=none | tr -d '\0' | wc -c)
	assert_eq "$n" 0 "non-zero bytes at $off after the zero range"
done
assert_identities
pd_stop
