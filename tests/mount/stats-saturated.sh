#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stats, stat and control answer while the data path is saturated: on a 256 KiB/s disk under
# 1 MiB direct writes at iodepth 24 (more data than the daemon's data budget, so that every
# receive thread but one would wait for it), 20 rounds of reads return within 2 s each (one
# write takes 4 s: a read that waits behind the data path takes seconds), and the counters
# move between them.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio timeout
pd_start -s 128M --set controller.bandwidth=256K
fio --name=w --filename="$MNT/disk" --rw=randwrite --bs=1M --size=96M --iodepth=24 \
	--ioengine=libaio --direct=1 --verify=crc32c --do_verify=0 --verify_state_save=0 \
	--output="$T/fio.log" >/dev/null 2>&1 &
fio_pid=$!
at_cleanup "kill $fio_pid 2>/dev/null"
stat_wait_ge write_bios 16 "1 MiB writes queued"
first=$(stat_get write_bytes)
for i in $(seq 20); do
	t0=$(date +%s%N)
	timeout 5 cat "$MNT/stats" >"$T/s$i" || fail "read $i of stats did not return within 5 s"
	timeout 5 cat "$MNT/stat" >/dev/null || fail "read $i of stat did not return within 5 s"
	timeout 5 cat "$MNT/control" >/dev/null || fail "read $i of control did not return within 5 s"
	ms=$((($(date +%s%N) - t0) / 1000000))
	log "read $i: ${ms} ms"
	[ "$ms" -lt 2000 ] || slow=$((${slow:-0} + 1))
	sleep 0.4
done
[ "${slow:-0}" = 0 ] || fail "$slow of 20 rounds of reads took 2 s or more"

last=$(snap_get "$T/s20" write_bytes)
assert_gt "$last" "$first" "write_bytes moved during the reads"
kill -0 $fio_pid 2>/dev/null || fail "the writer ended before the reads: the disk was not saturated"
grep -q "^data_parked" "$T/s20" && log "parked: $(snap_get "$T/s20" data_parked)"
"$PLUGDISK" ctl "$MNT" 'start' >/dev/null || fail "a control command did not answer"
# Stopping lifts the limits: the queued writes complete at the backing store's speed, and the
# parked ones with them.
pd_stop
wait $fio_pid 2>/dev/null || true
