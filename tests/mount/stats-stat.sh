#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MNT/stat is one line of the 17 /sys/block/<dev>/stat fields, and once the disk is idle each
# field agrees with the stats names it comes from: reads completed = read_ios, sectors =
# bytes / 512, ms = wait_us / 1000, in flight = queued_requests + in_flight, and so on.
# Checked on a fresh disk (all zero) and after a load with every op and some latency.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fallocate

check_stat() {	# LABEL: compare MNT/stat with MNT/stats, field by field
	local label=$1 s=$T/stats f want got i
	stats_save "$s"
	read -r -a f <"$MNT/stat" || fail "cannot read $MNT/stat"
	[ "$(wc -l <"$MNT/stat")" = 1 ] || fail "stat is not one line"
	[ ${#f[@]} = 17 ] || fail "stat has ${#f[@]} fields, not 17: ${f[*]}"
	want=(
		"$(snap_get "$s" read_ios)" "$(snap_get "$s" read_merges)"
		$(($(snap_get "$s" read_bytes) / 512)) $(($(snap_get "$s" read_wait_us) / 1000))
		"$(snap_get "$s" write_ios)" "$(snap_get "$s" write_merges)"
		$(($(snap_get "$s" write_bytes) / 512)) $(($(snap_get "$s" write_wait_us) / 1000))
		$(($(snap_get "$s" queued_requests) + $(snap_get "$s" in_flight)))
		$(($(snap_get "$s" io_ticks_us) / 1000)) $(($(snap_get "$s" time_in_queue_us) / 1000))
		"$(snap_get "$s" discard_ios)" "$(snap_get "$s" discard_merges)"
		$(($(snap_get "$s" discard_bytes) / 512)) $(($(snap_get "$s" discard_wait_us) / 1000))
		"$(snap_get "$s" flush_ios)" $(($(snap_get "$s" flush_wait_us) / 1000))
	)
	got=("${f[@]}")
	for i in $(seq 0 16); do
		[[ ${got[i]} =~ ^[0-9]+$ ]] || fail "$label: stat field $((i + 1)) is '${got[i]}'"
		[ "${got[i]}" = "${want[i]}" ] ||
			fail "$label: stat field $((i + 1)) is ${got[i]}, stats say ${want[i]} (stat: ${got[*]})"
	done
	log "$label: stat ${got[*]}"
}

# 500 us per command: the ms fields count whole milliseconds, so make them non-zero.
pd_start -s 64M --set controller.latency_us=500
check_stat "fresh disk"
[ "$(tr -s ' ' '\n' <"$MNT/stat" | grep -c '^[1-9]')" = 0 ] || fail "a fresh disk's stat is not all 0"

D=$MNT/disk
dd if=/dev/urandom of="$D" bs=64k count=64 conv=notrunc,fsync status=none || fail "dd write"
dd if="$D" of=/dev/null bs=4k count=64 iflag=direct status=none || fail "dd read"
fallocate -p -o 8M -l 1M "$D" || fail "fallocate punch hole"
fallocate -p -o 10M -l 64k "$D" || fail "fallocate punch hole"
pd_wait_idle
check_stat "after load"
read -r -a f <"$MNT/stat"
for i in 0 2 3 4 6 7 9 10 11 13 15; do
	assert_gt "${f[i]}" 0 "stat field $((i + 1)) after a load with every op"
done
pd_stop
