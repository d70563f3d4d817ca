#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `echo reset > MNT/stats` zeroes every counter (each name that is not state or a setting),
# while the state and the settings stay: at idle every counter reads 0 afterwards and the
# identities hold for the load that follows; under load (a rate-limited queue full of
# requests) the queued requests and the stop state survive the reset. Any other write to
# stats (other words, an empty line, "reset" at an offset) fails with EINVAL.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd fio fallocate
cd "$T" || fail "cd $T"
export LC_ALL=C

# Names that are state or settings, not counters: a reset leaves them alone.
is_state() {
	case $1 in
	disk_size_bytes | snapshot_us | plugged | stopped | stop_reason | held | queued_requests | \
		queued_bytes | in_flight | queue_depth | bucket_* | limit_* | queue_plug | \
		queue_unplug_threshold | queue_unplug_delay_us | queue_nomerges | \
		queue_max_request_size_bytes | queue_nr_requests | fuse_transport | fuse_ring_queues | \
		fuse_ring_depth | fuse_max_background | cache_writeback | cache_powered | \
		cache_size_bytes | cache_dirty_* | cache_destage_rate_bytes | cache_epoch | \
		cache_durable_epoch) return 0 ;;
	# Counted as requests arrive: the reads of stats that check the reset are requests.
	fuse_ring_requests | fuse_ring_commit_waits) return 0 ;;
	esac
	return 1
}
settings() { grep -E '^(disk_size_bytes|queue_depth|limit_|queue_(plug|unplug|nomerges|max|nr))' "$1"; }

pd_start -s 64M --set controller.queue_depth=4 --set controller.write_iops=300 \
	--set queue.nr_requests=64
D=$MNT/disk

# 1. A load touching every op, then a reset at idle.
dd if=/dev/urandom of="$D" bs=64k count=16 oflag=direct conv=notrunc,fsync status=none || fail dd
dd if="$D" of=/dev/null bs=64k count=16 iflag=direct status=none || fail "dd read"
fallocate -p -o 8M -l 1M "$D" || fail "fallocate punch hole"
pd_wait_idle
stats_save "$T/before"
for n in read_ios write_ios flush_ios discard_ios write_bytes plugs io_ticks_us write_lat_max_us \
	write_size_64k; do
	assert_gt "$(snap_get "$T/before" $n)" 0 "$n before the reset"
done
err=$( (echo reset >"$MNT/stats") 2>&1) || fail "echo reset > stats failed: $err"
stats_save "$T/after"
if [ "$PLUGDISK_TRANSPORT" = io_uring ]; then
	# The ring counter starts again too: only the few requests since the reset remain.
	assert_gt "$(snap_get "$T/before" fuse_ring_requests)" 40 "fuse_ring_requests before the reset"
	assert_gt 10 "$(snap_get "$T/after" fuse_ring_requests)" "fuse_ring_requests after the reset"
fi
nonzero=$(while read -r name value; do
	[[ -z $name || $name == \#* ]] && continue
	is_state "$name" || [ "$value" = 0 ] || echo "$name=$value"
done <"$T/after")
[ -z "$nonzero" ] || fail "counters not zeroed by reset: $(echo $nonzero)"
diff <(settings "$T/before") <(settings "$T/after") >&2 || fail "settings changed on reset"
assert_eq "$(snap_get "$T/after" queue_depth)" 4 "queue_depth after reset"
assert_eq "$(snap_get "$T/after" limit_write_iops)" 300 "limit_write_iops after reset"
# Counting starts afresh and consistently.
dd if=/dev/zero of="$D" bs=4k count=8 oflag=direct conv=notrunc status=none || fail "dd after reset"
assert_identities
assert_eq "$(stat_get write_bios)" 8 "write_bios after reset and 8 writes"

# 2. A reset under load: fio keeps the write_iops-limited queue full of requests.
dev=$(loop_attach "$D" --direct-io=on)
loop_nomerges "$dev" 2
fio --name=busy --filename="$dev" --ioengine=libaio --direct=1 --iodepth=32 --bs=4k \
	--rw=randwrite --size=32M --time_based --runtime=2 --output="$T/fio.log" &
fio_pid=$!
at_cleanup "kill $fio_pid 2>/dev/null; wait $fio_pid 2>/dev/null"
for i in $(seq 100); do
	stats_save "$T/load1"
	[ "$(snap_get "$T/load1" queued_requests)" -ge 8 ] && break
	sleep 0.02
done
[ "$(snap_get "$T/load1" queued_requests)" -ge 8 ] || fail "the queue did not fill under fio"
echo reset >"$MNT/stats" || fail "reset under load"
stats_save "$T/load2"
log "under load: before reset queued $(snap_get "$T/load1" queued_requests)" \
	"stopped $(snap_get "$T/load1" stopped) write_ios $(snap_get "$T/load1" write_ios);" \
	"after: queued $(snap_get "$T/load2" queued_requests) stopped $(snap_get "$T/load2" stopped)" \
	"($(snap_get "$T/load2" stop_reason)) write_ios $(snap_get "$T/load2" write_ios)"
# 300 IOPS drain at most a few requests between the two reads: the queue is still full.
assert_gt "$(snap_get "$T/load2" queued_requests)" 0 "queued_requests right after a reset"
[ "$(snap_get "$T/load2" write_ios)" -lt "$(snap_get "$T/load1" write_ios)" ] ||
	fail "write_ios did not go down on reset under load"
diff <(settings "$T/load1") <(settings "$T/load2") >&2 || fail "settings changed on reset"
wait "$fio_pid" || { cat "$T/fio.log" >&2; fail "fio failed"; }
loop_detach "$dev"

# 3. Any other write fails with EINVAL: other words, "reset" at an offset, an empty line.
for w in hello resetx 'reset now' ''; do
	out=$(printf '%s\n' "$w" | dd of="$MNT/stats" conv=notrunc status=none 2>&1) &&
		fail "writing '$w' to stats succeeded"
	[[ $out == *"Invalid argument"* ]] || fail "writing '$w' to stats: $out (want EINVAL)"
done
out=$(printf reset | dd of="$MNT/stats" bs=1 seek=1 conv=notrunc status=none 2>&1) &&
	fail "writing reset at offset 1 succeeded"
[[ $out == *"Invalid argument"* ]] || fail "reset at offset 1: $out (want EINVAL)"
[ "$(stat_get write_ios)" -gt 0 ] || fail "a refused write reset the counters"
pd_stop
