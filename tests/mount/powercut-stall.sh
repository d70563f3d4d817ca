#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# powercut returns at once though a destage is held by a stall fault below the cache, even with
# one receive thread (so that release can still be written); what the cut keeps goes to the
# image past the stall; poweron then serves the disk, with the held destage on the image
# (a stall runs the I/O and holds only its completion) and the kept write beside it.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { timeout -k 5 20 "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M --set mount.threads=1 --set cache.mode=writeback \
	--set cache.destage_delay_ms=0 --set cache.seed=7
ctl fault add op=write offset=1M len=1M stall >/dev/null || fail "fault add"
assert_eq "$($P -d "$D" pwrite 1048576 4096 8)" 4096 "a write into the cache"
stat_wait faults_held 1 "its destage is held"
# The destage thread waits for it: this one stays in the cache.
assert_eq "$($P -d "$D" pwrite 1114112 4096 9)" 4096 "a second write"
assert_eq "$(stat_get cache_dirty_bytes)" 8192 "both in the cache"
# prefix over the one write not in flight, with a seed that keeps it.
out=$(ctl powercut mode=prefix seed=1) || fail "powercut did not return: $out"
assert_eq "$out" "powercut seed=1 pending_bytes=8192 dropped_bytes=0" "the cut's answer"
assert_eq "$(stat_get cache_powered)" 0 "cache_powered after the cut"
grep -q "2 pending writes (8192 bytes): 1 kept, 0 torn, 0 dropped, 1 going to the image" \
	"$T/daemon.log" || fail "the cut's summary: $(grep 'powercut (' "$T/daemon.log")"
assert_eq "$(ctl release)" 1 "release answers how many it released"
ctl poweron >/dev/null || fail "poweron"
ctl fault clear || fail "fault clear"
assert_eq "$($P -d "$D" verify 1048576 4096 8)" "4096 ok" "the held destage is on the image"
assert_eq "$($P -d "$D" verify 1114112 4096 9)" "4096 ok" "the kept write is on the image"
assert_eq "$($P -d "$D" pwrite 1048576 4096 10)" 4096 "a write after poweron"
assert_eq "$($P -d "$D" verify 1048576 4096 10)" "4096 ok" "and its data"
pd_stop
