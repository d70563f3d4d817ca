#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A stall holds matching I/O, without blocking the daemon, until `release`: a write to the
# stalled range does not return while reads go on; `release` completes
# it with its data written; a stall with a timeout fails the request with its error when
# the timeout passes.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M
ctl fault add op=write offset=1M len=4K stall >/dev/null || fail "fault add"
"$P" -d "$D" pwrite 1048576 4096 8 >"$T/w.out" &
w=$!
stat_wait faults_held 1 "the write is held"
assert_eq "$(stat_get write_fault_stalls)" 1 "stalls counted"
# The rest of the disk answers meanwhile: the held request holds no receive thread. (Only
# reads: the kernel's FUSE client lets one write at a time into a file, so other writes to
# the disk wait behind the stalled one, as they would behind a hung device's.)
for i in 1 2 3 4; do
	assert_eq "$($P -d "$D" pread $((i * 65536)) 4096)" 4096 "read $i while the write is held"
done
sleep 0.5
kill -0 "$w" 2>/dev/null || fail "the stalled write returned before release: $(cat "$T/w.out")"
ctl fault list | grep -q "# id=1 source=control matched=1 injected=1 held=1$" || fail "listing: $(ctl fault list)"
assert_eq "$(ctl release)" 1 "release answers how many it released"
wait "$w" || fail "pdio failed"
assert_eq "$(cat "$T/w.out")" 4096 "the released write's result"
assert_eq "$($P -d "$D" verify 1048576 4096 8)" "4096 ok" "its data"
assert_eq "$(stat_get faults_held)" 0 "nothing held"
ctl fault clear || fail "fault clear"

# With a timeout and an error: the read fails with it once the timeout passes.
ctl fault add op=read stall timeout=300ms error=ETIMEDOUT >/dev/null || fail "fault add timeout"
assert_eq "$($P -d "$D" pread 0 4096)" ETIMEDOUT "a read after a stall's timeout"
assert_eq "$(stat_get read_fault_errors)" 1 "the timeout counted as an error"
# Stop with a request held: the stop releases it, and the daemon exits cleanly.
ctl fault add op=write stall >/dev/null || fail "fault add for the stop"
"$P" -d "$D" pwrite 0 4096 1 >"$T/w2.out" &
w=$!
stat_wait faults_held 1 "held at the stop"
pd_stop
wait "$w"
assert_eq "$(cat "$T/w2.out")" 4096 "the write held at the stop completed"
