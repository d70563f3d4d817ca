#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A reconnect checks the export against what the backend was set up with, not only its size
# and read-only flag: a server back without multi-conn (while several connections rely on a
# flush covering them all) or with a larger minimum block size is refused, logged, and
# retried; the same export again is taken back.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
build_helper pdio
P=$T/pdio
D=$MNT/disk

truncate -s 32M "$T/server.img"
nbdkit_start unix file "$T/server.img"
pd_start -i "$NBD_URI" -s 32M --set backend.timeout_ms=2000 --set controller.connections=2
nconn=$(stat_get nbd_connections)
assert_eq "$nconn" 2 "connections (the file plugin offers multi-conn)"
assert_eq "$($P -d "$D" write 0 65536 3 fsync)" "$(printf '65536\n0')" "write and flush"

# changed WHY NBDKIT-ARGS...: the server comes back changed: no connection is taken back.
changed() {
	local why=$1; shift
	nbd_kill
	nbdkit_start unix "$@"
	sleep 2 # several reconnect attempts (backoff from 100 ms)
	assert_eq "$(stat_get nbd_connections_up)" 0 "connections up with $why"
	grep -q "the export changed: $why" "$T/daemon.log" ||
		fail "no log line for $why: $(grep -i nbd "$T/daemon.log" | tail -3)"
	assert_eq "$($P -d "$D" pread 0 4096)" EIO "a read while the export is refused"
}
changed "multi-conn no longer offered" --filter=multi-conn file "$T/server.img" \
	multi-conn-mode=disable
changed "block sizes" --filter=blocksize-policy file "$T/server.img" blocksize-minimum=4096 \
	blocksize-preferred=4096 blocksize-maximum=1M

# The export as it was: taken back.
nbd_kill
nbdkit_start unix file "$T/server.img"
stat_wait nbd_connections_up "$nconn" "connections up with the export as it was" 20
assert_eq "$($P -d "$D" verify 0 65536 3)" "65536 ok" "data after the reconnect"
pd_stop
