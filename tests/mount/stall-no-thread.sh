#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No stage holds a FUSE receive thread while it waits for a stage below: with a write stall
# below the write cache, a flush (fsync) that waits for its destage, and writers that wait
# for room in a full cache, leave the stats file and the control file served, with one
# receive thread and with two; `release` then lets them all complete.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { timeout -k 2 10 "$PLUGDISK" ctl "$MNT" "$@"; }
# served WHAT: stats and the control listing answer within 5 s.
# tstat_ge NAME MIN WHAT: wait (5 s) until NAME in stats reads at least MIN, every read of
# stats itself bounded (a wedged daemon does not answer it at all).
tstat_ge() {
	local i v
	for i in $(seq 100); do
		v=$(timeout -k 1 5 awk -v k="$1" '$1 == k {print $2}' "$MNT/stats") ||
			fail "stats not served while waiting for $3"
		[ "$v" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "$3: $1 is $v"
}
served() {
	timeout -k 1 5 cat "$MNT/stats" >/dev/null || fail "stats not served $1"
	timeout -k 1 5 cat "$MNT/control" >/dev/null || fail "the control listing not served $1"
}

# one_thread: one receive thread, one flush waiting for a stalled destage.
pd_start -s 4M --set mount.threads=1 --set cache.mode=writeback --set cache.destage_delay_ms=0
ctl fault add op=write stall >/dev/null || fail "fault add"
assert_eq "$($P -d "$D" pwrite 0 4096 1)" 4096 "a write into the cache"
stat_wait faults_held 1 "its destage is held"
"$P" "$D" fsync >"$T/f1.out" &
f1=$!
tstat_ge flush_bios 1 "the flush"
served "with one thread and a flush waiting"
assert_eq "$(ctl release)" 1 "release"
wait "$f1"
assert_eq "$(cat "$T/f1.out")" 0 "the flush after the release"
ctl fault clear || fail "fault clear"
pd_stop

# Two threads (the default), two writers waiting for room in a full cache. (Two flushes cannot
# both reach the daemon: the kernel's fsync of a FUSE file holds the inode's lock.)
pd_start --set cache.mode=writeback --set cache.destage_delay_ms=0 --set cache.size=16M -s 64M -i "$T/disk2.img"
ctl fault add op=write stall >/dev/null || fail "fault add 2"
assert_eq "$($P -d "$D" pwrite 0 4096 1)" 4096 "a write into the cache"
stat_wait faults_held 1 "its destage is held"
"$P" -d "$D" write 1048576 12582912 2 >"$T/w1.out" &
w1=$!
"$P" -d "$D" write 16777216 12582912 3 >"$T/w2.out" &
w2=$!
tstat_ge cache_dirty_bytes 15000000 "a full cache"
sleep 0.5
served "with two threads and two writers waiting for room"
# fault clear releases what the fault holds, and the destages go on.
ctl fault clear || fail "fault clear 2"
wait "$w1" "$w2"
assert_eq "$(cat "$T/w1.out") $(cat "$T/w2.out")" "12582912 12582912" "the writers"
assert_eq "$($P -d "$D" verify 1048576 12582912 2)" "12582912 ok" "the first writer's data"
pd_stop
