#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `plugdisk top --once` shows the injected faults in force and what they did: no faults
# line without faults; with them, the active and held counts and the injected errors per op.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M
expect_exit 0 "$PLUGDISK" top "$MNT" 0.2 --once
grep -q '^faults ' "$T/out" && fail "a faults line without faults: $(grep '^faults ' "$T/out")"

ctl fault add op=read offset=0 len=4K error=EIO >/dev/null || fail "fault add"
ctl fault add op=write offset=1M len=4K stall >/dev/null || fail "fault add stall"
assert_eq "$("$T/pdio" -d "$MNT/disk" pread 0 4096)" EIO "the read fault"
"$T/pdio" -d "$MNT/disk" pwrite 1048576 4096 1 >/dev/null &
w=$!
stat_wait faults_held 1 "the write is held"
expect_exit 0 "$PLUGDISK" top "$MNT" 0.2 --once
line=$(grep '^faults ' "$T/out") || fail "no faults line: $(cat "$T/out")"
log "$line"
[[ $line == "faults   2 active, 1 held; errors 1 (read 1), delays 0, stalls 1, lies 0, corruptions 0" ]] ||
	fail "faults line: '$line'"
ctl release >/dev/null
wait "$w" || fail "the stalled write"
pd_stop
