#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes acknowledged on an NBD connection that drops before a flush covers them may be gone
# (a server that restarted loses its cache: nbdkit's cache filter, killed): the next flush
# after the reconnect fails with EIO, once, instead of reporting them durable; a connection
# dropped with every acknowledged write flushed costs no flush an error.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
build_helper pdio
P=$T/pdio
D=$MNT/disk

truncate -s 32M "$T/server.img"
server() { nbdkit_start unix --filter=cache file "$T/server.img" cache=writeback; }
restart() {
	nbd_kill
	server
	stat_wait nbd_connections_up "$nconn" "the backend did not reconnect" 20
}
server
pd_start -i "$NBD_URI" -s 32M --set backend.timeout_ms=2000
nconn=$(stat_get nbd_connections)
assert_eq "$(stat_get nbd_can_flush)" 1 "the server's flush"
assert_eq "$($P -d "$D" write 0 1048576 7 fsync)" "$(printf '1048576\n0')" "write and flush"

# Everything flushed: a drop loses nothing, and the next flush succeeds.
restart
assert_eq "$($P -d "$D" fsync)" 0 "a flush after a drop with nothing unflushed"
assert_eq "$($P -d "$D" verify 0 1048576 7)" "1048576 ok" "the flushed data"

# Acknowledged, not flushed, then the server restarts without its cache.
assert_eq "$($P -d "$D" pwrite 1048576 65536 8)" 65536 "a write acknowledged, not flushed"
restart
[ "$($P -d "$D" verify 1048576 65536 8)" = "65536 ok" ] &&
	log "the server kept the unflushed write (the test shows nothing about its loss)"
assert_eq "$($P -d "$D" fsync)" EIO "the first flush after the unflushed writes were dropped"
grep -q "acknowledged writes not yet flushed" "$T/daemon.log" || fail "no log line for the loss"
assert_eq "$($P -d "$D" fsync)" 0 "the flush after that"
pd_stop
