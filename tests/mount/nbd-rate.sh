#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The controller's limits hold over the NBD backend as over a file: with controller.iops=500
# and with controller.bandwidth=8M, the rate measured from plugdisk's own counters (ios and
# bytes between two stats snapshots, over snapshot_us) under fio at iodepth 32 is at most 2%
# above the limit, and at most 10% below it (completions on a busy shared machine lag their
# dispatch; the limiter itself is exact, see make bench).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
require_cmd fio
cd "$T" || fail "cd $T"

# measure NAME LIMIT VALUE-KEY BS: fio runs 6 s; counters are read at 1 s and 5 s; print the
# rate and check it.
measure() {
	local name=$1 limit=$2 key=$3 bs=$4 v1 v2 t1 t2 rate
	fio --name="$name" --filename="$MNT/disk" --ioengine=libaio --direct=1 --iodepth=32 \
		--bs="$bs" --rw=randread --size=16M --time_based --runtime=6 \
		--output="$T/fio-$name.log" &
	local fpid=$!
	sleep 1
	stats_save "$T/s1"
	sleep 4
	stats_save "$T/s2"
	wait "$fpid" || { cat "$T/fio-$name.log" >&2; fail "$name: fio failed"; }
	v1=$(snap_get "$T/s1" "$key") v2=$(snap_get "$T/s2" "$key")
	t1=$(snap_get "$T/s1" snapshot_us) t2=$(snap_get "$T/s2" snapshot_us)
	rate=$(awk -v a="$v1" -v b="$v2" -v s="$t1" -v e="$t2" 'BEGIN { printf "%.1f", (b - a) * 1e6 / (e - s) }')
	log "$name: limit $limit, measured $rate"
	awk -v r="$rate" -v l="$limit" 'BEGIN { d = (r - l) / l; exit !(d < 0.02 && d > -0.10) }' ||
		fail "$name: $rate is more than 2% above or 10% below $limit"
}

nbdkit_start unix memory 16M
pd_start -i "$NBD_URI" -s 16M --set controller.iops=500
measure iops 500 read_ios 4k
pd_stop
pd_start -i "$NBD_URI" -s 16M --set controller.bandwidth=8M
measure bandwidth $((8 << 20)) read_bytes 64k
pd_stop
log "ok"
