#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The server's block size constraints hold (nbdkit's blocksize-policy filter: minimum 4 KiB,
# maximum 64 KiB): queue.max_request_size is capped to the maximum, a 1 MiB write goes out as
# commands of at most 64 KiB and reads back, and I/O not aligned to the minimum fails with
# EINVAL without reaching the server.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
build_helper pdio
P=$T/pdio
D=$MNT/disk

nbdkit_start unix --filter=log --filter=blocksize-policy memory 16M logfile="$T/log" \
	blocksize-minimum=4096 blocksize-preferred=4096 blocksize-maximum=65536 \
	blocksize-error-policy=error
pd_start -i "$NBD_URI" -s 16M
assert_eq "$(stat_get nbd_block_min_bytes)" 4096 "nbd_block_min_bytes"
assert_eq "$(stat_get nbd_block_max_bytes)" 65536 "nbd_block_max_bytes"
assert_eq "$(stat_get nbd_max_command_bytes)" 65536 "nbd_max_command_bytes"
assert_eq "$(stat_get queue_max_request_size_bytes)" 65536 "queue.max_request_size capped"
grep -q 'queue.max_request_size: 65536 bytes' "$T/daemon.log" || fail "the cap was not logged"
assert_eq "$($P -d "$D" pwrite 1048576 1048576 3 verify 1048576 1048576 3)" \
	"$(printf '1048576\n1048576 ok')" "a 1 MiB write in 64 KiB commands"
counts=$(grep -oE 'Write id=[0-9]+ offset=0x[0-9a-f]+ count=0x[0-9a-f]+' "$T/log" |
	sed 's/.*count=//')
[ -n "$counts" ] || fail "no writes in the server's log"
for c in $counts; do
	[ $((c)) -le 65536 ] || fail "a command above the server's maximum: count=$c"
done
assert_gt "$(echo "$counts" | wc -l)" 15 "commands for the 1 MiB write"
n0=$(grep -c 'Write id=' "$T/log")
assert_eq "$($P -d "$D" pwrite 512 512 4)" EINVAL "a 512-byte write at 512"
assert_eq "$(grep -c 'Write id=' "$T/log")" "$n0" "the unaligned write reached the server"
assert_eq "$($P -d "$D" pwrite 8192 4096 5 verify 8192 4096 5)" "$(printf '4096\n4096 ok')" \
	"an aligned 4 KiB write"
pd_stop
log "ok"
