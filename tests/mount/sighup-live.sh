#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP under load: while verified fio runs at iodepth 32 through a loop device, the config
# is rewritten and reloaded every 0.1 s, switching queue depth, nomerges, max request size,
# nr_requests, plugging, IOPS and latency. No I/O fails or is lost, every reload is applied,
# and the identities hold afterwards.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd fio
cd "$T" || fail "cd $T"	# fio writes state files into the working directory

put() {
	{ echo "disk = { image = \"$T/disk.img\"; size = \"32M\"; };"; printf '%s\n' "$@"; } \
		>"$T/pd.conf.new"
	mv "$T/pd.conf.new" "$T/pd.conf"
}
settings=(
	'queue = { nomerges = 2; nr_requests = 4; unplug_threshold = 2; };
controller = { queue_depth = 1; iops = 3000; };'
	'queue = { nomerges = 0; max_request_size = "64K"; plug = false; };
controller = { queue_depth = 32; latency_us = 200; };'
	'queue = { nomerges = 1; nr_requests = 16; unplug_threshold = 8; };
controller = { queue_depth = 4; bandwidth = "20M"; };'
	'queue = { max_request_size = "1M"; };
controller = { queue_depth = 64; workers = 2; };'
)
put "${settings[3]}"
pd_start -c "$T/pd.conf"
dev=$(loop_attach "$MNT/disk" --direct-io=on)
loop_nomerges "$dev" 2

fio --filename="$dev" --ioengine=libaio --direct=1 --iodepth=32 --verify_state_save=0 \
	--output="$T/fio.log" \
	--name=mix --size=12M --bsrange=4k-64k --rw=randwrite --fsync=16 --verify=crc32c \
	--verify_fatal=1 \
	--name=seq --offset=16M --size=8M --rw=write --bs=4k --verify=crc32c --verify_fatal=1 \
	--name=reader --offset=24M --size=8M --rw=randread --bs=8k &
fio_pid=$!
n=0
while kill -0 $fio_pid 2>/dev/null; do
	put "${settings[n % 4]}"
	kill -HUP "$PD_PID" || fail "daemon gone"
	n=$((n + 1))
	sleep 0.1
done
wait $fio_pid || { cat "$T/fio.log" >&2; fail "fio failed under reloads"; }
log "$n reloads during fio; fio issued: $(grep -o "total=[0-9,]*" "$T/fio.log" | tr "\n" " ")"
[ $n -ge 3 ] || fail "fio finished after only $n reloads: the test proves little"
loop_detach "$dev"
# The last reload is in force.
put "${settings[2]}"
kill -HUP "$PD_PID"
stat_wait queue_depth 4 "queue_depth after the last reload"
assert_eq "$(stat_get queue_nomerges)" 1 "queue_nomerges after the last reload"
assert_eq "$(stat_get limit_bandwidth_bytes)" $((20 << 20)) "bandwidth after the last reload"
grep -c 'reloaded' "$T/daemon.log" >/dev/null || log "note: no 'reloaded' lines in the log"
grep -q 'error' "$T/daemon.log" && { cat "$T/daemon.log" >&2; fail "errors logged under reloads"; }
assert_identities
stats_save "$T/s1"
for op in read write flush; do
	assert_eq "$(snap_get "$T/s1" ${op}_errors)" 0 "${op}_errors"
done
pd_stop
