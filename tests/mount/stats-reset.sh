#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writing "reset" to MNT/stats (with >> and with a plain >) zeroes the counters and keeps the
# state and settings; any other write fails with EINVAL. stat (the sysfs line) follows.
. "$(dirname "$0")/../lib.sh"
require_fuse
pd_start -s 16M --set controller.iops=5000
dd if=/dev/urandom of="$MNT/disk" bs=64k count=16 oflag=direct conv=notrunc,fsync status=none
dd if="$MNT/disk" of=/dev/null bs=64k count=16 iflag=direct status=none
pd_wait_idle
assert_gt "$(stat_get write_bios)" 0 "write_bios before reset"
assert_gt "$(awk '{print $5}' "$MNT/stat")" 0 "writes completed in stat before reset"

(printf 'hello\n' >>"$MNT/stats") 2>"$T/err" && fail "writing 'hello' to stats succeeded"
grep -q "Invalid argument" "$T/err" || { cat "$T/err" >&2; fail "'hello' to stats: not EINVAL"; }
assert_gt "$(stat_get write_bios)" 0 "a refused write left the counters"

(printf 'reset\0junk' >>"$MNT/stats") 2>/dev/null && fail "writing 'reset\\0junk' to stats succeeded"
assert_gt "$(stat_get write_bios)" 0 "'reset\\0junk' left the counters"

printf 'reset\n' >>"$MNT/stats" || fail "writing reset to stats (>>) failed"
# Once more through one descriptor opened for appending: the second write comes at an offset.
exec 3>>"$MNT/stats"
printf 'reset\n' >&3 || fail "first reset through one O_APPEND descriptor failed"
printf 'reset\n' >&3 || fail "second reset through one O_APPEND descriptor failed"
exec 3>&-
printf 'reset\n' >>"$MNT/stats" || fail "writing reset to stats (>>) after earlier writes failed"
stats_save "$T/s1"
for n in read_bios read_ios read_bytes write_bios write_ios write_bytes write_merges \
	flush_bios flush_ios unplug_idle queue_stops queue_stops_budget write_lat_max_us; do
	assert_eq "$(snap_get "$T/s1" $n)" 0 "$n after reset"
done
assert_eq "$(snap_get "$T/s1" limit_iops)" 5000 "limit_iops kept across reset"
assert_eq "$(snap_get "$T/s1" disk_size_bytes)" $((16 << 20)) "disk size kept"
assert_eq "$(awk '{s = 0; for (i = 1; i <= 8; i++) s += $i; print s}' "$MNT/stat")" 0 \
	"read and write fields of stat after reset"

# Counting resumes from zero.
dd if=/dev/zero of="$MNT/disk" bs=4k count=3 oflag=direct conv=notrunc status=none
pd_wait_idle
assert_eq "$(stat_get write_bios)" 3 "write_bios after reset and 3 writes"
assert_eq "$(stat_get write_bytes)" 12288 "write_bytes after reset and 3 writes"
assert_eq "$(awk '{print $5, $7}' "$MNT/stat")" "3 24" "stat writes and sectors"
assert_identities

# The plain shell form opens with O_TRUNC; a virtual file has nothing to truncate, so it must
# work too.
(printf 'reset\n' >"$MNT/stats") 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "echo reset > stats (O_TRUNC open) failed"; }
assert_eq "$(stat_get write_bios)" 0 "write_bios after echo reset > stats"
pd_stop
