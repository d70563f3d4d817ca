#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A fault added through control while SIGTERM drains the queue (after the stop cleared the
# faults) is refused: it cannot stall a request the drain waits for, and the daemon exits.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
pd_start -s 16M --set controller.queue_depth=1
# Read A takes 2 s (one slot), read B waits in the queue behind it.
"$PLUGDISK" ctl "$MNT" fault add op=read latency=2s first=1 >/dev/null || fail "fault add"
"$T/pdio" -d "$MNT/disk" pread 0 4096 >"$T/a" &
stat_wait in_flight 1 "read A in flight"
"$T/pdio" -d "$MNT/disk" pread 1048576 4096 >"$T/b" &
stat_wait queued_requests 1 "read B queued"

kill -TERM "$PD_PID"
true_within 5 grep -q "stopping: new requests fail" "$T/daemon.log" || fail "the stop did not begin"
# The drain waits for A; a stall added now would catch B.
if "$PLUGDISK" ctl "$MNT" fault add op=read stall >"$T/add" 2>&1; then
	log "fault add during the stop succeeded: $(cat "$T/add")"
	late_add=1
else
	late_add=0
	grep -q "stopping" "$T/add" || fail "refused without saying why: $(cat "$T/add")"
fi
pid_gone_within 15 "$PD_PID" || fail "the daemon still drains 15 s after SIGTERM (late fault: $late_add)"
rc=0
wait "$PD_PID" || rc=$?
assert_eq "$rc" 0 "exit status after SIGTERM"
assert_eq "$late_add" 0 "a fault added during the stop was accepted"
wait
assert_eq "$(cat "$T/a")" 4096 "read A"
assert_eq "$(cat "$T/b")" 4096 "read B"
