#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stats, stat and control answer while the data path is saturated, whatever the depth: on a
# 1 MB/s disk under 1 MiB direct writes at iodepth 32, 64 and 128 (up to eight times the
# daemon's 16 MiB data budget, so that every receive thread but one waits for it), rounds of
# reads return within 2 s each (one write takes 1 s: a read that waits behind the data path
# takes seconds), and the counters move between them. On the classic transport the requests
# beyond the budget are parked, and the stats show them.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio timeout

for depth in 32 64 128; do
	log "--- iodepth $depth"
	pd_start -s 512M --set controller.bandwidth=1M
	fio --name=w --filename="$MNT/disk" --rw=randwrite --bs=1M --size=480M --iodepth=$depth \
		--ioengine=libaio --direct=1 --verify=crc32c --do_verify=0 --verify_state_save=0 \
		--output="$T/fio-$depth.log" >/dev/null 2>&1 &
	fio_pid=$!
	at_cleanup "kill $fio_pid 2>/dev/null"
	# All of the depth reached the daemon: queued or in flight in the queue, or parked. On
	# io_uring the kernel holds back what is beyond its max_background (three quarters of a
	# ring queue's entries, the rest kept for foreground requests such as a stats read).
	want=$((depth - 2))
	if [ "$PLUGDISK_TRANSPORT" = io_uring ]; then
		rd=$(stat_get fuse_ring_depth)
		[ $((rd - rd / 4)) -ge "$want" ] || want=$((rd - rd / 4))
	fi
	for _ in $(seq 100); do
		stats_save "$T/s0"
		held=$(($(snap_get "$T/s0" queued_requests) + $(snap_get "$T/s0" in_flight) +
			$(snap_get "$T/s0" fuse_parked)))
		[ "$held" -ge "$want" ] && break
		sleep 0.1
	done
	first=$(snap_get "$T/s0" write_bytes)
	log "requests held by the daemon: $held (parked $(snap_get "$T/s0" fuse_parked))"
	[ "$held" -ge "$want" ] || fail "only $held of $depth writes reached the daemon, want $want"
	if [ "$PLUGDISK_TRANSPORT" = classic ]; then
		# Beyond the 16 MiB budget, only parking lets the last thread read on.
		assert_gt "$(snap_get "$T/s0" fuse_parked)" 8 "writes parked at iodepth $depth"
	fi
	slow=0
	for i in $(seq 6); do
		t0=$(date +%s%N)
		timeout 5 cat "$MNT/stats" >"$T/s$i" || fail "iodepth $depth: read $i of stats did not return within 5 s"
		timeout 5 cat "$MNT/stat" >/dev/null || fail "iodepth $depth: read $i of stat did not return within 5 s"
		timeout 5 cat "$MNT/control" >/dev/null || fail "iodepth $depth: read $i of control did not return within 5 s"
		ms=$((($(date +%s%N) - t0) / 1000000))
		log "iodepth $depth, read $i: ${ms} ms"
		[ "$ms" -lt 2000 ] || slow=$((slow + 1))
		sleep 0.3
	done
	[ "$slow" = 0 ] || fail "iodepth $depth: $slow of 6 rounds of reads took 2 s or more"
	assert_gt "$(snap_get "$T/s6" write_bytes)" "$first" "write_bytes moved during the reads"
	kill -0 $fio_pid 2>/dev/null || fail "the writer ended before the reads: the disk was not saturated"
	"$PLUGDISK" ctl "$MNT" 'start' >/dev/null || fail "a control command did not answer"
	# Stopping lifts the limits: the queued writes complete at the backing store's speed, and
	# the parked ones with them.
	pd_stop
	wait $fio_pid 2>/dev/null || true
done
