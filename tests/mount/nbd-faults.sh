#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Faults of an NBD server that stays up. nbdkit's error filter: reads and writes get the
# server's EIO, the connection stays up, the daemon logs the fault once, and everything works
# again when the fault clears. nbdkit's delay filter: a server slower than
# backend.timeout_ms has its connection dropped (EIO, nbd_timeouts), the backend reconnects,
# and the first flush after fails (a write was acknowledged and not flushed); a server slower
# than that but within it just takes its time.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
build_helper pdio
P=$T/pdio
D=$MNT/disk

nbdkit_start unix --filter=error memory 16M error=EIO error-rate=100% error-file="$T/inject"
pd_start -i "$NBD_URI" -s 16M
assert_eq "$($P -d "$D" write 0 1048576 1 fsync)" "$(printf '1048576\n0')" "write before the fault"
log0=$(wc -l <"$T/daemon.log")
touch "$T/inject"
for i in $(seq 0 9); do
	assert_eq "$($P -d "$D" pread $((i * 65536)) 65536)" EIO "read $i during the fault"
	assert_eq "$($P -d "$D" pwrite $(((4 << 20) + i * 65536)) 65536 5)" EIO "write $i during the fault"
done
kill -0 "$PD_PID" || fail "daemon died on EIO"
stats_save "$T/s"
assert_eq "$(snap_get "$T/s" nbd_connections_up)" "$(snap_get "$T/s" nbd_connections)" \
	"an error reply does not drop a connection"
assert_eq "$(snap_get "$T/s" read_errors)" 10 "read_errors"
assert_eq "$(snap_get "$T/s" write_errors)" 10 "write_errors"
rm "$T/inject"
assert_eq "$($P -d "$D" verify 0 1048576 1)" "1048576 ok" "data after the fault"
assert_eq "$($P -d "$D" write $((4 << 20)) 1048576 2 verify $((4 << 20)) 1048576 2)" \
	"$(printf '1048576\n1048576 ok')" "write after the fault"
pd_stop
nbd_kill

# A server that takes 30 s per read, with backend.timeout_ms=1000: the read fails with EIO
# after about a second (well before 30), the connection is dropped and comes back.
nbdkit_start unix --filter=delay memory 16M delay-read=30
pd_start -i "$NBD_URI" -s 16M --set backend.timeout_ms=1000 --set controller.connections=1
assert_eq "$($P -d "$D" write 0 65536 3)" 65536 "write to a slow-reading server"
start=$(date +%s%N)
assert_eq "$($P -d "$D" pread 0 4096)" EIO "read slower than backend.timeout_ms"
took_ms=$((($(date +%s%N) - start) / 1000000))
log "the read failed after $took_ms ms"
[ "$took_ms" -lt 15000 ] || fail "the read waited for the server ($took_ms ms), not the timeout"
assert_eq "$(stat_get nbd_timeouts)" 1 "nbd_timeouts"
stat_wait nbd_connections_up 1 "reconnected after the timeout" 10
assert_eq "$($P -d "$D" pwrite 65536 4096 4)" 4096 "a write after the reconnect"
# The write before the drop was acknowledged and not flushed: the first flush after the
# drop cannot vouch for it (nbd-lost-writes.sh), the next one can.
assert_eq "$($P -d "$D" fsync)" EIO "the first flush after the drop"
assert_eq "$($P -d "$D" fsync)" 0 "the second flush after the drop"
pd_stop
nbd_kill

# Slow but within the timeout: the read waits and succeeds.
nbdkit_start unix --filter=delay memory 16M delay-read=200ms delay-write=200ms
pd_start -i "$NBD_URI" -s 16M --set backend.timeout_ms=2000
assert_eq "$($P -d "$D" write 0 65536 6 verify 0 65536 6)" "$(printf '65536\n65536 ok')" \
	"I/O on a server slower than the disk but within the timeout"
assert_eq "$(stat_get nbd_timeouts)" 0 "nbd_timeouts within the timeout"
pd_stop
log "ok"
