#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NBD server dies while fio and a writer run (nbdkit's file plugin on a Unix socket,
# killed with SIGKILL): fio and the writer get EIO, the daemon stays up, logs the loss once,
# and fails new I/O with EIO at once; once nbdkit is back on the same socket, the backend
# reconnects by itself, I/O works again, the first flush fails (unflushed writes were
# acknowledged on the dropped connections), and every write acknowledged before, during and
# after the outage reads back (the file plugin keeps them).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
require_cmd fio
build_helper pdio
P=$T/pdio
cd "$T" || fail "cd $T"

truncate -s 32M "$T/server.img"
nbdkit_start unix file "$T/server.img"
pd_start -i "$NBD_URI" -s 32M --set backend.timeout_ms=2000
D=$MNT/disk
nconn=$(stat_get nbd_connections)
assert_eq "$($P -d "$D" write 0 4194304 7 fsync)" "$(printf '4194304\n0')" "write before the outage"

# A writer of 64 KiB O_DIRECT blocks at 8-16M; each attempt's outcome goes to $T/attempts.
writer() {
	local i=0 off r
	while [ ! -f "$T/stop-writer" ]; do
		off=$(((8 << 20) + (i % 128) * 65536))
		r=$($P -d "$D" pwrite "$off" 65536 $((i + 1)))
		echo "$off $((i + 1)) $r" >>"$T/attempts"
		i=$((i + 1))
	done
}
writer &
wpid=$!
at_cleanup "touch '$T/stop-writer'; wait $wpid 2>/dev/null"
fio --name=load --filename="$D" --ioengine=libaio --direct=1 --iodepth=32 --bs=4k \
	--rw=randrw --offset=16M --size=16M --time_based --runtime=60 \
	--output="$T/fio.log" >/dev/null 2>"$T/fio.err" &
fpid=$!
sleep 1
kill -0 "$fpid" || { cat "$T/fio.log" "$T/fio.err" >&2; fail "fio ended before the server died"; }
nbd_kill
# fio stops at its first error: EIO, well within its 60 s.
for i in $(seq 300); do kill -0 "$fpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$fpid" 2>/dev/null && { kill "$fpid"; fail "fio still running 30 s after the server died"; }
wait "$fpid" && fail "fio succeeded with the server dead"
grep -q 'Input/output error' "$T/fio.log" "$T/fio.err" ||
	{ cat "$T/fio.log" "$T/fio.err" >&2; fail "fio did not fail with EIO"; }
kill -0 "$PD_PID" || fail "daemon died with its server"
mountpoint -q "$MNT" || fail "mount gone with the server"

# While the server is away: EIO at once, counted; nothing is connected.
assert_eq "$($P -d "$D" pread 0 4096)" EIO "a read while the server is away"
assert_eq "$($P -d "$D" pwrite 0 4096 9)" EIO "a write while the server is away"
stats_save "$T/s.down"
assert_eq "$(snap_get "$T/s.down" nbd_connections_up)" 0 "connections up while away"
assert_gt "$(snap_get "$T/s.down" nbd_failed_fast)" 0 "nbd_failed_fast"
assert_gt "$(snap_get "$T/s.down" read_errors)" 0 "read_errors"
grep -q ' EIO$' "$T/attempts" || fail "the writer got no EIO"
assert_eq "$(grep -c 'connection .* lost' "$T/daemon.log")" 1 "log lines about the loss"

# The server comes back on the same socket: the backend reconnects by itself.
nbdkit_start unix file "$T/server.img"
stat_wait nbd_connections_up "$nconn" "connections up after the restart" 20
assert_gt "$(stat_get nbd_reconnects)" $((nconn - 1)) "nbd_reconnects"
grep -q 'working again' "$T/daemon.log" || fail "no log line for the recovery"
# The writer goes on succeeding now; give it a few acknowledged writes after the outage.
n0=$(grep -c ' 65536$' "$T/attempts")
for i in $(seq 100); do [ "$(grep -c ' 65536$' "$T/attempts")" -gt $((n0 + 5)) ] && break; sleep 0.1; done
touch "$T/stop-writer"
wait "$wpid"
# Writes were acknowledged and not flushed when the connections dropped: the first flush
# after the outage cannot vouch for them and fails, once (nbd-lost-writes.sh shows why).
assert_eq "$($P -d "$D" fsync)" EIO "the first flush after the outage"
assert_eq "$($P -d "$D" fsync)" 0 "the second flush after the outage"

# Everything acknowledged reads back: the block written before, and for each writer block
# the last attempt if it was acknowledged (a failed one may or may not have landed).
assert_eq "$($P -d "$D" verify 0 4194304 7)" "4194304 ok" "data acknowledged before the outage"
awk '{ last[$1] = $2 " " $3 } END { for (o in last) print o, last[o] }' "$T/attempts" |
	while read -r off seed r; do
		[ "$r" = 65536 ] || continue
		out=$($P -d "$D" verify "$off" 65536 "$seed")
		[ "$out" = "65536 ok" ] || { echo "block $off seed $seed: $out"; exit 1; }
	done || fail "an acknowledged write did not read back"
log "$(grep -c ' 65536$' "$T/attempts") writes acknowledged, $(grep -c ' EIO$' "$T/attempts") failed with EIO"
fio_verify "$D" after randwrite 16M 32 --offset=16M
pd_stop
log "ok"
