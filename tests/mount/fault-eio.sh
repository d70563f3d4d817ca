#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The backing image returns EIO (image on an nbdfuse mount of nbdkit's error filter, switched
# on and off with error-file): readers and writers get EIO, the daemon stays up and logs the
# fault once, not once per request; when the fault clears, I/O works and acknowledged data
# is intact.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd nbdfuse nbdkit
build_helper pdio
P=$T/pdio

mkdir "$T/nbd"
nbdfuse "$T/nbd/img" --command nbdkit -s --exit-with-parent --filter=error memory 16M \
	error=EIO error-rate=100% error-file="$T/inject" >"$T/nbdfuse.log" 2>&1 &
nbd_pid=$!
for i in $(seq 100); do [ -f "$T/nbd/img" ] && break; sleep 0.05; done
[ -f "$T/nbd/img" ] || { cat "$T/nbdfuse.log" >&2; fail "nbdfuse did not mount"; }
pd_start -i "$T/nbd/img" -s 16M
# Stop plugdisk before the nbd mount goes away, whatever happens.
stop_both() {
	kill -TERM "$PD_PID" 2>/dev/null
	pid_gone_within 5 "$PD_PID" || true
	fusermount3 -u "$T/nbd" 2>/dev/null
	wait "$nbd_pid" 2>/dev/null
}
at_cleanup stop_both
D=$MNT/disk

assert_eq "$($P "$D" write 0 1048576 1 fsync)" "$(printf '1048576\n0')" "write before the fault"
log0=$(wc -l <"$T/daemon.log")
touch "$T/inject"
nr=0 nw=0
# Reads go to never-read ranges (8M on): nbdfuse's page cache would answer the others.
for i in $(seq 0 19); do
	r=$($P -d "$D" pread $(((8 << 20) + i * 65536)) 65536)
	[ "$r" = EIO ] && nr=$((nr + 1)) || log "read $i during the fault: $r"
	r=$($P -d "$D" pwrite $((4194304 + i * 65536)) 65536 $((100 + i)))
	[ "$r" = EIO ] && nw=$((nw + 1)) || log "write $i during the fault: $r"
done
log "during the fault: $nr reads and $nw writes got EIO"
assert_eq "$nr" 20 "reads that got EIO"
assert_eq "$nw" 20 "writes that got EIO"
kill -0 "$PD_PID" || fail "daemon died on EIO"
stats_save "$T/s.fault"
if grep -q '^read_errors ' "$T/s.fault"; then
	assert_gt "$(snap_get "$T/s.fault" read_errors)" 0 "read_errors"
	assert_gt "$(snap_get "$T/s.fault" write_errors)" 0 "write_errors"
fi

rm "$T/inject"
assert_eq "$($P -d "$D" verify 0 1048576 1)" "1048576 ok" "acknowledged data after the fault"
for i in $(seq 0 19); do
	assert_eq "$($P -d "$D" pwrite $((4194304 + i * 65536)) 65536 $((100 + i)))" 65536 \
		"write $i after the fault"
done
assert_eq "$($P "$D" fsync verify 4194304 1310720 0)" "0
1310720 bad@4194304" "fsync after the fault"
for i in $(seq 0 19); do
	assert_eq "$($P -d "$D" verify $((4194304 + i * 65536)) 65536 $((100 + i)))" "65536 ok" \
		"write $i reads back"
done
faultlines=$(tail -n +$((log0 + 1)) "$T/daemon.log" | grep -c 'errors are not logged until')
log "log lines about the fault: $faultlines"
[ "$faultlines" -ge 1 ] || { cat "$T/daemon.log" >&2; fail "the fault was not logged"; }
[ "$faultlines" -le 2 ] || { cat "$T/daemon.log" >&2; fail "$faultlines error lines for 40 failed requests (one per direction expected)"; }
assert_identities
pd_stop
fusermount3 -u "$T/nbd" || fail "nbdfuse unmount"
wait "$nbd_pid" 2>/dev/null
