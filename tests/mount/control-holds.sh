#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stop/start and freeze/thaw are separate holds: thaw does not end a stop, start does not end
# a freeze, both must end before the queue goes; a read waits during a freeze as a write does;
# a stop while a freeze waits makes the freeze fail; ending a hold not in force succeeds and
# changes nothing.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
pd_start -s 64M
listing() { grep -v '^#' "$MNT/control" | tr '\n' ' '; }

# writer N: one 4 KiB direct write at N MiB in the background; its pid in $wpid.
writer() {
	"$T/pdio" -d "$MNT/disk" pwrite $(($1 << 20)) 4096 "$1" >"$T/w$1" &
	wpid=$!
	stat_wait_ge write_bios "$2" "the write at $1 MiB arrived"
}
# held WHAT: the write queued and did not complete.
held() {
	sleep 0.2
	assert_eq "$(stat_get write_ios)" "$ios" "requests completed while $1"
	kill -0 "$wpid" 2>/dev/null || fail "the write completed while $1"
}
released() {
	wait "$wpid" || fail "writer failed"
	ios=$((ios + 1))
	stat_wait write_ios "$ios" "requests completed after $1"
}
ios=0

# Ending a hold not in force: success, nothing changes.
for c in start thaw unplug; do
	"$PLUGDISK" ctl "$MNT" "$c" || fail "$c on a running queue failed"
done
assert_eq "$(listing)" "start unplug thaw " "listing after ending no hold"

# The stats file shows each hold by hand (the controller's own `stopped` does not).
assert_eq "$(stat_get held)" 0 "held on a running queue"
for c in stop plug freeze; do
	"$PLUGDISK" ctl "$MNT" "$c" || fail "$c"
	assert_eq "$(stat_get held)" 1 "held after $c"
	assert_eq "$(stat_get stopped)" 0 "the controller's stopped after $c"
done
"$PLUGDISK" ctl "$MNT" start && "$PLUGDISK" ctl "$MNT" unplug || fail "start, unplug"
assert_eq "$(stat_get held)" 1 "held while still frozen"
"$PLUGDISK" ctl "$MNT" thaw || fail "thaw"
assert_eq "$(stat_get held)" 0 "held after every hold ended"

# thaw does not end a stop.
"$PLUGDISK" ctl "$MNT" stop || fail "stop"
writer 1 1
"$PLUGDISK" ctl "$MNT" thaw || fail "thaw of a stopped queue failed"
assert_eq "$(listing)" "stop unplug thaw " "listing after stop, thaw"
held "stopped, after a thaw"
"$PLUGDISK" ctl "$MNT" start || fail "start"
released start

# start does not end a freeze.
"$PLUGDISK" ctl "$MNT" freeze || fail "freeze"
writer 2 2
"$PLUGDISK" ctl "$MNT" start || fail "start of a frozen queue failed"
assert_eq "$(listing)" "start unplug freeze " "listing after freeze, start"
held "frozen, after a start"
"$PLUGDISK" ctl "$MNT" thaw || fail "thaw"
released thaw

# Both: the queue goes only when both have ended.
"$PLUGDISK" ctl "$MNT" stop && "$PLUGDISK" ctl "$MNT" freeze || fail "stop, freeze"
writer 3 3
"$PLUGDISK" ctl "$MNT" thaw || fail "thaw"
held "stopped, after freeze and thaw"
"$PLUGDISK" ctl "$MNT" start || fail "start"
released "stop, freeze, thaw, start"

# A read waits during a freeze, as a write does: the queue holds it until thaw.
"$PLUGDISK" ctl "$MNT" freeze || fail "freeze for the read"
r0=$(stat_get read_ios) b0=$(stat_get read_bios)
"$T/pdio" -d "$MNT/disk" pread 1048576 4096 >"$T/r" &
rpid=$!
stat_wait_ge read_bios $((b0 + 1)) "the read arrived"
sleep 0.2
assert_eq "$(stat_get read_ios)" "$r0" "reads completed while frozen"
kill -0 "$rpid" 2>/dev/null || fail "the read completed while frozen"
"$PLUGDISK" ctl "$MNT" thaw || fail "thaw for the read"
wait "$rpid" || fail "reader failed"
assert_eq "$(cat "$T/r")" 4096 "the read after thaw"

# A freeze waiting for a slow write, crossed by the stop (control-never-shuts crosses it with
# a thaw from another process): SIGTERM
# thaws the queue while the write still takes its 3 s (a fault's latency, unlike a stall,
# outlasts the stop's clearing of the faults), and the freeze fails instead of reporting a
# frozen queue.
"$PLUGDISK" ctl "$MNT" fault add op=write latency=3s first=1 >/dev/null || fail "fault add"
writer 4 4
stat_wait in_flight 1 "the slow write in flight"
"$PLUGDISK" ctl "$MNT" freeze >"$T/freeze.out" 2>&1 &
fpid=$!
sleep 0.2
kill -0 "$fpid" 2>/dev/null || fail "freeze returned with a write in flight"
rc=0
pd_stop
wait "$fpid" || rc=$?
[ "$rc" != 0 ] || fail "a freeze ended by the stop reported success"
grep -q "thawed before nothing was in flight" "$T/freeze.out" ||
	fail "freeze's message: $(cat "$T/freeze.out")"
wait "$wpid" || fail "the slow write failed"
