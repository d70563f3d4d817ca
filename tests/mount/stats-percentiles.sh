#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Latency percentiles are ordered for every op: p50 <= p90 <= p99 <= p999 <= max, non-zero
# for an op that completed bios and all zero for one that did not. The load mixes request
# sizes and depths (dd and parallel writers), so that the percentiles spread.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fallocate

check_order() {	# FILE: every op's percentiles in order
	local f=$1 op p50 p90 p99 p999 max ios
	for op in read write flush discard; do
		ios=$(snap_get "$f" ${op}_ios)
		p50=$(snap_get "$f" ${op}_lat_p50_us) p90=$(snap_get "$f" ${op}_lat_p90_us)
		p99=$(snap_get "$f" ${op}_lat_p99_us) p999=$(snap_get "$f" ${op}_lat_p999_us)
		max=$(snap_get "$f" ${op}_lat_max_us)
		log "$op: ios $ios p50 $p50 p90 $p90 p99 $p99 p999 $p999 max $max"
		[ "$p50" -le "$p90" ] && [ "$p90" -le "$p99" ] && [ "$p99" -le "$p999" ] &&
			[ "$p999" -le "$max" ] ||
			fail "$op percentiles out of order: $p50 $p90 $p99 $p999 $max"
		if [ "$ios" -gt 0 ]; then
			assert_gt "$max" 0 "${op}_lat_max_us with $ios ios"
		else
			assert_eq "$max" 0 "${op}_lat_max_us with no ios"
		fi
	done
}

pd_start -s 64M --set controller.queue_depth=4
D=$MNT/disk
stats_save "$T/s0"
check_order "$T/s0"	# nothing yet: all zero
pids=()
for i in 0 1 2 3; do
	dd if=/dev/zero of="$D" bs=$((4 << i))k count=$((64 >> i)) seek=$((i * 64 >> i)) \
		oflag=direct conv=notrunc status=none &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "parallel dd writer failed"; done
dd if=/dev/urandom of="$D" bs=1M count=4 seek=8 conv=notrunc,fsync status=none || fail "dd"
dd if="$D" of=/dev/null bs=4k count=256 iflag=direct status=none || fail "dd read 4k"
dd if="$D" of=/dev/null bs=1M count=8 iflag=direct status=none || fail "dd read 1M"
fallocate -p -o 16M -l 1M "$D" || fail "fallocate punch hole"
stats_save "$T/s1"
check_order "$T/s1"
for op in read write flush discard; do
	assert_gt "$(snap_get "$T/s1" ${op}_ios)" 0 "${op}_ios after the load"
done
pd_stop
